"""Error rates of significance tests (:mod:`meta_eval.statistics.significance.error_rates`, the ``error-rates`` analysis).

Every p-value against an independent reference: scipy, statsmodels, plain implementations of R's algorithms written
here, and R's own printed outputs for its textbook examples. Every rate against what theory says on synthetic
collections where it is known: the level of each test under an exact null (within the rate's binomial interval),
the t-test's power and Type III rate (noncentral t), the sign test's power (an exact binomial sum over the
population), and the identities and bounds of the multiple-comparison procedures.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import meta_eval as me
from meta_eval.analyses import AnalysisData, get_analysis
from meta_eval.statistics.significance import paired_bootstrap, pair_indices, tukey_hsd
from meta_eval.statistics.significance import error_rates as se
from meta_eval.statistics.significance.error_rates import significance_error_rates, wilson_interval
from meta_eval.core.errors import InputError

ALPHA = 0.05


def pvalues(rows: np.ndarray, tests=se.TESTS, n_resamples: int = 1000, seed: int = 0) -> dict[str, np.ndarray]:
    """The engine's p-values of rows of differences (one trial)."""
    design = se._Design.draw(np.random.default_rng(seed), 1, rows.shape[1], n_resamples, tests)
    return {t: p[0] for t, p in se._pvalues(rows[None], tests, design).items()}


# --------------------------------------------------------------------------------------------- R's algorithms


def r_wilcox(d: np.ndarray) -> float:
    """R's ``wilcox.test(x, y, paired=TRUE, exact=FALSE, correct=TRUE)`` on d = x - y, as R computes it: zeros
    dropped, average ranks of |d|, V = sum of the positive ranks, z = (V - n(n+1)/4 - sign·1/2) / σ with
    σ² = n(n+1)(2n+1)/24 - Σ(t³ - t)/48 over tied groups, p = 2 min(Φ(z), 1 - Φ(z))."""
    d = d[d != 0]
    n = d.size
    magnitude = np.abs(d)
    ranks = np.empty(n)
    for i in range(n):  # average rank: 1 + #smaller + (#equal - 1) / 2
        ranks[i] = 1 + np.sum(magnitude < magnitude[i]) + (np.sum(magnitude == magnitude[i]) - 1) / 2
    v = ranks[d > 0].sum()
    _, ties = np.unique(magnitude, return_counts=True)
    sigma = math.sqrt(n * (n + 1) * (2 * n + 1) / 24 - np.sum(ties**3 - ties) / 48)
    z = v - n * (n + 1) / 4
    z = (z - np.sign(z) * 0.5) / sigma
    return 2 * min(stats.norm.cdf(z), stats.norm.sf(z))


def r_binom(positive: int, n: int) -> float:
    """R's ``binom.test(positive, n)`` (p = 1/2): min(1, 2 P(X <= min(k, n - k)))."""
    k = min(positive, n - positive)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)


def test_p_values_of_r_textbook_examples():
    """R's sleep data (Cushny & Peebles, R's ``?t.test``): ``t.test(extra ~ group, data = sleep, paired = TRUE)``
    prints p-value = 0.002833, ``wilcox.test(..., paired = TRUE)`` (ties and a zero: the normal approximation with
    continuity correction) p-value = 0.009091; ``binom.test(2, 10)`` prints p-value = 0.1094."""
    group1 = np.array([0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0])
    group2 = np.array([1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4])
    p = pvalues((group1 - group2)[None], ("ttest", "wilcoxon"))
    assert round(float(p["ttest"][0]), 6) == 0.002833
    assert round(float(p["wilcoxon"][0]), 6) == 0.009091
    signs = np.array([1, 1] + [-1] * 8, dtype=float)
    assert round(float(pvalues(signs[None], ("sign",))["sign"][0]), 4) == 0.1094


