"""``meta-eval study``: the report folder is complete and consistent with its manifest, every figure exists in each
requested format, tables parse (Markdown) and compile (LaTeX), the numbers the report and its findings quote equal
the CSVs, re-runs leave no stale files, failures and bad options are reported."""

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
from meta_eval.core.errors import OutputError
from meta_eval.outputs.result_folder import result_folder, verify_folder
from meta_eval.orchestration.study import StudyOptions, run_study
from meta_eval.rendering.paper_table import format_number
from tests.test_tables import check_latex, check_markdown, compile_latex

EXAMPLE = Path(__file__).parent / "data" / "my_metric.py"
OPTIONS = dict(metrics=("AP", "Q", f"{EXAMPLE}:grbp"), against=("GAP", "nDCG"), n_resamples=100, formats=("pdf", "png"),
               dpi=80, params={"discpower": {"top": 8}, "informativeness": {"lists": 12, "g_grid": 1.0},
                               "incomplete-judgments": {"fractions": (0.2, 0.5, 0.8), "n_draws": 2},
                               "split-half": {"n_splits": 20}})
#: the stages of the battery (issue 13); skipped where a test is about something else
BATTERY = ("split-half", "anova", "intuitiveness", "incomplete-judgments", "reusability")
MAGIC = {".pdf": b"%PDF", ".png": b"\x89PNG", ".svg": b"<?xml"}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("study") / "report"
    result = run_study(me.demo_collection(), out, StudyOptions(**OPTIONS))
    return out, result


def test_the_folder_is_complete_and_consistent_with_its_manifest(report):
    out, result = report
    assert not result.errors, result.errors
    assert verify_folder(out) == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] is True and manifest["meta_eval"] == "study"
    assert set(manifest["files"]) == {p.name for p in out.iterdir()} - {"manifest.json"}
    assert not list(out.parent.glob(".report*")), "a partial folder or lock was left beside the report"


def test_every_figure_exists_in_each_requested_format(report):
    out, _ = report
    text = (out / "report.md").read_text()
    previews = re.findall(r"!\[[^\]]*\]\(([\w.@-]+)\.png\)", text)
    assert {"asl_curves", "heatmap_agreement", "scatter_means", "rank_rank", "informativeness_rms", "rms_vs_g",
            "inferred_pr_curves", "split_half", "topic_set_size", "intuitiveness", "incomplete_judgments"} <= set(previews)
    # left out of the pool the demo was built with (depth 10, found from the qrels), runs move: a figure of it
    assert "reusability_standard" in previews and "Pool depth 10: the depth the qrels judged the runs to" in text
    for stem in previews:
        for suffix in (".pdf", ".png"):
            data = (out / f"{stem}{suffix}").read_bytes()
            assert data.startswith(MAGIC[suffix]) and len(data) > 2000, stem + suffix
    for name in set(re.findall(r"\]\(([\w.@-]+\.\w+)\)", text)):
        assert (out / name).stat().st_size > 0, name


def test_markdown_tables_parse_and_latex_tables_compile(report, tmp_path):
    out, _ = report
    text = (out / "report.md").read_text()
    tables = check_markdown(text)
    tex_files = sorted(out.glob("*.tex"))
    assert len(tables) == len(tex_files) == len(re.findall(r"\[TEX\]\(", text)) >= 13
    for path in tex_files:
        check_latex(path.read_text())
    compile_latex([p.read_text() for p in tex_files], tmp_path)
    html = (out / "report.html").read_text()
    assert html.count("<table>") == len(tex_files) and "<ul><li>" in html


def _skip(stages) -> list[str]:
    return [arg for s in stages for arg in ("--skip", s)]


def _tables(result_out: Path) -> dict[str, list[list[str]]]:
    """The report's Markdown tables by the CSV they link to."""
    text = result_out.joinpath("report.md").read_text()
    names = re.findall(r"\(\[CSV\]\(([\w.@-]+)\.csv\)", text)
    return dict(zip(names, check_markdown(text)))


