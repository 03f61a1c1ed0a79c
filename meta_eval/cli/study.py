"""``meta-eval study``: the whole meta-evaluation of metrics against GAP and nDCG, as a report folder."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from meta_eval.cli.app import app
from meta_eval.cli.common import (DepthOpt, LevelOpt, Missing, MissingOpt, QrelsOpt, Ties, TiesOpt, Unjudged,
                                  UnjudgedOpt, collection_from_cli, reports_errors)
from meta_eval.study import DEFAULT_AGAINST, DEFAULT_METRICS, STAGES, StudyOptions, run_study


@app.command()
@reports_errors
def study(
    qrels: QrelsOpt = None,
    runs: Annotated[Optional[list[str]], typer.Option("--runs", "-r", help="Run files, a directory or a glob "
                                                      "(repeatable). Default: the embedded demo collection.")] = None,
    metric: Annotated[Optional[list[str]], typer.Option(
        "--metric", "-m", help="Metric to study: a name (AP, nDCG@10, Q), module:function or file.py:function "
        f"(repeatable). Default: {', '.join(DEFAULT_METRICS)}.")] = None,
    against: Annotated[Optional[list[str]], typer.Option(
        "--against", "-a", help=f"Reference metrics (repeatable). Default: {', '.join(DEFAULT_AGAINST)}.")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Report folder.")] = Path("meta-eval-study"),
    resamples: Annotated[int, typer.Option("--B", "-B", min=10, help="Bootstrap replicates.")] = 1000,
    alpha: Annotated[float, typer.Option(help="Significance level.")] = 0.05,
    top: Annotated[int, typer.Option(help="Also analyse the top-k systems (discriminative power).")] = 15,
    seed: Annotated[int, typer.Option(help="Seed of every randomised procedure.")] = 0,
    mem_lists: Annotated[int, typer.Option(help="Lists sampled for the informativeness stage (0: all).")] = 300,
    skip: Annotated[Optional[list[str]], typer.Option(
        help=f"Skip a stage (repeatable): {', '.join(k for k, _ in STAGES if k != 'scores')}.")] = None,
    depth: DepthOpt = None,
    rel_level: LevelOpt = 1,
    missing: MissingOpt = Missing.zero,
    unjudged: UnjudgedOpt = Unjudged.nonrel,
    ties: TiesOpt = Ties.trec_eval,
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """Meta-evaluate metrics against GAP and nDCG: scores, discriminative power, correlation and informativeness,
    written to OUT/report.md and OUT/report.html with the CSVs, figures and a manifest.json to rerun it."""
    collection = collection_from_cli(qrels, runs, depth, rel_level, missing, unjudged, ties, progress=progress)
    options = StudyOptions(
        metrics=tuple(metric or DEFAULT_METRICS), against=tuple(against or DEFAULT_AGAINST), n_resamples=resamples,
        alpha=alpha, top=top, seed=seed, mem_lists=mem_lists, skip=tuple(skip or ()),
    )
    result = run_study(collection, out, options, progress=progress,
                       inputs={"command": "meta-eval " + shlex.join(sys.argv[1:])})
    console = Console(stderr=True)
    for stage, seconds in result.timings.items():
        status = "[red]failed[/red]" if stage in result.errors else "ok"
        console.print(f"{stage:>16s}: {seconds:7.2f} s  {status}")
    for stage, error in result.errors.items():
        console.print(f"[red]{stage} failed:[/red] {error}")
    console.print(f"report: {result.out / 'report.html'}")
