"""Tests of meta_eval.statistics.significance: bootstrap, Tukey HSD, classical tests, stability, subsets.

References used: a straightforward per-pair bootstrap written here from methods.md §3.2-3.4 (gathers the
resampled topics and uses two-pass numpy statistics, no count matrix), scipy's per-pair tests, brute-force
definitions of Holm/BH, exact enumeration of the permutation distribution, and Monte Carlo calibration.
"""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from meta_eval.statistics.best_systems import best_systems, select_topics
from meta_eval.statistics.significance.bootstrap import paired_bootstrap, unpaired_bootstrap
from meta_eval.statistics.significance.classical import benjamini_hochberg, classical_test, holm
from meta_eval.statistics.significance.discriminative_power import discriminative_power
from meta_eval.statistics.significance.pairs import pair_indices
from meta_eval.statistics.significance.tukey import tukey_hsd, tukey_null
from meta_eval.statistics.stability import error_rates, swap_rates
from meta_eval.core.errors import InputError
from meta_eval.core.resampling import bootstrap_indices

# --------------------------------------------------------------------------------------------------------
# per-pair reference implementation (methods.md §3.2-3.4), independent of the vectorised code


def _ref_abs_t(mean, sd, n, scale):
    """|mean| / (sd / sqrt n) with the documented s.d. = 0 rule (var <= 1e-10 scale², |mean| <= 1e-9 scale)."""
    if sd * sd <= 1e-10 * scale * scale:
        return 0.0 if abs(mean) <= 1e-9 * scale else math.inf
    return abs(mean) / (sd / math.sqrt(n))


def ref_paired(x, y, idx, alpha):
    """ASL and difference required of one pair, replicate by replicate."""
    n, n_rep = idx.shape
    z = x - y
    scale = np.abs(z).max()
    t_obs = _ref_abs_t(z.mean(), z.std(ddof=1), n, scale)
    w = z - z.mean()
    t_star = np.empty(n_rep)
    m_star = np.empty(n_rep)
    for b in range(n_rep):
        sample = w[idx[:, b]]
        m_star[b] = sample.mean()
        t_star[b] = _ref_abs_t(m_star[b], sample.std(ddof=1), n, scale)
    asl = np.sum(t_star >= t_obs * (1 - 1e-9)) / n_rep
    k = math.ceil(round(n_rep * alpha, 9))
    pick = np.argsort(-t_star, kind="stable")[k - 1]
    return asl, abs(m_star[pick]), t_star[pick]


def ref_unpaired(x, y, idx_x, idx_y, alpha):
    """Efron & Tibshirani Algorithm 16.2 for one pair."""
    n, n_rep = idx_x.shape
    scale = max(np.abs(x).max(), np.abs(y).max())
    zbar = np.concatenate([x, y]).mean()
    xs, ys = x - x.mean() + zbar, y - y.mean() + zbar

    def stat(a, b):
        return _ref_abs_t(a.mean() - b.mean(), math.sqrt(a.var(ddof=1) + b.var(ddof=1)), n, scale)

    t_obs = stat(x, y)
    t_star, d_star = np.empty(n_rep), np.empty(n_rep)
    for b in range(n_rep):
        a, c = xs[idx_x[:, b]], ys[idx_y[:, b]]
        t_star[b], d_star[b] = stat(a, c), a.mean() - c.mean()
    asl = np.sum(t_star >= t_obs * (1 - 1e-9)) / n_rep
    pick = np.argsort(-t_star, kind="stable")[math.ceil(round(n_rep * alpha, 9)) - 1]
    return asl, abs(d_star[pick])


