"""Reading TREC run and qrels files into tables, with errors that name the file and the line.

Parsing is done by pyarrow's multi-threaded CSV reader (a C++ reader several times faster than pandas' on these
files) when a file uses one delimiter consistently (tab-separated, or single spaces), which is how TREC tools write
them; other whitespace layouts are first normalised to single spaces. Anything pyarrow rejects is diagnosed line by
line in Python, so the error names the exact line; this slow path only runs on bad input.
"""

from __future__ import annotations

import errno
import glob
import math
import os
import re
import stat
import zlib
from collections import Counter, deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from meta_eval.inputs import adapters
from meta_eval.inputs.arrow_numpy import has_empty, one_array, to_numpy
from meta_eval.core.errors import InputError, MetaEvalWarning
from meta_eval.core.file_identity import identity, is_pattern, record_input
from meta_eval.core.parallel import usable_cores
from meta_eval.inputs.tables import MAX_GRADE, PrefsTable, QrelsTable, RunTable, ZScoresTable

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

RUN_FIELDS = ("topic", "q0", "docid", "rank", "score", "tag")
QRELS_FIELDS = ("topic", "iteration", "docid", "grade")
QRELS_JG_FIELDS = ("topic", "group", "docid", "grade")
PREFS_FIELDS = ("topic", "group", "subgroup", "docid", "level")
QRELS_PREFS_FIELDS = ("topic", "group", "docid", "level")
ZSCORES_FIELDS = ("topic", "measure", "mean", "sd")
STDIN = "-"
"""The name that reads standard input (trec_eval's ``-`` for the results file)."""
_WHITESPACE = re.compile(rb"[ \t\r\f\v]+")

PathLike = str | Path


# --------------------------------------------------------------------------------------------- raw bytes

try:  # ISA-L's inflate is about twice as fast as zlib's on run files; zlib is the fallback.
    from isal import isal_zlib as _fast_zlib

    _IsalError = _fast_zlib.error
except ImportError:  # pragma: no cover - isal is a declared dependency
    _fast_zlib, _IsalError = zlib, zlib.error


_GZIP_MAGIC = b"\x1f\x8b"
_SNIFF = 1 << 16  # bytes looked at before a whole file or stream is decompressed


def _gunzip(raw: bytes, source: str) -> bytes:
    """Decompress a (possibly multi-member) gzip stream; a truncated stream is an error. The first 64 KiB are
    decompressed alone and checked to be text first, so a compressed stream of binary data (a gzip bomb of zeros)
    is refused before it fills memory."""
    head = _fast_zlib.decompressobj(wbits=31).decompress(raw, _SNIFF)
    if head[:2] == _GZIP_MAGIC:
        raise InputError("compressed twice (a gzip stream inside a gzip stream): decompress it once", source)
    _check_text(head, source)
    out, data = [], raw
    while data:
        inflater = _fast_zlib.decompressobj(wbits=31)
        out.append(inflater.decompress(data))
        if not inflater.eof:
            raise EOFError("compressed data ended before the end-of-stream marker")
        data = inflater.unused_data.lstrip(b"\x00")
    return b"".join(out)


def _check_text(data: bytes, source: str) -> None:
    """Refuse binary data: a NUL byte never occurs in TREC text (qrels, runs, study files), but fills a device such
    as ``/dev/zero``, a UTF-16 file (every other byte) and compressed or random data."""
    nul = data.find(b"\x00")
    if nul >= 0:
        hint = " (UTF-16 text? save it as UTF-8)" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        column = nul - data.rfind(b"\n", 0, nul)
        raise InputError(f"binary data, not a text file: a NUL byte at byte {column} of the line{hint}", source,
                         data.count(b"\n", 0, nul) + 1)


def _read_raw(path: Path) -> bytes:
    """The file's bytes; any reason it cannot be read (missing, a folder, a symlink loop, no permission, a socket)
    is an InputError naming the file. A stream (a FIFO, ``/dev/stdin``, a character device) is read in blocks and
    checked to be text after the first block, so an endless device of binary data is refused at once."""
    try:
        with open(path, "rb") as f:
            if stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return f.read()
            first = f.read(_SNIFF)
            if first[:2] != _GZIP_MAGIC:
                _check_text(first, str(path))
            return first + f.read()
    except FileNotFoundError:
        raise InputError("file not found", str(path)) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror or exc})", str(path)) from None


_STDIN_DATA: list[bytes] = []  # standard input, read once (an error message may look at its lines again)


def _read_stdin() -> bytes:
    """Standard input's bytes (read once and kept: an error message may need its lines again)."""
    import sys

    if not _STDIN_DATA:
        first = sys.stdin.buffer.read(_SNIFF)
        if first[:2] != _GZIP_MAGIC:
            _check_text(first, STDIN)
        _STDIN_DATA.append(first + sys.stdin.buffer.read())
    return _STDIN_DATA[0]