def test_report_numbers_equal_the_csvs(report):
    out, _ = report
    tables = _tables(out)
    means = pd.read_csv(out / "system_means.csv").set_index("run")
    header, *rows = tables["system_means"]
    for row in rows:
        for column, cell in zip(header[1:], row[1:]):
            assert cell.strip("*") == format_number(means.loc[row[0], column], 4), (row[0], column)
    col = me.demo_collection()
    assert means.loc[col.systems, "AP"].to_numpy() == pytest.approx(me.score(col, "AP").mean(1))
    disc = pd.read_csv(out / "discpower_summary.csv")
    header, *rows = tables["discpower_summary"]
    for row in rows:
        full = disc[(disc.metric == row[0]) & (disc.subset == "all")].iloc[0]
        assert row[header.index("% discriminated")].strip("*") == f"{100 * full.proportion:.1f}"
        assert full.pairs == 496 and "pairs" not in header  # the count is in the caption, not in every row
        assert row[header.index("Δ required")].strip("*") == f"{full.diff_required:.3f}"
    assert re.search(r"over all 32 systems \(496 pairs\)[^\n]*\(\[CSV\]\(discpower_summary\.csv",
                     (out / "report.md").read_text())
    corr = pd.read_csv(out / "system_correlation.csv").set_index(["metric_x", "metric_y", "coefficient"])
    header, *rows = tables["system_correlation"]
    names = header[1:]
    for row in rows:
        for j, cell in enumerate(row[1:]):
            i = names.index(row[0])
            if i == j:
                continue
            x, y = (names[j], names[i]) if j < i else (names[i], names[j])
            r = corr.loc[(x, y, "kendall_tau_b" if j < i else "tau_ap_sym")]
            assert cell == f"{r.value:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]"


def test_findings_quote_numbers_equal_to_the_tables(report):
    out, result = report
    text = (out / "report.md").read_text()
    findings = text.split("## Findings")[1].split("## ")[0]
    assert len(result.findings) >= 10
    csv = {"discpower_summary": pd.read_csv(out / "discpower_summary.csv"),
           "informativeness": pd.read_csv(out / "informativeness.csv")}
    md = _tables(out)
    for finding in result.findings:
        assert finding.sentence in findings
        rest = finding.sentence
        for fact in finding.facts:
            header, *rows = md[fact.table]
            cell = next(r for r in rows if r[0] == fact.row)[header.index(fact.column)].replace("**", "")
            cell = re.sub(r"<sup>.*?</sup>", "", cell)
            value, _, interval = cell.partition(" ")
            assert fact.text == (value if fact.part == "value" else interval), fact
        quoted = [(f.text, 1) for f in finding.facts] + [(n, -1) for n in [*result.measures,
                                                                           *finding.params.values()]]
        for text, count in sorted(quoted, key=lambda q: -len(q[0])):  # longest first: "0" is not "100"'s
            rest = rest.replace(text, "", count)
        assert not re.search(r"\d", rest), f"a number not from a table: {rest!r}"
    # and the tables' cells are the CSVs' numbers
    best = next(f for f in result.findings if f.sentence.startswith("Discriminative power"))
    fact = next(f for f in best.facts if f.column == "% discriminated")
    row = csv["discpower_summary"].set_index(["metric", "subset"]).loc[(fact.row, "all")]
    assert fact.text == f"{100 * row.proportion:.1f}"
    top = csv["discpower_summary"].query("subset == 'all'").proportion.max()
    assert fact.row == row.name[0] and row.proportion == top
    info = next(f for f in result.findings if f.sentence.startswith("Informativeness"))
    for fact in info.facts:
        if fact.column.startswith("RMS"):
            r = csv["informativeness"].query("metric == @fact.row and threshold == 1").iloc[0]
            assert fact.text == f"{r.mean_rms:.3f}"


