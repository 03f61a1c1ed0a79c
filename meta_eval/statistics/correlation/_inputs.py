"""Validation of the per-metric score arrays shared by the correlation analyses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike

from meta_eval.core.errors import InputError


def score_stack(
    scores: Mapping[str, ArrayLike],
    labels: Sequence[str] | None = None,
    *,
    min_metrics: int = 2,
    min_systems: int = 2,
    label_name: str = "systems",
) -> tuple[list[str], np.ndarray, list[str]]:
    """Check ``scores`` (metric name -> (S, T) array) and stack it into a (K, S, T) float array.

    Returns the metric names, the stack and the S row labels (``labels`` or "s0", "s1", ...).
    """
    if not isinstance(scores, Mapping):
        raise InputError(
            f"scores must be a mapping metric name -> (systems x topics) array, got {type(scores).__name__}"
        )
    names = [str(k) for k in scores]
    if len(names) < min_metrics:
        raise InputError(f"need at least {min_metrics} metrics to correlate, got {len(names)}: {names}")
    arrays = []
    for name, value in scores.items():
        a = np.asarray(value, dtype=np.float64)
        if a.ndim != 2:
            raise InputError(f"scores[{name!r}] must be a 2-D (systems x topics) array, got shape {a.shape}")
        if not np.isfinite(a).all():
            raise InputError(f"scores[{name!r}] contains NaN or infinite values")
        arrays.append(a)
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        got = ", ".join(f"{n}: {a.shape}" for n, a in zip(names, arrays))
        raise InputError(f"every metric must have the same (systems x topics) shape; got {got}")
    stack = np.stack(arrays)
    n_systems = stack.shape[1]
    if n_systems < min_systems:
        raise InputError(f"need at least {min_systems} {label_name}, got {n_systems}")
    if stack.shape[2] < 1:
        raise InputError("need at least one topic, got 0")
    if labels is None:
        labels = [f"s{i}" for i in range(n_systems)]
    else:
        labels = [str(s) for s in labels]
        if len(labels) != n_systems:
            raise InputError(f"got {len(labels)} {label_name} names for score arrays with {n_systems} rows")
    return names, stack, labels


def system_means(stack: np.ndarray, decimals: int | None) -> np.ndarray:
    """Mean over topics (last axis), rounded to ``decimals`` so that float noise does not break exact ties."""
    means = stack.mean(axis=-1)
    return means if decimals is None else np.round(means, decimals)
