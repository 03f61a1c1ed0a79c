"""``meta-eval reproduce``: every target reproduces with no mismatch, in time, and writes CSV and figures."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from meta_eval.cli import app
from meta_eval.orchestration.reproduce import COLUMNS, mismatches, reproduce, targets

SLOW = {"kishida-table2"}
REQUIRED = {"kishida-table1", "kishida-table2", "kishida-table3", "kishida-table4", "kishida-table5",
            "ijcsit-table1", "gap-properties", "irbook-exercise"}


def test_required_targets_exist():
    assert REQUIRED <= set(targets())


@pytest.mark.parametrize("target", [pytest.param(t, marks=pytest.mark.slow) if t in SLOW else t
                                    for t in targets()])
def test_target_reproduces(target):
    result = reproduce(target)
    assert mismatches(result).empty, mismatches(result)[["row", "column", "published", "computed"]]
    assert list(result.csv_table().columns) == COLUMNS
    assert (result.table.target == target).all()
    assert result.table.status.isin(["ok", "documented", "info"]).all()


def test_documented_typo_is_reported_not_hidden():
    table = reproduce("ijcsit-figure3").table
    row = table[table.status == "documented"]
    assert len(row) == 1 and row.published.iloc[0] == 0.95 and row.computed.iloc[0] == pytest.approx(0.05)
    assert "typo" in row.note.iloc[0]


def test_cli_writes_csv_and_figure(tmp_path):
    runner = CliRunner()
    res = runner.invoke(app, ["reproduce", "kishida-table4", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "no mismatch" in res.output and "0.969" in res.output
    df = pd.read_csv(tmp_path / "kishida-table4.csv")
    assert list(df.columns) == COLUMNS and len(df) == 10
    assert (tmp_path / "kishida-table4.png").stat().st_size > 1000
    res = runner.invoke(app, ["reproduce", "ijcsit-figure3", "--out", str(tmp_path), "--format", "pdf"])
    assert res.exit_code == 0 and (tmp_path / "ijcsit-figure3.pdf").exists()
    assert "documented" in res.output


def test_cli_list_and_errors():
    runner = CliRunner()
    res = runner.invoke(app, ["reproduce", "--list"])
    assert res.exit_code == 0 and "kishida-table3" in res.output
    res = runner.invoke(app, ["reproduce", "no-such-target"])
    assert res.exit_code == 2 and "unknown target" in res.output
    res = runner.invoke(app, ["reproduce", "ncp", "--format", "gif"])
    assert res.exit_code == 2
