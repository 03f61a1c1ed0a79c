"""Every analysis command, generated from the analyses' declarations (:mod:`meta_eval.analyses`).

Each analysis of the registry gets a command of its name (``meta-eval discpower``, ``meta-eval split-half``, a
module dropped into the analyses package included) with the same options as its study stage: what it reads (the
runs and ``--qrels``, or ``--scores FILE`` for an analysis of scores; the measures alone, as arguments, for an
analysis of measures), ``--measure/-m`` and ``--against/-a``, ``--system``/``--topic`` (a subset), one option per
declared parameter (its flags, type, repeatability, help and domain from the
:class:`~meta_eval.core.params.Param`, checked against the declaration), ``--standardise`` and
``--jobs/--scheduler`` where the analysis uses them, the result folder options, and the collection's reading
options. ``meta-eval analysis SPEC`` runs any analysis, a plug-in (``my.py:NAME(param=value)``) included, and lists
them without a SPEC.

A command prints the analysis's compact tables and findings and, with ``--out``, writes its result folder through
the one writer of result folders (:func:`write_result`): the same files as its study stage (CSVs, LaTeX tables,
figures), with ``report.md``/``report.html`` and ``manifest.json``.
"""

from __future__ import annotations

import inspect
import json
import shlex
import sys
from enum import Enum
from typing import Annotated, Any, Optional

import typer

from meta_eval.cli.app import app
from meta_eval.cli.common import (DATA_PARAMETERS, PARALLEL_PARAMETERS, STANDARDISE_PARAMETER, WRITING_PARAMETERS,
                                  DataOptions, data_parameters, figure_formats, folder_target, reports_errors,
                                  writing_options)


def _typer_type(param) -> Any:
    """The Python type Typer parses a parameter's text into (an Enum of its choices, so a typo shows them)."""
    from meta_eval.core.params import parse_bool

    if param.choices:
        return Enum(f"{param.name.title().replace('_', '')}Choice", {c: c for c in param.choices}, type=str)
    if param.parse is parse_bool:
        return bool
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


def param_option(param, name: str | None = None, flags: tuple[str, ...] | None = None,
                 default: Any = inspect.Parameter.empty) -> inspect.Parameter:
    """The Typer option of a declared parameter (``name``/``flags``: another keyword and spelling, as the study's
    ``--split-half-splits`` for split-half's ``--splits``; ``default``: None, so that an option not given leaves
    the declaration's default to apply)."""
    base = _typer_type(param)
    kind = list[base] if param.many else base
    flags = flags or param.flags or (param.option,)
    shown = "" if param.default is None else (", ".join(map(str, param.default)) if param.many else param.default)
    help_text = (param.doc[:1].upper() + param.doc[1:] if param.doc else param.name) + \
        (" (repeatable)" if param.many and "repeatable" not in param.doc else "") + \
        ("." if param.choices or _typer_type(param) is bool else f". Allowed: {param.domain_text}.")
    info = typer.Option(*flags, help=help_text + (f" Default: {shown}." if shown != "" else ""), show_default=False,
                        **_closed_range(param))
    if default is inspect.Parameter.empty:
        default = None if param.default is None or param.many else \
            (param.default if not param.choices else base(param.default))
    optional = default is None
    annotation = Annotated[Optional[kind] if optional else kind, info]
    return inspect.Parameter(name or param.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                             annotation=annotation)


def given_values(decl, given: dict[str, Any], where: str, names: dict[str, str] | None = None) -> dict[str, Any]:
    """The parameters given on a command line (Enums as their values, lists as tuples; options not given left
    out), each checked against its declaration with the option's spelling in the message. ``names``: parameter ->
    the keyword it was given under (default: its own name)."""
    from dataclasses import replace

    from meta_eval.core.params import unique

    out = {}
    for param in decl.params:
        key = (names or {}).get(param.name, param.name)
        value = given.get(key)
        if value is None or (param.many and not value):
            continue
        flag = (param.flags or (param.option,))[0]
        if isinstance(value, list):
            value = unique([v.value if isinstance(v, Enum) else v for v in value], flag)
        elif isinstance(value, Enum):
            value = value.value
        out[param.name] = replace(param, name=flag).validate(value, where, "option")
    return out


def run_analysis(decl, params: dict[str, Any], data: DataOptions, *, out=None, overwrite=False, fmt=None,
                 dpi=300, figures=True) -> Any:
    """Read the data the analysis needs, run it, print its tables and findings, write ``--out``."""
    from meta_eval.core.parallel import connect_scheduler

    bound = decl.bind(params, f"meta-eval {decl.name}")
    data.check_measures(decl)
    if decl.before is not None:
        decl.before(bound)
    formats = figure_formats(fmt)
    target = folder_target(out, decl.name, overwrite=overwrite, inputs=data.declared_inputs(decl.input_files(bound)))
    connect_scheduler(data.scheduler, data.jobs)  # an unreachable scheduler fails before any work
    analysis_data = data.load(decl)
    result = decl(analysis_data, **bound)
    show(result)
    if target is not None:
        write_result(result, analysis_data, target, formats, dpi, figures, decl.title, progress=data.progress)
    return result


def show(result) -> None:
    """Print the result's compact tables and its findings."""
    from rich.console import Console

    console = Console()
    for t in result.outputs:
        if t.compact is not None:
            console.print(t.compact.to_rich(title=t.caption))
    for finding in result.finding_list:
        console.print(finding.sentence, highlight=False)


