"""trec_eval's vocabulary: the names of its measures, how its ``-m`` arguments read, its print order and sets.

Data only, no measure: every measure of trec_eval 10 (``measures.c``) is declared once in :data:`TREC_MEASURES`, in
trec_eval's print order, with the name of the meta-eval family that computes it, the parameters it binds and how
trec_eval reads its parameters and prints its names:

``single``       no parameter: ``map``, ``Rprec``, ``yaap``, ``prefs_simp``, ``map_avgjg`` ...
``long_cuts``    integer cutoffs, sorted, printed ``%ld``: ``P_5``, ``ndcg_cut_10``, ``P_avgjg_5`` ...
``double_cuts``  real cutoffs, sorted, printed ``%3.2f``: ``iprec_at_recall_0.10``, ``Rprec_mult_0.20`` ...
``doubles``      a list of numbers, printed as typed: ``utility_2,-1,0,0``, ``11pt_avg_.25,.5``, ``set_F_0.5``
``pairs``        ``name=value`` pairs, printed as typed: gains ``ndcg_1=3,2=9`` and ``rbp_p=0.8``

It sits below everything that reads, names or prints trec_eval's measures: the measure registry (a trec_eval
spelling is never a new measure's name, and "did you mean" offers them), the lookup that builds a spelling's
measure (:mod:`meta_eval.measures.trec_names`), the reader of ``trec_eval -q`` output
(:mod:`meta_eval.inputs.score_tables`) and trec_eval's layout (:mod:`meta_eval.rendering.trec_layout`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from meta_eval.core.errors import InputError

QRELS, PREFS, JG = frozenset({"qrels"}), frozenset({"prefs", "qrels_prefs"}), frozenset({"qrels_jg"})
ANY = QRELS | PREFS | JG
LONG_CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
IPREC_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
RPREC_MULTS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)


@dataclass(frozen=True)
class TrecMeasure:
    """One measure of trec_eval 10's table.

    Attributes
    ----------
    name : str
        trec_eval's name.
    family : str or None
        The meta-eval family computing it (None: printed by the layout: ``runid``, ``num_q``, ``relstring``).
    kind : str
        How trec_eval reads its parameters and prints its names (module docstring); ``runid``, ``num_q`` and
        ``relstring`` have their own kinds.
    fixed : tuple of (str, object)
        Parameters bound for trec_eval's semantics.
    defaults : tuple
        Default cutoffs or numbers.
    per_topic : bool
        Printed per topic (``gm_map`` and ``gm_bpref`` are printed only as summaries).
    formats : frozenset of str
        The ``-R`` formats trec_eval computes it with.
    """

    name: str
    family: str | None
    kind: str = "single"
    fixed: tuple[tuple[str, object], ...] = ()
    defaults: tuple = ()
    per_topic: bool = True
    formats: frozenset = QRELS

    @property
    def parameterised(self) -> bool:
        return self.kind in ("long_cuts", "double_cuts", "doubles", "pairs")


def _m(name, family, kind="single", fixed=(), defaults=(), per_topic=True, formats=QRELS) -> TrecMeasure:
    return TrecMeasure(name, family, kind, tuple(fixed), tuple(defaults), per_topic, formats)


_PREFS = ["prefs_num_prefs_poss", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret", "prefs_simp", "prefs_pair",
          "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_simp_ret", "prefs_pair_ret", "prefs_avgjg_ret",
          "prefs_avgjg_Rnonrel_ret", "prefs_simp_imp", "prefs_pair_imp", "prefs_avgjg_imp"]

#: trec_eval 10's measures in its print order (``te_trec_measures`` of ``measures.c``).
TREC_MEASURES: tuple[TrecMeasure, ...] = (
    _m("runid", None, "runid", formats=ANY),
    _m("num_q", None, "num_q", formats=ANY),
    _m("num_ret", "NumRet"),
    _m("num_rel", "NumRel", fixed=[("summary", "trec_eval")]),
    _m("num_rel_ret", "NumRelRet"),
    _m("map", "AP"),
    _m("gm_map", "GM_AP", per_topic=False),
    _m("Rprec", "Rprec"),
    _m("bpref", "bpref"),
    _m("recip_rank", "RR"),
    _m("iprec_at_recall", "IPrec", "double_cuts", defaults=IPREC_LEVELS),
    _m("P", "P", "long_cuts", defaults=LONG_CUTS),
    _m("relstring", None, "relstring", defaults=(10.0,)),
    _m("recall", "Recall", "long_cuts", defaults=LONG_CUTS),
    _m("infAP", "infAP"),
    _m("gm_bpref", "GM_bpref", per_topic=False),
    _m("Rprec_mult", "Rprec_mult", "double_cuts", defaults=RPREC_MULTS),
    _m("utility", "Utility", "doubles", defaults=(1.0, -1.0, 0.0, 0.0)),
    _m("11pt_avg", "IPrec11", "doubles", defaults=IPREC_LEVELS),
    _m("binG", "binG"),
    _m("G", "G", "pairs"),
    _m("dcg", "DCG", "pairs"),
    _m("ideal_dcg", "IDCG", "pairs"),
    _m("ndcg", "nDCG", "pairs"),
    _m("ndcg_rel", "nDCG_rel", "pairs"),
    _m("Rndcg", "Rndcg", "pairs"),
    _m("ndcg_cut", "nDCG", "long_cuts", defaults=LONG_CUTS),
    _m("map_cut", "AP", "long_cuts", defaults=LONG_CUTS),
    _m("relative_P", "RelP", "long_cuts", defaults=LONG_CUTS),
    _m("success", "Success", "long_cuts", defaults=(1, 5, 10)),
    _m("set_P", "SetP"),
    _m("set_relative_P", "SetRelP"),
    _m("set_recall", "SetR"),
    _m("set_map", "SetAP"),
    _m("set_F", "SetF", "doubles", defaults=(1.0,)),
    _m("num_nonrel_judged_ret", "NumNonrelJudgedRet"),
    *(_m(name, name, formats=PREFS) for name in _PREFS),
    _m("map_avgjg", "AP", formats=JG),
    _m("P_avgjg", "P", "long_cuts", defaults=LONG_CUTS, formats=JG),
    _m("Rprec_mult_avgjg", "Rprec_mult", "double_cuts", defaults=RPREC_MULTS, formats=JG),
    _m("yaap", "YAAP"),
    _m("rbp", "RBP", "pairs", fixed=[("p", 0.9), ("graded", True), ("max", "topic")]),
    _m("rbp_resid", "RBP_resid", "pairs", fixed=[("p", 0.9), ("fully_judged", "zero")]),
    _m("unj", "Unjudged", "long_cuts", defaults=(5, 10, 20)),
)
BY_NAME = {m.name: m for m in TREC_MEASURES}

#: trec_eval's sets of measures (``-m official`` ...), as in ``measures.c``.
NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P"),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
            "set_relative_P", "set_map", "set_F"),
    "all_trec": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
                 "recip_rank", "iprec_at_recall", "P", "relstring", "recall", "unj", "rbp", "rbp_resid", "infAP",
                 "gm_bpref", "utility", "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut",
                 "ndcg_cut", "ndcg_rel", "Rndcg", "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map",
                 "set_F", "num_nonrel_judged_ret"),
    "all_prefs": ("runid", "num_q", *_PREFS[:3], "prefs_simp", "prefs_pair", "prefs_avgjg", "prefs_avgjg_Rnonrel",
                  "prefs_simp_ret", "prefs_pair_ret", "prefs_avgjg_ret", "prefs_avgjg_Rnonrel_ret",
                  "prefs_simp_imp", "prefs_pair_imp", "prefs_avgjg_imp"),
    "prefs": ("runid", "num_q", *_PREFS[:3], "prefs_simp", "prefs_pair", "prefs_avgjg"),
    "qrels_jg": ("runid", "num_q", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg"),
}
LAYOUT_ONLY = ("runid", "num_q", "relstring")  # printed by the layout, not numbers of a measure

# --------------------------------------------------------------------------------------------- C's number parsing

_ATOL = re.compile(r"^[ \t\n\v\f\r]*([+-]?[0-9]+)")
_ATOF = re.compile(r"^[ \t\n\v\f\r]*([+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan))",
                   re.IGNORECASE)


def c_atol(text: str) -> int:
    """C's ``atol``: the leading integer of ``text``, 0 if there is none (``"23.4"`` -> 23)."""
    match = _ATOL.match(text)
    return int(match[1]) if match else 0


