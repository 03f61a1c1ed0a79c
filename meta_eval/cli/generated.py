"""Commands generated from the analyses' declarations (:mod:`meta_eval.analyses`).

Every built-in analysis that declares a ``command`` (``incomplete-judgments``, ``reusability``, ``anova``,
``intuitiveness``, ``split-half``, ``judge-agreement``) gets one: the runs, ``--qrels`` and ``--measure`` (the
analysis's default measures), one option per declared parameter (its flags, type, repeatability, help and domain
from the :class:`~meta_eval.core.params.Param`, its value checked against the declaration), ``--standardise`` and
``--jobs/--scheduler`` where the analysis uses them, the result folder options and the collection options
(:class:`~meta_eval.cli.common.CollectionOptions`). ``meta-eval analysis SPEC`` runs any analysis, a plug-in
(``my.py:NAME(param=value)``) included, and lists them without a SPEC.

Each command prints the analysis's compact tables and findings and, with ``--out``, writes the result folder
through the study's writer (:func:`write_result`: CSVs, LaTeX tables, figures, ``report.md`` and ``report.html``).
"""

from __future__ import annotations

import inspect
import sys
from enum import Enum
from typing import Annotated, Any, Optional

import typer

from meta_eval.cli.app import app
from meta_eval.cli.common import (CollectionOptions, DpiOpt, FormatOpt, JobsOpt, OutDirOpt, OverwriteOpt,
                                  SchedulerOpt, StandardiseOpt, figure_formats, folder_target, measures_option,
                                  reports_errors, with_collection)

def _typer_type(param) -> Any:
    """The Python type Typer parses a parameter's text into (an Enum of its choices, so a typo shows them)."""
    if param.choices:
        return Enum(f"{param.name.title().replace('_', '')}Choice", {c: c for c in param.choices}, type=str)
    return param.parse if param.parse in (int, float, str) else str


def _closed_range(param) -> dict[str, float]:
    """Typer's ``min``/``max`` for the closed ends of a parameter's interval (the command line then refuses a value
    as every command does: ``-1 is not in the range 0<=x<=...``); open ends are checked by the declaration."""
    import math

    from meta_eval.core.params import interval

    if not param.within or param.parse not in (int, float):
        return {}
    lo, lo_in, hi, hi_in = interval(param.within)
    out = {}
    if lo_in and math.isfinite(lo):
        out["min"] = param.parse(lo)
    if hi_in and math.isfinite(hi):
        out["max"] = param.parse(hi)
    return out


def _option(param) -> inspect.Parameter:
    """The Typer option of a declared parameter."""
    base = _typer_type(param)
    kind = list[base] if param.many else base
    optional = param.default is None or param.many
    flags = param.flags or (param.option,)
    shown = "" if param.default is None else (", ".join(map(str, param.default)) if param.many else param.default)
    help_text = (param.doc[:1].upper() + param.doc[1:] if param.doc else param.name) + \
        (" (repeatable)" if param.many and "repeatable" not in param.doc else "") + \
        ("." if param.choices else f". Allowed: {param.domain_text}.")
    info = typer.Option(*flags, help=help_text + (f" Default: {shown}." if shown != "" else ""), show_default=False,
                        **_closed_range(param))
    annotation = Annotated[Optional[kind] if optional else kind, info]
    default = None if optional else (param.default if not param.choices else base(param.default))
    return inspect.Parameter(param.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def _values(decl, given: dict[str, Any]) -> dict[str, Any]:
    """The parameters given on the command line (Enums as their values, lists as tuples), each checked against
    its declaration with the option's spelling in the message; the others at their defaults."""
    from dataclasses import replace

    out = decl.defaults()
    for param in decl.params:
        value = given.get(param.name)
        if value is None or (param.many and not value):
            continue
        if isinstance(value, list):
            value = tuple(v.value if isinstance(v, Enum) else v for v in value)
        elif isinstance(value, Enum):
            value = value.value
        out[param.name] = replace(param, name=param.option).validate(value, f"meta-eval {decl.command}", "option")
    return out


def run_analysis(decl, params: dict[str, Any], *, inputs: CollectionOptions, measures, standardise=None,
                 jobs=None, scheduler=None, out=None, overwrite=False, fmt=None, dpi=300) -> Any:
    """Load the collection, run the analysis, print its tables and findings, write ``--out``."""
    from meta_eval.analyses import AnalysisData
    from meta_eval.core.parallel import connect_scheduler

    specs = list(dict.fromkeys(measures or decl.measures))
    target = folder_target(out, decl.command or decl.name, overwrite=overwrite, qrels=inputs.qrels,
                           runs=inputs.runs, measures=specs, files=decl.input_files(params))
    connect_scheduler(scheduler, jobs)  # an unreachable scheduler fails before any work
    col = inputs.load()
    data = AnalysisData.from_collection(col, specs, standardise=getattr(standardise, "value", standardise),
                                        jobs=jobs, scheduler=scheduler, progress=inputs.progress)
    result = decl(data, **params)
    show(result)
    if target is not None:
        write_result(result, target, fmt, dpi, decl.title)
    return result


def show(result) -> None:
    """Print the result's compact tables and its findings."""
    from rich.console import Console

    console = Console()
    for t in result.outputs:
        if t.compact is not None:
            console.print(t.compact.to_rich(title=t.caption))
    for finding in result.findings():
        console.print(finding.sentence, highlight=False)


def write_result(result, target, fmt, dpi: int, title: str = "") -> None:
    """Write a result into the result folder ``target`` (checked at the command's start by
    :func:`meta_eval.cli.common.folder_target`) through the study's writer (:meth:`meta_eval.rendering.report.Report.add`):
    each table's CSV, its LaTeX form when it has a compact one, every figure, and ``report.md``/``report.html``
    with the findings, the method and the tables."""
    from meta_eval.rendering.figure_style import check_formats
    from meta_eval.rendering.report import Report

    formats = check_formats(figure_formats(fmt))
    with target.open() as tmp:
        report = Report(tmp, f"meta-eval {result.analysis}", formats=formats, dpi=dpi)
        try:
            found = result.findings()
            report.section("Findings", "\n".join(f"- {f.sentence}" for f in found) if found else
                           "No numbers to summarise.")
            report.add(report.section(title or result.analysis), result, every_figure=True)
            report.write()
        finally:
            report.close()
        written = sorted(p.name for p in tmp.iterdir())
    print(f"wrote {', '.join(written)} to {target.out}")


def make_command(decl) -> Any:
    """The Typer command of an analysis declaration."""
    own = [_option(p) for p in decl.params]
    extra = [inspect.Parameter("measures", inspect.Parameter.KEYWORD_ONLY, default=None,
                               annotation=measures_option(decl.measures))]
    if decl.standardised:
        extra.append(inspect.Parameter("standardise", inspect.Parameter.KEYWORD_ONLY, default=None,
                                       annotation=StandardiseOpt))
    if decl.parallel:
        extra += [inspect.Parameter("jobs", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=JobsOpt),
                  inspect.Parameter("scheduler", inspect.Parameter.KEYWORD_ONLY, default=None,
                                    annotation=SchedulerOpt)]
    writing = [inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=OutDirOpt),
               inspect.Parameter("overwrite", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=OverwriteOpt),
               inspect.Parameter("fmt", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=FormatOpt),
               inspect.Parameter("dpi", inspect.Parameter.KEYWORD_ONLY, default=300, annotation=DpiOpt)]
    collection = inspect.Parameter("inputs", inspect.Parameter.KEYWORD_ONLY, annotation=CollectionOptions)
    names = {p.name for p in own}

    def command(*, inputs: CollectionOptions, **given) -> None:
        how = {k: given.pop(k) for k in ("measures", "standardise", "jobs", "scheduler", "out", "overwrite", "fmt",
                                         "dpi") if k in given}
        run_analysis(decl, _values(decl, {k: v for k, v in given.items() if k in names}), inputs=inputs, **how)

    params = [collection, *extra[:1], *own, *extra[1:], *writing]
    command.__signature__ = inspect.Signature(params)
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__name__ = decl.command.replace("-", "_")
    command.__doc__ = _help(decl)
    return reports_errors(with_collection(command))