def test_top_systems_are_listed_with_their_rule(report):
    out, result = report
    from meta_eval.statistics.best_systems import best_systems

    col = me.demo_collection()
    scores = {m: me.score(col, m) for m in ("AP", "Q", "GAP", "nDCG")}
    from meta_eval.measures.resolver import load_metric

    (grbp,) = load_metric(f"{EXAMPLE}:grbp")
    scores["grbp"] = me.score(col, grbp)
    best = best_systems(scores, list(col.systems), 8)
    text = (out / "report.md").read_text()
    assert "rule 'both'" in text and ", ".join(best) in text
    assert json.loads((out / "manifest.json").read_text())["top_systems"] == best


def _cell(rows, header, row, column) -> str:
    """A Markdown cell without bold and markers."""
    line = next(r for r in rows if r[0] == row)
    return re.sub(r"<sup>.*?</sup>", "", line[header.index(column)]).replace("**", "")


def test_battery_stages_write_their_files_and_their_tables_show_the_csvs(report):
    out, result = report
    for stem in ("incomplete_judgments", "reusability", "anova", "topic_set_size", "intuitiveness", "split_half"):
        assert (out / f"{stem}.csv").stat().st_size > 0 and (out / f"{stem}.tex").stat().st_size > 0, stem
    for stem in ("incomplete_judgments_draws", "reusability_summary", "effect_sizes"):
        assert (out / f"{stem}.csv").stat().st_size > 0, stem
    assert not (out / "ltr.csv").exists(), "the learning-to-rank stage is opt-in"
    md = _tables(out)
    anova = pd.read_csv(out / "anova.csv").set_index(["metric", "effect"])
    header, *rows = md["anova"]
    assert {r[0] for r in rows} == set(result.measures)
    for m in result.measures:
        res = anova.loc[(m, "residual")]
        assert _cell(rows, header, m, "ω², system") == f"{anova.loc[(m, 'system'), 'omega_sq']:.3f}"
        assert _cell(rows, header, m, "F, topic") == f"{anova.loc[(m, 'topic'), 'F']:.1f}"
        assert _cell(rows, header, m, "V_E") == f"{res.sum_sq / res.df:.4f}"
    tss = pd.read_csv(out / "topic_set_size.csv")
    header, *rows = md["topic_set_size"]
    relative = tss[tss.min_d_rule == "relative"].set_index("metric")
    for row in rows:  # the scale-free column: minD a tenth of the spread of the metric's system means
        assert _cell(rows, header, row[0], header[1]).strip("*") == str(int(relative.loc[row[0], "n_topics"]))
    tss = tss[tss.min_d_rule == "fixed"]
    for column in header[2:]:
        design, m = ("ttest", 2) if column.startswith("t-test") else ("anova", int(re.search(r"m = (\d+)", column)[1]))
        d = float(column.rsplit("= ", 1)[1])
        part = tss[(tss.design == design) & (tss.n_systems == m) & np.isclose(tss.min_d, d)].set_index("metric")
        for row in rows:
            assert _cell(rows, header, row[0], column) == str(part.loc[row[0], "n_topics"])
    split = pd.read_csv(out / "split_half.csv").query("coefficient == 'kendall_tau_b' and size == 10")
    header, *rows = md["split_half"]
    for r in split.itertuples():
        assert _cell(rows, header, r.metric, "τ_b, n = 10") == f"{r.mean:.3f} [{r.ci_low:.3f}, {r.ci_high:.3f}]"
    intuit = pd.read_csv(out / "intuitiveness.csv")
    header, *rows = md["intuitiveness"]
    for r in intuit.itertuples():
        assert _cell(rows, header, r.metric_x, r.metric_y) == f"{r.intuitiveness_x:.3f}"
        assert _cell(rows, header, r.metric_y, r.metric_x) == f"{r.intuitiveness_y:.3f}"
    judg = pd.read_csv(out / "incomplete_judgments.csv")
    header, *rows = md["incomplete_judgments"]
    for (metric, form), f in judg.groupby(["metric", "form"]):
        label = f"{metric} ({form})"
        mid = f[np.isclose(f.fraction, 0.5)].iloc[0]
        assert _cell(rows, header, label, "τ_b, 50 % kept") == (
            f"{mid.kendall_tau_b:.3f} [{mid.kendall_tau_b_low:.3f}, {mid.kendall_tau_b_high:.3f}]")
        assert _cell(rows, header, label, "% significant, full qrels") == f"{100 * mid.discpower_full:.1f}"
        ok = (f.sort_values("fraction").kendall_tau_b >= 0.9).to_numpy()  # the smallest f from which all reach 0.9
        tail = [i for i in range(len(ok)) if ok[i:].all()]
        expected = f"{100 * f.sort_values('fraction').fraction.iloc[tail[0]]:.0f}" if tail else "–"
        assert _cell(rows, header, label, "% kept for τ_b ≥ 0.9") == expected
    runs = pd.read_csv(out / "reusability.csv")
    header, *rows = md["reusability"]
    for metric, f in runs.groupby("metric"):
        assert _cell(rows, header, metric, "mean |rank change|") == f"{f.rank_change.abs().mean():.2f}"
        assert _cell(rows, header, metric, "judgments removed") == f"{f.removed.mean():.1f}"
        assert _cell(rows, header, metric, "runs dropping") == str(int((f.rank_change > 0).sum()))
        assert _cell(rows, header, metric, "largest score drop") == f"{max(0.0, -f.score_change.min()):.4f}"


