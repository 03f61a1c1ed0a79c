"""Sensitivity of a metric to the rank of a relevant document (Kishida 2005, §2.2, Eq. 9–12).

When the non-relevant document at rank j turns relevant, AP grows by (Eq. 10, R held fixed)

    Δv(j) = (1/R) ( (1/j) Σ_{k<=j} x_k + Σ_{t=j+1..n} x_t / t ),

with x_j = 1 in the first sum; Eq. 11: Δv(j) > Δv(j+1) whenever ranks j and j+1 both hold non-relevant
documents — relevant documents near the top are worth more. For any other metric the same question is answered
numerically: flip rank j, rescore, subtract (:func:`metric_increment`), which lets a user compare the
top-heaviness of a new metric with AP's (:func:`sensitivity_profile`).
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from meta_eval.core.errors import InputError
from meta_eval.statistics.metric_properties.metric_input import MetricLike, as_metric, rankings_from
from meta_eval.model.rankings import Rankings

__all__ = ["ap_increment", "metric_increment", "sensitivity_profile"]


def ap_increment(rankings: Rankings) -> np.ndarray:
    """Kishida's Δv(j) (Eq. 10) for every rank j, in closed form.

    Returns
    -------
    numpy.ndarray
        ``(..., D)``: the increase of AP when the document at rank j becomes relevant with R unchanged; NaN where
        rank j already holds a relevant document, lies past the list, or R = 0.
    """
    r = rankings
    rel = r.relevant()
    cum_before = r.cum_relevant() - rel  # C(j-1)
    below = np.cumsum((rel / r.ranks)[..., ::-1], axis=-1)[..., ::-1] - rel / r.ranks  # Σ_{t>j} x_t / t
    R = r.num_rel().astype(np.float64)[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        delta = ((cum_before + 1) / r.ranks + below) / R
    return np.where(~rel & r.valid() & (R > 0), delta, np.nan)


def metric_increment(
    metric: MetricLike,
    rankings: Rankings,
    positions: Sequence[int] | None = None,
    grade: int = 1,
    count: str = "fixed",
) -> np.ndarray:
    """Numerical Δ of any metric when the non-relevant document at rank j is judged ``grade`` instead.

    Parameters
    ----------
    metric : str, Measure or callable
        The metric (a registered name such as ``"AP"`` or ``"nDCG@10"``, or a function of Rankings).
    rankings : Rankings
        Lists of any leading shape.
    positions : sequence of int, optional
        1-based ranks j to try (default every rank 1..D).
    grade : int
        The new grade of the document at rank j (>= 1).
    count : {"fixed", "add"}
        ``fixed``: the qrels counts do not change (Kishida Eq. 9–10, R invariant). ``add``: the document is a newly
        found relevant one, so R_grade grows by one (and the count of its old judged grade, if any, falls by one):
        Kishida Eq. 16.

    Returns
    -------
    numpy.ndarray
        ``(..., P)`` increments; NaN where rank j already holds a relevant document or lies past the list.
    """
    if count not in ("fixed", "add"):
        raise InputError(f"count must be 'fixed' or 'add', got {count!r}")
    if grade < max(rankings.rel_level, 1):
        raise InputError(f"grade must be a relevant grade (>= {max(rankings.rel_level, 1)}), got {grade}")
    name, func = as_metric(metric)
    r = rankings
    pos = np.arange(1, r.depth + 1) if positions is None else np.asarray(positions, dtype=np.int64).ravel()
    if np.any((pos < 1) | (pos > r.depth)):
        raise InputError(f"positions must be ranks in 1..{r.depth}, got {pos.tolist()}")
    P = len(pos)
    idx = pos - 1
    old = r.grades[..., idx]  # (..., P)
    flippable = (old < r.rel_level) & (old != -3) & (idx < r.n_ret[..., None])
    grades = np.repeat(r.grades[..., None, :], P, axis=-2).astype(np.int16)  # (..., P, D)
    onehot = np.zeros((P, r.depth), dtype=bool)
    onehot[np.arange(P), idx] = True
    grades = np.where(onehot & flippable[..., None], grade, grades)
    width = max(r.max_grade, grade) + 1
    counts = np.zeros(r.shape + (width,), dtype=np.int64)
    counts[..., : r.max_grade + 1] = np.broadcast_to(r.counts, r.shape + (r.max_grade + 1,))
    counts = np.repeat(counts[..., None, :], P, axis=-2)
    if count == "add":
        counts[..., grade] += flippable
        for level in range(r.rel_level):  # a judged non-relevant document changes its judgment
            counts[..., level] -= flippable & (old == level)
        np.maximum(counts, 0, out=counts)
    n_ret = np.repeat(r.n_ret[..., None], P, axis=-1)
    flipped = Rankings(grades=grades, n_ret=n_ret, counts=counts, rel_level=r.rel_level)
    base = np.asarray(func(r), dtype=np.float64)
    after = np.asarray(func(flipped), dtype=np.float64)
    return np.where(flippable, after - base[..., None], np.nan)


def sensitivity_profile(
    metrics: Iterable[MetricLike],
    grade_lists,
    counts=None,
    grade: int = 1,
    count: str = "fixed",
    rel_level: int = 1,
) -> pd.DataFrame:
    """Δ at every rank for several metrics: a tidy table ``list, metric, rank, delta`` (NaN rows dropped).

    Examples
    --------
    >>> df = sensitivity_profile(["AP", "nDCG"], [[0] * 5], counts=[[5, 1]])
    >>> df[df.metric == "AP"].delta.round(3).tolist()   # R = 1: Δv(j) = 1/j
    [1.0, 0.5, 0.333, 0.25, 0.2]
    """
    r = rankings_from(grade_lists, counts, rel_level)
    if len(r.shape) != 1:
        raise InputError("sensitivity_profile takes plain lists (one leading axis); use metric_increment otherwise")
    frames = []
    for metric in metrics:
        name, _ = as_metric(metric)
        delta = metric_increment(metric, r, grade=grade, count=count)
        lst, rank = np.nonzero(~np.isnan(delta))
        frames.append(pd.DataFrame({"list": lst, "metric": name, "rank": rank + 1, "delta": delta[lst, rank]}))
    return pd.concat(frames, ignore_index=True)