def synthetic(n_sys=8, n_top=25, seed=0, spread=0.1, discrete=False):
    """Scores = topic effect + system effect + noise, clipped to [0, 1]; optionally on a 0.1 grid."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.1, 0.7, n_top)[None, :] + np.linspace(0, spread, n_sys)[:, None]
    x = np.clip(x + rng.normal(0, 0.15, (n_sys, n_top)), 0, 1)
    return np.round(x, 1) if discrete else x


# --------------------------------------------------------------------------------------------------------
# paired bootstrap


@pytest.mark.parametrize("discrete", [False, True])
def test_paired_bootstrap_equals_per_pair_reference(discrete):
    x = synthetic(discrete=discrete)
    x[3] = x[2]  # identical systems
    x[5] = x[4] + 0.1  # constant difference (on the 0.1 grid: degenerate replicates everywhere)
    x[6, :23] = x[7, :23]  # mostly tied pair: replicates made of tied topics only (|t*| = inf) occur
    idx = bootstrap_indices(x.shape[1], 400, seed=3)
    res = paired_bootstrap(x, indices=idx, alpha=0.05)
    ia, ib = pair_indices(x.shape[0])
    ref = np.array([ref_paired(x[a], x[b], idx, 0.05) for a, b in zip(ia, ib)])
    np.testing.assert_array_equal(res.asl, ref[:, 0])
    if not discrete:  # with ties in |t*| the stable order is exact only up to rounding
        np.testing.assert_allclose(res.pair_diff_required, ref[:, 1], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(res.pair_critical_t, ref[:, 2], rtol=1e-9)
        assert res.diff_required == pytest.approx(ref[:, 1].max(), rel=1e-12)
    assert res.asl[(ia == 2) & (ib == 3)] == 1.0
    assert res.asl[(ia == 4) & (ib == 5)] == 0.0


def test_paired_bootstrap_chunking_does_not_change_results(monkeypatch):
    x = synthetic(n_sys=12)
    whole = paired_bootstrap(x, n_resamples=300, seed=1)
    import meta_eval.statistics.significance.pairs as common
    import meta_eval.statistics.significance.bootstrap as boot

    monkeypatch.setattr(boot, "pair_chunks", lambda p, b: common.pair_chunks(p, b, 300 * 7))  # 7 pairs a chunk
    chunked = paired_bootstrap(x, n_resamples=300, seed=1)
    np.testing.assert_array_equal(whole.asl, chunked.asl)
    # BLAS may sum in another order for another matrix shape: equal up to rounding
    np.testing.assert_allclose(whole.pair_diff_required, chunked.pair_diff_required, rtol=1e-13)


def test_paired_bootstrap_hand_example():
    """Two topics, replicates enumerated by hand: z = (0.2, 0.0), w = (0.1, -0.1), t_obs = 1 (n = 2)."""
    x = np.array([[0.5, 0.3], [0.3, 0.3]])
    idx = np.array([[0, 0, 1, 1], [1, 0, 0, 1]])  # replicates {w0,w1}, {w0,w0}, {w1,w0}, {w1,w1}
    res = paired_bootstrap(x, indices=idx, alpha=0.5)
    # |t*| = 0 (mean 0, sd > 0), inf (sd 0, mean 0.1), 0, inf  -> two of four >= 1
    assert res.asl[0] == 0.5
    # k = ceil(4 * 0.5) = 2: second largest |t*| in replicate order is replicate 3 (inf), |mean| = 0.1
    assert res.diff_required == pytest.approx(0.1)


def test_paired_bootstrap_matches_studentised_t_for_large_b():
    """The bootstrap-t ASL approximates the paired t-test p-value for near-normal differences."""
    rng = np.random.default_rng(5)
    base = rng.normal(0.4, 0.1, 60)
    x = np.stack([base, base + rng.normal(0.03, 0.08, 60)])
    res = paired_bootstrap(x, n_resamples=4000, seed=2)
    p = stats.ttest_rel(x[0], x[1]).pvalue
    assert abs(res.asl[0] - p) < 4 * math.sqrt(p * (1 - p) / 4000) + 0.01


def test_same_seed_same_asl_different_seed_within_bootstrap_error():
    x = synthetic(n_sys=10, n_top=30, seed=4, spread=0.15)
    a = paired_bootstrap(x, n_resamples=1000, seed=11)
    b = paired_bootstrap(x, n_resamples=1000, seed=11)
    c = paired_bootstrap(x, n_resamples=1000, seed=12)
    np.testing.assert_array_equal(a.asl, b.asl)
    assert not np.array_equal(a.asl, c.asl)
    p = (a.asl + c.asl) / 2
    se = np.sqrt(2 * p * (1 - p) / 1000)
    assert np.all(np.abs(a.asl - c.asl) <= 4 * se + 2e-3)


def test_calibration_null_proportion_significant():
    """Systems drawn from one distribution: about alpha of the pairs come out significant.

    Pairs within one collection share systems, so their verdicts are correlated; averaging over 12 collections
    of 20 systems brings the standard error of the mean proportion to about 0.008."""
    props = []
    for seed in range(12):
        rng = np.random.default_rng(100 + seed)
        topic = rng.uniform(0.1, 0.8, 40)
        x = np.clip(topic[None, :] + rng.normal(0, 0.12, (20, 40)), 0, 1)
        props.append(paired_bootstrap(x, n_resamples=1000, seed=seed).proportion(0.05))
    assert 0.02 <= np.mean(props) <= 0.08


def test_power_rises_with_number_of_topics():
    """Two systems with a real mean difference (0.04, s.d. of the per-topic difference 0.12): the proportion of
    simulated test collections in which the pair is significant at 0.05 grows with the number of topics."""
    rng = np.random.default_rng(7)
    power = []
    for n in (10, 30, 90):
        hits = 0
        for rep in range(80):
            topic = rng.uniform(0.2, 0.7, n)
            x = np.stack([topic, topic + rng.normal(0.04, 0.12, n)])
            hits += paired_bootstrap(x, n_resamples=500, seed=rep).asl[0] < 0.05
        power.append(hits / 80)
    assert power[0] < power[1] < power[2]
    assert power[2] > 0.7  # t-test power at n = 90, effect 1/3: about 0.85


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 5), st.integers(2, 12), st.integers(0, 2**16))
def test_asl_is_a_probability_and_symmetric_in_system_order(n_sys, n_top, seed):
    rng = np.random.default_rng(seed)
    x = np.round(rng.random((n_sys, n_top)), 2)
    idx = bootstrap_indices(n_top, 200, seed)
    fwd = paired_bootstrap(x, indices=idx)
    rev = paired_bootstrap(x[::-1], indices=idx)
    assert np.all((fwd.asl >= 0) & (fwd.asl <= 1))
    ia, ib = pair_indices(n_sys)
    rev_map = {(n_sys - 1 - b, n_sys - 1 - a): v for a, b, v in zip(ia, ib, rev.asl)}
    # reversed order: pair (a, b) becomes (S-1-a, S-1-b), i.e. the same pair with the difference negated
    np.testing.assert_array_equal(fwd.asl, [rev_map[(a, b)] for a, b in zip(ia, ib)])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 30), st.integers(0, 2**16))
def test_kth_largest_first_is_the_stable_descending_order(n_rows, n_cols, seed):
    from meta_eval.statistics.significance.pairs import kth_largest_first

    rng = np.random.default_rng(seed)
    values = rng.integers(0, 4, (n_rows, n_cols)).astype(float)  # many ties
    values[rng.random((n_rows, n_cols)) < 0.1] = np.inf
    k = int(rng.integers(1, n_cols + 1))
    np.testing.assert_array_equal(kth_largest_first(values, k), np.argsort(-values, axis=1, kind="stable")[:, k - 1])


def test_studentised_statistic_rule_on_scalars():
    from meta_eval.statistics.significance.pairs import abs_studentised

    assert abs_studentised(0.2, 0.04, 4, 1.0) == pytest.approx(2.0)
    assert abs_studentised(0.2, 0.0, 4, 1.0) == math.inf
    assert abs_studentised(1e-12, 1e-14, 4, 1.0) == 0.0  # both below the rounding tolerances: zero mean, zero s.d.
    assert abs_studentised(0.0, 0.0, 4, 0.0) == 0.0


# --------------------------------------------------------------------------------------------------------
# unpaired bootstrap


def test_unpaired_bootstrap_equals_per_pair_reference():
    x = synthetic(n_sys=6, n_top=15)
    x[1] = x[0]
    idx = bootstrap_indices(15, 2 * 300, seed=8)
    res = unpaired_bootstrap(x, indices=idx, alpha=0.1)
    ia, ib = pair_indices(6)
    ref = np.array([ref_unpaired(x[a], x[b], idx[:, :300], idx[:, 300:], 0.1) for a, b in zip(ia, ib)])
    np.testing.assert_array_equal(res.asl, ref[:, 0])
    np.testing.assert_allclose(res.pair_diff_required, ref[:, 1], rtol=1e-10, atol=1e-14)
    assert res.n_resamples == 300 and res.method == "unpaired-bootstrap"


def test_unpaired_is_less_powerful_than_paired_with_strong_topic_effects():
    rng = np.random.default_rng(9)
    topic = rng.uniform(0, 1, 30)
    x = np.stack([topic, topic + 0.03 + rng.normal(0, 0.02, 30)])
    assert paired_bootstrap(x).asl[0] < 0.01
    assert unpaired_bootstrap(x).asl[0] > 0.3


# --------------------------------------------------------------------------------------------------------
# randomised Tukey HSD


def test_tukey_two_systems_matches_exact_permutation_distribution():
    """S = 2: permuting each topic's pair = flipping the sign of z_t; enumerate all 2^T flips."""
    x = np.array([[0.3, 0.5, 0.9, 0.4, 0.6], [0.1, 0.6, 0.5, 0.2, 0.6]])
    z = x[0] - x[1]
    flips = np.array(list(product([1, -1], repeat=z.size)))
    exact = np.mean(np.abs(flips @ z) >= abs(z.sum()) - 1e-12)
    res = tukey_hsd(x, n_resamples=20000, seed=3)
    assert abs(res.asl[0] - exact) <= 3 * math.sqrt(exact * (1 - exact) / 20000)