def test_battery_numbers_are_the_analyses_of_the_studied_scores(report):
    """The study hands each analysis the collection's scores and its options (same seeds): its CSVs equal the
    analyses called directly."""
    from meta_eval.statistics.stability import split_half
    from meta_eval.statistics.anova import two_way_anova
    from meta_eval.statistics.incomplete_judgments import incomplete_judgments
    from meta_eval.statistics.intuitiveness import intuitiveness
    from meta_eval.measures.resolver import load_metric

    out, result = report
    col = me.demo_collection()
    (grbp,) = load_metric(f"{EXAMPLE}:grbp")
    scores = {m: me.score(col, m) for m in ("AP", "Q")} | {"grbp": me.score(col, grbp)} | {
        m: me.score(col, m) for m in ("GAP", "nDCG")}
    systems = list(col.systems)
    anova = two_way_anova(scores, systems).table
    pd.testing.assert_frame_equal(pd.read_csv(out / "anova.csv"), anova, check_dtype=False, rtol=1e-9)
    ap = split_half(scores["AP"], systems, sizes=range(1, 11), n_splits=20, seed=0).summary
    study = pd.read_csv(out / "split_half.csv").query("metric == 'AP'")
    assert study["mean"].to_numpy() == pytest.approx(ap["mean"].to_numpy(), abs=1e-12)
    intuit = intuitiveness(scores, me.score(col, "P@10"), gold_name="P@10").table
    pd.testing.assert_frame_equal(pd.read_csv(out / "intuitiveness.csv"), intuit, check_dtype=False)
    ij = incomplete_judgments(col, ["AP", "GAP"], fractions=(0.2, 0.5, 0.8), n_draws=2, seed=0).summary
    study = pd.read_csv(out / "incomplete_judgments.csv").query("metric in ['AP', 'GAP']").reset_index(drop=True)
    pd.testing.assert_frame_equal(study, ij, check_dtype=False, rtol=1e-9)


def test_informativeness_stage_and_plugin_metric(report):
    out, result = report
    summary = pd.read_csv(out / "informativeness.csv")
    # every metric gets MEM, the plug-in too (through a derived or sampled expected-value form)
    assert {"AP", "Q", "GAP", "nDCG", "grbp"} <= set(summary.metric) and (summary.mean_rms > 0).all()
    assert "grbp" in result.measures
    assert "grbp" in set(pd.read_csv(out / "discpower_summary.csv").metric)


