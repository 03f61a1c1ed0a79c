"""Sakai's (2006) bootstrap tests of every system pair: the paired studentised test and an unpaired variant.

All pairs at once: the per-topic difference matrix (pairs x topics) is multiplied by the replicate count matrix
(topics x B), so each replicate's sum and sum of squares for every pair come from two matrix products, in chunks
of pairs that keep memory bounded.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from meta_eval.statistics.significance.pairs import (
    TIE_RTOL,
    PairwiseTest,
    abs_studentised,
    check_alpha,
    check_resamples,
    check_scores,
    kth_largest_first,
    n_extreme,
    pair_chunks,
    pair_indices,
    replicate_counts,
    resolve_pairs,
)
from meta_eval.core.errors import InputError
from meta_eval.core.progress import progress as progress_bar
from meta_eval.core.resampling import bootstrap_indices


def paired_bootstrap(
    scores,
    systems: Sequence[str] | None = None,
    *,
    n_resamples: int = 1000,
    alpha: float = 0.05,
    seed: int | None = 0,
    indices: np.ndarray | None = None,
    progress: bool = False,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
) -> PairwiseTest:
    """Paired bootstrap test of Sakai (2006) for every pair of systems (or the given pairs), two-sided.

    For systems X, Y with per-topic scores x_t, y_t (t = 1..n)::

        z_t = x_t - y_t,  z̄ = mean(z),  σ̂ = sd(z) (n-1 divisor),  t_obs = z̄ / (σ̂ / √n)
        w_t = z_t - z̄                                   (shift so that H0: E[z] = 0 holds)
        t*_b = mean(w*_b) / (sd(w*_b) / √n)             for each replicate b (topics drawn with replacement)
        ASL = #{b : |t*_b| >= |t_obs|} / B

    The estimated difference required at ``alpha`` (Sakai 2006; MATTERS ``discriminativePower.m``) is, per pair,
    |mean(w*_b)| of the replicate holding the ⌈Bα⌉-th largest |t*| (ties in replicate order), and overall its
    maximum over pairs (a conservative estimate).

    Parameters
    ----------
    scores : array_like, shape (S, T)
        Per-topic scores of S systems on T topics.
    systems : sequence of str, optional
        System names (default ``s0 .. s{S-1}``).
    n_resamples : int
        B, the number of bootstrap replicates (default 1000, Sakai 2006).
    alpha : float
        Significance level for the difference required and the counts (default 0.05).
    seed : int or None
        Seed of :func:`meta_eval.core.resampling.bootstrap_indices`; ignored when ``indices`` is given.
    indices : ndarray of int, shape (T, B), optional
        A replicate matrix of topic indices to use instead of drawing one. Passing the same matrix to several
        metrics makes the comparisons across metrics paired too (MATTERS does so).
    progress : bool
        Show progress over chunks of pairs (:func:`meta_eval.core.progress.progress`).
    pairs : (array of int, array of int), optional
        Test only these pairs (a, b) of system positions, e.g. every run against a baseline; default all
        C(S, 2) pairs a < b.

    Returns
    -------
    PairwiseTest
        ``method='bootstrap'``; ``asl``, ``pair_diff_required`` and ``diff_required`` as above.

    Notes
    -----
    * s.d. = 0 rule (observed sample and replicates alike): |t| = +inf if the mean is non-zero, 0 if it is zero
      (see :func:`meta_eval.statistics.significance.pairs.abs_studentised`). Identical systems get ASL = 1; a constant
      non-zero difference gets ASL = 0.
    * ``>=`` is evaluated up to a relative tolerance of 1e-9 (``|t*| >= |t_obs| (1 - 1e-9)``) so that rounding in
      the vectorised sums cannot split an exact tie.
    * Sums use the count matrix C[t, b] (times topic t is drawn in replicate b):
      Σ_t w*_t = (W C)[p, b] and Σ_t w*_t² = (W² C)[p, b]; the replicate variance is
      (Σ w*² - (Σ w*)² / n) / (n - 1).

    References
    ----------
    T. Sakai. Evaluating evaluation metrics based on the bootstrap. SIGIR 2006, 525-532 (Figure 1: the test;
    Figure 2: the difference required). B. Efron, R. Tibshirani. An Introduction to the Bootstrap, 1993, §16.4.
    """
    x, names = check_scores(scores, systems)
    alpha = check_alpha(alpha)
    n_sys, n_top = x.shape
    if indices is None:
        indices = bootstrap_indices(n_top, check_resamples(n_resamples), seed)
    counts = replicate_counts(indices, n_top)
    n_rep = counts.shape[1]
    k = n_extreme(n_rep, alpha)
    ia, ib = resolve_pairs(n_sys, pairs)
    asl = np.empty(ia.size)
    need = np.empty(ia.size)
    critical = np.empty(ia.size)
    chunks = list(pair_chunks(ia.size, n_rep))
    for sl in progress_bar(chunks, desc="bootstrap", unit="chunk", enabled=progress):
        z = x[ia[sl]] - x[ib[sl]]
        zbar = z.mean(axis=1)
        scale = np.abs(z).max(axis=1)
        t_obs = abs_studentised(zbar, z.var(axis=1, ddof=1), n_top, scale)
        w = z - zbar[:, None]
        mean = w @ counts
        mean /= n_top
        var = (w * w) @ counts  # Σ w*², turned in place into (Σ w*² - n mean*²) / (n - 1)
        var -= n_top * (mean * mean)
        var /= n_top - 1
        t_star = abs_studentised(mean, var, n_top, scale[:, None])
        _record(sl, t_star, t_obs, mean, k, asl, need, critical)
    return PairwiseTest(
        method="bootstrap",
        systems=names,
        pair_a=ia,
        pair_b=ib,
        difference=x.mean(axis=1)[ia] - x.mean(axis=1)[ib],
        asl=asl,
        alpha=alpha,
        n_resamples=n_rep,
        diff_required=float(need.max()),
        pair_diff_required=need,
        pair_critical_t=critical,
    )


def _system_moments(xc: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per system and replicate: mean and (n-1) variance of the resampled centred scores (S x B each)."""
    n = counts.sum(axis=0)[0]
    s1 = xc @ counts
    s2 = (xc * xc) @ counts
    mean = s1 / n
    return mean, (s2 - s1 * mean) / (n - 1)


