"""Result folders that are either complete or absent, and never anybody else's.

:func:`result_folder` gives a study or an analysis a fresh hidden folder beside the target
(``.NAME.partial-PID-XXXX``); when the work completes it lists every file in ``manifest.json`` (size and SHA-256,
``"complete": true``) and moves the folder into place, replacing an earlier result folder as a whole — so the
target never holds a mix of two runs, stale files of an earlier run, or the partial output of an interrupted one
(an exception, Ctrl-C or SIGTERM removes the partial folder; a killed process leaves only a hidden folder that
the next run removes).

What is never replaced (:func:`check_output_folder`, before any work and again under the lock):

* a folder that is not a meta-eval result folder (no ``manifest.json`` of ours), even with ``overwrite``;
* a result folder written by another command (``discpower -o`` onto a study), or one holding files meta-eval did not
  write (your notes beside a report), unless ``overwrite=True`` (``--overwrite``);
* a folder that holds an input of the same command (``study -Q old-study/qrels.txt -o old-study``).

A symlink to a folder is followed: the folder it points to is written, and the link stays a link.

What cannot be swapped is refused before any work: a mount point (``-o /out`` on a container's volume cannot be
renamed: write into a folder inside it), a parent folder with less free space than the results need (at least the
size of the folder replaced, and :data:`MIN_FREE_BYTES`). A name too long for its hidden twins (NAME_MAX) gives
them a shortened name of its own. The path is absolute from its first check, so code that changes the working
folder meanwhile (a plug-in) cannot move it.

The swap is crash-safe: where the system can (Linux's ``renameat2(RENAME_EXCHANGE)``, on local file systems) the
new folder and the old one trade places in one atomic step, so the target always exists; elsewhere two renames,
and a run killed between them (SIGKILL, a power cut) leaves the earlier folder under its hidden ``.old-`` name,
which the next run writing the same target moves back (never deleting the only copy). A write that fails inside
the folder (no space left, a file-size limit: ENOSPC, EFBIG) is an :class:`OutputError` naming the file, whatever
command wrote it.

One writer at a time: a lock file ``.NAME.lock`` beside the target is held with ``flock`` while the folder is
written (owner pid, host, start time and command recorded in it for the message a second writer gets). The kernel
releases the lock when its holder dies however it dies, so a lock left by a killed run is simply free again, and two
writers can never both take it.
"""

from __future__ import annotations

import errno
import fcntl
import glob
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from meta_eval.core.errors import InputError, OutputError, Terminated
from meta_eval.core.file_identity import inputs_inside
from meta_eval.outputs.checked_paths import CheckedPaths

__all__ = ["FolderTarget", "check_output_folder", "read_manifest", "result_folder", "verify_folder", "write_text_atomic"]

MANIFEST = "manifest.json"