def _help(decl) -> str:
    """The command's help: the run function's docstring (its first paragraph), then what ``--out`` writes."""
    lines = (decl.run.__doc__ or decl.summary).strip().split("\n\n")[0]
    return " ".join(line.strip() for line in lines.splitlines()) + \
        " With --out: its tables (CSV and LaTeX), figures and report.md/report.html."


def _register() -> None:
    """A command for every built-in analysis that declares one (imported when one of them is used)."""
    from meta_eval.analyses import analyses

    for decl in analyses():
        if decl.command:
            app.command(decl.command)(make_command(decl))


_register()


@app.command("analysis")
@reports_errors
@with_collection
def analysis_command(
    inputs: CollectionOptions,
    spec: Annotated[Optional[str], typer.Argument(
        help="The analysis: a name (anova), with parameters (judge-agreement(other_qrels=llm.qrels)), or a plug-in "
        "file.py:NAME / module:NAME. Without it, the analyses are listed.", show_default=False)] = None,
    measures: Annotated[Optional[list[str]], typer.Option(
        "--measure", "-m", "--metric", help="Measure (repeatable): a name, a trec_eval name or file.py:function. "
        "Default: the analysis's own.", show_default=False)] = None,
    standardise: StandardiseOpt = None,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
    out: OutDirOpt = None,
    overwrite: OverwriteOpt = False,
    fmt: FormatOpt = None,
    dpi: DpiOpt = 300,
) -> None:
    """Run one analysis — a built-in or your own (file.py:NAME) — on the collection: its tables and findings, and
    with --out its result folder (CSVs, LaTeX tables, figures, report.md and report.html). Without SPEC: list every
    analysis and its parameters."""
    from meta_eval.analyses import analyses, parse_analysis

    if spec is None:
        _list(analyses())
        return
    decl, params = parse_analysis(spec)
    run_analysis(decl, decl.bind(params), inputs=inputs, measures=measures, standardise=standardise,
                 jobs=jobs, scheduler=scheduler, out=out, overwrite=overwrite, fmt=fmt, dpi=dpi)


def _list(found) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Analyses (meta-eval analysis NAME; study --analysis NAME(param=value); --skip NAME)",
                  title_justify="left")
    for column in ("name", "what", "parameters"):
        table.add_column(column)
    for decl in found:
        params = "; ".join(f"{p.name}={_shown(p.default)} ({p.domain_text})" for p in decl.params) or "–"
        table.add_row(decl.name, decl.summary, params)
    Console().print(table)
    print("A plug-in: meta-eval analysis my.py:NAME (see meta_eval.analyses).", file=sys.stderr)


def _shown(value) -> str:
    from meta_eval.core.params import format_value

    return "None" if value is None else format_value(value)
