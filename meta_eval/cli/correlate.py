"""``meta-eval correlate``: correlation between metrics (system rankings, per-topic scores, swaps) with figures."""

from __future__ import annotations

import re
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import numpy as np
import pandas as pd
import typer
from rich.console import Console
from rich.table import Table

from meta_eval.cli.app import app
from meta_eval.errors import MetaEvalError

DEFAULT_MEASURES = ("AP", "nDCG", "P@10")


class SignificanceTest(str, Enum):
    bootstrap = "bootstrap"
    ttest = "ttest"
    none = "none"


class TopicMethod(str, Enum):
    pearson = "pearson"
    spearman = "spearman"
    kendall = "kendall"


def _slug(name: str) -> str:
    """A file-name-safe form of a measure name (``GAP(g=0.5,0.5)`` -> ``GAP_g_0.5_0.5``)."""
    return re.sub(r"[^A-Za-z0-9.@-]+", "_", name).strip("_").replace("@", "at")


def _pvalues(scores: dict[str, np.ndarray], systems: list[str], test: SignificanceTest, n_resamples: int,
             alpha: float, seed: int | None, progress: bool) -> dict[str, np.ndarray] | None:
    """Condensed pairwise p-values (pairs a < b, row-major) per metric, from meta_eval.discpower."""
    if test is SignificanceTest.none:
        return None
    from meta_eval import discpower

    out = {}
    for name, s in scores.items():
        if test is SignificanceTest.bootstrap:
            result = discpower.paired_bootstrap(s, systems, n_resamples=n_resamples, alpha=alpha, seed=seed,
                                                progress=progress)
        else:
            result = discpower.classical_test(s, systems, test="ttest", alpha=alpha)
        out[name] = result.asl
    return out


def _print_systems(console: Console, table: pd.DataFrame, confidence: float) -> None:
    t = Table(title=f"Correlation of system rankings (mean over topics), {confidence:.0%} bootstrap CI")
    t.add_column("x (reference)")
    t.add_column("y")
    coefficients = list(dict.fromkeys(table.coefficient))
    for c in coefficients:
        t.add_column(c, justify="right")
    for (x, y), rows in table.groupby(["metric_x", "metric_y"], sort=False):
        cells = []
        for c in coefficients:
            r = rows[rows.coefficient == c].iloc[0]
            ci = "" if np.isnan(r.ci_low) else f" [{r.ci_low:.3f}, {r.ci_high:.3f}]"
            cells.append(f"{r.value:.3f}{ci}")
        t.add_row(x, y, *cells)
    console.print(t)


def _print_matrix(console: Console, frame: pd.DataFrame, title: str, fmt: str = "{:.3f}") -> None:
    t = Table(title=title)
    t.add_column("")
    for c in frame.columns:
        t.add_column(str(c), justify="right")
    for name, row in frame.iterrows():
        t.add_row(str(name), *(fmt.format(v) for v in row))
    console.print(t)


def _print_rows(console: Console, frame: pd.DataFrame, title: str) -> None:
    t = Table(title=title)
    for c in frame.columns:
        t.add_column(str(c), justify="left" if frame[c].dtype == object else "right")
    for row in frame.itertuples(index=False):
        t.add_row(*("-" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v) for v in row))
    console.print(t)


