"""Tests of meta_eval.statistics.correlation: coefficients against hand-worked examples, published values (ircor),
brute-force enumeration and scipy; the analyses against naive recomputation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats

from meta_eval.statistics.correlation import (
    COEFFICIENTS,
    correlate_systems,
    correlate_topics,
    kendall_tau_b,
    pearson,
    ranking_swaps,
    spearman,
    swap_table,
    tau_ap,
    tau_ap_a,
    tau_ap_b,
)
from meta_eval.statistics.correlation.rank import snap_ties
from meta_eval.core.errors import InputError
from meta_eval.core.resampling import bootstrap_indices

# ----------------------------------------------------------------------------------------------------------------
# Independent reference implementations (loops, written from the papers / ircor's R code)
# ----------------------------------------------------------------------------------------------------------------


def naive_tau_ap(x, y):
    """Yilmaz et al. 2008, Eq. 2, literally: walk down y's ranking; no ties in y."""
    order = sorted(range(len(y)), key=lambda k: -y[k])
    n = len(y)
    total = 0.0
    for pos in range(1, n):  # 0-based position; i = pos + 1
        item = order[pos]
        c = sum(1 for above in order[:pos] if x[above] > x[item])
        total += c / pos
    return 2.0 * total / (n - 1) - 1.0


def ircor_tau_ap_b_ties(x, y):
    """Literal port of ircor's tauAP_b_ties (R) with decreasing=TRUE (negate, then increasing order)."""
    x = -np.asarray(x, float)
    y = -np.asarray(y, float)
    rx = stats.rankdata(x)
    ry = stats.rankdata(y, method="ordinal")
    p = stats.rankdata(y, method="min")
    c_all = 0.0
    not_top = [i for i in range(len(p)) if p[i] != 1]
    for i in not_top:
        c_above = 0
        for j in range(len(p)):
            if p[j] < p[i] and np.sign(rx[i] - rx[j]) == np.sign(ry[i] - ry[j]):
                c_above += 1
        c_all += c_above / (p[i] - 1)
    return 2.0 / len(not_top) * c_all - 1.0


def tie_breakings(y):
    """Every strict ordering of y consistent with its ties, as score vectors (higher = better)."""
    y = np.asarray(y, float)
    groups = [np.flatnonzero(y == v) for v in np.unique(y)]
    for perms in itertools.product(*(itertools.permutations(g) for g in groups)):
        out = np.empty(len(y))
        base = 0
        for g in perms:  # groups in increasing score order; within a group, later = higher
            for k, item in enumerate(g):
                out[item] = base + k
            base += len(g)
        yield out


# ----------------------------------------------------------------------------------------------------------------
# tau_AP: hand-worked examples
# ----------------------------------------------------------------------------------------------------------------


def test_tau_ap_identical_is_one():
    x = [0.9, 0.5, 0.7, 0.1, 0.3]
    assert tau_ap(x, x) == pytest.approx(1.0)
    assert tau_ap_a(x, x) == pytest.approx(1.0)
    assert tau_ap_b(x, x) == pytest.approx(1.0)


@pytest.mark.parametrize("n", [2, 3, 4, 7, 20])
def test_tau_ap_reversed_is_minus_one(n):
    x = np.random.default_rng(n).permutation(n).astype(float)
    assert tau_ap(x, -x) == pytest.approx(-1.0)
    assert tau_ap(-x, x) == pytest.approx(-1.0)
    assert tau_ap_b(x, -x) == pytest.approx(-1.0)


def test_tau_ap_top_weighted_hand_worked():
    # reference a > b > c > d
    x = [4, 3, 2, 1]
    # swap the top two: y = b > a > c > d. Positions of y: i=2 (a): C=0; i=3 (c): 2/2; i=4 (d): 3/3.
    # tau_AP = 2/3 * (0 + 1 + 1) - 1 = 1/3
    assert tau_ap(x, [3, 4, 2, 1]) == pytest.approx(1 / 3)
    # swap the bottom two: y = a > b > d > c: 1/1 + 2/2 + 2/3 = 8/3 -> 2/3 * 8/3 - 1 = 7/9
    assert tau_ap(x, [4, 3, 1, 2]) == pytest.approx(7 / 9)
    # Kendall's tau does not see the difference: one discordant pair of six -> (5 - 1)/6 = 2/3
    assert kendall_tau_b(x, [3, 4, 2, 1]) == pytest.approx(2 / 3)
    assert kendall_tau_b(x, [4, 3, 1, 2]) == pytest.approx(2 / 3)