def read_bytes(path: PathLike) -> bytes:
    """Read a text input (``-``: standard input): decompress gzip (recognised by its magic number, whatever the suffix), refuse binary
    data, and end every line with ``\\n``.

    Line endings: ``\\r\\n`` (Windows) and a lone ``\\r`` (classic Mac OS) are read as line ends. trec_eval
    reads a file with ``\\r`` endings as one line (one document of a run, a malformed qrels line); read that way it
    would score every run 0 with exit status 0, so meta-eval reads the lines the file holds instead.

    Raises
    ------
    InputError
        If the file is missing or unreadable (a folder, a symlink loop, no permission), empty, binary data, a
        corrupt/truncated gzip stream, or holds a byte-order mark after its start.
    """
    if str(path) == STDIN:
        raw = _read_stdin()
        path = Path(STDIN)
    else:
        path = Path(path)
        record_input(path)  # an output of the same command may not replace it (meta_eval.outputs.writer)
        raw = _read_raw(path)
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = _gunzip(raw, str(path))
        except (OSError, EOFError, zlib.error, _IsalError) as exc:
            raise InputError(f"corrupt or truncated gzip file ({exc})", str(path)) from None
    if not raw or raw.isspace():  # (isspace stops at the first other byte: no copy, unlike strip)
        raise InputError("file is empty", str(path))
    _check_text(raw, str(path))
    if raw.startswith(_BOM):  # dropped before anything reads the first line (a "# comment" after it is a comment)
        raw = raw[len(_BOM):]
    if b"\r" in raw:
        raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    _check_no_inner_bom(raw, str(path))  # after the line ends are read: its line is counted in \n
    return raw


_BOM = b"\xef\xbb\xbf"  # U+FEFF in UTF-8


def _check_no_inner_bom(data: bytes, source: str) -> None:
    """A byte-order mark after the file's start (``cat a.run b.run`` of files that each begin with one) is an error
    naming its line: read as text, it would make a topic or document id nobody asked for (a topic "\ufeff1"
    averaged as a topic of its own, a run's document never found among the judgments), silently. ``data`` is
    read without its leading mark (:func:`read_bytes` drops it)."""
    at = -1 if data.isascii() else data.find(_BOM)  # isascii: 7× faster than find, and text is mostly ASCII
    if at >= 0:
        raise InputError("a byte-order mark (U+FEFF) in the middle of the file (files joined with cat?): remove it",
                         source, data.count(b"\n", 0, at) + 1)


_COMMENT = re.compile(rb"(?m)^[ \t]*#[^\n]*")


def _without_comments(data: bytes) -> bytes:
    """Comment lines (``#`` first on the line, as trec_eval 10 skips them in qrels and runs) emptied, so every other
    line keeps its number. A ``#`` inside a line (MS MARCO docids hold one) is text."""
    if data.startswith(b"#") or b"#" in data and _COMMENT.search(data):
        return _COMMENT.sub(b"", data)
    return data


def read_text(path: PathLike) -> str:
    """A text input as a string (a study file): :func:`read_bytes`, then UTF-8; bytes that are not UTF-8 are an
    error naming the line."""
    data = read_bytes(path)
    try:
        return data.decode("utf-8")  # (read_bytes dropped a leading byte-order mark)
    except UnicodeDecodeError as exc:
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        raise InputError(f"not valid UTF-8 text (byte {column} of the line)", str(path),
                         data.count(b"\n", 0, exc.start) + 1) from None


class RunFilesNote(MetaEvalWarning):
    """How run specifications were read, said on stderr: what a glob pattern matched, the names of one file merged
    into one run, entries of a run folder that are not files."""


def expand_paths(specs: Iterable[PathLike]) -> list[Path]:
    """The run files that run specifications name, in order, each file once.

    * ``-`` is standard input;
    * a name that exists is a path, whatever characters it holds (``run[1].txt`` is that file): a folder gives its
      entries (sorted; hidden ones and subfolders skipped), anything else is read as it is;
    * a name that exists nowhere and holds ``*?[`` is a glob pattern
      (:func:`~meta_eval.core.file_identity.is_pattern`), which must match a file; a :class:`RunFilesNote` (a line
      on stderr) says what it matched;
    * one file is one run whatever its names: a symlink or a hard link to a file named already, or one file named
      twice, is read once (a note names the aliases merged);
    * a dangling symbolic link (in a folder, or matched by a pattern) is an error naming it, never a run dropped.

    Raises
    ------
    InputError
        A pattern that matches no file, a folder without files, a dangling or looping link, an unreadable folder.
    """
    files: list[Path] = []
    for spec in specs:
        text = os.fspath(spec)
        if text == STDIN:
            files.append(Path(STDIN))
        elif is_pattern(text):
            files.extend(_pattern_files(text))
        elif os.path.isdir(text):
            files.extend(_folder_files(text))
        else:
            files.append(Path(text))  # a file, a stream, or missing: read_run says which
    return _one_per_file(files)


