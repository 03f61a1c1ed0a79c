"""A plug-in analysis's code is contained (issue 31): whatever it raises in ``run()``, ``tables()``,
``findings()``, ``figures()`` or a figure's ``draw()`` — an Exception, SystemExit, GeneratorExit, its own
BaseException subclass — is one clear error naming the plug-in, the method and the line of its file; whatever it
returns is checked before anything is written; its files are kept apart from the built-ins' in a study; an analysis
that compares measures is refused (command) or not applicable (study) with fewer than it compares."""

from __future__ import annotations

import textwrap

import pytest
from typer.testing import CliRunner

from meta_eval.cli import app

runner = CliRunner()

PLUGIN = textwrap.dedent('''
    import pandas as pd
    from meta_eval.analyses import FigureOutput, Result, TableOutput, analysis

    class Stop(BaseException):
        pass

    class Out(Result):
        def tables(self):
            {tables}
        def figures(self):
            def draw():
                {draw}
            {figures}
        def findings(self):
            {findings}

    @analysis("hostile", title="Hostile", needs="scores")
    def hostile(data):
        {run}
''')
FINE = dict(tables='return [TableOutput("mine", "caption", pd.DataFrame({"a": [1.0]}))]',
            draw="import matplotlib.pyplot as plt; return plt.figure()",
            figures='return [FigureOutput("mine_figure", "caption", draw)]',
            findings="return []", run="return Out()")

CASES = {  # method -> (its body, what the error says)
    "run raises": ("run", 'raise ValueError("boom")', r"run\(\) raised ValueError: boom at .*hostile\.py:\d+"),
    "run exits": ("run", "raise SystemExit(0)", r"run\(\) raised SystemExit: 0 at .*hostile\.py"),
    "run BaseException": ("run", 'raise Stop("x")', r"run\(\) raised Stop: x"),
    "run returns None": ("run", "return None", r"run\(\) returned NoneType, not a Result"),
    "tables raise": ("tables", "raise KeyError(1)", r"tables\(\) raised KeyError: 1"),
    "tables not a list": ("tables", "return 5", r"tables\(\) returned int; expected a list of TableOutput"),
    "tables hold ints": ("tables", "return [1]", r"tables\(\) returned a list holding int"),
    "stem with a folder": ("tables", 'return [TableOutput("../x", "c", pd.DataFrame())]',
                           r"file stem '\.\./x' is not a plain file name"),
    "two tables of one stem": ("tables", 'return [TableOutput("t", "c", pd.DataFrame())] * 2',
                               r"two outputs named 't'"),
    "frame not a frame": ("tables", 'return [TableOutput("t", "c", [1, 2])]', r"frame is list, not a pandas"),
    "findings GeneratorExit": ("findings", "raise GeneratorExit", r"findings\(\) raised GeneratorExit at "),
    "findings a string": ("findings", 'return "text"', r"findings\(\) returned str; expected a list of Finding"),
    "figures raise": ("figures", "raise RuntimeError('f')", r"figures\(\) raised RuntimeError: f"),
    "draw raises": ("draw", "raise ZeroDivisionError('d')", r"figure 'mine_figure': draw\(\) raised ZeroDivisionError"),
    "draw exits": ("draw", "raise SystemExit(3)", r"figure 'mine_figure': draw\(\) raised SystemExit: 3"),
    "draw returns None": ("draw", "return None", r"figure 'mine_figure': draw\(\) returned NoneType; expected a "
                                                 r"matplotlib Figure"),
}


def _plugin(tmp_path, **bodies) -> str:
    path = tmp_path / "hostile.py"
    path.write_text(PLUGIN.format(**{**FINE, **bodies}))
    return f"{path}:hostile"