def _manifest(folder: Path) -> dict | None:
    """Our manifest of ``folder``, or None when it has none (or not one of ours)."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if isinstance(manifest, dict) and ("meta_eval" in manifest or "meta_eval_study" in manifest):
        return manifest
    return None


def _foreign_files(folder: Path, manifest: dict) -> list[str]:
    """Files of ``folder`` its manifest does not list (written by someone else after meta-eval)."""
    listed = set(manifest.get("files", {})) | {MANIFEST}
    found = []
    for path in folder.rglob("*"):
        name = str(path.relative_to(folder))
        # a nested result folder's own manifest (a multi-collection study's; earlier versions did not list it)
        ours = path.name == MANIFEST and _manifest(path.parent) is not None
        if not path.is_dir() and name not in listed and not ours:
            found.append(name)
    return sorted(found)


def check_output_folder(out: str | Path, *, kind: str | None = None, inputs=(), overwrite: bool = False,
                        free_space: bool = True) -> Path:
    """Check before any work that ``out`` can become a result folder of the command ``kind``; returns the folder
    to write (absolute, from its first check on; a symlink followed to the folder it names).

    Errors (:class:`OutputError`): ``out`` is a file or a device, a mount point, or a non-empty folder that is not
    a meta-eval result folder, or (unless ``overwrite``) a result folder of another command or one holding files
    meta-eval did not write, or a folder holding one of ``inputs`` (or of the files this process has read); or its
    parent cannot be created or written, or (``free_space``: before the work, not after it, when the new results
    take their room) has less free space than the results need.
    """
    if not os.fspath(out).strip():
        raise OutputError("--out: the name is empty; give the result folder's name")
    given = Path(out).expanduser()
    try:
        out = _CHECKED.recall(given) or Path(os.path.realpath(given))  # symlinks and ".." resolved
    except OSError as exc:
        raise OutputError(f"--out {given}: {exc.strerror or exc}") from None
    try:
        exists = out.exists()
    except OSError as exc:  # a symlink loop, a name too long...
        raise OutputError(f"--out {given}: {exc.strerror or exc}") from None
    if given.is_symlink() and not exists:
        raise OutputError(f"--out {given}: is a symbolic link to {out}, which does not exist")
    if exists and not out.is_dir():
        raise OutputError(f"--out {given}: exists and is not a folder")
    if exists and is_mount_point(out):
        raise OutputError(f"--out {given}: is a mount point ({out}); a result folder is replaced as a whole by "
                          "renaming it, which a mount point cannot be: write the results into a folder inside it, "
                          f"e.g. --out {given / 'results'}")
    _check_not_working_folder(out, given)
    held = inputs_inside(out, inputs)
    if held:
        raise OutputError(f"--out {given}: holds {held[0]}, an input of this command; writing the results there "
                          "would replace it: choose another --out")
    if out.is_dir() and any(out.iterdir()):
        manifest = _manifest(out)
        if manifest is None:
            raise OutputError(f"--out {given}: exists and is not a meta-eval result folder (no {MANIFEST} of ours); "
                              "choose another folder or remove it")
        written_by = manifest.get("meta_eval")
        if kind is not None and written_by not in (None, kind) and not overwrite:
            raise OutputError(f"--out {given}: holds the results of `meta-eval {written_by}`; replacing them with "
                              f"those of `meta-eval {kind}` needs --overwrite (or choose another --out)")
        foreign = _foreign_files(out, manifest)
        if foreign and not overwrite:
            more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
            raise OutputError(f"--out {given}: holds {foreign[0]}{more}, not written by meta-eval; replacing the "
                              "folder would delete it: move it away or give --overwrite")
    base = _nearest_existing(out.parent)  # missing parents are made when the folder is written
    if not base.is_dir():
        what = "is a symbolic link to nothing (or a loop)" if base.is_symlink() else "is not a folder"
        raise OutputError(f"--out {given}: cannot write there: {base} {what}")
    if not os.access(base, os.W_OK | os.X_OK):
        raise OutputError(f"--out {given}: the folder {base} is not writable")
    if free_space:
        _check_space(out, given, base)
    return _CHECKED.remember(given, out)


def _nearest_existing(folder: Path) -> Path:
    """``folder`` or its nearest ancestor that exists."""
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent
    return folder


def _check_not_working_folder(out: Path, given: Path) -> None:
    """Refuse the working folder or one holding it (``-o .``, ``-o ''``, ``-o ..``): replaced as a whole, it would
    leave the shell that ran the command in a deleted folder."""
    try:
        here = Path(os.path.realpath(os.getcwd()))
    except OSError:  # the working folder was deleted: nothing to protect
        return
    if out == here or out in here.parents:
        what = "the working folder" if out == here else "a folder holding the working folder"
        raise OutputError(f"--out {given}: is {what}; a result folder is replaced as a whole: write the results into "
                          f"a folder inside it, e.g. --out {given / 'results'}")


#: The result folders checked and not yet written, at their absolute paths when first checked (the working folder
#: may change before one is written: a plug-in's code runs in between).
_CHECKED = CheckedPaths()

#: Free space a result folder needs at least, beside the size of the folder it replaces (which the new one, about
#: as large, holds again until the swap): a discriminative-power folder with its figure is ~0.1 MB.
MIN_FREE_BYTES = 1 << 20


def is_mount_point(path: Path) -> bool:
    """Whether ``path`` is a mount point: :func:`os.path.ismount` (another device than its parent), or a mount point
    in ``/proc/self/mountinfo``, which lists the bind mount of a folder of the same file system too (a container's
    volume: ismount misses it)."""
    if os.path.ismount(path):
        return True
    try:
        with open("/proc/self/mountinfo", "rb") as table:
            points = {_unescape(line.split()[4]) for line in table if len(line.split()) > 4}
    except OSError:
        return False
    return os.fsencode(os.path.realpath(path)) in points


def _unescape(field: bytes) -> bytes:
    """A mountinfo path: the kernel writes space, tab, newline and backslash as octal escapes (``\\040``)."""
    return re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), field)


def free_bytes(folder: Path) -> int | None:
    """Bytes free for this user in ``folder``'s file system (None when unknown)."""
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def _check_space(out: Path, given: Path, parent: Path) -> None:
    """Refuse a result folder whose parent (or the nearest folder of it that exists) has less free space than the
    results need, before any work."""
    replaced = sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) if out.is_dir() else 0
    need = replaced + MIN_FREE_BYTES
    free = free_bytes(parent)
    if free is not None and free < need:
        raise OutputError(f"--out {given}: {parent} has {_megabytes(free)} free; writing the results there needs "
                          f"at least {_megabytes(need)} ({'the size of the folder replaced and ' if replaced else ''}"
                          "a margin): free some space or choose another --out")


