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

One writer at a time: a lock file ``.NAME.lock`` beside the target is held with ``flock`` while the folder is
written (owner pid, host, start time and command recorded in it for the message a second writer gets). The kernel
releases the lock when its holder dies however it dies, so a lock left by a killed run is simply free again, and two
writers can never both take it.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
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

from meta_eval.core.errors import InputError, OutputError
from meta_eval.core.file_identity import inputs_inside

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
        if not path.is_dir() and str(path.relative_to(folder)) not in listed:
            found.append(str(path.relative_to(folder)))
    return sorted(found)


def check_output_folder(out: str | Path, *, kind: str | None = None, inputs=(), overwrite: bool = False) -> Path:
    """Check before any work that ``out`` can become a result folder of the command ``kind``; returns the folder
    to write (absolute; a symlink followed to the folder it names).

    Errors (:class:`OutputError`): ``out`` is a file or a device, or a non-empty folder that is not a meta-eval
    result folder, or (unless ``overwrite``) a result folder of another command or one holding files meta-eval did
    not write, or a folder holding one of ``inputs`` (or of the files this process has read); or its parent cannot
    be created or written.
    """
    given = Path(out).expanduser()
    try:
        out = Path(os.path.realpath(given)) if given.is_symlink() else given.absolute()
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
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"--out {given}: cannot create its parent folder ({exc.strerror or exc})") from None
    if not os.access(out.parent, os.W_OK | os.X_OK):
        raise OutputError(f"--out {given}: the folder {out.parent} is not writable")
    return out


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def _lock_path(out: Path) -> Path:
    return out.parent / f".{out.name}.lock"


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


def _clean_leftovers(out: Path) -> None:
    """Remove hidden partial/old folders of ``out`` left by processes of this host that no longer exist."""
    for prefix in (f".{out.name}.partial-", f".{out.name}.old-"):
        for path in out.parent.glob(prefix + "*"):
            pid = path.name[len(prefix):].split("-", 1)[0]
            if pid.isdigit() and not _pid_alive(int(pid)):
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
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)
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
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _swap(tmp: Path, out: Path) -> None:
    with _signals_blocked():
        if out.exists():
            old = out.parent / f".{out.name}.old-{os.getpid()}-{secrets.token_hex(3)}"
            os.rename(out, old)
            os.rename(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, out)


@contextmanager
def result_folder(out: str | Path, *, kind: str, inputs=(), overwrite: bool = False) -> Iterator[Path]:
    """Write a result folder atomically: ``with result_folder(out, kind="study") as tmp: ...`` (write into tmp).

    On normal exit the manifest is completed (:func:`_finish`) and ``tmp`` replaces ``out``; on any exception
    (including KeyboardInterrupt and SIGTERM) ``tmp`` is removed and ``out`` is left as it was. ``out`` is checked
    by :func:`check_output_folder` (``kind``, ``inputs``, ``overwrite``) before, under the lock, and again before
    the swap (against every file the work read). A second writer of the same ``out`` gets an
    :class:`OutputError` while the first holds the lock.
    """
    out = check_output_folder(out, kind=kind, inputs=inputs, overwrite=overwrite)
    lock = _acquire(out)
    tmp = None
    try:
        _clean_leftovers(out)
        # again under the lock: a run that held it may have just written the folder
        check_output_folder(out, kind=kind, inputs=inputs, overwrite=overwrite)
        tmp = out.parent / f".{out.name}.partial-{os.getpid()}-{secrets.token_hex(3)}"
        tmp.mkdir()
        with _sigterm_as_exit():
            yield tmp
            _finish(tmp, kind)
            check_output_folder(out, kind=kind, inputs=inputs, overwrite=overwrite)  # inputs the work read
            _swap(tmp, out)
    except BaseException:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        _release(out, lock)


class FolderTarget:
    """A result folder checked before any work (:func:`check_output_folder`) and written later with the same checks
    (:meth:`open`): a command names its output once, at its start."""

    def __init__(self, out: str | Path, kind: str, *, inputs=(), overwrite: bool = False):
        self.kind, self.inputs, self.overwrite = kind, list(inputs), overwrite
        self.out = check_output_folder(out, kind=kind, inputs=self.inputs, overwrite=overwrite)

    def open(self):
        """``with target.open() as tmp:`` — :func:`result_folder` of this target."""
        return result_folder(self.out, kind=self.kind, inputs=self.inputs, overwrite=self.overwrite)


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
