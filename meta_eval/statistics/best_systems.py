"""Choosing the systems and topics a discriminative-power analysis runs on: the GAP paper's "best systems"
(top k by every metric), a user-chosen subset, a topic subset."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.core.params import unique

RULES = ("both", "intersection", "union")


def system_ranks(scores) -> np.ndarray:
    """1-based rank of each system by mean score, descending (ties, within rounding
    (:func:`~meta_eval.statistics.correlation.rank.snap_ties`): the earlier system ranks higher)."""
    from meta_eval.statistics.correlation.rank import snap_ties

    means = snap_ties(np.asarray(scores, dtype=np.float64).mean(axis=1))
    order = np.argsort(-means, kind="stable")
    ranks = np.empty(means.size, dtype=np.int64)
    ranks[order] = np.arange(1, means.size + 1)
    return ranks


def best_systems(
    scores_by_metric: Mapping[str, np.ndarray],
    systems: Sequence[str],
    k: int = 15,
    *,
    rule: str = "both",
) -> list[str]:
    """The best systems by every metric, as in the GAP paper's Figure 3 inset ("top 15 by both metrics").

    The paper does not spell out the selection; the rules are [R]:

    * ``both`` (default): the k systems that rank best under all metrics at once — the smallest depth d such
      that the intersection of the metrics' top-d sets holds at least k systems; when it holds more, the k with
      the best worst rank over metrics are kept (ties: best rank sum, then input order). Always k systems.
    * ``intersection``: the systems in every metric's top k (may be fewer than k).
    * ``union``: the systems in any metric's top k (at least k).

    Returns the names ordered by worst rank over metrics, then rank sum.
    """
    if rule not in RULES:
        raise InputError(f"unknown rule {rule!r}; expected one of {RULES}")
    if not scores_by_metric:
        raise InputError("need at least one metric's scores to choose the best systems")
    names = list(systems)
    ranks = np.stack([system_ranks(s) for s in scores_by_metric.values()])  # (M, S)
    if ranks.shape[1] != len(names):
        raise InputError(f"got {len(names)} system names for score matrices with {ranks.shape[1]} systems")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= len(names):
        raise InputError(f"k must be an integer in [1, {len(names)}]; got {k!r}")
    worst = ranks.max(axis=0)
    order = np.lexsort((np.arange(len(names)), ranks.sum(axis=0), worst))
    if rule == "both":
        chosen = order[:k]  # worst rank <= d  <=>  in every top-d set; sorting by worst rank grows d minimally
    elif rule == "intersection":
        chosen = order[worst[order] <= k]
    else:
        chosen = order[ranks.min(axis=0)[order] <= k]
    return [names[i] for i in chosen]


def select_systems(scores, systems: Sequence[str], subset: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """Rows of ``scores`` for the named systems, in the order given, each named once
    (:func:`meta_eval.core.params.unique`)."""
    names = list(systems)
    where = {s: i for i, s in enumerate(names)}
    subset = unique(subset, "systems")
    missing = [s for s in subset if s not in where]
    if missing:
        raise InputError(f"unknown systems {missing[:5]}; known systems are e.g. {names[:5]}")
    rows = np.array([where[s] for s in subset], dtype=np.intp)
    return np.asarray(scores)[rows], list(subset)


def select_topics(scores, topics) -> np.ndarray:
    """Columns of ``scores`` for a topic subset: integer positions (each once:
    :func:`meta_eval.core.params.unique`) or a boolean mask of length T."""
    x = np.asarray(scores)
    sel = np.asarray(topics)
    n_top = x.shape[1]
    if sel.dtype == bool:
        if sel.shape != (n_top,):
            raise InputError(f"a boolean topic mask must have length {n_top}; got shape {sel.shape}")
        return x[:, sel]
    in_range = sel.size == 0 or (sel.min() >= 0 and sel.max() < n_top)
    if sel.ndim != 1 or not np.issubdtype(sel.dtype, np.integer) or not in_range:
        raise InputError(f"topics must be positions in [0, {n_top}) or a boolean mask; got {sel.tolist()[:10]}")
    unique(sel.tolist(), "topics")  # a topic counted twice would weigh double in every resample
    return x[:, sel]
