"""meta-eval: evaluating evaluation metrics for information retrieval.

The data flow: files -> :class:`Collection` (dense grades, systems × topics × depth) -> scores (systems × topics per
measure) -> analyses (result objects) -> tables and figures.

The names below are imported on first use (PEP 562), so ``import meta_eval`` costs almost nothing and the
command line starts fast; ``meta_eval.X`` and ``from meta_eval import X`` work as usual.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "Collection": "collection", "build_collection": "collection", "load_collection": "collection",
    "Comparison": "compare", "compare": "compare",
    "demo_collection": "demo", "demo_paths": "demo",
    "InfeasibleError": "errors", "InputError": "errors", "MetaEvalError": "errors", "OutputError": "errors",
    "aggregate": "evaluate", "evaluate": "evaluate", "format_trec": "evaluate", "per_topic": "evaluate",
    "resolve": "evaluate", "score": "evaluate", "score_lists": "evaluate",
    "read_prefs": "io", "read_qrels": "io", "read_qrels_jg": "io", "read_run": "io", "read_runs": "io",
    "read_zscores": "io",
    "JudgmentGroupCollection": "judgment_groups", "load_judgment_groups": "judgment_groups",
    "PreferenceCollection": "preferences", "load_preferences": "preferences",
    "Measure": "measures", "Param": "measures", "families": "measures", "get_measure": "measures",
    "make_measure": "measures", "register": "measures",
    "load_metric": "plugins", "metric_from_callable": "plugins", "per_list": "plugins",
    "JUDGED_NEG": "rankings", "PAD": "rankings", "UNJUDGED": "rankings", "Rankings": "rankings",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"meta_eval.{_EXPORTS[name]}"), name)
    else:
        try:  # a subpackage or module: meta_eval.mem, meta_eval.discpower, ...
            value = importlib.import_module(f"meta_eval.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"meta_eval.{name}":
                raise
            raise AttributeError(f"module 'meta_eval' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


class _Package(types.ModuleType):
    """``meta_eval.evaluate`` and ``meta_eval.compare`` are functions that share their module's name: importing the
    module must not replace the function on the package (the import system sets the attribute)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _EXPORTS and isinstance(value, types.ModuleType) and _EXPORTS[name] == name:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from meta_eval.collection import Collection, build_collection, load_collection
    from meta_eval.compare import Comparison, compare
    from meta_eval.demo import demo_collection, demo_paths
    from meta_eval.errors import InfeasibleError, InputError, MetaEvalError, OutputError
    from meta_eval.evaluate import aggregate, evaluate, format_trec, per_topic, resolve, score, score_lists
    from meta_eval.io import read_prefs, read_qrels, read_qrels_jg, read_run, read_runs, read_zscores
    from meta_eval.judgment_groups import JudgmentGroupCollection, load_judgment_groups
    from meta_eval.preferences import PreferenceCollection, load_preferences
    from meta_eval.measures import Measure, Param, families, get_measure, make_measure, register
    from meta_eval.plugins import load_metric, metric_from_callable, per_list
    from meta_eval.rankings import JUDGED_NEG, PAD, UNJUDGED, Rankings
