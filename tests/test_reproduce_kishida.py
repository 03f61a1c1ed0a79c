"""Kishida (NII-2005-014E): Eq. 9-17 and Tables 1-4 (Table 5's patterns are in test_measures_reference.py).

Published numbers are transcribed here from the report (independently of meta_eval/orchestration/reproduce.py) as printed text;
a value printed with d decimals must be the rounding of the computed one: |computed - printed| <= 0.5 * 10^-d.
"""

from __future__ import annotations

from itertools import product

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meta_eval as me
from meta_eval.statistics.metric_properties import (ap_increment, decompose_judgment_variation, judgment_variation_from_qrels,
                                  kishida_patterns, metric_increment, new_relevant_change, new_relevant_simple,
                                  new_relevant_table, pattern_correlations, pattern_scores, pattern_statistics,
                                  population_judgment_variation, sensitivity_profile, simulate_judgment_variation)
from meta_eval.statistics.metric_properties.patterns import characteristic_patterns


def printed(value: float, text: str) -> bool:
    decimals = len(text.split(".")[1])
    return abs(value - float(text)) <= 0.5 * 10.0**-decimals + 1e-12


def _random_binary(seed: int, n_lists: int = 30, depth: int = 25):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, (n_lists, depth))
    counts = np.stack([np.bincount(x, minlength=2) for x in g]) + rng.integers(0, 4, (n_lists, 2))
    return me.Rankings.from_lists(g.tolist(), counts)


# ----------------------------------------------------------------------------------------- Eq. 9-12


def test_eq10_equals_numerical_increment_of_the_ap_measure():
    r = _random_binary(1)
    closed, numeric = ap_increment(r), metric_increment("AP", r)
    assert np.array_equal(np.isnan(closed), np.isnan(numeric))
    assert np.nanmax(np.abs(closed - numeric)) < 1e-12


def test_eq10_by_hand():
    # x = 1 0 1 0, R = 3: Δv(2) = (1/3)((x_1 + x_2)/2 + x_3/3) = (1/3)(2/2 + 1/3); Δv(4) = (1/3)(3/4)
    d = ap_increment(me.Rankings.from_lists([[1, 0, 1, 0]], [[1, 3]]))[0]
    assert d[1] == pytest.approx((2 / 2 + 1 / 3) / 3)
    assert d[3] == pytest.approx((3 / 4) / 3)
    assert np.isnan(d[0]) and np.isnan(d[2])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 1), min_size=2, max_size=30), st.integers(0, 3))
def test_eq11_monotonicity(grades, extra):
    """Δv(j) > Δv(j+1) whenever ranks j and j+1 both hold non-relevant documents (Eq. 11)."""
    R = sum(grades) + 1 + extra  # room for the new relevant document (R invariant, Eq. 10)
    d = ap_increment(me.Rankings.from_lists([grades], [[len(grades), R]]))[0]
    for j in range(len(grades) - 1):
        if grades[j] == 0 and grades[j + 1] == 0:
            assert d[j] > d[j + 1]


def test_minimum_increment_is_one_over_n():
    N, R = 500, 7
    lst = [1] * (R - 1) + [0] * (N - R + 1)
    assert ap_increment(me.Rankings.from_lists([lst], [[N, R]]))[0, -1] == pytest.approx(1 / N)


def test_r_precision_increment_is_position_independent():
    d = metric_increment("Rprec", me.Rankings.from_lists([[0, 1, 0, 0, 0, 0, 0, 0]], [[5, 3]]))[0]
    assert d[[0, 2]] == pytest.approx([1 / 3, 1 / 3]) and np.all(d[3:] == 0)


def test_metric_increment_options():
    r = me.Rankings.from_lists([[2, 0, me.UNJUDGED, 1, 0]], [[3, 1, 1]])
    d = metric_increment("nDCG", r, grade=2)
    assert np.isnan(d[0, 0]) and np.isnan(d[0, 3]) and np.all(d[0, [1, 2, 4]] > 0)
    assert d[0, 1] > d[0, 2] > d[0, 4]
    # "add": the qrels gain a document of the new grade, so nDCG's ideal list changes too
    added = metric_increment("nDCG", r, grade=2, count="add")
    assert np.all(added[0, [1, 2, 4]] < d[0, [1, 2, 4]])
    with pytest.raises(me.InputError):
        metric_increment("AP", r, count="bogus")
    with pytest.raises(me.InputError):
        metric_increment("AP", r, positions=[9])
    with pytest.raises(me.InputError):
        metric_increment("AP", r, grade=0)


def test_sensitivity_profile_user_metric():
    def top1(rankings):
        return (rankings.grades[..., 0] > 0).astype(float)

    df = sensitivity_profile(["AP", top1], [[0, 0, 0]], [[3, 1]])
    assert df[df.metric == "top1"].delta.tolist() == [1.0, 0.0, 0.0]
    assert df[df.metric == "AP"].delta.tolist() == pytest.approx([1, 1 / 2, 1 / 3])


# ----------------------------------------------------------------------------------------- Table 1, Eq. 15-17

