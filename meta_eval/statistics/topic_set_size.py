"""Topic-set-size design (Sakai, "Topic set size design", Information Retrieval Journal 19(3), 2016): how many
topics a test collection needs so that a test has power 1 − β to detect a minimum difference minD at level α,
given a metric's within-system variance σ² (estimated from an existing topic × run matrix).

t-test-based design (paired t-test of two systems; Sakai IRJ 2016 §3.1, after Nagata)::

    σ_t² = 2 σ²,   Δ_t = minD / σ_t,   λ = √n Δ_t,   φ = n − 1,   w = t_{α/2}(φ)
    exact:  1 − β = P[t'(φ, λ) ≥ w] + P[t'(φ, λ) ≤ −w]            (noncentral t; scipy.stats.nct)
    Sakai:  1 − β ≈ P[u ≥ (w − λ)/√(1 + w²/(2φ))] + P[u ≤ (−w − λ)/√(1 + w²/(2φ))]   (u standard normal;
            the normal approximation his Excel tool samplesizeTTEST uses), starting from
            n ≈ ((z_{α/2} + z_β) / Δ_t)² + z_{α/2}² / 2

ANOVA-based design (one-way ANOVA of m systems, the worst case where two systems differ by minD and the others
sit at their mean; Sakai IRJ 2016 §3.2)::

    Δ = minD² / (2 σ²),   λ = n Δ,   φ_A = m − 1,   φ_E = m (n − 1)
    1 − β = P[F'(φ_A, φ_E, λ) ≥ F_α(φ_A, φ_E)]                      (noncentral F; scipy.stats.ncf)

The topic-set size is the smallest n ≥ 2 whose power reaches 1 − β (power grows with n; found by bisection,
vectorised over the minD grid). σ² is the residual variance V_E of the two-way ANOVA (default; the within-system
variance once topic effects are removed) or of the one-way ANOVA (:class:`~meta_eval.statistics.anova.Anova`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from meta_eval.core.errors import InputError

DESIGNS = ("ttest", "anova")
DEFAULT_MIN_D = tuple(np.round(np.arange(0.02, 0.2001, 0.01), 2))
N_MAX = 10**7


def _check(alpha: float, beta: float, min_d, variance) -> tuple[np.ndarray, np.ndarray]:
    if not 0 < alpha < 1 or not 0 < beta < 1:
        raise InputError(f"alpha and beta must lie in (0, 1); got alpha={alpha}, beta={beta}")
    d = np.asarray(min_d, dtype=np.float64)
    v = np.asarray(variance, dtype=np.float64)
    if not (np.all(np.isfinite(d)) and np.all(d > 0)):
        raise InputError(f"min_d must be positive; got {d.ravel()[:5].tolist()}")
    if not (np.all(np.isfinite(v)) and np.all(v > 0)):
        raise InputError(f"variance must be positive and finite; got {v.ravel()[:5].tolist()}")
    return np.broadcast_arrays(d, v)


def ttest_power(n, min_d, variance, alpha: float = 0.05, method: str = "exact") -> np.ndarray:
    """Power of the two-sided paired t-test with n topics (formulas in the module docstring).

    ``method="exact"`` uses the noncentral t distribution; ``"sakai"`` the normal approximation of Sakai's tool.
    """
    from scipy import stats

    n = np.asarray(n, dtype=np.float64)
    delta = np.asarray(min_d, dtype=np.float64) / np.sqrt(2.0 * np.asarray(variance, dtype=np.float64))
    phi = n - 1.0
    lam = np.sqrt(n) * delta
    w = stats.t.isf(alpha / 2.0, phi)
    if method == "exact":
        return stats.nct.sf(w, phi, lam) + stats.nct.cdf(-w, phi, lam)
    if method == "sakai":
        scale = np.sqrt(1.0 + w * w / (2.0 * phi))
        return stats.norm.sf((w - lam) / scale) + stats.norm.cdf((-w - lam) / scale)
    raise InputError(f"method must be 'exact' or 'sakai'; got {method!r}")


def anova_power(n, min_d, variance, n_systems: int, alpha: float = 0.05) -> np.ndarray:
    """Power of the one-way ANOVA F-test of ``n_systems`` systems with n topics each (noncentral F)."""
    from scipy import stats

    n = np.asarray(n, dtype=np.float64)
    lam = n * np.asarray(min_d, dtype=np.float64) ** 2 / (2.0 * np.asarray(variance, dtype=np.float64))
    dfa, dfe = n_systems - 1.0, n_systems * (n - 1.0)
    return stats.ncf.sf(stats.f.isf(alpha, dfa, dfe), dfa, dfe, lam)


def sakai_initial_n(min_d, variance, alpha: float = 0.05, beta: float = 0.2) -> np.ndarray:
    """Sakai's closed-form starting point of the t-test design: ((z_{α/2} + z_β)/Δ_t)² + z_{α/2}²/2 (z upper
    quantiles of the standard normal)."""
    from scipy import stats

    delta = np.asarray(min_d, dtype=np.float64) / np.sqrt(2.0 * np.asarray(variance, dtype=np.float64))
    za, zb = stats.norm.isf(alpha / 2.0), stats.norm.isf(beta)
    return ((za + zb) / delta) ** 2 + za * za / 2.0


def _smallest_n(power, target: float, shape, design: str = "") -> np.ndarray:
    """Smallest integer n >= 2 with power(n) >= target, elementwise, for power increasing in n (bisection)."""
    lo = np.full(shape, 1, dtype=np.int64)  # power(lo) < target is assumed for lo = 1 (n = 1 is no design)
    hi = np.full(shape, 2, dtype=np.int64)
    while True:
        short = power(hi) < target
        if not short.any():
            break
        if hi.max() > N_MAX:
            raise InputError(f"more than {N_MAX:,} topics would be needed{design}: the minimum detectable difference "
                             "is too small for the variance (raise min_d / --min-d, lower the power or the number of "
                             "systems)")
        lo = np.where(short, hi, lo)
        hi = np.where(short, hi * 2, hi)
    while np.any(hi - lo > 1):
        mid = (lo + hi) // 2
        ok = power(np.maximum(mid, 2)) >= target
        hi = np.where(ok & (hi - lo > 1), mid, hi)
        lo = np.where(~ok & (hi - lo > 1), mid, lo)
    return hi


def ttest_topics(min_d, variance, alpha: float = 0.05, beta: float = 0.2, method: str = "exact") -> np.ndarray:
    """Topics needed by the paired t-test design (vectorised over ``min_d`` and ``variance``).

    Examples
    --------
    >>> int(ttest_topics(0.1, 0.05))
    81
    """
    d, v = _check(alpha, beta, min_d, variance)
    return _smallest_n(lambda n: ttest_power(n, d, v, alpha, method), 1.0 - beta, d.shape, " by the paired t-test")


def anova_topics(min_d, variance, n_systems: int, alpha: float = 0.05, beta: float = 0.2) -> np.ndarray:
    """Topics needed by the one-way ANOVA design with ``n_systems`` systems (vectorised)."""
    if int(n_systems) != n_systems or n_systems < 2:
        raise InputError(f"n_systems must be an integer >= 2; got {n_systems}")
    d, v = _check(alpha, beta, min_d, variance)
    return _smallest_n(lambda n: anova_power(n, d, v, int(n_systems), alpha), 1.0 - beta, d.shape,
                       f" by the one-way ANOVA of {int(n_systems):,} systems")


@dataclass(frozen=True, eq=False)
class TopicSetSize:
    """Topics needed per metric, design and minimum detectable difference (result of :func:`topic_set_size`).

    Attributes
    ----------
    table : DataFrame
        ``metric, design`` (ttest / anova), ``n_systems`` (2 for the t-test), ``alpha, beta, min_d, variance``
        (σ² used), ``n_topics``, ``power`` (achieved at n_topics).
    """

    table: pd.DataFrame

    def at(self, min_d: float, design: str = "ttest") -> pd.Series:
        """Topics needed per metric at one minimum detectable difference."""
        rows = self.table[(self.table["design"] == design) & np.isclose(self.table["min_d"], min_d)]
        return pd.Series(rows["n_topics"].to_numpy(), index=rows["metric"].to_numpy(), name=f"n_topics@{min_d}")


def topic_set_size(
    variances: dict[str, float],
    *,
    min_d: Sequence[float] = DEFAULT_MIN_D,
    alpha: float = 0.05,
    beta: float = 0.2,
    designs: Sequence[str] = DESIGNS,
    n_systems: Sequence[int] | int = (2, 10),
    method: str = "exact",
) -> TopicSetSize:
    """Sakai's topic-set-size design for each metric over a grid of minimum detectable differences.

    Parameters
    ----------
    variances : dict
        σ² per metric, e.g. ``two_way_anova(scores).residual_variance``.
    min_d : sequence of float
        Minimum detectable differences (in the metric's units).
    alpha, beta : float
        Significance level and type II error (power 1 − β; Sakai's usual (0.05, 0.20)).
    designs : sequence of {"ttest", "anova"}
    n_systems : int or sequence of int
        m for the ANOVA design (one row set per m).
    method : {"exact", "sakai"}
        Power of the t-test design: noncentral t, or Sakai's normal approximation.

    Notes
    -----
    A metric whose variance is zero (every system pair differs by the same amount on every topic, e.g. identical
    systems: :func:`~meta_eval.statistics.anova.two_way_anova` makes rounding-level variances exactly zero) has no topic-set
    size: its rows have ``n_topics`` and ``power`` undefined (missing), never a number.
    """
    unknown = [d for d in designs if d not in DESIGNS]
    if unknown or not designs:
        raise InputError(f"unknown design(s) {unknown}; expected some of {DESIGNS}")
    ms = [n_systems] if np.isscalar(n_systems) else list(n_systems)
    grid = np.asarray(list(min_d), dtype=np.float64)
    frames = []
    for metric, var in variances.items():
        v = np.full(grid.shape, float(var))
        if var == 0:
            frames.extend(_undefined_rows(metric, dm, alpha, beta, grid) for dm in _design_ms(designs, ms))
            continue
        if "ttest" in designs:
            n = ttest_topics(grid, v, alpha, beta, method)
            frames.append(_rows(metric, "ttest", 2, alpha, beta, grid, v, n,
                                ttest_power(n, grid, v, alpha, method)))
        if "anova" in designs:
            for m in ms:
                n = anova_topics(grid, v, m, alpha, beta)
                frames.append(_rows(metric, "anova", m, alpha, beta, grid, v, n, anova_power(n, grid, v, m, alpha)))
    return TopicSetSize(pd.concat(frames, ignore_index=True))


def _rows(metric, design, m, alpha, beta, grid, v, n, power) -> pd.DataFrame:
    return pd.DataFrame({"metric": metric, "design": design, "n_systems": int(m), "alpha": alpha, "beta": beta,
                         "min_d": grid, "variance": v, "n_topics": pd.array(n, dtype="Int64"), "power": power})


def _design_ms(designs, ms) -> list[tuple[str, int]]:
    return ([("ttest", 2)] if "ttest" in designs else []) + ([("anova", m) for m in ms] if "anova" in designs else [])


def _undefined_rows(metric, design_m: tuple[str, int], alpha, beta, grid) -> pd.DataFrame:
    design, m = design_m
    return _rows(metric, design, m, alpha, beta, grid, np.zeros(grid.shape), pd.array([pd.NA] * grid.size,
                 dtype="Int64"), np.full(grid.shape, np.nan))
