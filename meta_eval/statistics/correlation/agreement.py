"""Agreement between two metrics beyond a correlation coefficient: system-pair swaps and their significance.

A *swap* is a pair of systems that the two metrics order in opposite directions by mean score over topics. A
swap between pairs that neither metric separates significantly is harmless; a swap of a pair that is significant
under a metric means the other metric contradicts a difference that metric detects. The significance of each
pair comes from any (S, S) matrix of p-values or achieved significance levels (ASL), e.g. Sakai's paired
bootstrap test from the discriminative-power analysis, or a paired t-test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from meta_eval.statistics.correlation._inputs import score_stack, system_means
from meta_eval.core.errors import InputError

__all__ = ["Swaps", "ranking_swaps", "swap_table"]


@dataclass(frozen=True)
class Swaps:
    """Result of :func:`ranking_swaps`; counts are over the S(S-1)/2 unordered system pairs.

    Attributes
    ----------
    metric_x, metric_y : str
        Names of the two metrics.
    n_pairs : int
        S(S-1)/2.
    n_concordant : int
        Pairs ordered the same way (strictly) by both metrics.
    n_swaps : int
        Pairs ordered strictly in opposite directions.
    n_tied : int
        Pairs tied under at least one metric (n_concordant + n_swaps + n_tied = n_pairs).
    alpha : float
        Significance level: a pair is significant when its p-value (or ASL) is < alpha.
    n_significant_x, n_significant_y : int or None
        Significant pairs (all pairs) under x / y; None when no p-values were given.
    n_swaps_significant_x, n_swaps_significant_y, n_swaps_significant_both : int or None
        Swapped pairs significant under x, under y, under both; None without p-values.
    pairs : pandas.DataFrame
        The swapped pairs: ``system_a``, ``system_b``, ``diff_x`` = mean_x(a) - mean_x(b), ``diff_y``,
        ``p_x``, ``p_y`` (NaN without p-values).
    """

    metric_x: str
    metric_y: str
    n_pairs: int
    n_concordant: int
    n_swaps: int
    n_tied: int
    alpha: float
    n_significant_x: int | None
    n_significant_y: int | None
    n_swaps_significant_x: int | None
    n_swaps_significant_y: int | None
    n_swaps_significant_both: int | None
    pairs: pd.DataFrame = field(repr=False)

    @property
    def swap_rate(self) -> float:
        """n_swaps / n_pairs."""
        return self.n_swaps / self.n_pairs

    def as_row(self) -> dict:
        """The counts as one flat dict (a row of :func:`swap_table`)."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "pairs"} | {
            "swap_rate": self.swap_rate
        }


def _pair_pvalues(p: ArrayLike | None, n_systems: int, label: str) -> np.ndarray | None:
    """p-values of the pairs (a, b), a < b, in row-major order, from an (S, S) matrix or a condensed vector."""
    if p is None:
        return None
    p = np.asarray(p, dtype=np.float64)
    n_pairs = n_systems * (n_systems - 1) // 2
    if p.shape == (n_systems, n_systems):
        p = p[np.triu_indices(n_systems, 1)]
    elif p.shape != (n_pairs,):
        raise InputError(f"{label} must be an (S, S) = ({n_systems}, {n_systems}) matrix of p-values or a vector of"
                         f" the {n_pairs} pairs a < b in row-major order; got shape {p.shape}")
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise InputError(
            f"{label} must hold p-values in [0, 1] for every pair a < b (NaN allowed only on the diagonal)"
        )
    return p


