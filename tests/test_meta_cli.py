"""The meta-evaluation commands and study stages: thin layers over the statistics engines (the CSVs hold the library's
numbers), the files the issue names with their columns, findings that quote the tables, and one-line errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import meta_eval as me
from meta_eval.cli import app
from meta_eval.statistics.anova import two_way_anova
from meta_eval.statistics.incomplete_judgments import incomplete_judgments
from meta_eval.analyses import AnalysisData, get_analysis
from meta_eval.statistics.reusability import reusability
from meta_eval.statistics.stability import split_half


runner = CliRunner()


def _run(*args):
    res = runner.invoke(app, [*args, "-a", "none", "--no-progress"])
    assert res.exit_code == 0, res.output
    return res


def test_incomplete_judgments_command(tmp_path):
    out = tmp_path / "ij"
    res = _run("incomplete-judgments", "-m", "AP", "--fraction", "0.3", "--fraction", "0.7", "--draws", "2",
               "--form", "condensed", "--out", str(out), "--format", "png")
    assert "Incomplete judgments (uniform sampling, 2 draws per fraction)" in res.output
    summary = pd.read_csv(out / "incomplete_judgments.csv")
    lib = incomplete_judgments(me.demo_collection(), ["AP"], fractions=[0.3, 0.7], n_draws=2, forms=["condensed"])
    assert np.allclose(summary["kendall_tau_b"], lib.summary["kendall_tau_b"])
    assert len(pd.read_csv(out / "incomplete_judgments_draws.csv")) == 4
    assert (out / "incomplete_judgments.png").exists() and (out / "manifest.json").exists()


def test_anova_command_writes_the_issue_columns(tmp_path):
    out = tmp_path / "an"
    _run("anova", "-m", "AP", "-m", "nDCG@10", "--min-d", "0.05", "--min-d", "0.1", "--out", str(out),
         "--format", "png")
    anova = pd.read_csv(out / "anova.csv")
    assert list(anova.columns) == ["metric", "effect", "df", "sum_sq", "F", "p_value", "omega_sq"]
    col = me.demo_collection()
    lib = two_way_anova({"AP": me.score(col, "AP"), "nDCG@10": me.score(col, "nDCG@10")}, col.systems)
    assert np.allclose(anova["sum_sq"], lib.table["sum_sq"])
    tss = pd.read_csv(out / "topic_set_size.csv")
    fixed = tss[tss["min_d_rule"] == "fixed"]
    assert set(fixed["min_d"]) == {0.05, 0.1} and {"n_topics", "power", "design"} <= set(tss.columns)
    relative = tss[tss["min_d_rule"] == "relative"]  # a tenth of each metric's spread of system means
    means = {m: me.score(col, m).mean(axis=1) for m in ("AP", "nDCG@10")}
    assert np.allclose(relative.set_index("metric")["min_d"].sort_index(),
                       [0.1 * (means[m].max() - means[m].min()) for m in sorted(means)])
    assert {"anova_omega.png", "topic_set_size.png", "effect_sizes.csv"} <= {p.name for p in out.iterdir()}


def test_other_commands(tmp_path):
    _run("reusability", "-m", "AP", "-k", "10", "--out", str(tmp_path / "ru"), "--format", "png")
    runs = pd.read_csv(tmp_path / "ru" / "reusability.csv")
    assert {"run", "score_change", "rank_change"} <= set(runs.columns) and len(runs) == 32
    _run("intuitiveness", "-m", "AP", "-m", "nDCG", "--out", str(tmp_path / "in"), "--format", "png")
    assert len(pd.read_csv(tmp_path / "in" / "intuitiveness.csv")) == 1
    _run("split-half", "-m", "AP", "--size", "5", "--size", "10", "--splits", "10", "--out", str(tmp_path / "sh"),
         "--format", "png")
    sh = pd.read_csv(tmp_path / "sh" / "split_half.csv")
    assert set(sh["size"]) == {5, 10} and set(sh["coefficient"]) == {"kendall_tau_b", "tau_ap_b"}


def test_group_file_and_errors(tmp_path):
    groups = tmp_path / "groups.txt"
    groups.write_text("".join(f"sys{i:02d} g{(i - 1) // 4}\n" for i in range(1, 33)))
    res = _run("reusability", "-m", "AP", "--group-by", str(groups))
    assert "leave-one-group-out" in res.output
    groups.write_text("sys01 a b\n")
    res = runner.invoke(app, ["reusability", "--group-by", str(groups)])
    assert res.exit_code == 2 and "meta-eval: error:" in res.output and "groups.txt:1:" in res.output
    res = runner.invoke(app, ["incomplete-judgments", "--fraction", "0"])
    assert res.exit_code == 2 and "option --fraction=0 is out of range; allowed: number in (0, 1]" in res.output
    res = runner.invoke(app, ["intuitiveness", "-m", "AP", "-a", "none"])
    assert res.exit_code == 2 and "compares at least 2 measures" in res.output


def test_battery_findings_quote_their_tables():
    """Each battery analysis's findings quote its compact tables: every fact is the cell the table shows."""
    col = me.demo_collection()
    data = AnalysisData.from_collection(col, ["AP", "nDCG@10"])
    runs = {"incomplete-judgments": dict(fractions=(0.5, 0.9), n_draws=2, forms=("standard",)),
            "anova": dict(min_d=(0.05, 0.1)), "split-half": dict(sizes=(10,), n_splits=5), "intuitiveness": {},
            "reusability": dict(pool_depth=10)}
    for name, params in runs.items():
        result = get_analysis(name)(data, **params)
        found = result.findings()
        assert found and result.text and result.figures(), name
        for finding in found:
            for fact in finding.facts:
                table = result.compact[fact.table]
                shown = table.text(fact.row, fact.column) if fact.part == "value" else \
                    table.interval(fact.row, fact.column)
                assert fact.text == shown and fact.text in finding.sentence, (name, fact)
    ij = get_analysis("incomplete-judgments")(data, fractions=(0.5, 0.9), n_draws=2, forms=("standard",))
    mf = ij.result.min_fraction(0.9).set_index("metric")["min_fraction"]
    assert ij.compact["incomplete_judgments"].text("AP", "% kept for τ_b ≥ 0.9") == \
        ("–" if mf["AP"] != mf["AP"] else f"{100 * mf['AP']:.0f}")


