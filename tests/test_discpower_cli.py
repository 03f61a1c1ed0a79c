"""Tests of ``meta-eval discpower``: a thin layer over meta_eval.statistics.significance, checked on a small collection written
to a temporary directory (so the test needs neither ../shared nor the demo data)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import meta_eval as me
from meta_eval.cli import app
from meta_eval.statistics.best_systems import best_systems
from meta_eval.statistics.significance.discriminative_power import discriminative_power
from tests.conftest import write_collection

runner = CliRunner()
N_RUNS, N_TOPICS, DEPTH = 6, 12, 20


@pytest.fixture(scope="module")
def collection(tmp_path_factory):
    """Qrels (grades 0/1/2) and six runs of differing quality, in TREC formats."""
    root = tmp_path_factory.mktemp("col")
    write_collection(root, n_topics=N_TOPICS, n_docs=40, n_runs=N_RUNS, depth=DEPTH, noise=2.5)
    return root


def test_discpower_writes_tables_matching_the_library(collection, tmp_path):
    out = tmp_path / "out"
    res = runner.invoke(app, ["discpower", "--qrels", str(collection / "qrels.txt"), str(collection / "runs"),
                              "-m", "AP", "-m", "nDCG", "-a", "none", "-B", "300", "--top", "4", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "Discriminative power" in res.output
    summary = pd.read_csv(out / "discpower_summary.csv")
    assert list(summary.columns) == ["subset", "metric", "method", "pairs", "significant", "proportion",
                                     "diff_required", "diff_required_sd"]
    asl = pd.read_csv(out / "asl.csv")
    assert list(asl.columns) == ["subset", "metric", "method", "system_a", "system_b", "asl"]
    every = summary[summary.subset == "all"].drop(columns=["subset", "diff_required_sd"]).reset_index(drop=True)
    assert len(asl[asl.subset == "all"]) == 2 * 15 and (every["pairs"] == 15).all()
    col = me.load_collection(qrels=collection / "qrels.txt", runs=[collection / "runs"])
    scores = me.score(col, ["AP", "nDCG"])
    expected = discriminative_power(scores, col.systems, n_resamples=300, seed=0)
    pd.testing.assert_frame_equal(every, expected.summary(), check_dtype=False)
    np.testing.assert_allclose(asl.loc[asl.subset == "all", "asl"], expected.asl_table()["asl"])
    for metric, x in scores.items():  # Δ/σ: the difference required over the s.d. of the per-topic scores
        row = summary[(summary.subset == "all") & (summary.metric == metric)].iloc[0]
        assert row.diff_required_sd == pytest.approx(row.diff_required / np.std(x), rel=1e-12)
    best = best_systems(scores, col.systems, 4)
    assert ", ".join(best) in (out / "report.md").read_text()
    assert (summary.loc[summary.subset == "top 4", "pairs"] == 6).all()
    assert (out / "asl_curves.png").stat().st_size > 10_000


def test_discpower_methods_topics_and_systems(collection, tmp_path):
    res = runner.invoke(app, ["discpower", "-Q", str(collection / "qrels.txt"), str(collection / "runs"),
                              "-m", "AP", "--method", "tukey", "--method", "ttest-holm", "-B", "500",
                              "--system", "run0", "--system", "run3", "--system", "run5",
                              "--topic", "1", "--topic", "2", "--topic", "3", "--topic", "7", "--top", "0",
                              "-a", "none", "--out", str(tmp_path), "--no-figures"])
    assert res.exit_code == 0, res.output
    summary = pd.read_csv(tmp_path / "discpower_summary.csv")
    assert list(summary["method"]) == ["tukey", "ttest-holm"] and (summary["pairs"] == 3).all()
    assert set(summary.subset) == {"all"} and not list(tmp_path.glob("*.png"))


@pytest.mark.parametrize(
    "args, message",
    [
        (["--method", "anova"], "is not one of"),
        (["-m", "NoSuchMeasure"], ""),
        (["--topic", "999"], "unknown topics"),
        (["--system", "nope", "--system", "run1"], "unknown systems"),
        (["--topic", "2", "--topic", "2"], "option --topic: 2 is given twice"),
        (["--top", "1"], "top=1"),
        (["--method", "tukey", "--method", "tukey"], "option --method: tukey is given twice"),
    ],
)
def test_discpower_bad_input_is_a_clean_error(collection, args, message):
    res = runner.invoke(app, ["discpower", "-Q", str(collection / "qrels.txt"), str(collection / "runs"), *args])
    assert res.exit_code == 2
    assert "error" in res.output.lower()
    assert message in res.output
    assert "Traceback" not in res.output


def test_discpower_runs_without_qrels_is_rejected(collection):
    res = runner.invoke(app, ["discpower", str(collection / "runs")])
    assert res.exit_code != 0