def ranking_swaps(
    x: ArrayLike,
    y: ArrayLike,
    *,
    p_x: ArrayLike | None = None,
    p_y: ArrayLike | None = None,
    alpha: float = 0.05,
    systems: Sequence[str] | None = None,
    names: tuple[str, str] = ("x", "y"),
    decimals: int | None = 12,
) -> Swaps:
    """Count the system pairs that two metrics order differently, and how many of them are significant.

    Parameters
    ----------
    x, y : array_like, shape (S,) or (S, T)
        Scores of S systems under each metric: system means, or per-topic scores (averaged over topics).
    p_x, p_y : array_like, optional
        p-values (or ASLs) of the pairwise tests under each metric: an (S, S) matrix (entries [a, b] with a < b
        are read) or the condensed vector of the S(S-1)/2 pairs a < b in row-major order (the order of
        ``numpy.triu_indices(S, 1)``, e.g. ``meta_eval.statistics.significance.PairwiseTest.asl``).
    alpha : float
        Significance level (p < alpha is significant).
    systems : sequence of str, optional
        System names, for ``Swaps.pairs``.
    names : (str, str)
        Names of the metrics x and y.
    decimals : int or None
        Means are rounded to this many decimals before comparison (so float noise is not a difference).

    Returns
    -------
    Swaps
    """
    mx, my = (np.asarray(v, dtype=np.float64) for v in (x, y))
    if mx.shape != my.shape or mx.ndim not in (1, 2):
        raise InputError(
            f"x and y must both be (S,) means or (S, T) scores of the same shape; got {mx.shape}, {my.shape}"
        )
    if mx.ndim == 1:
        mx, my = mx[:, None], my[:, None]
    _, stack, systems = score_stack({names[0]: mx, names[1]: my}, systems, min_systems=2)
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha!r}")
    n = stack.shape[1]
    px = _pair_pvalues(p_x, n, "p_x")
    py = _pair_pvalues(p_y, n, "p_y")

    means = system_means(stack, decimals)
    a, b = np.triu_indices(n, 1)
    dx, dy = means[0, a] - means[0, b], means[1, a] - means[1, b]
    prod = np.sign(dx) * np.sign(dy)
    swapped = prod < 0
    counts = dict(n_pairs=a.size, n_concordant=int((prod > 0).sum()), n_swaps=int(swapped.sum()),
                  n_tied=int((prod == 0).sum()))
    sig_x = None if px is None else px < alpha
    sig_y = None if py is None else py < alpha

    def count(mask):
        return None if mask is None else int(mask.sum())

    pairs = pd.DataFrame({
        "system_a": np.asarray(systems, dtype=object)[a[swapped]],
        "system_b": np.asarray(systems, dtype=object)[b[swapped]],
        "diff_x": stack[0].mean(axis=1)[a[swapped]] - stack[0].mean(axis=1)[b[swapped]],
        "diff_y": stack[1].mean(axis=1)[a[swapped]] - stack[1].mean(axis=1)[b[swapped]],
        "p_x": np.nan if px is None else px[swapped],
        "p_y": np.nan if py is None else py[swapped],
    })
    return Swaps(
        metric_x=names[0],
        metric_y=names[1],
        alpha=alpha,
        **counts,
        n_significant_x=count(sig_x),
        n_significant_y=count(sig_y),
        n_swaps_significant_x=count(None if sig_x is None else sig_x & swapped),
        n_swaps_significant_y=count(None if sig_y is None else sig_y & swapped),
        n_swaps_significant_both=count(None if sig_x is None or sig_y is None else sig_x & sig_y & swapped),
        pairs=pairs,
    )


def swap_table(
    scores: Mapping[str, ArrayLike],
    pvalues: Mapping[str, ArrayLike] | None = None,
    *,
    alpha: float = 0.05,
    systems: Sequence[str] | None = None,
    decimals: int | None = 12,
) -> pd.DataFrame:
    """:func:`ranking_swaps` for every pair of metrics, one row per pair (x before y in the given order).

    Parameters
    ----------
    scores : mapping str -> array_like (S, T)
        Per-topic scores for each metric.
    pvalues : mapping str -> array_like, optional
        Pairwise p-values (or ASLs) per metric, (S, S) or condensed as in :func:`ranking_swaps`; metrics missing
        from it get no significance counts.
    alpha, systems, decimals :
        As in :func:`ranking_swaps`.

    Returns
    -------
    pandas.DataFrame
        Columns ``metric_x``, ``metric_y``, ``n_pairs``, ``n_concordant``, ``n_swaps``, ``n_tied``, ``alpha``,
        the significance counts and ``swap_rate``.
    """
    names, stack, systems = score_stack(scores, systems, min_systems=2)
    pvalues = dict(pvalues or {})
    unknown = set(pvalues) - set(names)
    if unknown:
        raise InputError(f"p-values given for metrics not in scores: {sorted(unknown)}")
    rows = [
        ranking_swaps(stack[i], stack[j], p_x=pvalues.get(names[i]), p_y=pvalues.get(names[j]), alpha=alpha,
                      systems=systems, names=(names[i], names[j]), decimals=decimals).as_row()
        for i, j in combinations(range(len(names)), 2)
    ]
    return pd.DataFrame(rows)
