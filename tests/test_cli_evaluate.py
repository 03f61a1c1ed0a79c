"""``meta-eval evaluate`` end to end (typer's CliRunner, in process)."""

from __future__ import annotations

import pandas as pd
from typer.testing import CliRunner

import meta_eval as me
from meta_eval.cli import app
from tests.conftest import shared_path

runner = CliRunner()


def test_evaluate_demo_table():
    result = runner.invoke(app, ["evaluate", "-m", "AP", "-m", "GAP(g=0.5,0.5)"])
    assert result.exit_code == 0, result.output
    assert "sys32" in result.output and "GAP(g=0.5,0.5)" in result.output


def test_evaluate_csv_matches_library(tmp_path):
    out = tmp_path / "r.csv"
    result = runner.invoke(app, ["evaluate", "-m", "nDCG@10", "-q", "-f", "csv", "-o", str(out)])
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out, dtype={"topic": str})
    assert list(df.columns) == ["run", "topic", "measure", "value", "summary"]
    col = me.demo_collection()
    scores = me.score(col, "nDCG@10")
    row = df[(df.run == col.systems[3]) & (df.topic == col.topics[2])]
    assert abs(row.value.item() - scores[3, 2]) < 1e-6
    means = df[df.topic == "all"].set_index("run").value
    assert abs(means[col.systems[0]] - scores[0].mean()) < 1e-6


def test_evaluate_trec_layout_matches_trec_eval():
    base = shared_path("data", "trec_eval-test")
    result = runner.invoke(app, ["evaluate", "-Q", str(base / "qrels.test"), str(base / "results.test"),
                                 "-m", "map", "-m", "P.5,10", "-m", "ndcg_cut.10", "-f", "trec", "-q"])
    assert result.exit_code == 0, result.output
    expected = {tuple(line.split()[:2]): line.split()[2] for line in (base / "out.test.aq").read_text().splitlines()}
    lines = [line for line in result.output.splitlines() if line.strip()]
    for line in lines:
        measure, topic, value = line.split()
        assert expected[(measure, topic)] == value
    assert len(lines) == 3 * 4 + 4 + 2


def test_evaluate_reports_bad_input_without_traceback(tmp_path):
    bad = tmp_path / "run"
    bad.write_text("1 Q0 a 1 notanumber r\n")
    qrels = tmp_path / "qrels"
    qrels.write_text("1 0 a 1\n")
    result = runner.invoke(app, ["evaluate", "-Q", str(qrels), str(bad)])
    assert result.exit_code == 2
    assert "run:1: score must be a number" in result.output and "Traceback" not in result.output


def test_evaluate_rejects_unknown_measure():
    result = runner.invoke(app, ["evaluate", "-m", "NotAMeasure"])
    assert result.exit_code == 2 and "unknown measure" in result.output
