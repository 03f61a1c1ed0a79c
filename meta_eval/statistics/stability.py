"""Stability of a metric's conclusions as a function of topic-set size: the Voorhees-Buckley (2002) swap rate over
disjoint topic sets, the Buckley-Voorhees (2000) error rate with fuzziness, and Voorhees' (2009) split-half
correlation of the system rankings of disjoint topic halves."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from meta_eval.statistics.significance.pairs import check_resamples, check_scores, pair_indices
from meta_eval.core.errors import InputError
from meta_eval.core.memory_budget import require
from meta_eval.core.params import rng as rng_from_seed


def smallest_from_which_all_hold(values: np.ndarray, holds: np.ndarray) -> float:
    """The smallest of the ascending ``values`` from which on ``holds`` is true at every value (NaN when it fails at
    the last): how a curve is read at a threshold (Voorhees & Buckley's "difference needed", the fraction of
    judgments needed)."""
    failing = np.flatnonzero(~np.asarray(holds, dtype=bool))
    if failing.size == 0:
        return float(values[0])
    return float(values[failing[-1] + 1]) if failing[-1] + 1 < len(values) else float("nan")


@dataclass(frozen=True, eq=False)
class SwapRates:
    """Voorhees-Buckley swap rates.

    Attributes
    ----------
    table : DataFrame
        One row per (size, bin): ``size`` (topics per set, n), ``bin_lo``, ``bin_hi`` (bin of |d1|, the absolute
        difference of mean scores on the first set), ``comparisons``, ``swaps``, ``swap_rate``.
    by_size : DataFrame
        One row per size: ``size``, ``comparisons``, ``swaps``, ``swap_rate`` (over all bins).
    """

    table: pd.DataFrame
    by_size: pd.DataFrame

    def min_difference(self, max_rate: float = 0.05) -> pd.DataFrame:
        """Per size, the smallest bin edge d such that every bin from d upwards has swap rate <= max_rate.

        This is how Voorhees & Buckley read their curves ("a difference of d is needed for < 5% swaps at n").
        NaN when even the last bin exceeds ``max_rate``.
        """
        rows = []
        for size, grp in self.table.groupby("size", sort=True):
            grp = grp.sort_values("bin_lo")
            d = smallest_from_which_all_hold(grp["bin_lo"].to_numpy(), ~(grp["swap_rate"].to_numpy() > max_rate))
            rows.append({"size": size, "min_difference": d})
        return pd.DataFrame(rows)


    def extrapolate(self, sizes: Iterable[int]) -> pd.DataFrame:
        """Voorhees & Buckley's extrapolation: per bin, fit log(swap_rate) = a + b n by least squares over the
        measured sizes with at least one swap, and predict the swap rate at ``sizes`` (e.g. 50).

        Returns one row per (bin, size): ``bin_lo``, ``bin_hi``, ``size``, ``swap_rate`` (predicted), ``slope``
        (b), ``intercept`` (a), ``points`` (sizes used). Bins with fewer than two usable sizes are left out.
        """
        targets = np.asarray(list(sizes), dtype=np.float64)
        rows = []
        for (lo, hi), grp in self.table[self.table["swaps"] > 0].groupby(["bin_lo", "bin_hi"], sort=True):
            if grp["size"].nunique() < 2:
                continue
            slope, intercept = np.polyfit(grp["size"].to_numpy(float), np.log(grp["swap_rate"].to_numpy()), 1)
            for n, rate in zip(targets, np.exp(intercept + slope * targets)):
                rows.append((lo, hi, n, rate, slope, intercept, len(grp)))
        return pd.DataFrame(rows, columns=["bin_lo", "bin_hi", "size", "swap_rate", "slope", "intercept", "points"])


def _disjoint_sets(rng: np.random.Generator, n_top: int, n: int, n_splits: int) -> tuple[np.ndarray, np.ndarray]:
    """Averaging matrices (T, splits) of two disjoint random sets of n topics per split: column j of
    ``x @ first`` is each system's mean over the first set of split j."""
    order = rng.permuted(np.broadcast_to(np.arange(n_top), (n_splits, n_top)), axis=1)
    first = np.zeros((n_top, n_splits))
    second = np.zeros((n_top, n_splits))
    cols = np.arange(n_splits)
    first[order[:, :n].T, cols] = 1.0 / n
    second[order[:, n : 2 * n].T, cols] = 1.0 / n
    return first, second


