"""``meta-eval correlate``: correlation between metrics (system rankings, per-topic scores, swaps) with figures."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from meta_eval.cli.app import app
from meta_eval.cli.common import (AlphaOpt, CIMethod, CIOpt, CollectionOptions, ConfidenceOpt, DpiOpt, FormatOpt,
                                  OutDirOpt, OverwriteOpt, SeedOpt, StandardiseOpt, figure_formats, folder_target,
                                  measures_option, reports_errors, standardise_label, standardise_scores,
                                  with_collection, write_standardisation)

DEFAULT_MEASURES = ("AP", "GAP", "nDCG", "P@10")

MeasuresOpt = measures_option(DEFAULT_MEASURES, "Measure (at least two; the first is the reference of the "
                              "scatter and rank plots)")


class SignificanceTest(str, Enum):
    bootstrap = "bootstrap"
    ttest = "ttest"
    none = "none"


class TopicMethod(str, Enum):
    pearson = "pearson"
    spearman = "spearman"
    kendall = "kendall"


def _pvalues(scores, systems: list[str], test: SignificanceTest, n_resamples: int, alpha: float, seed: int | None,
             progress: bool):
    """Condensed pairwise p-values (pairs a < b, row-major) per metric, from meta_eval.statistics.significance."""
    if test is SignificanceTest.none:
        return None
    from meta_eval.statistics import significance as discpower

    out = {}
    for name, s in scores.items():
        if test is SignificanceTest.bootstrap:
            result = discpower.paired_bootstrap(s, systems, n_resamples=n_resamples, alpha=alpha, seed=seed,
                                                progress=progress)
        else:
            result = discpower.classical_test(s, systems, test="ttest", alpha=alpha)
        out[name] = result.asl
    return out


@app.command()
@reports_errors
@with_collection
def correlate(
    inputs: CollectionOptions,
    measures: MeasuresOpt = None,
    out: OutDirOpt = None,
    overwrite: OverwriteOpt = False,
    resamples: Annotated[int, typer.Option("--resamples", "-B", min=0, help="Replicates of the randomised procedures "
                                           "(bootstrap intervals over topics; 0: no intervals).")] = 1000,
    confidence: ConfidenceOpt = 0.95,
    ci: CIOpt = CIMethod.normal,
    seed: SeedOpt = 0,
    test: Annotated[SignificanceTest, typer.Option(help="Pairwise test that decides which swapped system pairs are "
                                                   "significant: Sakai's paired bootstrap (B = --resamples, or 1000 "
                                                   "when it is 0), paired t-test, or none.")]
    = SignificanceTest.bootstrap,
    alpha: AlphaOpt = 0.05,
    per_topic: Annotated[TopicMethod, typer.Option(help="Coefficient of the per-topic correlations.")]
    = TopicMethod.pearson,
    standardise: StandardiseOpt = None,
    fmt: FormatOpt = None,
    dpi: DpiOpt = 300,
    figures: Annotated[bool, typer.Option(help="Write figures to --out.")] = True,
) -> None:
    """Correlate metrics: Kendall's tau-b, tau_AP (both directions, symmetrised, tie-aware), Spearman and Pearson on
    system rankings with bootstrap intervals; per-topic correlation matrices; system-pair swaps and their
    significance. In tau_AP(y|x) the metric x is the reference. With --out: system_correlation.csv (every
    coefficient), system_means.csv, topic_correlation.csv, swaps.csv, LaTeX tables and the figures. --standardise:
    on per-topic standardised scores, with their reference in standardisation.csv."""
    qrels, runs, progress = inputs.qrels, inputs.runs, inputs.progress
    import numpy as np
    from rich.console import Console

    import meta_eval as me
    from meta_eval.statistics.correlation import correlate_systems, correlate_topics, swap_table
    from meta_eval.rendering.figure_style import check_formats
    from meta_eval.rendering.paper_table import PaperTable, agreement_table, swaps_compact

    console = Console()
    if not console.is_terminal:  # files and pipes: wide enough for the tables
        console = Console(width=160)
    names = list(measures or DEFAULT_MEASURES)
    formats = check_formats(figure_formats(fmt))
    target = folder_target(out, "correlate", overwrite=overwrite, qrels=qrels, runs=runs, measures=measures, files=())
    col = inputs.load()
    scores = {name: np.asarray(me.score(col, name)) for name in dict.fromkeys(names)}  # keep the user's spelling
    scores, reference = standardise_scores(scores, standardise, list(col.topics))
    systems = list(col.systems)
    sysres = correlate_systems(scores, systems, n_resamples=resamples, confidence=confidence, seed=seed,
                               ci_method=ci.value, progress=progress)
    topres = correlate_topics(scores, list(col.topics), method=per_topic.value)
    pvals = _pvalues(scores, systems, test, resamples or 1000, alpha, seed, progress)
    swaps = swap_table(scores, pvals, alpha=alpha, systems=systems)

    console.print(f"{len(systems)} systems × {len(col.topics)} topics; measures: {', '.join(scores)}; "
                  f"{standardise_label(standardise)}")
    agreement = agreement_table(sysres)
    console.print(agreement.to_rich())
    if agreement.note:
        console.print(agreement.note)
    directional = sysres.matrix("tau_ap")
    tau_ap = PaperTable(directional, caption="tau_AP(column | row): the row metric is the reference")
    console.print(tau_ap.to_rich())
    pooled = PaperTable(topres.pooled, caption=f"Per-topic scores, pooled {per_topic.value} (all system-topic pairs)")
    console.print(pooled.to_rich())
    mean = PaperTable(topres.mean, caption=f"Per-topic scores, mean over topics of {per_topic.value}")
    console.print(mean.to_rich())
    console.print(swaps_compact(swaps).to_rich(f"System-pair swaps (significant: {test.value}, alpha={alpha:g})"))

    if out is None:
        return
    with target.open() as tmp:
        write_standardisation(tmp, standardise, reference)
        sysres.table.to_csv(tmp / "system_correlation.csv", index=False)
        sysres.means.to_csv(tmp / "system_means.csv")
        topres.to_frame().to_csv(tmp / "topic_correlation.csv", index=False)
        swaps.to_csv(tmp / "swaps.csv", index=False)
        (tmp / "system_correlation.tex").write_text(agreement.to_latex("tab:system_correlation"))
        (tmp / "tau_ap.tex").write_text(tau_ap.to_latex("tab:tau_ap"))
        if figures:
            _figures(tmp, scores, sysres, topres, per_topic.value, formats, dpi)
        written = len(list(tmp.iterdir()))
    console.print(f"wrote {written} files to {out}")


def _figures(folder, scores, sysres, topres, per_topic: str, formats, dpi: int) -> None:
    from meta_eval.rendering.figures.correlation import correlation_heatmap, rank_grid, scatter_grid
    from meta_eval.rendering.figure_style import metric_colors, save_figure

    colors = metric_colors(list(scores))
    names = list(scores)
    figs = {
        "heatmap_agreement": correlation_heatmap(sysres.matrix("kendall_tau_b"), upper=sysres.matrix("tau_ap_sym"),
                                                 fmt=".2f"),
        "heatmap_tau_ap": correlation_heatmap(sysres.matrix("tau_ap"), fmt=".2f"),
        f"heatmap_topics_{per_topic}": correlation_heatmap(topres.pooled, title=f"per-topic scores, pooled "
                                                           f"{per_topic}", lower=True, fmt=".2f"),
        "scatter_means": scatter_grid(scores, names[1:], names[:1], colors=colors),
        "rank_rank": rank_grid(scores, names[1:], names[:1], colors=colors),
    }
    for stem, fig in figs.items():
        save_figure(fig, folder / stem, formats, dpi=dpi, preview_dpi=150)