def test_manifest_allows_a_rerun(report):
    out, _ = report
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["study_options"]["seed"] == 0 and manifest["study_options"]["n_resamples"] == 100
    assert manifest["analyses"]["correlation"]["files"] and manifest["analyses"]["scores"]["error"] is None
    assert manifest["versions"]["numpy"] == np.__version__
    assert set(manifest["timings_s"]) == {"scoring", "scores", "properties", "discpower", "correlation",
                                          "informativeness", *BATTERY, "report", "total"}
    assert manifest["study_options"]["params"]["incomplete-judgments"]["n_draws"] == 2 and \
        manifest["standardise"] is None
    assert all(len(h) == 64 for h in manifest["inputs"]["sha256"].values())


def test_rerun_into_the_folder_leaves_no_stale_files_and_same_numbers(report, tmp_path):
    out, _ = report
    copy = tmp_path / "again"
    small = {**OPTIONS, "metrics": ("AP", "Q", f"{EXAMPLE}:grbp"), "against": ("GAP",), "formats": ("png",), "dpi": 50}
    run_study(me.demo_collection(), copy, StudyOptions(**{**small, "skip": ("informativeness", *BATTERY)}))
    assert (copy / "system_correlation.csv").exists()
    run_study(me.demo_collection(), copy, StudyOptions(**{**OPTIONS, "skip": ("informativeness", "correlation",
                                                                               *BATTERY), "formats": ("svg",)}))
    assert verify_folder(copy) == []
    names = {p.name for p in copy.iterdir()}
    assert "system_correlation.csv" not in names and "asl_curves.png" in names and "asl_curves.svg" in names
    pd.testing.assert_frame_equal(pd.read_csv(out / "discpower_summary.csv"),
                                  pd.read_csv(copy / "discpower_summary.csv"))


def test_folders_that_are_not_ours_are_refused(tmp_path):
    (tmp_path / "thesis.tex").write_text("precious")
    with pytest.raises(OutputError, match="not a meta-eval result folder"):
        run_study(me.demo_collection(), tmp_path, StudyOptions(n_resamples=20, skip=("informativeness",)))
    assert (tmp_path / "thesis.tex").read_text() == "precious" and len(list(tmp_path.iterdir())) == 1


def test_a_second_writer_is_refused(tmp_path):
    out = tmp_path / "busy"
    with result_folder(out, kind="study"):
        with pytest.raises(OutputError, match="another meta-eval run .* is writing this folder"):
            run_study(me.demo_collection(), out, StudyOptions(n_resamples=20, skip=("informativeness",)))
    assert not out.exists() or verify_folder(out) == []


def test_a_failing_stage_is_reported_not_fatal(tmp_path, monkeypatch):
    from dataclasses import replace

    from meta_eval.analyses import _registry as registry, get_analysis

    def broken(data, **params):
        raise RuntimeError("solver exploded")

    monkeypatch.setitem(registry._ANALYSES, "correlation", replace(get_analysis("correlation"), run=broken))
    result = run_study(me.demo_collection(), tmp_path, StudyOptions(n_resamples=50, skip=("informativeness", *BATTERY),
                                                                     formats=("png",), dpi=60))
    assert "correlation" in result.errors
    text = (tmp_path / "report.md").read_text()
    assert "This stage failed" in text and "correlation (failed)" in text and "informativeness (skipped)" in text
    assert (tmp_path / "discpower_summary.csv").exists() and verify_folder(tmp_path) == []


