"""``meta-eval evaluate``: score runs, per topic and over topics, as a table, tidy file or trec_eval's layout.

The output format follows the ``-o`` file's extension (``.csv .tsv .json .parquet .md .tex .txt .trec``) unless
``-f`` names one. Machine formats (csv, tsv, json, parquet) keep every float exactly (Python's shortest round-trip
``repr``); printed formats (table, md, tex) round to ``--digits``; ``trec`` prints trec_eval's 4 decimals.
"""

from __future__ import annotations

import io
import json
import math
import sys
import unicodedata
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from meta_eval.cli.app import app
from meta_eval.cli.common import (CollectionOptions, RelFormat, RelFormatOpt, declared_inputs, measures_option,
                                  reports_errors, with_collection)
from meta_eval.core.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from meta_eval.measures.scoring import Scores

DEFAULT_MEASURES = ["AP", "GAP", "nDCG", "nDCG@10", "P@10", "Rprec", "RR", "bpref"]
MeasuresOpt = measures_option(DEFAULT_MEASURES, "Measure (see 'meta-eval measures'; trec_eval -m specs such as "
                              "ndcg_cut.10 or all_trec too)")


class Format(str, Enum):
    table = "table"
    csv = "csv"
    tsv = "tsv"
    json = "json"
    parquet = "parquet"
    md = "md"
    tex = "tex"
    trec = "trec"


EXTENSIONS = {".csv": Format.csv, ".tsv": Format.tsv, ".json": Format.json, ".parquet": Format.parquet,
              ".md": Format.md, ".tex": Format.tex, ".txt": Format.table, ".trec": Format.trec}
TIDY = (Format.csv, Format.tsv, Format.json, Format.parquet)


@app.command()
@reports_errors
@with_collection
def evaluate(
    inputs: CollectionOptions,
    measure: MeasuresOpt = None,
    per_topic: Annotated[bool, typer.Option("--per-topic", "-q", help="Also give per-topic values.")] = False,
    fmt: Annotated[Optional[Format], typer.Option(
        "--format", "-f", help="table, csv/tsv/json/parquet (tidy: run, topic, measure, value, summary), md, tex or "
        "trec (trec_eval's layout). Default: from the --out extension, else table.", show_default=False)] = None,
    out: Annotated[Optional[str], typer.Option("--out", "-o", help="Write to this file instead of stdout ('-': "
                                                "stdout; a symlink is written through, a FIFO or device streamed; "
                                                "an input of the command is refused).")] = None,
    digits: Annotated[int, typer.Option("--digits", min=0, max=17,
                                        help="Decimals of the printed formats (table, md, tex).")] = 4,
    rel_format: RelFormatOpt = RelFormat.qrels,
    memory: Annotated[Optional[str], typer.Option(
        "--memory", help="Memory for the ranked lists held at once (2G, 500M, bytes): runs are read and scored in "
        "pieces within it. Default: a quarter of the machine's memory, at most 2G.", show_default=False)] = None,
) -> None:
    """Score every run with the given measures (default: the demo collection and a standard set)."""
    qrels, runs, progress = inputs.qrels, inputs.runs, inputs.progress
    from meta_eval.measures.scoring import resolve, score_pieces, scores
    from meta_eval.outputs.writer import STDOUT, check_output, write_output

    declared = declared_inputs(qrels, runs, measure)
    target = check_output(out, inputs=declared) if out is not None else None  # before any work
    fmt = output_format(fmt, None if out is None or str(out) == STDOUT else out)
    measures = resolve(measure or DEFAULT_MEASURES)  # bad names fail here, before any file is read
    budget = memory_bytes(memory)
    if qrels is not None and runs and rel_format == RelFormat.qrels:  # in pieces of runs, within the memory budget
        from meta_eval.cli.common import keep_freed_memory
        from meta_eval.model.collection import default_memory, load_collection_pieces

        keep_freed_memory()
        pieces = load_collection_pieces(qrels, runs, memory=budget or default_memory(), progress=progress,
                                        **inputs.load_options())
        results = score_pieces(_warning_once(pieces, inputs.rel_level), measures)
    else:
        collection = inputs.load(rel_format=rel_format)
        if hasattr(collection, "max_grade"):  # judgment groups and preferences have no single grade scale
            warn_rel_level(inputs.rel_level, collection.max_grade)
        results = scores(collection, measures, progress=progress)
    rendered = render(results, fmt, per_topic=per_topic, digits=digits)
    if out is None and isinstance(rendered, bytes):
        raise InputError(f"the {fmt.value} format is binary: write it to a file with -o (or to stdout with -o -)")
    write_output(target, rendered, inputs=declared)


