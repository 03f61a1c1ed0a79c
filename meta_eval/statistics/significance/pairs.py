"""Shared pieces of the discriminative-power analyses: input checks, system pairs, the studentised
statistic with its s.d. = 0 rule, order statistics, and the pairwise result object."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from meta_eval.core.errors import InputError
from meta_eval.core.params import out_of_scale, scale_problem

#: Relative tolerances of the numerical rules (documented in :func:`abs_studentised`).
VAR_RTOL = 1e-10
ZERO_RTOL = 1e-9
TIE_RTOL = 1e-9

#: Replicates x pairs held in memory at once by the vectorised tests (float64 elements per work array).
CHUNK_ELEMENTS = 2**21


def check_scores(
    scores, systems: Sequence[str] | None = None, *, min_topics: int = 2
) -> tuple[np.ndarray, tuple[str, ...]]:
    """Validate a (systems x topics) score matrix and its system names.

    Returns the scores as a C-contiguous float64 array and the names as a tuple (``s0, s1, ...`` when
    ``systems`` is None). Raises :class:`~meta_eval.core.errors.InputError` on any mismatch.
    """
    try:
        x = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"scores must be a numeric (systems x topics) array; got {type(scores).__name__}") from exc
    if x.ndim != 2:
        raise InputError(f"scores must be a 2-D array (systems x topics); got shape {x.shape}")
    n_sys, n_top = x.shape
    if n_sys < 2:
        raise InputError(f"need at least 2 systems to form a pair; got {n_sys}")
    if n_top < min_topics:
        raise InputError(f"need at least {min_topics} topics; got {n_top}")
    if not np.all(np.isfinite(x)):
        bad = np.argwhere(~np.isfinite(x))[0]
        who = repr(str(systems[bad[0]])) if systems is not None and len(systems) == n_sys else str(bad[0])
        what = " (undefined: the measure has no value on that topic, e.g. no relevant document)" \
            if np.isnan(x[tuple(bad)]) else ""
        raise InputError(f"scores must be finite; got {x[tuple(bad)]} for system {who} on topic {bad[1] + 1} of "
                         f"{n_top}{what}")
    at = out_of_scale(x)
    if at is not None:
        system, topic = divmod(at, n_top)
        raise InputError(f"scores: {scale_problem(x.flat[at])} (system {system}, topic {topic})")
    if systems is None:
        names = tuple(f"s{i}" for i in range(n_sys))
    else:
        names = tuple(str(s) for s in systems)
        if len(names) != n_sys:
            raise InputError(f"got {len(names)} system names for a score matrix with {n_sys} systems (rows)")
        if len(set(names)) != n_sys:
            dup = sorted({s for s in names if names.count(s) > 1})
            raise InputError(f"system names must be unique; duplicated: {dup[:5]}")
    return np.ascontiguousarray(x), names


def check_alpha(alpha: float) -> float:
    """Significance level in (0, 1)."""
    if not (isinstance(alpha, (int, float)) and 0.0 < float(alpha) < 1.0):
        raise InputError(f"alpha must be a number in (0, 1); got {alpha!r}")
    return float(alpha)


def check_resamples(n: int, name: str = "B") -> int:
    """A positive integer number of replicates."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise InputError(f"{name} must be a positive integer; got {n!r}")
    return int(n)


def n_extreme(n_resamples: int, alpha: float) -> int:
    """k = ceil(B alpha), the rank (1-based, from the top) of the critical replicate (Sakai 2006).

    The product is rounded to 9 decimals first so that e.g. 1000 * 0.05 gives 50, not 51.
    """
    return max(1, math.ceil(round(n_resamples * alpha, 9)))


def pair_indices(n_systems: int) -> tuple[np.ndarray, np.ndarray]:
    """All C(S, 2) pairs (a, b) with a < b, in row-major order (0,1), (0,2), ..., (S-2, S-1)."""
    a, b = np.triu_indices(n_systems, 1)
    return a.astype(np.intp), b.astype(np.intp)


