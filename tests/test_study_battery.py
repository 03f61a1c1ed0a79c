"""``meta-eval study`` beyond the main report: skipping the battery's stages, ``--standardise`` (in the study and in
``discpower``, ``correlate`` and ``compare``: the analyses see exactly the hand-computed per-topic z-scores or their
normal CDF, and what standardisation should not change stays unchanged), and the opt-in learning-to-rank stage on
the demo LTR set."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from scipy.special import ndtr
from typer.testing import CliRunner

import meta_eval as me
from meta_eval.cli import app
from meta_eval.outputs.result_folder import verify_folder
from meta_eval.orchestration.study import StudyOptions, run_study

BATTERY = ("split-half", "anova", "intuitiveness", "incomplete-judgments", "reusability")
FILES = {"split-half": "split_half", "anova": "anova", "intuitiveness": "intuitiveness",
         "incomplete-judgments": "incomplete_judgments", "reusability": "reusability"}
SMALL = dict(n_resamples=50, formats=("png",), dpi=50,
             params={"discpower": {"top": 0}, "incomplete-judgments": {"fractions": (0.3, 0.7), "n_draws": 2},
                     "split-half": {"n_splits": 10}}, skip=("properties",))


def hand_z(x: np.ndarray) -> np.ndarray:
    """Per-topic z-scores over the systems, written out: (x - topic mean) / topic sample s.d. (0 where s.d. = 0)."""
    x = np.asarray(x, dtype=float)
    mean = x.sum(axis=0) / x.shape[0]
    sd = np.sqrt(((x - mean) ** 2).sum(axis=0) / (x.shape[0] - 1))
    return np.where(sd > 0, (x - mean) / np.where(sd > 0, sd, 1), 0.0)


@pytest.fixture(scope="module")
def demo():
    col = me.demo_collection()
    return col, {m: me.score(col, m) for m in ("AP", "ERR", "GAP", "P@10")}


def test_each_battery_stage_can_be_skipped(tmp_path):
    result = run_study(me.demo_collection(), tmp_path, StudyOptions(
        metrics=("AP",), against=("GAP",), **{**SMALL, "skip": ("informativeness", "correlation", *BATTERY)}))
    assert not result.errors and verify_folder(tmp_path) == []
    names = {p.stem for p in tmp_path.iterdir()}
    assert not names & set(FILES.values()) and not names & {"topic_set_size", "effect_sizes"}
    text = (tmp_path / "report.md").read_text()
    for stage in BATTERY:
        assert f"{stage} (skipped)" in text
    assert set(result.timings) == {"scoring", "scores", "properties", "discpower", "report", "total"}
    assert set(json.loads((tmp_path / "manifest.json").read_text())["analyses"]) == {"scores", "properties",
                                                                                     "discpower"}


def test_unknown_stage_and_bad_budgets_are_refused():
    with pytest.raises(me.InputError, match="unknown analysis"):
        StudyOptions(skip=("anovas",)).check()
    with pytest.raises(me.InputError, match="parameter fractions=0 is out of range"):
        StudyOptions(params={"incomplete-judgments": {"fractions": (0.0, 0.5)}}).check()
    with pytest.raises(me.InputError, match="parameter n_draws=0 is out of range"):
        StudyOptions(params={"incomplete-judgments": {"n_draws": 0}}).check()
    with pytest.raises(me.InputError, match="standardise must be one of"):
        StudyOptions(standardise="rank").check()
    with pytest.raises(me.InputError, match="letor=.* does not exist"):
        StudyOptions(params={"ltr": {"letor": "/no/such/letor"}}).check()
    with pytest.raises(me.InputError, match="params: unknown analysis 'anovas'"):
        StudyOptions(params={"anovas": {}}).check()
    assert StudyOptions(skip="anova").check().skip == ("anova",)  # one stage as a string


@pytest.fixture(scope="module")
def standardised(tmp_path_factory, demo):
    out = tmp_path_factory.mktemp("z") / "study"
    result = run_study(demo[0], out, StudyOptions(metrics=("AP", "ERR"), against=("GAP",), standardise="z",
                                                  **{**SMALL, "skip": ("properties", "informativeness",
                                                                       "incomplete-judgments", "reusability")}))
    assert not result.errors, result.errors
    return out


def test_study_standardise_z_feeds_the_hand_computed_z_scores_to_the_analyses(standardised, demo):
    from meta_eval.statistics.correlation import correlate_systems
    from meta_eval.statistics.significance.discriminative_power import discriminative_power
    from meta_eval.statistics.anova import two_way_anova

    col, scores = demo
    systems = list(col.systems)
    z = {m: hand_z(scores[m]) for m in ("AP", "ERR", "GAP")}
    disc = discriminative_power(z, systems, methods=("bootstrap",), n_resamples=50, seed=0)
    study = pd.read_csv(standardised / "discpower_summary.csv").query("subset == 'all'")
    assert study.proportion.to_numpy() == pytest.approx(disc.summary().proportion.to_numpy(), abs=1e-12)
    anova = pd.read_csv(standardised / "anova.csv")
    assert anova.omega_sq.to_numpy() == pytest.approx(two_way_anova(z, systems).table.omega_sq.to_numpy(),
                                                      nan_ok=True, rel=1e-9)
    corr = correlate_systems(z, systems, n_resamples=50, seed=0)
    got = pd.read_csv(standardised / "system_correlation.csv")
    assert got.value.to_numpy() == pytest.approx(corr.table.value.to_numpy(), rel=1e-12)
    reference = pd.read_csv(standardised / "standardisation.csv").query("measure == 'AP'")
    assert reference["mean"].to_numpy() == pytest.approx(scores["AP"].mean(axis=0), rel=1e-12)
    assert reference["sd"].to_numpy() == pytest.approx(scores["AP"].std(axis=0, ddof=1), rel=1e-12)
    assert [str(t) for t in reference.topic] == [str(t) for t in col.topics]


def test_study_standardise_changes_what_it_should_and_says_so(standardised, tmp_path, demo):
    raw = tmp_path / "raw"
    run_study(demo[0], raw, StudyOptions(metrics=("AP", "ERR"), against=("GAP",), **{**SMALL, "skip": (
        "properties", "informativeness", "incomplete-judgments", "reusability", "correlation", "split-half")}))
    read = {name: (pd.read_csv(standardised / f"{name}.csv"), pd.read_csv(raw / f"{name}.csv"))
            for name in ("system_means", "intuitiveness", "discpower_summary", "anova")}
    # the scores table and intuitiveness (an increasing map per topic keeps every preference) are unchanged
    pd.testing.assert_frame_equal(*read["system_means"])
    pd.testing.assert_frame_equal(*read["intuitiveness"])
    # the analyses that compare systems across topics change
    assert not np.allclose(read["discpower_summary"][0].diff_required, read["discpower_summary"][1].diff_required)
    assert not np.allclose(read["anova"][0].sum_sq, read["anova"][1].sum_sq)
    manifest = json.loads((standardised / "manifest.json").read_text())
    assert manifest["standardise"] == manifest["study_options"]["standardise"] == "z"
    assert json.loads((raw / "manifest.json").read_text())["standardise"] is None
    text = (standardised / "report.md").read_text()
    assert "Scores standardised per topic over the systems (z-scores" in text
    assert "Computed on per-topic z-scores" in text and "z-scores" not in (raw / "report.md").read_text()


def test_study_standardise_cdf_is_the_normal_cdf_of_the_z_scores(tmp_path, demo):
    from meta_eval.statistics.anova import two_way_anova

    col, scores = demo
    run_study(col, tmp_path, StudyOptions(metrics=("AP",), against=("ERR",), standardise="cdf", **{**SMALL, "skip": (
        "informativeness", "incomplete-judgments", "reusability", "correlation", "split-half", "intuitiveness",
        "discpower", "properties")}))
    u = {m: ndtr(hand_z(scores[m])) for m in ("AP", "ERR")}
    expected = two_way_anova(u, list(col.systems)).table
    assert pd.read_csv(tmp_path / "anova.csv").sum_sq.to_numpy() == pytest.approx(expected.sum_sq.to_numpy(),
                                                                                   rel=1e-9)
    assert "normal-CDF standardised scores" in (tmp_path / "report.md").read_text()


# ------------------------------------------------------------------------------------------------ the other commands


def _run(*args: str):
    result = CliRunner().invoke(app, [*args, "--no-progress"])
    assert result.exit_code == 0, result.output
    return result


def test_discpower_standardise_z(tmp_path, demo):
    from meta_eval.statistics.significance.discriminative_power import discriminative_power

    col, scores = demo
    _run("discpower", "-m", "AP", "-m", "ERR", "-a", "none", "--standardise", "z", "-B", "50", "--top", "0",
         "--no-figures", "-o", str(tmp_path / "z"))
    got = pd.read_csv(tmp_path / "z" / "discpower_summary.csv")
    expected = discriminative_power({m: hand_z(scores[m]) for m in ("AP", "ERR")}, list(col.systems),
                                    n_resamples=50, seed=0).summary()
    assert got.proportion.to_numpy() == pytest.approx(expected.proportion.to_numpy(), abs=1e-12)
    assert got.diff_required.to_numpy() == pytest.approx(expected.diff_required.to_numpy(), rel=1e-9)
    manifest = json.loads((tmp_path / "z" / "manifest.json").read_text())
    assert manifest["standardise"] == "z" and manifest["complete"] is True and verify_folder(tmp_path / "z") == []
    assert set(pd.read_csv(tmp_path / "z" / "standardisation.csv").measure) == {"AP", "ERR"}
    _run("discpower", "-m", "AP", "-a", "none", "-B", "50", "--top", "0", "--no-figures", "-o", str(tmp_path / "raw"))
    assert json.loads((tmp_path / "raw" / "manifest.json").read_text())["standardise"] is None
    assert not (tmp_path / "raw" / "standardisation.csv").exists()


def test_correlation_standardise_cdf(tmp_path, demo):
    from meta_eval.statistics.correlation import correlate_systems

    col, scores = demo
    _run("correlation", "-m", "AP", "-m", "ERR", "-a", "none", "--standardise", "cdf", "-B", "30", "--test", "none",
         "--no-figures", "-o", str(tmp_path))
    got = pd.read_csv(tmp_path / "system_correlation.csv")
    expected = correlate_systems({m: ndtr(hand_z(scores[m])) for m in ("AP", "ERR")}, list(col.systems),
                                 n_resamples=30, seed=0).table
    assert got.value.to_numpy() == pytest.approx(expected.value.to_numpy(), rel=1e-12)
    assert json.loads((tmp_path / "manifest.json").read_text())["standardise"] == "cdf"
    assert set(pd.read_csv(tmp_path / "standardisation.csv").measure) == {"AP", "ERR"}


def test_compare_standardise_z(tmp_path, demo):
    col, scores = demo
    _run("compare", "-m", "AP", "-a", "none", "--standardise", "z", "-b", "sys05", "-o", str(tmp_path / "z"))
    got = pd.read_csv(tmp_path / "z" / "compare.csv")
    expected = me.compare({"AP": hand_z(scores["AP"])}, systems=list(col.systems), baseline="sys05").table
    assert got.p_value.to_numpy() == pytest.approx(expected.p_value.to_numpy(), rel=1e-9)
    assert got["diff"].to_numpy() == pytest.approx(expected["diff"].to_numpy(), rel=1e-9)
    assert json.loads((tmp_path / "z" / "manifest.json").read_text())["standardise"] == "z"
    _run("compare", "-m", "AP", "-a", "none", "-b", "sys05", "-o", str(tmp_path / "raw"))
    raw = pd.read_csv(tmp_path / "raw" / "compare.csv")
    assert not np.allclose(raw["diff"], got["diff"])
    assert "z-scores" in (tmp_path / "z" / "report.md").read_text()


@pytest.mark.parametrize("command", ["study", "discpower", "correlation", "compare"])
def test_standardise_rejects_other_methods(tmp_path, command):
    result = CliRunner().invoke(app, [command, "--standardise", "rank", "--no-progress"])
    assert result.exit_code == 2 and "is not one of" in result.output


# ------------------------------------------------------------------------------------------------ learning to rank


def test_ltr_data_runs_the_learning_to_rank_stage_on_the_demo_set(tmp_path):
    pytest.importorskip("lightgbm")
    from meta_eval.model.demo import demo_ltr_data
    from meta_eval.statistics.learning_to_rank.experiment import RESULT_COLUMNS, run_ltr
    from tests.test_study import _tables
    from tests.test_tables import check_latex

    out = tmp_path / "study"
    _run("study", "-m", "AP", "--against", "nDCG", "--ltr-data", "demo", "--ltr-max-folds", "1", "--ltr-rounds", "3",
         "--informativeness-lists", "8", "-B", "20", "--discpower-top", "0", "--skip", "correlation",
         *(arg for s in BATTERY for arg in ("--skip", s)), "--format", "png", "--dpi", "50", "-o", str(out))
    assert verify_folder(out) == []
    table = pd.read_csv(out / "ltr.csv")
    assert list(table.columns) == [*RESULT_COLUMNS, "informativeness_rms"]
    rms = pd.read_csv(out / "informativeness.csv").query("threshold == 1").set_index("metric").mean_rms
    assert table.informativeness_rms.to_numpy() == pytest.approx(rms[table.trained_for].to_numpy(), rel=1e-12)
    # the stage is run_ltr with the study's metrics as objectives and test measures, and its seed
    direct = run_ltr(demo_ltr_data(), ["AP", "nDCG"], ["AP", "nDCG"], max_folds=1, seed=0,
                     lambdamart={"num_boost_round": 3}, progress=False).table
    assert table["mean"].to_numpy() == pytest.approx(direct["mean"].to_numpy(), rel=1e-12)
    header, *rows = _tables(out)["ltr"]
    for r in table.itertuples():
        line = next(row for row in rows if row[0] == r.trained_for)
        cell = re.sub(r"<sup>.*?</sup>", "", line[header.index(f"test {r.test_measure}")])
        assert cell == (f"**{r.mean:.4f}**" if r.best else f"{r.mean:.4f}")
        assert line[header.index("RMS (informativeness)")].strip("*") == f"{r.informativeness_rms:.3f}"
    check_latex((out / "ltr.tex").read_text())
    assert (out / "ltr.png").exists() and (out / "ltr_per_query.csv").exists()
    text = (out / "report.md").read_text()
    findings = text.split("## Findings")[1].split("## ")[0]
    assert "Learning to rank (LambdaMART; " in findings and "Trained for the most informative metric" in findings