def test_tukey_asl_and_critical_value_from_null():
    x = synthetic(n_sys=7, n_top=20, spread=0.2)
    null = tukey_null(x, n_resamples=1000, seed=5)
    res = tukey_hsd(x, n_resamples=1000, seed=5)
    means = x.mean(1)
    ia, ib = pair_indices(7)
    ref = [np.mean(null >= abs(means[a] - means[b]) * (1 - 1e-9)) for a, b in zip(ia, ib)]
    np.testing.assert_array_equal(res.asl, ref)
    assert res.diff_required == np.sort(null)[::-1][50 - 1]
    # pairs beyond the critical value are exactly the significant ones (no ties in continuous data)
    np.testing.assert_array_equal(res.significant(), np.abs(res.difference) > res.diff_required)


def test_tukey_null_permutes_within_topics():
    """Every replicate keeps each topic's multiset of scores: the grand mean of the permuted matrix is invariant,
    so max - min of system means is bounded by the largest spread of any system-mean reassignment."""
    x = np.array([[1.0, 0.0], [0.0, 0.0]])
    null = tukey_null(x, n_resamples=400, seed=0)
    # the 1.0 lands in either system: means (0.5, 0) or (0, 0.5) -> range always 0.5
    assert np.all(null == 0.5)
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    null = tukey_null(x, n_resamples=2000, seed=0)
    assert set(np.unique(null)) == {0.0, 1.0}
    assert abs(np.mean(null == 1.0) - 0.5) < 0.05