def test_cli_study_runs_on_demo(tmp_path):
    result = CliRunner().invoke(app, ["study", "--out", str(tmp_path), "-B", "50", "--skip", "informativeness",
                                      "--skip", "correlation", *_skip(BATTERY), "--no-progress", "-m", "AP",
                                      "--format", "png", "--dpi", "60", "--discpower-top", "0"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "report.html").exists() and (tmp_path / "asl_curves.png").exists()
    assert not list(tmp_path.glob("*.pdf"))


@pytest.mark.parametrize("args, message", [
    (["--skip", "informativenes"], "'informativenes' is not one of"),
    (["--correlation-ci", "bootstrap-t"], "is not one of"),
    (["--ci", "normal"], "No such option: --ci"),
    (["--format", "gif"], "is not one of"),
    (["--alpha", "0"], "alpha=0 is out of range; allowed: number in (0, 1)"),
    (["--dpi", "5"], "--dpi"),
])
def test_cli_bad_options_exit_2_before_any_work(tmp_path, args, message):
    result = CliRunner().invoke(app, ["study", "--out", str(tmp_path / "x"), *args])
    assert result.exit_code == 2, result.output
    assert message in result.output and not (tmp_path / "x").exists()


def test_cli_refuses_an_output_that_is_a_file(tmp_path):
    target = tmp_path / "report.txt"
    target.write_text("x")
    result = CliRunner().invoke(app, ["study", "--out", str(target), "--no-progress"])
    assert result.exit_code == 2 and "exists and is not a folder" in result.output


def test_the_study_and_each_command_take_one_name_and_default_per_parameter():
    """Every analysis parameter has one default whoever runs it: the study passes only what it shares (seed,
    alpha, resamples, confidence) and what is given; its options take the declaration's spelling."""
    from meta_eval.analyses import analyses
    from meta_eval.orchestration.study import SHARED, study_plan
    from meta_eval.analyses import AnalysisData

    data = AnalysisData.from_collection(me.demo_collection(), ["AP"], against=["GAP"])
    plan, _ = study_plan(data, StudyOptions(metrics=("AP",), against=("GAP",)).check())
    for decl, params in plan:
        shared = {p.name: getattr(StudyOptions(), p.name) for p in decl.params if p.name in SHARED}
        assert params == decl.bind(shared), decl.name
    assert {a.name for a in analyses()} >= {decl.name for decl, _ in plan}


def test_cli_runs_as_arguments(tmp_path):
    from tests.conftest import write_collection

    qrels, runs = write_collection(tmp_path, n_topics=6, n_docs=30, n_runs=4, depth=15, noise=2.0)
    common = ["study", "-Q", str(qrels), "-B", "20", "--discpower-top", "0", "--skip", "informativeness", "--skip",
              "correlation", *_skip(BATTERY), "--format", "png", "--dpi", "50", "--no-progress", "-m", "AP"]
    new = CliRunner().invoke(app, [*common, str(runs), "--out", str(tmp_path / "a")])
    assert new.exit_code == 0, new.output
    assert (tmp_path / "a" / "discpower_summary.csv").is_file()
    old = CliRunner().invoke(app, [*common, "--runs", str(runs), "--out", str(tmp_path / "b")])
    assert old.exit_code == 2 and "No such option: --runs" in old.output


def test_two_workers_write_the_same_csvs(report, tmp_path):
    """The study's parallel stages (discriminative power, informativeness, incomplete judgments) on two worker
    processes write byte-identical CSVs to the in-process run. The user's plug-in metric (a file.py:function) gets
    informativeness from workers that never imported it (they rebuild it from its specification)."""
    out, _ = report
    two = tmp_path / "two"
    result = run_study(me.demo_collection(), two, StudyOptions(**OPTIONS), jobs=2)
    assert result.errors == {}
    assert "grbp" in set(pd.read_csv(two / "informativeness.csv")["metric"])
    csvs = sorted(p.relative_to(out) for p in out.rglob("*.csv"))
    assert "incomplete_judgments.csv" in {p.name for p in csvs}
    assert csvs == sorted(p.relative_to(two) for p in two.rglob("*.csv"))
    for name in csvs:
        assert (two / name).read_bytes() == (out / name).read_bytes(), name


def test_the_study_file_option_shows_its_sections():
    """Rich read ``[[collection]]`` and ``[study]`` in the help as markup and printed "([] name" and "()"."""
    text = " ".join(CliRunner().invoke(app, ["study", "--help"], env={"COLUMNS": "300"}).output.split())
    assert "collections ([[collection]] name, qrels, runs) and the options ([study])" in text
