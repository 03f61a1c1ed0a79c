"""Seeded resampling designs shared by every analysis, so that comparisons across metrics are paired."""

from __future__ import annotations

import numpy as np


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
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_topics, size=(n_topics, n_resamples), dtype=np.int32)
