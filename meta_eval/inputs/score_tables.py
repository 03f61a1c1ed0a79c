"""Score tables: the per-topic scores researchers already have, read into one (systems × topics) array per measure.

Much of the field's evidence comes as per-topic scores rather than runs. :func:`read_scores` reads them, with the
checks and the ``FILE:LINE`` errors of the run reader (:mod:`meta_eval.inputs.trec`: its byte reader — gzip, line endings,
binary and empty files refused — its number checks and its messages), in these layouts:

``tidy``
    one row per cell: run, topic, measure, value (csv, tsv, parquet or a DataFrame). Column names: ``run`` (or
    ``system``, ``name`` — PyTerrier's ``pt.Experiment(perquery=True)`` —, ``tag``, ``runid``), ``topic`` (or
    ``qid``, ``query_id`` — ir_measures' ``iter_calc`` —), ``measure`` (or ``metric``), ``value`` (or ``score``).
    The rows ``meta-eval evaluate -q -o x.csv`` writes for the summary over topics (``summary`` column true) are left
    out; without a ``summary`` column, rows whose topic is ``all`` (trec_eval's summary) are. Without a run column
    the table is one run (``name``, else the file's name); without a measure column, one measure (``measure``,
    else the file's name).
``wide``
    a topic × run matrix (Sakai's Discpower and the significance-testing literature): a header of run names, an
    optional first topic column (named ``topic``, ``qid``, ``query_id``, ``query``, ``topic_id`` or ``id`` in any
    case, or unnamed as pandas writes an index), one row per topic (a row ``all``, trec_eval's summary, is left
    out); without a topic column the rows are the topics, named 1, 2, ... in file order, and such a table is not
    pooled with one that names its topics. One measure per file: ``measure``, else the file's name (several files:
    several measures). Column names are matched in any case in every layout.
``trec``
    ``trec_eval -q`` output (``measure topic value`` lines): one file per run or many runs in one (a run's block
    ends with its ``all`` lines; ``runid`` names it, else the file does). The ``all`` lines are left out, and so
    are ``relstring`` lines (a string of grades per topic, not a score).
arrays
    ``{measure: (S, T) array}`` (or one array with ``measure``) with ``systems`` and optionally ``topics``.

Topics are put in trec_eval's order (the byte order of their ids, as a collection orders them), so a table gives
the same arrays, and the same resampling, whatever order its rows come in; unnamed topics keep the file's order.
Runs and measures keep the order they first appear in.

Every cell must be there once. A cell given twice is a :class:`~meta_eval.core.errors.ConflictError` naming both lines;
a value that is not a finite number an :class:`~meta_eval.core.errors.InputError` naming its line (``nan`` written in a
file is refused, as in a run). A missing cell — a run without a topic, an empty cell, NaN in a DataFrame or an
array — follows ``missing``: ``"error"`` (the default: name the first, and the choices below), ``"zero"`` (it scores
0, as trec_eval ``-c`` scores a topic a run did not retrieve for), or ``"skip"`` (the topic is left out for every
run and measure, with a warning naming how many: the analyses compare systems on the topics they all have, so a
topic cannot be skipped for one run alone, as trec_eval without ``-c`` skips it). A run that lacks a measure
altogether is an error under every policy.
"""

from __future__ import annotations

import csv
import os
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from meta_eval.core.errors import ConflictError, InputError, MetaEvalWarning
from meta_eval.core.params import out_of_scale, scale_problem

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa

__all__ = ["LAYOUTS", "MISSING", "ScoreTable", "read_scores"]

LAYOUTS = ("tidy", "wide", "trec")
MISSING = ("error", "zero", "skip")
RUN_COLUMNS = ("run", "system", "name", "tag", "runid")
MEASURE_COLUMNS = ("measure", "metric")
VALUE_COLUMNS = ("value", "score")
SUMMARY_TOPIC = "all"
#: Suffixes left out when a file's name names a run or a measure (``ap.csv`` holds AP; ``bm25.eval`` a run).
_SUFFIXES = (".csv", ".tsv", ".tab", ".txt", ".trec", ".eval", ".out", ".res", ".parquet")


@dataclass(frozen=True, eq=False)
class ScoreTable:
    """Per-topic scores of S systems on T topics under each measure: what :func:`read_scores` returns and
    :meth:`meta_eval.analyses.AnalysisData.from_scores` takes.

    Attributes
    ----------
    systems : tuple of str
        Run names, in the order they first appear.
    topics : tuple of str
        Topic ids, in byte order (trec_eval's; unnamed topics in file order).
    scores : dict
        Measure name -> float64 array of shape (S, T), every cell finite.
    source : str
        Where the scores came from (the files, or ``DataFrame``/``arrays``).
    dropped : tuple of str
        Topics left out under ``missing="skip"``.
    filled : int
        Cells scored 0 under ``missing="zero"``.
    """

    systems: tuple[str, ...]
    topics: tuple[str, ...]
    scores: dict[str, np.ndarray]
    source: str
    dropped: tuple[str, ...] = ()
    filled: int = 0

    @property
    def measures(self) -> list[str]:
        """The measure names, in order."""
        return list(self.scores)

    def to_frame(self) -> pd.DataFrame:
        """Tidy rows: ``run, topic, measure, value``, runs then topics, measure by measure."""
        import pandas as pd

        n_sys, n_top = len(self.systems), len(self.topics)
        runs = np.repeat(np.asarray(self.systems, dtype=object), n_top)
        topics = np.tile(np.asarray(self.topics, dtype=object), n_sys)
        return pd.concat([pd.DataFrame({"run": runs, "topic": topics, "measure": name, "value": x.ravel()})
                          for name, x in self.scores.items()], ignore_index=True)

    def to_wide(self, measure: str) -> pd.DataFrame:
        """One measure as a topic × run matrix (index ``topic``, a column per run): the wide layout."""
        import pandas as pd

        if measure not in self.scores:
            raise InputError(f"no measure {measure!r} in the score table; it has {', '.join(self.scores)}")
        return pd.DataFrame(self.scores[measure].T, index=pd.Index(self.topics, name="topic"),
                            columns=list(self.systems))


