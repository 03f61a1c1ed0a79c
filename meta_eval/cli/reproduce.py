"""``meta-eval reproduce``: the seed papers' tables and figures beside the published numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from meta_eval.cli.app import app
from meta_eval.cli.common import (DpiOpt, FormatOpt, OutDirOpt, OverwriteOpt, figure_formats, folder_target,
                                  reports_errors)

if TYPE_CHECKING:  # pragma: no cover - numpy/pandas are imported when the command runs, not for --help
    from meta_eval.orchestration.reproduce import Reproduction

_STYLE = {"ok": "green", "MISMATCH": "bold red", "documented": "yellow", "info": "cyan"}


def _fmt(value, decimals) -> str:
    if value is None or value != value:  # None or NaN
        return "—"
    if decimals is not None and decimals == decimals:
        return f"{value:.{int(decimals)}f}"
    return f"{value:.6g}"


def _print(console: Console, result: Reproduction) -> None:
    table = Table(title=escape(f"{result.target}: {result.title}"), title_justify="left", show_lines=False)
    for name in ("row", "column", "published", "computed", "difference", "status"):
        table.add_column(name, justify="right" if name in ("published", "computed", "difference") else "left")
    for row in result.table.itertuples():
        digits = None if row.decimals is None or row.decimals != row.decimals else int(row.decimals)
        shown = _fmt(row.computed, digits + 1 if digits is not None else None)
        missing = row.published is None or row.published != row.published
        diff = "—" if missing else f"{row.computed - row.published:+.2g}"
        status = row.status + (f" (±{row.tolerance:.2g})" if row.tolerance == row.tolerance and row.tolerance
                               is not None and row.status != "info" else "")
        table.add_row(escape(row.row), escape(row.column), _fmt(row.published, digits), shown, diff,
                      f"[{_STYLE[row.status]}]{status}[/]")
    console.print(table)
    for note in result.table.note[result.table.status == "documented"]:
        console.print(f"  [yellow]documented:[/] {escape(note)}")
    for note in result.notes:
        console.print(f"  note: {escape(note)}")
    console.print(f"  {len(result.table)} values, {result.n_mismatches} mismatches, {result.seconds:.2f} s\n")


@app.command()
@reports_errors
def reproduce(
    target: Annotated[str, typer.Argument(help="Target to reproduce (see --list) or 'all'.")] = "all",
    out: OutDirOpt = None,
    overwrite: OverwriteOpt = False,
    fmt: FormatOpt = None,
    dpi: DpiOpt = 300,
    list_targets: Annotated[bool, typer.Option("--list", help="List the targets and exit.")] = False,
) -> None:
    """Reproduce the seed papers' tables and figures and compare them with the published numbers. With --out:
    TARGET.csv (target,row,column,published,computed) and TARGET.pdf (or --format) per target."""
    from meta_eval.rendering.figure_style import check_formats, save_figure
    from meta_eval.orchestration.reproduce import TARGETS
    from meta_eval.orchestration.reproduce import reproduce as run_target

    console = Console()
    if not console.is_terminal:  # files and pipes: wide enough for the tables
        console = Console(width=160)
    if list_targets:
        for name, (description, _) in TARGETS.items():
            console.print(f"{name:22s} {description}")
        return
    formats = check_formats(figure_formats(fmt))
    names = list(TARGETS) if target == "all" else [target]
    results = []
    target = folder_target(out, "reproduce", overwrite=overwrite, qrels=None, runs=None, measures=None, files=())
    for name in names:
        result = run_target(name)
        _print(console, result)
        results.append(result)
    total = sum(r.n_mismatches for r in results)
    if out is not None:
        with target.open() as tmp:
            for name, result in zip(names, results):
                result.csv_table().to_csv(tmp / f"{name}.csv", index=False)
                if result.figure is not None:
                    save_figure(result.figure, tmp / name, formats, dpi=dpi, preview_dpi=150)
    console.print(f"[bold]{'no mismatch' if total == 0 else f'{total} MISMATCHES'}[/] in {len(names)} target(s)")
    if total:
        raise typer.Exit(code=1)
