"""The on-disk cache of solved MEM distributions: one verified file per metric and list set.

Key
    Everything a solved distribution depends on: the lists (grades, lengths, qrels counts), the metric as named,
    the code behind it (a plug-in's module file and its local imports; a function's module and compiled code;
    meta-eval's own solver and measures — :mod:`meta_eval.measures.fingerprint`), the count mode, the solver
    options, and the versions of the solver, of the cache format, of Python, numpy, scipy and numba. A metric whose
    code cannot be keyed soundly (a lambda, a closure, a function defined in a script or notebook, a form object)
    is solved without the cache, which a warning says once.
Entry
    ``mem_<metric>_<key>.npz``: every field of :class:`~meta_eval.statistics.maxent.result.MEMResult`, the key it was written
    under and a sha256 checksum of the arrays. It is written to a temporary file in the cache folder and renamed
    over the entry, so a reader never sees half an entry.
Reading
    An entry is trusted only if it is a regular file, a readable archive whose arrays have the shapes of the lists
    (checked on the headers, before any array is read), was written under the key asked for, and matches its
    checksum. Anything else (a truncated or garbage file, one planted under another key, a wrong shape) is
    ignored with one warning line, solved again and rewritten. The checksum detects damage, not a forger with
    write access to the folder.
An unusable folder
    (read-only, a file in its place, not enough free space for the entries) is found before any solving: a folder
    the user named is an error, the default folder a warning (the study then runs without a cache). A write that
    fails anyway (the disk filled meanwhile) is a warning; the solved results are returned all the same.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import tempfile
import warnings
import zipfile
from pathlib import Path

import numpy as np

from meta_eval.core.errors import InputError, MetaEvalWarning

FORMAT = "meta-eval MEM cache 2"
_NOT_IN_KEY = ("jobs", "scheduler", "progress", "chunk_size")  # how the work is run never changes a result
_SAID: set[str] = set()


class CacheWarning(MetaEvalWarning):
    """The MEM cache could not be used for something (the results are computed all the same)."""


def _warn(message: str) -> None:
    """One warning line, once per process for the same message."""
    if message not in _SAID:
        _SAID.add(message)
        warnings.warn(message, CacheWarning, stacklevel=3)


@dataclasses.dataclass
class MemCache:
    """A usable cache folder (:meth:`open`); ``required``: the user named it (problems are errors)."""

    folder: Path
    required: bool = True

    @classmethod
    def open(cls, folder: "str | Path | MemCache | None", *, required: bool = True) -> "MemCache | None":
        """The cache in ``folder`` after checking it can be written, or None (no folder, or an unusable default one).

        Raises
        ------
        InputError
            The folder cannot be used and ``required`` (the user named it).
        """
        if folder is None or isinstance(folder, MemCache):
            return folder
        path = Path(folder).expanduser()
        problem = _unusable(path)
        if problem is None:
            return cls(path, required)
        return cls._refuse(path, problem, required)

    @staticmethod
    def _refuse(path: Path, problem: str, required: bool) -> None:
        if required:
            raise InputError(f"cannot use the MEM cache folder {path}: {problem} (name another with --cache, or "
                             "solve without a cache: --no-cache)")
        _warn(f"the MEM cache folder {path} cannot be used ({problem}); solving without a cache")
        return None

    # -------------------------------------------------------------------------------------------------- keys

    def key(self, batch, measure, counts: str, options: dict) -> str | None:
        """The key of a metric's distributions for the lists of ``batch`` (module docstring), or None (with a
        warning, once) when the metric's code cannot be keyed soundly."""
        from meta_eval.measures.fingerprint import meta_eval_fingerprint
        from meta_eval.statistics.maxent.result import SOLVER_VERSION

        code, why = measure_fingerprint(measure)
        name = _name(measure)
        if code is None:
            _warn(f"{name} is solved without the MEM cache: {why}")
            return None
        h = hashlib.sha256()
        for a in (batch.grades, batch.lengths, batch.counts):
            a = np.ascontiguousarray(a)
            h.update(f"{a.dtype.str}{a.shape}".encode())
            h.update(a.tobytes())
        options = sorted((k, repr(v)) for k, v in options.items() if k not in _NOT_IN_KEY)
        h.update(f"{FORMAT}|{name}|{code}|{counts}|{options}|{SOLVER_VERSION}|{meta_eval_fingerprint()}|"
                 f"{_versions()}".encode())
        return h.hexdigest()

    def path(self, key: str, measure) -> Path:
        return self.folder / f"mem_{_slug(_name(measure))}_{key[:32]}.npz"

    # -------------------------------------------------------------------------------------------------- space

    def check_space(self, batch, n_entries: int) -> "MemCache | None":
        """This cache if the folder has room for ``n_entries`` entries of ``batch`` (their uncompressed size, an
        upper bound), else an error or a warning as for an unusable folder (:meth:`open`)."""
        need = n_entries * _entry_bytes(batch)
        try:
            free = shutil.disk_usage(self.folder).free
        except OSError as exc:
            return self._refuse(self.folder, f"cannot read its free space ({exc.strerror or exc})", self.required)
        if free >= need:
            return self
        return self._refuse(self.folder, f"{n_entries} entries need up to {need / 2**20:.1f} MB, "
                            f"{free / 2**20:.1f} MB are free", self.required)

    # -------------------------------------------------------------------------------------------------- entries

    def load(self, key: str, measure, batch):
        """The cached result, or None if there is none or the entry is not trusted (then with a warning)."""
        path = self.path(key, measure)
        if not os.path.lexists(path):
            return None
        try:
            problem, arrays = _read(path, key, batch)
            result = None if problem else _result(arrays)
        except Exception as exc:  # noqa: BLE001 - a damaged entry of any kind is recomputed, never a traceback
            problem = f"unreadable: {type(exc).__name__}: {exc}"
        if problem is not None:
            _warn(f"ignoring the MEM cache entry {path} ({problem}); solving it again")
            return None
        return result

    def store(self, key: str, measure, result) -> None:
        """Write an entry atomically (temporary file in the folder, then rename); a failure is a warning."""
        arrays = _arrays(result)
        arrays["key"] = np.array(key)
        arrays["format"] = np.array(FORMAT)
        arrays["checksum"] = np.array(_checksum(arrays))
        path = self.path(key, measure)
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".mem-", suffix=".npz.tmp")
            with os.fdopen(fd, "wb") as f:
                np.savez_compressed(f, **arrays)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)
            _warn(f"could not write to the MEM cache {self.folder} ({exc.strerror or exc}); the results of this run "
                  "are not cached")


