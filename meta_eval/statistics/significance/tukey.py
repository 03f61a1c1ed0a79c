"""Randomised Tukey HSD test of every system pair (Carterette 2012; Sakai 2012), with topic-blocked permutations."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from meta_eval.statistics.significance.pairs import (
    TIE_RTOL,
    PairwiseTest,
    check_alpha,
    check_resamples,
    check_scores,
    n_extreme,
    pair_indices,
    zero_within_rounding,
)
from meta_eval.core.progress import progress as progress_bar
from meta_eval.core.params import rng as rng_from_seed

#: Replicates permuted per batch; fixed so that results depend only on (seed, B), not on memory settings.
TUKEY_BATCH = 256


def tukey_null(scores, *, n_resamples: int = 5000, seed: int | None = 0, progress: bool = False) -> np.ndarray:
    """Null distribution of the range statistic under topic-blocked permutation.

    For each replicate b: permute each topic's column of scores across systems independently, take the system
    means m*_s, and record hsd_b = max_s m*_s - min_s m*_s.

    Parameters
    ----------
    scores : array_like, shape (S, T)
    n_resamples : int
        B (default 5000, as MATTERS).
    seed : int or None
        Seed of ``numpy.random.default_rng``; batches of 256 replicates are drawn in order from it.

    Returns
    -------
    ndarray, shape (B,)
        hsd_1 .. hsd_B.
    """
    x, _ = check_scores(scores, min_topics=1)
    n_rep = check_resamples(n_resamples)
    rng = rng_from_seed(seed, "randomised Tukey HSD")
    by_topic = x.T  # (T, S): permute within each row
    out = np.empty(n_rep)
    starts = range(0, n_rep, TUKEY_BATCH)
    for start in progress_bar(starts, desc="tukey", unit="batch", enabled=progress):
        stop = min(n_rep, start + TUKEY_BATCH)
        perm = rng.permuted(np.broadcast_to(by_topic, (stop - start, *by_topic.shape)), axis=-1)
        means = perm.mean(axis=1)  # (batch, S)
        out[start:stop] = means.max(axis=1) - means.min(axis=1)
    return out


def tukey_hsd(
    scores,
    systems: Sequence[str] | None = None,
    *,
    n_resamples: int = 5000,
    alpha: float = 0.05,
    seed: int | None = 0,
    null: np.ndarray | None = None,
    progress: bool = False,
) -> PairwiseTest:
    """Randomised Tukey HSD test: family-wise over all pairs of systems.

    ::

        hsd_b = max_s m*_s - min_s m*_s      (b = 1..B; see :func:`tukey_null`)
        ASL(X, Y) = #{b : hsd_b >= |x̄ - ȳ|} / B

    ``>=`` holds up to a relative tolerance of 1e-9. Because every pair is compared with the distribution of the
    *largest* difference among all systems, the family-wise error rate over all pairs is at most alpha.

    Difference required: the (1-alpha) quantile of {hsd_b}, taken as the ⌈Bα⌉-th largest hsd_b — the single
    critical value every pair's |x̄ - ȳ| is compared with (pairs above it have ASL < alpha, up to ties). MATTERS
    reports instead the largest observed difference among significant pairs; we do not.

    Parameters
    ----------
    scores : array_like, shape (S, T)
    systems : sequence of str, optional
    n_resamples : int
        B (default 5000).
    alpha : float
    seed : int or None
    null : ndarray, shape (B,), optional
        A precomputed :func:`tukey_null` to reuse.

    References
    ----------
    B. Carterette. Multiple testing in statistical analysis of systems-based information retrieval experiments.
    ACM TOIS 30(1), 2012. T. Sakai. Evaluation with informational and navigational intents. WWW 2012.
    """
    x, names = check_scores(scores, systems, min_topics=1)
    alpha = check_alpha(alpha)
    if null is None:
        hsd = tukey_null(x, n_resamples=n_resamples, seed=seed, progress=progress)
    else:
        hsd = np.asarray(null, dtype=np.float64)
    n_rep = hsd.size
    ordered = np.sort(hsd)
    means = x.mean(axis=1)
    ia, ib = pair_indices(x.shape[0])
    diff = means[ia] - means[ib]
    observed = np.abs(diff)
    scale = np.abs(x).max(axis=1)
    observed[zero_within_rounding(observed, np.maximum(scale[ia], scale[ib]))] = 0.0  # equal means: ASL 1
    at_least = n_rep - np.searchsorted(ordered, observed * (1.0 - TIE_RTOL), side="left")
    return PairwiseTest(
        method="tukey",
        systems=names,
        pair_a=ia,
        pair_b=ib,
        difference=diff,
        asl=at_least / n_rep,
        alpha=alpha,
        n_resamples=n_rep,
        diff_required=float(ordered[n_rep - n_extreme(n_rep, alpha)]),
    )