def c_atof(text: str) -> float:
    """C's ``atof``: the leading number of ``text``, 0.0 if there is none (``".25"`` -> 0.25)."""
    match = _ATOF.match(text)
    return float(match[1]) if match else 0.0


def cut_text(m: TrecMeasure, value) -> str:
    """A cutoff as trec_eval prints it in a name: ``%ld`` or ``%3.2f``."""
    return f"{int(value)}" if m.kind == "long_cuts" else f"{float(value):3.2f}"


def cutoffs(m: TrecMeasure, params: str | None) -> list:
    """trec_eval's ``get_long_cutoffs`` / ``get_double_cutoffs``: comma-separated, read as C reads numbers,
    sorted; a cutoff given twice is an error (one outside the family's domain, such as 0, too: when the measure is
    bound)."""
    if params is None:
        return list(m.defaults)
    read = c_atol if m.kind == "long_cuts" else c_atof
    values = sorted(read(text) for text in params.split(","))
    for low, high in zip(values, values[1:]):
        if low == high:
            raise InputError(f"measure {m.name}.{params}: the cutoff {cut_text(m, low)} is given twice")
    return values


# --------------------------------------------------------------------------------------------- spellings


_BY_LENGTH = sorted((m for m in TREC_MEASURES if m.parameterised), key=lambda m: -len(m.name))
_SINGLE_CUT = {"long_cuts": re.compile(r"^[0-9]+$"), "double_cuts": re.compile(r"^[0-9]*\.?[0-9]+$|^[0-9]+\.$")}


