"""The exercise rankings of Manning, Raghavan & Schütze, *Introduction to Information Retrieval*, §8.4.

Two systems return 10 documents for an information need with 4 relevant documents in the collection:
System 1 ``RNRNNNNNRR`` and System 2 ``NRNNRRRNNN``. Set precision, recall and F1 of the 10, AP, R-precision,
the 11-point interpolated precision, the PR and ROC curves and the area under the ROC curve (the 10 documents are
the judged set: N⁻ = 6 non-relevant documents). AP prefers System 1, AUC System 2.
"""

from __future__ import annotations

import pandas as pd

from meta_eval.measures import curves
from meta_eval.measures import get_measure
from meta_eval.statistics.metric_properties.metric_input import rn_grades
from meta_eval.model.rankings import Rankings

__all__ = ["EXERCISE_SYSTEMS", "exercise_curves", "exercise_measures", "exercise_rankings"]

EXERCISE_SYSTEMS = {"System 1": "RNRNNNNNRR", "System 2": "NRNNRRRNNN"}
EXERCISE_RELEVANT = 4


def exercise_rankings(systems: dict[str, str] | None = None, n_relevant: int = EXERCISE_RELEVANT) -> Rankings:
    """Rankings of the R/N strings with ``n_relevant`` relevant documents in the collection."""
    systems = systems or EXERCISE_SYSTEMS
    lists = [rn_grades(s) for s in systems.values()]
    n_nonrel = [max(len(g) - sum(g), 0) for g in lists]
    return Rankings.from_lists(lists, [[nn, n_relevant] for nn in n_nonrel])


def exercise_measures(systems: dict[str, str] | None = None, n_relevant: int = EXERCISE_RELEVANT) -> pd.DataFrame:
    """P, R, F1 of the whole list, AP, R-precision, 11-point interpolated average precision and ROC AUC."""
    systems = systems or EXERCISE_SYSTEMS
    r = exercise_rankings(systems, n_relevant)
    table = {name: get_measure(name)(r) for name in ("SetP", "SetR", "SetF", "AP", "Rprec")}
    table["11pt"] = curves.interpolated_precision_at(r).mean(-1)
    table["AUC"] = curves.roc_auc(r)
    return pd.DataFrame(table, index=pd.Index(list(systems), name="system")).rename(
        columns={"SetP": "P", "SetR": "R", "SetF": "F1"})


def exercise_curves(systems: dict[str, str] | None = None,
                    n_relevant: int = EXERCISE_RELEVANT) -> dict[str, pd.DataFrame]:
    """``{"pr": ..., "eleven": ..., "roc": ...}`` tidy curves with a ``system`` column."""
    systems = systems or EXERCISE_SYSTEMS
    r = exercise_rankings(systems, n_relevant)
    index = {"system": list(systems)}
    return {"pr": curves.pr_curve(r, index=index), "eleven": curves.eleven_point_curve(r, index=index),
            "roc": curves.roc_curve(r, index=index)}