def unpaired_bootstrap(
    scores,
    systems: Sequence[str] | None = None,
    *,
    n_resamples: int = 1000,
    alpha: float = 0.05,
    seed: int | None = 0,
    indices: np.ndarray | None = None,
    progress: bool = False,
) -> PairwiseTest:
    """Unpaired (two-sample) bootstrap test for every pair of systems: Efron & Tibshirani Algorithm 16.2.

    Which unpaired algorithm Sakai (2006) used could not be verified (methods.md §3.5, [NF]); this is the
    studentised two-sample test of Efron & Tibshirani (1993), Algorithm 16.2::

        t_obs = (x̄ - ȳ) / sqrt(s_x²/n + s_y²/n)                    (n-1 sample variances)
        x̃_i = x_i - x̄ + z̄,  ỹ_i = y_i - ȳ + z̄                    (z̄: mean of the pooled 2n values)
        x* ~ x̃, y* ~ ỹ resampled independently;  t*_b = (x̄* - ȳ*) / sqrt(s_x*²/n + s_y*²/n)
        ASL = #{b : |t*_b| >= |t_obs|} / B

    The two independent resamples come from one replicate matrix of shape (T, 2B) (``indices``): columns
    0..B-1 resample the first system of every pair, columns B..2B-1 the second. Difference required: |x̄* - ȳ*|
    at the ⌈Bα⌉-th largest |t*|, maximum over pairs. The s.d. = 0 rule and the tie tolerance are those of
    :func:`paired_bootstrap`, with scale = max(|x|, |y|).

    Parameters are those of :func:`paired_bootstrap`; ``indices`` has shape (T, 2B).

    References
    ----------
    B. Efron, R. Tibshirani. An Introduction to the Bootstrap, 1993, Algorithm 16.2.
    T. Sakai. Evaluating evaluation metrics based on the bootstrap. SIGIR 2006.
    """
    x, names = check_scores(scores, systems)
    alpha = check_alpha(alpha)
    n_sys, n_top = x.shape
    if indices is None:
        indices = bootstrap_indices(n_top, 2 * check_resamples(n_resamples), seed)
    counts = replicate_counts(indices, n_top)
    if counts.shape[1] % 2:
        raise InputError(f"the unpaired replicate matrix needs an even number (2B) of columns; got {counts.shape[1]}")
    n_rep = counts.shape[1] // 2
    k = n_extreme(n_rep, alpha)
    means = x.mean(axis=1)
    xc = x - means[:, None]
    m1, v1 = _system_moments(xc, counts[:, :n_rep])
    m2, v2 = _system_moments(xc, counts[:, n_rep:])
    absmax = np.abs(x).max(axis=1)
    var_obs = x.var(axis=1, ddof=1)
    ia, ib = pair_indices(n_sys)
    asl = np.empty(ia.size)
    need = np.empty(ia.size)
    critical = np.empty(ia.size)
    chunks = list(pair_chunks(ia.size, n_rep))
    for sl in progress_bar(chunks, desc="unpaired bootstrap", unit="chunk", enabled=progress):
        a, b = ia[sl], ib[sl]
        scale = np.maximum(absmax[a], absmax[b])
        t_obs = abs_studentised(means[a] - means[b], var_obs[a] + var_obs[b], n_top, scale)
        diff = m1[a] - m2[b]
        t_star = abs_studentised(diff, v1[a] + v2[b], n_top, scale[:, None])
        _record(sl, t_star, t_obs, diff, k, asl, need, critical)
    return PairwiseTest(
        method="unpaired-bootstrap",
        systems=names,
        pair_a=ia,
        pair_b=ib,
        difference=means[ia] - means[ib],
        asl=asl,
        alpha=alpha,
        n_resamples=n_rep,
        diff_required=float(need.max()),
        pair_diff_required=need,
        pair_critical_t=critical,
    )


def _record(sl: slice, t_star: np.ndarray, t_obs: np.ndarray, diff: np.ndarray, k: int, asl: np.ndarray,
            need: np.ndarray, critical: np.ndarray) -> None:
    """Write one chunk of pairs: the ASL (the share of replicates whose statistic reaches the observed one, ties
    within :data:`TIE_RTOL`), and at the k-th largest replicate statistic (Sakai's critical value) the replicate's
    difference (the difference required) and the statistic."""
    asl[sl] = np.count_nonzero(t_star >= t_obs[:, None] * (1.0 - TIE_RTOL), axis=1) / t_star.shape[1]
    pick = kth_largest_first(t_star, k)
    rows = np.arange(pick.size)
    need[sl] = np.abs(diff[rows, pick])
    critical[sl] = t_star[rows, pick]