@pytest.mark.parametrize("case", CASES)
def test_a_failing_plugin_analysis_is_one_clear_error_and_writes_nothing(tmp_path, case):
    method, body, message = CASES[case]
    out = tmp_path / "out"
    result = runner.invoke(app, ["analysis", _plugin(tmp_path, **{method: body}), "-m", "AP", "--no-progress",
                                 "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    text = " ".join(result.output.split())
    assert "analysis" in text and "hostile" in text
    import re

    assert re.search(message, text), text
    assert not out.exists()  # complete or absent


def test_a_fine_plugin_analysis_writes_its_files(tmp_path):
    out = tmp_path / "out"
    result = runner.invoke(app, ["analysis", _plugin(tmp_path), "-m", "AP", "--no-progress", "-o", str(out),
                                 "--format", "png", "--dpi", "50"])
    assert result.exit_code == 0, result.output
    assert {"mine.csv", "mine_figure.png", "manifest.json"} <= {p.name for p in out.iterdir()}


QUICK = ["-B", "20", "--skip", "informativeness", "--skip", "incomplete-judgments", "--skip", "split-half",
         "--skip", "reusability", "--skip", "properties", "--format", "png", "--dpi", "50", "--no-progress",
         "--jobs", "1"]


def test_in_a_study_a_plugin_table_named_like_a_builtin_file_is_kept_apart(tmp_path):
    """A plug-in's table named ``scores`` cannot replace the study's ``scores.csv``: a plug-in's files go in a
    folder of its own."""
    plugin = _plugin(tmp_path, tables='return [TableOutput("scores", "mine", pd.DataFrame({"mine": [7]}))]')
    out = tmp_path / "study"
    result = runner.invoke(app, ["study", "--analysis", plugin, "-o", str(out), *QUICK])
    assert result.exit_code == 0, result.output
    assert "mine" not in (out / "scores.csv").read_text().splitlines()[0]
    assert (out / "hostile" / "scores.csv").read_text().splitlines()[0] == "mine"
    import json

    manifest = json.loads((out / "manifest.json").read_text())
    assert "hostile/scores.csv" in manifest["analyses"]["hostile"]["files"]


def test_in_a_study_a_failing_plugin_is_marked_and_the_others_are_written(tmp_path):
    out = tmp_path / "study"
    result = runner.invoke(app, ["study", "--analysis", _plugin(tmp_path, draw="raise SystemExit(3)"), "-o", str(out),
                                 *QUICK])
    assert result.exit_code == 1, result.output
    assert "1 analysis(es) failed (hostile)" in result.output and "Traceback" not in result.output
    assert "draw() raised SystemExit: 3" in (out / "report.md").read_text()
    assert (out / "scores.csv").exists()


@pytest.mark.parametrize("command", [["correlation"], ["intuitiveness"], ["analysis", "correlation"]])
def test_an_analysis_comparing_measures_refuses_one_before_any_work(tmp_path, command):
    result = runner.invoke(app, [*command, "-m", "AP", "-a", "none", "-o", str(tmp_path / "o"), "--no-progress"])
    assert result.exit_code == 2, result.output
    assert "compares at least 2 measures; got 1 (AP)" in " ".join(result.output.split())
    assert not (tmp_path / "o").exists()


def test_a_study_of_one_measure_lists_the_comparisons_as_not_applicable(tmp_path):
    import json

    out = tmp_path / "study"
    result = runner.invoke(app, ["study", "-m", "AP", "-a", "none", "-o", str(out), *QUICK])
    assert result.exit_code == 0, result.output
    skipped = json.loads((out / "manifest.json").read_text())["not_applicable"]
    assert set(skipped) == {"correlation", "intuitiveness"}
    assert all("compares at least 2 measures" in why for why in skipped.values())


def test_a_default_outside_its_own_domain_is_refused_when_declared():
    """It loaded, then failed every use: in a study after all the work before it, and `meta-eval analysis` blamed
    a k the user never gave."""
    from meta_eval.analyses import Param, analysis
    from meta_eval.core.errors import InputError

    with pytest.raises(InputError, match=r"analysis bad-default: the default of parameter k=0 is out of range; "
                                         r"allowed: integer in \[1, inf\)"):
        analysis("bad-default", title="t", needs="scores",
                 params=(Param("k", 0, int, "k", within="[1, inf)"),))(lambda data, *, k: None)
