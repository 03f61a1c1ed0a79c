"""Correlation between metrics on per-topic scores (Kishida 2005, Table 4 style correlation matrices).

Two summaries per metric pair:

- *pooled*: one correlation over all S x T (system, topic) scores, as Kishida's Table 4 correlates the scores of
  all 136 output patterns of one query (Kishida, NII Technical Report 2005, section 4.3);
- *mean over topics*: the correlation across systems within each topic, averaged over the topics where it is
  defined (a topic on which a metric gives every system the same score has no correlation and is left out).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.stats import kendalltau, rankdata

from meta_eval.statistics.correlation._inputs import score_stack
from meta_eval.statistics.correlation.rank import Ranked, _concordant_above, _kendall_kernel, _pearson, snap_ties
from meta_eval.core.errors import InputError

__all__ = ["TopicCorrelation", "correlate_topics"]

Method = Literal["pearson", "spearman", "kendall"]


@dataclass(frozen=True)
class TopicCorrelation:
    """Result of :func:`correlate_topics`.

    Attributes
    ----------
    method : str
        ``"pearson"``, ``"spearman"`` or ``"kendall"`` (tau-b).
    pooled : pandas.DataFrame
        Metric x metric correlation over all (system, topic) scores.
    mean : pandas.DataFrame
        Metric x metric mean over topics of the per-topic correlation across systems.
    n_topics : pandas.DataFrame
        Metric x metric number of topics where the per-topic correlation is defined (entered the mean).
    per_topic : numpy.ndarray
        Per-topic correlations, shape (T, K, K); NaN where undefined.
    topics : list of str
        Topic labels (axis 0 of ``per_topic``).
    """

    method: str
    pooled: pd.DataFrame
    mean: pd.DataFrame
    n_topics: pd.DataFrame
    per_topic: np.ndarray = field(repr=False)
    topics: list[str] = field(repr=False)

    def to_frame(self) -> pd.DataFrame:
        """Tidy table: one row per metric pair with ``pooled``, ``mean`` and ``n_topics``."""
        names = list(self.pooled.columns)
        rows = [
            (x, y, self.method, self.pooled.loc[x, y], self.mean.loc[x, y], int(self.n_topics.loc[x, y]))
            for x, y in combinations(names, 2)
        ]
        return pd.DataFrame(rows, columns=["metric_x", "metric_y", "method", "pooled", "mean", "n_topics"])


def _batched(method: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Correlation along the last axis, one value per leading index."""
    if method == "pearson":
        return _pearson(x, y)
    if method == "spearman":
        return _pearson(rankdata(snap_ties(x), axis=-1), rankdata(snap_ties(y), axis=-1))
    rx, ry = Ranked(x), Ranked(y)
    return _kendall_kernel(rx, ry, _concordant_above(rx, ry))


def correlate_topics(
    scores: Mapping[str, ArrayLike],
    topics: Sequence[str] | None = None,
    *,
    method: Method = "pearson",
) -> TopicCorrelation:
    r"""Correlations of per-topic scores between metrics, pooled and averaged over topics.

    With K metrics and scores s_m[i, t] (system i, topic t):

    - pooled[m, n] = corr({s_m[i, t]}, {s_n[i, t]}) over all S*T pairs (i, t);
    - mean[m, n] = (1/|T'|) sum_{t in T'} corr(s_m[:, t], s_n[:, t]), T' = topics where it is defined.

    ``corr`` is Pearson's r, Spearman's rho or Kendall's tau-b (same values as scipy.stats).

    Parameters
    ----------
    scores : mapping str -> array_like (S, T)
        Per-topic scores for each metric.
    topics : sequence of str, optional
        Topic labels (columns); defaults to "0", "1", ...
    method : {"pearson", "spearman", "kendall"}
        Correlation coefficient.

    Returns
    -------
    TopicCorrelation
    """
    if method not in ("pearson", "spearman", "kendall"):
        raise InputError(f"method must be 'pearson', 'spearman' or 'kendall', got {method!r}")
    names, stack, _ = score_stack(scores, min_systems=2)
    n_metrics, _, n_topics = stack.shape
    if topics is None:
        topics = [str(t) for t in range(n_topics)]
    else:
        topics = [str(t) for t in topics]
        if len(topics) != n_topics:
            raise InputError(f"got {len(topics)} topic names for score arrays with {n_topics} columns")

    pooled = np.eye(n_metrics)
    per_topic = np.zeros((n_topics, n_metrics, n_metrics))
    per_topic[:, np.arange(n_metrics), np.arange(n_metrics)] = 1.0
    flat = stack.reshape(n_metrics, -1)
    by_topic = np.swapaxes(stack, 1, 2)  # (K, T, S)
    for i, j in combinations(range(n_metrics), 2):
        if method == "kendall":  # O(n log n) in scipy; the pooled sample has S*T items
            with np.errstate(invalid="ignore"):
                r = kendalltau(flat[i], flat[j]).statistic
        else:
            r = _batched(method, flat[i], flat[j])
        pooled[i, j] = pooled[j, i] = r
        per_topic[:, i, j] = per_topic[:, j, i] = _batched(method, by_topic[i], by_topic[j])
    constant = np.ptp(stack, axis=1) == 0  # (K, T): metric constant over systems on a topic
    per_topic[np.swapaxes(constant, 0, 1)[:, :, None] & np.eye(n_metrics, dtype=bool)] = np.nan
    for k in range(n_metrics):
        if np.ptp(flat[k]) == 0:
            pooled[k, k] = np.nan
    defined = np.isfinite(per_topic)
    n_used = defined.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n_used > 0, np.where(defined, per_topic, 0.0).sum(axis=0) / n_used, np.nan)

    def frame(a):
        return pd.DataFrame(a, index=names, columns=names)

    return TopicCorrelation(
        method=method,
        pooled=frame(pooled),
        mean=frame(mean),
        n_topics=frame(n_used),
        per_topic=per_topic,
        topics=list(topics),
    )
