"""Every analysis command on a score table (issue 33): the same files, number for number, from the runs and qrels
and from their per-topic scores written by ``meta-eval evaluate -q`` — as a tidy CSV and as one wide matrix per
measure (exact floats) — and from trec_eval's layout (four decimals: equal to the tidy table of the rounded scores).
On the demo here; on TREC-COVID when ../shared is there."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from meta_eval.cli import app
from meta_eval.inputs.score_tables import read_scores
from tests.conftest import shared_path

runner = CliRunner()
MEASURES = ["-m", "AP", "-m", "nDCG@10", "-a", "none"]
QUICK = ["--no-figures", "--no-progress"]
COMMANDS = {
    "discpower": ["-B", "200"],
    "correlation": ["-B", "200"],
    "compare": ["--baseline", "FIRST", "--test", "t"],
    "anova": [],
    "split-half": ["--splits", "20"],
    "error-rates": ["--trials", "20"],
}


def _invoke(*args: str) -> None:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output


def _files(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir()) if p.suffix in (".csv", ".tex")}


def _options(command: str, first_run: str) -> list[str]:
    return [o.replace("FIRST", first_run) for o in COMMANDS[command]]


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """The demo's AP and nDCG@10 per topic: tidy, wide (one matrix per measure), trec_eval's layout, and the tidy
    table of the four-decimal values trec_eval's layout keeps."""
    folder = tmp_path_factory.mktemp("tables")
    _invoke("evaluate", "-q", *MEASURES[:4], "-o", str(folder / "tidy.csv"), "--no-progress")
    _invoke("evaluate", "-q", *MEASURES[:4], "-f", "trec", "-o", str(folder / "scores.trec"), "--no-progress")
    table = read_scores(folder / "tidy.csv")
    for m in ("AP", "nDCG@10"):
        table.to_wide(m).to_csv(folder / f"{m}.csv")
    rounded = read_scores(folder / "scores.trec")
    frame = pd.concat([rounded.to_wide(m).reset_index().melt(id_vars="topic", var_name="run", value_name="value")
                       .assign(measure=m) for m in rounded.measures])
    frame[["run", "topic", "measure", "value"]].to_csv(folder / "rounded.csv", index=False)
    return folder, table.systems[0]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_on_score_tables_writes_what_it_writes_from_the_runs(tables, tmp_path, command):
    folder, first = tables
    options = [*MEASURES, *_options(command, first), *QUICK]
    _invoke(command, *options, "-o", str(tmp_path / "runs"))
    _invoke(command, *options, "--scores", str(folder / "tidy.csv"), "-o", str(tmp_path / "tidy"))
    _invoke(command, *options, "--scores", str(folder / "AP.csv"), "--scores", str(folder / "nDCG@10.csv"),
            "-o", str(tmp_path / "wide"))
    reference = _files(tmp_path / "runs")
    assert reference and _files(tmp_path / "tidy") == reference
    assert _files(tmp_path / "wide") == reference
    _invoke(command, *options, "--scores", str(folder / "scores.trec"), "-o", str(tmp_path / "trec"))
    _invoke(command, *options, "--scores", str(folder / "rounded.csv"), "-o", str(tmp_path / "rounded"))
    assert _files(tmp_path / "trec") == _files(tmp_path / "rounded")


def test_trec_covid_scores_written_and_read_back_give_the_same_files(tmp_path):
    data = shared_path("data", "trec-covid-round1")
    collection = ["-Q", str(data / "qrels.txt"), str(data / "runs")]
    scores = tmp_path / "covid.csv"
    _invoke("evaluate", *collection, "-q", *MEASURES[:4], "-o", str(scores), "--no-progress")
    for command in ("discpower", "correlation", "anova"):
        _invoke(command, *collection, *MEASURES, *COMMANDS[command], *QUICK, "-o", str(tmp_path / f"{command}-runs"))
        _invoke(command, "--scores", str(scores), *MEASURES, *COMMANDS[command], *QUICK, "-o", str(tmp_path / f"{command}-scores"))
        assert _files(tmp_path / f"{command}-runs") == _files(tmp_path / f"{command}-scores"), command


def test_references_alone_keep_every_measure_of_the_table(tables):
    """``--against`` without ``-m`` names the references among the table's measures; the others are studied."""
    folder, _ = tables
    result = runner.invoke(app, ["correlation", "--scores", str(folder / "tidy.csv"), "-a", "nDCG@10", "-B", "50",
                                 "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "AP with nDCG@10" in " ".join(result.output.split())
    assert "embedded demo" not in result.output


def test_a_missing_cell_of_a_score_table_is_an_error_unless_missing_is_given(tables, tmp_path):
    """The API's default (an error naming the cell) on the command line too, where a missing cell scored 0."""
    folder, _ = tables
    lines = (folder / "tidy.csv").read_text().splitlines()
    gone = next(i for i, line in enumerate(lines) if ",AP," in line and ",all," not in line and i > 0)
    (tmp_path / "miss.csv").write_text("\n".join(lines[:gone] + lines[gone + 1:]) + "\n")
    result = runner.invoke(app, ["discpower", "--scores", str(tmp_path / "miss.csv"), "-B", "20", *QUICK])
    assert result.exit_code == 2 and "cells missing" in result.output and "--missing zero" in result.output
    for policy, said in (("zero", "scored 0"), ("skip", "left out")):
        result = runner.invoke(app, ["discpower", "--scores", str(tmp_path / "miss.csv"), "-B", "20",
                                     "--missing", policy, "-o", str(tmp_path / policy), *QUICK])
        assert result.exit_code == 0 and said in result.output, result.output
        assert result.output.count(said) == 1  # said once