def output_format(fmt: Format | None, out: Path | None) -> Format:
    """The -f format, else the one the -o extension names, else the console table."""
    if fmt is not None:
        return fmt
    if out is None:
        return Format.table
    suffix = Path(out).suffix.lower()
    if suffix not in EXTENSIONS:
        known = ", ".join(EXTENSIONS)
        raise InputError(f"cannot tell the output format from the extension {suffix or '(none)'!r} of {out}; "
                         f"use one of {known} or give -f")
    return EXTENSIONS[suffix]


def memory_bytes(text: str | None) -> int | None:
    """``--memory``: bytes, or a number with a unit K, M, G or T (:func:`~meta_eval.core.memory_budget.parse_size`)."""
    from meta_eval.core.memory_budget import parse_size

    return None if text is None else parse_size(text, "--memory")


def _warning_once(pieces, rel_level: int):
    """The pieces, with :func:`warn_rel_level` about the first."""
    for i, piece in enumerate(pieces):
        if i == 0:
            warn_rel_level(rel_level, piece.max_grade)
        yield piece


def warn_rel_level(rel_level: int, max_grade: int) -> None:
    """A relevance level above every grade of the qrels makes every binary measure 0: say so on stderr."""
    if rel_level > max_grade:
        print(f"meta-eval: warning: --rel-level {rel_level} is above the highest grade in the qrels ({max_grade}): "
              "no document is relevant, so binary measures (AP, P, RR, ...) are 0", file=sys.stderr)


# --------------------------------------------------------------------------------------------- rendering


def render(results: Scores, fmt: Format, *, per_topic: bool, digits: int = 4) -> str | bytes:
    """The results in a format: tidy rows (machine formats, exact floats), trec_eval's layout, or tables. Only the
    tidy formats need pandas: the everyday table is printed from the arrays, without importing it."""
    from meta_eval.rendering.trec_layout import format_trec

    if fmt == Format.trec:
        return format_trec(results, results.measures, per_topic_rows=per_topic)
    if fmt in TIDY:
        return _tidy(results.frame(per_topic_rows=per_topic), fmt)
    tables = [_summary_table(results)]
    if per_topic:
        tables.insert(0, _per_topic_table(results))
    if fmt == Format.md:
        return "\n".join(f"**{t.title}**\n\n{_markdown(t, digits)}\n" for t in tables)
    if fmt == Format.tex:
        return "\n".join(_latex(t, digits) for t in tables)
    return "".join(_console(t, digits) for t in tables)


def _tidy(rows, fmt: Format) -> str | bytes:
    if fmt == Format.csv:
        return rows.to_csv(index=False)  # floats as repr: exact round trip
    if fmt == Format.tsv:
        return rows.to_csv(index=False, sep="\t")
    if fmt == Format.json:
        records = [{k: (None if isinstance(v, float) and math.isnan(v) else _plain(v)) for k, v in r.items()}
                   for r in rows.to_dict(orient="records")]
        return json.dumps(records, indent=1) + "\n"  # json.dumps writes floats with repr: exact
    buffer = io.BytesIO()
    rows.to_parquet(buffer, index=False)
    return buffer.getvalue()


def _plain(value):
    """numpy scalars as Python ones (for json)."""
    return value.item() if hasattr(value, "item") else value


@dataclass(frozen=True)
class _Table:
    """A printed table: key columns (run[, topic]) and one column of values per measure."""

    title: str
    key_names: list[str]
    keys: list[tuple]
    columns: list[str]
    values: np.ndarray  # (rows, columns); NaN prints empty


