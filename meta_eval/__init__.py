"""meta-eval: evaluating evaluation metrics for information retrieval.

The data flow: files -> :class:`Collection` (dense grades, systems × topics × depth) -> scores (systems × topics per
measure) -> analyses (result objects) -> tables and figures.
"""

from meta_eval.collection import Collection, build_collection, load_collection
from meta_eval.compare import Comparison, compare
from meta_eval.demo import demo_collection, demo_paths
from meta_eval.errors import InfeasibleError, InputError, MetaEvalError
from meta_eval.evaluate import aggregate, evaluate, format_trec, per_topic, resolve, score, score_lists
from meta_eval.io import read_qrels, read_run, read_runs
from meta_eval.measures import Measure, Param, families, get_measure, make_measure, register
from meta_eval.plugins import load_metric, metric_from_callable, per_list
from meta_eval.rankings import JUDGED_NEG, PAD, UNJUDGED, Rankings

__version__ = "0.1.0"

__all__ = [
    "Collection", "Comparison", "InfeasibleError", "InputError", "JUDGED_NEG", "Measure", "MetaEvalError", "PAD",
    "Param", "Rankings", "UNJUDGED", "aggregate", "build_collection", "compare", "demo_collection", "demo_paths",
    "evaluate", "families", "format_trec", "get_measure", "load_collection", "make_measure", "per_topic", "read_qrels",
    "read_run", "read_runs", "register", "resolve", "score", "score_lists", "load_metric", "metric_from_callable",
    "per_list",
]
