"""Runs and qrels from the objects researchers already have, with the same checks and errors as files.

Accepted (``io.read_run``/``read_runs``/``read_qrels`` and ``load_collection`` dispatch here for anything that is
not a path):

* pandas DataFrames: ``topic``/``qid``/``query_id``, ``docid``/``docno``/``doc_id`` (PyTerrier's ``docno`` wins over
  its internal integer ``docid``), ``score`` (``rank`` optional; ``run``/``tag``/``system`` names the run and a
  ``run`` column splits one frame into several runs) or a grade ``grade``/``label``/``relevance``/``rel``;
* pytrec_eval-style dicts ``{qid: {docid: score}}`` / ``{qid: {docid: grade}}`` (and ``{run: {qid: {docid:
  score}}}`` for several runs);
* ranx ``Run`` / ``Qrels`` (through their ``to_dict()``; the run's ``name``);
* iterables of ir_measures ``ScoredDoc`` / ``Qrel`` or ir_datasets ``GenericScoredDoc`` / ``TrecQrel`` (any objects
  with ``query_id``, ``doc_id`` and ``score`` or ``relevance`` attributes);
* an ir_datasets dataset the user already has: its ``qrels_iter()`` and ``scoreddocs_iter()`` (nothing is
  downloaded here).

Each becomes a :class:`~meta_eval.inputs.tables.RunTable` / :class:`~meta_eval.inputs.tables.QrelsTable`. Bad values are errors that name
the object and the offending row (``DataFrame bm25:5: score must be a finite number, got nan``, ``run dict 'bm25':
topic '3', document 'd7': score must be a finite number, got 'x'``). Identifiers must be strings or integers: a float
id (``301.0``) would silently differ from the qrels' ``301``, so it is refused.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.inputs.tables import MAX_GRADE, QrelsTable, RunTable

if TYPE_CHECKING:  # pandas and pyarrow are imported where objects are read (import meta_eval stays light)
    import pandas as pd
    import pyarrow as pa

TOPIC_COLUMNS = ("topic", "qid", "query_id")
DOC_COLUMNS = ("docno", "docid", "doc_id")  # PyTerrier: docno is the document id, docid an internal integer
GRADE_COLUMNS = ("grade", "label", "relevance", "rel")
NAME_COLUMNS = ("run", "tag", "system")


def is_path(source: Any) -> bool:
    """A file name (str or os.PathLike), as opposed to an in-memory object."""
    return isinstance(source, (str, os.PathLike))


# --------------------------------------------------------------------------------------------- rows


@dataclass
class _Rows:
    """Columns gathered from any source, with a way to name a row in an error message."""

    label: str
    topic: list | np.ndarray | pd.Series
    docid: list | np.ndarray | pd.Series
    value: list | np.ndarray | pd.Series
    rank: Any = None
    where: Callable[[int], tuple[str, int | None]] = lambda i: ("", i + 1)

    def error(self, row: int, message: str) -> InputError:
        detail, line = self.where(row)
        return InputError(f"{detail}: {message}" if detail else message, self.label, line)


def _from_pairs(label: str, nested: dict, kind: str) -> _Rows:
    """{topic: {docid: value}} -> rows; errors name the topic and the document."""
    topics, docs, values = [], [], []
    for topic, inner in nested.items():
        if not isinstance(inner, dict):
            raise InputError(f"topic {topic!r} maps to {type(inner).__name__}, expected a dict {{docid: {kind}}}",
                             label)
        topics.extend([topic] * len(inner))
        docs.extend(inner.keys())
        values.extend(inner.values())
    return _Rows(label, topics, docs, values,
                 where=lambda i: (f"topic {topics[i]!r}, document {docs[i]!r}", None))


def _from_records(label: str, items: list, field: str) -> _Rows:
    """Named tuples (ir_measures, ir_datasets) -> rows; errors name the item's position."""
    try:
        topics = [x.query_id for x in items]
        docs = [x.doc_id for x in items]
        values = [getattr(x, field) for x in items]
    except AttributeError:
        bad = next(i for i, x in enumerate(items) if not all(hasattr(x, a) for a in ("query_id", "doc_id", field)))
        raise InputError(f"item {bad + 1} ({items[bad]!r}) has no query_id, doc_id and {field}", label) from None
    return _Rows(label, topics, docs, values, where=lambda i: (f"item {i + 1}", None))


