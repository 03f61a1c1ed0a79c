"""``meta-eval study``: the whole meta-evaluation of metrics against GAP and nDCG, as a report folder.

Its options follow the analyses registry: what it reads and studies (as every analysis command), the parameters
every analysis shares once (``--seed``, ``--alpha``, ``--resamples/-B``, ``--confidence``), and each analysis's own
parameters prefixed with its name (``--split-half-splits``, ``--informativeness-lists``), grouped by analysis in
the help. A module dropped into the analyses package adds its options here too.
"""

from __future__ import annotations

import functools
import inspect
import shlex
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from meta_eval.cli.app import app
from meta_eval.cli.common import (DATA_PARAMETERS, PARALLEL_PARAMETERS, STANDARDISE_PARAMETER, WRITING_PARAMETERS,
                                  DataOptions, declared_inputs, figure_formats, reports_errors, writing_options)
from meta_eval.cli.generated import param_option
from meta_eval.core.params import unique

#: Options whose names changed when the study's options came to follow the analyses (what the help tells).
RENAMED = {"--top": "--discpower-top", "--ci": "--correlation-ci", "--mem-lists": "--informativeness-lists",
           "--g-grid-step": "--informativeness-g-grid", "--judgment-fraction": "--incomplete-judgments-fraction",
           "--judgment-draws": "--incomplete-judgments-draws", "--pool-depth": "--reusability-pool-depth",
           "--gold": "--intuitiveness-gold", "--ltr-folds": "--ltr-max-folds"}


@functools.cache
def _own_options() -> tuple[list[inspect.Parameter], dict[str, tuple[str, str]]]:
    """One option per parameter of every analysis that the study does not share, named after the analysis, and
    where each goes (keyword -> (analysis, parameter)); made once, for the signature and for each run."""
    from meta_eval.analyses import analyses
    from meta_eval.orchestration.study import SHARED, study_flag

    options, where = [], {}
    for decl in analyses():
        for param in decl.params:
            if param.name in SHARED:
                continue
            key = f"{decl.name.replace('-', '_')}__{param.name}"
            flag = study_flag(decl, param)
            option = param_option(param, name=key, flags=(flag,), default=None)
            option.annotation.__metadata__[0].rich_help_panel = decl.title
            options.append(option)
            where[key] = (decl.name, param.name)
    return options, where


def _shared_options() -> list[inspect.Parameter]:
    from meta_eval.core.params import ANALYSIS_PARAMS
    from meta_eval.orchestration.study import SHARED

    out = []
    for name in SHARED:
        param = ANALYSIS_PARAMS[name]
        flags = ("--resamples", "-B") if name == "n_resamples" else (param.option,)
        out.append(param_option(param, flags=flags))
    return out


#: A study option's parameter here -> its name in a study file (the others have the same name in both).
_IN_STUDY_FILE = {"measures": "metrics", "fmt": "formats", "analysis": "analyses", "float32": "score_precision"}


def _set_on_the_command_line(ctx: typer.Context) -> set[str]:
    """The options the command line (or the environment) set, as a study file names them."""
    return {_IN_STUDY_FILE.get(name, name) for name in ctx.params
            if ctx.get_parameter_source(name).name in ("COMMANDLINE", "ENVIRONMENT")}


def _skip_option():
    from meta_eval.analyses import builtin_names

    stage = Enum("Stage", {name.replace("-", "_"): name for name in builtin_names() if name != "scores"}, type=str)
    return Annotated[Optional[list[stage]], typer.Option(help="Skip an analysis (repeatable).", show_default=False)]