def _pattern_files(pattern: str) -> list[Path]:
    found = _regular_files(sorted(glob.glob(pattern)), pattern)
    if not found:
        raise InputError("no run files match this glob pattern (and no file has this name)", pattern)
    _note(f"no file is named {pattern!r}: read as a glob pattern, it matched {_listing(found)}")
    return found


def _folder_files(folder: str) -> list[Path]:
    try:
        entries = sorted(os.path.join(folder, name) for name in os.listdir(folder) if not name.startswith("."))
    except OSError as exc:
        raise InputError(f"cannot list the run folder ({exc.strerror or exc})", folder) from None
    found = _regular_files(entries, folder)
    if not found:
        raise InputError("no run files found in this folder", folder)
    return found


def _regular_files(names: list[str], where: str) -> list[Path]:
    """The regular files among ``names`` (symlinks followed; folders skipped). A dangling or looping link is an
    error naming it; a FIFO, socket or device is skipped with a note (a folder's FIFO would block the reading)."""
    found, skipped = [], []
    for name in names:
        try:
            mode = os.stat(name).st_mode
        except OSError as exc:
            if not os.path.islink(name):
                raise InputError(f"cannot read ({exc.strerror or exc})", name) from None
            problem = "a symbolic link loop" if exc.errno == errno.ELOOP else \
                f"a dangling symbolic link (its target {_link_target(name)} does not exist)"
            raise InputError(f"{problem}: the run it names cannot be read; remove the link or restore its target",
                             name) from None
        if stat.S_ISREG(mode):
            found.append(Path(name))
        elif not stat.S_ISDIR(mode):
            skipped.append(name)
    if skipped:
        _note(f"{where}: skipped {_listing(skipped)}, not regular files")
    return found


def _link_target(name: str) -> str:
    try:
        return repr(os.readlink(name))
    except OSError:
        return "?"


def _one_per_file(paths: list[Path], what: str = "run") -> list[Path]:
    """Each file once, where it was first named, by a name that is not a symlink when it has one: aliases
    (symlinks, hard links, ``x`` and ``./x``, a name given twice) are one file (device and inode), so one run
    (or one ``what``)."""
    names: dict[object, list[Path]] = {}
    for path in paths:
        key = ("stdin",) if str(path) == STDIN else identity(path) or ("name", os.path.abspath(path))
        names.setdefault(key, []).append(path)
    out = []
    for aliases in names.values():
        chosen = next((p for p in aliases if not p.is_symlink()), aliases[0])
        if len(aliases) > 1:
            others = sorted({str(p) for p in aliases} - {str(chosen)})
            also = f" (also named {_listing([Path(p) for p in others])})" if others else ""
            _note(f"{chosen} is named {len(aliases)} times{also}: one file, read as one {what}")
        out.append(chosen)
    return out


def _listing(paths: Sequence[str | Path], shown: int = 5) -> str:
    """``a, b and c`` (at most ``shown`` names, then how many more)."""
    names = [str(p) for p in paths]
    if len(names) > shown:
        return ", ".join(names[:shown]) + f" and {len(names) - shown} more"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _note(message: str) -> None:
    import warnings

    warnings.warn(message, RunFilesNote, stacklevel=4)


# --------------------------------------------------------------------------------------------- tables


_VERTICAL = (b"\x0b", b"\x0c")  # vertical tab, form feed: C's isspace (and trec_eval) split fields at them too


def _delimiter(data: bytes) -> tuple[bytes, str, bool]:
    """Pick pyarrow's delimiter: tab for files without spaces (the common TREC layout), a single space for files
    whose only whitespace is spaces (the other common layout), else single spaces after normalising every
    whitespace run; and whether the data was normalised. A space-separated file not normalised may still hold
    two spaces in a row, or one at a line's start or end (found as empty fields once parsed, cheaper than a
    search for two bytes, which costs as much as parsing). Irregular tabs (empty fields) surface later as a
    column-count error or an empty field, both of which send the file through the normalising path. A vertical
    tab or a form feed (each found at memchr's speed) sends any file there: read as part of a field, it made a
    docid never judged (``a\f9``), silently."""
    vertical = any(pattern in data for pattern in _VERTICAL)
    if not vertical and b" " not in data:
        return data, "\t", False
    if not vertical and b"\t" not in data and b"\r" not in data:
        return data, " ", False
    return _normalised(data), " ", True


