"""Adversarial outputs: nothing a user owns is lost, replaced or silently left unwritten (issue 21).

Every case runs the real command in a subprocess (real file descriptors: FIFOs, devices, umask, signals) and asserts
the clear error or the correct result, and that no input or earlier output changed. Device nodes are made in a
temporary folder with ``os.mknod`` (skipped where not permitted), never the system's own.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import meta_eval as me
from meta_eval.core.errors import OutputError
from meta_eval.outputs.writer import check_output, write_output
from meta_eval.outputs.result_folder import result_folder, verify_folder
from tests.conftest import marking_plugin

CLI = [sys.executable, "-c", "from meta_eval.cli import run; run()"]  # the command as installed, in this venv


def meta_eval_cli(*args: str, cwd: Path | None = None, umask: int | None = None, stdout=subprocess.PIPE,
                  timeout: float = 120) -> subprocess.CompletedProcess:
    preexec = (lambda: os.umask(umask)) if umask is not None else None
    return subprocess.run([*CLI, *args], cwd=cwd, stdout=stdout, stderr=subprocess.PIPE, text=True,
                          preexec_fn=preexec, timeout=timeout)


@pytest.fixture()
def collection(tmp_path: Path) -> tuple[Path, Path]:
    """A private copy of the demo collection: (qrels file, runs folder)."""
    qrels, runs = me.demo_paths()
    shutil.copy(qrels, tmp_path / "qrels.txt")
    shutil.copytree(runs, tmp_path / "runs")
    return tmp_path / "qrels.txt", tmp_path / "runs"


def _snapshot(*paths: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for root in paths:
        for path in ([root] if root.is_file() else sorted(root.rglob("*"))):
            if path.is_file():
                out[str(path)] = (path.read_bytes(), os.lstat(path).st_ino)
    return out


def _evaluate(collection, *extra: str, **kwargs) -> subprocess.CompletedProcess:
    qrels, runs = collection
    return meta_eval_cli("evaluate", "-Q", str(qrels), str(runs), "-m", "AP", "--no-progress", *extra, **kwargs)


def _mknod(path: Path, kind: int, device: tuple[int, int]) -> Path:
    try:
        os.mknod(path, kind | 0o666, os.makedev(*device))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make device nodes here ({exc})")
    return path


# --------------------------------------------------------------------------------------------- single files


def test_a_symlink_is_written_through_and_stays_a_link(collection, tmp_path):
    target = tmp_path / "real.csv"
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    result = _evaluate(collection, "-o", str(link))
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().startswith("run,topic,measure,value")


def test_a_dangling_symlink_creates_its_target(collection, tmp_path):
    link = tmp_path / "link.csv"
    link.symlink_to(tmp_path / "new.csv")
    assert _evaluate(collection, "-o", str(link)).returncode == 0
    assert link.is_symlink() and (tmp_path / "new.csv").read_text().startswith("run,")


def test_a_symlink_loop_is_a_clear_error(collection, tmp_path):
    (tmp_path / "a.csv").symlink_to(tmp_path / "b.csv")
    (tmp_path / "b.csv").symlink_to(tmp_path / "a.csv")
    result = _evaluate(collection, "-o", str(tmp_path / "a.csv"))
    assert result.returncode == 2 and "symbolic link loop" in result.stderr and "Traceback" not in result.stderr


def test_a_fifo_is_streamed_not_replaced(collection, tmp_path):
    fifo = tmp_path / "results.csv"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    result = _evaluate(collection, "-o", str(fifo))
    reader.join(timeout=60)
    assert result.returncode == 0, result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert received and received[0].startswith(b"run,topic,measure,value")


def test_a_character_device_is_streamed_not_replaced(collection, tmp_path):
    null = _mknod(tmp_path / "null", stat.S_IFCHR, (1, 3))
    result = _evaluate(collection, "-o", str(null), "-f", "csv")
    assert result.returncode == 0, result.stderr
    assert stat.S_ISCHR(os.lstat(null).st_mode) and os.lstat(null).st_rdev == os.makedev(1, 3)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".null")] == []  # no temporary file left


def test_a_full_device_is_an_error_not_a_success(collection, tmp_path):
    full = _mknod(tmp_path / "full", stat.S_IFCHR, (1, 7))
    result = _evaluate(collection, "-o", str(full), "-f", "csv")
    assert result.returncode == 2 and "No space left on device" in result.stderr
    assert stat.S_ISCHR(os.lstat(full).st_mode)


def test_a_block_device_is_refused_untouched(collection, tmp_path):
    block = _mknod(tmp_path / "disk", stat.S_IFBLK, (7, 200))  # a loop device number; never opened
    result = _evaluate(collection, "-o", str(block), "-f", "csv")
    assert result.returncode == 2 and "block device" in result.stderr
    assert stat.S_ISBLK(os.lstat(block).st_mode)


def test_a_folder_is_refused(collection, tmp_path):
    result = _evaluate(collection, "-o", str(tmp_path), "-f", "csv")
    assert result.returncode == 2 and "is a folder" in result.stderr


@pytest.mark.parametrize("how", ["same path", "dot path", "symlink", "hard link", "run file", "run via glob"])
def test_an_input_of_the_command_is_refused_before_any_work(collection, tmp_path, how):
    qrels, runs = collection
    run = sorted(runs.iterdir())[0]
    out = {"same path": qrels, "dot path": Path("./qrels.txt"), "run file": run, "run via glob": run}[how] \
        if how not in ("symlink", "hard link") else tmp_path / "out.csv"
    if how == "symlink":
        out.symlink_to(qrels)
    if how == "hard link":
        os.link(run, out)
    before = _snapshot(qrels, runs)
    spec = str(runs / "*") if how == "run via glob" else str(runs)
    result = meta_eval_cli("evaluate", "-Q", str(qrels), spec, "-m", "AP", "--no-progress", "-f", "csv", "-o",
                           str(out), cwd=tmp_path)
    assert result.returncode == 2 and "is an input of this command" in result.stderr, result.stderr
    assert _snapshot(qrels, runs) == before


def test_stdout_appended_to_an_input_is_refused(collection):
    qrels, runs = collection
    before = qrels.read_bytes()
    with open(qrels, "a") as sink:
        result = _evaluate(collection, "-f", "csv", stdout=sink)
    assert result.returncode == 2 and "standard output is an input" in result.stderr
    assert qrels.read_bytes() == before


@pytest.mark.parametrize("name", ["-", "/dev/stdout", "/proc/self/fd/1"])
def test_stdout_by_any_name_is_streamed(collection, name):
    result = _evaluate(collection, "-o", name, "-f", "csv")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("run,topic,measure,value")


@pytest.mark.parametrize("out", ["/proc/sys/kernel/hostname", "/sys/kernel/profiling", "/proc/self/comm"])
def test_kernel_interface_files_are_refused(collection, out):
    if not os.path.exists(out):
        pytest.skip(f"{out} does not exist here")
    before = Path(out).read_bytes()
    result = _evaluate(collection, "-o", out, "-f", "csv")
    assert result.returncode == 2 and "kernel interface file" in result.stderr
    assert Path(out).read_bytes() == before


def test_a_name_ending_in_a_slash_is_refused(collection, tmp_path):
    result = _evaluate(collection, "-o", str(tmp_path / "new") + "/", "-f", "csv")
    assert result.returncode == 2 and "names a folder" in result.stderr and not (tmp_path / "new").exists()


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_new_file_gets_the_users_umask(collection, tmp_path, umask, mode):
    out = tmp_path / "new.csv"
    assert _evaluate(collection, "-o", str(out), umask=umask).returncode == 0
    assert stat.S_IMODE(out.stat().st_mode) == mode


def test_a_replaced_file_keeps_its_mode_and_hard_links(collection, tmp_path):
    out, other = tmp_path / "r.csv", tmp_path / "other-name.csv"
    out.write_text("old\n")
    os.chmod(out, 0o640)
    os.link(out, other)
    assert _evaluate(collection, "-o", str(out), umask=0o077).returncode == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert other.read_text() == out.read_text() and out.read_text().startswith("run,")
    plain = tmp_path / "plain.csv"
    plain.write_text("old\n")
    os.chmod(plain, 0o604)
    assert _evaluate(collection, "-o", str(plain)).returncode == 0
    assert stat.S_IMODE(plain.stat().st_mode) == 0o604 and plain.read_text().startswith("run,")


def test_a_missing_folder_or_a_file_as_folder_is_refused_before_any_work(tmp_path):
    (tmp_path / "file").write_text("x")
    for out in (tmp_path / "missing" / "r.csv", tmp_path / "file" / "r.csv"):
        with pytest.raises(OutputError, match="cannot write there"):
            check_output(out)


@pytest.mark.parametrize("name", ["missing/../{input}", "./missing/../{input}", "{input}/..", "{input}/x"])
def test_a_name_through_a_missing_folder_or_a_file_never_reaches_an_input(collection, tmp_path, name):
    """``-o missing/../qrels.txt``: the kernel finds no ``missing`` (a shell's ``>`` fails), while a lexical reading
    of the name (realpath) lands on the input: refused before any work, the input untouched."""
    qrels, runs = collection
    before = _snapshot(qrels, runs)
    result = meta_eval_cli("evaluate", "-Q", "qrels.txt", "runs", "-m", "AP", "--no-progress", "-f", "csv", "-o",
                           name.format(input="qrels.txt"), cwd=tmp_path)
    assert result.returncode == 2 and "cannot write there" in result.stderr, result.stderr
    assert _snapshot(qrels, runs) == before and not (tmp_path / "missing").exists()


def test_write_output_never_leaves_a_temporary_file(tmp_path):
    write_output(tmp_path / "a.txt", "x")
    write_output(tmp_path / "a.txt", b"y")
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"] and (tmp_path / "a.txt").read_text() == "y"


def test_compare_goes_through_the_same_writer(collection, tmp_path):
    qrels, runs = collection
    before = _snapshot(qrels)
    result = meta_eval_cli("compare", "-Q", str(qrels), str(runs), "-m", "AP", "--no-progress", "-o",
                           str(tmp_path / "cmp"))
    assert result.returncode == 0, result.stderr
    assert verify_folder(tmp_path / "cmp") == []  # the result-folder writer, as every analysis command
    link = tmp_path / "q"
    link.symlink_to(qrels)
    result = meta_eval_cli("compare", "-Q", str(qrels), str(runs), "-m", "AP", "--no-progress", "-o", str(link))
    assert result.returncode == 2 and "is not a folder" in result.stderr and _snapshot(qrels) == before
    result = meta_eval_cli("compare", "-Q", str(qrels), str(runs), "-m", "AP", "--no-progress", "-o",
                           str(qrels.parent))
    assert result.returncode == 2 and "an input of this command" in result.stderr and _snapshot(qrels) == before


# --------------------------------------------------------------------------------------------- result folders


def _discpower(collection, out: Path, *extra: str) -> subprocess.CompletedProcess:
    qrels, runs = collection
    return meta_eval_cli("discpower", "-Q", str(qrels), str(runs), "-m", "AP", "-B", "20", "--top", "0",
                         "--jobs", "1", "--no-figures", "--no-progress", "-o", str(out), *extra)


def _fake_result(folder: Path, kind: str) -> None:
    with result_folder(folder, kind=kind) as tmp:
        (tmp / "table.csv").write_text("a\n1\n")


def test_another_commands_folder_needs_overwrite(collection, tmp_path):
    study = tmp_path / "study"
    _fake_result(study, "study")
    before = _snapshot(study)
    result = _discpower(collection, study)
    assert result.returncode == 2 and "meta-eval study" in result.stderr and "--overwrite" in result.stderr
    assert _snapshot(study) == before
    assert _discpower(collection, study, "--overwrite").returncode == 0
    assert json.loads((study / "manifest.json").read_text())["meta_eval"] == "discpower" and verify_folder(study) == []


def test_a_folder_with_files_meta_eval_did_not_write_needs_overwrite(collection, tmp_path):
    out = tmp_path / "res"
    assert _discpower(collection, out).returncode == 0
    (out / "my-notes.txt").write_text("precious")
    result = _discpower(collection, out)
    assert result.returncode == 2 and "my-notes.txt" in result.stderr and "not written by meta-eval" in result.stderr
    assert (out / "my-notes.txt").read_text() == "precious"


def test_a_foreign_folder_is_never_replaced_even_with_overwrite(collection, tmp_path):
    out = tmp_path / "thesis"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    result = _discpower(collection, out, "--overwrite")
    assert result.returncode == 2 and "not a meta-eval result folder" in result.stderr
    assert (out / "thesis.tex").read_text() == "precious"


def test_a_folder_holding_an_input_is_refused(collection, tmp_path):
    qrels, runs = collection
    out = tmp_path / "res"
    assert _discpower(collection, out).returncode == 0
    shutil.copy(qrels, out / "qrels.txt")
    before = _snapshot(out)
    result = meta_eval_cli("discpower", "-Q", str(out / "qrels.txt"), str(runs), "-m", "AP", "-B", "20", "--top",
                           "0", "--jobs", "1", "--no-figures", "--no-progress", "-o", str(out), "--overwrite")
    assert result.returncode == 2 and "an input of this command" in result.stderr
    assert _snapshot(out) == before


@pytest.mark.parametrize("name, where", [("", "empty"), (".", "empty"), ("./", "empty"), (".", "results"),
                                         ("../results", "results"), ("..", "results/sub"),
                                         ("missing/../notes", "")])
def test_the_working_folder_or_a_name_through_a_missing_folder_is_refused(collection, tmp_path, name, where):
    """``-o .`` (or ``''``, ``..``) would replace the folder the shell is in (an empty one, or an earlier result
    folder the user went into), leaving the shell in a deleted folder; ``-o missing/../notes`` names ``notes`` (a
    folder of the user's), not a new folder under ``missing``: refused before any work, nothing changed or made."""
    qrels, runs = collection
    work = tmp_path / "work"
    (work / "empty").mkdir(parents=True)
    _fake_result(work / "results", "discpower")
    (work / "results" / "sub").mkdir()
    (work / "notes").mkdir()
    (work / "notes" / "n.txt").write_text("mine")
    before = _snapshot(tmp_path)
    inode = os.stat(work / where).st_ino
    plugin = marking_plugin(tmp_path)
    result = meta_eval_cli("discpower", "-Q", str(qrels), str(runs), "-m", "AP", "-m", f"{plugin}:marking", "-B",
                           "20", "--top", "0", "--jobs", "1", "--no-figures", "--no-progress", "-o", name,
                           "--overwrite", cwd=work / where)
    assert result.returncode == 2, result.stderr
    assert "working folder" in result.stderr or "not a meta-eval result folder" in result.stderr, result.stderr
    assert not (tmp_path / "scored").exists() and not (work / "missing").exists()  # no run scored, nothing made
    assert {k: v for k, v in _snapshot(tmp_path).items() if "marking" not in k} == before
    assert os.stat(work / where).st_ino == inode


def test_a_new_result_folders_parents_are_made_only_when_it_is_written(tmp_path):
    from meta_eval.outputs.result_folder import check_output_folder

    out = tmp_path / "a" / "b" / "c"
    assert check_output_folder(out) == out and not (tmp_path / "a").exists()
    with result_folder(out, kind="discpower") as tmp:
        (tmp / "x.txt").write_text("x")
    assert verify_folder(out) == [] and (out / "x.txt").read_text() == "x"
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="file is not a folder"):
        check_output_folder(tmp_path / "file" / "res")
    (tmp_path / "loop").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop")
    with pytest.raises(OutputError, match="loop is a symbolic link to nothing"):
        check_output_folder(tmp_path / "loop" / "res")


def test_a_symlinked_result_folder_is_written_through(collection, tmp_path):
    real = tmp_path / "real"
    _fake_result(real, "discpower")
    link = tmp_path / "link"
    link.symlink_to(real)
    assert _discpower(collection, link).returncode == 0
    assert link.is_symlink() and (real / "discpower_summary.csv").exists() and verify_folder(real) == []


def test_result_folder_refused_before_any_work(collection, tmp_path):
    out = tmp_path / "thesis"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    qrels, runs = collection
    plugin = marking_plugin(tmp_path)
    result = meta_eval_cli("discpower", "-Q", str(qrels), str(runs), "-m", "AP", "-m", f"{plugin}:marking", "-B",
                           "100000", "--no-progress", "-o", str(out))
    assert result.returncode == 2 and not (tmp_path / "scored").exists()  # no run was scored


# --------------------------------------------------------------------------------------------- the lock


def test_a_stale_lock_file_is_free(tmp_path):
    out = tmp_path / "res"
    (tmp_path / ".res.lock").write_text(json.dumps({"pid": 999999, "host": "elsewhere"}))
    _fake_result(out, "discpower")
    assert verify_folder(out) == [] and not (tmp_path / ".res.lock").exists()


_RACE = """
import sys, time
from meta_eval.outputs.result_folder import result_folder
from meta_eval.core.errors import OutputError
out, tag = sys.argv[1], sys.argv[2]
try:
    with result_folder(out, kind="race") as tmp:
        (tmp / "who.txt").write_text(tag)
        time.sleep(0.3)
    print("won")
except OutputError as exc:
    print("refused" if "another meta-eval run" in str(exc) else f"other: {exc}")
"""


def test_two_writers_never_both_take_the_lock(tmp_path):
    """After a killed run left its lock file, two writers start together: one writes, the other is refused (or
    runs after it); never two at once. 10 trials."""
    for trial in range(10):
        out = tmp_path / f"res{trial}"
        (tmp_path / f".res{trial}.lock").write_text(json.dumps({"pid": 999999, "host": os.uname().nodename}))
        procs = [subprocess.Popen([sys.executable, "-c", _RACE, str(out), tag], stdout=subprocess.PIPE, text=True)
                 for tag in ("a", "b")]
        outcomes = sorted(p.communicate(timeout=60)[0].strip() for p in procs)
        assert outcomes in (["refused", "won"], ["won", "won"]), outcomes
        assert verify_folder(out) == []


# --------------------------------------------------------------------------------------------- signals


def _children(pid: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start_with_workers(tmp_path: Path) -> tuple[subprocess.Popen, set[int]]:
    proc = subprocess.Popen([*CLI, "discpower", "-m", "AP", "-m", "nDCG", "-m", "RR", "-m", "P@10",
                             "--method", "bootstrap", "--method", "tukey", "-B", "200000", "--jobs", "2",
                             "--no-progress", "-o", str(tmp_path / "res")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 90
    workers: set[int] = set()
    while time.time() < deadline and len(workers) < 2:
        time.sleep(0.5)
        workers = {c for c in _children(proc.pid) if "LokyProcess" in Path(f"/proc/{c}/cmdline").read_text()}
    if len(workers) < 2:
        proc.kill()
        pytest.skip("the command finished before its workers could be seen")
    return proc, _children(proc.pid)


@pytest.mark.slow
def test_sigkill_leaves_no_worker_running(tmp_path):
    proc, children = _start_with_workers(tmp_path)
    proc.kill()
    proc.wait()
    assert _all_gone(children)


def _all_gone(pids: set[int], within: float = 10) -> bool:
    deadline = time.time() + within
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.2)
    return not any(_alive(p) for p in pids)


@pytest.mark.slow
def test_sigterm_ends_quietly_with_143_and_no_partial_folder(tmp_path):
    proc, children = _start_with_workers(tmp_path)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "Traceback" not in err, err
    assert _all_gone(children)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".res")] == []


SLEEPING_METRIC = """import pathlib, time
import numpy as np


def sleepy(r):
    pathlib.Path({ready!r}).touch()
    time.sleep(120)
    return np.zeros(r.shape)
"""
SLEEPING_ANALYSIS = """import pathlib, time
from meta_eval.analyses import analysis


@analysis("sleepy", title="sleepy", needs="scores")
def sleepy(data):
    pathlib.Path({ready!r}).touch()
    time.sleep(120)
"""


@pytest.mark.parametrize("where", ["metric", "analysis"])
def test_sigterm_while_a_plug_ins_code_runs_is_not_its_failure(collection, tmp_path, where):
    """SIGTERM arriving inside a plug-in's code was taken for the plug-in's own SystemExit: "metric plug-in ...
    raised SystemExit: 143" (status 2), or in a study a failed section and a complete folder (status 1)."""
    qrels, runs = collection
    ready = tmp_path / "ready"
    plugin = tmp_path / "slow.py"
    plugin.write_text((SLEEPING_METRIC if where == "metric" else SLEEPING_ANALYSIS).format(ready=str(ready)))
    args = (["evaluate", "-m", f"{plugin}:sleepy", "-f", "csv", "-o", str(tmp_path / "out.csv")] if where == "metric"
            else ["analysis", f"{plugin}:sleepy", "-m", "AP", "-m", "P@10", "-o", str(tmp_path / "out")])
    proc = subprocess.Popen([*CLI, *args, "-Q", str(qrels), str(runs), "--no-progress"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "plug-in" not in err and "Traceback" not in err, err
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "out").exists()


def test_a_broken_pipe_ends_quietly(collection):
    qrels, runs = collection
    proc = subprocess.Popen([*CLI, "evaluate", "-Q", str(qrels), str(runs), "-m", "all_trec", "-q", "-f", "csv",
                             "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipe" not in err
