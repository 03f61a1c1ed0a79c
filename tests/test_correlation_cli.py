"""Tests of ``meta-eval correlation``: wiring from files to tables and figures, checked against scipy."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

import meta_eval as me
from meta_eval.cli import app
from tests.conftest import write_collection

runner = CliRunner()


@pytest.fixture
def tiny(tmp_path):
    """6 runs x 5 topics with graded qrels, written as TREC files."""
    write_collection(tmp_path, n_topics=5, n_docs=12, n_runs=6, depth=8, seed=11, grade_p=(0.5, 0.25, 0.25))
    return tmp_path


def test_correlate_files_to_tables_and_figures(tiny):
    out = tiny / "out"
    result = runner.invoke(app, ["correlation", "--qrels", str(tiny / "qrels.txt"), str(tiny / "runs"), "-m", "AP",
                                 "-m", "P@5", "-a", "nDCG", "-B", "30", "--test", "ttest", "--out", str(out),
                                 "--no-progress"])
    assert result.exit_code == 0, result.output
    col = me.load_collection(tiny / "qrels.txt", [tiny / "runs"])
    scores = {m: me.score(col, m) for m in ("AP", "P@5", "nDCG")}
    table = pd.read_csv(out / "system_correlation.csv")
    for x, y in itertools.combinations(scores, 2):
        row = table[(table.metric_x == x) & (table.metric_y == y) & (table.coefficient == "kendall_tau_b")].iloc[0]
        mx, my = (np.round(scores[m].mean(axis=1), 12) for m in (x, y))
        assert row.value == pytest.approx(stats.kendalltau(mx, my).statistic)
        assert row.ci_low <= row.ci_high
    swaps = pd.read_csv(out / "swaps.csv")
    row = swaps[(swaps.metric_x == "AP") & (swaps.metric_y == "nDCG")].iloc[0]
    ma, mn = scores["AP"].mean(axis=1), scores["nDCG"].mean(axis=1)
    n_swaps = sum((ma[i] - ma[j]) * (mn[i] - mn[j]) < 0 for i, j in itertools.combinations(range(6), 2))
    assert row.n_swaps == n_swaps
    topics = pd.read_csv(out / "topic_correlation.csv")
    r = topics[(topics.metric_x == "AP") & (topics.metric_y == "nDCG")].iloc[0]
    assert r.pooled == pytest.approx(stats.pearsonr(scores["AP"].ravel(), scores["nDCG"].ravel()).statistic)
    stems = {"heatmap_agreement", "heatmap_tau_ap", "heatmap_topics", "scatter_means", "rank_rank"}
    assert {p.stem for p in out.glob("*.pdf")} == stems and {p.stem for p in out.glob("*.png")} == stems
    assert "Directed τ_AP(y | x)" in result.output and "τ_b below the diagonal" in result.output
    directed = pd.read_csv(out / "tau_ap.csv").set_index("reference x")
    row = table[(table.metric_x == "nDCG") & (table.metric_y == "AP") & (table.coefficient == "tau_ap(y|x)")]
    if len(row):  # the same directed number in the table and the CSV of the matrix
        assert directed.loc["nDCG", "AP"] == pytest.approx(row.value.iloc[0])


@pytest.mark.parametrize("args, message", [
    (["--qrels", "missing-qrels.txt", "missing-runs"], "error"),
    (["-m", "AP", "-m", "NoSuchMeasure"], "error"),
    (["some-run.txt"], "without --qrels"),
])
def test_correlate_bad_input_exits_cleanly(tiny, args, message):
    if "NoSuchMeasure" in args:
        args = ["--qrels", str(tiny / "qrels.txt"), str(tiny / "runs")] + args
    result = runner.invoke(app, ["correlation", *args, "-B", "0", "--test", "none", "--no-progress"])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_correlate_demo_collection(tmp_path):
    try:
        me.demo_paths()
    except FileNotFoundError:
        pytest.skip("demo collection not built yet")
    result = runner.invoke(app, ["correlation", "-m", "AP", "-m", "P@10", "-B", "20", "--test", "ttest",
                                 "--no-figures", "--out", str(tmp_path), "--no-progress"])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "system_correlation.csv")
    assert set(table.coefficient) >= {"kendall_tau_b", "tau_ap(y|x)", "tau_ap(x|y)", "tau_ap_sym", "tau_ap_a(y|x)"}


def test_the_old_command_name_says_what_replaced_it():
    result = runner.invoke(app, ["correlate", "--help"])
    assert result.exit_code == 2 and "'meta-eval correlate' is now 'meta-eval correlation'" in result.output