def test_tukey_controls_familywise_error_under_null():
    rng = np.random.default_rng(21)
    any_sig = []
    for rep in range(400):
        topic = rng.uniform(0.1, 0.8, 15)
        x = topic[None, :] + rng.normal(0, 0.1, (6, 15))
        any_sig.append(tukey_hsd(x, n_resamples=400, seed=rep).n_significant() > 0)
    rate = np.mean(any_sig)
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 400)


def test_tukey_same_permutations_for_every_metric():
    x = synthetic(n_sys=5, n_top=12)
    a = tukey_null(x, n_resamples=300, seed=4)
    b = tukey_null(x * 2.0, n_resamples=300, seed=4)
    np.testing.assert_allclose(b, 2 * a, rtol=1e-12)


# --------------------------------------------------------------------------------------------------------
# classical tests and corrections


def test_classical_tests_match_scipy_per_pair():
    x = synthetic(n_sys=6, n_top=20, discrete=True)
    x[1] = x[0]
    ia, ib = pair_indices(6)
    t = classical_test(x, test="ttest").asl
    w = classical_test(x, test="wilcoxon").asl
    s = classical_test(x, test="sign").asl
    for k, (a, b) in enumerate(zip(ia, ib)):
        d = x[a] - x[b]
        if np.all(d == 0):
            assert t[k] == w[k] == s[k] == 1.0
            continue
        assert t[k] == pytest.approx(stats.ttest_rel(x[a], x[b]).pvalue, rel=1e-12)
        assert w[k] == pytest.approx(stats.wilcoxon(d).pvalue, rel=1e-12)
        npos, nneg = int((d > 0).sum()), int((d < 0).sum())
        assert s[k] == pytest.approx(stats.binomtest(npos, npos + nneg, 0.5).pvalue, rel=1e-12)