def read_scores(source: Any, *, layout: str | None = None, measure: str | None = None,
                measures: Sequence[str] | None = None, missing: str = "error", name: str | None = None,
                systems: Sequence[str] | None = None, topics: Sequence[str] | None = None,
                canonical: Callable[[str], str] | None = None, optional: Sequence[str] = ()) -> ScoreTable:
    """Read per-topic scores (a tidy table, a topic × run matrix, ``trec_eval -q`` output, or arrays).

    Parameters
    ----------
    source
        A file (``-``: standard input; plain or gzip), a list of files (read together: their cells are pooled),
        a DataFrame, a mapping ``{measure: (S, T) array}``, or one (S, T) array with ``measure``.
    layout : {'tidy', 'wide', 'trec'}, optional
        How a file or DataFrame is laid out; default: told from its first line (three fields, the last a number or
        a run id: ``trec``; a value column among the header's: ``tidy``; else ``wide``) or its columns.
    measure : str, optional
        The measure of a one-measure source (a wide table, a tidy table without a measure column, one array).
    measures : sequence of str, optional
        Keep only these measures, in this order, named as given. A name finds the table's measure of that name in
        any case (``ap`` finds ``AP``), or of the same ``canonical`` name.
    missing : {'error', 'zero', 'skip'}
        What a missing cell does (module docstring).
    name : str, optional
        The run of a one-run source (a tidy table without a run column; a ``trec_eval`` file without ``runid``).
    systems, topics : sequence of str, optional
        The names of the arrays' rows and columns (arrays only; topics default to 1..T).
    canonical : callable, optional
        A measure's name as the caller knows it (the command line passes the resolver's, so that ``-m map`` finds a
        table's ``AP``: both are AP). Two of the table's measures with one canonical name are then an error: which
        one ``-m AP`` meant could not be told.
    optional : sequence of str
        With ``measures``: more measures kept after them when the table has them (the default references), and
        left out silently when it has not.

    Returns
    -------
    ScoreTable

    Raises
    ------
    InputError
        Unreadable or malformed input, a value that is not a finite number, a missing cell under
        ``missing="error"``, an unknown measure in ``measures`` (file and line named where there is one).
    ConflictError
        A cell given twice (both places named).
    """
    if missing not in MISSING:
        raise InputError(f"missing must be one of {', '.join(MISSING)}; got {missing!r}")
    if layout is not None and layout not in LAYOUTS:
        raise InputError(f"layout must be one of {', '.join(LAYOUTS)}; got {layout!r}")
    if isinstance(source, ScoreTable):
        return _select(source, measures, canonical)
    if (systems is not None or topics is not None) and not _is_arrays(source):
        raise InputError("systems and topics name the rows and columns of score arrays; a table names its own")
    if _is_arrays(source):
        cells = [_array_cells(source, measure, systems, topics)]
    elif _is_frame(source):
        frame = source if type(source).__module__.startswith("pandas") else source.to_pandas()  # polars
        if any(level is not None for level in frame.index.names):  # run/topic/measure as the (Multi)Index
            frame = frame.reset_index()
        cells = _frame_cells(frame, "DataFrame", layout, measure, name, lambda row: row + 1)
    else:
        paths = list(source) if isinstance(source, (list, tuple)) else [source]
        if not paths:
            raise InputError("no score file given")
        odd = [p for p in paths if not isinstance(p, (str, os.PathLike))]
        if odd:
            raise InputError("scores are read from files, DataFrames, (S, T) arrays or a mapping {measure: array}; "
                             f"got {type(odd[0]).__name__}")
        from meta_eval.inputs.trec import _one_per_file

        paths = _one_per_file([Path(p) for p in paths], what="score table")  # an alias is not a second table
        cells = [part for path in paths for part in _file_cells(path, layout, measure, name if len(paths) == 1
                                                                    else None)]
    source_text = ", ".join(dict.fromkeys(part.source for part in cells))
    if canonical is not None:
        _one_name_each(cells, canonical, source_text)
    if measures is not None and optional:  # each a measure of the table no name asked for already
        find = _lookup(list(dict.fromkeys(m for p in cells for m in dict.fromkeys(p.measure))), canonical)
        used = {find(m) for m in measures}
        for m in optional:
            if find(m) is not None and find(m) not in used:
                measures, used = [*measures, m], used | {find(m)}
    table = _assemble(_keep_measures(cells, measures, source_text, canonical), missing, source_text)
    return _select(table, measures, canonical)  # in the order asked for