def write_result(result, data, target, formats, dpi: int, figures: bool = True, title: str = "", *,
                 progress: bool = False) -> None:
    """Write a result into the result folder ``target`` (checked at the command's start by
    :func:`meta_eval.cli.common.folder_target`) through the study's writer (:meth:`meta_eval.rendering.report.
    Report.add`): each table's CSV, its LaTeX form when it has a compact one, every figure (``progress``: with a
    display of the figures written), the data files (``standardisation.csv``), ``report.md``/``report.html`` and
    the manifest."""
    from meta_eval.rendering.report import Report

    with target.open() as tmp:
        report = Report(tmp, f"meta-eval {result.analysis}", formats=formats, dpi=dpi, figures=figures,
                        progress=progress)
        try:
            found = result.finding_list
            report.section("Findings", "\n".join(f"- {f.sentence}" for f in found) if found else
                           "No numbers to summarise.")
            report.add(report.section(title or result.analysis), result, every_figure=True)
            report.add_data(data)
            report.write()
            report.write_text("manifest.json", json.dumps(
                {"meta_eval": result.analysis, "command": "meta-eval " + shlex.join(sys.argv[1:]),
                 "params": result.params, "measures": list(data.raw), "against": list(data.against),
                 "standardise": data.standardise}, indent=2, default=str) + "\n")
        finally:
            report.close()
        written = sorted(p.name for p in tmp.iterdir())
    print(f"wrote {', '.join(written)} to {target.out}", file=sys.stderr)


def make_command(decl) -> Any:
    """The Typer command of an analysis declaration."""
    own = [param_option(p) for p in decl.params]
    reading = data_parameters(decl)
    extra = [STANDARDISE_PARAMETER] if decl.standardised and decl.needs != "measures" else []
    if decl.parallel:
        extra += PARALLEL_PARAMETERS
    writing = list(WRITING_PARAMETERS)
    names = {p.name for p in own}
    clash = names & {p.name for p in (*reading, *extra, *writing)}
    if clash:
        raise RuntimeError(f"analysis {decl.name}: parameters {sorted(clash)} clash with the command's own options")

    def command(**given) -> None:
        from meta_eval.analyses import get_analysis

        current = get_analysis(decl.name)  # the registry's entry when the command runs, not when it was made
        own_values = {k: given.pop(k) for k in list(given) if k in names}  # first: ltr's own --rel-level is its own
        how = writing_options(given)
        data = DataOptions.from_command(given, current.needs, current.measures)
        run_analysis(current, given_values(current, own_values, f"meta-eval {decl.name}"), data, **how)

    first = [p for p in reading if p.name in ("runs", "measures_args")]
    rest = [p for p in reading if p not in first]
    params = [*first, *own, *extra, *writing, *rest]
    command.__signature__ = inspect.Signature(params)
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__name__ = decl.name.replace("-", "_")
    command.__doc__ = _help(decl)
    return reports_errors(command)


def _help(decl) -> str:
    """The command's help: the run function's docstring (its first paragraph), what it reads, what --out writes."""
    lines = (decl.run.__doc__ or decl.summary).strip().split("\n\n")[0]
    reads = {"measures": "It needs the measures only.",
             "scores": "It reads runs and qrels, or per-topic score tables (--scores).",
             "collection": "It reads runs and qrels (the rankings, not only their scores)."}[decl.needs]
    return " ".join(line.strip() for line in lines.splitlines()) + f" {reads} With --out: the same files as its " \
        "study stage (CSV and LaTeX tables, figures), report.md/report.html and manifest.json."


def _register() -> None:
    """A command for every built-in analysis (imported when one of them is used)."""
    from meta_eval.analyses import analyses

    for decl in analyses():
        app.command(decl.name)(make_command(decl))


_register()


def analysis_command(spec: str | None = None, **given) -> None:
    """Run one analysis — a built-in or your own (file.py:NAME) — on the collection: its tables and findings, and
    with --out its result folder (CSVs, LaTeX tables, figures, report.md and report.html). Without SPEC: list every
    analysis and its parameters."""
    from meta_eval.analyses import analyses, parse_analysis

    if spec is None:
        _list(analyses())
        return
    decl, params = parse_analysis(spec)
    how = writing_options(given)
    run_analysis(decl, params, DataOptions.from_command(given, decl.needs, decl.measures), **how)


def _analysis_signature() -> inspect.Signature:
    """SPEC, then the options every analysis may take (its own parameters go inside SPEC)."""
    spec = inspect.Parameter("spec", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Annotated[
        Optional[str], typer.Argument(help="The analysis: a name (anova), with parameters "
                                      "(judge-agreement(other_qrels=llm.qrels)), or a plug-in file.py:NAME / "
                                      "module:NAME. Without it, the analyses are listed.", show_default=False)])
    how = [STANDARDISE_PARAMETER, *PARALLEL_PARAMETERS, *WRITING_PARAMETERS]
    reading = list(DATA_PARAMETERS)
    first = [p for p in reading if p.name == "runs"]
    return inspect.Signature([spec, *first, *how, *(p for p in reading if p not in first)])


analysis_command.__signature__ = _analysis_signature()
analysis_command.__annotations__ = {p.name: p.annotation for p in analysis_command.__signature__.parameters.values()}
app.command("analysis")(reports_errors(analysis_command))


def _list(found) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="Analyses (meta-eval NAME, or meta-eval analysis NAME(param=value); study --skip NAME)",
                  title_justify="left")
    for column in ("name", "what", "parameters"):
        table.add_column(column, no_wrap=column == "name")
    for decl in found:
        params = "; ".join(f"{p.name}={_shown(p.default)} ({p.domain_text})" for p in decl.params) or "–"
        table.add_row(decl.name, decl.summary, params)
    Console().print(table)
    print("A plug-in: meta-eval analysis my.py:NAME (see meta_eval.analyses).", file=sys.stderr)


def _shown(value) -> str:
    from meta_eval.core.params import format_value

    return "None" if value is None else format_value(value)
