"""meta-eval: evaluating evaluation metrics for information retrieval.

The data flow: files -> :class:`Collection` (dense grades, systems × topics × depth) -> scores (systems × topics per
measure) -> analyses (result objects) -> tables and figures.

The names below are imported on first use (PEP 562), so ``import meta_eval`` costs almost nothing and the
command line starts fast; ``meta_eval.X`` and ``from meta_eval import X`` work as usual.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "Collection": "model.collection", "build_collection": "model.collection", "load_collection": "model.collection",
    "Comparison": "statistics.comparison", "compare": "statistics.comparison",
    "demo_collection": "model.demo", "demo_paths": "model.demo",
    "InfeasibleError": "core.errors", "InputError": "core.errors", "MetaEvalError": "core.errors",
    "OutputError": "core.errors",
    "aggregate": "measures.scoring", "evaluate": "measures.scoring", "format_trec": "rendering.trec_layout",
    "per_topic": "measures.scoring", "resolve": "measures.scoring", "score": "measures.scoring",
    "score_lists": "measures.scoring",
    "read_prefs": "inputs.trec", "read_qrels": "inputs.trec", "read_qrels_jg": "inputs.trec", "read_run": "inputs.trec",
    "read_runs": "inputs.trec", "read_zscores": "inputs.trec",
    "JudgmentGroupCollection": "model.judgment_groups", "load_judgment_groups": "model.judgment_groups",
    "PreferenceCollection": "model.preferences", "load_preferences": "model.preferences",
    "Measure": "measures", "Param": "measures", "families": "measures", "get_measure": "measures",
    "make_measure": "measures", "register": "measures",
    "load_metric": "measures.resolver", "metric_from_callable": "measures.plugins", "per_list": "measures.plugins",
    "JUDGED_NEG": "model.rankings", "PAD": "model.rankings", "UNJUDGED": "model.rankings", "Rankings": "model.rankings",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"meta_eval.{_EXPORTS[name]}"), name)
    else:
        try:  # a layer of the package: meta_eval.statistics, meta_eval.analyses, ...
            value = importlib.import_module(f"meta_eval.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"meta_eval.{name}":
                raise
            raise AttributeError(f"module 'meta_eval' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from meta_eval.core.errors import InfeasibleError, InputError, MetaEvalError, OutputError
    from meta_eval.model.demo import demo_collection, demo_paths
    from meta_eval.inputs.trec import read_prefs, read_qrels, read_qrels_jg, read_run, read_runs, read_zscores
    from meta_eval.measures import Measure, Param, families, get_measure, make_measure, register
    from meta_eval.measures.plugins import metric_from_callable, per_list
    from meta_eval.measures.resolver import load_metric
    from meta_eval.measures.scoring import aggregate, evaluate, per_topic, resolve, score, score_lists
    from meta_eval.rendering.trec_layout import format_trec
    from meta_eval.model.collection import Collection, build_collection, load_collection
    from meta_eval.model.judgment_groups import JudgmentGroupCollection, load_judgment_groups
    from meta_eval.model.preferences import PreferenceCollection, load_preferences
    from meta_eval.model.rankings import JUDGED_NEG, PAD, UNJUDGED, Rankings
    from meta_eval.statistics.comparison import Comparison, compare