def test_p_values_equal_scipy_and_r_on_pairs_of_columns():
    """Each R call, its scipy equivalent, and the engine: t.test(paired) = ttest_rel; wilcox.test(paired,
    exact=FALSE, correct=TRUE) = wilcoxon(correction=True, method="approx") = the R algorithm above; binom.test =
    binomtest — on differences with ties, zeros and both signs."""
    rng = np.random.default_rng(7)
    x = rng.integers(0, 11, (40, 15)) / 10  # P@10-like: many ties and zero differences
    y = rng.integers(0, 11, (40, 15)) / 10
    d = x - y
    d[3] = 0.0  # identical systems
    p = pvalues(d, ("ttest", "wilcoxon", "sign"))
    for i in range(len(d)):
        if np.all(d[i] == 0):
            assert p["ttest"][i] == p["wilcoxon"][i] == p["sign"][i] == 1.0
            continue
        np.testing.assert_allclose(p["ttest"][i], stats.ttest_rel(x[i], y[i]).pvalue, rtol=1e-12)
        scipy_w = stats.wilcoxon(x[i], y[i], correction=True, method="approx").pvalue
        np.testing.assert_allclose(p["wilcoxon"][i], scipy_w, rtol=1e-12)
        np.testing.assert_allclose(p["wilcoxon"][i], r_wilcox(d[i]), rtol=1e-12)
        pos, neg = int(np.sum(d[i] > 0)), int(np.sum(d[i] < 0))
        np.testing.assert_allclose(p["sign"][i], stats.binomtest(pos, pos + neg).pvalue, rtol=1e-12)
        np.testing.assert_allclose(p["sign"][i], r_binom(pos, pos + neg), rtol=1e-12)


def test_bootstrap_is_sakais_paired_bootstrap_with_the_trials_replicates():
    """Each trial's ASL equals meta-eval's paired_bootstrap given an index matrix with the trial's counts."""
    rng = np.random.default_rng(3)
    n, B = 12, 400
    z = rng.normal(0.2, 1, (3, 4, n))  # 3 trials, 4 rows each sharing their trial's replicates
    design = se._Design.draw(np.random.default_rng(9), 3, n, B, ("bootstrap",))
    asl = se._bootstrap_asl(z, design.counts)
    for k in range(3):
        counts = design.counts[k].astype(int)  # (n, B)
        indices = np.stack([np.repeat(np.arange(n), counts[:, b]) for b in range(B)], axis=1)
        for r in range(4):
            reference = paired_bootstrap(np.vstack([z[k, r], np.zeros(n)]), indices=indices).asl[0]
            assert asl[k, r] == reference


def test_randomisation_is_the_exact_permutation_test_or_its_sampled_form():
    rng = np.random.default_rng(4)
    n = 8  # 2^8 <= B: every sign vector, the exact test
    z = rng.normal(0.3, 1, (5, n))
    exact = pvalues(z, ("randomisation",), n_resamples=1000)["randomisation"]
    for i in range(5):
        ref = stats.permutation_test((z[i],), lambda v, axis=-1: np.abs(np.mean(v, axis=axis)),
                                     permutation_type="samples", n_resamples=np.inf, alternative="greater").pvalue
        np.testing.assert_allclose(exact[i], ref, rtol=1e-12)
    n, B = 20, 500  # sampled: (# + 1) / (B + 1) with the trial's own sign vectors
    z = rng.normal(0.3, 1, (1, 3, n))
    design = se._Design.draw(np.random.default_rng(5), 1, n, B, ("randomisation",))
    asl = se._randomisation_asl(z, design.signs, exact=False)[0]
    for r in range(3):
        count = sum(abs(np.mean(design.signs[0][:, b] * z[0, r])) >= abs(z[0, r].mean()) * (1 - 1e-9)
                    for b in range(B))
        assert asl[r] == (count + 1) / (B + 1)


def test_tukey_asl_is_the_randomised_tukey_hsd_with_the_same_permutations():
    rng = np.random.default_rng(6)
    n, m, B = 15, 6, 300
    y = rng.normal(size=(2, n, m)) + np.linspace(0, 0.6, m)
    averaging = se._tukey_design(np.random.default_rng(11), n, m, B)
    perms = np.random.default_rng(11).permuted(np.broadcast_to(np.arange(m), (B, n, m)), axis=-1)
    ia, ib = pair_indices(m)
    asl = se._tukey_asl(y, averaging, ia, ib)
    for k in range(2):
        hsd = np.array([np.ptp(y[k][np.arange(n)[:, None], perms[b]].mean(axis=0)) for b in range(B)])
        np.testing.assert_array_equal(asl[k], tukey_hsd(y[k].T, null=hsd).asl)