def _normalised(data: bytes) -> bytes:
    """Every whitespace run a single space, none at a line's start or end."""
    return b"\n".join(_WHITESPACE.sub(b" ", line).strip() for line in data.split(b"\n"))


def _read_table(data: bytes, fields: Sequence[str], types: dict[str, pa.DataType], keep: Sequence[str]) -> pa.Table:
    data, delimiter, normalised = _delimiter(data)
    if delimiter == " " and not normalised:  # every field parsed, to find the empty ones (the others as bytes)
        try:
            table = _arrow_csv(data, delimiter, fields, {name: pa.binary() for name in fields if name not in keep}
                               | types, fields)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # two spaces in a row (an extra field) or a bad line
            table = None
        if table is None or _has_empty_field(table, fields):
            return _arrow_csv(_normalised(data), " ", fields, types, keep)  # a bad line: diagnosed by the caller
        return table.select(list(keep))
    table = _arrow_csv(data, delimiter, fields, types, keep)
    if delimiter == "\t" and _has_empty_field(table):
        table = _arrow_csv(_normalised(data.replace(b"\t", b" ")), " ", fields, types, keep)
    return table


#: The largest block Arrow's CSV reader parses at once: a file up to this size is one block, so every column is
#: one array (no chunks to combine), while a column's text stays within the 2 GiB of a string array's offsets.
MAX_BLOCK = 1 << 30


def _arrow_csv(data: bytes, delimiter: str, fields, types, keep) -> pa.Table:
    """Arrow's CSV reader with TREC's conventions, the file in one block. Text columns are checked to be UTF-8
    after parsing (on the dictionary of a dictionary-encoded column), unless the whole text is ASCII."""
    table = pacsv.read_csv(
        pa.BufferReader(data),
        read_options=pacsv.ReadOptions(column_names=list(fields), use_threads=False,
                                       block_size=max(min(len(data) + 1, MAX_BLOCK), 1 << 20)),
        parse_options=pacsv.ParseOptions(delimiter=delimiter, quote_char=False, double_quote=False),
        convert_options=pacsv.ConvertOptions(
            column_types={name: types.get(name, pa.string()) for name in fields},
            include_columns=list(keep),
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
            null_values=[],  # "NA", "null", "nan" are not numbers: such lines go to the diagnosis
            check_utf8=False,
        ),
    )
    if data.isascii():  # ASCII is UTF-8 (a scan at memory speed, against 15 ns a string for Arrow's validation)
        return table
    for column in table.columns:
        for chunk in column.chunks:
            text = chunk.dictionary if pa.types.is_dictionary(chunk.type) else chunk
            if pa.types.is_string(text.type):
                text.validate(full=True)  # ArrowInvalid on bytes that are not UTF-8: the line is then diagnosed
    return table


def _has_empty_field(table: pa.Table, names: Sequence[str] = ("topic", "docid")) -> bool:
    """Whether a text column among ``names`` holds an empty field, or any column a null."""
    for name in names:
        if name not in table.column_names:
            continue
        for chunk in table.column(name).chunks:
            values = chunk.dictionary if pa.types.is_dictionary(chunk.type) else chunk
            text = pa.types.is_string(values.type) or pa.types.is_binary(values.type)
            if text and has_empty(values):
                return True
    return any(table.column(name).null_count for name in table.column_names)


def _nonblank_lines(data: bytes) -> list[tuple[int, list[str]]]:
    """(line number, fields) of every non-blank line; used only to diagnose errors. Fields are split at ASCII
    whitespace, as the parser (and C's ``isspace``) splits them: a no-break space is part of a field."""
    out = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        fields = line.split()
        if fields:
            out.append((number, [f.decode("utf-8", errors="replace") for f in fields]))
    return out


def _diagnose(data: bytes, source: str, fields: Sequence[str], checks: dict[str, str], trailing_text: bool) -> None:
    """Find the first bad line of ``data`` and raise an InputError naming it.

    ``checks`` maps a field name to "float" (finite number) or "int" (integer) for the typed columns.
    ``trailing_text``: whether text after the last field is allowed (runs, as trec_eval allows it) or an error
    (qrels: trec_eval refuses such a line as malformed). Text after a run line's last field that is itself the rest of
    a run line is refused either way: two lines joined by a lost line break would lose a document silently.
    """
    expected = len(fields)
    layout = " ".join(fields)
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not valid UTF-8 text (byte {exc.start + 1} of the line)", source, number) from None
    for number, parts in _nonblank_lines(data):
        if len(parts) < expected or (len(parts) > expected and not trailing_text):
            raise InputError(
                f"expected {expected} whitespace-separated fields ({layout}), found {len(parts)}: {' '.join(parts)!r}"
                + (" (two lines joined? a line break may be missing)" if len(parts) >= 2 * expected - 1 else ""),
                source,
                number,
            )
        if len(parts) > expected and _joined_run_line(parts):
            raise InputError(f"two run lines joined on one line (a line break is missing?): {' '.join(parts)!r}",
                             source, number)
        for name, kind in checks.items():
            value = parts[fields.index(name)]
            _check_number(value, name, kind, source, number)


