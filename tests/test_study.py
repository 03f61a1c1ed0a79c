"""``meta-eval study``: the report folder is complete, its numbers equal the CSVs, failures are reported."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import meta_eval as me
from meta_eval.cli import app
from meta_eval.study import StudyOptions, run_study

EXAMPLE = Path(__file__).parent / "data" / "my_metric.py"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("study")
    options = StudyOptions(metrics=("AP", f"{EXAMPLE}:grbp"), against=("GAP", "nDCG"), n_resamples=200, top=8,
                           mem_lists=40)
    result = run_study(me.demo_collection(), out, options)
    return out, result


def test_every_table_and_figure_exists_and_is_non_empty(report):
    out, result = report
    text = (out / "report.md").read_text()
    linked = re.findall(r"\(([\w.@-]+\.(?:csv|png))\)", text)
    assert linked, "the report links no file"
    for name in set(linked):
        assert (out / name).stat().st_size > 0, name
    assert (out / "report.html").stat().st_size > 1000
    for required in ("system_means.csv", "discpower_summary.csv", "system_correlation.csv", "asl_curves.png",
                     "scores.csv", "manifest.json"):
        assert (out / required).exists(), required


def test_report_numbers_equal_the_csvs(report):
    out, _ = report
    text = (out / "report.md").read_text()
    means = pd.read_csv(out / "system_means.csv")
    first = means.iloc[0]
    row = next(line for line in text.splitlines() if line.startswith(f"| {first.run} "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    for column, cell in zip(means.columns[1:], cells[1:]):
        assert float(cell) == pytest.approx(round(first[column], 4), abs=1e-12), column
    # and the CSV itself equals the library
    col = me.demo_collection()
    ap = me.score(col, "AP").mean(1)
    assert means.set_index("run").loc[col.systems, "AP"].to_numpy() == pytest.approx(ap)


def test_informativeness_stage_ran(report):
    out, result = report
    assert "informativeness" not in result.errors, result.errors
    summary = pd.read_csv(out / "informativeness_summary.csv")
    assert {"AP", "GAP", "nDCG"} <= set(summary.metric) and (summary.mean_rms > 0).all()
    assert (out / "rms_vs_g.png").stat().st_size > 0 and (out / "inferred_pr_curves.png").stat().st_size > 0
    # a plug-in metric without an expected-value form is named in the report, not an error
    assert "No expected-value form is declared for grbp" in (out / "report.md").read_text()


def test_plugin_metric_is_studied(report):
    out, result = report
    assert "grbp" in result.measures
    summary = pd.read_csv(out / "discpower_summary.csv")
    assert "grbp" in set(summary.metric)


def test_manifest_allows_a_rerun(report):
    out, result = report
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["study_options"]["seed"] == 0 and manifest["study_options"]["n_resamples"] == 200
    assert manifest["versions"]["numpy"] == np.__version__
    assert set(manifest["timings_s"]) >= {"scores", "discpower", "correlation", "total"}
    assert all(len(h) == 64 for h in manifest["inputs"]["sha256"].values())


def test_same_options_same_numbers(report, tmp_path):
    out, _ = report
    options = StudyOptions(metrics=("AP", f"{EXAMPLE}:grbp"), against=("GAP", "nDCG"), n_resamples=200, top=8,
                           mem_lists=40, skip=("informativeness", "correlation"))
    run_study(me.demo_collection(), tmp_path, options)
    pd.testing.assert_frame_equal(pd.read_csv(out / "discpower_summary.csv"),
                                  pd.read_csv(tmp_path / "discpower_summary.csv"))


def test_a_failing_stage_is_reported_not_fatal(tmp_path, monkeypatch):
    import meta_eval.study as study

    def broken(ctx, section):
        raise RuntimeError("solver exploded")

    monkeypatch.setitem(study.STAGE_FUNCTIONS, "correlation", broken)
    result = run_study(me.demo_collection(), tmp_path, StudyOptions(n_resamples=50, skip=("informativeness",)))
    assert "correlation" in result.errors
    assert "This stage failed" in (tmp_path / "report.md").read_text()
    assert (tmp_path / "discpower_summary.csv").exists()


def test_cli_study_runs_on_demo(tmp_path):
    result = CliRunner().invoke(app, ["study", "--out", str(tmp_path), "-B", "50", "--skip", "informativeness",
                                      "--no-progress", "-m", "AP"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "report.html").exists()