def test_corrections_equal_statsmodels_row_by_row():
    multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
    rng = np.random.default_rng(8)
    p = rng.uniform(0, 0.2, (20, 45)) ** 2
    p[0, :5] = p[0, 5]  # ties
    for ours, theirs in (("bonferroni", "bonferroni"), ("holm", "holm"), ("bh", "fdr_bh")):
        adjusted = se._adjust(p, ours)
        for row in range(len(p)):
            np.testing.assert_allclose(adjusted[row], multipletests(p[row], method=theirs)[1], rtol=1e-12)


def test_wilson_interval_and_noncentral_t_power_equal_statsmodels_and_scipy():
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    power = pytest.importorskip("statsmodels.stats.power")
    counts, trials = np.array([0, 1, 50, 73, 1000]), 1000
    low, high = wilson_interval(counts, trials, 0.95)
    for c, lo, hi in zip(counts, low, high):
        np.testing.assert_allclose((lo, hi), proportion.proportion_confint(c, trials, 0.05, method="wilson"),
                                   rtol=1e-12, atol=1e-15)
        ci = stats.binomtest(int(c), trials).proportion_ci(0.95, method="wilson")
        np.testing.assert_allclose((lo, hi), (ci.low, ci.high), rtol=1e-9, atol=1e-15)
    for n in (5, 20, 50):
        for d in (0.0, 0.2, 0.5):
            np.testing.assert_allclose(se._noncentral_t_power(n, d, ALPHA),
                                       power.TTestPower().power(effect_size=d, nobs=n, alpha=ALPHA), rtol=1e-9)


# --------------------------------------------------------------------------------------------- rates


def normal_pair(n_topics: int = 20000, seed: int = 0) -> np.ndarray:
    """Two systems whose per-topic differences are normal (mean 0, s.d. 1): one pair, many topics."""
    return np.vstack([np.random.default_rng(seed).normal(size=n_topics), np.zeros(n_topics)])


def covers(low: float, high: float, value: float) -> bool:
    return low <= value <= high


@pytest.fixture(scope="module")
def normal_rates():
    """4,000 trials per cell on exact nulls and planted effects of a normal population."""
    return significance_error_rates({"m": normal_pair()}, sizes=[5, 30], effects=[0.3, 0.6], n_trials=4000,
                                    family_size=0, confidence=0.99, seed=1)


def sign_size(n: int, p_positive: float = 0.5) -> float:
    """The exact probability that the two-sided sign test (no ties) rejects at α with n+ ~ Bin(n, p_positive)."""
    return sum(stats.binom.pmf(k, n, p_positive) for k in range(n + 1) if r_binom(k, n) < ALPHA)


def test_type1_rate_of_every_test_lies_within_its_interval_of_the_level(normal_rates):
    """Under the exchange null every test's hypothesis holds exactly: the estimated rate's 99 % Wilson interval
    holds α (the sign test: its exact size, a discrete test never reaching α)."""
    rows = normal_rates.type1()
    for _, row in rows[rows.topics == 30].iterrows():
        level = sign_size(30) if row.test == "sign" else ALPHA
        assert covers(row.rate_low, row.rate_high, level), (row.test, row.rate, level)


def test_power_and_type3_follow_the_known_curves(normal_rates):
    """The t-test's power and Type III rate are the noncentral t's (normal differences); the sign test's power is
    an exact binomial sum over the population, P(z + δ > 0) per drawn topic."""
    population = np.concatenate([normal_pair()[0], -normal_pair()[0]])  # the exchange null's population, ±z
    sigma = np.sqrt(np.mean(population**2))
    rows = normal_rates.power()
    for _, row in rows[rows.topics == 30].iterrows():
        if row.test == "ttest":
            assert covers(row.rate_low, row.rate_high, row.theory), (row.effect, row.rate, row.theory)
        if row.test == "sign":
            exact = sign_size(30, np.mean(population + row.effect * sigma > 0))
            assert covers(row.rate_low, row.rate_high, exact), (row.effect, row.rate, exact)
    small = rows[(rows.topics == 5) & (rows.test == "ttest") & (rows.effect == 0.3)].iloc[0]
    critical = stats.t.ppf(1 - ALPHA / 2, 4)
    type3 = stats.nct.cdf(-critical, 4, 0.3 * np.sqrt(5))
    assert small.wrong_sign > 0 and covers(small.type3_low, small.type3_high, type3)