def _joined_run_line(parts: list[str]) -> bool:
    """Whether the text after a run line's six fields is the rest of another run line: ``Q0 docid rank score tag``
    (the tag of one line ran into the topic of the next) or a whole ``topic Q0 docid rank score tag``, with the same
    Q0 field as the line's own. Free text after the tag (trec_eval's suite has some) does not look like that."""
    extra = parts[6:]
    for shift in (0, 1):
        tail = extra[shift:]
        if len(tail) >= 5 and tail[0] == parts[1] and _NUMBER.fullmatch(tail[2]) and _NUMBER.fullmatch(tail[3]):
            return True
    return False


_INT64 = 2**63
# Numbers as C's strtod/strtol write them, ASCII only: Python's float() also takes "1_000" and other scripts'
# digits, which the parser refuses, so the diagnosis must refuse them too (with the line) rather than pass them.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
_NON_FINITE = re.compile(r"[+-]?(?:inf|infinity|nan)", re.ASCII | re.IGNORECASE)


def _check_number(value: str, name: str, kind: str, source: str, line: int) -> None:
    if _NON_FINITE.fullmatch(value):
        raise InputError(f"{name} must be a finite number, got {value!r}", source, line)
    if not _NUMBER.fullmatch(value):
        raise InputError(f"{name} must be a number, got {value!r}", source, line)
    if not math.isfinite(float(value)):
        raise InputError(f"{name} must be a finite number, got {value!r} (out of the 64-bit float range)", source,
                         line)
    if kind == "int":
        if not _INTEGER.fullmatch(value):
            raise InputError(f"{name} must be an integer, got {value!r}", source, line)
        if not -_INT64 <= int(value) < _INT64:
            raise InputError(f"{name} {value} is out of the 64-bit integer range", source, line)


def _line_of_row(data: bytes, row: int) -> int:
    """1-based line number of the ``row``-th (0-based) non-blank line."""
    return _nonblank_lines(data)[row][0]


def _field_of_row(data: bytes, row: int, field: int) -> str:
    """The text of a field on the ``row``-th non-blank line, as written in the file (for error messages)."""
    return _nonblank_lines(data)[row][1][field]


def _parse(data: bytes, source: str, fields, types, keep, checks, *, trailing_text: bool) -> pa.Table:
    """Parse with pyarrow; on failure find the bad line. With ``trailing_text``, text after the last field is
    ignored, as trec_eval does for runs (its own test suite has run lines with trailing comments); a leading ``+``
    on a number is accepted, as C's ``atol``/``atof`` accept it."""
    try:
        return _read_table(data, fields, types, keep)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        _diagnose(data, source, fields, checks, trailing_text)
        typed = [fields.index(name) for name in checks]
        lines = []
        for line in data.split(b"\n"):
            parts = line.split()[: len(fields)]
            for i in typed:
                if i < len(parts) and parts[i].startswith(b"+"):
                    parts[i] = parts[i][1:]
            lines.append(b" ".join(parts))
        try:
            return _read_table(b"\n".join(lines), fields, types, keep)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            raise InputError(f"cannot parse ({exc})", source) from None


# --------------------------------------------------------------------------------------------- runs


