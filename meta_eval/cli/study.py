"""``meta-eval study``: the whole meta-evaluation of metrics against GAP and nDCG, as a report folder."""

from __future__ import annotations

import shlex
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from meta_eval.analyses._registry import builtin_names
from meta_eval.cli.app import app
from meta_eval.cli.common import (AlphaOpt, CIMethod, CIOpt, CollectionOptions, ConfidenceOpt, DpiOpt, FormatOpt,
                                  JobsOpt, OverwriteOpt, SchedulerOpt, SeedOpt, StandardiseOpt,
                                  declared_inputs, figure_formats, measures_option, reports_errors,
                                  resamples_option, with_collection)

# the defaults are repeated here (meta_eval.orchestration.study would import numpy at --help time); a test keeps them equal
DEFAULT_METRICS = ("AP", "nDCG@10", "Q", "ERR")
DEFAULT_AGAINST = ("GAP", "nDCG")

MetricsOpt = measures_option(DEFAULT_METRICS, "Metric to study")
ResamplesOpt = resamples_option("bootstrap; default 1000")


#: The analyses ``--skip`` takes: every built-in but the scores (from the registry's list, without importing them).
Stage = Enum("Stage", {name.replace("-", "_"): name for name in builtin_names()[1:]}, type=str)


@app.command()
@reports_errors
@with_collection
def study(
    inputs: CollectionOptions,
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
    analysis: Annotated[Optional[list[str]], typer.Option(
        "--analysis", help="Add an analysis (repeatable): your own, file.py:NAME or module:NAME, with parameters "
        "as file.py:NAME(k=5); or a built-in with its other parameters, e.g. judge-agreement(other_qrels=llm.qrels) "
        "or incomplete-judgments(sampling=depth). meta-eval analysis lists them.", show_default=False)] = None,
    standardise: StandardiseOpt = None,
    judgment_fraction: Annotated[Optional[list[float]], typer.Option(
        "--judgment-fraction", min=0.0, max=1.0, help="Incomplete judgments: fraction of the qrels kept "
        "(repeatable). Default: 0.1, 0.2, ..., 0.9.", show_default=False)] = None,
    judgment_draws: Annotated[int, typer.Option(min=1, help="Incomplete judgments: seeded draws per fraction (the "
                                                "budget; 20 for tight intervals).")] = 5,
    split_half_splits: Annotated[int, typer.Option(min=1, help="Split-half stability: random splits per half "
                                                   "size.")] = 100,
    pool_depth: Annotated[int, typer.Option(min=1, help="Pool reusability: depth k of the pool a run "
                                            "contributes to.")] = 100,
    gold: Annotated[str, typer.Option(help="Intuitiveness: the gold criterion, a metric (P@10: relevant "
                                      "documents in the top 10).")] = "P@10",
    ltr_data: Annotated[Optional[str], typer.Option(
        "--ltr-data", help="Run the learning-to-rank stage on this LETOR file or folder ('demo': the embedded demo "
        "set): a LambdaMART ranker trained for each metric, beside its informativeness. Needs the ltr extra.",
        show_default=False)] = None,
    ltr_folds: Annotated[Optional[int], typer.Option(min=1, help="Learning to rank: folds used (default: all).",
                                                     show_default=False)] = None,
    ltr_rounds: Annotated[int, typer.Option(min=1, help="Learning to rank: boosting rounds at most (early "
                                            "stopping on validation).")] = 500,
    fmt: FormatOpt = None,
    dpi: DpiOpt = 300,
    collection: Annotated[Optional[list[str]], typer.Option(
        "--collection", "-c", help="A collection NAME=QRELS:RUNS (repeatable; RUNS a file, folder or glob, several "
        "separated by commas): study each and compare them side by side in one report.", show_default=False)] = None,
    study_file: Annotated[Optional[Path], typer.Option(
        "--study-file", help="A TOML study file naming the collections ([[collection]] name, qrels, runs) and the "
        "options ([study]); its options override the command line's.", show_default=False)] = None,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
    overwrite: OverwriteOpt = False,
) -> None:
    """Meta-evaluate metrics against GAP and nDCG: findings, scores, discriminative power, split-half stability,
    ANOVA and topic-set size, correlation, intuitiveness, incomplete judgments, pool reusability and
    informativeness (and, with --ltr-data, effectiveness when trained for each metric), written to OUT/report.md
    and OUT/report.html with the tables (CSV and LaTeX), figures (PDF with PNG previews by default) and a
    manifest.json listing every file, to rerun it."""
    import time
    from dataclasses import replace

    from rich.console import Console

    started = time.perf_counter()

    from meta_eval.core.parallel import connect_scheduler
    from meta_eval.outputs.result_folder import _signals_blocked, check_output_folder

    # Ctrl-C while a C extension initialises (pandas, numpy) leaves a half-imported module and a confusing error
    # instead of a KeyboardInterrupt: the study's libraries are imported with SIGINT held until they are loaded.
    with _signals_blocked():
        import pandas  # noqa: F401

        from meta_eval.orchestration.study import DEFAULT_FRACTIONS, StudyOptions, analysis_inputs, run_study

    options = StudyOptions(
        metrics=tuple(metric or DEFAULT_METRICS), against=tuple(against or DEFAULT_AGAINST), n_resamples=resamples,
        alpha=alpha, top=top, seed=seed, mem_lists=mem_lists, skip=tuple(s.value for s in skip or ()), ci=ci.value,
        confidence=confidence, formats=figure_formats(fmt), dpi=dpi,
        standardise=standardise.value if standardise else None,
        judgment_fractions=tuple(judgment_fraction) if judgment_fraction else DEFAULT_FRACTIONS,
        judgment_draws=judgment_draws, split_half_splits=split_half_splits, pool_depth=pool_depth, gold=gold,
        ltr_data=ltr_data, ltr_folds=ltr_folds, ltr_rounds=ltr_rounds, analyses=tuple(analysis or ())).check()
    qrels, progress = inputs.qrels, inputs.progress
    runs = inputs.runs
    declared = declared_inputs(qrels, runs, [*options.metrics, *options.against, options.gold],
                               [study_file, options.ltr_data, *_collection_files(collection),
                                *analysis_inputs(options)])
    check_output_folder(out, kind="study", inputs=declared, overwrite=overwrite)  # before any work
    connect_scheduler(scheduler, jobs)
    command = {"command": "meta-eval " + shlex.join(sys.argv[1:])}
    if collection or study_file:
        from meta_eval.orchestration.multi_collection_study import run_several

        result = run_several(collection, study_file, inputs.load_options(), options, out, jobs=jobs,
                             scheduler=scheduler, progress=progress, inputs=command, extra=runs or qrels,
                             overwrite=overwrite)
        failed = [f"{name}: {stage}" for name, errors in result.errors.items() for stage in errors]
    else:
        reading = time.perf_counter()
        collection = replace(inputs, runs=runs).load()
        reading = time.perf_counter() - reading
        result = run_study(collection, out, options, progress=progress, inputs=command, jobs=jobs,
                           scheduler=scheduler, overwrite=overwrite)
        console = Console(stderr=True)
        times = dict(result.timings)
        for stage in [s for s in times if s not in ("scoring", "report", "total")]:
            status = "[red]failed[/red]" if stage in result.errors else "ok"
            console.print(f"{stage:>20s}: {times[stage]:7.2f} s  {status}")
        analyses = sum(v for k, v in times.items() if k not in ("scoring", "report", "total"))
        # one total, the command's own wall time (the stage times and the progress line are parts of it)
        total = time.perf_counter() - started
        console.print(f"{'total':>20s}: {total:7.2f} s  (reading {reading:.1f} s, scoring {times.get('scoring', 0):.1f}"
                      f" s, analyses {analyses:.1f} s, report {times.get('report', 0):.1f} s)")
        for stage, error in result.errors.items():
            console.print(f"[red]{stage} failed:[/red] {error}")
        console.print(f"report: {result.out / 'report.html'}")
        failed = list(result.errors)
    if failed:  # the report is written, with the failures marked; a script must still see that it is incomplete
        print(f"meta-eval: error: {len(failed)} stage(s) failed ({', '.join(failed)}); the report marks them",
              file=sys.stderr)
        raise typer.Exit(code=1)


def _collection_files(collections: list[str] | None) -> list[str]:
    """The qrels and run specifications named by ``--collection NAME=QRELS:RUNS`` (for the output checks; the
    specifications themselves are checked when the collections are parsed)."""
    files = []
    for text in collections or ():
        qrels, _, runs = text.partition("=")[2].partition(":")
        files += [qrels, *runs.split(",")]
    return [f for f in files if f]