def test_tau_ap_asymmetry_hand_worked():
    x = [3, 2, 1]  # reference a > b > c
    y = [1, 3, 2]  # evaluated b > c > a
    # tau_AP(y|x): pos 2 (c): b above c in x -> 1/1; pos 3 (a): neither b nor c above a in x -> 0/2.
    # = 2/2 * 1 - 1 = 0
    assert tau_ap(x, y) == pytest.approx(0.0)
    # tau_AP(x|y): walk a > b > c against reference b > c > a: pos 2 (b): a below b in y -> 0/1;
    # pos 3 (c): b above c in y, a not -> 1/2.  = 2/2 * 1/2 - 1 = -1/2
    assert tau_ap(y, x) == pytest.approx(-0.5)
    assert tau_ap(x, y, symmetric=True) == pytest.approx(-0.25)
    assert tau_ap_b(x, y) == pytest.approx(-0.25)
    assert kendall_tau_b(x, y) == pytest.approx(-1 / 3)  # 1 concordant, 2 discordant


# ----------------------------------------------------------------------------------------------------------------
# tau_AP: published values of ircor (Urbano; julian-urbano/ircor tests/testthat/test_tauAP.R, tolerance 5e-5)
# ----------------------------------------------------------------------------------------------------------------

IRCOR = {
    "set1": dict(
        x=[0.897, 0.372, 0.908, 0.898, 0.661, 0.062, 0.177, 0.384, 0.498, 0.992],
        y=[0.82, 0.406, 0.817, 0.953, 0.673, 0.073, 0.364, 0.547, 0.589, 0.988],
        xt=[0.9, 0.4, 0.9, 0.9, 0.7, 0.1, 0.2, 0.4, 0.5, 1],
        yt=[0.8, 0.4, 0.8, 1, 0.7, 0.1, 0.4, 0.5, 0.6, 1],
        tau_ap=0.8519, tau_ap_a_ties=0.7454, tau_ap_b=0.8333, tau_ap_b_ties=0.7321,
    ),
    "set2": dict(
        x=[0.266, 0.573, 0.202, 0.945, 0.629, 0.206, 0.687, 0.77, 0.718, 0.38],
        y=[0.263, 0.843, 0.728, 0.928, 0.08, 0.114, 0.467, 0.641, 0.973, 0.644],
        xt=[0.3, 0.6, 0.2, 0.9, 0.6, 0.2, 0.7, 0.8, 0.7, 0.4],
        yt=[0.3, 0.8, 0.7, 0.9, 0.1, 0.1, 0.5, 0.6, 1, 0.6],
        tau_ap=0.2504, tau_ap_a_ties=0.2692, tau_ap_b=0.2880, tau_ap_b_ties=0.297,
    ),
    "set3": dict(
        x=[0.185, 0.573, 0.944, 0.129, 0.468, 0.553, 0.761, 0.405, 0.976, 0.445],
        y=[0.845, 0.272, 0.275, 0.924, 0.605, 0.334, 0.162, 0.872, 0.018, 0.25],
        xt=[0.2, 0.6, 0.9, 0.1, 0.5, 0.6, 0.8, 0.4, 1, 0.4],
        yt=[0.8, 0.3, 0.3, 0.9, 0.6, 0.3, 0.2, 0.9, 0, 0.2],
        tau_ap=-0.6971, tau_ap_a_ties=-0.5558, tau_ap_b=-0.668, tau_ap_b_ties=-0.7047,
    ),
}


@pytest.mark.parametrize("name", sorted(IRCOR))
def test_tau_ap_against_ircor(name):
    d = IRCOR[name]
    tol = 5e-5
    assert tau_ap(d["x"], d["y"]) == pytest.approx(d["tau_ap"], abs=tol)
    assert tau_ap_a(d["x"], d["y"]) == pytest.approx(d["tau_ap"], abs=tol)  # no ties: tau_AP-a = tau_AP
    assert tau_ap_a(d["x"], d["yt"]) == pytest.approx(d["tau_ap_a_ties"], abs=tol)
    assert tau_ap_b(d["x"], d["y"]) == pytest.approx(d["tau_ap_b"], abs=tol)
    assert tau_ap_b(d["xt"], d["yt"]) == pytest.approx(d["tau_ap_b_ties"], abs=tol)
    assert tau_ap_b(d["yt"], d["xt"]) == pytest.approx(d["tau_ap_b_ties"], abs=tol)


