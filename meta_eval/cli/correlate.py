"""``meta-eval correlate``: correlation between metrics (system rankings, per-topic scores, swaps) with figures."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import numpy as np
import pandas as pd
import typer
from rich.console import Console
from rich.table import Table

from meta_eval.cli.app import app
from meta_eval.report import slug
from meta_eval.cli.common import (DepthOpt, LevelOpt, Missing, MissingOpt, QrelsOpt, RunsArg, Unjudged, UnjudgedOpt,
                                  collection_from_cli, reports_errors)

DEFAULT_MEASURES = ("AP", "GAP", "nDCG", "P@10")


class SignificanceTest(str, Enum):
    bootstrap = "bootstrap"
    ttest = "ttest"
    none = "none"


class CIMethod(str, Enum):
    percentile = "percentile"
    basic = "basic"


class TopicMethod(str, Enum):
    pearson = "pearson"
    spearman = "spearman"
    kendall = "kendall"


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


def _print_systems(console: Console, table: pd.DataFrame, confidence: float, n_resamples: int) -> None:
    t = Table(title="Correlation of system rankings (systems ranked by mean over topics)")
    t.add_column("x (reference)")
    t.add_column("y")
    t.add_column("coefficient")
    t.add_column("value", justify="right")
    if n_resamples:
        t.add_column(f"{confidence:.0%} CI (B={n_resamples})", justify="right")
    for _, rows in table.groupby(["metric_x", "metric_y"], sort=False):
        for r in rows.itertuples():
            cells = [r.metric_x, r.metric_y, r.coefficient, f"{r.value:.3f}"]
            if n_resamples:
                cells.append("-" if np.isnan(r.ci_low) else f"[{r.ci_low:.3f}, {r.ci_high:.3f}]")
            t.add_row(*cells)
        t.add_section()
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
@reports_errors
def correlate(
    runs: RunsArg = None,
    qrels: QrelsOpt = None,
    measures: Annotated[Optional[list[str]], typer.Option("--measure", "-m", help="Measure (repeat; at least two). "
                        f"Default: {', '.join(DEFAULT_MEASURES)}.")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Directory for CSV tables and PNG figures.")] = None,
    resamples: Annotated[int, typer.Option("--resamples", "-B", min=0, help="Bootstrap replicates over topics "
                                           "(0: no confidence intervals).")] = 1000,
    confidence: Annotated[float, typer.Option(min=0.5, max=0.999, help="Confidence level of the intervals.")] = 0.95,
    ci: Annotated[CIMethod, typer.Option(help="Bootstrap interval: percentile, or basic (corrects the downward shift "
                                         "of the replicates; see correlate_systems).")] = CIMethod.percentile,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap replicate design (shared with the test).")] = 0,
    test: Annotated[SignificanceTest, typer.Option(help="Pairwise test that decides which swapped system pairs are "
                                                   "significant: Sakai's paired bootstrap (B = --resamples, or 1000 "
                                                   "when it is 0), paired t-test, or none.")]
    = SignificanceTest.bootstrap,
    alpha: Annotated[float, typer.Option(help="Significance level for the swaps.")] = 0.05,
    per_topic: Annotated[TopicMethod, typer.Option(help="Coefficient of the per-topic correlations.")]
    = TopicMethod.pearson,
    depth: DepthOpt = None,
    rel_level: LevelOpt = 1,
    missing: MissingOpt = Missing.zero,
    unjudged: UnjudgedOpt = Unjudged.nonrel,
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
    col = collection_from_cli(qrels, runs, depth, rel_level, missing, unjudged, progress=progress)
    scores = {name: np.asarray(me.score(col, name)) for name in dict.fromkeys(names)}  # keep the user's spelling
    systems = list(col.systems)
    sysres = correlate_systems(scores, systems, n_resamples=resamples, confidence=confidence, seed=seed,
                               ci_method=ci.value, progress=progress)
    topres = correlate_topics(scores, list(col.topics), method=per_topic.value)
    pvals = _pvalues(scores, systems, test, resamples or 1000, alpha, seed, progress)
    swaps = swap_table(scores, pvals, alpha=alpha, systems=systems)

    console.print(f"{len(systems)} systems × {len(col.topics)} topics; measures: {', '.join(scores)}")
    _print_systems(console, sysres.table, confidence, resamples)
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
                pair = f"{slug(x)}__{slug(y)}"
                figs[f"scatter_{pair}.png"] = means_scatter(scores[x], scores[y], name_x=x, name_y=y)
                figs[f"rankrank_{pair}.png"] = rank_rank(scores[x], scores[y], name_x=x, name_y=y)
        for fname, fig in figs.items():
            fig.savefig(out / fname, dpi=120)
        written += len(figs)
    console.print(f"wrote {written} files to {out}")
