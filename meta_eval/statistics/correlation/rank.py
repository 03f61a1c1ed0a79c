"""Rank correlation coefficients for system rankings, vectorised over leading axes.

Every function takes two score vectors ``x`` and ``y`` of shape (..., N) (N items, e.g. systems) and returns one
coefficient per leading index. Larger scores rank higher (rank 1 = best), as for effectiveness scores.

Coefficients
------------
- :func:`kendall_tau_b` -- Kendall's tau-b (ties in either vector), the same value as ``scipy.stats.kendalltau``.
- :func:`tau_ap` -- AP correlation tau_AP(y | x) of Yilmaz, Aslam & Robertson (SIGIR 2008); ``x`` is the
  reference ("true") ranking and ``y`` the ranking under evaluation. With ``symmetric=True`` the mean of both
  directions, which is the tau_AP-b of Urbano & Marrero (ICTIR 2017).
- :func:`tau_ap_a`, :func:`tau_ap_b` -- tie-aware variants of Urbano & Marrero (ICTIR 2017).
- :func:`spearman`, :func:`pearson` -- the same values as ``scipy.stats.spearmanr`` / ``pearsonr``.

Undefined values (a constant vector) are returned as NaN, without warnings. Scores that differ by less than
:data:`TIE_RESOLUTION` of the vector's largest magnitude are tied (:func:`snap_ties`): they are equal up to the
rounding of the sums that produced them, which differs between CPUs.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import digamma
from scipy.stats import rankdata

from meta_eval.core.errors import InputError

__all__ = ["Ranked", "TIE_RESOLUTION", "kendall_tau_b", "pearson", "snap_ties", "spearman", "tau_ap", "tau_ap_a",
           "tau_ap_b"]

#: Scores of one vector closer than this fraction of its largest magnitude are one tie. A mean of T scores summed in
#: another order (another CPU's SIMD width, another BLAS kernel) differs by about T * 2^-53 relative; two systems
#: whose means are mathematically equal (the same multiset of per-topic scores) must not be ordered by that noise.
#: No effectiveness difference a paper reports is within 1e-12 of the scale.
TIE_RESOLUTION = 1e-12


def snap_ties(v: ArrayLike) -> np.ndarray:
    """``v`` (..., N) with every run of values whose consecutive gaps are at most :data:`TIE_RESOLUTION` times the
    vector's largest magnitude set to the run's smallest value; exact values otherwise, so exact ties and clear
    orders are unchanged. Grouping by consecutive gaps (not by rounding to a grid) never splits two equal values
    that straddle a grid line.
    """
    v = np.asarray(v, dtype=np.float64)
    if v.ndim == 0 or v.shape[-1] < 2:
        return v
    order = np.argsort(v, axis=-1, kind="stable")
    s = np.take_along_axis(v, order, axis=-1)
    gap = np.diff(s, axis=-1)
    scale = TIE_RESOLUTION * np.abs(s).max(axis=-1, keepdims=True)
    near = (gap > 0) & (gap <= scale)
    if not near.any():
        return v
    starts = np.concatenate([np.ones(s.shape[:-1] + (1,), dtype=bool), ~(gap <= scale)], axis=-1)
    first = np.maximum.accumulate(np.where(starts, np.arange(s.shape[-1]), 0), axis=-1)
    out = np.empty_like(v)
    np.put_along_axis(out, order, np.take_along_axis(s, first, axis=-1), axis=-1)
    return out


def _as_pair(x: ArrayLike, y: ArrayLike, min_items: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Validate two score arrays of equal shape (..., N) with N >= ``min_items`` and finite values."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim == 0 or y.ndim == 0:
        raise InputError(f"expected score vectors of shape (..., N), got scalars of shape {x.shape} and {y.shape}")
    if x.shape != y.shape:
        raise InputError(f"x and y must have the same shape (..., N); got {x.shape} and {y.shape}")
    if x.shape[-1] < min_items:
        raise InputError(f"need at least {min_items} items to correlate, got N={x.shape[-1]}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise InputError("scores must be finite; got NaN or infinite values")
    return x, y


# --------------------------------------------------------------------------------------------------------------
# Kernels on prepared rankings (the bootstrap prepares each metric's rankings once and reuses them for all pairs)
# --------------------------------------------------------------------------------------------------------------


def _rowsum(mask: np.ndarray) -> np.ndarray:
    """Number of True per row of a boolean (..., N, N) array (a uint8 view summed in uint16: 2x numpy's bool sum)."""
    dtype = np.uint16 if mask.shape[-1] < 2**16 else np.int64
    return mask.view(np.uint8).sum(axis=-1, dtype=dtype).astype(np.int64)


class Ranked:
    """Pairwise order of the N items of a score array (..., N), precomputed once for many coefficients.

    Attributes
    ----------
    up : bool (..., N, N)
        ``up[..., i, j]``: item j scores strictly higher than item i (j is above i).
    tied : bool (..., N, N)
        ``tied[..., i, j]``: items i and j score the same (the diagonal is True).
    n_above : int (..., N)
        Items strictly above item i (= position of i's tie group minus 1).
    group : int (..., N)
        Size of item i's tie group (1 when untied).
    tied_pairs : float (...)
        Unordered pairs tied.
    has_ties : bool
        Whether any tie exists.
    """

    __slots__ = ("up", "tied", "n_above", "group", "tied_pairs", "has_ties")

    def __init__(self, v: np.ndarray):
        v = snap_ties(v)
        self.up = v[..., None, :] > v[..., :, None]
        self.tied = v[..., None, :] == v[..., :, None]
        self.n_above = _rowsum(self.up)
        self.group = _rowsum(self.tied)
        n = v.shape[-1]
        self.tied_pairs = (self.group.sum(axis=-1) - n) / 2.0
        self.has_ties = bool((self.group > 1).any())


def _concordant_above(rx: Ranked, ry: Ranked) -> np.ndarray:
    """c[..., i] = #{j : j strictly above i in both x and y} (symmetric in x and y); sum over i = C."""
    return _rowsum(rx.up & ry.up)


def _kendall_kernel(rx: Ranked, ry: Ranked, c: np.ndarray) -> np.ndarray:
    n = c.shape[-1]
    n0 = n * (n - 1) / 2.0
    concordant = c.sum(axis=-1).astype(np.float64)
    tied_both = (_rowsum(rx.tied & ry.tied).sum(axis=-1) - n) / 2.0 if rx.has_ties and ry.has_ties else 0.0
    # pairs untied in both are concordant or discordant: C + D = n0 - t_x - t_y + t_xy
    discordant = n0 - rx.tied_pairs - ry.tied_pairs + tied_both - concordant
    den = (n0 - rx.tied_pairs) * (n0 - ry.tied_pairs)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = (concordant - discordant) / np.sqrt(den)
    return np.where(den > 0, np.clip(tau, -1.0, 1.0), np.nan)


def _tau_ap_kernel(ry: Ranked, c: np.ndarray) -> np.ndarray:
    """tau_AP(y | x) with the tau_AP-b tie convention (Urbano & Marrero 2017, asymmetric part)."""
    counted = ry.n_above > 0  # every item but the top tie group of y
    ratio = np.where(counted, c / np.maximum(ry.n_above, 1), 0.0)
    n_counted = counted.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n_counted > 0, 2.0 * ratio.sum(axis=-1) / n_counted - 1.0, np.nan)


