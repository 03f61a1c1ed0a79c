"""The one writer of every file a command writes (``-o results.csv``, ``-o -``): nothing a user owns is lost.

What a path names decides how it is written, as a shell redirection would write it, with an atomic replace where
that is safe:

* ``-`` (or None): standard output;
* a symlink: followed to its target, which is written (the link stays a link);
* a new file, or an existing regular file: written to a temporary file in the same folder and renamed over it, so
  an interrupted run never leaves half a file; a replaced file keeps its permission bits (and, when meta-eval runs
  as root, its owner); a new file gets the user's umask;
* a regular file that cannot be replaced without changing what it is: one with other hard links, or in a folder
  meta-eval may not write: truncated and written in place, as ``>`` does;
* a FIFO or a character device (``/dev/null``, ``/dev/stdout``, a terminal): opened and streamed, never replaced;
  a write error (``/dev/full``: no space left) is an error, not a success;
* a folder, a block device, a socket, a name ending in ``/``, a kernel interface file under ``/proc`` or ``/sys``
  (as root, ``-o /proc/sys/...`` would change a kernel setting): refused;
* a file that is an input of the same command (``-o qrels.txt -Q qrels.txt``, a symlink or hard link to a run, a
  plug-in's module): refused, before any work (:func:`check_output`) and again when writing.

A path is made absolute when it is checked, before any work (:func:`check_output`): code that runs in between (a
plug-in that changes the working folder) cannot move ``-o out.csv`` into another folder.

Errors are :class:`~meta_eval.core.errors.OutputError` naming the option and the path.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

from meta_eval.core.errors import OutputError
from meta_eval.core.file_identity import is_input
from meta_eval.outputs.checked_paths import CheckedPaths

__all__ = ["check_output", "write_output", "STDOUT"]

STDOUT = "-"


def _is_stdout(path) -> bool:
    return path is None or str(path) == STDOUT


_KERNEL = ("/proc/", "/sys/")  # regular-looking files there are kernel settings, not files to put results in


def _kind(st: os.stat_result) -> str | None:
    """What a non-writable kind of node is called, or None when it can be written."""
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return None


def _plan(path: str | os.PathLike, inputs: Iterable[str | os.PathLike], what: str) -> tuple[str, Path]:
    """How ``path`` is written: ``("stream", path)`` into an existing FIFO or character device (opened by the
    name given, so ``/dev/stdout`` and ``/proc/self/fd/N`` work as in a shell), ``("in-place", file)``,
    ``("replace", file)`` or ``("create", file)`` with ``file`` the real path (symlinks followed). Every refusal is
    here, so :func:`check_output` (before the work) and :func:`write_output` decide alike."""
    text = os.fspath(path)
    if not text.strip():
        raise OutputError(f"{what}: the file name is empty; give a file name, or - for standard output")
    if text.endswith(os.sep):
        raise OutputError(f"{what} {path}: names a folder, expected a file name")
    try:
        st = os.stat(path)  # the kernel follows symlinks, /dev/fd and /proc magic links
    except (FileNotFoundError, NotADirectoryError):
        st = None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutputError(f"{what} {path}: symbolic link loop") from None
        raise OutputError(f"{what} {path}: cannot be written ({exc.strerror})") from None
    if st is not None:
        kind = _kind(st)
        if kind:
            raise OutputError(f"{what} {path}: is {kind}, expected a file name")
        source = is_input(path, inputs)
        if source is not None:
            raise OutputError(f"{what} {path}: is an input of this command ({source}); refusing to write over it")
        if not stat.S_ISREG(st.st_mode):
            return "stream", Path(path)  # FIFO or character device
    real = Path(os.path.realpath(path))
    if st is None:
        # the folder named (as the kernel reaches it: realpath reads "missing/../x" as "x", the kernel finds no
        # "missing"), and the one a dangling symlink's target would be created in
        for folder in (os.path.dirname(text) or os.curdir, real.parent):
            _check_folder(folder, path, what)
        parent = real.parent
    if str(real).startswith(_KERNEL):
        raise OutputError(f"{what} {path}: is a kernel interface file ({real}), not a place for results")
    if st is None:
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OutputError(f"{what} {path}: permission denied (cannot create a file in {parent})")
        return "create", real
    if not os.access(path, os.W_OK):
        raise OutputError(f"{what} {path}: permission denied (the file is not writable)")
    try:
        same = os.stat(real).st_ino == st.st_ino and os.stat(real).st_dev == st.st_dev
    except OSError:
        same = False
    if not same or st.st_nlink > 1 or not os.access(real.parent, os.W_OK | os.X_OK):
        # a file reached by a magic link, with other hard links, or in a folder we may not write: keep its identity
        return "in-place", real if same else Path(path)
    return "replace", real


def _check_folder(folder: str | os.PathLike, path, what: str) -> None:
    """Refuse ``path`` when ``folder``, where it would be created, is missing or not a folder."""
    try:
        is_folder = stat.S_ISDIR(os.stat(folder).st_mode)
    except OSError:
        raise OutputError(f"{what} {path}: cannot write there: {folder} does not exist") from None
    if not is_folder:
        raise OutputError(f"{what} {path}: cannot write there: {folder} is not a folder")


def check_output(path: str | os.PathLike | None, *, inputs: Iterable[str | os.PathLike] = (),
                 what: str = "--out") -> Path | None:
    """Check before any work that ``path`` can be written; returns the path to give :func:`write_output` (None
    for standard output).

    Raises
    ------
    OutputError
        ``path`` is a folder, block device or socket, a kernel interface file (under /proc or /sys), one of
        ``inputs`` (or of the files this process has read), or its folder does not exist or cannot be written.
    """
    if _is_stdout(path):
        return None
    _plan(path, inputs, what)
    # lexically absolute: a symlink or ".." in the name is still the kernel's to follow
    return _CHECKED.remember(path, Path(path).absolute())


#: The files checked and not yet written: written where they were checked whatever the working folder is by then
#: (a command that writes ``path`` rather than the path check_output returned).
_CHECKED = CheckedPaths()


def write_output(path: str | os.PathLike | None, data: str | bytes, *, inputs: Iterable[str | os.PathLike] = (),
                 what: str = "--out") -> None:
    """Write ``data`` to ``path`` as the module docstring describes. Text is UTF-8 encoded in a file, and on
    standard output as the stream declares (``PYTHONIOENCODING=ascii``: characters it cannot hold as escapes,
    ``\\u03c4``, never bytes the reader did not ask for)."""
    if _is_stdout(path):
        _write_stdout(_stdout_bytes(data), inputs)
        return
    path = _CHECKED.take(path) or path
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    how, target = _plan(path, inputs, what)
    try:
        if how in ("create", "replace"):
            _replace(target, payload, os.stat(target) if how == "replace" else None)
        else:
            _stream(target, payload, truncate=how == "in-place")
    except OSError as exc:
        raise OutputError(f"{what} {path}: write failed ({exc.strerror or exc})") from None


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _replace(target: Path, payload: bytes, old: os.stat_result | None) -> None:
    """Temporary file in the target's folder, then an atomic rename over it. ``old``: the file replaced, whose
    permission bits (and owner, as root) the new one keeps; None: a new file, created with the user's umask."""
    tmp = target.parent / f".{target.name}.partial-{os.getpid()}-{secrets.token_hex(3)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # 0o666 & ~umask, as a shell creates files
    try:
        try:
            _write_all(fd, payload)
            if old is not None:
                os.fchmod(fd, stat.S_IMODE(old.st_mode))
                if os.geteuid() == 0 and (old.st_uid, old.st_gid) != (0, 0):
                    os.fchown(fd, old.st_uid, old.st_gid)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _stream(target: Path, payload: bytes, *, truncate: bool) -> None:
    """Open the existing node without creating or replacing it and write into it (a FIFO waits for a reader)."""
    flags = os.O_WRONLY | (os.O_TRUNC if truncate else 0)  # never O_CREAT: a node that vanished is not re-made
    if stat.S_ISFIFO(os.stat(target).st_mode):
        try:
            fd = os.open(target, flags | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
            print(f"meta-eval: waiting for a reader of the FIFO {target}", file=sys.stderr)
            fd = os.open(target, flags)
        else:
            os.set_blocking(fd, True)
    else:
        fd = os.open(target, flags)
    try:
        _write_all(fd, payload)
    finally:
        os.close(fd)


def _stdout_bytes(data: str | bytes) -> bytes:
    if not isinstance(data, str):
        return bytes(data)
    return data.encode(getattr(sys.stdout, "encoding", None) or "utf-8", "backslashreplace")


def _write_stdout(payload: bytes, inputs: Iterable[str | os.PathLike]) -> None:
    """Standard output; refused when it is redirected into an input (``>> qrels.txt``)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # a notebook or a captured stream
        buffer = getattr(sys.stdout, "buffer", None)
        if buffer is not None:
            buffer.write(payload)
            buffer.flush()
        else:
            sys.stdout.write(payload.decode("utf-8", errors="replace"))
        return
    source = is_input(f"/proc/self/fd/{fd}", inputs) if os.path.exists("/proc/self/fd") else None
    if source is not None and stat.S_ISREG(os.fstat(fd).st_mode):
        raise OutputError(f"standard output is an input of this command ({source}); refusing to write over it")
    sys.stdout.flush()
    try:
        _write_all(fd, payload)
    except BrokenPipeError:  # the reader went away (| head): nothing more to say
        raise
    except OSError as exc:
        raise OutputError(f"standard output: write failed ({exc.strerror or exc})") from None
