"""trec_eval measure spellings as aliases with trec_eval's semantics.

``map``, ``map_cut_10``, ``P_5``, ``recall_100``, ``Rprec``, ``recip_rank``, ``bpref``, ``ndcg``, ``ndcg_cut_10``,
``ndcg_1=3,2=9`` (custom gains), ``iprec_at_recall_0.10``, ``11pt_avg``, ``Rprec_mult_0.20``, ``success_5``,
``set_P``, ``set_recall``, ``set_F``, ``num_ret``, ``num_rel``, ``num_rel_ret``, ``gm_map``, ``infAP``, ``gm_bpref``,
``utility`` (``utility_2,-1,0,0``), ``relative_P_5``, ``G``, ``binG``, ``Rndcg``, ``ndcg_rel`` (gain maps as for
``ndcg``), ``set_map``, ``set_relative_P``, ``num_nonrel_judged_ret``, ``rbp``, ``rbp_resid``, ``unj_5``. The printed
name is the trec_eval one, so output can be diffed with trec_eval's. ``expand_trec_spec`` turns trec_eval's ``-m``
syntax (``P.5,10``, ``ndcg_cut.10,20``, ``utility.2,-1,0,0``, ``all_trec``) into names.

Where trec_eval's definition departs from the textbook one, the alias binds the parameter that reproduces it and the
canonical name keeps the textbook form: ``rbp`` is ``RBP(p=0.9,graded=true,max=topic)``, ``rbp_resid`` is
``RBP_resid(p=0.9,fully_judged=zero)`` (0 for a list without unjudged documents), ``num_rel`` is
``NumRel(summary=trec_eval)`` (under ``-c`` its summary counts every judgment with a grade > 0, whatever ``-l``).
"""

from __future__ import annotations

import re

from meta_eval.errors import InputError
from meta_eval.measures.registry import Measure, make_measure, parse_floats, parse_gain_map

_SIMPLE = {
    "map": ("AP", {}),
    "gm_map": ("GM_AP", {}),
    "Rprec": ("Rprec", {}),
    "recip_rank": ("RR", {}),
    "bpref": ("bpref", {}),
    "gm_bpref": ("GM_bpref", {}),
    "infAP": ("infAP", {}),
    "ndcg": ("nDCG", {}),
    "ndcg_rel": ("nDCG_rel", {}),
    "Rndcg": ("Rndcg", {}),
    "G": ("G", {}),
    "binG": ("binG", {}),
    "11pt_avg": ("IPrec11", {}),
    "utility": ("Utility", {}),
    "set_P": ("SetP", {}),
    "set_relative_P": ("SetRelP", {}),
    "set_recall": ("SetR", {}),
    "set_map": ("SetAP", {}),
    "set_F": ("SetF", {}),
    "num_ret": ("NumRet", {}),
    "num_rel": ("NumRel", {"summary": "trec_eval"}),
    "num_rel_ret": ("NumRelRet", {}),
    "num_nonrel_judged_ret": ("NumNonrelJudgedRet", {}),
    "rbp": ("RBP", {"p": 0.9, "graded": True, "max": "topic"}),  # trec_eval 10's rbp (p = 0.9, grade / top grade)
    "rbp_resid": ("RBP_resid", {"p": 0.9, "fully_judged": "zero"}),
}

_CUT = {
    "P": ("P", int),
    "recall": ("Recall", int),
    "map_cut": ("AP", int),
    "ndcg_cut": ("nDCG", int),
    "relative_P": ("RelP", int),
    "success": ("Success", int),
    "unj": ("Unjudged", int),
    "iprec_at_recall": ("IPrec", float),
    "Rprec_mult": ("Rprec_mult", float),
}

# Measures whose trec_eval parameters are a gain map (``ndcg.1=3,2=9`` -> ``ndcg_1=3,2=9``).
_GAIN_MAPS = {"ndcg": "nDCG", "ndcg_rel": "nDCG_rel", "Rndcg": "Rndcg", "G": "G"}

# Default parameter lists of trec_eval's cutoff measures (used by expand_trec_spec for a bare family name).
TREC_DEFAULT_CUTS = {
    "P": "5,10,15,20,30,100,200,500,1000",
    "recall": "5,10,15,20,30,100,200,500,1000",
    "map_cut": "5,10,15,20,30,100,200,500,1000",
    "ndcg_cut": "5,10,15,20,30,100,200,500,1000",
    "relative_P": "5,10,15,20,30,100,200,500,1000",
    "success": "1,5,10",
    "unj": "5,10,20",
    "iprec_at_recall": "0.00,0.10,0.20,0.30,0.40,0.50,0.60,0.70,0.80,0.90,1.00",
    "Rprec_mult": "0.20,0.40,0.60,0.80,1.00,1.20,1.40,1.60,1.80,2.00",
}

# trec_eval 10's all_trec set in its print order (relstring, a string, is left out; runid and num_q are printed by
# the trec layout itself).
ALL_TREC = (
    ["num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P",
     "recall", "infAP", "gm_bpref", "Rprec_mult", "utility", "11pt_avg", "binG", "G", "ndcg", "ndcg_rel", "Rndcg",
     "ndcg_cut", "map_cut", "relative_P", "success", "set_P", "set_relative_P", "set_recall", "set_map", "set_F",
     "num_nonrel_judged_ret", "rbp", "rbp_resid", "unj"]
)