def _holm_bruteforce(p):
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out, running = [0.0] * m, 0.0
    for j, i in enumerate(order):
        running = max(running, min(1.0, (m - j) * p[i]))
        out[i] = running
    return out


def _bh_bruteforce(p):
    m = len(p)
    return [min(min(1.0, p_j * m / sum(q <= p_j for q in p)) for p_j in p if p_j >= p_i) for p_i in p]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_holm_and_bh_match_definitions(p):
    np.testing.assert_allclose(holm(p), _holm_bruteforce(p), rtol=1e-12)
    np.testing.assert_allclose(benjamini_hochberg(p), _bh_bruteforce(p), rtol=1e-12)


def test_corrections_are_never_more_liberal():
    x = synthetic(n_sys=10, n_top=30, spread=0.2)
    raw = classical_test(x, test="ttest")
    assert classical_test(x, test="ttest", correction="holm").n_significant() <= classical_test(
        x, test="ttest", correction="bh"
    ).n_significant() <= raw.n_significant()


# --------------------------------------------------------------------------------------------------------
# the multi-metric driver


def test_discriminative_power_tables_and_shared_replicates():
    x = synthetic(n_sys=6, n_top=20, spread=0.3)
    y = np.sqrt(x)
    dp = discriminative_power({"A": x, "B": y}, [f"r{i}" for i in range(6)], methods=["bootstrap", "tukey", "ttest"],
                              n_resamples=500, seed=3)
    summary = dp.summary()
    assert list(summary.columns) == ["metric", "method", "pairs", "significant", "proportion", "diff_required"]
    assert len(summary) == 6 and (summary["pairs"] == 15).all()
    asl = dp.asl_table()
    assert list(asl.columns) == ["metric", "method", "system_a", "system_b", "asl"] and len(asl) == 6 * 15
    idx = bootstrap_indices(20, 500, 3)
    np.testing.assert_array_equal(dp.tests[("B", "bootstrap")].asl, paired_bootstrap(y, indices=idx).asl)
    row = summary.set_index(["metric", "method"]).loc[("A", "bootstrap")]
    assert row["significant"] == int(np.sum(dp.tests[("A", "bootstrap")].asl < 0.05))
    curves = dp.curves()
    assert np.all(np.diff(curves[(curves.metric == "A") & (curves.method == "tukey")]["asl"]) >= 0)


def test_subsets_of_systems_and_topics():
    x = synthetic(n_sys=6, n_top=20, spread=0.3)
    names = [f"r{i}" for i in range(6)]
    dp = discriminative_power(x, names, subset=["r5", "r1", "r3"], topics=np.arange(10), n_resamples=200)
    t = dp.tests[("metric", "bootstrap")]
    assert t.systems == ("r5", "r1", "r3") and t.n_pairs == 3
    ref = paired_bootstrap(x[[5, 1, 3]][:, :10], n_resamples=200, seed=0)
    np.testing.assert_array_equal(t.asl, ref.asl)
    mask = np.zeros(20, bool)
    mask[::2] = True
    np.testing.assert_array_equal(select_topics(x, mask), x[:, ::2])


def test_best_systems_rules():
    # metric A ranks s0 > s1 > s2 > s3 > s4; metric B ranks s1 > s0 > s3 > s4 > s2
    a = np.array([5, 4, 3, 2, 1.0])[:, None] * np.ones((1, 3))
    b = np.array([4, 5, 1, 3, 2.0])[:, None] * np.ones((1, 3))
    names = ["s0", "s1", "s2", "s3", "s4"]
    assert best_systems({"A": a, "B": b}, names, 2) == ["s0", "s1"]
    # top 3 sets: A {s0,s1,s2}, B {s1,s0,s3}: intersection {s0,s1}; 'both' grows the depth to get 3 systems
    assert best_systems({"A": a, "B": b}, names, 3, rule="intersection") == ["s0", "s1"]
    assert best_systems({"A": a, "B": b}, names, 3) == ["s0", "s1", "s3"]
    assert sorted(best_systems({"A": a, "B": b}, names, 3, rule="union")) == ["s0", "s1", "s2", "s3"]