# ----------------------------------------------------------------------------------------------------------------
# tau_AP: brute force and properties
# ----------------------------------------------------------------------------------------------------------------

untied = st.integers(2, 12).flatmap(
    lambda n: st.tuples(st.permutations(list(range(n))), st.permutations(list(range(n))))
)
with_ties = st.integers(2, 7).flatmap(
    lambda n: st.tuples(st.lists(st.integers(0, 3), min_size=n, max_size=n),
                        st.lists(st.integers(0, 3), min_size=n, max_size=n))
)


@settings(max_examples=60, deadline=None)
@given(untied)
def test_tau_ap_matches_paper_formula(xy):
    x, y = (np.asarray(v, float) for v in xy)
    assert tau_ap(x, y) == pytest.approx(naive_tau_ap(x, y), abs=1e-12)
    assert tau_ap_a(x, y) == pytest.approx(naive_tau_ap(x, y), abs=1e-12)
    assert -1 - 1e-12 <= tau_ap(x, y) <= 1 + 1e-12


@settings(max_examples=80, deadline=None)
@given(with_ties)
def test_tau_ap_ties_match_ircor_b_convention(xy):
    x, y = (np.asarray(v, float) for v in xy)
    if np.unique(y).size < 2 or np.unique(x).size < 2:  # a constant reference ranks nothing: undefined, as tau_b
        assert math.isnan(tau_ap(x, y))  # (ircor's formula says -1 there: "reversed", against nothing)
        return
    assert tau_ap(x, y) == pytest.approx(ircor_tau_ap_b_ties(x, y), abs=1e-12)
    if np.unique(x).size >= 2:
        expected_b = (ircor_tau_ap_b_ties(x, y) + ircor_tau_ap_b_ties(y, x)) / 2
        assert tau_ap_b(x, y) == pytest.approx(expected_b, abs=1e-12)
        assert tau_ap_b(x, y) == pytest.approx(tau_ap_b(y, x), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(with_ties)
def test_tau_ap_a_is_expectation_over_tie_breaking(xy):
    # exact enumeration of every tie-breaking of y (ties in x allowed too: tied-in-x pairs never concordant)
    x, y = (np.asarray(v, float) for v in xy)
    if (x == x[0]).all():  # a constant reference ranks nothing: undefined (NaN), like tau_b (issue 15)
        assert np.isnan(tau_ap_a(x, y))
        return
    values = [naive_tau_ap(x, yy) for yy in tie_breakings(y)]
    assert tau_ap_a(x, y) == pytest.approx(np.mean(values), abs=1e-12)


def test_tau_ap_vectorised_over_leading_axes():
    rng = np.random.default_rng(3)
    x = rng.random((4, 3, 9))
    y = rng.random((4, 3, 9))
    for f in (tau_ap, tau_ap_a, tau_ap_b, kendall_tau_b, spearman, pearson):
        batch = f(x, y)
        assert batch.shape == (4, 3)
        assert batch[2, 1] == pytest.approx(f(x[2, 1], y[2, 1]), abs=1e-12)


# ----------------------------------------------------------------------------------------------------------------
# Kendall, Spearman, Pearson against scipy
# ----------------------------------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 15).flatmap(lambda n: st.tuples(
    arrays(np.float64, n, elements=st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.7, 1.0])),
    arrays(np.float64, n, elements=st.floats(-10, 10, allow_nan=False).map(lambda v: round(v, 9))))))
def test_classical_coefficients_match_scipy(xy):
    # distinct values 1e-9 apart or more: closer ones are one tie by design (snap_ties), where scipy orders them
    x, y = xy
    constant = np.ptp(x) == 0 or np.ptp(y) == 0
    if constant:
        for f in (kendall_tau_b, spearman, pearson):
            assert math.isnan(f(x, y))
        return
    assert kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y).statistic, abs=1e-12)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-9)


def test_pearson_of_subnormal_values_does_not_underflow():
    # hypothesis found it: the squares of y's centred values underflowed to 0 and r was NaN (scipy: -1)
    assert pearson([0.0, 0.1], [2.2e-313, 0.0]) == pytest.approx(stats.pearsonr([0.0, 0.1], [1.0, 0.0]).statistic)