def read_run(source: PathLike | Any, *, name: str | None = None, with_rank: bool = False) -> RunTable:
    """Read one TREC run (``topic Q0 docid rank score tag``; any whitespace; plain or gzip).

    Parameters
    ----------
    source : path or in-memory run
        A run file, or an object :mod:`meta_eval.inputs.adapters` reads: a DataFrame (``topic``/``qid``,
        ``docid``/``docno``, ``score``), a ``{qid: {docid: score}}`` dict, a ranx Run, ScoredDoc records...
    name : str, optional
        Run name; default: the tag of the last line (trec_eval's ``runid``).
    with_rank : bool
        Also parse the rank column (needed only for ``ties="rank"``; trec_eval ignores it).

    Raises
    ------
    InputError
        Wrong number of fields, non-numeric / NaN / infinite score, (with ``with_rank``) non-numeric rank,
        empty or corrupt file; the message names the file and line.
    """
    if not adapters.is_path(source):
        runs = adapters.read_run_object(source, name=name, with_rank=with_rank)
        if len(runs) != 1:
            raise InputError(f"holds {len(runs)} runs; read it with read_runs", runs[0].source)
        return runs[0]
    label = source_label(source)
    data = _without_comments(read_bytes(source))
    keep = ["topic", "docid", "score"] + (["rank"] if with_rank else [])
    checks = {"score": "float"} | ({"rank": "float"} if with_rank else {})
    # topic and docid as plain strings: Arrow's dictionary encoding while parsing costs more than parsing them (and,
    # documents rarely repeating, gains nothing); the collection hashes the docids it needs (arrow_numpy).
    types = {"score": pa.float64()} | ({"rank": pa.float64()} if with_rank else {})
    table = _parse(data, label, RUN_FIELDS, types, keep, checks, trailing_text=True)
    if table.num_rows == 0:
        raise InputError("holds no ranked document, only comment lines", label)
    score = to_numpy(table.column("score"))
    bad = ~np.isfinite(score)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(f"score must be a finite number, got {_field_of_row(data, row, 4)!r}", label,
                         _line_of_row(data, row))
    rank = to_numpy(table.column("rank")) if with_rank else None
    if rank is not None and not np.isfinite(rank).all():
        row = int(np.flatnonzero(~np.isfinite(rank))[0])
        raise InputError(f"rank must be a finite number, got {_field_of_row(data, row, 3)!r}", label,
                         _line_of_row(data, row))
    return RunTable(
        name=name or _last_tag(data, label),
        source=label,
        topic=one_array(table.column("topic")),
        docid=one_array(table.column("docid")),
        score=score,
        rank=rank,
    )


def _last_tag(data: bytes, source: str) -> str:
    """The tag (6th field) of the last non-blank line: the run's name, as trec_eval's ``runid`` ("the run_id field
    of the last line is kept and output"). A tag that is not UTF-8 is an error naming the line (decoded with
    replacement characters it would name the run wrongly)."""
    end = len(data)
    while end > 0:  # line by line from the end: splitting the file would copy it
        start = data.rfind(b"\n", 0, end) + 1
        fields = data[start:end].split()
        if len(fields) >= 6:
            try:
                return fields[5].decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(f"the run tag {fields[5]!r} is not valid UTF-8 text", source,
                                 data.count(b"\n", 0, start) + 1) from None
        end = start - 1
    return "run"


def source_label(source: PathLike) -> str:
    """How error messages name an input: its path, or "standard input" for ``-``."""
    return "standard input" if str(source) == STDIN else str(source)


T = TypeVar("T")


def read_runs(
    sources: Sequence[PathLike | Any] | PathLike | Any,
    *,
    with_rank: bool = False,
    progress: bool = False,
    each: Callable[[RunTable], T] | None = None,
) -> list[RunTable] | list[T]:
    """Read many runs: files, directories, glob patterns, or in-memory runs (:mod:`meta_eval.inputs.adapters`; a
    DataFrame with a ``run`` column is split into one run per value). Run names must be unique. ``progress``
    shows a bar over the files.

    Files are read on every usable core (:func:`iter_runs`). ``each``, if given, is applied to every run as soon
    as it is parsed, in the reading thread, and its result (which must have ``name`` and ``source`` attributes) is
    kept instead of the run: the parsed run is dropped at once, so only what ``each`` keeps of all runs is ever in
    memory."""
    runs = list(iter_runs(sources, with_rank=with_rank, progress=progress, each=each))
    names = unique_names([run.name for run in runs], [run.source for run in runs])
    return [run if run.name == name else replace(run, name=name) for run, name in zip(runs, names)]


def iter_runs(
    sources: Sequence[PathLike | Any] | PathLike | Any,
    *,
    with_rank: bool = False,
    progress: bool = False,
    each: Callable[[RunTable], T] | None = None,
) -> Iterator[RunTable] | Iterator[T]:
    """The runs of :func:`read_runs` one by one, in order, with their names as read (:func:`unique_names` tells
    apart two that share one).

    Files are read on every usable core, several at once (decompression and Arrow's parser release the GIL;
    threads cost no start-up, so they are not held back on a busy machine, where the kernel shares the cores
    between them and others), and at most one run per thread is read ahead of the consumer: memory holds a few
    runs being read, not all of them."""
    from meta_eval.core.progress import progress as progress_display

    if not isinstance(sources, (list, tuple)) or adapters.is_single_run(sources):
        sources = [sources]
    keep = each or (lambda run: run)
    paths = [s for s in sources if adapters.is_path(s)]
    for i, obj in enumerate(s for s in sources if not adapters.is_path(s)):
        yield from (keep(run) for run in adapters.read_run_object(obj, with_rank=with_rank, position=i))
    files = expand_paths(paths)
    threads = min(len(files), usable_cores()) or 1
    with ThreadPoolExecutor(max_workers=threads) as pool:
        parsed = _ahead(pool, lambda path: keep(read_run(path, with_rank=with_rank)), files, threads + 1)
        yield from progress_display(parsed, total=len(files), desc="reading runs", unit="run",
                                    enabled=progress and len(files) > 1)


