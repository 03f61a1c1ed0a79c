"""Score-only meta-evaluation analyses against independent references: standardisation (hand-worked values and
scipy's normal CDF), two-way ANOVA (statsmodels' ``anova_lm``), Sakai's topic-set-size design (statsmodels' power
solvers for the exact designs, Sakai's published formulas evaluated by hand for his approximation) and
intuitiveness (a hand-worked example and a plain loop over topics and system pairs)."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

import meta_eval as me
from meta_eval.core.errors import InputError
from meta_eval.statistics.anova import two_way_anova
from meta_eval.statistics.intuitiveness import intuitiveness
from meta_eval.statistics.standardise import fit_standardisation, standardise, standardise_all
from meta_eval.statistics.topic_set_size import anova_topics, sakai_initial_n, topic_set_size, ttest_power, ttest_topics


@pytest.fixture(scope="module")
def demo_scores():
    col = me.demo_collection()
    return me.score(col, ["AP", "nDCG@10", "P@10"]), list(col.systems)


# --------------------------------------------------------------------------------------------- standardisation


def test_z_scores_by_hand():
    x = np.array([[0.2, 0.9, 0.5], [0.4, 0.5, 0.5], [0.9, 0.1, 0.5]])
    z, ref = standardise(x)
    mean = x.mean(0)
    sd = np.sqrt(((x - mean) ** 2).sum(0) / 2)  # sample s.d. over the three systems
    assert np.allclose(ref.mean, mean) and np.allclose(ref.sd, sd)
    assert np.allclose(z[:, :2], (x[:, :2] - mean[:2]) / sd[:2])
    assert ref.constant_topics.tolist() == [2] and np.all(z[:, 2] == 0)  # every system equal: no information
    cdf, _ = standardise(x, "cdf")
    assert np.allclose(cdf, [[NormalDist().cdf(v) for v in row] for row in z])


def test_new_runs_use_the_reference():
    rng = np.random.default_rng(3)
    ref_runs, new_runs = rng.random((8, 5)), rng.random((3, 5))
    ref = fit_standardisation(ref_runs)
    out = ref(new_runs)
    assert np.allclose(out, (new_runs - ref_runs.mean(0)) / ref_runs.std(0, ddof=1))
    assert ref.to_frame().columns.tolist() == ["topic", "mean", "sd"]
    stacked = fit_standardisation(np.stack([ref_runs, ref_runs * 2]))  # leading axes: independent references
    assert np.allclose(stacked(np.stack([new_runs, new_runs * 2])), np.stack([out, out]))


def test_standardisation_skips_missing_scores_and_checks_input():
    x = np.array([[0.1, np.nan], [0.3, 0.2], [0.5, 0.4]])
    z, ref = standardise(x)
    assert np.isnan(z[0, 1]) and np.isclose(ref.mean[1], 0.3)
    assert standardise_all({"a": x}, None)["a"] is x
    with pytest.raises(InputError, match="standardise must be one of"):
        standardise(x, "rank")
    with pytest.raises(InputError, match="scored systems"):
        standardise([[0.1, 0.2]])
    with pytest.raises(InputError, match="topics"):
        ref(np.zeros((2, 3)))


# --------------------------------------------------------------------------------------------- ANOVA


def _statsmodels_anova(x: np.ndarray) -> pd.DataFrame:
    import statsmodels.api as sm
    from statsmodels.formula.api import ols

    s, t = np.indices(x.shape)
    data = pd.DataFrame({"score": x.ravel(), "system": s.ravel(), "topic": t.ravel()})
    return sm.stats.anova_lm(ols("score ~ C(system) + C(topic)", data=data).fit(), typ=2)


def test_anova_matches_statsmodels(demo_scores):
    scores, systems = demo_scores
    res = two_way_anova(scores, systems)
    assert list(res.table.columns) == ["metric", "effect", "df", "sum_sq", "F", "p_value", "omega_sq"]
    n_obs = scores["AP"].size
    for metric, x in scores.items():
        ref = _statsmodels_anova(x)
        rows = res.table[res.table["metric"] == metric].set_index("effect")
        for ours, theirs in (("system", "C(system)"), ("topic", "C(topic)"), ("residual", "Residual")):
            assert rows.loc[ours, "df"] == ref.loc[theirs, "df"]
            assert rows.loc[ours, "sum_sq"] == pytest.approx(ref.loc[theirs, "sum_sq"], rel=1e-9)
        for ours, theirs in (("system", "C(system)"), ("topic", "C(topic)")):
            f, df = ref.loc[theirs, "F"], ref.loc[theirs, "df"]
            assert rows.loc[ours, "F"] == pytest.approx(f, rel=1e-9)
            assert rows.loc[ours, "p_value"] == pytest.approx(ref.loc[theirs, "PR(>F)"], rel=1e-6, abs=1e-300)
            # partial ω² (Olejnik & Algina 2003) from statsmodels' F
            assert rows.loc[ours, "omega_sq"] == pytest.approx(df * (f - 1) / (df * (f - 1) + n_obs), rel=1e-9)
        assert res.residual_variance[metric] == pytest.approx(ref.loc["Residual", "sum_sq"] / ref.loc["Residual", "df"])


def test_anova_one_way_variance_and_pair_effect_sizes():
    rng = np.random.default_rng(0)
    x = rng.random((4, 6)) + np.arange(4)[:, None] * 0.1
    res = two_way_anova({"m": x})
    within = ((x - x.mean(1, keepdims=True)) ** 2).sum() / (4 * 5)
    assert res.one_way_variance["m"] == pytest.approx(within)
    pairs = res.pairs()
    assert len(pairs) == 6
    row = pairs.iloc[0]  # s0 vs s1
    d = x[0] - x[1]
    assert row["difference"] == pytest.approx(d.mean())
    assert row["effect_size"] == pytest.approx(d.mean() / math.sqrt(res.residual_variance["m"]))
    assert row["d_z"] == pytest.approx(d.mean() / d.std(ddof=1))


def test_anova_refuses_incomplete_matrices():
    with pytest.raises(InputError, match="not finite"):
        two_way_anova({"AP": [[0.1, np.nan], [0.2, 0.3]]})
    with pytest.raises(InputError, match="at least 2 systems"):
        two_way_anova([[0.1, 0.2]])


# --------------------------------------------------------------------------------------------- topic-set size


@pytest.mark.parametrize("min_d,variance", [(0.05, 0.02), (0.1, 0.05), (0.2, 0.08), (0.02, 0.01)])
def test_exact_ttest_design_matches_statsmodels(min_d, variance):
    from statsmodels.stats.power import TTestPower

    effect = min_d / math.sqrt(2 * variance)  # Sakai: σ_t² = 2σ²
    n_real = TTestPower().solve_power(effect_size=effect, alpha=0.05, power=0.8, alternative="two-sided")
    assert int(ttest_topics(min_d, variance)) == math.ceil(n_real)


@pytest.mark.parametrize("m,min_d,variance", [(2, 0.1, 0.05), (10, 0.1, 0.05), (5, 0.05, 0.02), (20, 0.15, 0.04)])
def test_exact_anova_design_matches_statsmodels(m, min_d, variance):
    from statsmodels.stats.power import FTestAnovaPower

    # worst case: two systems minD apart, the others at their mean -> Cohen's f² = minD² / (2 m σ²)
    f = math.sqrt(min_d**2 / (2 * m * variance))
    n_total = FTestAnovaPower().solve_power(effect_size=f, alpha=0.05, power=0.8, k_groups=m)
    assert int(anova_topics(min_d, variance, m)) == math.ceil(n_total / m)


def _sakai_power_by_hand(n: int, min_d: float, variance: float, alpha: float = 0.05) -> float:
    """Sakai's (IRJ 2016, after Nagata) normal approximation of the paired t-test's power, written out."""
    from scipy import stats

    phi, delta = n - 1, min_d / math.sqrt(2 * variance)
    lam, w = math.sqrt(n) * delta, stats.t.isf(alpha / 2, phi)
    scale = math.sqrt(1 + w * w / (2 * phi))
    u = NormalDist()
    return (1 - u.cdf((w - lam) / scale)) + u.cdf((-w - lam) / scale)


@pytest.mark.parametrize("min_d,variance", [(0.05, 0.02), (0.1, 0.05), (0.2, 0.08)])
def test_sakai_approximation_by_hand(min_d, variance):
    n = int(ttest_topics(min_d, variance, method="sakai"))
    assert _sakai_power_by_hand(n, min_d, variance) >= 0.8 > _sakai_power_by_hand(n - 1, min_d, variance)
    assert ttest_power(n, min_d, variance, method="sakai") == pytest.approx(_sakai_power_by_hand(n, min_d, variance))
    z = NormalDist().inv_cdf
    delta = min_d / math.sqrt(2 * variance)
    start = ((z(0.975) + z(0.8)) / delta) ** 2 + z(0.975) ** 2 / 2
    assert sakai_initial_n(min_d, variance) == pytest.approx(start)
    assert abs(n - math.ceil(start)) <= 1  # his closed form is already within a topic
    assert abs(n - int(ttest_topics(min_d, variance))) <= 1  # and so is the approximation of the exact power


def test_topic_set_size_table(demo_scores):
    scores, systems = demo_scores
    var = two_way_anova(scores, systems).residual_variance
    res = topic_set_size(var, min_d=[0.05, 0.1, 0.2], n_systems=[2, 5])
    t = res.table
    assert set(t["design"]) == {"ttest", "anova"} and len(t) == 3 * 3 * 3
    assert (t["power"] >= 0.8).all()
    for (_, _, _), grp in t.groupby(["metric", "design", "n_systems"]):
        assert np.all(np.diff(grp.sort_values("min_d")["n_topics"]) <= 0)  # larger differences need fewer topics
    ap = t[(t["metric"] == "AP") & (t["design"] == "ttest")]
    assert ap["n_topics"].tolist() == ttest_topics([0.05, 0.1, 0.2], var["AP"]).tolist()
    assert res.at(0.1)["AP"] == ttest_topics(0.1, var["AP"])
    with pytest.raises(InputError, match="min_d"):
        ttest_topics(0.0, 0.1)
    with pytest.raises(InputError, match="design"):
        topic_set_size(var, designs=["ci"])


# --------------------------------------------------------------------------------------------- intuitiveness


def test_intuitiveness_hand_worked():
    # one topic, three systems. X: a > b > c; Y: c > b > a; gold: a > c > b (b, c tied would not count).
    x = {"X": [[3.0], [2.0], [1.0]], "Y": [[1.0], [2.0], [3.0]]}
    gold = [[5.0], [1.0], [2.0]]
    row = intuitiveness(x, gold).table.iloc[0]
    # disagreements on every pair: (a,b) gold a: X; (a,c) gold a: X; (b,c) gold c: Y
    assert row["disagreements"] == 3 and row["agree_x"] == 2 and row["agree_y"] == 1
    assert row["intuitiveness_x"] == pytest.approx(2 / 3) and row["intuitiveness_y"] == pytest.approx(1 / 3)


def test_intuitiveness_matches_a_plain_loop():
    rng = np.random.default_rng(7)
    scores = {m: np.round(rng.random((6, 4)), 1) for m in ("A", "B", "C")}  # rounding makes ties
    gold = np.round(rng.random((6, 4)) * 3)
    res = intuitiveness(scores, gold, gold_name="P@3")
    sign = np.sign
    for r in res.table.itertuples():
        x, y = scores[r.metric_x], scores[r.metric_y]
        n = ax = ay = ties = 0
        for t in range(4):
            for a in range(6):
                for b in range(a + 1, 6):
                    sx, sy, sg = sign(x[a, t] - x[b, t]), sign(y[a, t] - y[b, t]), sign(gold[a, t] - gold[b, t])
                    if sx * sy < 0:
                        n += 1
                        ax += sg == sx
                        ay += sg == sy
                        ties += sg == 0
        assert (r.disagreements, r.agree_x, r.agree_y, r.gold_ties) == (n, ax, ay, ties)
    m = res.matrix()
    assert m.loc["A", "B"] == res.table.iloc[0]["intuitiveness_x"] and np.isnan(m.loc["A", "A"])
    with pytest.raises(InputError, match="shape"):
        intuitiveness(scores, gold[:2])