def test_means_equal_up_to_rounding_are_one_tie():
    # two systems with the same multiset of per-topic scores: their means, summed in another order (another CPU,
    # another BLAS kernel), may differ in the last bit; the rankings and every coefficient must not see it
    rng = np.random.default_rng(1)
    a = rng.random(7)
    x = np.array([a.sum() / 7, a[::-1].sum() / 7, 0.9, 0.1])
    y = np.array([0.3, 0.31, 0.8, 0.2])
    exact, above = x.copy(), x.copy()
    exact[1] = exact[0]
    above[1] = np.nextafter(exact[0], 2)  # one unit in the last place above its twin
    for f in (kendall_tau_b, tau_ap, tau_ap_b, tau_ap_a, spearman):
        assert f(exact, y) == f(x, y) == f(above, y) and f(y, exact) == f(y, above), f.__name__
    assert snap_ties(np.array([1.0, 1.0 + 1e-13, 2.0]))[1] == 1.0
    assert snap_ties(np.array([1.0, 1.0 + 1e-9, 2.0]))[1] == 1.0 + 1e-9  # a real difference stays


@pytest.mark.parametrize("bad", [
    ([1, 2, 3], [1, 2]),
    ([1, np.nan, 3], [1, 2, 3]),
    ([1], [2]),
    (1.0, 2.0),
])
def test_coefficients_reject_bad_input(bad):
    for f in (tau_ap, tau_ap_a, kendall_tau_b, spearman, pearson):
        with pytest.raises(InputError):
            f(*bad)


# ----------------------------------------------------------------------------------------------------------------
# correlate_systems
# ----------------------------------------------------------------------------------------------------------------


def synthetic_scores(n_systems=12, n_topics=15, seed=0):
    rng = np.random.default_rng(seed)
    quality = rng.random((n_systems, 1))
    a = np.clip(quality + rng.normal(0, 0.25, (n_systems, n_topics)), 0, 1)
    b = np.clip(a + rng.normal(0, 0.15, a.shape), 0, 1)
    c = np.round(np.clip(quality + rng.normal(0, 0.3, a.shape), 0, 1) * 5) / 5  # P@5-like, many ties
    return {"A": a, "B": b, "C": c}


SCIPY = {
    "kendall_tau_b": lambda x, y: stats.kendalltau(x, y).statistic,
    "spearman": lambda x, y: stats.spearmanr(x, y).statistic,
    "pearson": lambda x, y: stats.pearsonr(x, y).statistic,
    "tau_ap(y|x)": ircor_tau_ap_b_ties,
    "tau_ap(x|y)": lambda x, y: ircor_tau_ap_b_ties(y, x),
    "tau_ap_sym": lambda x, y: (ircor_tau_ap_b_ties(x, y) + ircor_tau_ap_b_ties(y, x)) / 2,
    "tau_ap_a(y|x)": lambda x, y: np.mean([naive_tau_ap(x, yy) for yy in tie_breakings(y)]),
    "tau_ap_a(x|y)": lambda x, y: np.mean([naive_tau_ap(y, xx) for xx in tie_breakings(x)]),
}


def test_correlate_systems_point_values_against_references():
    scores = synthetic_scores(n_systems=7, n_topics=10)
    res = correlate_systems(scores, n_resamples=0)
    assert set(res.table.coefficient) == set(COEFFICIENTS)
    assert len(res.table) == 3 * len(COEFFICIENTS)
    assert res.table[["ci_low", "ci_high"]].isna().all().all()
    for row in res.table.itertuples():
        x = np.round(scores[row.metric_x].mean(axis=1), 12)
        y = np.round(scores[row.metric_y].mean(axis=1), 12)
        assert row.value == pytest.approx(SCIPY[row.coefficient](x, y), abs=1e-10), row


