"""``me.compare`` and ``meta-eval compare``: runs against a baseline (or all pairs) with the tests of
meta_eval.statistics.significance, checked against scipy (ttest_rel, wilcoxon, permutation_test), statsmodels (multipletests) and
the existing bootstrap, on the demo collection and on TREC-COVID round 1."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

import meta_eval as me
from meta_eval.cli import app
from meta_eval.analyses.compare import detail_table, means_table
from meta_eval.statistics.comparison import COLUMNS, compare
from meta_eval.statistics.significance.bootstrap import paired_bootstrap
from meta_eval.statistics.significance.randomisation import randomisation_test, sign_matrix
from meta_eval.core.errors import InputError
from tests.conftest import shared_path
from tests.test_tables import check_latex, check_markdown

runner = CliRunner()
MULTIPLETESTS = {"holm": "holm", "bonferroni": "bonferroni", "bh": "fdr_bh"}


@pytest.fixture(scope="module")
def demo():
    col = me.demo_collection()
    return col, {m: me.score(col, m) for m in ("AP", "nDCG@10")}


def _check_against_references(scores: dict, systems: list[str], baseline: str, correction: str) -> None:
    from statsmodels.stats.multitest import multipletests

    j = systems.index(baseline)
    others = [i for i in range(len(systems)) if i != j]
    for test in ("t", "wilcoxon"):
        res = compare(scores, systems=systems, baseline=baseline, test=test, correction=correction)
        for name, x in scores.items():
            rows = res.table[res.table.measure == name]
            assert list(rows.run) == [systems[i] for i in others] and set(rows.baseline) == {baseline}
            same = np.array([np.array_equal(x[i], x[j]) for i in others])  # identical runs: p = 1, interval [0, 0]
            if test == "t":
                ref = [stats.ttest_rel(x[i], x[j]) for i in others]
                p = np.where(same, 1.0, [r.pvalue for r in ref])
                np.testing.assert_allclose(rows.p_value, p, rtol=1e-10, atol=1e-15)
                ci = [r.confidence_interval(0.95) for r in ref]
                np.testing.assert_allclose(rows.ci_low, np.where(same, 0, [c.low for c in ci]), rtol=1e-10, atol=1e-14)
                np.testing.assert_allclose(rows.ci_high, np.where(same, 0, [c.high for c in ci]), rtol=1e-10,
                                           atol=1e-14)
            else:
                ref = [stats.wilcoxon(x[i], x[j]).pvalue if np.any(x[i] != x[j]) else 1.0 for i in others]
                np.testing.assert_allclose(rows.p_value, ref, rtol=1e-10, atol=1e-15)
            expected = (rows.p_value.to_numpy() if correction == "none"
                        else multipletests(rows.p_value, method=MULTIPLETESTS[correction])[1])
            np.testing.assert_allclose(rows.p_adjusted, expected, rtol=1e-12, atol=1e-15)
            d = x[others] - x[j]
            np.testing.assert_allclose(rows["diff"], d.mean(1), atol=1e-14)
            with np.errstate(invalid="ignore"):
                np.testing.assert_allclose(rows.effect_size, d.mean(1) / d.std(1, ddof=1), rtol=1e-12)
            np.testing.assert_allclose(rows["mean"], x[others].mean(1), atol=1e-14)
            np.testing.assert_allclose(rows.baseline_mean, x[j].mean(), atol=1e-14)
            assert rows.wins.tolist() == (d > 0).sum(1).tolist() and rows.losses.tolist() == (d < 0).sum(1).tolist()
            assert (rows.wins + rows.ties + rows.losses == x.shape[1]).all()


@pytest.mark.parametrize("correction", ["holm", "bonferroni", "bh", "none"])
def test_t_and_wilcoxon_with_corrections_equal_scipy_and_statsmodels(demo, correction):
    col, scores = demo
    _check_against_references(scores, list(col.systems), "sys12", correction)


def test_bootstrap_equals_the_discriminative_power_bootstrap(demo):
    col, scores = demo
    systems = list(col.systems)
    res = compare(scores, systems=systems, baseline="sys05", test="bootstrap", n_resamples=400, seed=3)
    j = systems.index("sys05")
    for name, x in scores.items():
        full = paired_bootstrap(x, systems, n_resamples=400, seed=3)  # every pair a < b, one replicate matrix
        asl = {(systems[a], systems[b]): p for a, b, p in zip(full.pair_a, full.pair_b, full.asl)}
        rows = res.table[res.table.measure == name]
        expected = [asl[tuple(sorted((r, "sys05"), key=systems.index))] for r in rows.run]
        np.testing.assert_array_equal(rows.p_value, expected)
        assert j not in [systems.index(r) for r in rows.run]


def test_randomisation_test_equals_scipy_permutation_test():
    rng = np.random.default_rng(7)
    x = rng.random((4, 10)).round(2)  # ties between topics and rounding: exact test over all 2^10 sign vectors
    x[3] = x[2]  # identical systems
    res = randomisation_test(x, n_resamples=1024)
    assert sign_matrix(10, 1024)[1]
    for a, b, p in zip(res.pair_a, res.pair_b, res.asl):
        ref = stats.permutation_test((x[a] - x[b],), lambda d, axis: np.abs(d.mean(axis=axis)), vectorized=True,
                                     permutation_type="samples", alternative="greater", n_resamples=np.inf)
        assert p == pytest.approx(ref.pvalue, abs=1e-12), (a, b)
    assert res.asl[-1] == 1.0
    # sampled: (count + 1) / (B + 1), within Monte Carlo error of scipy's own sample
    y = rng.random((3, 25))
    y[1] += 0.08
    res = randomisation_test(y, n_resamples=20_000, seed=1)
    for a, b, p in zip(res.pair_a, res.pair_b, res.asl):
        ref = stats.permutation_test((y[a] - y[b],), lambda d, axis: np.abs(d.mean(axis=axis)), vectorized=True,
                                     permutation_type="samples", alternative="greater", n_resamples=20_000,
                                     random_state=2)
        assert p == pytest.approx(ref.pvalue, abs=0.015)
        assert p >= 1 / 20_001


def test_all_pairs_letters_mark_significant_wins(demo):
    col, scores = demo
    res = compare(col, ["AP"], all_pairs=True, test="t", correction="holm")
    assert len(res.table) == 32 * 31 // 2 and res.baseline is None
    table = means_table(res)
    letters = res.letters()
    sig = res.table[res.significant()]
    for run in col.systems:
        wins = sig[((sig.run == run) & (sig["diff"] > 0)) | ((sig.baseline == run) & (sig["diff"] < 0))]
        beaten = {r if r != run else b for r, b in zip(wins.run, wins.baseline)}
        cell = table.markers.loc[f"{letters[run]}. {run}", "AP"]
        assert cell == "".join(sorted((letters[b] for b in beaten), key=lambda c: (len(c), c)))
    assert letters["sys01"] == "a" and res.letters() == letters


def test_baseline_markers_and_renderings(demo):
    col, _ = demo
    res = compare(col, ["AP", "nDCG@10"], baseline="sys20", test="t")
    t = means_table(res)
    sig = res.table[res.significant()]
    n_markers = int((t.markers != "").to_numpy().sum())
    assert n_markers == len(sig) > 0
    assert t.markers.loc["sys32", "AP"] == "▲" and t.markers.loc["sys01", "AP"] == "▼"
    assert "sys20 (baseline)" in t.values.index and t.bold.loc["sys32", "AP"]
    check_markdown(t.to_markdown() + "\n" + detail_table(res).to_markdown())
    check_latex(t.to_latex("tab:compare"))


def test_bad_input_is_a_clear_error(demo):
    col, scores = demo
    with pytest.raises(InputError, match="did you mean sys20"):
        compare(col, ["AP"], baseline="sys-20")
    with pytest.raises(InputError, match="test must be one of"):
        compare(col, ["AP"], test="ttest")
    with pytest.raises(InputError, match="correction must be one of"):
        compare(col, ["AP"], correction="fdr")
    with pytest.raises(InputError, match="either a baseline or all_pairs"):
        compare(col, ["AP"], baseline="sys01", all_pairs=True)
    with pytest.raises(InputError, match="needs at least one measure"):
        compare(col)
    with pytest.raises(InputError, match="finite"):
        compare({"AP": np.where(scores["AP"] > 0.9, np.nan, scores["AP"])})


def test_cli_writes_its_result_folder(tmp_path):
    base = ["compare", "-m", "AP", "-m", "nDCG@10", "-a", "none", "--baseline", "sys10", "--no-progress"]
    res = runner.invoke(app, [*base, "-o", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    csv = pd.read_csv(tmp_path / "c" / "compare.csv")
    assert tuple(csv.columns) == COLUMNS and len(csv) == 2 * 31
    expected = compare(me.demo_collection(), ["AP", "nDCG@10"], baseline="sys10").table
    pd.testing.assert_frame_equal(csv, expected, check_exact=True, check_dtype=False)
    assert "▲" in res.output and "sys10 (baseline)" in res.output
    res = runner.invoke(app, [*base, "--test", "randomisation", "-B", "500", "--correction", "bh",
                              "-o", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    check_latex((tmp_path / "r" / "compare.tex").read_text())
    check_latex((tmp_path / "r" / "compare_detail.tex").read_text())


@pytest.mark.parametrize("args, message", [
    (["-o", "/proc/version/x"], "/proc/version"),
    (["--baseline", "nope"], "is not one of the runs"),
    (["--test", "ttest"], "is not one of"),
    (["--correction", "fdr"], "is not one of"),
    (["--alpha", "1.5"], "alpha=1.5 is out of range"),
])
def test_cli_bad_options_exit_2(args, message):
    res = runner.invoke(app, ["compare", "-m", "AP", "--no-progress", *args])
    assert res.exit_code == 2, res.output
    assert message in res.output and "Traceback" not in res.output


@pytest.mark.shared
def test_trec_covid_agrees_with_scipy_statsmodels_and_the_bootstrap():
    root = shared_path("data", "trec-covid-round1")
    col = me.load_collection(root / "qrels.txt", [root / "runs"])
    systems = list(col.systems)[:25]
    sub = col.subset(systems=systems)
    scores = {m: me.score(sub, m) for m in ("AP", "nDCG@10")}
    _check_against_references(scores, systems, systems[3], "holm")
    res = compare(scores, systems=systems, baseline=systems[3], test="bootstrap", seed=0)
    for name, x in scores.items():
        full = paired_bootstrap(x, systems, seed=0)
        asl = dict(zip(zip(full.pair_a, full.pair_b), full.asl))
        rows = res.table[res.table.measure == name]
        expected = [asl[tuple(sorted((systems.index(r), 3)))] for r in rows.run]
        np.testing.assert_array_equal(rows.p_value, expected)
