"""Bootstrap intervals of the system-ranking correlations: BCa and normal against plain reference implementations
(a loop over the replicates and the leave-one-topic-out values), against scipy.stats.bootstrap(method="BCa") up to
Monte Carlo error, and where each interval puts the estimate."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from scipy.special import ndtr, ndtri

from meta_eval.statistics.correlation import correlate_systems, kendall_tau_b


def _scores(seed=0, n_sys=10, n_top=16):
    rng = np.random.default_rng(seed)
    base = np.linspace(0.2, 0.6, n_sys)[:, None] + rng.normal(0, 0.2, (n_sys, n_top))
    return {"A": base, "B": base + rng.normal(0, 0.15, base.shape)}


def _tau(a, b):
    return kendall_tau_b(np.round(a.mean(1), 12), np.round(b.mean(1), 12))


def test_bca_and_normal_equal_reference_implementations():
    s = _scores()
    pct = correlate_systems(s, n_resamples=300, seed=4)
    bca = correlate_systems(s, n_resamples=300, seed=4, ci_method="bca")
    nrm = correlate_systems(s, n_resamples=300, seed=4, ci_method="normal")
    row = pct.table.index[pct.table.coefficient == "kendall_tau_b"][0]
    reps, value = pct.replicates[row], pct.table.value[row]
    np.testing.assert_array_equal(bca.replicates, pct.replicates)
    # reference BCa, written out: Efron & Tibshirani (1993) Eq. 14.9-14.15
    jack = np.array([_tau(s["A"][:, np.arange(16) != t], s["B"][:, np.arange(16) != t]) for t in range(16)])
    z0 = ndtri((np.sum(reps < value) + np.sum(reps <= value)) / (2 * reps.size))
    d = jack.mean() - jack
    a = (d**3).sum() / (6 * (d**2).sum() ** 1.5)
    z = ndtri([0.025, 0.975])
    lo, hi = np.quantile(reps, ndtr(z0 + (z0 + z) / (1 - a * (z0 + z))))
    assert bca.table.ci_low[row] == pytest.approx(lo, abs=1e-12)
    assert bca.table.ci_high[row] == pytest.approx(hi, abs=1e-12)
    half = 1.959963984540054 * reps.std(ddof=1)
    assert nrm.table.ci_low[row] == pytest.approx(max(-1, value - half), abs=1e-12)
    assert nrm.table.ci_high[row] == pytest.approx(min(1, value + half), abs=1e-12)


def test_bca_matches_scipy_bootstrap_up_to_monte_carlo_error():
    s = _scores(seed=1, n_top=20)
    ours = correlate_systems(s, n_resamples=4000, seed=0, ci_method="bca")
    row = ours.table[ours.table.coefficient == "kendall_tau_b"].iloc[0]
    ref = stats.bootstrap((np.arange(20),), lambda idx: _tau(s["A"][:, idx], s["B"][:, idx]), vectorized=False,
                          n_resamples=4000, method="BCa", random_state=1).confidence_interval
    assert row.ci_low == pytest.approx(ref.low, abs=0.04)
    assert row.ci_high == pytest.approx(ref.high, abs=0.04)


def test_normal_interval_is_centred_on_the_estimate():
    s = _scores(seed=2)
    res = correlate_systems(s, n_resamples=200, seed=0, ci_method="normal").table
    inside = res[(res.ci_high < 1) & (res.ci_low > -1)]
    np.testing.assert_allclose(inside.value - inside.ci_low, inside.ci_high - inside.value, atol=1e-12)
    assert ((res.ci_low <= res.value) & (res.value <= res.ci_high)).all()