# --------------------------------------------------------------------------------------------- cells


@dataclass
class _Cells:
    """Cells gathered from one source: run, topic and measure names and the value of each (NaN: an empty cell),
    and the line (or row) each came from. ``keep_topic_order``: the topics are numbered, not named (a wide table
    without a topic column) or given in an order of their own (arrays), and keep it."""

    run: np.ndarray
    topic: np.ndarray
    measure: np.ndarray
    value: np.ndarray
    source: str
    line: Callable[[int], int | None]
    keep_topic_order: bool = False


def _is_arrays(source: Any) -> bool:
    return isinstance(source, np.ndarray) or (isinstance(source, Mapping) and bool(source) and all(
        isinstance(v, (np.ndarray, list, tuple)) for v in source.values()))


def _is_frame(source: Any) -> bool:
    """A pandas DataFrame, or one that converts to it (polars)."""
    return type(source).__name__ == "DataFrame" and (type(source).__module__.startswith("pandas")
                                                      or hasattr(source, "to_pandas"))


def _file_stem(path: str) -> str:
    """A file's name without its folder, ``.gz`` and a table suffix: what names its run or measure."""
    stem = Path(path).name.removesuffix(".gz")
    for suffix in _SUFFIXES:
        if stem.lower().endswith(suffix) and len(stem) > len(suffix):
            return stem[: -len(suffix)]
    return stem


# --------------------------------------------------------------------------------------------- arrays


def _array_cells(source: Any, measure: str | None, systems: Sequence[str] | None,
                 topics: Sequence[str] | None) -> _Cells:
    """Cells of ``{measure: (S, T) array}`` (NaN: a missing cell; infinities refused)."""
    if isinstance(source, np.ndarray):
        if measure is None:
            raise InputError("name the measure of a score array (measure=...)")
        source = {measure: source}
    if systems is None:
        raise InputError("score arrays need the system names (systems=...)")
    arrays = {}
    for key, values in source.items():
        try:
            x = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError(f"the scores of measure {key!r} are not numbers", "arrays") from None
        if x.ndim != 2:
            raise InputError(f"the scores of measure {key!r} must be a (systems x topics) array; got shape "
                             f"{x.shape}", "arrays")
        arrays[str(key)] = x
    shapes = {x.shape for x in arrays.values()}
    if len(shapes) > 1:
        raise InputError(f"the measures' score arrays differ in shape: {sorted(shapes)}", "arrays")
    n_sys, n_top = shapes.pop()
    names = _names(systems, n_sys, "system")
    topic_names = _names(topics, n_top, "topic") if topics is not None else [str(t + 1) for t in range(n_top)]
    for key, x in arrays.items():
        bad = np.isinf(x)
        if bad.any():
            s, t = np.argwhere(bad)[0]
            raise InputError(f"measure {key!r}, system {names[s]!r}, topic {topic_names[t]!r}: a score must be a "
                             f"finite number, got {x[s, t]}", "arrays")
    m = len(arrays)
    return _Cells(run=np.tile(np.repeat(np.asarray(names, dtype=object), n_top), m),
                  topic=np.tile(np.asarray(topic_names, dtype=object), n_sys * m),
                  measure=np.repeat(np.asarray(list(arrays), dtype=object), n_sys * n_top),
                  value=np.concatenate([x.ravel() for x in arrays.values()]) if arrays else np.empty(0),
                  source="arrays", line=lambda row: None, keep_topic_order=True)


def _names(names: Sequence[str], n: int, what: str) -> list[str]:
    out = [str(x) for x in names]
    if len(out) != n:
        raise InputError(f"{len(out)} {what} names for score arrays with {n} {what}s", "arrays")
    dup = [x for x in dict.fromkeys(out) if out.count(x) > 1]
    if dup:
        raise InputError(f"{what} {dup[0]!r} is named twice", "arrays")
    return out


# --------------------------------------------------------------------------------------------- files


def _file_cells(path: Any, layout: str | None, measure: str | None, name: str | None) -> list[_Cells]:
    """The cells of one file: Parquet (told by its magic number), else text in the given or sniffed layout."""
    from meta_eval.inputs.trec import read_text, source_label

    label = source_label(path)
    if layout != "trec" and _is_parquet(path):
        return _parquet_cells(path, label, layout, measure, name)
    text = read_text(path)  # gzip, line endings, binary and empty files, UTF-8: the run reader's checks
    data = text.encode("utf-8")
    if re.search(rb"(?m)^[ \t\f\v]+$", data):  # blank lines of spaces are blank lines
        data = re.sub(rb"(?m)^[ \t\f\v]+$", b"", data)
    first, line_no = _first_line(data)
    if layout is None:
        layout = "trec" if _looks_trec(first) else None
    if layout == "trec":
        return _trec_cells(data, label, name)
    delimiter = "," if "," in first else "\t" if "\t" in first else None
    header, columns, line_of = _delimited(data, label, delimiter, line_no)
    return _table_cells(columns, header, label, layout, measure, name, line_of, default=_file_stem(label),
                        header_line=line_no)


def _is_parquet(path: Any) -> bool:
    """Whether a file is Parquet: its ``PAR1`` magic number. Only a regular file can be (Parquet is read by
    seeking); standard input, a FIFO or a device is text, and is not opened here: its first bytes, once read, would
    be gone for the text reader."""
    import stat

    from meta_eval.inputs.trec import STDIN

    if str(path) == STDIN:
        return False
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as f:
            return f.read(4) == b"PAR1"
    except OSError:
        return False  # the text reader names the problem


