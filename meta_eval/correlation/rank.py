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

Undefined values (a constant vector) are returned as NaN, without warnings.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import digamma
from scipy.stats import rankdata

from meta_eval.errors import InputError

__all__ = ["kendall_tau_b", "pearson", "spearman", "tau_ap", "tau_ap_a", "tau_ap_b", "pairwise_signs"]


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


def pairwise_signs(v: np.ndarray) -> np.ndarray:
    """Matrix of pairwise orderings: ``G[..., i, j] = sign(v[..., j] - v[..., i])`` as int8.

    ``G[..., i, j] = 1`` means item j scores higher than (is ranked above) item i. The diagonal is 0.
    """
    return np.sign(v[..., None, :] - v[..., :, None]).astype(np.int8)


# --------------------------------------------------------------------------------------------------------------
# Kernels on sign matrices (shared by the public functions and the bootstrap, which reuses the matrices)
# --------------------------------------------------------------------------------------------------------------


def _kendall_from_signs(gx: np.ndarray, gy: np.ndarray) -> np.ndarray:
    n = gx.shape[-1]
    s = np.einsum("...ij,...ij->...", gx, gy, dtype=np.int64) / 2.0  # C - D over unordered pairs
    n0 = n * (n - 1) / 2.0
    tx = ((gx == 0).sum(axis=(-2, -1)) - n) / 2.0  # pairs tied in x
    ty = ((gy == 0).sum(axis=(-2, -1)) - n) / 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = s / np.sqrt((n0 - tx) * (n0 - ty))
    return np.where((n0 - tx) * (n0 - ty) > 0, np.clip(tau, -1.0, 1.0), np.nan)


def _tau_ap_from_signs(gx: np.ndarray, gy: np.ndarray) -> np.ndarray:
    """tau_AP(y | x) with the tau_AP-b tie convention (Urbano & Marrero 2017, asymmetric part)."""
    above_y = gy > 0  # [i, j]: j is strictly above i in y
    n_above = above_y.sum(axis=-1)
    concordant = (above_y & (gx > 0)).sum(axis=-1)  # above i in y and strictly above i in x
    counted = n_above > 0  # every item but the top tie group of y
    ratio = np.where(counted, concordant / np.maximum(n_above, 1), 0.0)
    n_counted = counted.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n_counted > 0, 2.0 * ratio.sum(axis=-1) / n_counted - 1.0, np.nan)


def _tau_ap_a_from_signs(gx: np.ndarray, gy: np.ndarray) -> np.ndarray:
    """tau_AP-a(y | x): expectation of tau_AP(y' | x) over uniformly random tie-breakings y' of y."""
    n = gx.shape[-1]
    above_y = gy > 0
    tied_y = gy == 0  # includes the item itself
    a = above_y.sum(axis=-1)  # items strictly above i's tie group
    t = tied_y.sum(axis=-1)  # size of i's tie group
    c = (above_y & (gx > 0)).sum(axis=-1)  # concordant items above the group
    d = (tied_y & (gx > 0)).sum(axis=-1)  # group members strictly above i in x
    af = a.astype(np.float64)
    tf = t.astype(np.float64)
    # Term I: c / (position - 1) averaged over the t equally likely positions a+1 .. a+t:
    #   (1/t) sum_{m=a}^{a+t-1} 1/m = (psi(a+t) - psi(a)) / t.
    term1 = np.where(a > 0, c * (digamma(af + tf) - digamma(np.maximum(af, 1.0))) / tf, 0.0)
    # Term II: a group member above i in x lands above i with probability k/(t-1) when i takes the
    # (k+1)-th slot of the group:  d/(t(t-1)) * sum_{k=1}^{t-1} k/(a+k),
    #   sum_{k=1}^{t-1} k/(a+k) = (t-1) - a (psi(a+t) - psi(a+1)).
    s = (tf - 1.0) - af * (digamma(af + tf) - digamma(af + 1.0))
    term2 = np.where(t > 1, d * s / np.maximum(tf * (tf - 1.0), 1.0), 0.0)
    return 2.0 / (n - 1) * (term1 + term2).sum(axis=-1) - 1.0


def _pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
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
    return _scalar(_kendall_from_signs(pairwise_signs(x), pairwise_signs(y)))


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
        Return (tau_AP(y | x) + tau_AP(x | y)) / 2 instead, which is Urbano & Marrero's tau_AP-b
        (identical to the symmetrised tau_AP of MATTERS ``apCorrelation`` when there are no ties).

    Returns
    -------
    numpy.ndarray or float
        Shape (...); NaN when every item of ``y`` is tied.

    Examples
    --------
    >>> tau_ap([3, 2, 1], [1, 3, 2])   # reference a > b > c, evaluated b > c > a
    0.0
    >>> tau_ap([1, 3, 2], [3, 2, 1])   # the other direction
    -0.5
    """
    x, y = _as_pair(x, y)
    gx, gy = pairwise_signs(x), pairwise_signs(y)
    value = _tau_ap_from_signs(gx, gy)
    if symmetric:
        value = (value + _tau_ap_from_signs(gy, gx)) / 2.0
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
        Shape (...).
    """
    x, y = _as_pair(x, y)
    return _scalar(_tau_ap_a_from_signs(pairwise_signs(x), pairwise_signs(y)))


def spearman(x: ArrayLike, y: ArrayLike) -> np.ndarray:
    """Spearman's rho: Pearson correlation of average ranks (``scipy.stats.rankdata``), vectorised.

    Same value as ``scipy.stats.spearmanr(x, y).statistic`` for 1-D input; NaN where x or y is constant.
    """
    x, y = _as_pair(x, y)
    return _scalar(_pearson(rankdata(x, axis=-1), rankdata(y, axis=-1)))


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
