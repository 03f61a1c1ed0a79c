"""Paired randomisation (permutation) test of every system pair, or of chosen pairs (Fisher 1935; Pitman 1937; in IR
Smucker, Allan & Carterette, CIKM 2007).

Under H0 the two systems' scores on a topic are exchangeable, so each per-topic difference z_t keeps its size and
takes either sign with probability 1/2. All pairs at once: one seeded sign matrix (topics x B) is shared by every
pair and the resampled means of all pairs are one matrix product, in chunks of pairs that keep memory bounded.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from meta_eval.statistics.significance.pairs import (
    TIE_RTOL,
    PairwiseTest,
    check_alpha,
    check_resamples,
    check_scores,
    pair_chunks,
    resolve_pairs,
    zero_within_rounding,
)
from meta_eval.core.progress import progress as progress_bar
from meta_eval.core.memory_budget import require
from meta_eval.core.params import rng as rng_from_seed

#: Default number of random sign vectors (Smucker et al. 2007 used 100,000; 10,000 gives p to about ±0.005).
DEFAULT_RANDOMISATIONS = 10_000


def sign_matrix(n_topics: int, n_resamples: int = DEFAULT_RANDOMISATIONS,
                seed: int | None = 0) -> tuple[np.ndarray, bool]:
    """The sign vectors of the test, as columns of a (T, B) matrix of ±1, and whether they are exhaustive.

    When 2^T <= ``n_resamples`` every one of the 2^T sign vectors is listed once (an exact test; column 0 is the
    identity); otherwise B vectors are drawn uniformly with ``numpy.random.default_rng(seed)``.
    """
    n_resamples = check_resamples(n_resamples)
    if n_topics < 63 and 2**n_topics <= n_resamples:
        codes = np.arange(2**n_topics, dtype=np.int64)
        bits = (codes[None, :] >> np.arange(n_topics, dtype=np.int64)[:, None]) & 1
        return 1.0 - 2.0 * bits, True
    # the drawn bits (int64), the ±1 matrix and a pair's statistics
    require((16.0 * n_topics + 48.0) * n_resamples, f"a randomisation test of {n_resamples:,} sign vectors over "
            f"{n_topics} topics", "--resamples/-B")
    rng = rng_from_seed(seed, "randomisation test")
    return 1.0 - 2.0 * rng.integers(0, 2, size=(n_topics, n_resamples)), False


def randomisation_test(
    scores,
    systems: Sequence[str] | None = None,
    *,
    n_resamples: int = DEFAULT_RANDOMISATIONS,
    alpha: float = 0.05,
    seed: int | None = 0,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
    progress: bool = False,
) -> PairwiseTest:
    """Two-sided paired randomisation test of the difference of mean scores, for every pair or the given pairs.

    For systems X, Y with per-topic differences z_t = x_t - y_t (t = 1..n) and sign vectors s_b (:func:`sign_matrix`)::

        d_obs = |mean(z)|,   d*_b = |mean(s_b ⊙ z)|
        exact (2^n <= B):    ASL = #{b : d*_b >= d_obs} / 2^n          (all sign vectors, the identity included)
        sampled:             ASL = (#{b : d*_b >= d_obs} + 1) / (B + 1)  (Phipson & Smyth 2010; never 0)

    ``>=`` holds up to a relative tolerance of 1e-9 so that rounding cannot split a tie. Identical systems get
    ASL = 1. These are the p-values of ``scipy.stats.permutation_test`` with ``permutation_type="samples"`` on the
    differences and the statistic |mean| (checked in the tests).

    Parameters
    ----------
    scores : array_like, shape (S, T)
    systems : sequence of str, optional
    n_resamples : int
        B, the number of random sign vectors (default 10,000); the test is exact when 2^T <= B.
    alpha : float
    seed : int or None
        Seed of the sign vectors (shared by every pair).
    pairs : (array of int, array of int), optional
        Test only these pairs (a, b) of system positions (default all C(S, 2) pairs a < b).
    progress : bool
        Show progress over chunks of pairs.

    Returns
    -------
    PairwiseTest
        ``method='randomisation'``; ``diff_required`` is NaN.

    References
    ----------
    M. D. Smucker, J. Allan, B. Carterette. A comparison of statistical significance tests for information
    retrieval evaluation. CIKM 2007. B. Phipson, G. K. Smyth. Permutation p-values should never be zero.
    Stat. Appl. Genet. Mol. Biol. 9(1), 2010.
    """
    x, names = check_scores(scores, systems)
    alpha = check_alpha(alpha)
    n_sys, n_top = x.shape
    signs, exact = sign_matrix(n_top, n_resamples, seed)
    n_rep = signs.shape[1]
    ia, ib = resolve_pairs(n_sys, pairs)
    count = np.empty(ia.size)
    for sl in progress_bar(list(pair_chunks(ia.size, n_rep)), desc="randomisation", unit="chunk", enabled=progress):
        z = x[ia[sl]] - x[ib[sl]]
        observed = np.abs(z.mean(axis=1))
        observed[zero_within_rounding(observed, np.abs(z).max(axis=1))] = 0.0  # equal means: ASL 1
        resampled = np.abs(z @ signs) / n_top
        count[sl] = np.count_nonzero(resampled >= observed[:, None] * (1.0 - TIE_RTOL), axis=1)
    asl = count / n_rep if exact else (count + 1.0) / (n_rep + 1.0)
    means = x.mean(axis=1)
    return PairwiseTest(
        method="randomisation",
        systems=names,
        pair_a=ia,
        pair_b=ib,
        difference=means[ia] - means[ib],
        asl=np.minimum(asl, 1.0),
        alpha=alpha,
        n_resamples=n_rep,
    )