def _summary_table(results: Scores) -> _Table:
    import numpy as np

    return _Table("Summary over topics", ["run"], [(run,) for run in results.systems], results.names,
                  np.column_stack(results.summary) if results.summary else np.zeros((len(results.systems), 0)))


def _per_topic_table(results: Scores) -> _Table:
    """One row per (run, topic) the run was evaluated on, runs then topics in the collection's order."""
    import numpy as np

    stacked = np.stack(results.values, axis=-1)  # (S, T, measures)
    s_idx, t_idx = np.nonzero(~np.isnan(stacked).all(axis=-1))
    keys = [(results.systems[s], results.topics[t]) for s, t in zip(s_idx, t_idx)]
    return _Table("Per topic", ["run", "topic"], keys, results.names, stacked[s_idx, t_idx])


def _cell(value: float, digits: int) -> str:
    return "" if value != value else f"{value:.{digits}f}"


def _markdown(table: _Table, digits: int) -> str:
    head = [*table.key_names, *table.columns]
    lines = ["| " + " | ".join(_md_escape(h) for h in head) + " |",
             "|" + "|".join(["---"] * len(table.key_names) + ["---:"] * len(table.columns)) + "|"]
    for keys, row in zip(table.keys, table.values):
        cells = [_md_escape(str(k)) for k in keys] + [_cell(v, digits) for v in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _md_escape(text: str) -> str:
    from meta_eval.rendering.paper_table import markdown_escape  # the reports' own escaping

    return markdown_escape(text)


def _tex_escape(text: str) -> str:
    from meta_eval.rendering.paper_table import latex_escape  # the reports' own escaping (accents, Greek, |, <)

    return latex_escape(str(text))


def _latex(table: _Table, digits: int) -> str:
    """A booktabs tabular (needs ``\\usepackage{booktabs}``)."""
    n_keys = len(table.key_names)
    lines = [f"% {table.title}", r"\begin{tabular}{" + "l" * n_keys + "r" * len(table.columns) + "}", r"\toprule",
             " & ".join(_tex_escape(h) for h in [*table.key_names, *table.columns]) + r" \\", r"\midrule"]
    for keys, row in zip(table.keys, table.values):
        lines.append(" & ".join([_tex_escape(k) for k in keys] + [_cell(v, digits) for v in row]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", ""]
    return "\n".join(lines)


def _console(table: _Table, digits: int) -> str:
    """A boxed text table under a centred title: tabulate's ``simple_outline`` layout (keys left, values right,
    one space of padding, a column at least two wider than its header).

    Written by hand: importing tabulate (which imports wcwidth and importlib.metadata) cost 90 ms, a tenth of
    ``meta-eval evaluate`` on TREC-COVID; rich lays out every cell and took about a second. Widths count a wide
    (East Asian) character as two columns and a combining mark as none, as terminals print them."""
    head = [*table.key_names, *(str(c) for c in table.columns)]
    rows = [[*map(str, keys), *(_cell(v, digits) for v in values)] for keys, values in zip(table.keys, table.values)]
    right = [False] * len(table.key_names) + [bool(rows)] * len(table.columns)  # (no rows: headers to the left)
    widths = [max([_width(h) + 2, *(_width(row[c]) for row in rows)]) for c, h in enumerate(head)]

    def line(cells) -> str:
        return "│ " + " │ ".join(_pad(text, w, r) for text, w, r in zip(cells, widths, right)) + " │"

    def rule(left: str, middle: str, end: str) -> str:
        return left + middle.join("─" * (w + 2) for w in widths) + end

    lines = [rule("┌", "┬", "┐"), line(head), rule("├", "┼", "┤"), *map(line, rows), rule("└", "┴", "┘")]
    return f"{table.title:^{_width(lines[0])}}\n" + "\n".join(lines) + "\n"


def _width(text: str) -> int:
    """Columns a terminal prints ``text`` in."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


def _pad(text: str, width: int, right: bool) -> str:
    fill = " " * (width - _width(text))
    return fill + text if right else text + fill