def default_folder() -> Path:
    """Where solved distributions are cached unless a folder is named: ``$XDG_CACHE_HOME/meta-eval/mem``, or
    ``~/.cache/meta-eval/mem`` when ``XDG_CACHE_HOME`` is unset, empty or relative (the XDG rule: a relative path
    is invalid and ignored; it would put the cache in whatever folder the command runs from)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "meta-eval" / "mem"


def open_cache(cache_dir: "str | Path | MemCache | None") -> MemCache | None:
    """:meth:`MemCache.open` of a folder the caller named (an error if it cannot be used)."""
    return MemCache.open(cache_dir, required=True)


def _unusable(folder: Path) -> str | None:
    """Why a cache folder cannot be written, or None."""
    if folder.exists() and not folder.is_dir():
        return "it is not a folder"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot create it ({exc.strerror or exc})"
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        return f"cannot write in it ({exc.strerror or exc})"
    return None


def measure_fingerprint(measure) -> tuple[str | None, str]:
    """(hash of the code behind a metric — "" for meta-eval's own, keyed with meta-eval — , "") or (None, why it
    cannot be keyed)."""
    import inspect

    from meta_eval.measures.fingerprint import function_fingerprint
    from meta_eval.measures.plugins import plugin_fingerprint
    from meta_eval.measures.registry import Measure, is_builtin

    if isinstance(measure, str):
        from meta_eval.measures.resolver import load_metric

        try:
            found = load_metric(measure)
        except InputError:  # a name only MEM knows (its own spellings): meta-eval's code
            return "", ""
        if len(found) != 1:
            return "", ""
        measure = found[0]
    if not isinstance(measure, Measure):
        return None, f"a {type(measure).__name__} object's state is in no file"
    family = measure.family
    if family.source:
        return plugin_fingerprint(family)
    func = inspect.unwrap(family.func)
    if is_builtin(func):
        return "", ""
    return function_fingerprint(func)


def _name(measure) -> str:
    return measure if isinstance(measure, str) else getattr(measure, "output_name", type(measure).__name__)


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)[:40]


def _versions() -> str:
    """Python and the numerical packages a solution depends on (installed versions: the same in every process,
    whether or not a package is imported yet)."""
    import sys

    from meta_eval.measures.fingerprint import installed_version

    packages = "|".join(f"{name} {installed_version(name)}" for name in ("numpy", "scipy", "numba"))
    return f"python {sys.version_info[:2]}|{packages}"


# ------------------------------------------------------------------------------------------------------------
# Entries
# ------------------------------------------------------------------------------------------------------------

def _entry_bytes(batch) -> int:
    """The uncompressed size of one entry: P (L, N, K) and about 16 arrays of L numbers, in float64."""
    L, N, K = batch.n_lists, batch.depth, batch.n_grades
    return 8 * L * (N * K + 3 * K + 16) + 4096


def _arrays(result) -> dict[str, np.ndarray]:
    """Every field of a MEMResult that is an array, a text or a number (``info`` is not kept)."""
    out = {}
    for f in dataclasses.fields(result):
        value = getattr(result, f.name)
        if isinstance(value, np.ndarray):
            out[f.name] = value
        elif isinstance(value, (str, int, float, np.number)) and not isinstance(value, bool):
            out[f.name] = np.array(value)
    return out


def _checksum(arrays: dict[str, np.ndarray]) -> str:
    h = hashlib.sha256()
    for name in sorted(arrays):
        if name == "checksum":
            continue
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _expected_shape(name: str, shape: tuple, batch) -> str | None:
    """What is wrong with the shape of an entry's array for these lists, or None."""
    L, N, K = batch.n_lists, batch.depth, batch.n_grades
    if name in ("key", "format", "checksum", "measure", "method", "form_residual"):
        return None if shape == () else f"{name} has shape {shape}"
    if name == "P":
        return None if shape == (L, N, K) else f"P has shape {shape}, not {(L, N, K)}"
    if len(shape) == 0 or shape[0] != L or len(shape) > 2:
        return f"{name} has shape {shape}, not one row per list ({L})"
    return None