@app.command()
def correlate(
    runs: Annotated[Optional[list[Path]], typer.Argument(help="Run files, directories or globs (with --qrels).")] = None,
    qrels: Annotated[Optional[Path], typer.Option("--qrels", "-q", help="Qrels file; without it the embedded demo "
                                                  "collection is used.")] = None,
    measures: Annotated[Optional[list[str]], typer.Option("--measure", "-m", help="Measure (repeat; at least two). "
                        f"Default: {', '.join(DEFAULT_MEASURES)}.")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Directory for CSV tables and PNG figures.")] = None,
    resamples: Annotated[int, typer.Option("--resamples", "-B", min=0, help="Bootstrap replicates over topics "
                                           "(0: no confidence intervals).")] = 1000,
    confidence: Annotated[float, typer.Option(min=0.5, max=0.999, help="Confidence level of the intervals.")] = 0.95,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap replicate design.")] = 0,
    test: Annotated[SignificanceTest, typer.Option(help="Pairwise test that decides which swapped system pairs are "
                                                   "significant: Sakai's paired bootstrap, paired t-test, or none.")]
    = SignificanceTest.bootstrap,
    alpha: Annotated[float, typer.Option(help="Significance level for the swaps.")] = 0.05,
    per_topic: Annotated[TopicMethod, typer.Option(help="Coefficient of the per-topic correlations.")]
    = TopicMethod.pearson,
    depth: Annotated[Optional[int], typer.Option(help="Evaluation depth (trec_eval -M).")] = None,
    rel_level: Annotated[int, typer.Option(help="Binary relevance threshold (trec_eval -l).")] = 1,
    figures: Annotated[bool, typer.Option(help="Write figures to --out.")] = True,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Correlate metrics: Kendall's tau-b, tau_AP (both directions, symmetrised, tie-aware), Spearman and Pearson on
    system rankings with bootstrap intervals; per-topic correlation matrices; system-pair swaps and their
    significance. In tau_AP(y|x) the metric x (listed first) is the reference."""
    import meta_eval as me
    from meta_eval.correlation import correlate_systems, correlate_topics, swap_table

    console = Console()
    names = list(measures or DEFAULT_MEASURES)
    try:
        if qrels is None:
            if runs:
                raise typer.BadParameter("runs given without --qrels", param_hint="RUNS")
            col = me.demo_collection()
        else:
            if not runs:
                raise typer.BadParameter("--qrels needs at least one run file or directory", param_hint="RUNS")
            col = me.load_collection(qrels=qrels, runs=[str(r) for r in runs], depth=depth, rel_level=rel_level)
        scores = me.score(col, names)
        if not isinstance(scores, dict):  # a single measure
            scores = {names[0]: scores}
        systems = list(col.systems)
        sysres = correlate_systems(scores, systems, n_resamples=resamples, confidence=confidence, seed=seed,
                                   progress=progress)
        topres = correlate_topics(scores, list(col.topics), method=per_topic.value)
        pvals = _pvalues(scores, systems, test, max(resamples, 1), alpha, seed, progress)
        swaps = swap_table(scores, pvals, alpha=alpha, systems=systems)
    except MetaEvalError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(code=2) from exc

    console.print(f"{len(systems)} systems × {len(col.topics)} topics; measures: {', '.join(scores)}")
    _print_systems(console, sysres.table, confidence)
    _print_matrix(console, topres.pooled, f"Per-topic scores, pooled {per_topic.value} (all system-topic pairs)")
    _print_matrix(console, topres.mean, f"Per-topic scores, mean over topics of {per_topic.value}")
    swap_cols = ["metric_x", "metric_y", "n_pairs", "n_swaps", "n_tied", "n_swaps_significant_x",
                 "n_swaps_significant_y", "n_swaps_significant_both"]
    _print_rows(console, swaps[swap_cols], f"System-pair swaps (significant: {test.value}, alpha={alpha})")

    if out is None:
        return
    out.mkdir(parents=True, exist_ok=True)
    sysres.table.to_csv(out / "system_correlation.csv", index=False)
    sysres.means.to_csv(out / "system_means.csv")
    topres.to_frame().to_csv(out / "topic_correlation.csv", index=False)
    swaps.to_csv(out / "swaps.csv", index=False)
    written = 4
    if figures:
        from meta_eval.figures.correlation import correlation_heatmap, means_scatter, rank_rank

        figs = {
            "heatmap_kendall_tau_b.png": correlation_heatmap(sysres.matrix("kendall_tau_b"), lower=True),
            "heatmap_tau_ap.png": correlation_heatmap(sysres.matrix("tau_ap")),
            f"heatmap_topics_{per_topic.value}.png": correlation_heatmap(
                topres.pooled, title=f"per-topic scores, pooled {per_topic.value}", lower=True),
        }
        metric_names = list(scores)
        for i, x in enumerate(metric_names):
            for y in metric_names[i + 1:]:
                pair = f"{_slug(x)}__{_slug(y)}"
                figs[f"scatter_{pair}.png"] = means_scatter(scores[x], scores[y], name_x=x, name_y=y)
                figs[f"rankrank_{pair}.png"] = rank_rank(scores[x], scores[y], name_x=x, name_y=y)
        for fname, fig in figs.items():
            fig.savefig(out / fname, dpi=120)
        written += len(figs)
    console.print(f"wrote {written} files to {out}")
