"""``meta-eval study``: the whole meta-evaluation of metrics against GAP and nDCG, as a report folder."""

from __future__ import annotations

import shlex
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from meta_eval.cli.app import app
from meta_eval.cli.common import (AlphaOpt, CIMethod, CIOpt, ConfidenceOpt, DepthOpt, DpiOpt, Float32Opt, FormatOpt,
                                  LevelOpt, Missing, MissingOpt, ProgressOpt, QrelsOpt, RunsArg, RunsOptDeprecated,
                                  SeedOpt, Ties, TiesOpt, Unjudged, UnjudgedOpt, collection_from_cli, figure_formats,
                                  measures_option, merge_runs, reports_errors, resamples_option)

# the defaults are repeated here (meta_eval.study would import numpy at --help time); a test keeps them equal
DEFAULT_METRICS = ("AP", "nDCG@10", "Q", "ERR")
DEFAULT_AGAINST = ("GAP", "nDCG")

MetricsOpt = measures_option(DEFAULT_METRICS, "Metric to study")
ResamplesOpt = resamples_option("bootstrap; default 1000")


class Stage(str, Enum):
    discpower = "discpower"
    correlation = "correlation"
    informativeness = "informativeness"


@app.command()
@reports_errors
def study(
    runs: RunsArg = None,
    qrels: QrelsOpt = None,
    metric: MetricsOpt = None,
    against: Annotated[Optional[list[str]], typer.Option(
        "--against", "-a", help=f"Reference metric (repeatable). Default: {', '.join(DEFAULT_AGAINST)}.",
        show_default=False)] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Report folder (written completely or not at all; an "
                                      "earlier meta-eval result folder there is replaced, anything else is "
                                      "refused).")] = Path("meta-eval-study"),
    resamples: ResamplesOpt = 1000,
    alpha: AlphaOpt = 0.05,
    top: Annotated[int, typer.Option(min=0, help="Also analyse the top-k systems (discriminative power); 0 to "
                                     "skip.")] = 15,
    seed: SeedOpt = 0,
    ci: CIOpt = CIMethod.normal,
    confidence: ConfidenceOpt = 0.95,
    mem_lists: Annotated[int, typer.Option(min=0, help="Lists sampled for the informativeness stage (0: all).")]
    = 300,
    skip: Annotated[Optional[list[Stage]], typer.Option(help="Skip a stage (repeatable).", show_default=False)]
    = None,
    fmt: FormatOpt = None,
    dpi: DpiOpt = 300,
    depth: DepthOpt = None,
    rel_level: LevelOpt = 1,
    missing: MissingOpt = Missing.zero,
    unjudged: UnjudgedOpt = Unjudged.nonrel,
    ties: TiesOpt = Ties.trec_eval,
    float32: Float32Opt = False,
    progress: ProgressOpt = True,
    runs_option: RunsOptDeprecated = None,
) -> None:
    """Meta-evaluate metrics against GAP and nDCG: findings, scores, discriminative power, correlation and
    informativeness, written to OUT/report.md and OUT/report.html with the tables (CSV and LaTeX), figures (PDF
    with PNG previews by default) and a manifest.json listing every file, to rerun it."""
    from rich.console import Console

    from meta_eval.resultdir import check_output_folder
    from meta_eval.study import StudyOptions, run_study

    options = StudyOptions(
        metrics=tuple(metric or DEFAULT_METRICS), against=tuple(against or DEFAULT_AGAINST), n_resamples=resamples,
        alpha=alpha, top=top, seed=seed, mem_lists=mem_lists, skip=tuple(s.value for s in skip or ()), ci=ci.value,
        confidence=confidence, formats=figure_formats(fmt), dpi=dpi).check()
    check_output_folder(out)
    collection = collection_from_cli(qrels, merge_runs(runs, runs_option), depth, rel_level, missing, unjudged, ties,
                                     float32, progress=progress)
    result = run_study(collection, out, options, progress=progress,
                       inputs={"command": "meta-eval " + shlex.join(sys.argv[1:])})
    console = Console(stderr=True)
    for stage, seconds in result.timings.items():
        status = "[red]failed[/red]" if stage in result.errors else "ok"
        console.print(f"{stage:>16s}: {seconds:7.2f} s  {status}")
    for stage, error in result.errors.items():
        console.print(f"[red]{stage} failed:[/red] {error}")
    console.print(f"report: {result.out / 'report.html'}")