def _ahead(pool: ThreadPoolExecutor, func: Callable, items: Sequence, ahead: int) -> Iterator:
    """``map(func, items)`` on the pool, in order, with at most ``ahead`` items submitted and not yet consumed."""
    pending: deque = deque()
    try:
        for item in items:
            pending.append(pool.submit(func, item))
            if len(pending) > ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for future in pending:  # an error or a consumer that stops: nothing more is read
            future.cancel()


def unique_names(names: Sequence[str], sources: Sequence[str]) -> list[str]:
    """Run names told apart: runs that share a tag take their file name (``tag@file``, ``.gz`` dropped).

    Raises
    ------
    InputError
        Two runs still share a name."""
    counts = Counter(names)
    out = [f"{name}@{Path(source).name.removesuffix('.gz')}" if counts[name] > 1 else name
           for name, source in zip(names, sources)]
    dup = [name for name, n in Counter(out).items() if n > 1]
    if dup:
        files = [source for name, source in zip(out, sources) if name == dup[0]]
        raise InputError(f"two runs are both named {dup[0]!r}, even with their file names ({_listing(files)}): "
                         "give them distinct run tags or file names")
    return out


# --------------------------------------------------------------------------------------------- qrels


def read_qrels(source: PathLike | Any) -> QrelsTable:
    """Read TREC qrels (``topic iteration docid grade``; any whitespace; plain or gzip).

    Grades must be integers; negative grades are kept (judged, not relevant for every measure, as in trec_eval).
    In-memory qrels are read by :mod:`meta_eval.inputs.adapters`: a DataFrame (``topic``/``qid``, ``docid``/``docno``,
    ``grade``/``label``/``relevance``), a ``{qid: {docid: grade}}`` dict, a ranx Qrels, Qrel records...

    Raises
    ------
    InputError
        Wrong number of fields, non-integer grade, empty or corrupt file (file and line named).
    """
    if isinstance(source, QrelsTable):
        return source
    if not adapters.is_path(source):
        return adapters.read_qrels_object(source)
    return _read_qrels_file(source, QRELS_FIELDS)


def read_qrels_jg(source: PathLike) -> QrelsTable:
    """Read qrels with judgment groups (trec_eval's ``qrels_jg``: ``topic group docid grade``): the second field
    names the judgment group (a user's judgments), so one document may be judged once per group. Plain qrels read
    this way are one group per iteration value (usually ``0``).

    Raises
    ------
    InputError
        As :func:`read_qrels`.
    """
    return _read_qrels_file(source, QRELS_JG_FIELDS)


def _read_qrels_file(source: PathLike, fields: tuple[str, ...]) -> QrelsTable:
    label = source_label(source)
    data = _without_comments(read_bytes(source))
    grouped = fields == QRELS_JG_FIELDS
    keep = ["topic", "docid", "grade"] + (["group"] if grouped else [])
    table = _parse(data, label, fields, {"grade": pa.int64()}, keep, {"grade": "int"}, trailing_text=False)
    if table.num_rows == 0:  # trec_eval 10 crashes on such a file; scored, every run would seem to share no topic
        raise InputError("holds no judgment, only comment lines", label)
    grade = to_numpy(table.column("grade"))
    _check_grade_range(grade, label, lambda row: _line_of_row(data, row))
    return QrelsTable(
        source=label,
        topic=table.column("topic").combine_chunks(),
        docid=table.column("docid").combine_chunks(),
        grade=grade,
        group=table.column("group").combine_chunks() if grouped else None,
    )


def read_prefs(source: PathLike, *, fmt: str = "prefs") -> PrefsTable:
    """Read preference judgments: trec_eval's ``prefs`` format (``topic group subgroup docid level``) or, with
    ``fmt="qrels_prefs"``, a qrels file read as preferences (``topic group docid level``: one sub-group per group,
    the second field naming the group). Levels are numbers (a float); ``#`` comment lines are skipped.

    Raises
    ------
    InputError
        Wrong number of fields, a level that is not a finite number, empty or corrupt file (file and line named).
    """
    if fmt not in ("prefs", "qrels_prefs"):
        raise InputError(f"preference format must be 'prefs' or 'qrels_prefs', got {fmt!r}")
    label = source_label(source)
    data = _without_comments(read_bytes(source))
    fields = PREFS_FIELDS if fmt == "prefs" else QRELS_PREFS_FIELDS
    keep = [f for f in fields]
    table = _parse(data, label, fields, {"level": pa.float64()}, keep, {"level": "float"}, trailing_text=False)
    level = to_numpy(table.column("level"))
    if not np.isfinite(level).all():
        row = int(np.flatnonzero(~np.isfinite(level))[0])
        raise InputError(f"level must be a finite number, got {_field_of_row(data, row, len(fields) - 1)!r}",
                         label, _line_of_row(data, row))
    topic = table.column("topic").combine_chunks()
    subgroup = (table.column("subgroup").combine_chunks() if fmt == "prefs"
                else pa.array(np.full(len(level), "0", dtype=object), pa.string()))
    return PrefsTable(source=label, topic=topic, group=table.column("group").combine_chunks(), subgroup=subgroup,
                      docid=table.column("docid").combine_chunks(), level=level)