def test_correlate_systems_bootstrap_matches_naive_loop():
    scores = synthetic_scores(n_systems=9, n_topics=12)
    n_res, seed = 40, 7
    res = correlate_systems(scores, n_resamples=n_res, seed=seed, confidence=0.9)
    idx = bootstrap_indices(12, n_res, seed)
    table = res.table
    for coefficient in ("kendall_tau_b", "tau_ap(y|x)", "tau_ap_a(x|y)", "pearson"):
        row = table[(table.metric_x == "A") & (table.metric_y == "C") & (table.coefficient == coefficient)].index[0]
        naive = []
        for b in range(n_res):
            x = np.round(scores["A"][:, idx[:, b]].mean(axis=1), 12)
            y = np.round(scores["C"][:, idx[:, b]].mean(axis=1), 12)
            naive.append(SCIPY[coefficient](x, y))
        np.testing.assert_allclose(res.replicates[row], naive, atol=1e-10)
        lo, hi = np.quantile(naive, [0.05, 0.95])
        assert table.loc[row, "ci_low"] == pytest.approx(lo, abs=1e-10)
        assert table.loc[row, "ci_high"] == pytest.approx(hi, abs=1e-10)
        assert table.loc[row, "se"] == pytest.approx(np.std(naive, ddof=1), abs=1e-10)


def test_correlate_systems_basic_interval_and_bias():
    scores = synthetic_scores()
    pct = correlate_systems(scores, n_resamples=50, seed=3)
    basic = correlate_systems(scores, n_resamples=50, seed=3, ci_method="basic")
    np.testing.assert_allclose(basic.table.ci_low, np.maximum(-1, 2 * pct.table.value - pct.table.ci_high))
    np.testing.assert_allclose(basic.table.ci_high, np.minimum(1, 2 * pct.table.value - pct.table.ci_low))
    np.testing.assert_allclose(pct.table.bias, pct.replicates.mean(axis=1) - pct.table.value)
    with pytest.raises(InputError):
        correlate_systems(scores, ci_method="studentized")


def test_correlate_systems_is_seeded():
    scores = synthetic_scores()
    a = correlate_systems(scores, n_resamples=30, seed=1).table
    b = correlate_systems(scores, n_resamples=30, seed=1).table
    c = correlate_systems(scores, n_resamples=30, seed=2).table
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a.ci_low, c.ci_low)


def test_correlate_systems_matrix_orientation():
    scores = synthetic_scores()
    res = correlate_systems(scores, ["s%d" % i for i in range(12)], n_resamples=0)
    mat = res.matrix("tau_ap")
    means = {k: v.mean(axis=1) for k, v in scores.items()}
    for r, c in itertools.permutations("ABC", 2):  # row = reference
        assert mat.loc[r, c] == pytest.approx(tau_ap(means[r], means[c]), abs=1e-12)
    kt = res.matrix("kendall_tau_b")
    np.testing.assert_allclose(kt.to_numpy(), kt.to_numpy().T)
    assert np.allclose(np.diag(kt), 1.0)
    assert list(res.means.index) == ["s%d" % i for i in range(12)]
    with pytest.raises(InputError):
        res.matrix("kendal")


def test_correlate_systems_rounding_keeps_exact_ties():
    # equal means whose float sums differ in the last bit: (0.1 + 0.2) + 0.3 != (0.3 + 0.2) + 0.1
    a = np.array([[0.1, 0.2, 0.3], [0.3, 0.2, 0.1], [0.5, 0.5, 0.5], [0.0, 0.1, 0.0]])
    b = np.array([[0.3, 0.3, 0.3], [0.1, 0.1, 0.1], [0.9, 0.9, 0.9], [0.0, 0.0, 0.0]])
    assert a[0].mean() != a[1].mean()
    res = correlate_systems({"a": a, "b": b}, n_resamples=0)
    value = res.table.set_index("coefficient").loc["kendall_tau_b", "value"]
    exact = stats.kendalltau([0.2, 0.2, 0.5, 1 / 30], [0.3, 0.1, 0.9, 0.0]).statistic
    assert value == pytest.approx(exact)


@pytest.mark.parametrize("kwargs", [
    dict(scores={"A": np.ones((4, 3))}),
    dict(scores={"A": np.ones((4, 3)), "B": np.ones((4, 2))}),
    dict(scores={"A": np.ones((4, 3)), "B": np.full((4, 3), np.nan)}),
    dict(scores={"A": np.ones((4, 3)), "B": np.ones((4, 3))}, systems=["a", "b"]),
    dict(scores={"A": np.ones((4, 3)), "B": np.ones((4, 3))}, confidence=1.5),
    dict(scores={"A": np.ones((4, 3)), "B": np.ones((4, 3))}, n_resamples=-1),
    dict(scores=[np.ones((4, 3))]),
])
def test_correlate_systems_rejects_bad_input(kwargs):
    with pytest.raises(InputError):
        correlate_systems(**kwargs)