def _from_frame(label: str, frame: pd.DataFrame, value_columns: tuple[str, ...], kind: str) -> _Rows:
    columns = {}
    for role, names in (("topic", TOPIC_COLUMNS), ("docid", DOC_COLUMNS), (kind, value_columns)):
        found = next((c for c in names if c in frame.columns), None)
        if found is None:
            raise InputError(f"{'run' if kind == 'score' else 'qrels'} DataFrame lacks columns [{role!r}] (or "
                             f"{', '.join(n for n in names if n != role)}); has {list(frame.columns)}", label)
        columns[role] = frame[found]
    rank = frame["rank"] if "rank" in frame.columns else None
    return _Rows(label, columns["topic"], columns["docid"], columns[kind], rank)


# --------------------------------------------------------------------------------------------- validation


def _shown(value) -> str:
    """A value as the user wrote it: numpy scalars as Python ones (``nan``, not ``np.float64(nan)``)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _series(values) -> pd.Series:
    import pandas as pd

    return values.reset_index(drop=True) if isinstance(values, pd.Series) else pd.Series(values, dtype=object)


#: C's whitespace: a TREC file's fields are split at it, so an id holding it (``"a "``, ``"2\t"``) is one no file could
#: hold, and would never meet its judgment (a topic ``"2 "`` scored 0, silently).
_WHITESPACE = re.compile(r"[ \t\n\v\f\r]")


def _ids(rows: _Rows, values, what: str) -> pa.Array:
    """String ids; ints are written as decimal text; anything else (None, NaN, floats, bools, '', text holding
    whitespace) is refused."""
    import pandas as pd
    import pyarrow as pa

    fast = _arrow_ids(values)
    if fast is not None:
        return fast
    series = _series(values)
    kind = pd.api.types.infer_dtype(series, skipna=False)
    missing = series.isna().to_numpy(dtype=bool)  # a nullable Int64 column with <NA> is still "integer"
    if kind == "integer" and not pd.api.types.is_bool_dtype(series.dtype) and not missing.any():
        return pa.array(series.astype(str).tolist(), pa.string())
    if kind == "string":
        bad = (series.isna() | (series == "")).to_numpy(dtype=bool)
    else:  # mixed: find the offending value
        bad = missing | ~series.map(lambda v: (isinstance(v, str) and v != "") or (
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)))).to_numpy(dtype=bool)
    spaced = series.map(lambda v: isinstance(v, str) and _WHITESPACE.search(v) is not None).to_numpy(dtype=bool)
    if spaced.any() and not bad[:int(np.flatnonzero(spaced)[0])].any():
        row = int(np.flatnonzero(spaced)[0])
        raise rows.error(row, f"{what} {series.iloc[row]!r} holds whitespace: a TREC file splits its fields there, "
                              "so no qrels or run file could match it (strip it)")
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        value = series.iloc[row]
        hint = " (read ids as strings: a float id like 301.0 does not match '301')" if isinstance(
            value, (float, np.floating)) and value == value else ""
        raise rows.error(row, f"{what} must be a non-empty string or an integer, got {_shown(value)}{hint}")
    return pa.array(series.astype(str).tolist(), pa.string())


def _arrow_ids(values) -> pa.Array | None:
    """The ids as an Arrow string array when they are all non-empty strings or all integers (the common case,
    checked in Arrow); None sends them to the slow path, which finds the offending value."""
    import pyarrow as pa

    import pyarrow.compute as pc

    try:
        arr = pa.array(values, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if arr.null_count:
        return None
    if pa.types.is_integer(arr.type):
        return arr.cast(pa.string())
    if (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)) and not (
            len(arr) and (pc.any(pc.equal(pc.utf8_length(arr), 0)).as_py()
                          or pc.any(pc.match_substring_regex(arr, _WHITESPACE.pattern)).as_py())):
        return arr.cast(pa.string())
    return None


def _numbers(rows: _Rows, values, what: str) -> np.ndarray:
    """Finite float64 numbers (numeric text accepted, as in files); booleans and other objects refused."""
    import pandas as pd
    import pyarrow as pa

    if isinstance(values, pd.Series):
        plain = values.to_numpy()
    elif any(isinstance(v, (bool, np.bool_)) for v in values):  # Arrow would read True as 1.0
        plain = np.empty(0, dtype=object)
    else:  # Arrow refuses lists mixing numbers with text: those go to the slow path
        try:
            arr = pa.array(values, from_pandas=True)
            plain = arr.to_numpy(zero_copy_only=False) if arr.null_count == 0 else np.empty(0, dtype=object)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            plain = np.empty(0, dtype=object)
    if plain.dtype.kind in "fiu" and len(plain) == len(values):
        number = plain.astype(np.float64)
        if np.isfinite(number).all():
            return number
    series = _series(values)
    kind = pd.api.types.infer_dtype(series, skipna=False)
    number = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64) if kind != "boolean" else None
    if number is None:
        bad = np.ones(len(series), dtype=bool)
    else:
        bad = ~np.isfinite(number)
        if kind not in ("integer", "floating", "mixed-integer-float", "decimal", "empty"):
            bad |= series.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(dtype=bool)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise rows.error(row, f"{what} must be a finite number, got {_shown(series.iloc[row])}")
    return number


def _run_table(rows: _Rows, name: str, with_rank: bool):
    if with_rank and rows.rank is None:
        raise InputError("ties='rank' needs a rank for every document (a 'rank' column)", rows.label)
    return RunTable(
        name=name, source=rows.label, topic=_ids(rows, rows.topic, "topic id"), docid=_ids(rows, rows.docid, "docid"),
        score=_numbers(rows, rows.value, "score"),
        rank=_numbers(rows, rows.rank, "rank") if with_rank else None,
    )


def _qrels_table(rows: _Rows):
    grade = _numbers(rows, rows.value, "grade")
    fractional = grade != np.round(grade)
    if fractional.any():
        row = int(np.flatnonzero(fractional)[0])
        raise rows.error(row, f"grade must be an integer, got {_shown(_series(rows.value).iloc[row])}")
    big = np.flatnonzero(grade > MAX_GRADE)
    if big.size:
        raise rows.error(int(big[0]), f"grade {int(grade[big[0]])} is above the largest supported grade {MAX_GRADE} "
                         f"(map the grades to 0..{MAX_GRADE})")
    return QrelsTable(source=rows.label, topic=_ids(rows, rows.topic, "topic id"),
                      docid=_ids(rows, rows.docid, "docid"), grade=grade.astype(np.int64))


# --------------------------------------------------------------------------------------------- runs


def _is_records(items: list, field: str) -> bool:
    return bool(items) and all(hasattr(items[0], a) for a in ("query_id", "doc_id", field))


def is_single_run(source: Any) -> bool:
    """Whether a list given as "runs" is itself one run (a list of ScoredDoc-like records)."""
    return isinstance(source, list) and _is_records(source, "score")


def read_run_object(source: Any, *, name: str | None = None, with_rank: bool = False,
                    position: int = 0) -> list:
    """One in-memory source as runs: usually one, several for a DataFrame with a ``run`` column or a
    ``{run: {topic: {docid: score}}}`` dict. Unnamed runs are called ``run<position + 1>``.

    Raises
    ------
    InputError
        An object of no known kind, missing columns, a non-finite score, an id that is not a string or an integer.
    """
    import pandas as pd

    default = f"run{position + 1}"
    if isinstance(source, pd.DataFrame):
        return _runs_from_frame(source, name, with_rank, default)
    if isinstance(source, dict):
        if source and all(isinstance(v, dict) and v and all(isinstance(w, dict) for w in v.values())
                          for v in source.values()):
            return [_run_table(_from_pairs(f"run dict {run!r}", topics, "score"), str(run), with_rank)
                    for run, topics in source.items()]
        run = name or default
        return [_run_table(_from_pairs(f"run dict {run!r}", source, "score"), run, with_rank)]
    if type(source).__module__.startswith("ranx") and hasattr(source, "to_dict"):
        run = name or getattr(source, "name", None) or default
        return [_run_table(_from_pairs(f"ranx Run {run!r}", dict(source.to_dict()), "score"), str(run), with_rank)]
    if hasattr(source, "scoreddocs_iter"):
        run = name or default
        return [_run_table(_from_records(f"ir_datasets scoreddocs {run!r}", list(source.scoreddocs_iter()), "score"),
                           run, with_rank)]
    if isinstance(source, Iterable) and not isinstance(source, (bytes, str)):
        items = list(source)
        if not items:
            raise InputError("the run holds no document", f"run {name or default!r}")
        if _is_records(items, "score"):
            run = name or default
            return [_run_table(_from_records(f"ScoredDoc records {run!r}", items, "score"), run, with_rank)]
    raise InputError(f"cannot read a run from a {type(source).__name__}; give a file, a DataFrame (topic/qid, "
                     "docid/docno, score), a dict {qid: {docid: score}}, a ranx Run, ScoredDoc records or an "
                     "ir_datasets dataset with scoreddocs")


def _runs_from_frame(frame: pd.DataFrame, name: str | None, with_rank: bool, default: str) -> list:
    """One run per value of a ``run`` column (rows named by their position in the whole frame), else one run."""
    if name is None and "run" in frame.columns:
        missing = frame["run"].isna().to_numpy()
        if missing.any():
            raise InputError("the run name is missing", "DataFrame", int(np.flatnonzero(missing)[0]) + 1)
        groups = frame.groupby("run", sort=False).indices  # run -> positions in the frame
        return [_frame_run(frame.iloc[rows], str(key), with_rank, rows) for key, rows in groups.items()]
    if name is None:
        name = next((str(frame[c].iloc[0]) for c in NAME_COLUMNS if c in frame.columns and len(frame)), default)
    return [_frame_run(frame, name, with_rank, np.arange(len(frame)))]


def _frame_run(frame: pd.DataFrame, name: str, with_rank: bool, positions: np.ndarray):
    rows = _from_frame(f"DataFrame {name}", frame, ("score",), "score")
    rows.where = lambda i: ("", int(positions[i]) + 1)
    return _run_table(rows, name, with_rank)


# --------------------------------------------------------------------------------------------- qrels


def read_qrels_object(source: Any):
    """Qrels from a DataFrame, a ``{qid: {docid: grade}}`` dict, a ranx Qrels, Qrel/TrecQrel records or an
    ir_datasets dataset with qrels.

    Raises
    ------
    InputError
        An object of no known kind, missing columns, a grade that is not an integer (or above the largest
        supported grade), an id that is not a string or an integer.
    """
    import pandas as pd

    if isinstance(source, pd.DataFrame):
        return _qrels_table(_from_frame("qrels DataFrame", source, GRADE_COLUMNS, "grade"))
    if isinstance(source, dict):
        return _qrels_table(_from_pairs("qrels dict", source, "grade"))
    if type(source).__module__.startswith("ranx") and hasattr(source, "to_dict"):
        return _qrels_table(_from_pairs("ranx Qrels", dict(source.to_dict()), "grade"))
    if hasattr(source, "qrels_iter"):
        return _qrels_table(_from_records("ir_datasets qrels", list(source.qrels_iter()), "relevance"))
    if isinstance(source, Iterable) and not isinstance(source, (bytes, str)):
        items = list(source)
        if _is_records(items, "relevance"):
            return _qrels_table(_from_records("Qrel records", items, "relevance"))
        if not items:
            raise InputError("the qrels hold no judgment", "qrels")
    raise InputError(f"cannot read qrels from a {type(source).__name__}; give a file, a DataFrame (topic/qid, "
                     "docid/docno, grade/label/relevance), a dict {qid: {docid: grade}}, a ranx Qrels, Qrel records "
                     "or an ir_datasets dataset with qrels")