def _parquet_cells(path: Any, label: str, layout: str | None, measure: str | None, name: str | None
                   ) -> list[_Cells]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from meta_eval.core.file_identity import record_input

    record_input(path)
    try:
        frame = pq.read_table(path).to_pandas()
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"cannot read as Parquet ({exc})", label) from None
    if not len(frame):
        raise InputError("the table has no rows", label)
    return _frame_cells(frame, label, layout, measure, name, lambda row: row + 1, default=_file_stem(label))


def _first_line(data: bytes) -> tuple[str, int]:
    """The first non-blank line and its number."""
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            return line.decode("utf-8"), number
    raise InputError("the file holds no line")  # pragma: no cover - read_bytes refuses blank files


def _looks_trec(line: str) -> bool:
    """``measure topic value``: three whitespace-separated fields, the last a number or the line a ``runid``."""
    from meta_eval.inputs.trec import _NUMBER

    fields = line.split()
    if len(fields) != 3 or "," in line or _wide_topic(fields) is not None:  # ``topic bm25 42``: a wide header
        return False
    return fields[0] in ("runid", "relstring") or _NUMBER.fullmatch(fields[2]) is not None


def _delimited(data: bytes, label: str, delimiter: str | None, header_line: int
               ) -> tuple[list[str], dict[str, np.ndarray], Callable[[int], int]]:
    """Header names, one column of texts per name, and the line of each row, of a table with a header line.

    Comma- and tab-separated text is parsed by Arrow's CSV reader (quoted fields as pandas writes them);
    whitespace-separated text by the run reader's parser (:func:`meta_eval.inputs.trec._parse`), with its messages.
    """
    from meta_eval.inputs.trec import _line_of_row

    lines = data.split(b"\n")
    header_text = lines[header_line - 1].decode("utf-8")
    if delimiter is None:
        names = header_text.split()
    else:
        names = [h.strip() for h in next(csv.reader([header_text], delimiter=delimiter))]
    dup = [h for h in dict.fromkeys(names) if names.count(h) > 1]
    if dup:
        raise InputError(f"column {dup[0]!r} appears twice in the header", label, header_line)
    if any(not h for h in names[1:]):
        raise InputError(f"column {names.index('', 1) + 1} of the header has no name", label, header_line)
    body = b"\n".join(b"" if i < header_line else line for i, line in enumerate(lines))  # lines keep their numbers
    if delimiter is None:
        table = _whitespace_table(body, label, names)
    else:
        table = _csv_table(body, label, names, delimiter)
    columns = {h: table.column(i).to_numpy(zero_copy_only=False).astype(object) for i, h in enumerate(names)}
    return names, columns, lambda row: _line_of_row(body, row)


def _whitespace_table(body: bytes, label: str, names: list[str]) -> pa.Table:
    from meta_eval.inputs.trec import _parse

    return _parse(body, label, tuple(names), {}, list(names), {}, trailing_text=False)