def test_shift_null_keeps_the_mean_and_the_skew():
    """On a skewed population the shift null makes the mean 0 but not the median: the t-test stays near α while the
    sign test rejects as often as the exact binomial sum with P(w > 0) (about P(Exp(1) > 1)) over the population says;
    the exchange null makes the population symmetric, and the sign test's rate its size again."""
    rng = np.random.default_rng(2)
    skewed = np.vstack([rng.exponential(size=20000), np.zeros(20000)])
    a, b, shift, sd = se._null_pairs(skewed[None], "shift")
    assert shift[0, 0] == pytest.approx(skewed[0].mean()) and sd[0, 0] == pytest.approx(skewed[0].std())
    common = dict(sizes=[50], effects=[0.5], n_trials=2000, family_size=0, tests=("ttest", "sign"), confidence=0.99)
    shifted = significance_error_rates({"m": skewed}, null="shift", **common).type1().set_index("test")
    exchanged = significance_error_rates({"m": skewed}, null="exchange", **common).type1().set_index("test")
    positive = np.mean(skewed[0] - skewed[0].mean() > 0)
    assert covers(shifted.loc["sign", "rate_low"], shifted.loc["sign", "rate_high"], sign_size(50, positive))
    assert 0.03 < shifted.loc["ttest", "rate_low"] and shifted.loc["ttest", "rate_high"] < 0.1  # skew 2: a bit liberal
    assert covers(exchanged.loc["sign", "rate_low"], exchanged.loc["sign", "rate_high"], sign_size(50))


@pytest.fixture(scope="module")
def family_rates():
    """Families of 10 independent normal systems (complete null, and half raised by 0.5 σ), 1,000 per size."""
    x = np.random.default_rng(5).normal(size=(10, 4000))
    return significance_error_rates({"m": x}, sizes=[20], n_trials=1, tests=("ttest",), family_tests=("ttest",),
                                    family_size=10, family_trials=1000, n_resamples=500, confidence=0.99,
                                    seed=3).families.set_index(["procedure", "effect"])


def test_family_wise_error_rates_under_the_complete_null(family_rates):
    f = family_rates
    null = f.xs(0.0, level="effect")
    assert null.loc["t-test", "fwer_low"] > 0.5  # 45 uncorrected tests: a false discovery in most families
    assert null.loc["t-test + Bonferroni", "fwer_low"] <= ALPHA  # Bonferroni: FWER <= α
    assert null.loc["t-test + Holm", "fwer"] == null.loc["t-test + Bonferroni", "fwer"]  # same first step
    assert null.loc["t-test + BH", "fdr"] == null.loc["t-test + BH", "fwer"]  # every discovery is false
    assert null.loc["t-test + BH", "fwer_low"] <= ALPHA
    assert covers(null.loc["Tukey HSD", "fwer_low"], null.loc["Tukey HSD", "fwer_high"], ALPHA)  # exact test
    planted = f.xs(0.5, level="effect")
    assert planted.loc["t-test + BH", "fdr_low"] <= ALPHA * 20 / 45  # BH: FDR <= α m0 / m
    assert planted.loc["t-test + Holm", "power"] >= planted.loc["t-test + Bonferroni", "power"]  # Holm ⊇ Bonferroni
    assert planted.loc["t-test + BH", "power"] >= planted.loc["t-test + Holm", "power"]
    assert (planted["true_nulls"] == 20).all() and (planted["pairs"] == 45).all()


def test_the_numbers_depend_on_the_seed_only():
    x = np.random.default_rng(0).normal(size=(6, 40))
    common = dict(sizes=[5, 10], n_trials=60, family_size=4, family_trials=30, n_resamples=100)
    one = significance_error_rates({"a": x, "b": x**2}, **common, seed=4)
    two = significance_error_rates({"a": x, "b": x**2}, **common, seed=4, jobs=2)
    pd.testing.assert_frame_equal(one.pairs, two.pairs)
    pd.testing.assert_frame_equal(one.families, two.families)
    alone = significance_error_rates({"a": x, "b": x**2}, **dict(common, sizes=[10]), seed=4)
    pd.testing.assert_frame_equal(alone.pairs.reset_index(drop=True),
                                  one.pairs[one.pairs.topics == 10].reset_index(drop=True))  # a size's own draws
    other = significance_error_rates({"a": x, "b": x**2}, **common, seed=5)
    assert not one.pairs["significant"].equals(other.pairs["significant"])