_CUT_NAME = re.compile(r"^(?P<family>" + "|".join(_CUT) + r")_(?P<cut>[0-9.]+)$")


def from_trec_name(name: str) -> Measure | None:
    """The measure a trec_eval spelling denotes, labelled with that spelling; None if it is not one.

    Raises
    ------
    InputError
        A trec_eval spelling with a parameter outside its domain (``P_0``, ``iprec_at_recall_1.5``).
    """
    if name in _SIMPLE:
        family, params = _SIMPLE[name]
        return make_measure(family, label=name, **params)
    match = _CUT_NAME.match(name)
    if match:
        family, kind = _CUT[match["family"]]
        try:
            cut = kind(match["cut"])
        except ValueError:
            return None
        return make_measure(family, label=name, k=cut)
    for trec, family in _GAIN_MAPS.items():
        if name.startswith(trec + "_") and "=" in name[len(trec) + 1:]:
            return make_measure(family, label=name, gain=_read(parse_gain_map, name[len(trec) + 1:], name))
    if name.startswith("11pt_avg_"):
        return make_measure("IPrec11", label=name, levels=_read(parse_floats, name[len("11pt_avg_"):], name))
    if name.startswith("utility_"):
        coefficients = _read(parse_floats, name[len("utility_"):], name)
        if len(coefficients) != 4:
            raise InputError(f"measure {name}: utility takes 4 coefficients (a,b,c,d), got {len(coefficients)}")
        return make_measure("Utility", label=name, **dict(zip("abcd", coefficients)))
    return None


def _read(parse, text: str, name: str):
    try:
        return parse(text)
    except ValueError as exc:
        raise InputError(f"measure {name}: cannot read the trec_eval parameters {text!r} ({exc})") from None


def _format_cut(family: str, value: str) -> str:
    if family in ("iprec_at_recall", "Rprec_mult"):
        return f"{float(value):.2f}"
    return str(int(float(value)))


def expand_trec_spec(spec: str) -> list[str]:
    """Expand one trec_eval ``-m`` argument into measure names.

    ``P.5,10`` -> ``P_5, P_10``; ``ndcg_cut`` -> its default cutoffs; ``ndcg.1=3,2=9`` -> ``ndcg_1=3,2=9``;
    ``utility.2,-1,0,0`` -> ``utility_2,-1,0,0``; ``all_trec`` -> every trec_eval measure meta-eval computes. Any
    other text is returned unchanged.
    """
    if spec == "all_trec":
        return [name for family in ALL_TREC for name in expand_trec_spec(family)]
    family, dot, params = spec.partition(".")
    if family in TREC_DEFAULT_CUTS:
        cuts = params if dot and params else TREC_DEFAULT_CUTS[family]
        try:
            values = sorted({float(v) for v in cuts.split(",") if v.strip()})
        except ValueError:
            return [spec]  # not a cutoff list: reported as an unknown measure with suggestions
        return [f"{family}_{_format_cut(family, str(v))}" for v in values]
    if dot and params and family in (*_GAIN_MAPS, "11pt_avg", "utility"):
        return [f"{family}_{params}"]
    return [spec]


def known_trec_names() -> list[str]:
    """Every trec_eval spelling meta-eval knows, with its default parameters (for "did you mean")."""
    return list(_SIMPLE) + [name for family in TREC_DEFAULT_CUTS for name in expand_trec_spec(family)]


def trec_spellings(family: str) -> list[str]:
    """trec_eval spellings of a family: ``map`` and ``map_cut_K`` for AP, ``ndcg_1=G,...`` for nDCG..."""
    out = [name for name, (fam, _) in _SIMPLE.items() if fam == family]
    out += [f"{trec}_K" for trec, (fam, _) in _CUT.items() if fam == family]
    out += [f"{trec}_GRADE=GAIN,..." for trec, fam in _GAIN_MAPS.items() if fam == family]
    if family == "IPrec11":
        out.append("11pt_avg_LEVEL,...")
    if family == "Utility":
        out.append("utility_A,B,C,D")
    return out


_CUT_NAME_ANY_CASE = re.compile(_CUT_NAME.pattern, re.IGNORECASE)
_PARAMETERISED = re.compile("^(?:(?:" + "|".join(_GAIN_MAPS) + r")_.*=.*|(?:11pt_avg|utility)_[-+0-9.,e]+)$",
                            re.IGNORECASE)


def is_trec_spelling(name: str) -> bool:
    """Whether ``name`` reads as a trec_eval measure in any letter case (``MAP``, ``p_5``, ``ndcg_cut``,
    ``all_trec``, ``ndcg_1=3,2=9``): such a name cannot name a new measure."""
    lower = name.lower()
    return (lower in {n.lower() for n in (*_SIMPLE, *TREC_DEFAULT_CUTS, "all_trec")}
            or _CUT_NAME_ANY_CASE.match(name) is not None or _PARAMETERISED.match(name) is not None)