def parse_spelling(name: str) -> tuple[TrecMeasure, str | None] | None:
    """The trec_eval measure a spelling names and its parameter text: ``map`` -> (map, None), ``P_5`` ->
    (P, "5"), ``ndcg_rel_1=3`` -> (ndcg_rel, "1=3"); None if it is not a spelling of one measure (a bare cutoff
    family such as ``P`` names a set, see :func:`expand_trec_spec`)."""
    m = BY_NAME.get(name)
    if m is not None:
        return (m, None) if m.family is not None and m.kind not in ("long_cuts", "double_cuts") else None
    for m in _BY_LENGTH:
        if name.startswith(m.name + "_"):
            params = name[len(m.name) + 1:]
            if m.kind in _SINGLE_CUT and not _SINGLE_CUT[m.kind].match(params):
                return None
            if m.kind == "pairs" and "=" not in params:
                return None
            return m, params
    return None


_PRINT_ORDER = {m.name: i for i, m in enumerate(TREC_MEASURES)}


def expand_trec_spec(spec: str) -> list[str]:
    """Expand one trec_eval ``-m`` argument into measure names.

    ``P.5,10`` -> ``P_5, P_10``; ``ndcg_cut`` -> its default cutoffs; ``ndcg.1=3,2=9`` -> ``ndcg_1=3,2=9``;
    ``set_F.0.5`` -> ``set_F_0.5``; ``all_trec`` (or ``official``, ``set``, ``all_prefs``, ``prefs``,
    ``qrels_jg``) -> every numeric measure of the set. Any other text is returned unchanged. Cutoffs are read as
    trec_eval reads them, in every command (C's ``atol``: ``ndcg_cut.23.4`` is ``ndcg_cut_23``, as trec_eval's own
    test suite spells it); the name printed says which.
    """
    if spec in NICKNAMES:  # in the order trec_eval prints them (its table of measures), so -f trec diffs with it
        members = sorted(NICKNAMES[spec], key=_PRINT_ORDER.__getitem__)
        return [name for member in members if member not in LAYOUT_ONLY for name in expand_trec_spec(member)]
    family, dot, params = spec.partition(".")
    m = BY_NAME.get(family)
    if m is not None and m.family is None:
        raise InputError(f"{family} is printed by trec_eval's layout, not a measure with values: meta-eval trec-eval "
                         "prints it (evaluate -f trec prints runid and num_q)")
    if m is None or (dot and not params):
        return [spec]
    if m.kind in ("long_cuts", "double_cuts"):
        if dot and not re.fullmatch(r"[-+0-9.,eE ]+", params):
            return [spec]  # not a cutoff list: reported as an unknown measure with suggestions
        return [f"{m.name}_{cut_text(m, cut)}" for cut in cutoffs(m, params if dot else None)]
    if dot and m.parameterised:
        return [f"{family}_{params}"]
    return [spec]


def known_trec_names() -> list[str]:
    """Every trec_eval spelling meta-eval knows, with its default parameters (for "did you mean")."""
    return [name for m in TREC_MEASURES if m.family is not None for name in expand_trec_spec(m.name)]


def trec_spellings(family: str) -> list[str]:
    """trec_eval spellings of a family: ``map`` and ``map_cut_K`` for AP, ``ndcg_GRADE=GAIN,...`` for nDCG..."""
    out = []
    for m in TREC_MEASURES:
        if m.family != family:
            continue
        out.append({"long_cuts": f"{m.name}_K", "double_cuts": f"{m.name}_X", "pairs": m.name,
                    "doubles": m.name}.get(m.kind, m.name))
        if m.kind == "pairs":
            out.append(f"{m.name}_GRADE=GAIN,..." + (",p=P" if m.name.startswith("rbp") else ""))
        if m.kind == "doubles":
            out.append({"utility": "utility_A,B,C,D", "11pt_avg": "11pt_avg_LEVEL,...",
                        "set_F": "set_F_X"}[m.name])
    return out


_CASELESS = {m.name.lower() for m in TREC_MEASURES} | {name.lower() for name in NICKNAMES}


def is_trec_spelling(name: str) -> bool:
    """Whether ``name`` reads as a trec_eval measure in any letter case (``MAP``, ``p_5``, ``ndcg_cut``,
    ``all_trec``, ``ndcg_1=3,2=9``): such a name cannot name a new measure."""
    lower = name.lower()
    if lower in _CASELESS:
        return True
    return any(lower.startswith(m.name.lower() + "_") for m in _BY_LENGTH)