# ----------------------------------------------------------------------------------------------------------------
# correlate_topics (Kishida Table 4 style)
# ----------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_correlate_topics_against_scipy(method):
    scores = synthetic_scores(n_systems=8, n_topics=6)
    scores["C"][:, 2] = 0.4  # constant on topic 2: undefined there
    ref = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}[method]
    res = correlate_topics(scores, [f"t{i}" for i in range(6)], method=method)
    for x, y in itertools.combinations("ABC", 2):
        pooled = ref(scores[x].ravel(), scores[y].ravel()).statistic
        assert res.pooled.loc[x, y] == pytest.approx(pooled, abs=1e-10)
        assert res.pooled.loc[y, x] == pytest.approx(pooled, abs=1e-10)
        per = [ref(scores[x][:, t], scores[y][:, t]).statistic for t in range(6) if "C" not in (x, y) or t != 2]
        assert res.mean.loc[x, y] == pytest.approx(np.mean(per), abs=1e-10)
        assert res.n_topics.loc[x, y] == len(per)
    assert res.n_topics.loc["C", "C"] == 5
    assert math.isnan(res.per_topic[2, 2, 0])
    frame = res.to_frame()
    assert list(frame.columns) == ["metric_x", "metric_y", "method", "pooled", "mean", "n_topics"]
    assert len(frame) == 3


def test_correlate_topics_rejects_unknown_method():
    with pytest.raises(InputError):
        correlate_topics(synthetic_scores(), method="kendal")


# ----------------------------------------------------------------------------------------------------------------
# Swaps and their significance
# ----------------------------------------------------------------------------------------------------------------


def paired_t_pvalues(scores):
    """(S, S) two-sided paired t-test p-values by scipy (diagonal NaN)."""
    with np.errstate(invalid="ignore"):
        p = stats.ttest_rel(scores[:, None, :], scores[None, :, :], axis=-1).pvalue
    np.fill_diagonal(p, np.nan)
    return p


def test_swaps_hand_worked():
    x = [0.3, 0.2, 0.1, 0.2]  # systems s0..s3
    y = [0.1, 0.2, 0.3, 0.5]
    # pairs: (0,1) swap, (0,2) swap, (0,3) swap, (1,2) swap, (1,3) tie in x, (2,3) concordant (x: s3 > s2, y: s3 > s2)
    res = ranking_swaps(x, y, systems=["s0", "s1", "s2", "s3"], names=("X", "Y"))
    assert (res.n_pairs, res.n_swaps, res.n_tied, res.n_concordant) == (6, 4, 1, 1)
    assert res.n_swaps_significant_x is None
    assert list(zip(res.pairs.system_a, res.pairs.system_b)) == [("s0", "s1"), ("s0", "s2"), ("s0", "s3"),
                                                                  ("s1", "s2")]
    assert res.swap_rate == pytest.approx(4 / 6)
    p = np.full((4, 4), 0.5)
    p[0, 1] = p[1, 0] = 0.01
    p[2, 3] = 0.001  # significant but not swapped
    res = ranking_swaps(x, y, p_x=p, p_y=np.full((4, 4), 0.2), alpha=0.05)
    assert (res.n_significant_x, res.n_swaps_significant_x, res.n_swaps_significant_y,
            res.n_swaps_significant_both) == (2, 1, 0, 0)


def test_swaps_with_t_test_against_loop_and_kendall():
    scores = synthetic_scores(n_systems=15, n_topics=20, seed=4)
    a, b = scores["A"], scores["B"] * 0.7 + 0.3 * scores["C"]
    pa, pb = paired_t_pvalues(a), paired_t_pvalues(b)
    res = ranking_swaps(a, b, p_x=pa, p_y=pb, alpha=0.05)
    ma, mb = a.mean(axis=1), b.mean(axis=1)
    swaps = sig_a = sig_b = both = 0
    for i, j in itertools.combinations(range(15), 2):
        if (ma[i] - ma[j]) * (mb[i] - mb[j]) < 0:
            swaps += 1
            sig_a += stats.ttest_rel(a[i], a[j]).pvalue < 0.05
            sig_b += stats.ttest_rel(b[i], b[j]).pvalue < 0.05
            both += (stats.ttest_rel(a[i], a[j]).pvalue < 0.05) and (stats.ttest_rel(b[i], b[j]).pvalue < 0.05)
    assert (res.n_swaps, res.n_swaps_significant_x, res.n_swaps_significant_y,
            res.n_swaps_significant_both) == (swaps, sig_a, sig_b, both)
    assert res.n_tied == 0
    iu = np.triu_indices(15, 1)  # condensed p-values (pairs a < b, row-major) give the same counts
    condensed = ranking_swaps(a, b, p_x=pa[iu], p_y=pb[iu], alpha=0.05)
    assert condensed.as_row() == res.as_row()
    # without ties: discordant pairs D = n0 (1 - tau) / 2
    assert res.n_swaps == pytest.approx(105 * (1 - stats.kendalltau(ma, mb).statistic) / 2)


