"""One number per concept (issue 35): each analysis's command and its study stage, given the same measures and
parameters, write the same files — names, numbers and captions — on the demo collection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from meta_eval.analyses import get_analysis
from meta_eval.cli import app
from meta_eval.orchestration.study import study_flag

runner = CliRunner()
METRICS, AGAINST = ("AP", "nDCG@10", "ERR"), ("GAP",)
#: Small budgets, set in the study through its options and in each command through its own.
BUDGETS = {"n_resamples": 100, "lists": 30, "draws": 2, "splits": 10, "random_cases": 200, "growth_length": 64}
COMMON = ["--no-figures", "--no-progress"]


def _measures() -> list[str]:
    return [*(x for m in METRICS for x in ("-m", m)), *(x for a in AGAINST for x in ("-a", a))]


def _budgets(decl, flag) -> list[str]:
    return [x for p in decl.params if p.name in BUDGETS for x in (flag(decl, p), str(BUDGETS[p.name]))]


def _command_flag(decl, param) -> str:
    return next((f for f in (param.flags or (param.option,)) if f.startswith("--")), param.option).split("/")[0]


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    from meta_eval.analyses import analyses

    out = tmp_path_factory.mktemp("agreement") / "study"
    budgets = {x for decl in analyses() for x in zip(*[iter(_budgets(decl, study_flag))] * 2)}
    flags = [x for flag, value in sorted(budgets) for x in (flag.split("/")[0], value)]
    result = runner.invoke(app, ["study", *_measures(), *flags, *COMMON, "--jobs", "1", "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _files(folder: Path, names: list[str]) -> dict[str, str]:
    return {name: (folder / name).read_text() for name in names if name.endswith((".csv", ".tex"))}


def _ran(study: Path) -> list[str]:
    manifest = json.loads((study / "manifest.json").read_text())
    return [name for name, info in manifest["analyses"].items() if info["files"] and not info["error"]]


def test_the_study_ran_the_default_analyses(study):
    assert {"discpower", "correlation", "anova", "split-half", "informativeness", "properties"} <= set(_ran(study))


@pytest.mark.parametrize("name", ["scores", "properties", "discpower", "correlation", "intuitiveness", "anova",
                                  "split-half", "incomplete-judgments", "reusability", "informativeness"])
def test_a_command_writes_what_its_study_stage_writes(study, tmp_path, name):
    decl = get_analysis(name)
    manifest = json.loads((study / "manifest.json").read_text())
    written = manifest["analyses"][name]["files"]
    data = [*METRICS, *AGAINST] if decl.needs == "measures" else _measures()
    result = runner.invoke(app, [name, *data, *_budgets(decl, _command_flag), *COMMON, "-o", str(tmp_path / name)])
    assert result.exit_code == 0, result.output
    mine = sorted(p.name for p in (tmp_path / name).iterdir() if p.suffix in (".csv", ".tex"))
    assert mine == sorted(n for n in written if n.endswith((".csv", ".tex"))), "the same file names"
    ours, theirs = _files(tmp_path / name, mine), _files(study, mine)
    for file in mine:
        assert ours[file] == theirs[file], f"{name}: {file} differs between the command and the study"
