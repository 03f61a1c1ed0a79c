"""Seeded resampling designs shared by every analysis, so that comparisons across metrics are paired."""

from __future__ import annotations

import numpy as np

from meta_eval.core.memory_budget import require
from meta_eval.core.params import check
from meta_eval.core.params import rng as rng_from_seed


def bootstrap_indices(n_topics: int, n_resamples: int = 1000, seed: int | None = 0) -> np.ndarray:
    """Draw one bootstrap replicate matrix of topic indices.

    Each column is one replicate: ``n_topics`` topic indices drawn uniformly with replacement
    (Efron & Tibshirani 1993; Sakai 2006 reuses one such matrix for every system pair and metric).

    Parameters
    ----------
    n_topics : int
        Number of topics T.
    n_resamples : int
        Number of replicates B.
    seed : int or None
        Seed of ``numpy.random.default_rng``; the same seed gives the same matrix.

    Returns
    -------
    numpy.ndarray
        Integer array of shape (T, B).
    """
    (n_resamples,) = check("bootstrap", n_resamples=n_resamples)
    require(bootstrap_bytes(n_topics, n_resamples), f"a bootstrap of {n_resamples:,} replicates over {n_topics} "
            "topics", "--resamples/-B")
    rng = rng_from_seed(seed, "bootstrap")
    return rng.integers(0, n_topics, size=(n_topics, n_resamples), dtype=np.int32)


def bootstrap_bytes(n_topics: int, n_resamples: int) -> float:
    """Peak memory of a bootstrap over ``n_topics`` topics with B replicates: the design (int32) and the count
    matrix every test derives from it (an int64 index, its bincount, the float64 counts), plus one pair's replicate
    statistics (:func:`meta_eval.core.memory_budget.require` checks it before the design is drawn)."""
    return (28.0 * n_topics + 48.0) * n_resamples