def test_swap_table_and_validation():
    scores = synthetic_scores(n_systems=6, n_topics=5)
    table = swap_table(scores, {"A": paired_t_pvalues(scores["A"])})
    assert list(zip(table.metric_x, table.metric_y)) == [("A", "B"), ("A", "C"), ("B", "C")]
    assert table.loc[0, "n_significant_x"] is not None and table.loc[0, "n_significant_y"] is None
    assert (table.n_concordant + table.n_swaps + table.n_tied == 15).all()
    with pytest.raises(InputError):
        swap_table(scores, {"Z": np.zeros((6, 6))})
    with pytest.raises(InputError):
        ranking_swaps(scores["A"], scores["B"], p_x=np.zeros((5, 5)))
    with pytest.raises(InputError):
        ranking_swaps(scores["A"], scores["B"], p_x=np.full((6, 6), 2.0))
    with pytest.raises(InputError):
        ranking_swaps(scores["A"], scores["B"][:5])


# ----------------------------------------------------------------------------------------------------------------
# Figures
# ----------------------------------------------------------------------------------------------------------------


def test_kishida_table4_correlation_matrix():
    """Kishida (2005), Table 4: Pearson correlations of v_S', v_D, v_Q, v_G and AP over the 136 output patterns of
    five documents for a query with three relevant documents of grades 3, 2, 1 (end to end with the core measures)."""
    import meta_eval as me

    patterns = set()
    for k in range(4):
        for grades in itertools.permutations([3, 2, 1], k):
            for positions in itertools.permutations(range(5), k):
                g = [0] * 5
                for grade, pos in zip(grades, positions):
                    g[pos] = grade
                patterns.add(tuple(g))
    assert len(patterns) == 136
    rankings = me.Rankings.from_lists([list(p) for p in sorted(patterns)], counts=[[10, 1, 1, 1]] * 136)
    names = {"vS'": "MSR", "vD": "ANDCG", "vQ": "Q", "vG": "GenAP", "AP": "AP"}
    scores = {k: np.asarray(me.get_measure(m)(rankings)).reshape(136, 1) for k, m in names.items()}
    table4 = pd.DataFrame(
        [[1.000, 0.969, 0.885, 0.963, 0.857],
         [0.969, 1.000, 0.840, 0.940, 0.829],
         [0.885, 0.840, 1.000, 0.961, 0.928],
         [0.963, 0.940, 0.961, 1.000, 0.894],
         [0.857, 0.829, 0.928, 0.894, 1.000]], index=list(names), columns=list(names))
    res = correlate_topics(scores, method="pearson")
    np.testing.assert_allclose(res.pooled.to_numpy(), table4.to_numpy(), atol=5e-4 + 1e-12)


@pytest.mark.shared
@pytest.mark.slow
def test_trec_covid_system_correlations_against_references(shared_dir):
    """TREC-COVID round 1 (143 runs x 30 topics): real ties (P@10 means) against scipy and the ircor-style loops."""
    import meta_eval as me

    data = shared_dir / "data" / "trec-covid-round1"
    col = me.load_collection(data / "qrels.txt", [data / "runs"])
    scores = {m: me.score(col, m) for m in ("AP", "P@10")}
    res = correlate_systems(scores, col.systems, n_resamples=0)
    x, y = (np.round(scores[m].mean(axis=1), 12) for m in ("AP", "P@10"))
    assert np.unique(y).size < y.size  # the test exercises ties
    values = res.table.set_index("coefficient").value
    for coefficient in ("kendall_tau_b", "spearman", "pearson", "tau_ap(y|x)", "tau_ap(x|y)", "tau_ap_sym"):
        assert values[coefficient] == pytest.approx(SCIPY[coefficient](x, y), abs=1e-10), coefficient