def _megabytes(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _lock_path(out: Path) -> Path:
    return out.parent / f".{_stem(out)}.lock"


_TWIN_BYTES = 32  # what a twin adds to its stem: "." and ".partial-" + a pid (up to 10 digits) + "-" + 6 hex digits


def _stem(out: Path) -> str:
    """What the hidden twins of ``out`` are named from (``.STEM.partial-PID-XXXXXX``, ``.STEM.old-...``,
    ``.STEM.lock``): the folder's name, or, when a twin would be longer than the file system allows (NAME_MAX,
    255 bytes on most), its head and a hash of the whole name."""
    name = os.fsencode(out.name)
    try:
        limit = os.pathconf(out.parent, "PC_NAME_MAX")
    except (OSError, ValueError):
        limit = 255
    if len(name) + _TWIN_BYTES <= limit:
        return out.name
    digest = hashlib.sha256(name).hexdigest()[:16]
    return f"{os.fsdecode(name[:max(0, limit - _TWIN_BYTES - 17)])}~{digest}"


def _acquire(out: Path) -> int:
    """Take the lock of ``out`` (``flock`` on ``.NAME.lock``); returns its open descriptor. A second writer gets an
    error naming the holder. The lock file is never trusted by its content, only by the kernel's lock on it."""
    lock = _lock_path(out)
    info = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
            "command": " ".join(sys.argv)}
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise OutputError(f"--out {out}: cannot create the lock file {lock} ({exc.strerror or exc})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read_holder(fd)
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise OutputError(f"--out {out}: cannot lock {lock} ({exc.strerror or exc})") from None
            raise OutputError(
                f"--out {out}: another meta-eval run (pid {holder.get('pid', '?')} on {holder.get('host', '?')}, "
                f"started {holder.get('started', '?')}) is writing this folder; wait for it to finish or choose "
                "another --out") from None
        # the holder we waited for may have removed the file before we locked it: then lock the new one
        try:
            current = os.stat(lock)
        except FileNotFoundError:
            current = None
        mine = os.fstat(fd)
        if current is not None and (current.st_dev, current.st_ino) == (mine.st_dev, mine.st_ino):
            break
        os.close(fd)
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps(info).encode())
    return fd


def _read_holder(fd: int) -> dict:
    try:
        holder = json.loads(os.pread(fd, 1 << 16, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def _release(out: Path, fd: int) -> None:
    """Remove the lock file while still holding the lock, then release it (the order keeps the inode check of
    :func:`_acquire` sound)."""
    with suppress(FileNotFoundError):
        _lock_path(out).unlink()
    os.close(fd)


def _leftovers(out: Path, kind: str) -> list[Path]:
    """Hidden ``partial`` or ``old`` folders of ``out`` left by processes of this host that no longer exist."""
    prefix = f".{_stem(out)}.{kind}-"
    found = []
    for path in out.parent.glob(glob.escape(prefix) + "*"):
        pid = path.name[len(prefix):].split("-", 1)[0]
        if pid.isdigit() and not _pid_alive(int(pid)):
            found.append(path)
    return found


def _recover_leftovers(out: Path) -> None:
    """Clear what killed runs left (under the lock): partial folders go; an ``old`` folder is an earlier result a
    swap moved aside — when ``out`` is missing (the run was killed between the two renames of the swap) the latest
    one is moved back into place and said, never deleted; otherwise ``out`` holds the results and it goes."""
    olds = sorted(_leftovers(out, "old"), key=lambda p: p.stat().st_mtime_ns)
    if olds and not os.path.lexists(out):
        os.rename(olds[-1], out)
        print(f"meta-eval: {out} restored: a run killed while replacing it had left it as {olds[-1].name}",
              file=sys.stderr)
        olds.pop()
    for path in [*olds, *_leftovers(out, "partial")]:
        shutil.rmtree(path, ignore_errors=True)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _finish(folder: Path, kind: str) -> None:
    """Complete ``manifest.json``: every file of the folder with its size and checksum, ``complete: true``."""
    from importlib import metadata

    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text()) if path.exists() else {}
    except ValueError:
        manifest = {}
    manifest.setdefault("meta_eval", kind)
    manifest.setdefault("command", "meta-eval " + " ".join(sys.argv[1:]))
    with suppress(metadata.PackageNotFoundError):
        manifest.setdefault("version", metadata.version("meta-eval"))
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p != path)  # a nested study's manifest too
    manifest["files"] = {str(p.relative_to(folder)): {"bytes": p.stat().st_size, "sha256": _sha256(p)}
                         for p in files}
    manifest["complete"] = True
    tmp = folder / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, default=str) + "\n")
    os.replace(tmp, path)