def study(**given) -> None:
    """Meta-evaluate metrics against GAP and nDCG: findings, then every analysis of the registry that applies —
    scores, formal properties, discriminative power, split-half stability, ANOVA and topic-set size, correlation,
    intuitiveness, incomplete judgments, pool reusability and informativeness (and, when given their data, learning
    to rank, another judge's agreement, a baseline comparison, the error rates of significance tests) — written to
    OUT/report.md and OUT/report.html with the tables (CSV and LaTeX), figures (PDF with PNG previews by default)
    and a manifest.json listing every file, to rerun it. With --scores (per-topic score tables instead of runs and
    qrels) the analyses of scores run and the others are listed as not applicable."""
    import time

    from meta_eval.core.parallel import connect_scheduler
    from meta_eval.outputs.result_folder import _signals_blocked, check_output_folder

    started = time.perf_counter()
    # Ctrl-C while a C extension initialises (pandas, numpy) leaves a half-imported module and a confusing error
    # instead of a KeyboardInterrupt: the study's libraries are imported with SIGINT held until they are loaded.
    with _signals_blocked():
        import pandas  # noqa: F401

        from meta_eval.orchestration.study import StudyOptions, analysis_inputs, check_before, run_study

    set_here = _set_on_the_command_line(given.pop("ctx"))
    _, where = _own_options()
    params: dict[str, dict] = {}
    for key, (name, param) in where.items():
        value = given.pop(key, None)
        if value is not None and value != []:
            params.setdefault(name, {})[param] = _unique(name, param, value) if isinstance(value, list) \
                else _plain(value)
    writing = writing_options(given)
    out, overwrite = writing["out"], writing["overwrite"]
    collections, study_file = given.pop("collection"), given.pop("study_file")
    skip, added = given.pop("skip"), given.pop("analysis")
    shared = {name: given.pop(name) for name in ("seed", "alpha", "n_resamples", "confidence")}
    formats, dpi, figures = figure_formats(writing["fmt"]), writing["dpi"], writing["figures"]
    data = DataOptions.from_command(given)
    metrics, against = data._measures()
    options = StudyOptions(metrics=tuple(metrics), against=tuple(against), params=params,
                           skip=unique(_plain(skip or []), "--skip"), analyses=tuple(added or ()),
                           standardise=data.standardise, formats=formats, dpi=dpi, figures=figures,
                           systems=tuple(data.systems or ()), topics=tuple(data.topics or ()), **shared).check()
    declared = declared_inputs(data.collection.qrels, [*(data.collection.runs or ()), *(data.scores or ())],
                               [*options.metrics, *options.against],
                               [study_file, *_collection_files(collections), *analysis_inputs(options)])
    check_output_folder(out, kind="study", inputs=declared, overwrite=overwrite)  # before any work
    data.check_measures()
    check_before(options)
    connect_scheduler(data.scheduler, data.jobs)
    command = {"command": "meta-eval " + shlex.join(sys.argv[1:])}
    how = dict(jobs=data.jobs, scheduler=data.scheduler, progress=data.progress, inputs=command, overwrite=overwrite)
    if collections or study_file:
        from meta_eval.orchestration.multi_collection_study import run_several

        result = run_several(collections, study_file, data.collection.load_options(), options, out,
                             extra=data.collection.runs or data.collection.qrels or data.scores, given=set_here,
                             **how)
        failed = [f"{name}: {stage}" for name, errors in result.errors.items() for stage in errors]
    else:
        reading = time.perf_counter()
        source = data.score_table() if data.scores else data.collection.load()
        reading = time.perf_counter() - reading
        result = run_study(source, out, options, **how)
        _print_timings(result, reading, time.perf_counter() - started)
        failed = list(result.errors)
    if failed:  # the report is written, with the failures marked; a script must still see that it is incomplete
        print(f"meta-eval: error: {len(failed)} analysis(es) failed ({', '.join(failed)}); the report marks them",
              file=sys.stderr)
        raise typer.Exit(code=1)


def _unique(analysis: str, param: str, values: list) -> tuple:
    """The values of a repeatable option of the study, each once (:func:`unique`, with the study's spelling)."""
    from meta_eval.analyses import analyses
    from meta_eval.orchestration.study import study_flag

    decl = next(d for d in analyses() if d.name == analysis)
    return unique(_plain(values), study_flag(decl, decl.param(param)))