# --------------------------------------------------------------------------------------------------------
# stability: swap rates and error rates


def test_swap_rates_exact_with_two_topics():
    """T = 2, n = 1: the two sets are the two topics; a pair swaps iff its two differences have opposite signs."""
    x = np.array([[0.5, 0.2], [0.3, 0.4], [0.1, 0.1], [0.5, 0.2]])
    res = swap_rates(x, n_splits=50, seed=1)
    d = (x[:, None, :] - x[None, :, :])[np.triu_indices(4, 1)]
    opposite = int(np.sum(d[:, 0] * d[:, 1] < 0))
    assert res.by_size.loc[0, "swaps"] == 50 * opposite
    assert res.by_size.loc[0, "comparisons"] == 50 * 6
    assert res.table["comparisons"].sum() == 300


def test_swap_rate_falls_with_topic_set_size_and_difference():
    rng = np.random.default_rng(2)
    topic = rng.uniform(0.1, 0.7, 50)
    x = topic[None, :] + np.linspace(0, 0.1, 12)[:, None] + rng.normal(0, 0.1, (12, 50))
    res = swap_rates(x, sizes=[5, 10, 25], n_splits=200, seed=0)
    rates = res.by_size["swap_rate"].to_numpy()
    assert rates[0] > rates[1] > rates[2]
    t = res.table[res.table["size"] == 25]
    assert t[t.bin_lo >= 0.05]["swap_rate"].max() < t[t.bin_lo < 0.01]["swap_rate"].min()
    md = res.min_difference(0.05)
    assert list(md["size"]) == [5, 10, 25]


def test_swap_rate_min_difference_and_extrapolation_on_a_hand_table():
    from meta_eval.statistics.stability import SwapRates

    rows = []
    for n in (2, 4, 6):
        for k, base in enumerate([0.4, 0.2, 0.1]):  # bins [0, .01), [.01, .02), [.02, .03)
            rate = base * np.exp(-0.1 * n)  # log-linear in n by construction
            rows.append((n, k * 0.01, (k + 1) * 0.01, 1000, round(rate * 1000), round(rate * 1000) / 1000))
    table = pd.DataFrame(rows, columns=["size", "bin_lo", "bin_hi", "comparisons", "swaps", "swap_rate"])
    res = SwapRates(table=table, by_size=pd.DataFrame())
    md = res.min_difference(0.1).set_index("size")["min_difference"]
    # rates at n = 2: .328 .164 .082 -> from bin .02; n = 6: .220 .110 .055 -> from .02; at 0.3 n=6 -> from 0
    assert md.loc[2] == pytest.approx(0.02) and md.loc[6] == pytest.approx(0.02)
    assert res.min_difference(0.3).set_index("size")["min_difference"].loc[6] == 0.0
    assert np.isnan(res.min_difference(0.01).set_index("size")["min_difference"].loc[2])
    ext = res.extrapolate([50])
    assert len(ext) == 3
    np.testing.assert_allclose(ext["slope"], -0.1, atol=2e-3)
    np.testing.assert_allclose(ext["swap_rate"], np.array([0.4, 0.2, 0.1]) * np.exp(-5), rtol=0.1)


