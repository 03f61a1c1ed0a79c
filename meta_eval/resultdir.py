"""Result folders that are either complete or absent.

:func:`result_folder` gives a study or an analysis a fresh hidden folder beside the target
(``.NAME.partial-PID-XXXX``); when the work completes it lists every file in ``manifest.json`` (size and SHA-256,
``"complete": true``) and moves the folder into place, replacing an earlier result folder as a whole — so the
target never holds a mix of two runs, stale files of an earlier run, or the partial output of an interrupted one
(an exception, Ctrl-C or SIGTERM removes the partial folder; a killed process leaves only a hidden folder that
the next run removes). A lock file ``.NAME.lock`` beside the target refuses a second writer with a clear message
while the first runs; a lock left by a process that no longer exists is taken over.

A target that exists and is not a meta-eval result folder (no ``manifest.json`` of ours) is never replaced.
"""

from __future__ import annotations

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

from meta_eval.errors import InputError

__all__ = ["check_output_folder", "read_manifest", "result_folder", "verify_folder", "write_text_atomic"]

MANIFEST = "manifest.json"


def _ours(folder: Path) -> bool:
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and ("meta_eval" in manifest or "meta_eval_study" in manifest)


def check_output_folder(out: str | Path) -> Path:
    """Check before any work that ``out`` can become a result folder; returns it as an absolute path.

    Errors (:class:`InputError`): ``out`` is a file, or a non-empty folder that is not a meta-eval result folder,
    or its parent cannot be created or written.
    """
    out = Path(out).expanduser().absolute()
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not _ours(out):
        raise InputError(f"--out {out}: exists and is not a meta-eval result folder (no {MANIFEST} of ours); "
                         "choose another folder or remove it")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--out {out}: cannot create its parent folder ({exc.strerror or exc})") from None
    if not os.access(out.parent, os.W_OK | os.X_OK):
        raise InputError(f"--out {out}: the folder {out.parent} is not writable")
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


def _acquire(out: Path) -> Path:
    lock = _lock_path(out)
    info = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
            "command": " ".join(sys.argv)}
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                holder = json.loads(lock.read_text())
            except (OSError, ValueError):
                holder = {}
            stale = holder.get("host") == info["host"] and not _pid_alive(int(holder.get("pid", -1)))
            if stale:
                with suppress(FileNotFoundError):
                    lock.unlink()
                continue
            raise InputError(
                f"--out {out}: another meta-eval run (pid {holder.get('pid', '?')} on {holder.get('host', '?')}, "
                f"started {holder.get('started', '?')}) is writing this folder; wait for it to finish or choose "
                f"another --out (if no such run exists, remove {lock})") from None
        with os.fdopen(fd, "w") as f:
            json.dump(info, f)
        return lock
    raise InputError(f"--out {out}: could not take the lock {lock}")  # pragma: no cover - lost a race twice


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
def result_folder(out: str | Path, *, kind: str) -> Iterator[Path]:
    """Write a result folder atomically: ``with result_folder(out, kind="study") as tmp: ...`` (write into tmp).

    On normal exit the manifest is completed (:func:`_finish`) and ``tmp`` replaces ``out``; on any exception
    (including KeyboardInterrupt and SIGTERM) ``tmp`` is removed and ``out`` is left as it was. A second writer of
    the same ``out`` gets an :class:`InputError` while the first holds the lock.
    """
    out = check_output_folder(out)
    lock = _acquire(out)
    tmp = None
    try:
        _clean_leftovers(out)
        check_output_folder(out)  # again under the lock: a run that held it may have just written the folder
        tmp = out.parent / f".{out.name}.partial-{os.getpid()}-{secrets.token_hex(3)}"
        tmp.mkdir()
        with _sigterm_as_exit():
            yield tmp
            _finish(tmp, kind)
            _swap(tmp, out)
    except BaseException:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        with suppress(FileNotFoundError):
            lock.unlink()


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
