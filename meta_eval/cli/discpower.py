"""``meta-eval discpower``: discriminative power of metrics (Sakai's bootstrap, Tukey HSD, classical tests), the
ASL-curve figure, and the GAP paper's best-systems inset."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

import typer

from meta_eval.cli.app import app
from meta_eval.core.parallel import connect_scheduler
from meta_eval.cli.common import (AlphaOpt, CollectionOptions, DpiOpt, FormatOpt, JobsOpt, OutDirOpt, OverwriteOpt,
                                  SchedulerOpt, SeedOpt, StandardiseOpt, figure_formats, folder_target,
                                  measures_option, reports_errors, resamples_option, standardise_label,
                                  standardise_scores, with_collection, write_standardisation)

DEFAULT_MEASURES = ("GAP", "nDCG", "AP")
# meta_eval.statistics.significance.METHODS, listed here so that --help does not import scipy (a test keeps them equal)
_TESTS, _CORRECTIONS = ("ttest", "wilcoxon", "sign"), ("holm", "bonferroni", "bh")
Method = Enum("Method", {m: m for m in ("bootstrap", "unpaired-bootstrap", "tukey", *_TESTS,
                                        *(f"{t}-{c}" for t in _TESTS for c in _CORRECTIONS))}, type=str)

MeasuresOpt = measures_option(DEFAULT_MEASURES)
ResamplesOpt = resamples_option("default 1000 for the bootstraps, 5000 for Tukey HSD")


def _print_summary(console, frame, title: str) -> None:
    from rich.table import Table

    t = Table(title=title)
    t.add_column("metric", no_wrap=True, min_width=max([6, *(len(m) for m in frame["metric"])]))
    t.add_column("method", no_wrap=True)
    for col in ("pairs", "significant", "proportion", "diff_required"):
        t.add_column(col, justify="right")
    for r in frame.itertuples(index=False):
        diff = "-" if r.diff_required != r.diff_required else f"{r.diff_required:.4f}"
        t.add_row(r.metric, r.method, str(r.pairs), str(r.significant), f"{r.proportion:.3f}", diff)
    console.print(t)


@app.command()
@reports_errors
@with_collection
def discpower(
    inputs: CollectionOptions,
    measures: MeasuresOpt = None,
    method: Annotated[Optional[list[Method]], typer.Option("--method", help="Test (repeatable): bootstrap (Sakai's "
                      "paired bootstrap), unpaired-bootstrap, tukey (randomised Tukey HSD), ttest, wilcoxon, sign, "
                      "and the corrected forms e.g. ttest-holm, wilcoxon-bh. Default: bootstrap.", show_default=False)]
    = None,
    resamples: ResamplesOpt = None,
    alpha: AlphaOpt = 0.05,
    top: Annotated[int, typer.Option(min=0, help="Also analyse the top-k systems by every metric (GAP paper, Fig. 3); "
                                     "0 to skip.")] = 15,
    system: Annotated[Optional[list[str]], typer.Option("--system", help="Analyse only these systems (repeat).")]
    = None,
    topic: Annotated[Optional[list[str]], typer.Option("--topic", help="Analyse only these topics (repeat).")] = None,
    standardise: StandardiseOpt = None,
    seed: SeedOpt = 0,
    out: OutDirOpt = None,
    overwrite: OverwriteOpt = False,
    fmt: FormatOpt = None,
    dpi: DpiOpt = 300,
    figures: Annotated[bool, typer.Option(help="Write the ASL-curve figure to --out.")] = True,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
) -> None:
    """Discriminative power: how many system pairs each metric tells apart (ASL < alpha), with the estimated
    difference required; Sakai's (2006) paired bootstrap by default, one replicate matrix shared by all metrics.
    With --out: summary.csv, asl.csv, the same for the top-k systems, and the ASL-curve figure. --standardise: on
    per-topic standardised scores (reference: every run of the collection), written to standardisation.csv."""
    qrels, runs, progress = inputs.qrels, inputs.runs, inputs.progress
    import numpy as np
    from rich.console import Console

    import meta_eval as me
    from meta_eval.statistics.best_systems import best_systems
    from meta_eval.statistics.significance.discriminative_power import discriminative_power
    from meta_eval.rendering.figure_style import check_formats
    from meta_eval.rendering.report import slug

    console = Console()
    names = list(measures or DEFAULT_MEASURES)
    methods = [m.value for m in method] if method else ["bootstrap"]
    formats = check_formats(figure_formats(fmt))
    target = folder_target(out, "discpower", overwrite=overwrite, qrels=qrels, runs=runs, measures=measures, files=())
    connect_scheduler(scheduler, jobs)  # an unreachable scheduler fails before any work
    col = inputs.load()
    scores = me.score(col, names)
    if not isinstance(scores, dict):
        scores = {names[0]: scores}
    scores, reference = standardise_scores(scores, standardise, list(col.topics))
    systems = list(col.systems)
    topics = None
    if topic:
        where = {t: i for i, t in enumerate(col.topics)}
        unknown = [t for t in topic if t not in where]
        if unknown:
            raise me.InputError(f"unknown topics {unknown[:5]}; the qrels have e.g. {list(col.topics)[:5]}")
        topics = np.array([where[t] for t in topic])
    common = dict(methods=methods, alpha=alpha, n_resamples=resamples, seed=seed, topics=topics,
                  progress=progress, jobs=jobs, scheduler=scheduler)
    result = discriminative_power(scores, systems, subset=system, **common)
    chosen = list(system) if system else systems
    top_result, best = None, []
    if 0 < top < len(chosen):
        sub = {m: s[[systems.index(n) for n in chosen]] for m, s in scores.items()}
        best = best_systems(sub, chosen, top)
        top_result = discriminative_power(scores, systems, subset=best, **common)

    n_top = len(topics) if topics is not None else len(col.topics)
    console.print(f"{len(chosen)} systems × {n_top} topics; measures: {', '.join(scores)}; alpha = {alpha:g}; "
                  f"{standardise_label(standardise)}")
    _print_summary(console, result.summary(), f"Discriminative power, all {len(chosen)} systems")
    if top_result is not None:
        _print_summary(console, top_result.summary(), f"Discriminative power, top {top} systems by every metric")

    if out is None:
        return
    with target.open() as tmp:
        write_standardisation(tmp, standardise, reference)
        result.summary().to_csv(tmp / "summary.csv", index=False)
        result.asl_table().to_csv(tmp / "asl.csv", index=False)
        if top_result is not None:
            top_result.summary().to_csv(tmp / "summary_top.csv", index=False)
            top_result.asl_table().to_csv(tmp / "asl_top.csv", index=False)
            (tmp / "top_systems.txt").write_text("\n".join(best) + "\n")
        if figures:
            from meta_eval.rendering.figures.asl import asl_curve_figure
            from meta_eval.rendering.figure_style import save_figure

            for m in methods:
                stem = "asl_curve" if len(methods) == 1 else f"asl_curve_{slug(m)}"
                fig = asl_curve_figure(result, top=top_result, method=m,
                                       top_label=f"top {top} systems" if top_result is not None else None)
                save_figure(fig, tmp / stem, formats, dpi=dpi, preview_dpi=150)
        written = sorted(p.name for p in tmp.iterdir())
    console.print(f"wrote {', '.join(written)} to {out}")
