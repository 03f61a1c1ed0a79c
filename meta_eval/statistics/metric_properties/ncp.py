"""Normalised cumulative precision with a user-given stopping distribution (Robertson, SIGIR 2008, Eq. 2).

NCP = Σ_n p_s(n) P@n: the user stops at the k-th relevant document of the topic with probability p_s(k)
(unretrieved relevant documents contribute precision 0). p_s uniform over the R relevant documents gives AP
(NCP_u = AP), all mass on the first gives RR (NCP_1 = RR); the registered ``NCP`` measure offers those and a
geometric distribution, this function takes any.
"""

from __future__ import annotations

from typing import Callable, Sequence, Union

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.measures.binary import precision_at_relevant
from meta_eval.model.rankings import Rankings

__all__ = ["ncp"]

Stopping = Union[Sequence[float], np.ndarray, Callable[[int], Sequence[float]]]


def _weights(stopping: Stopping, R: np.ndarray, width: int) -> np.ndarray:
    """(..., width) stopping probabilities over the k-th relevant document, k = 1..width."""
    out = np.zeros(R.shape + (width,))
    if callable(stopping):
        for value in np.unique(R):
            w = np.asarray(stopping(int(value)), dtype=np.float64).ravel()
            if value > 0 and (len(w) != value or np.any(w < 0) or not np.isclose(w.sum(), 1.0)):
                raise InputError(f"stopping({int(value)}) must return {int(value)} probabilities summing to 1")
            out[R == value, : min(len(w), width)] = w[:width]
        return out
    w = np.asarray(stopping, dtype=np.float64)
    if w.ndim < 1 or np.any(w < 0):
        raise InputError("stopping probabilities must be a non-negative vector over the k-th relevant document")
    w = np.broadcast_to(w, R.shape + w.shape[-1:])
    total = w.sum(-1)
    if not np.allclose(total[R > 0], 1.0):
        raise InputError("stopping probabilities must sum to 1")
    if np.any((np.arange(1, w.shape[-1] + 1) > R[..., None]) & (w > 0)):
        raise InputError("stopping probability on a k-th relevant document with k > R")
    out[..., : min(w.shape[-1], width)] = w[..., :width]
    return out


def ncp(rankings: Rankings, stopping: Stopping) -> np.ndarray:
    """NCP with stopping distribution ``stopping`` over the k-th relevant document (k = 1..R).

    Parameters
    ----------
    stopping : sequence of float or callable
        p_s(k), k = 1..K (broadcast over the lists; zero mass beyond R), or a function R -> R probabilities.

    Examples
    --------
    >>> import meta_eval as me
    >>> r = me.Rankings.from_lists([[1, 0, 1, 1]])
    >>> ncp(r, lambda R: [1 / R] * R), me.get_measure("AP")(r)   # NCP_u = AP
    (array([0.80555556]), array([0.80555556]))
    """
    r = rankings
    R = r.num_rel()
    kth = np.where(r.relevant(), r.cum_relevant(), 0)  # which relevant document sits at each rank (1-based)
    width = max(int(R.max(initial=0)), 1)
    w = _weights(stopping, R, width)
    weight_at_rank = np.take_along_axis(w, np.clip(kth - 1, 0, width - 1), -1) * (kth > 0)
    return (precision_at_relevant(r) * weight_at_rank).sum(-1)