def test_figures_draw_what_the_tables_hold():
    from meta_eval.core.errors import InputError
    from meta_eval.analyses.anova import topic_set_size_figure
    from meta_eval.analyses.incomplete_judgments import incomplete_judgments_figure
    from meta_eval.analyses.reusability import reusability_figure
    from meta_eval.analyses.split_half import split_half_figure

    col = me.demo_collection()
    ij = incomplete_judgments(col, ["AP", "nDCG"], fractions=[0.2, 0.8], n_draws=2)
    fig = incomplete_judgments_figure(ij.summary)
    assert len(fig.axes) == 6  # (τ_b, τ_AP, power) x (standard, condensed): small multiples
    assert [ax.get_title() for ax in fig.axes[:2]] == ["standard form", "condensed form"]
    assert [ax.get_ylabel() for ax in fig.axes[::2]] == [r"Kendall's $\tau_b$", r"$\tau_\mathrm{AP}$ (reduced | full)",
                                                          "% pairs significant (t-test)"]
    assert len(fig.axes[0].lines) >= 3  # two metrics (+ the 0.9 line)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["AP", "nDCG", "τ = 0.9", "full qrels"]
    with pytest.raises(InputError, match="needs a table with columns"):
        incomplete_judgments_figure(ij.draws)
    tss = get_analysis("anova")(AnalysisData.from_scores({"AP": me.score(col, "AP")}, col.systems),
                                min_d=(0.05, 0.1)).design
    assert topic_set_size_figure(tss.table).axes[0].get_yscale() == "log"
    ru = reusability(col, ["AP"], depth=10)
    with pytest.raises(InputError, match="no rows of form"):
        reusability_figure(ru.runs, form="condensed")
    sh = split_half(me.score(col, "AP"), col.systems, sizes=[3, 6], n_splits=4).summary.assign(metric="AP")
    assert [ax.get_title() for ax in split_half_figure(sh).axes] == [r"Kendall's $\tau_b$",
                                                                     r"$\tau_{\mathrm{AP}\text{-}b}$"]