TABLE1 = {  # R -> printed values for v = 0.1, 0.3, 0.5 (j = 101)
    10: ("0.00081", "-0.01737", "-0.03555"),
    50: ("0.00794", "0.00402", "0.00010"),
    100: ("0.00891", "0.00693", "0.00495"),
}


def test_table1():
    table = new_relevant_table(101, (10, 50, 100), (0.1, 0.3, 0.5))
    for R, texts in TABLE1.items():
        for v, text in zip((0.1, 0.3, 0.5), texts):
            assert printed(table.loc[R, v], text), (R, v, table.loc[R, v], text)


def test_eq16_equals_numerical_increment_with_r_plus_one():
    r = _random_binary(2)
    eq16, numeric = new_relevant_change(r), metric_increment("AP", r, count="add")
    assert np.array_equal(np.isnan(eq16), np.isnan(numeric))
    assert np.nanmax(np.abs(eq16 - numeric)) < 1e-12


def test_eq17_on_a_real_list():
    lst = np.zeros(101, dtype=int)
    lst[[0, 4, 10, 30, 60]] = 1  # R = 5, nothing relevant below 101
    r = me.Rankings.from_lists([lst], [[96, 5]])
    v = me.get_measure("AP")(r)[0]
    assert new_relevant_simple(101, 5, v) == pytest.approx(new_relevant_change(r)[0, 100], abs=1e-15)
    assert new_relevant_simple(101, 5, v) == pytest.approx(
        metric_increment("AP", r, positions=[101], count="add")[0, 0], abs=1e-15)
    # the decrease condition v * j > R + 1
    assert (new_relevant_simple(101, 10, 0.3) < 0) == (0.3 * 101 > 11)


def test_eq17_bad_input():
    with pytest.raises(me.InputError):
        new_relevant_simple(0, 10, 0.1)


# ----------------------------------------------------------------------------------------- Table 2, Eq. 18-25

TABLE2 = {  # theta -> (mu, sigma2_mu, sigma2_d, sum, mean V_p) as printed
    0.9: ("0.62396", "0.01660", "0.01314", "0.02974", "0.03006"),
    0.5: ("0.60679", "0.00004", "0.03674", "0.03678", "0.03687"),
}
FIELDS = ("mu", "sigma2_mu", "sigma2_d", "total", "mean_vp")


def test_decomposition_by_hand():
    v = decompose_judgment_variation([[0.2, 0.4], [0.4, 0.6]])  # 2 repetitions x 2 topics
    assert v.mu_h == pytest.approx([0.3, 0.5]) and v.sigma2_h == pytest.approx([0.02, 0.02])
    assert float(v.sigma2_mu) == pytest.approx(0.02) and float(v.mean_vp) == pytest.approx(0.02)
    with pytest.raises(me.InputError):
        decompose_judgment_variation([0.1, 0.2])


def test_population_values_brute_force_small_n():
    """Exact enumeration against a literal double loop for N = 3."""
    theta, N = 0.8, 3
    pop = population_judgment_variation(theta, N)
    mus, variances = [], []
    for pattern in product((theta, 1 - theta), repeat=N):
        values, probs = [], []
        for x in product((0, 1), repeat=N):
            p = np.prod([(1 - pi) if xi else pi for pi, xi in zip(pattern, x)])
            R = sum(x)
            ap = sum(sum(x[: k + 1]) / (k + 1) for k in range(N) if x[k]) / R if R else 0.0
            values.append(ap)
            probs.append(p)
        m = np.dot(probs, values)
        mus.append(m)
        variances.append(np.dot(probs, np.square(values)) - m**2)
    assert pop.mu == pytest.approx(np.mean(mus))
    assert pop.sigma2_mu == pytest.approx(np.var(mus))
    assert pop.sigma2_d == pytest.approx(np.mean(variances))


@pytest.mark.parametrize("theta", [0.9, 0.5])
def test_table2_simulation(theta):
    """Seeded simulation: the identity holds within 3 %, the Monte-Carlo means match the exact expectations,
    and the published row values lie within 3 Monte-Carlo standard deviations of them."""
    sim = simulate_judgment_variation(theta, 50, 10, 1000, seed=7)
    assert abs(float(sim.relative_gap)) < 0.03
    reps = simulate_judgment_variation(theta, 50, 10, 1000, seed=8, replicates=40)
    pop = population_judgment_variation(theta, 10)
    expect = {"mu": pop.mu, "sigma2_mu": pop.sigma2_mu + pop.sigma2_d / 1000, "sigma2_d": pop.sigma2_d,
              "total": pop.total + pop.sigma2_d / 1000, "mean_vp": pop.total}
    for field, text in zip(FIELDS, TABLE2[theta]):
        values = getattr(reps, field)
        sd = values.std(ddof=1)
        assert abs(values.mean() - expect[field]) <= 3 * sd / np.sqrt(len(values)) + 1e-12, field
        assert abs(float(text) - expect[field]) <= 3 * sd + 0.5e-5, (field, text, expect[field], sd)
    assert np.all(np.abs(reps.relative_gap) < 0.03)