def resolve_pairs(n_systems: int, pairs=None) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (a, b) a test compares: all C(S, 2) pairs a < b (``pairs=None``), or the given ones.

    ``pairs`` is a pair of equal-length integer sequences (system positions); a pair may be in either order (the
    test's difference is mean(a) - mean(b)) but never a system with itself.
    """
    if pairs is None:
        return pair_indices(n_systems)
    try:
        a, b = (np.asarray(p) for p in pairs)
    except (TypeError, ValueError):
        raise InputError("pairs must be two sequences of system positions (a, b)") from None
    if a.ndim != 1 or a.shape != b.shape or a.size == 0:
        raise InputError(f"pairs must be two non-empty 1-D sequences of equal length; got shapes {a.shape}, {b.shape}")
    if not (np.issubdtype(a.dtype, np.integer) and np.issubdtype(b.dtype, np.integer)):
        raise InputError("pairs must hold integer system positions")
    if min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n_systems:
        raise InputError(f"pair positions must lie in [0, {n_systems}); got [{min(a.min(), b.min())}, "
                         f"{max(a.max(), b.max())}]")
    if np.any(a == b):
        raise InputError(f"a pair compares system {int(a[a == b][0])} with itself")
    return a.astype(np.intp), b.astype(np.intp)


def zero_within_rounding(value, scale):
    """Whether a mean (or mean difference) is zero within rounding of data of magnitude ``scale``: ``|value| <=
    ZERO_RTOL * scale`` (two systems of equal means leave a difference of 1e-17)."""
    return np.abs(value) <= ZERO_RTOL * scale


def no_spread(var, scale):
    """Whether a variance is zero within rounding of data of magnitude ``scale``: ``var <= VAR_RTOL * scale**2``
    (:func:`abs_studentised`'s s.d. = 0 rule)."""
    return var <= VAR_RTOL * scale * scale


def abs_studentised(mean: np.ndarray, var: np.ndarray, n: int, scale: np.ndarray) -> np.ndarray:
    """|t| = |mean| / sqrt(var / n), with the s.d. = 0 rule.

    Rule (the limit as the s.d. shrinks to 0): a sample whose variance is zero, i.e.
    ``var <= VAR_RTOL * scale**2``, has |t| = +inf when its mean is non-zero and |t| = 0 when its mean is zero
    (``|mean| <= ZERO_RTOL * scale``). ``scale`` is the magnitude of the data (max |z_t| of the pair), so the
    tolerances only absorb floating-point rounding of the vectorised sums.

    A mean within rounding of zero is zero whatever the variance (|t| = 0): two systems with the same mean, whose
    difference floating-point sums leave at 1e-17, were otherwise at a random side of their replicates (ASL 0.55
    where it is 1).

    Consequences: identical systems (z = 0 on every topic), and systems of equal means, get ASL = 1; a constant
    non-zero difference on every topic gets ASL = 0; a replicate that happens to draw only tied topics with a
    non-zero shifted mean counts as at least as extreme as the observation (conservative).
    """
    mean = np.asarray(mean, dtype=np.float64)
    var = np.asarray(var, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    shape = np.broadcast_shapes(mean.shape, var.shape, scale.shape)
    if shape == ():
        return abs_studentised(mean.reshape(1), var.reshape(1), n, scale.reshape(1))[0]
    degenerate = np.broadcast_to(no_spread(var, scale), shape)
    t = np.abs(np.broadcast_to(mean, shape))
    zero = zero_within_rounding(t, np.broadcast_to(scale, shape))  # on |mean| itself, before t divides it
    denom = np.broadcast_to(var / n, shape).copy()
    np.sqrt(denom, out=denom, where=~degenerate)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.divide(t, denom, out=t)
    if degenerate.any():
        t[degenerate] = np.inf  # a non-zero mean over no spread (a zero mean is 0 below)
    t[zero] = 0.0
    return t


def kth_largest_first(values: np.ndarray, k: int) -> np.ndarray:
    """Column index, per row, of the k-th largest value (1-based) in a stable descending order.

    Ties keep replicate order, as MATLAB's stable ``sort(..., 'descend')`` in MATTERS; equivalent to
    ``np.argsort(-values, axis=1, kind='stable')[:, k - 1]`` but O(B) per row.
    """
    n_cols = values.shape[1]
    kth = np.partition(values, n_cols - k, axis=1)[:, n_cols - k]
    equal = values == kth[:, None]
    need = k - (values > kth[:, None]).sum(axis=1)  # which occurrence (1-based) of the tied value sits at k
    pick = np.argmax(equal, axis=1)  # right whenever need == 1 (no tie reaching above position k)
    tied = np.flatnonzero(need > 1)
    if tied.size:
        occurrence = np.cumsum(equal[tied], axis=1)
        pick[tied] = np.argmax(occurrence >= need[tied, None], axis=1)
    return pick


def replicate_counts(indices: np.ndarray, n_topics: int) -> np.ndarray:
    """Count matrix C (T x B): C[t, b] = how many times topic t is drawn in replicate b (float64)."""
    idx = np.asarray(indices)
    if idx.ndim != 2 or idx.shape[0] != n_topics:
        raise InputError(f"replicate matrix must have shape (n_topics={n_topics}, B); got {idx.shape}")
    if not np.issubdtype(idx.dtype, np.integer):
        raise InputError(f"replicate matrix must hold integer topic indices; got dtype {idx.dtype}")
    if idx.size and (idx.min() < 0 or idx.max() >= n_topics):
        raise InputError(f"replicate topic indices must lie in [0, {n_topics}); got [{idx.min()}, {idx.max()}]")
    n_rep = idx.shape[1]
    flat = (idx + n_topics * np.arange(n_rep)[None, :]).ravel()
    return np.bincount(flat, minlength=n_topics * n_rep).reshape(n_rep, n_topics).T.astype(np.float64)


def pair_chunks(n_pairs: int, n_resamples: int, elements: int = CHUNK_ELEMENTS):
    """Slices over pairs so that one (pairs x B) work array holds at most ``elements`` numbers."""
    step = max(1, elements // max(1, n_resamples))
    for start in range(0, n_pairs, step):
        yield slice(start, min(n_pairs, start + step))


@dataclass(frozen=True, eq=False)
class PairwiseTest:
    """Result of a test of every system pair (scipy-style result object).

    Attributes
    ----------
    method : str
        ``bootstrap``, ``unpaired-bootstrap``, ``tukey``, ``ttest``, ``wilcoxon``, ``sign`` (``-holm``/``-bh``).
    systems : tuple of str
        The S system names; pairs index into it.
    pair_a, pair_b : ndarray of int, shape (P,)
        The pairs (a < b for all pairs; as given when a test was asked for chosen pairs).
    difference : ndarray, shape (P,)
        Observed difference of mean scores, mean(a) - mean(b).
    asl : ndarray, shape (P,)
        Achieved significance level (p-value) of each pair.
    alpha : float
        The significance level used for ``diff_required`` and the counts.
    n_resamples : int or None
        B for randomised methods.
    diff_required : float
        Estimated difference required at ``alpha`` (NaN where the method has none); see the method's docstring.
    pair_diff_required : ndarray or None, shape (P,)
        Per-pair difference required (bootstrap methods only); ``diff_required`` is its maximum.
    pair_critical_t : ndarray or None, shape (P,)
        Per pair, the ⌈Bα⌉-th largest |t*| whose replicate gives ``pair_diff_required`` (bootstrap methods only).
    """

    method: str
    systems: tuple[str, ...]
    pair_a: np.ndarray
    pair_b: np.ndarray
    difference: np.ndarray
    asl: np.ndarray
    alpha: float
    n_resamples: int | None = None
    diff_required: float = float("nan")
    pair_diff_required: np.ndarray | None = field(default=None, repr=False)
    pair_critical_t: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_pairs(self) -> int:
        """Number of pairs P = C(S, 2)."""
        return int(self.asl.size)

    def significant(self, alpha: float | None = None) -> np.ndarray:
        """Boolean mask of pairs with ASL < alpha (default: ``self.alpha``)."""
        return self.asl < (self.alpha if alpha is None else check_alpha(alpha))

    def n_significant(self, alpha: float | None = None) -> int:
        """Discriminative power as a count: #{pairs : ASL < alpha} (Sakai 2006; MATTERS)."""
        return int(self.significant(alpha).sum())

    def proportion(self, alpha: float | None = None) -> float:
        """Discriminative power as a proportion: #{ASL < alpha} / C(S, 2)."""
        return self.n_significant(alpha) / self.n_pairs

    def asl_curve(self) -> np.ndarray:
        """The ASL curve: the pairs' ASLs in ascending order (x = pair rank, y = ASL)."""
        return np.sort(self.asl)

    def to_frame(self) -> pd.DataFrame:
        """One row per pair: system_a, system_b, difference, asl."""
        names = np.asarray(self.systems, dtype=object)
        return pd.DataFrame(
            {
                "system_a": names[self.pair_a],
                "system_b": names[self.pair_b],
                "difference": self.difference,
                "asl": self.asl,
            }
        )