@pytest.mark.parametrize("kwargs, message", [
    (dict(sizes=[1]), "sizes must be integers of at least 2"),
    (dict(effects=[0.0]), "effects must be positive finite numbers"),
    (dict(family_size=1), "family_size must be 0"),
    (dict(tests=("t",)), "tests must be some of ttest"),
    (dict(null="swap"), "null must be one of exchange, shift"),
    (dict(unit="z"), "unit must be one of sd, score"),
    (dict(n_trials=0), "n_trials must be a positive integer"),
    (dict(alpha=1.5), "alpha must be a number in"),
    (dict(corrections=("sidak",)), "corrections must be some of none"),
    (dict(sizes=[10**6], n_resamples=10**6), r"would need about .* of memory; .* is available \(lower n_resamples"),
])
def test_bad_parameters_are_named(kwargs, message):
    with pytest.raises(InputError, match=message):
        significance_error_rates(np.eye(3), **kwargs)


def test_bad_scores_are_refused():
    with pytest.raises(InputError, match="scores must be finite"):
        significance_error_rates(np.array([[0.1, np.nan], [0.2, 0.3]]))
    with pytest.raises(InputError, match="under metric 'flat' no pair of systems differs on any topic"):
        significance_error_rates({"ok": np.eye(3), "flat": np.ones((3, 3))})
    with pytest.raises(InputError, match="has scores of shape"):
        significance_error_rates({"a": np.eye(3), "b": np.eye(4)})


# --------------------------------------------------------------------------------------------- the analysis


SMALL = dict(n_trials=200, family_trials=40, n_resamples=200)


def test_the_analysis_keeps_the_contract_and_its_tables_show_its_frames():
    from meta_eval.orchestration.contract import check_analysis

    data = AnalysisData.from_collection(me.demo_collection(), ("AP", "nDCG@10"), against=("GAP",))
    result = check_analysis("error-rates", data, **SMALL)
    assert [t.stem for t in result.tables()] == ["error_rates_type1", "error_rates_power", "error_rates_type3",
                                                 "error_rates_fwer", "error_rates_fdr"]
    type1 = result.compact["error_rates_type1"]
    row = result.errors.type1().query("topics == 20 and metric == 'GAP' and test == 'sign'").iloc[0]
    assert type1.text("GAP", "sign") == f"{row.rate:.3f}"
    assert type1.interval("GAP", "sign") == f"[{row.rate_low:.3f}, {row.rate_high:.3f}]"
    assert len(result.findings()) == 4 and "Type I error rate" in result.findings()[0].sentence


def test_the_analysis_declares_the_engines_choices():
    from meta_eval.analyses import get_analysis

    params = {p.name: p for p in get_analysis("error-rates").params}
    assert params["tests"].choices == se.TESTS and params["family_tests"].choices == se.TESTS
    assert params["corrections"].choices == se.CORRECTIONS and params["null"].choices == se.NULLS


def test_opt_in_in_the_study_and_on_a_score_table(tmp_path):
    from meta_eval.inputs.score_tables import read_scores
    from meta_eval.orchestration.study import StudyOptions, study_plan

    col = me.demo_collection()
    data = AnalysisData.from_collection(col, ("AP",))
    assert "error-rates" not in [d.name for d, _ in study_plan(data, StudyOptions().check())[0]]
    named = StudyOptions(analyses=["error-rates(n_trials=50)"]).check()
    assert dict((d.name, p) for d, p in study_plan(data, named)[0])["error-rates"]["n_trials"] == 50
    table = read_scores({"AP": me.score(col, "AP")}, systems=col.systems, topics=col.topics)
    from_table = get_analysis("error-rates")(AnalysisData.from_scores(table), **SMALL)
    from_collection = get_analysis("error-rates")(data, **SMALL)
    pd.testing.assert_frame_equal(from_table.to_frame(), from_collection.to_frame())
