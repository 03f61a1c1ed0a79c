"""Intuitiveness of metrics (Sakai, WWW 2012, "Evaluation with informational and navigational intents"; the
concordance test of Sakai & Song, SIGIR 2011).

For two metrics X and Y and a simple gold criterion G (default: the number of relevant documents in the top k),
take every topic and every pair of systems (a, b). The pair is a *disagreement* when X and Y prefer different
systems (strictly: sign(X_a − X_b) = −sign(Y_a − Y_b) ≠ 0). On the disagreements::

    intuitiveness(X | Y) = #{disagreements where G strictly prefers the system X prefers} / #disagreements

and likewise intuitiveness(Y | X); a pair G ties is counted for neither metric (``gold_ties``). The metric that
agrees more often with the gold criterion when the two metrics disagree is the more intuitive one. Differences
within ``tie_tol`` count as ties. Score standardisation (:mod:`meta_eval.statistics.standardise`) is an increasing map
per topic, so it leaves every within-topic preference, and hence this analysis, unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from meta_eval.core.errors import InputError
from meta_eval.statistics.anova import as_score_stack

TIE_TOL = 1e-12


@dataclass(frozen=True, eq=False)
class Intuitiveness:
    """Result of :func:`intuitiveness`.

    Attributes
    ----------
    table : DataFrame
        One row per metric pair (x before y in the input order): ``metric_x, metric_y, gold, comparisons``
        (topic × system pairs), ``disagreements``, ``agree_x, agree_y`` (disagreements where the gold prefers x's,
        resp. y's, choice), ``gold_ties``, ``intuitiveness_x, intuitiveness_y`` (NaN without disagreements).
    gold : str
    """

    table: pd.DataFrame
    gold: str

    def matrix(self) -> pd.DataFrame:
        """Square matrix: entry (x, y) = intuitiveness(x | y); the diagonal is NaN."""
        names = list(dict.fromkeys([*self.table["metric_x"], *self.table["metric_y"]]))
        out = pd.DataFrame(np.nan, index=pd.Index(names, name="metric"), columns=names)
        for r in self.table.itertuples(index=False):
            out.loc[r.metric_x, r.metric_y] = r.intuitiveness_x
            out.loc[r.metric_y, r.metric_x] = r.intuitiveness_y
        return out


def _signs(x: np.ndarray, ia: np.ndarray, ib: np.ndarray, tol: float) -> np.ndarray:
    """sign(x_a − x_b) per (pair, topic) as int8, differences within ``tol`` being 0."""
    d = x[..., ia, :] - x[..., ib, :]
    return (np.sign(d) * (np.abs(d) > tol)).astype(np.int8)


def intuitiveness(
    scores: Mapping[str, np.ndarray],
    gold,
    *,
    gold_name: str = "gold",
    systems: Sequence[str] | None = None,
    tie_tol: float = TIE_TOL,
) -> Intuitiveness:
    """Sakai's intuitiveness of every pair of metrics against a gold criterion (module docstring).

    Parameters
    ----------
    scores : mapping metric -> array (S, T)
        Per-topic scores of at least two metrics.
    gold : array (S, T)
        Per-topic values of the gold criterion (e.g. ``me.score(col, "P@10")``: ordering by P@10 is ordering by
        the number of relevant documents in the top 10).
    gold_name : str
        Name of the criterion in the output.
    tie_tol : float
        Absolute differences up to this are ties.

    Examples
    --------
    >>> x = {"A": [[1.0], [0.0]], "B": [[0.0], [1.0]]}
    >>> intuitiveness(x, [[2.0], [1.0]]).table[["disagreements", "intuitiveness_x", "intuitiveness_y"]].values.tolist()
    [[1.0, 1.0, 0.0]]
    """
    metrics, stack, _ = as_score_stack(scores, systems, min_topics=1)
    if len(metrics) < 2:
        raise InputError(f"intuitiveness compares at least two metrics; got {metrics}")
    g = np.asarray(gold, dtype=np.float64)
    if g.shape != stack.shape[1:]:
        raise InputError(f"gold must have the scores' shape {stack.shape[1:]}; got {g.shape}")
    if not np.all(np.isfinite(g)):
        raise InputError("gold values must be finite")
    ia, ib = np.triu_indices(stack.shape[1], 1)
    signs = _signs(stack, ia, ib, tie_tol)  # (M, P, T)
    gsign = _signs(g, ia, ib, tie_tol)
    comparisons = gsign.size
    rows = []
    for i in range(len(metrics)):
        for j in range(i + 1, len(metrics)):
            sx, sy = signs[i], signs[j]
            dis = (sx * sy) < 0
            n = int(dis.sum())
            agree_x = int((dis & (gsign == sx)).sum())
            agree_y = int((dis & (gsign == sy)).sum())
            ties = int((dis & (gsign == 0)).sum())
            with np.errstate(invalid="ignore", divide="ignore"):
                rows.append((metrics[i], metrics[j], gold_name, comparisons, n, agree_x, agree_y, ties,
                             agree_x / n if n else np.nan, agree_y / n if n else np.nan))
    table = pd.DataFrame(rows, columns=["metric_x", "metric_y", "gold", "comparisons", "disagreements", "agree_x",
                                       "agree_y", "gold_ties", "intuitiveness_x", "intuitiveness_y"])
    return Intuitiveness(table, gold_name)