def _plain(value):
    if isinstance(value, list):
        return tuple(v.value if isinstance(v, Enum) else v for v in value)
    return value.value if isinstance(value, Enum) else value


def _print_timings(result, reading: float, total: float) -> None:
    from rich.console import Console

    console = Console(stderr=True)
    times = dict(result.timings)
    steps = [s for s in times if s not in ("scoring", "report", "total")]
    for step in steps:
        status = "[red]failed[/red]" if step in result.errors else "ok"
        console.print(f"{step:>20s}: {times[step]:7.2f} s  {status}")
    for step, why in result.skipped.items():
        console.print(f"{step:>20s}:   not applicable ({why})")
    analyses = sum(times[s] for s in steps)
    # one total, the command's own wall time (the analysis times and the progress line are parts of it)
    console.print(f"{'total':>20s}: {total:7.2f} s  (reading {reading:.1f} s, scoring {times.get('scoring', 0):.1f}"
                  f" s, analyses {analyses:.1f} s, report {times.get('report', 0):.1f} s)")
    for step, error in result.errors.items():
        console.print(f"[red]{step} failed:[/red] {error}")
    console.print(f"report: {result.out / 'report.html'}")


def _collection_files(collections: list[str] | None) -> list[str]:
    """The qrels and run specifications named by ``--collection NAME=QRELS:RUNS`` (for the output checks; the
    specifications themselves are checked when the collections are parsed)."""
    files = []
    for text in collections or ():
        qrels, _, runs = text.partition("=")[2].partition(":")
        files += [qrels, *runs.split(",")]
    return [f for f in files if f]


def _signature() -> inspect.Signature:
    keyword = inspect.Parameter.KEYWORD_ONLY
    reading = list(DATA_PARAMETERS)
    first = [p for p in reading if p.name == "runs"]
    own, _ = _own_options()
    renamed = "; ".join(f"{old} is now {new}" for old, new in RENAMED.items())
    _, overwrite, *figures = WRITING_PARAMETERS  # the study's --out is a report folder with a default name
    study_options = [
        inspect.Parameter("out", keyword, default=Path("meta-eval-study"), annotation=Annotated[Path, typer.Option(
            "--out", "-o", help="Report folder (written completely or not at all; an earlier meta-eval result folder "
            "there is replaced, anything else is refused).")]),
        overwrite,
        *_shared_options(),
        inspect.Parameter("skip", keyword, default=None, annotation=_skip_option()),
        inspect.Parameter("analysis", keyword, default=None, annotation=Annotated[Optional[list[str]], typer.Option(
            "--analysis", help="Add an analysis (repeatable): your own, file.py:NAME or module:NAME, with parameters "
            "as file.py:NAME(k=5); or a built-in with parameters, e.g. judge-agreement(other_qrels=llm.qrels). "
            "meta-eval analysis lists them.", show_default=False)]),
        STANDARDISE_PARAMETER,
        *figures,
        inspect.Parameter("collection", keyword, default=None, annotation=Annotated[Optional[list[str]], typer.Option(
            "--collection", "-c", help="A collection NAME=QRELS:RUNS (repeatable; RUNS a file, folder or glob, "
            "several separated by commas): study each and compare them side by side in one report.",
            show_default=False)]),
        inspect.Parameter("study_file", keyword, default=None, annotation=Annotated[Optional[Path], typer.Option(
            "--study-file", help="A TOML study file naming the collections (\\[\\[collection]] name, qrels, runs) "
            "and the options (\\[study]); an option it sets may not be given here too.", show_default=False)]),
        *PARALLEL_PARAMETERS,
    ]
    study.__doc__ = study.__doc__.rstrip() + f" Renamed options: {renamed}."
    context = inspect.Parameter("ctx", keyword, annotation=typer.Context)
    return inspect.Signature([context, *first, *study_options, *(p for p in reading if p not in first), *own])


study.__signature__ = _signature()
study.__annotations__ = {p.name: p.annotation for p in study.__signature__.parameters.values()}
app.command("study")(reports_errors(study))
