"""The analysis registry: declarations, specifications with parameters, dependency order, a user's analysis in the
study and on its own command, and the commands generated from the declarations (one option per declared
parameter, checked against its domain)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pandas as pd
import pytest
import typer.main
from typer.testing import CliRunner

import meta_eval as me
from meta_eval.analyses import (AnalysisData, analyses, analysis, builtin_modules, dependency_order, get_analysis,
                                parse_analysis)
from meta_eval.cli import app

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "top_stability.py"
runner = CliRunner()
QUICK = ["-B", "20", "--format", "png", "--dpi", "50", "--no-progress", "--jobs", "1",
         *[a for s in ("informativeness", "incomplete-judgments", "split-half", "reusability", "anova",
                       "intuitiveness", "correlation") for a in ("--skip", s)]]


def test_the_registry_holds_every_module_of_the_analyses_package_in_the_reports_order():
    names = [a.name for a in analyses()]
    assert sorted(names) == sorted(builtin_modules()) and names[0] == "scores"
    orders = [a.order for a in analyses()]
    assert orders == sorted(orders)  # the report's order, declared by each analysis
    order = [a.name for a in dependency_order(reversed(analyses()))]  # each after what it uses, whatever the input
    assert order.index("discpower") < order.index("correlation") and order.index("informativeness") < \
        order.index("ltr")


def test_dependencies_come_first_and_a_missing_requirement_is_an_error():
    corr, disc = get_analysis("correlation"), get_analysis("discpower")
    assert [a.name for a in dependency_order([corr, disc])] == ["discpower", "correlation"]

    @analysis("needs-disc", title="t", requires=("discpower",))
    def run(data):
        ...

    assert [a.name for a in dependency_order([run, disc])] == ["discpower", "needs-disc"]
    with pytest.raises(me.InputError, match="requires discpower, which will not run"):
        dependency_order([run])


def test_correlation_reuses_the_discpower_p_values_only_from_the_same_bootstrap():
    """The swap table's p-values come from discpower's bootstrap when it ran with the same replicates, α and seed;
    under another seed they are drawn here (a study may give correlation(seed=7) and discpower the default)."""
    from meta_eval.analyses.correlation import _pvalues
    from meta_eval.statistics.significance.bootstrap import paired_bootstrap

    data = AnalysisData.from_collection(me.demo_collection(), ["AP", "nDCG@10"])
    disc = get_analysis("discpower")
    data.results["discpower"] = dp = disc(data, **disc.bind({"n_resamples": 200, "top": 0, "seed": 0}))
    same = _pvalues(data, "bootstrap", 200, 0.05, seed=0)
    assert all(same[m] is dp.all_systems.tests[(m, "bootstrap")].asl for m in data.scores)
    other = _pvalues(data, "bootstrap", 200, 0.05, seed=7)
    for m, scores in data.scores.items():
        fresh = paired_bootstrap(scores, data.systems, n_resamples=200, alpha=0.05, seed=7).asl
        assert (other[m] == fresh).all() and not (other[m] == same[m]).all()


def test_specifications_set_and_check_parameters():
    decl, params = parse_analysis("incomplete-judgments(fractions=0.3,0.7,n_draws=4,sampling=depth)")
    assert decl.name == "incomplete-judgments" and params == {"fractions": (0.3, 0.7), "n_draws": 4,
                                                              "sampling": "depth"}
    with pytest.raises(me.InputError, match="parameter fractions=1.5 is out of range"):
        parse_analysis("incomplete-judgments(fractions=0.3,1.5)")
    with pytest.raises(me.InputError, match="did you mean sampling"):
        parse_analysis("incomplete-judgments(samplng=depth)")
    with pytest.raises(me.InputError, match="unknown analysis 'anvoa'; did you mean anova"):
        parse_analysis("anvoa")
    with pytest.raises(me.InputError, match="no @cutoff"):
        parse_analysis("anova@5")


def test_a_plug_in_is_found_in_its_file_and_named_clearly(tmp_path):
    decl, params = parse_analysis(f"{EXAMPLE}:top_stability(k=3)")
    assert decl.name == "top-stability" and decl.source == str(EXAMPLE) and params == {"k": 3}
    with pytest.raises(me.InputError, match="TopStability is type, not an analysis.*declared here: top_stability"):
        parse_analysis(f"{EXAMPLE}:TopStability")
    broken = tmp_path / "broken.py"
    broken.write_text("import nothing_here\n")
    with pytest.raises(me.InputError, match="cannot import analysis plug-in"):
        parse_analysis(f"{broken}:x")


def test_an_analysis_outside_meta_eval_does_not_join_the_registry():
    @analysis("mine", title="Mine")
    def mine(data):
        ...

    with pytest.raises(me.InputError, match="unknown analysis 'mine'"):
        get_analysis("mine")


def test_the_users_analysis_runs_from_the_study_command(tmp_path):
    out = tmp_path / "study"
    res = runner.invoke(app, ["study", "-o", str(out), "-m", "AP", "-m", "nDCG@10", *QUICK,
                              "--analysis", f"{EXAMPLE}:top_stability(k=3)"])
    assert res.exit_code == 0, res.output
    report = (out / "report.md").read_text()
    assert "## Stability of the top systems" in report and "Under topic resampling the top 3 systems" in report
    mine = out / "top-stability"  # a plug-in's files in a folder of its own
    assert (mine / "top_stability.tex").exists() and (mine / "top_stability.png").exists()
    summary = pd.read_csv(mine / "top_stability.csv")
    assert set(summary.measure) == {"AP", "nDCG@10", "GAP", "nDCG"}
    manifest = json.loads((out / "manifest.json").read_text())
    assert "top-stability" in manifest["timings_s"] and "top-stability/top_stability.csv" in \
        manifest["analyses"]["top-stability"]["files"]
    assert str(EXAMPLE) in manifest["study_options"]["analyses"][0]


def test_a_plug_in_analysis_is_loaded_once_per_study(tmp_path, monkeypatch):
    """The study parses its --analysis specifications once (StudyOptions.added): its checks, the inputs it declares,
    its plan and its run share them, and the plug-in's file is read once; the options sent to a worker process and
    written to the manifest do not carry them."""
    import pickle
    from dataclasses import fields

    from meta_eval.measures import plugins
    from meta_eval.orchestration.study import StudyOptions

    loads = []
    real = plugins.load_code

    def counted(spec, what="metric plug-in"):
        loads.append(spec.target)
        return real(spec, what)

    monkeypatch.setattr(plugins, "load_code", counted)
    skip = [a for name in builtin_modules() if name != "scores" for a in ("--skip", name)]
    out = tmp_path / "study"
    res = runner.invoke(app, ["study", "-o", str(out), "-m", "AP", "-B", "20", "--no-figures", "--no-progress",
                              "--jobs", "1", *skip, "--analysis", f"{EXAMPLE}:top_stability(k=3)"])
    assert res.exit_code == 0, res.output
    assert "## Stability of the top systems" in (out / "report.md").read_text()
    assert len(loads) == 1 and str(EXAMPLE).endswith(loads[0])
    manifest = json.loads((out / "manifest.json").read_text())
    assert list(manifest["study_options"]) == [f.name for f in fields(StudyOptions)]
    options = StudyOptions(analyses=f"{EXAMPLE}:top_stability(k=3)").check()
    sent = pickle.loads(pickle.dumps(options))
    assert "_added" in vars(options) and "_added" not in vars(sent)
    assert [(d.name, p) for d, p in sent.added()] == [("top-stability", {"k": 3})]
    options.analyses = ("anova",)  # changed after the check: parsed again
    assert [d.name for d, _ in options.added()] == ["anova"]


def test_the_users_analysis_runs_from_its_own_command_and_the_study_refuses_to_overwrite_it(tmp_path):
    out = tmp_path / "mine"
    res = runner.invoke(app, ["analysis", f"{EXAMPLE}:top_stability", "-m", "AP", "-m", "RR", "-a", "none", "--out",
                              str(out), "--no-progress", "--format", "png"])
    assert res.exit_code == 0, res.output
    assert "Under topic resampling" in res.output
    assert set(pd.read_csv(out / "top_stability.csv").measure) == {"AP", "RR"}
    listing = runner.invoke(app, ["analysis"])
    assert listing.exit_code == 0 and all(name in listing.output for name in builtin_modules())
    res = runner.invoke(app, ["study", "-o", str(EXAMPLE.parent), "--analysis", f"{EXAMPLE}:top_stability"])
    assert res.exit_code == 2 and EXAMPLE.exists()


def test_a_failing_users_analysis_fails_alone(tmp_path):
    plug = tmp_path / "fails.py"
    plug.write_text(EXAMPLE.read_text().replace('    gen = rng(seed, "top-stability")',
                                                '    raise RuntimeError("my bug")'))
    out = tmp_path / "study"
    res = runner.invoke(app, ["study", "-o", str(out), "-m", "AP", *QUICK, "--analysis", f"{plug}:top_stability"])
    assert res.exit_code == 1 and "1 analysis(es) failed (top-stability)" in res.output
    assert (out / "discpower_summary.csv").exists() and "my bug" in (out / "report.md").read_text()


# ------------------------------------------------------------------------------------------ generated commands


def _click(name: str) -> click.Command:
    from meta_eval.cli.app import LazyGroup

    group = typer.main.get_command(app)
    assert isinstance(group, LazyGroup)
    return group.get_command(click.Context(group), name)


@pytest.mark.parametrize("decl", analyses(), ids=lambda a: a.name)
def test_each_analysis_has_a_command_with_an_option_per_declared_parameter(decl):
    command = _click(decl.name)
    options = {p.name: p for p in command.params}
    for param in decl.params:
        option = options[param.name]
        assert param.option.split("/")[0] in option.opts, (param.name, option.opts)
        assert option.multiple == param.many
        if param.choices:
            assert list(option.type.choices) == list(param.choices)
    reads = {"measures": {"measures_args"}, "scores": {"qrels", "runs", "scores", "measures", "against", "systems",
                                                        "topics", "depth", "rel_level", "ties"}}
    assert reads.get(decl.needs, reads["scores"]) <= set(options)
    assert {"out", "overwrite", "fmt", "dpi", "figures"} <= set(options)
    assert ("standardise" in options) == (decl.standardised and decl.needs != "measures")
    assert ("jobs" in options) == decl.parallel


@pytest.mark.parametrize("decl", analyses(), ids=lambda a: a.name)
def test_the_study_has_an_option_per_parameter_of_every_analysis(decl):
    from meta_eval.orchestration.study import SHARED, study_flag

    study = {o for p in _click("study").params for o in p.opts}
    for param in decl.params:
        assert study_flag(decl, param).split("/")[0] in study, (decl.name, param.name)
    assert all(param.name in SHARED or study_flag(decl, param).startswith(f"--{decl.name}-") for param in decl.params)


def test_every_command_that_writes_a_result_folder_takes_the_same_writing_options():
    """One declaration of --out/--overwrite/--format/--dpi/--figures (cli.common.WRITING_PARAMETERS) for every
    analysis command, `analysis` and the study (whose --out is a report folder with a default name)."""
    def writing(name: str) -> dict:
        return {p.name: (p.opts, p.secondary_opts, p.default, p.help, p.multiple) for p in _click(name).params
                if p.name in ("out", "overwrite", "fmt", "dpi", "figures")}

    expected = writing("analysis")
    assert list(expected) == ["out", "overwrite", "fmt", "dpi", "figures"]
    assert expected["dpi"][2] == 300 and expected["figures"][1] == ["--no-figures"]
    for decl in analyses():
        assert writing(decl.name) == expected, decl.name
    study = writing("study")
    assert study.pop("out")[:3] == (["--out", "-o"], [], Path("meta-eval-study"))
    assert study == {k: v for k, v in expected.items() if k != "out"}


def test_generated_options_are_checked_against_their_domains():
    res = runner.invoke(app, ["anova", "--power", "0.2"])
    assert res.exit_code == 2 and "0.2 is not in the range 0.5<=x<=0.999" in res.output
    res = runner.invoke(app, ["incomplete-judgments", "--fraction", "1.5"])  # the closed end: Typer's own check
    assert res.exit_code == 2 and "1.5 is not in the range x<=1.0" in res.output
    res = runner.invoke(app, ["incomplete-judgments", "--fraction", "0"])  # the open end: the declaration's
    assert res.exit_code == 2 and "option --fraction=0 is out of range; allowed: number in (0, 1]" in res.output
    res = runner.invoke(app, ["reusability", "--form", "condenced"])
    assert res.exit_code == 2 and "condenced" in res.output


def test_analysis_data_from_scores_needs_no_collection():
    col = me.demo_collection()
    data = AnalysisData.from_scores({"AP": me.score(col, "AP"), "RR": me.score(col, "RR")}, col.systems)
    result = get_analysis("anova")(data)
    assert set(result.to_frame().metric) == {"AP", "RR"} and result.findings()
    with pytest.raises(me.InputError, match="needs the system names"):
        AnalysisData(None, [], {"AP": me.score(col, "AP")})