def _csv_table(body: bytes, label: str, names: list[str], delimiter: str) -> pa.Table:
    """Arrow's CSV reader, every column as text (numbers are checked here, with the run reader's messages); a row
    of the wrong width is found with Python's csv module and named by its line."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    try:
        return pacsv.read_csv(
            pa.BufferReader(body),
            read_options=pacsv.ReadOptions(column_names=[f"c{i}" for i in range(len(names))], use_threads=False),
            parse_options=pacsv.ParseOptions(delimiter=delimiter, quote_char='"', double_quote=True,
                                             newlines_in_values=False, ignore_empty_lines=True),
            convert_options=pacsv.ConvertOptions(column_types={f"c{i}": pa.string() for i in range(len(names))},
                                                 strings_can_be_null=False, quoted_strings_can_be_null=False,
                                                 null_values=[]))
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        what = "comma" if delimiter == "," else "tab"
        for number, line in enumerate(body.decode("utf-8").split("\n"), start=1):
            if line.strip():
                fields = next(csv.reader([line], delimiter=delimiter))
                if len(fields) != len(names):
                    raise InputError(f"expected {len(names)} {what}-separated fields ({', '.join(names)}), found "
                                     f"{len(fields)}: {line!r}", label, number) from None
        raise InputError(f"cannot parse ({exc})", label) from None


# --------------------------------------------------------------------------------------------- trec_eval -q


def _trec_cells(data: bytes, label: str, name: str | None) -> list[_Cells]:
    """``trec_eval -q`` output: ``measure topic value`` lines, one block per run (its per-topic lines, then its
    ``all`` lines: a per-topic line after an ``all`` line starts the next run). A block's ``runid`` line names its
    run; without one, the file does (``name``, else the file's name; ``#k`` for the k-th of several blocks).
    Blocks (or files) that name the same run are pooled: a cell they both give is a conflict."""
    from meta_eval.inputs.trec import _line_of_row
    from meta_eval.core.trec_eval_names import LAYOUT_ONLY

    table = _trec_table(data, label)
    measure, topic, value = (table.column(i).to_numpy(zero_copy_only=False).astype(object) for i in range(3))
    is_all = topic == SUMMARY_TOPIC
    block = np.cumsum(~is_all & np.concatenate([[False], is_all[:-1]]))  # a per-topic line after an all line
    runid = is_all & (measure == "runid")
    named = {int(b): str(v) for b, v in zip(block[runid], value[runid])}
    n_blocks = int(block[-1]) + 1
    default = name or _file_stem(label)
    run_names = np.asarray([named.get(b, default if n_blocks == 1 else f"{default}#{b + 1}")
                            for b in range(n_blocks)], dtype=object)
    text_valued = np.isin(measure, LAYOUT_ONLY) | np.char.startswith(measure.astype(str), "relstring_")
    rows = np.flatnonzero(~is_all & ~text_valued)  # relstring: a string of grades per topic, not a score
    if not rows.size:
        raise InputError("trec_eval output without per-topic lines: run trec_eval with -q", label)
    line_of = lambda i: _line_of_row(data, int(rows[i]))  # noqa: E731
    numbers = _numbers(value[rows], "value", label, line_of)
    return [_Cells(run=run_names[block[rows]], topic=topic[rows], measure=measure[rows], value=numbers,
                   source=label, line=line_of)]


def _trec_table(data: bytes, label: str) -> pa.Table:
    """The three fields of each line. trec_eval writes ``%-22s\t%s\t%s`` (the measure padded with spaces): Arrow's
    reader splits such lines at their tabs and the fields are trimmed; any other layout, or a bad line, goes to the
    run reader's parser (:func:`meta_eval.inputs.trec._parse`), which normalises whitespace and names the bad line."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from meta_eval.inputs.trec import _arrow_csv, _parse

    fields = ("measure", "topic", "value")
    try:
        table = _arrow_csv(data, "\t", fields, {}, list(fields))
        columns = [pc.utf8_trim_whitespace(table.column(name)) for name in fields]
        if not any(pc.any(pc.equal(c, "")).as_py() or pc.any(pc.match_substring_regex(c, r"\s")).as_py()
                   for c in columns):
            return pa.table(dict(zip(fields, columns)))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    return _parse(data, label, fields, {}, list(fields), {}, trailing_text=False)


# --------------------------------------------------------------------------------------------- tables


def _frame_cells(frame: pd.DataFrame, label: str, layout: str | None, measure: str | None, name: str | None,
                 line_of: Callable[[int], int], *, default: str | None = None) -> list[_Cells]:
    """The cells of a DataFrame (or a Parquet file's): tidy or wide, as its columns say."""
    if layout == "trec":
        raise InputError("a DataFrame is a tidy or a wide table, not trec_eval output", label)
    header = [str(c) for c in frame.columns]
    if len(set(header)) != len(header):
        dup = [h for h in dict.fromkeys(header) if header.count(h) > 1]
        raise InputError(f"column {dup[0]!r} appears twice", label)
    columns = {h: frame.iloc[:, i].to_numpy() for i, h in enumerate(header)}
    if _kind(header, layout) == "wide" and _wide_topic(header) is None and not _default_index(frame):
        columns = {"topic": frame.index.to_numpy(), **columns}  # the index names the topics
        header = ["topic", *header]
    return _table_cells(columns, header, label, layout, measure, name, line_of, default=default)


def _default_index(frame: pd.DataFrame) -> bool:
    import pandas as pd

    index = frame.index
    return isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1 and index.name is None


def _column(header: Sequence[str], choices: Sequence[str]) -> str | None:
    """The header's column named by the first of ``choices`` it has, in any case (``Topic``, ``QID``)."""
    named = {h.lower(): h for h in reversed(header)}  # the first of equal names wins
    return next((named[c] for c in choices if c in named), None)


def _kind(header: Sequence[str], layout: str | None) -> str:
    """``tidy`` when a value and a topic column are there with a run or a measure column (or nothing else), and the
    layout is not forced; else ``wide``."""
    from meta_eval.inputs.adapters import TOPIC_COLUMNS

    if layout is not None:
        return layout
    keys = _column(header, VALUE_COLUMNS) is not None and _column(header, TOPIC_COLUMNS) is not None
    named = _column(header, RUN_COLUMNS) is not None or _column(header, MEASURE_COLUMNS) is not None
    return "tidy" if keys and (named or len(header) == 2) else "wide"


def _table_cells(columns: dict[str, np.ndarray], header: list[str], label: str, layout: str | None,
                 measure: str | None, name: str | None, line_of: Callable[[int], int], *, default: str | None,
                 header_line: int | None = None) -> list[_Cells]:
    """A tidy or wide table's cells; ``header_line`` is given for text (whose fields are all text)."""
    text = header_line is not None
    if _kind(header, layout) == "tidy":
        return [_tidy_cells(columns, header, label, measure, name, line_of, default, text)]
    return [_wide_cells(columns, header, label, measure, line_of, default, header_line)]


def _tidy_cells(columns, header, label, measure, name, line_of, default, text) -> _Cells:
    from meta_eval.inputs.adapters import TOPIC_COLUMNS

    value_col, topic_col = _column(header, VALUE_COLUMNS), _column(header, TOPIC_COLUMNS)
    if value_col is None or topic_col is None:
        raise InputError(f"a tidy score table needs a topic column ({', '.join(TOPIC_COLUMNS)}) and a value column "
                         f"({', '.join(VALUE_COLUMNS)}); the header has {', '.join(header)}", label)
    run_col, measure_col = _column(header, RUN_COLUMNS), _column(header, MEASURE_COLUMNS)
    unknown = [h for h in header if h not in (value_col, topic_col, run_col, measure_col, "summary")]
    if unknown:  # never left out silently
        raise InputError(f"a tidy score table holds run, topic, measure, value (and summary) columns; it also has "
                         f"{', '.join(map(repr, unknown))}: drop them, or give layout='wide'", label)
    n = len(columns[value_col])
    keep = np.ones(n, dtype=bool)
    if "summary" in header:
        keep &= ~_flags(columns["summary"], label, line_of)
    topic = _ids(columns[topic_col], "topic id", label, line_of, text)
    if "summary" not in header:
        keep &= topic != SUMMARY_TOPIC
    if run_col is not None:
        run = _ids(columns[run_col], "run name", label, line_of, text)
    else:
        run = np.full(n, name or default or "run1", dtype=object)
    if measure_col is not None:
        meas = _ids(columns[measure_col], "measure", label, line_of, text, any_object=True)
    else:
        if measure is None and default is None:
            raise InputError("the table has no measure column: name its measure (measure=...)", label)
        meas = np.full(n, measure or default, dtype=object)
    rows = np.flatnonzero(keep)
    values = _values(columns[value_col][keep], label, lambda i: line_of(int(rows[i])), text)
    return _Cells(run=run[keep], topic=topic[keep], measure=meas[keep], value=values, source=label,
                  line=lambda i: line_of(int(rows[i])))


def _wide_cells(columns, header, label, measure, line_of, default, header_line) -> _Cells:
    if measure is None and default is None:
        raise InputError("name the measure of a wide score table (measure=...)", label)
    topic_col = _wide_topic(header)
    runs = [h for h in header if h != topic_col]
    if not runs:
        raise InputError("a wide score table needs a column per run; the header has none", label)
    text = header_line is not None
    if text and all(_is_number(h) for h in runs):
        raise InputError("the header holds numbers, not run names: a wide table's first line names its runs",
                         label, header_line)
    rows = np.arange(len(columns[runs[0]]))
    if topic_col is not None:
        topic = _ids(columns[topic_col], "topic id", label, line_of, text)
        dup = _first_duplicate(topic)
        if dup is not None:
            raise ConflictError(f"topic {topic[dup[1]]!r} has two rows (first on line {line_of(dup[0])})", label,
                                line_of(dup[1]))
        rows = np.flatnonzero(topic != SUMMARY_TOPIC)  # trec_eval's summary row (the mean), as in the other layouts
        topic = topic[rows]
    else:
        topic = np.asarray([str(t + 1) for t in rows], dtype=object)
    row_line = lambda i: line_of(int(rows[i]))  # noqa: E731
    values = [_values(columns[r][rows], label, row_line, text, column=r) for r in runs]
    n, k = len(rows), len(runs)
    return _Cells(run=np.repeat(np.asarray(runs, dtype=object), n), topic=np.tile(topic, k),
                  measure=np.full(n * k, measure or default, dtype=object), value=np.concatenate(values),
                  source=label, line=lambda i: row_line(i % n), keep_topic_order=topic_col is None)


#: Names of a wide table's topic column (its first; in any case; unnamed as pandas writes an index).
WIDE_TOPIC_COLUMNS = ("topic", "qid", "query_id", "query", "topic_id", "id", "")


def _wide_topic(header: Sequence[str]) -> str | None:
    """A wide table's topic column: its first, when named as one (:data:`WIDE_TOPIC_COLUMNS`); None: no topic
    column (the rows are the topics, numbered)."""
    return header[0] if header and header[0].strip().lower() in WIDE_TOPIC_COLUMNS else None


def _first_duplicate(names: np.ndarray) -> tuple[int, int] | None:
    seen: dict[str, int] = {}
    for i, x in enumerate(names):
        if x in seen:
            return seen[x], i
        seen[x] = i
    return None


def _is_number(text: str) -> bool:
    from meta_eval.inputs.trec import _NUMBER

    return _NUMBER.fullmatch(text.strip()) is not None


def _flags(values: np.ndarray, label: str, line_of) -> np.ndarray:
    """A ``summary`` column: booleans, or the texts true/false (any case) and 1/0."""
    words = {"true": True, "false": False, "1": True, "0": False, "": False}
    out = np.empty(len(values), dtype=bool)
    for i, v in enumerate(values):
        if isinstance(v, (bool, np.bool_)):
            out[i] = bool(v)
            continue
        word = str(v).strip().lower()
        if word not in words:
            raise InputError(f"summary must be true or false, got {v!r}", label, line_of(i))
        out[i] = words[word]
    return out


def _ids(values: np.ndarray, what: str, label: str, line_of, text: bool, any_object: bool = False) -> np.ndarray:
    """Identifiers as text: from a file, the field's text (trimmed; empty refused); from a DataFrame, the adapters'
    rule (strings and integers; a float id such as 301.0 refused) — or, for measures, any object's text (ir_measures
    passes Measure objects)."""
    if text:
        out = np.asarray([str(v).strip() for v in values], dtype=object)
    elif any_object:
        out = np.asarray(["" if v is None or (isinstance(v, float) and v != v) else str(v) for v in values],
                         dtype=object)
    else:
        from meta_eval.inputs.adapters import _ids as adapter_ids, _Rows

        rows = _Rows(label, values, [], [], where=lambda i: ("", line_of(i)))
        out = np.asarray(adapter_ids(rows, values, what).to_pylist(), dtype=object)
    empty = np.flatnonzero(out == "")
    if empty.size:
        raise InputError(f"{what} is empty", label, line_of(int(empty[0])))
    return out


def _values(values: np.ndarray, label: str, line_of, text: bool, column: str | None = None) -> np.ndarray:
    """Scores as float64 (NaN: an empty or missing cell). Text is checked as the run reader checks a score; in a
    DataFrame, numbers must be finite (NaN is a missing cell) and text must be a number."""
    what = "value" if column is None else f"the score of run {column!r}"
    if not text and values.dtype.kind in "fiu":
        x = values.astype(np.float64)
        bad = np.flatnonzero(np.isinf(x))
        if bad.size:
            raise InputError(f"{what} must be a finite number, got {x[bad[0]]}", label, line_of(int(bad[0])))
    else:
        texts = np.asarray(["" if v is None or (isinstance(v, float) and v != v) else
                            (None if isinstance(v, (bool, np.bool_)) else str(v)) for v in values], dtype=object)
        boolean = np.flatnonzero(texts == None)  # noqa: E711 - elementwise
        if boolean.size:
            raise InputError(f"{what} must be a number, got {values[boolean[0]]!r}", label, line_of(int(boolean[0])))
        x = _numbers(texts, what, label, line_of)
    at = out_of_scale(x)
    if at is not None:
        raise InputError(f"{what} {scale_problem(x[at])}", label, line_of(at))
    return x


def _numbers(texts: np.ndarray, what: str, label: str, line_of) -> np.ndarray:
    """Numeric texts as float64, checked with the run reader's number rule (:func:`meta_eval.inputs.trec._check_number`:
    ASCII decimal notation, finite); empty texts are NaN (missing cells)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from meta_eval.inputs.trec import _NUMBER, _check_number

    arr = pc.utf8_trim_whitespace(pa.array(texts, pa.string()))
    empty = pc.equal(arr, "")
    good = pc.or_(pc.match_substring_regex(arr, f"^(?:{_NUMBER.pattern})$"), empty)
    if not pc.all(good, min_count=0).as_py():  # an empty column is all good (not null)
        row = int(np.flatnonzero(~good.to_numpy(zero_copy_only=False))[0])
        _check_number(arr[row].as_py(), what, "float", label, line_of(row))
    x = pc.cast(pc.if_else(empty, "nan", pc.utf8_ltrim(arr, characters="+")), pa.float64()).to_numpy()
    big = np.flatnonzero(np.isinf(x))
    if big.size:
        _check_number(arr[int(big[0])].as_py(), what, "float", label, line_of(int(big[0])))
    return x


# --------------------------------------------------------------------------------------------- assembly


def _assemble(parts: list[_Cells], missing: str, source: str) -> ScoreTable:
    """One (S, T) array per measure from the pooled cells: each cell once, missing cells by the policy."""
    import pandas as pd

    run = np.concatenate([p.run for p in parts])
    topic = np.concatenate([p.topic for p in parts])
    measure = np.concatenate([p.measure for p in parts])
    value = np.concatenate([p.value for p in parts])
    offsets = np.cumsum([0] + [len(p.value) for p in parts])

    def where(row: int) -> tuple[str, int | None]:
        k = int(np.searchsorted(offsets, row, side="right") - 1)
        return parts[k].source, parts[k].line(row - int(offsets[k]))

    if not len(value):
        raise InputError("the score table holds no score", source)
    numbered = [p.source for p in parts if p.keep_topic_order]
    named = [p.source for p in parts if not p.keep_topic_order]
    if numbered and named:  # row k of one would meet topic "k" of the other
        raise InputError(f"{numbered[0]} has no topic column (its rows are numbered 1, 2, ... in file order) and "
                         f"cannot be pooled with {named[0]}, which names its topics: add a topic column", source)
    run_code, systems = pd.factorize(run)
    topic_code, topics = pd.factorize(topic)
    if not numbered:  # trec_eval's order: the byte order of the ids
        rank = np.argsort(np.argsort([t.encode() for t in topics], kind="stable"))
        topics = np.asarray(sorted(topics, key=str.encode), dtype=object)
        topic_code = rank[topic_code]
    m_code, names = pd.factorize(measure)
    n_sys, n_top, n_meas = len(systems), len(topics), len(names)
    key = (m_code.astype(np.int64) * n_sys + run_code) * n_top + topic_code
    _check_unique(key, where, run, topic, measure)
    present = ~np.isnan(value)
    cube = np.full(n_meas * n_sys * n_top, np.nan)
    cube[key[present]] = value[present]
    cube = cube.reshape(n_meas, n_sys, n_top)
    systems, topics, names = [str(s) for s in systems], [str(t) for t in topics], [str(m) for m in names]
    cube, topics, dropped, filled = _fill(cube, missing, systems, topics, names, key, present, where, source)
    return ScoreTable(tuple(systems), tuple(topics), {m: np.ascontiguousarray(cube[i]) for i, m in enumerate(names)},
                      source, dropped, filled)


def _check_unique(key: np.ndarray, where, run, topic, measure) -> None:
    order = np.argsort(key, kind="stable")
    same = np.flatnonzero(key[order][1:] == key[order][:-1])
    if same.size:
        first, second = int(order[same[0]]), int(order[same[0] + 1])
        (src1, line1), (src2, line2) = where(first), where(second)
        at = f"{src1}:{line1}" if line1 is not None else src1
        raise ConflictError(f"run {run[second]!r}, topic {topic[second]!r}, measure {measure[second]!r} is given "
                            f"twice (first at {at})", src2, line2)


def _fill(cube: np.ndarray, missing: str, systems, topics, names, key, present, where, source):
    """Apply the missing-cell policy; returns the cube, the topics kept, the topics dropped, the cells filled."""
    gaps = np.isnan(cube)
    if not gaps.any():
        return cube, topics, (), 0
    absent = gaps.all(axis=2)
    if absent.any():  # a measure a run has no score of at all: a mistake under every policy
        m, s = np.argwhere(absent)[0]
        raise InputError(f"run {systems[s]!r} has no {names[m]} score on any topic", source)
    if missing == "error":
        m, s, t = np.argwhere(gaps)[0]
        flat = (m * len(systems) + s) * len(topics) + t
        empty = np.flatnonzero((key == flat) & ~present)
        src, line = where(int(empty[0])) if empty.size else (source, None)
        raise InputError(f"run {systems[s]!r} has no {names[m]} score for topic {topics[t]!r} ({int(gaps.sum())} "
                         "cells missing); read with missing='zero' (--missing zero: a missing cell scores 0, as "
                         "trec_eval -c) or missing='skip' (--missing skip: the topic is left out for every run)",
                         src, line)
    if missing == "zero":
        return np.where(gaps, 0.0, cube), topics, (), int(gaps.sum())
    lacking = gaps.any(axis=(0, 1))
    if lacking.all():
        raise InputError("every topic lacks a score of some run: none is left with missing='skip'", source)
    dropped = tuple(t for t, gone in zip(topics, lacking) if gone)
    warnings.warn(MetaEvalWarning(f"{source}: left out {len(dropped)} of {len(topics)} topics that some run has no "
                                  f"score for ({', '.join(dropped[:5])}{', ...' if len(dropped) > 5 else ''})"),
                  stacklevel=4)
    return cube[:, :, ~lacking], [t for t, gone in zip(topics, lacking) if not gone], dropped, 0


def _select(table: ScoreTable, measures: Sequence[str] | None, canonical=None) -> ScoreTable:
    """The table with only ``measures`` (in that order, named as given)."""
    if measures is None:
        return table
    wanted = _wanted(measures, list(table.scores), table.source, canonical)
    return ScoreTable(table.systems, table.topics, {m: table.scores[have] for m, have in wanted.items()},
                      table.source, table.dropped, table.filled)


def _keep_measures(parts: list[_Cells], measures: Sequence[str] | None, source: str, canonical=None
                   ) -> list[_Cells]:
    """The cells of ``measures`` only (before the table is assembled: a measure left out may lack cells)."""
    if measures is None:
        return parts
    have = list(dict.fromkeys(m for p in parts for m in dict.fromkeys(p.measure)))
    wanted = list(_wanted(measures, have, source, canonical).values())
    out = []
    for p in parts:
        rows = np.flatnonzero(np.isin(p.measure, wanted))
        out.append(_Cells(p.run[rows], p.topic[rows], p.measure[rows], p.value[rows], p.source,
                          lambda i, p=p, rows=rows: p.line(int(rows[i])), p.keep_topic_order))
    return out


def _one_name_each(parts: list[_Cells], canonical: Callable[[str], str], source: str) -> None:
    """Refuse a table holding one measure under two names (``AP`` and ``map`` rows): ``-m AP`` would pick one of
    them, and without ``-m`` the analyses would compare the measure with itself."""
    names: dict[str, str] = {}
    for name in dict.fromkeys(m for p in parts for m in dict.fromkeys(p.measure)):
        first = names.setdefault(canonical(name), name)
        if first != name:
            raise InputError(f"the score table holds one measure under two names, {first!r} and {name!r} "
                             f"({canonical(name)}): keep one of them", source)


def _lookup(have: list[str], canonical=None) -> Callable[[str], str | None]:
    """The table's measure (of ``have``) a name asked for names: the same name, else the same in any case, else
    the same ``canonical`` name; None."""
    known = canonical or (lambda name: name)
    lower = {h.lower(): h for h in reversed(have)}
    same = {known(h): h for h in reversed(have)}
    return lambda m: m if m in have else lower.get(m.lower(), same.get(known(m)))


def _wanted(measures: Sequence[str] | str, have: list[str], source: str, canonical=None) -> dict[str, str]:
    """Each name asked for -> the table's measure it names (:func:`_lookup`)."""
    from meta_eval.core.params import did_you_mean

    wanted = [measures] if isinstance(measures, str) else list(measures)
    find = _lookup(have, canonical)
    found = {m: find(m) for m in wanted}
    unknown = [m for m, h in found.items() if h is None]
    if unknown:
        close = did_you_mean(unknown[0], have)
        hint = f" (did you mean {close}?)" if close else ""
        raise InputError(f"no measure {unknown[0]!r} in the score table{hint}; it has {', '.join(have)}", source)
    return found