@contextmanager
def _signals_blocked():
    """Hold SIGINT/SIGTERM during the two renames that swap the folders (POSIX main thread only)."""
    mask = getattr(signal, "pthread_sigmask", None)
    if mask is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = mask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        mask(signal.SIG_SETMASK, old)


@contextmanager
def _sigterm_as_exit():
    """SIGTERM raises SystemExit (so the partial folder is removed) while a result folder is being written."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Terminated(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _swap(tmp: Path, out: Path) -> None:
    """Put ``tmp`` in the place of ``out``: one atomic exchange where the system can (``out`` never missing), else
    two renames (a run killed between them leaves the earlier folder as ``.old-``: :func:`_recover_leftovers`)."""
    with _signals_blocked():
        if not out.exists():
            os.rename(tmp, out)
        elif _exchange(tmp, out):
            shutil.rmtree(tmp, ignore_errors=True)  # the earlier folder, now under the temporary name
        else:
            old = out.parent / f".{_stem(out)}.old-{os.getpid()}-{secrets.token_hex(3)}"
            os.rename(out, old)
            os.rename(tmp, out)
            shutil.rmtree(old, ignore_errors=True)


_RENAME_EXCHANGE, _AT_FDCWD = 2, -100  # <linux/fs.h>, <fcntl.h>


def _exchange(a: Path, b: Path) -> bool:
    """Exchange two paths atomically: Linux's ``renameat2(..., RENAME_EXCHANGE)`` (glibc >= 2.28). False where the
    system or the file system cannot (then the caller renames twice). Called through ctypes: Python's os module
    does not expose renameat2."""
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


@contextmanager
def result_folder(out: str | Path, *, kind: str, inputs=(), overwrite: bool = False,
                  free_space: bool = True) -> Iterator[Path]:
    """Write a result folder atomically: ``with result_folder(out, kind="study") as tmp: ...`` (write into tmp).

    On normal exit the manifest is completed (:func:`_finish`) and ``tmp`` replaces ``out``; on any exception
    (including KeyboardInterrupt and SIGTERM) ``tmp`` is removed and ``out`` is left as it was. ``out`` is checked
    by :func:`check_output_folder` (``kind``, ``inputs``, ``overwrite``) before, under the lock, and again before
    the swap (against every file the work read). A second writer of the same ``out`` gets an
    :class:`OutputError` while the first holds the lock. ``free_space``: check the free space too (False when the
    work is done already: :class:`FolderTarget` checked it before).
    """
    out = check_output_folder(out, kind=kind, inputs=inputs, overwrite=overwrite, free_space=free_space)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"--out {out}: cannot create its parent folder ({exc.strerror or exc})") from None
    lock = _acquire(out)
    tmp = None
    try:
        _recover_leftovers(out)
        # again under the lock: a run that held it may have just written the folder
        check_output_folder(out, kind=kind, inputs=inputs, overwrite=overwrite, free_space=free_space)
        tmp = out.parent / f".{_stem(out)}.partial-{os.getpid()}-{secrets.token_hex(3)}"
        tmp.mkdir()
        with _sigterm_as_exit():
            yield tmp
            _finish(tmp, kind)
            check_output_folder(out, kind=kind, inputs=inputs, overwrite=overwrite, free_space=False)  # inputs read
            try:
                _swap(tmp, out)
            except OSError as exc:
                raise OutputError(f"--out {out}: cannot put the results in place ({exc.strerror or exc}); nothing "
                                  "was replaced") from None
    except BaseException as exc:
        failed = _write_error(exc, tmp, out) if tmp is not None else None
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if failed is not None:
            raise failed from None
        raise
    finally:
        _release(out, lock)
        _CHECKED.forget(out)


#: Errors of writing a file, whichever call made them (the file is then the one written last).
_WRITE_ERRORS = {errno.ENOSPC: "no space left on the device", errno.EFBIG: "larger than the file-size limit "
                 "(ulimit -f)", errno.EDQUOT: "over the disk quota", errno.EROFS: "a read-only file system",
                 errno.EIO: "an input/output error"}


def _write_error(exc: BaseException, tmp: Path, out: Path) -> OutputError | None:
    """The OutputError naming the file of a write that failed inside the temporary folder ``tmp`` (as it would be
    named in ``out``; a writer's own OutputError with its hidden name shown as ``out``), or None for any other
    exception. The OSError is ``exc`` or the one it was raised from (a
    figure written in another process). It names its file when it comes from ``open``; a failed ``write`` does
    not, and then the file written last in ``tmp`` is the one."""
    if isinstance(exc, OutputError) and str(tmp) in str(exc):  # a writer named the file in the hidden folder
        return OutputError(str(exc).replace(str(tmp), str(out)))
    while exc is not None and not isinstance(exc, OSError):  # a write error another error was raised from
        exc = exc.__cause__
    if exc is None:
        return None
    named = Path(os.path.abspath(exc.filename)) if isinstance(exc.filename, (str, os.PathLike)) else None
    if named is not None and named.is_relative_to(tmp):
        file = named.relative_to(tmp)
    elif named is None and exc.errno in _WRITE_ERRORS:
        written = [p for p in tmp.rglob("*") if p.is_file()]
        file = max(written, key=lambda p: p.stat().st_mtime_ns).relative_to(tmp) if written else None
    else:
        return None
    reason = _WRITE_ERRORS.get(exc.errno, exc.strerror or str(exc))
    where = out / file if file is not None else out
    return OutputError(f"--out {out}: writing {where} failed: {reason}; nothing was replaced")


class FolderTarget:
    """A result folder checked before any work (:func:`check_output_folder`) and written later with the same checks
    (:meth:`open`): a command names its output once, at its start."""

    def __init__(self, out: str | Path, kind: str, *, inputs=(), overwrite: bool = False):
        self.kind, self.inputs, self.overwrite = kind, list(inputs), overwrite
        self.out = check_output_folder(out, kind=kind, inputs=self.inputs, overwrite=overwrite)

    def open(self):
        """``with target.open() as tmp:`` — :func:`result_folder` of this target (its free space was checked
        before the work, at its creation)."""
        return result_folder(self.out, kind=self.kind, inputs=self.inputs, overwrite=self.overwrite,
                             free_space=False)


def read_manifest(folder: str | Path) -> dict:
    """The manifest of a result folder (an :class:`InputError` when it has none)."""
    path = Path(folder) / MANIFEST
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable meta-eval manifest ({exc})") from None


def verify_folder(folder: str | Path) -> list[str]:
    """Problems of a result folder against its manifest (empty when it is complete and consistent): files listed
    but missing or changed, files present but not listed, no ``complete`` mark."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    problems = [] if manifest.get("complete") is True else ["manifest not marked complete"]
    listed = manifest.get("files", {})
    for name, info in listed.items():
        path = folder / name
        if not path.is_file():
            problems.append(f"{name}: listed but missing")
        elif path.stat().st_size != info.get("bytes") or _sha256(path) != info.get("sha256"):
            problems.append(f"{name}: differs from the manifest")
    for path in folder.rglob("*"):
        name = str(path.relative_to(folder))
        if path.is_file() and name != MANIFEST and name not in listed:
            problems.append(f"{name}: not listed in the manifest")
    return problems


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` through a temporary file in the same folder and an atomic rename."""
    path = Path(path)
    tmp = path.parent / f".{path.name}.partial-{os.getpid()}-{secrets.token_hex(3)}"
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        with suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return path