def read_zscores(source: PathLike) -> ZScoresTable:
    """Read reference means and standard deviations (trec_eval's ``-Z`` file: ``topic measure mean sd`` lines, as
    its ``test/make_zscore_file.py`` writes them).

    Raises
    ------
    InputError
        Wrong number of fields, a mean or s.d. that is not a finite number, a (topic, measure) given twice (file and
        line named).
    """
    label = source_label(source)
    data = _without_comments(read_bytes(source))
    types = {"mean": pa.float64(), "sd": pa.float64()}
    table = _parse(data, label, ZSCORES_FIELDS, types, list(ZSCORES_FIELDS), {"mean": "float", "sd": "float"},
                   trailing_text=False)
    topic, measure = table.column("topic").to_pylist(), table.column("measure").to_pylist()
    mean, sd = to_numpy(table.column("mean")), to_numpy(table.column("sd"))
    seen: dict[tuple[str, str], int] = {}
    for row, key in enumerate(zip(topic, measure)):
        if key in seen:
            raise InputError(f"topic {key[0]!r}, measure {key[1]!r} is given twice (first on line "
                             f"{_line_of_row(data, seen[key])})", label, _line_of_row(data, row))
        seen[key] = row
        if not (math.isfinite(mean[row]) and math.isfinite(sd[row])):
            raise InputError("mean and s.d. must be finite numbers", label, _line_of_row(data, row))
        if sd[row] < 0:
            raise InputError(f"a standard deviation cannot be negative, got {sd[row]!r}", label, _line_of_row(data, row))
    return ZScoresTable(source=label, topic=topic, measure=measure, mean=mean, sd=sd)


def _check_grade_range(grade: np.ndarray, source: str, line_of_row) -> None:
    """Grades above :data:`~meta_eval.inputs.tables.MAX_GRADE` are refused (grades are stored as small integers);
    negative grades of any size are judged-not-relevant, as in trec_eval."""
    big = np.flatnonzero(grade > MAX_GRADE)
    if big.size:
        row = int(big[0])
        raise InputError(f"grade {int(grade[row])} is above the largest supported grade {MAX_GRADE} (relevance "
                         f"grades are stored as small integers; map the grades to 0..{MAX_GRADE})", source,
                         line_of_row(row))


def line_of_pair(source: str, topic: str, docid: str, occurrence: int = 2) -> int | None:
    """Line number of the ``occurrence``-th line of a file holding ``topic`` and ``docid`` (error reporting)."""
    return line_of_fields(source, {0: topic, 2: docid}, occurrence)


def line_of_fields(source: str, fields: dict[int, str], occurrence: int = 1) -> int | None:
    """Line number of the ``occurrence``-th line of a file whose fields at the given positions hold the given
    text (error reporting); None if there is none or the file cannot be read again."""
    try:
        data = _without_comments(read_bytes(STDIN if source == source_label(STDIN) else source))
    except InputError:
        return None
    seen = 0
    width = max(fields) + 1
    for number, parts in _nonblank_lines(data):
        if len(parts) >= width and all(parts[i] == text for i, text in fields.items()):
            seen += 1
            if seen == occurrence:
                return number
    return None


def read_run_groups(path: PathLike) -> dict[str, str]:
    """A file of ``run group`` lines (which runs share a pool contribution; ``#`` comments and blank lines
    skipped), as ``{run: group}``.

    Raises
    ------
    InputError
        A line without exactly two fields, or a run given twice; the message names the file and line.
    """
    label = str(path)
    groups: dict[str, str] = {}
    for number, parts in _nonblank_lines(_without_comments(read_bytes(path))):
        if len(parts) != 2:
            raise InputError(f"expected 2 whitespace-separated fields (run group), found {len(parts)}", label, number)
        if parts[0] in groups:
            raise InputError(f"run {parts[0]!r} is given a group twice", label, number)
        groups[parts[0]] = parts[1]
    return groups


def write_results(frame: pd.DataFrame, path: PathLike) -> None:
    """Write a tidy results frame (``run, topic, measure, value``) as CSV."""
    frame.to_csv(path, index=False, float_format="%.6g")
