"""File identity: which files this process has read, and whether a path names one of them.

Every input meta-eval reads (qrels, runs, study files, plug-in modules...) is recorded here by its device and
inode, so the output layer (:mod:`meta_eval.outputs.writer`, :mod:`meta_eval.outputs.result_folder`) can refuse to write over an input
of the same command whatever path names it: a symlink, a hard link, ``./x`` against ``x``, a folder that holds it.
No heavy imports: the readers and writers of every command use it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

__all__ = ["identity", "inputs", "record_input", "record_inputs", "is_input", "inputs_inside", "named_files",
           "is_pattern", "GLOB_CHARACTERS"]

_LOCK = threading.Lock()
_INPUTS: dict[tuple[int, int], str] = {}  # (st_dev, st_ino) -> the path it was read as


def identity(path: str | os.PathLike) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of the file ``path`` names (symlinks followed), or None when it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def record_input(path: str | os.PathLike) -> None:
    """Remember that this process reads ``path`` (called by the readers; harmless for a path that vanished)."""
    key = identity(path)
    if key is not None:
        with _LOCK:
            _INPUTS.setdefault(key, os.path.abspath(path))


def record_inputs(paths: Iterable[str | os.PathLike]) -> None:
    """:func:`record_input` for each path."""
    for path in paths:
        record_input(path)


def inputs() -> dict[tuple[int, int], str]:
    """Every input recorded so far: identity -> path."""
    with _LOCK:
        return dict(_INPUTS)


def is_input(path: str | os.PathLike, declared: Iterable[str | os.PathLike] = ()) -> str | None:
    """The input (as it was named) that ``path`` is the same file as, or None. ``declared`` adds inputs the
    command will read but has not read yet (so an output can be refused before any work)."""
    key = identity(path)
    if key is None:
        return None
    known = inputs()
    for other in declared:
        other_key = identity(other)
        if other_key is not None:
            known.setdefault(other_key, str(other))
    return known.get(key)


def inputs_inside(folder: str | os.PathLike, declared: Iterable[str | os.PathLike] = ()) -> list[str]:
    """Inputs (recorded or ``declared``) that lie inside ``folder`` (symlinks resolved): replacing the folder would
    destroy them."""
    root = Path(os.path.realpath(folder))
    found = []
    for path in [*inputs().values(), *map(str, declared)]:
        real = Path(os.path.realpath(path))
        if real == root or root in real.parents:
            found.append(str(path))
    return sorted(set(found))


#: The characters that make a name a glob pattern (:mod:`glob`).
GLOB_CHARACTERS = "*?["


def is_pattern(spec: str | os.PathLike) -> bool:
    """Whether an input specification is read as a glob pattern: it holds a glob character (``*?[``) and no file
    of that name exists. A path is a path: a file really named ``run[1].txt`` is that file, never the pattern that
    matches ``run1.txt`` (:func:`meta_eval.inputs.trec.expand_paths` and :func:`named_files` both decide here)."""
    text = os.fspath(spec)
    return any(ch in text for ch in GLOB_CHARACTERS) and not os.path.lexists(text)


def named_files(specs: Iterable[str | os.PathLike | object]) -> list[str]:
    """The files named by input specifications before they are read: paths as they are, folders by their entries,
    glob patterns (:func:`is_pattern`) by their matches (what is not a path, e.g. a DataFrame, is skipped). Used to
    refuse an output that would replace an input before any work; nothing here raises."""
    import glob

    found: list[str] = []
    for spec in specs:
        if spec is None or not isinstance(spec, (str, os.PathLike)):
            continue
        spec = os.fspath(spec)
        try:
            if os.path.isdir(spec):
                found.extend(os.path.join(spec, name) for name in os.listdir(spec))
            elif is_pattern(spec):
                found.extend(glob.glob(spec))
            else:
                found.append(spec)
        except OSError:
            found.append(spec)
    return found