def _tau_ap_a_kernel(rx: Ranked, ry: Ranked, c: np.ndarray) -> np.ndarray:
    """tau_AP-a(y | x): expectation of tau_AP(y' | x) over uniformly random tie-breakings y' of y; NaN (undefined)
    when the reference x is constant (it ranks nothing; ircor requires an untied x)."""
    value = _tau_ap_a_value(rx, ry, c)
    constant_x = rx.group[..., 0] == c.shape[-1]
    return np.where(constant_x, np.nan, value)


def _tau_ap_a_value(rx: Ranked, ry: Ranked, c: np.ndarray) -> np.ndarray:
    n = c.shape[-1]
    a = ry.n_above.astype(np.float64)  # items strictly above i's tie group
    t = ry.group.astype(np.float64)  # size of i's tie group
    # Term I: c / (position - 1) averaged over the t equally likely positions a+1 .. a+t:
    #   (1/t) sum_{m=a}^{a+t-1} 1/m = (psi(a+t) - psi(a)) / t.
    if ry.has_ties:
        term1 = np.where(a > 0, c * (digamma(a + t) - digamma(np.maximum(a, 1.0))) / t, 0.0)
    else:
        term1 = np.where(a > 0, c / np.maximum(a, 1.0), 0.0)
    if not ry.has_ties:
        return 2.0 / (n - 1) * term1.sum(axis=-1) - 1.0
    # Term II: a group member above i in x lands above i with probability k/(t-1) when i takes the
    # (k+1)-th slot of the group:  d/(t(t-1)) * sum_{k=1}^{t-1} k/(a+k),
    #   sum_{k=1}^{t-1} k/(a+k) = (t-1) - a (psi(a+t) - psi(a+1)).
    d = _rowsum(ry.tied & rx.up)  # group members strictly above i in x
    s = (t - 1.0) - a * (digamma(a + t) - digamma(a + 1.0))
    term2 = np.where(t > 1, d * s / np.maximum(t * (t - 1.0), 1.0), 0.0)
    return 2.0 / (n - 1) * (term1 + term2).sum(axis=-1) - 1.0


