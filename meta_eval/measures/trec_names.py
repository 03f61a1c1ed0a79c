"""trec_eval measure spellings as aliases with trec_eval's semantics.

``map``, ``map_cut_10``, ``P_5``, ``recall_100``, ``Rprec``, ``recip_rank``, ``bpref``, ``ndcg``, ``ndcg_cut_10``,
``ndcg_1=3,2=9`` (custom gains), ``iprec_at_recall_0.10``, ``11pt_avg``, ``Rprec_mult_0.20``, ``success_5``,
``set_P``, ``set_recall``, ``set_F``, ``num_ret``, ``num_rel``, ``num_rel_ret``, ``gm_map``. The printed name is the
trec_eval one, so output can be diffed with trec_eval's. ``expand_trec_spec`` turns trec_eval's ``-m`` syntax
(``P.5,10``, ``ndcg_cut.10,20``, ``all_trec``-style sets) into names.
"""

from __future__ import annotations

import re

from meta_eval.measures.registry import Measure, make_measure, parse_gain_map

_SIMPLE = {
    "map": ("AP", {}),
    "gm_map": ("GM_AP", {}),
    "Rprec": ("Rprec", {}),
    "recip_rank": ("RR", {}),
    "bpref": ("bpref", {}),
    "ndcg": ("nDCG", {}),
    "11pt_avg": ("IPrec11", {}),
    "set_P": ("SetP", {}),
    "set_recall": ("SetR", {}),
    "set_F": ("SetF", {}),
    "num_ret": ("NumRet", {}),
    "num_rel": ("NumRel", {}),
    "num_rel_ret": ("NumRelRet", {}),
    "rbp": ("RBP", {"p": 0.9, "graded": True, "max": "topic"}),  # trec_eval 10's rbp (p = 0.9, grade / top grade)
    "rbp_resid": ("RBP_resid", {"p": 0.9}),
}

_CUT = {
    "P": ("P", int),
    "recall": ("Recall", int),
    "map_cut": ("AP", int),
    "ndcg_cut": ("nDCG", int),
    "success": ("Success", int),
    "iprec_at_recall": ("IPrec", float),
    "Rprec_mult": ("Rprec_mult", float),
}

# Default parameter lists of trec_eval's cutoff measures (used by expand_trec_spec for a bare family name).
TREC_DEFAULT_CUTS = {
    "P": "5,10,15,20,30,100,200,500,1000",
    "recall": "5,10,15,20,30,100,200,500,1000",
    "map_cut": "5,10,15,20,30,100,200,500,1000",
    "ndcg_cut": "5,10,15,20,30,100,200,500,1000",
    "success": "1,5,10",
    "iprec_at_recall": "0.00,0.10,0.20,0.30,0.40,0.50,0.60,0.70,0.80,0.90,1.00",
    "Rprec_mult": "0.20,0.40,0.60,0.80,1.00,1.20,1.40,1.60,1.80,2.00",
}

# The measures of trec_eval's all_trec set that meta-eval computes, in trec_eval's print order.
ALL_TREC = (
    ["num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank"]
    + ["iprec_at_recall"] + ["P", "recall", "Rprec_mult", "11pt_avg", "ndcg", "ndcg_cut", "map_cut", "success"]
    + ["set_P", "set_recall", "set_F", "rbp", "rbp_resid"]
)

_CUT_NAME = re.compile(r"^(?P<family>P|recall|map_cut|ndcg_cut|success|iprec_at_recall|Rprec_mult)_(?P<cut>[0-9.]+)$")


def from_trec_name(name: str) -> Measure | None:
    """The measure a trec_eval spelling denotes, labelled with that spelling; None if it is not one."""
    if name in _SIMPLE:
        family, params = _SIMPLE[name]
        return make_measure(family, label=name, **params)
    match = _CUT_NAME.match(name)
    if match:
        family, kind = _CUT[match["family"]]
        return make_measure(family, label=name, k=kind(match["cut"]))
    if name.startswith("ndcg_") and "=" in name:
        return make_measure("nDCG", label=name, gain=parse_gain_map(name[len("ndcg_"):]))
    if name.startswith("11pt_avg_"):
        levels = tuple(float(v) for v in name[len("11pt_avg_"):].split(",") if v)
        return make_measure("IPrec11", label=name, levels=levels)
    return None


def _format_cut(family: str, value: str) -> str:
    if family in ("iprec_at_recall", "Rprec_mult"):
        return f"{float(value):.2f}"
    return str(int(float(value)))


def expand_trec_spec(spec: str) -> list[str]:
    """Expand one trec_eval ``-m`` argument into measure names.

    ``P.5,10`` -> ``P_5, P_10``; ``ndcg_cut`` -> its default cutoffs; ``ndcg.1=3,2=9`` -> ``ndcg_1=3,2=9``;
    ``all_trec`` -> every trec_eval measure meta-eval computes. Any other text is returned unchanged.
    """
    if spec == "all_trec":
        return [name for family in ALL_TREC for name in expand_trec_spec(family)]
    family, dot, params = spec.partition(".")
    if family in TREC_DEFAULT_CUTS:
        cuts = params if dot and params else TREC_DEFAULT_CUTS[family]
        values = sorted({float(v) for v in cuts.split(",") if v.strip()})
        return [f"{family}_{_format_cut(family, str(v))}" for v in values]
    if family == "ndcg" and dot:
        return [f"ndcg_{params}"]
    if family == "11pt_avg" and dot:
        return [f"11pt_avg_{params}"]
    return [spec]