def test_error_rates_whole_topic_set_and_fuzziness():
    x = np.array([[0.50, 0.50], [0.49, 0.51], [0.30, 0.20]])
    res = error_rates(x, sizes=[2], n_sets=10, fuzziness=[0.0, 0.05])
    # every set is the whole topic set: no disagreement, so no errors; with f = 0.05, s0 ~ s1 is a tie
    assert (res["error_rate"] == 0).all()
    assert res.set_index("fuzziness").loc[0.0, "tie_rate"] == pytest.approx(1 / 3)  # s0 = s1 exactly
    assert res.set_index("fuzziness").loc[0.05, "tie_rate"] == pytest.approx(1 / 3)
    r1 = error_rates(x, sizes=[1], n_sets=4000, fuzziness=0.0, seed=3)
    # one-topic sets: pair (s0, s1) is ordered one way by topic 0 and the other by topic 1, so min(gt, lt) is
    # about 4000 / 2; the other two pairs never disagree. Error rate ~ 2000 / (3 pairs x 4000 sets) = 1/6.
    assert r1["error_rate"].iloc[0] == pytest.approx(1 / 6, abs=0.01)


# --------------------------------------------------------------------------------------------------------
# input errors


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: paired_bootstrap(np.ones(5)), "2-D"),
        (lambda: paired_bootstrap(np.ones((1, 5))), "at least 2 systems"),
        (lambda: paired_bootstrap(np.ones((3, 1))), "at least 2 topics"),
        (lambda: paired_bootstrap(np.array([[0.1, np.nan], [0.2, 0.3]])), "finite"),
        (lambda: paired_bootstrap(np.ones((2, 3)), ["a"]), "2 systems"),
        (lambda: paired_bootstrap(np.ones((2, 3)), ["a", "a"]), "unique"),
        (lambda: paired_bootstrap(np.ones((2, 3)), alpha=1.5), "alpha"),
        (lambda: paired_bootstrap(np.ones((2, 3)), n_resamples=0), "positive integer"),
        (lambda: paired_bootstrap(np.ones((2, 3)), indices=np.zeros((4, 10), int)), "shape"),
        (lambda: paired_bootstrap(np.ones((2, 3)), indices=np.full((3, 10), 3)), r"\[0, 3\)"),
        (lambda: discriminative_power(np.ones((2, 3)), methods="anova"), "unknown method"),
        (lambda: discriminative_power({"a": np.ones((2, 3)), "b": np.ones((3, 3))}), "shape"),
        (lambda: discriminative_power(np.ones((2, 3)), ["a", "b"], subset=["c"]), "unknown systems"),
        (lambda: classical_test(np.ones((2, 3)), test="z"), "unknown classical test"),
        (lambda: swap_rates(np.ones((2, 4)), sizes=[3]), "sizes"),
        (lambda: best_systems({"a": np.ones((3, 2))}, ["x", "y", "z"], k=4), "k must be"),
    ],
)
def test_bad_input_raises_input_error(call, match):
    with pytest.raises(InputError, match=match):
        call()


# --------------------------------------------------------------------------------------------------------
# TREC-COVID round 1 (needs ../shared)


@pytest.fixture(scope="module")
def covid_scores():
    from conftest import shared_path

    import meta_eval as me

    data = shared_path("data", "trec-covid-round1")
    col = me.load_collection(qrels=data / "qrels.txt", runs=[data / "runs"])
    return me.score(col, ["AP", "GAP(g=0.5,0.5)", "nDCG"])


@pytest.mark.shared
@pytest.mark.slow
@pytest.mark.parametrize("metric", ["AP", "GAP(g=0.5,0.5)", "nDCG"])
def test_bootstrap_ranks_pairs_like_the_paired_t_test_on_trec_covid(covid_scores, metric):
    """Bootstrap ASLs (B = 1000) against paired t-test p-values over the 10,153 pairs of the 143 runs.

    With B = 1000 an ASL below 1/B reads 0 (40-57% of the pairs here), so ranks are compared where the bootstrap
    resolves them: pairs with p >= 10/B (at least ~10 extreme replicates expected). The floor must agree too:
    every pair with ASL = 0 has p < 0.01, and the verdicts at alpha = 0.05 agree on >= 95% of the pairs.
    """
    s = covid_scores[metric]
    asl = paired_bootstrap(s, n_resamples=1000, seed=0).asl
    p = classical_test(s, test="ttest").asl
    assert asl.size == 10153
    resolved = p >= 10 / 1000
    assert stats.spearmanr(asl[resolved], p[resolved]).statistic >= 0.95
    assert p[asl == 0].max() < 0.01
    assert np.mean((asl < 0.05) == (p < 0.05)) >= 0.95