def _check_sizes(sizes: Iterable[int] | None, limit: int, name: str) -> np.ndarray:
    if sizes is None:
        return np.arange(1, limit + 1)
    arr = np.asarray(list(sizes))
    if arr.size == 0 or not np.issubdtype(arr.dtype, np.integer) or arr.min() < 1 or arr.max() > limit:
        raise InputError(f"{name} must be integers in [1, {limit}]; got {arr.tolist()}")
    return np.unique(arr)


def swap_rates(
    scores,
    systems: Sequence[str] | None = None,
    *,
    sizes: Iterable[int] | None = None,
    n_splits: int = 100,
    bin_width: float = 0.01,
    seed: int | None = 0,
) -> SwapRates:
    """Voorhees-Buckley (2002) swap rates over pairs of disjoint topic sets.

    For each topic-set size n (default 1..⌊T/2⌋) and each of ``n_splits`` random splits: draw two disjoint
    sets of n topics; for every system pair compute d1 and d2, the differences of mean scores on each set. A
    *swap* is d1 d2 < 0 (the sets order the pair oppositely; a zero difference is no swap). Pairs are binned by
    |d1| in bins of ``bin_width``; swap rate = swaps / comparisons per (n, bin).

    The paper's log-linear extrapolation to larger n is :meth:`SwapRates.extrapolate`; the difference needed for
    a given swap rate is :meth:`SwapRates.min_difference`. Binning, split and fit details of the paper are
    unverified (methods.md §4.2, [R]).

    Parameters
    ----------
    scores : array_like, shape (S, T)
    systems : sequence of str, optional
    sizes : iterable of int, optional
        Topic-set sizes n, each in [1, T // 2].
    n_splits : int
        Random splits per size (default 100).
    bin_width : float
        Width of the |d1| bins (default 0.01, as the paper).
    seed : int or None

    References
    ----------
    E. M. Voorhees, C. Buckley. The effect of topic set size on retrieval experiment error. SIGIR 2002.
    """
    x, _ = check_scores(scores, systems)
    n_top = x.shape[1]
    if n_top < 2:
        raise InputError(f"swap rates need at least 2 topics; got {n_top}")
    sizes_arr = _check_sizes(sizes, n_top // 2, "sizes")
    n_splits = check_resamples(n_splits, "n_splits")
    if not bin_width > 0:
        raise InputError(f"bin_width must be positive; got {bin_width!r}")
    n_pairs = x.shape[0] * (x.shape[0] - 1) // 2
    # per size: the split design, both difference matrices (pairs x splits) and their bins and swap flags
    require((32.0 * n_top + 40.0 * n_pairs) * n_splits, f"swap rates from {n_splits:,} splits of {n_pairs:,} system "
            "pairs", "n_splits")
    rng = rng_from_seed(seed, "swap-rates")
    ia, ib = pair_indices(x.shape[0])
    diffs = x[ia] - x[ib]  # (P, T)
    rows, totals = [], []
    for n in sizes_arr:
        first, second = _disjoint_sets(rng, n_top, int(n), n_splits)
        d1 = diffs @ first
        d2 = diffs @ second
        bins = np.floor(np.abs(d1) / bin_width + 1e-9).astype(np.int64).ravel()
        swap = (d1 * d2 < 0).ravel()
        comp = np.bincount(bins)
        sw = np.bincount(bins, weights=swap, minlength=comp.size)
        for k in np.flatnonzero(comp):
            rows.append((int(n), k * bin_width, (k + 1) * bin_width, int(comp[k]), int(sw[k]), sw[k] / comp[k]))
        totals.append((int(n), int(comp.sum()), int(sw.sum()), sw.sum() / comp.sum()))
    table = pd.DataFrame(rows, columns=["size", "bin_lo", "bin_hi", "comparisons", "swaps", "swap_rate"])
    by_size = pd.DataFrame(totals, columns=["size", "comparisons", "swaps", "swap_rate"])
    return SwapRates(table=table, by_size=by_size)


def error_rates(
    scores,
    systems: Sequence[str] | None = None,
    *,
    sizes: Iterable[int] | None = None,
    n_sets: int = 100,
    fuzziness: float | Iterable[float] = 0.05,
    seed: int | None = 0,
) -> pd.DataFrame:
    """Buckley-Voorhees (2000) error rate and tie proportion with fuzziness, per topic-set size.

    For each size n (default 1..T) draw ``n_sets`` topic sets of n topics (without replacement within a set;
    the paper used TREC-8 query-track variants instead, so this is the usual reconstruction, [R]). For every
    pair (A, B) and set, the pair is *equal* when |M_A - M_B| <= f max(M_A, M_B) (M: mean score on the set),
    else A > B or A < B. Then::

        error rate     = Σ_pairs min(|A>B|, |A<B|) / Σ_pairs (|A>B| + |A<B| + |A=B|)
        tie proportion = Σ_pairs |A=B| / the same denominator

    Returns
    -------
    DataFrame
        Columns ``size``, ``fuzziness``, ``error_rate``, ``tie_rate``, ``comparisons`` (pairs x sets).

    References
    ----------
    C. Buckley, E. M. Voorhees. Evaluating evaluation measure stability. SIGIR 2000.
    """
    x, _ = check_scores(scores, systems, min_topics=1)
    n_top = x.shape[1]
    sizes_arr = _check_sizes(sizes, n_top, "sizes")
    n_sets = check_resamples(n_sets, "n_sets")
    fuzz = np.atleast_1d(np.asarray(list(fuzziness) if not np.isscalar(fuzziness) else [fuzziness], dtype=float))
    if fuzz.size == 0 or np.any(fuzz < 0):
        raise InputError(f"fuzziness must be non-negative; got {fuzz.tolist()}")
    n_pairs = x.shape[0] * (x.shape[0] - 1) // 2
    # per size: the permuted orders, the membership matrix, the set means and the pair comparisons
    require((24.0 * n_top + 8.0 * x.shape[0] + 40.0 * n_pairs) * n_sets, f"error rates from {n_sets:,} topic sets "
            f"of {n_pairs:,} system pairs", "n_sets")
    rng = rng_from_seed(seed, "error-rates")
    ia, ib = pair_indices(x.shape[0])
    rows = []
    for n in sizes_arr:
        order = rng.permuted(np.broadcast_to(np.arange(n_top), (n_sets, n_top)), axis=1)
        member = np.zeros((n_top, n_sets))
        member[order[:, :n].T, np.arange(n_sets)] = 1.0 / n
        means = x @ member  # (S, sets)
        ma, mb = means[ia], means[ib]
        gap = np.abs(ma - mb)
        top = np.maximum(ma, mb)
        for f in fuzz:
            equal = gap <= f * top
            gt = ((ma > mb) & ~equal).sum(axis=1)
            lt = ((ma < mb) & ~equal).sum(axis=1)
            eq = equal.sum(axis=1)
            total = (gt + lt + eq).sum()
            rows.append((int(n), float(f), np.minimum(gt, lt).sum() / total, eq.sum() / total, int(total)))
    return pd.DataFrame(rows, columns=["size", "fuzziness", "error_rate", "tie_rate", "comparisons"])


@dataclass(frozen=True, eq=False)
class SplitHalf:
    """Split-half stability of a system ranking (result of :func:`split_half`).

    Attributes
    ----------
    splits : DataFrame
        One row per (size, split): ``size`` (topics per half), ``split``, ``kendall_tau_b``, ``tau_ap_b``.
    summary : DataFrame
        One row per (size, coefficient): ``size, coefficient, mean, ci_low, ci_high`` (percentile interval over
        the splits at ``confidence``), ``splits``.
    """

    splits: pd.DataFrame
    summary: pd.DataFrame


def split_half_bytes(n_systems: int, n_topics: int, n_splits: int, n_sizes: int) -> float:
    """Peak memory of :func:`split_half`: per half size the permuted topic orders (two int64 copies), the two
    averaging matrices, the two mean matrices and the rank correlations' system-pair matrices (S x S per split),
    plus the per-split rows of the result, kept for every size (measured with tracemalloc: 2.6, 7.6 and 24.8 kB
    per split for 16, 32 and 64 systems)."""
    return (32.0 * n_topics + 16.0 * n_systems + 8.0 * n_systems**2 + 64.0 * n_sizes) * n_splits


def _quantile(values, q: float) -> float:
    """The q-quantile of the defined values; NaN, without numpy's all-NaN warning, when none is (a coefficient
    undefined on every split: systems tied on every topic)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    return float(np.quantile(v, q)) if v.size else np.nan


def split_half(
    scores,
    systems: Sequence[str] | None = None,
    *,
    sizes: Iterable[int] | None = None,
    n_splits: int = 100,
    confidence: float = 0.95,
    seed: int | None = 0,
) -> SplitHalf:
    """Voorhees' (2009) split-half stability: the correlation between the system rankings of two disjoint topic
    sets of n topics each, as a function of n.

    For each size n (default 1..⌊T/2⌋) and each of ``n_splits`` random splits, draw two disjoint sets of n topics
    (the same design as :func:`swap_rates`: the same seed gives the same splits), rank the systems by their mean
    over each set, and compute Kendall's τ_b and the symmetric τ_AP-b between the two rankings (neither half is
    the reference). τ near 1 at n = T/2 means that another topic set of that size would rank the systems alike.

    Parameters
    ----------
    scores : array_like, shape (S, T)
    systems : sequence of str, optional
    sizes : iterable of int, optional
        Topics per half, each in [1, T // 2].
    n_splits : int
    confidence : float
        Level of the percentile intervals over splits.
    seed : int or None

    References
    ----------
    E. M. Voorhees. Topic set size redux. SIGIR 2009.
    """
    from meta_eval.statistics.correlation.rank import kendall_tau_b, tau_ap_b

    x, _ = check_scores(scores, systems)
    n_top = x.shape[1]
    sizes_arr = _check_sizes(sizes, n_top // 2, "sizes")
    n_splits = check_resamples(n_splits, "n_splits")
    if not 0 < confidence < 1:
        raise InputError(f"confidence must lie in (0, 1); got {confidence!r}")
    require(split_half_bytes(x.shape[0], n_top, n_splits, len(sizes_arr)),
            f"split-half with {n_splits:,} splits of {n_top} topics", "--splits; in a study --split-half-splits")
    rng = rng_from_seed(seed, "split-half")
    frames = []
    for n in sizes_arr:
        first, second = _disjoint_sets(rng, n_top, int(n), n_splits)
        m1, m2 = (x @ first).T, (x @ second).T  # (splits, S)
        frames.append(pd.DataFrame({"size": int(n), "split": np.arange(n_splits),
                                    "kendall_tau_b": np.atleast_1d(kendall_tau_b(m1, m2)),
                                    "tau_ap_b": np.atleast_1d(tau_ap_b(m1, m2))}))
    splits = pd.concat(frames, ignore_index=True)
    long = splits.melt(id_vars=["size", "split"], var_name="coefficient", value_name="value")
    tail = (1 - confidence) / 2
    grouped = long.groupby(["size", "coefficient"], sort=True)["value"]
    summary = grouped.agg(mean="mean", ci_low=lambda v: _quantile(v, tail),
                          ci_high=lambda v: _quantile(v, 1 - tail), splits="count").reset_index()
    return SplitHalf(splits=splits, summary=summary)