def _unit(c: np.ndarray) -> np.ndarray:
    """A centred vector divided by its largest magnitude: r is scale-free, and squares of tiny (subnormal) values
    would underflow to 0 (x = [0, 0.1], y = [2.2e-313, 0] gave NaN where r = -1)."""
    top = np.abs(c).max(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(top > 0, c / np.where(top > 0, top, 1.0), 0.0)


def _pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    xc = _unit(x - x.mean(axis=-1, keepdims=True))
    yc = _unit(y - y.mean(axis=-1, keepdims=True))
    den = np.sqrt((xc * xc).sum(axis=-1) * (yc * yc).sum(axis=-1))
    # test constancy exactly: centring a constant vector can leave rounding residue (0.1 * 12 / 12 != 0.1)
    constant = (x == x[..., :1]).all(axis=-1) | (y == y[..., :1]).all(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = (xc * yc).sum(axis=-1) / den
    return np.where(constant | ~(den > 0), np.nan, np.clip(r, -1.0, 1.0))


# --------------------------------------------------------------------------------------------------------------
# Public coefficients
# --------------------------------------------------------------------------------------------------------------


def kendall_tau_b(x: ArrayLike, y: ArrayLike) -> np.ndarray:
    r"""Kendall's tau-b between the rankings induced by ``x`` and ``y`` (symmetric).

    .. math:: \tau_b = \frac{C - D}{\sqrt{(n_0 - n_x)(n_0 - n_y)}},\quad n_0 = N(N-1)/2

    C and D count concordant and discordant pairs, n_x and n_y the pairs tied in x and in y
    (Kendall 1945; methods.md 4.3). Without ties this is (C - D)/n_0. Same value as
    ``scipy.stats.kendalltau(x, y)`` (variant 'b'), vectorised over leading axes.

    Parameters
    ----------
    x, y : array_like, shape (..., N)
        Scores of N items.

    Returns
    -------
    numpy.ndarray or float
        Shape (...); NaN where x or y is constant.
    """
    x, y = _as_pair(x, y)
    rx, ry = Ranked(x), Ranked(y)
    return _scalar(_kendall_kernel(rx, ry, _concordant_above(rx, ry)))


def tau_ap(x: ArrayLike, y: ArrayLike, *, symmetric: bool = False) -> np.ndarray:
    r"""AP rank correlation tau_AP(y | x) of Yilmaz, Aslam & Robertson (SIGIR 2008).

    ``x`` holds the scores of the **reference** ("true") ranking and ``y`` those of the ranking under
    evaluation; positions are taken from ``y``:

    .. math:: \tau_{AP}(y \mid x) = \frac{2}{N-1} \sum_{i=2}^{N} \frac{C(i)}{i-1} - 1

    where i runs over the positions of ``y`` and C(i) is the number of items above position i in ``y`` that are
    also above that item in ``x`` (Yilmaz et al. 2008, Eq. 2; methods.md 4.4). tau_AP is 1 for identical
    rankings, -1 for reversed ones, and penalises swaps near the top of ``y`` more than swaps near the bottom;
    it is asymmetric: ``tau_ap(x, y) != tau_ap(y, x)`` in general.

    Ties (not defined by Yilmaz et al.) follow the tau_AP-b convention of Urbano & Marrero (ICTIR 2017,
    ircor's ``tauAP_b_ties``): i - 1 becomes the number of items strictly above i's tie group in ``y``, C(i)
    counts items strictly above i in both ``y`` and ``x`` (a pair tied in ``x`` is not concordant), and the
    average runs over every item except those of the top tie group of ``y``. Without ties this is exactly the
    formula above.

    Parameters
    ----------
    x : array_like, shape (..., N)
        Reference scores (the "truth"; e.g. the established metric).
    y : array_like, shape (..., N)
        Scores of the ranking under evaluation.
    symmetric : bool
        Return (tau_AP(y | x) + tau_AP(x | y)) / 2 instead, which is Urbano & Marrero's tau_AP-b (the average
        of both directions, as the ``Symmetric`` option of MATTERS ``apCorrelation``; methods.md 4.4).

    Returns
    -------
    numpy.ndarray or float
        Shape (...); NaN when every item of ``y`` is tied, or of ``x``: a reference that ranks nothing has no
        order to agree with (no pair is concordant, so the formula would say -1, "reversed").

    Examples
    --------
    >>> tau_ap([3, 2, 1], [1, 3, 2])   # reference a > b > c, evaluated b > c > a
    0.0
    >>> tau_ap([1, 3, 2], [3, 2, 1])   # the other direction
    -0.5
    """
    x, y = _as_pair(x, y)
    rx, ry = Ranked(x), Ranked(y)
    c = _concordant_above(rx, ry)
    value = _tau_ap_kernel(ry, c)
    if symmetric:
        value = (value + _tau_ap_kernel(rx, c)) / 2.0  # NaN with either side all tied (the kernel's own rule)
    else:
        value = np.where(rx.group[..., 0] == c.shape[-1], np.nan, value)  # x constant, as in tau_AP-a
    return _scalar(value)


def tau_ap_b(x: ArrayLike, y: ArrayLike) -> np.ndarray:
    """Tie-aware, symmetric tau_AP-b of Urbano & Marrero (ICTIR 2017): ``tau_ap(x, y, symmetric=True)``.

    tau_AP-b(x, y) = (tau_AP(y | x) + tau_AP(x | y)) / 2 with the tie convention described in :func:`tau_ap`;
    it treats both rankings alike (neither is the reference) and allows ties in both. Same values as ircor's
    ``tauAP_b`` (R).
    """
    return tau_ap(x, y, symmetric=True)


def tau_ap_a(x: ArrayLike, y: ArrayLike) -> np.ndarray:
    r"""Tie-aware tau_AP-a(y | x) of Urbano & Marrero (ICTIR 2017): tau_AP averaged over tie-breakings of ``y``.

    ``x`` is the reference ranking, ``y`` the ranking under evaluation (which may contain ties). The value is the
    expectation of :func:`tau_ap` (y' | x) over the uniformly random orderings y' of each tie group of ``y``,
    in closed form: for item i with a items strictly above its tie group of size t in ``y``,

    .. math::

        \tau_{AP\text{-}a} = \frac{2}{N-1}\sum_i \Big[ c_i\,\frac{\psi(a+t)-\psi(a)}{t}
              + \frac{d_i}{t(t-1)} \sum_{k=1}^{t-1} \frac{k}{a+k} \Big] - 1

    where c_i counts the items above i's group in ``y`` that are above i in ``x``, d_i the members of i's group
    above i in ``x``, and (psi(a+t) - psi(a))/t = (1/t) sum_{m=a}^{a+t-1} 1/m is the mean of 1/(position - 1)
    over the group's positions (the first term is 0 when a = 0). This is ircor's ``tauAP_a`` (terms I and II),
    and equals :func:`tau_ap` when ``y`` has no ties.

    ircor requires ``x`` without ties. Here pairs tied in ``x`` are simply never concordant (the convention of
    :func:`tau_ap`), so the value remains the exact expectation over tie-breakings of ``y`` also when ``x`` has
    ties; for untied ``x`` it coincides with ircor.

    Parameters
    ----------
    x : array_like, shape (..., N)
        Reference scores.
    y : array_like, shape (..., N)
        Scores of the ranking under evaluation.

    Returns
    -------
    numpy.ndarray or float
        Shape (...); NaN (undefined) when the reference ``x`` is constant, as :func:`kendall_tau_b` is for a
        constant vector.
    """
    x, y = _as_pair(x, y)
    rx, ry = Ranked(x), Ranked(y)
    return _scalar(_tau_ap_a_kernel(rx, ry, _concordant_above(rx, ry)))


def spearman(x: ArrayLike, y: ArrayLike) -> np.ndarray:
    """Spearman's rho: Pearson correlation of average ranks (``scipy.stats.rankdata``), vectorised.

    Same value as ``scipy.stats.spearmanr(x, y).statistic`` for 1-D input; NaN where x or y is constant.
    """
    x, y = _as_pair(x, y)
    return _scalar(_pearson(rankdata(snap_ties(x), axis=-1), rankdata(snap_ties(y), axis=-1)))


def pearson(x: ArrayLike, y: ArrayLike) -> np.ndarray:
    r"""Pearson's r = sum (x - xbar)(y - ybar) / sqrt(sum (x - xbar)^2 sum (y - ybar)^2), vectorised.

    Same value as ``scipy.stats.pearsonr(x, y).statistic``; NaN where x or y is constant.
    """
    x, y = _as_pair(x, y)
    return _scalar(_pearson(x, y))


def _scalar(a: np.ndarray):
    """Return 0-d results as Python floats, like scipy."""
    a = np.asarray(a, dtype=np.float64)
    return float(a) if a.ndim == 0 else a