def test_table2_published_identity():
    for texts in TABLE2.values():
        total, mean_vp = float(texts[3]), float(texts[4])
        assert abs(total / mean_vp - 1) < 0.03
        assert printed(float(texts[1]) + float(texts[2]), texts[3])  # the printed sum is the sum of the rows


def test_simulation_is_seeded():
    a = simulate_judgment_variation(0.9, 10, 10, 50, seed=3)
    b = simulate_judgment_variation(0.9, 10, 10, 50, seed=3)
    assert np.array_equal(a.mu_h, b.mu_h)
    with pytest.raises(me.InputError):
        simulate_judgment_variation(1.5)


def _perturbed_qrels(seed: int) -> pd.DataFrame:
    path, _ = me.demo_paths()
    q = pd.read_csv(path, sep=r"\s+", header=None, names=["topic", "iteration", "docid", "grade"], dtype=str)
    rng = np.random.default_rng(seed)
    grade = q.grade.astype(int).to_numpy()
    flip = rng.random(len(q)) < 0.2
    q["grade"] = np.where(flip, rng.integers(0, 3, len(q)), grade)
    return q[["topic", "docid", "grade"]]


def test_decomposition_from_real_repeated_judgments():
    _, runs = me.demo_paths()
    qrels = [_perturbed_qrels(s) for s in range(3)]
    result = judgment_variation_from_qrels(qrels, [runs], "AP")
    manual = np.stack([me.score(me.load_collection(q, [runs]), "AP") for q in qrels], axis=1)  # (S, A, T)
    assert result.mu == pytest.approx(manual.mean(axis=(1, 2)))
    assert result.sigma2_d == pytest.approx(manual.var(axis=1, ddof=1).mean(-1))
    assert result.labels["system"] == me.demo_collection().systems
    assert np.all(result.sigma2_d > 0)
    with pytest.raises(me.InputError):
        judgment_variation_from_qrels(qrels[:1], [runs])


# ----------------------------------------------------------------------------------------- Tables 3-5

TABLE3 = {
    "average": {"vS'": ".488", "vD": ".443", "vQ": ".503", "vG": ".410"},
    "std. dev.": {"vS'": ".245", "vD": ".250", "vQ": ".240", "vG": ".228"},
}
TABLE4 = {
    ("vD", "vS'"): "0.969", ("vQ", "vS'"): "0.885", ("vQ", "vD"): "0.840", ("vG", "vS'"): "0.963",
    ("vG", "vD"): "0.940", ("vG", "vQ"): "0.961", ("AP", "vS'"): "0.857", ("AP", "vD"): "0.829",
    ("AP", "vQ"): "0.928", ("AP", "vG"): "0.894",
}
TABLE5_RATIOS = {  # vS', vD, vQ, vG
    "b/a": ("0.358", "0.197", "0.770", "0.415"),
    "c/a": ("0.604", "0.654", "1.125", "0.848"),
    "d/a": ("0.750", "0.686", "0.500", "0.545"),
    "e/d": ("0.200", "0.072", "0.364", "0.200"),
}


def test_136_patterns():
    patterns = kishida_patterns()
    assert patterns.shape == (136, 5)
    labels = ["".join(map(str, p)) for p in patterns]
    assert labels[0] == "32100" and labels[-1] == "00000" and len(set(labels)) == 136
    # brute force: every 0-3 string over 5 positions using each of 3, 2, 1 at most once
    brute = [p for p in product(range(4), repeat=5) if all(p.count(g) <= 1 for g in (1, 2, 3))]
    assert len(brute) == 136


def test_table3():
    stats = pattern_statistics(pattern_scores(include_ap=False))
    for stat, cells in TABLE3.items():
        for m, text in cells.items():
            assert printed(stats.loc[stat, m], text), (stat, m, stats.loc[stat, m])


def test_table4():
    corr = pattern_correlations(pattern_scores())
    for (row, col), text in TABLE4.items():
        assert printed(corr.loc[row, col], text), (row, col, corr.loc[row, col])


def test_table5_ratios_from_unrounded_scores():
    table = characteristic_patterns(pattern_scores(include_ap=False))
    for row, texts in TABLE5_RATIOS.items():
        for m, text in zip(("vS'", "vD", "vQ", "vG"), texts):
            assert printed(table.loc[row, m], text), (row, m, table.loc[row, m])
    # the printed c/a for vQ (1.125) is the ratio of unrounded scores: rounded ones give 1.124
    assert round(0.750 / 0.667, 3) == 1.124


def test_extra_metric_columns():
    scores = pattern_scores(["vQ", "GAP(g=0.2,0.3,0.5)", "nDCG(gain=exp)", lambda r: r.grades[..., 0] * 1.0])
    assert list(scores.columns) == ["vQ", "GAP(g=0.2,0.3,0.5)", "nDCG(gain=exp)", "<lambda>", "AP"]
    assert scores.loc["32100"].iloc[:3].tolist() == pytest.approx([1.0, 1.0, 1.0])
    assert scores.loc["00000"].iloc[:4].tolist() == [0.0, 0.0, 0.0, 0.0]
    assert pattern_correlations(scores).shape == (5, 5)