def _read(path: Path, key: str, batch) -> tuple[str | None, dict | None]:
    """(problem, None) or (None, arrays) of an entry (module docstring: what is checked, and in which order)."""
    if not path.is_file():
        return "it is not a regular file", None
    from numpy.lib import format as npy

    arrays = {}
    with zipfile.ZipFile(path) as archive:
        members = {name[:-4]: name for name in archive.namelist() if name.endswith(".npy")}
        for name in ("key", "checksum", "P", "lengths", "status"):
            if name not in members:
                return f"no {name} in it", None
        for name, member in members.items():  # shapes and types from the headers, before reading any data
            with archive.open(member) as f:
                version = npy.read_magic(f)
                read_header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
                shape, _, dtype = read_header(f)
            if dtype.kind not in "biufU" or dtype.hasobject:
                return f"{name} holds {dtype}", None
            problem = _expected_shape(name, tuple(shape), batch)
            if problem is not None:
                return problem, None
        with archive.open(members["key"]) as f:
            if str(npy.read_array(f, allow_pickle=False)) != key:
                return "it was written under another key", None
        for name, member in members.items():
            with archive.open(member) as f:
                arrays[name] = npy.read_array(f, allow_pickle=False)
    if str(arrays["checksum"]) != _checksum(arrays):
        return "its checksum does not match its contents", None
    if not np.array_equal(arrays["lengths"], batch.lengths):
        return "its list lengths are not those of the lists", None
    return None, arrays


def _result(arrays: dict[str, np.ndarray]):
    from meta_eval.statistics.maxent.result import MEMResult

    values = {}
    for f in dataclasses.fields(MEMResult):
        if f.name not in arrays:
            continue
        a = arrays[f.name]
        if a.ndim == 0:
            values[f.name] = str(a) if a.dtype.kind == "U" else a.item()
        else:
            values[f.name] = a
    return MEMResult(**values)
