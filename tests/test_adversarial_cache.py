"""Adversarial cases of the MEM cache (issue 21): a stale, damaged, planted or unwritable cache never serves a wrong
number nor gives a traceback; each case asserts the correct result (equal to solving without a cache), the one
warning line or the clear error, and what is on disk afterwards.

The mechanism under test is one cache (:mod:`meta_eval.statistics.maxent.cache`) keyed on the code behind a metric
(:mod:`meta_eval.measures.fingerprint`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

import meta_eval as me
from meta_eval.statistics import maxent as mem
from meta_eval.statistics.maxent import cache as cache_module
from meta_eval.statistics.maxent.cache import CacheWarning, MemCache

METRIC = "weighted"


@pytest.fixture(scope="module")
def lists():
    """26 lists of the demo collection (fast to solve with a linear metric)."""
    every = mem.lists_from_collection(me.demo_collection())
    return every.subset(np.arange(0, every.batch.n_lists, 25))


def write_plugin(folder: Path, p: float = 0.8, helper_power: str = "np.arange(n)") -> str:
    """A linear metric in a file: a module constant P, and a weight from a helper in a local module (named after
    the folder: helpers of one name in two folders cannot both be imported by one process)."""
    folder.mkdir(parents=True, exist_ok=True)
    helper = f"weights_{abs(hash(str(folder)))}"
    (folder / f"{helper}.py").write_text(f"import numpy as np\n\ndef weight(p, n):\n    return p ** {helper_power}\n")
    (folder / "metric.py").write_text(textwrap.dedent(f"""\
        import numpy as np
        from {helper} import weight

        P = {p}

        def {METRIC}(r):
            return (r.relevant() * weight(P, r.depth)).sum(-1) * (1 - P)
        """))
    return f"{folder / 'metric.py'}:{METRIC}"


def rms(result) -> np.ndarray:
    return result.summary.mean_rms.to_numpy()


def entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.npz"))


def solve(lists, metric, cache_dir, **kw):
    """informativeness with the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = mem.informativeness(lists, [metric], cache_dir=cache_dir, **kw)
    return result, [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]


# ------------------------------------------------------------------------------------------------ stale code


def test_editing_a_module_constant_is_never_served_from_the_cache(lists, tmp_path):
    metric = write_plugin(tmp_path / "plug", p=0.8)
    first, _ = solve(lists, metric, tmp_path / "cache")
    write_plugin(tmp_path / "plug", p=0.5)
    second, _ = solve(lists, metric, tmp_path / "cache")
    fresh, _ = solve(lists, metric, None)
    assert not np.allclose(rms(first), rms(second))
    np.testing.assert_array_equal(rms(second), rms(fresh))
    assert len(entries(tmp_path / "cache")) == 2


def test_editing_a_helper_in_an_imported_local_module_is_never_served(lists, tmp_path):
    metric = write_plugin(tmp_path / "plug")
    first, _ = solve(lists, metric, tmp_path / "cache")
    write_plugin(tmp_path / "plug", helper_power="(np.arange(n) * 1.5)")  # the metric file itself is unchanged
    second, _ = solve(lists, metric, tmp_path / "cache")
    fresh, _ = solve(lists, metric, None)
    assert not np.allclose(rms(first), rms(second))
    np.testing.assert_array_equal(rms(second), rms(fresh))


def test_a_file_the_plugin_does_not_import_does_not_invalidate(lists, tmp_path):
    metric = write_plugin(tmp_path / "plug")
    first, _ = solve(lists, metric, tmp_path / "cache")
    (tmp_path / "plug" / "notes.py").write_text("X = 1\n")
    again, _ = solve(lists, metric, tmp_path / "cache")
    np.testing.assert_array_equal(rms(first), rms(again))
    assert len(entries(tmp_path / "cache")) == 1


def test_a_local_package_helper_is_part_of_the_key(tmp_path):
    from meta_eval.measures.fingerprint import closure

    pkg = tmp_path / "mypkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "deep.py").write_text("K = 1\n")
    (pkg / "util.py").write_text("from .sub import deep\n")
    main = tmp_path / "main.py"
    main.write_text("import numpy\nfrom mypkg.util import deep\ndef f():\n    import mypkg.sub\n")
    sys.path.append(str(tmp_path))
    try:
        found = closure("main", main)
    finally:
        sys.path.remove(str(tmp_path))
    assert {"main", "mypkg", "mypkg.util", "mypkg.sub", "mypkg.sub.deep"} <= set(found.files)
    assert "numpy" in found.versions and "numpy" not in found.files


def test_meta_evals_own_code_is_in_the_key():
    """An editable install keeps version 0.1.0: the key hashes the solver's and the measures' sources instead."""
    from meta_eval.measures.fingerprint import MEM_ROOTS, closure, meta_eval_fingerprint

    import importlib

    files = {}
    for root in MEM_ROOTS:
        module = importlib.import_module(root)
        path = Path(module.__file__)
        files.update(closure(root, path, root if path.name == "__init__.py" else root.rpartition(".")[0]).files)
    for name in ("meta_eval.statistics.maxent.solver", "meta_eval.statistics.maxent._newton", "meta_eval.statistics.maxent.forms", "meta_eval.statistics.maxent.expectations",
                 "meta_eval.measures.graded", "meta_eval.measures.binary", "meta_eval.model.rankings"):
        assert name in files, name
    assert "meta_eval.cli.study" not in files and "meta_eval.analyses.discpower" not in files  # relevant sources only
    assert len(meta_eval_fingerprint()) == 64


def test_a_change_of_meta_evals_code_changes_the_key(lists, tmp_path, monkeypatch):
    from meta_eval.measures import fingerprint

    solve(lists, "AP", tmp_path)
    monkeypatch.setattr(fingerprint, "meta_eval_fingerprint", lambda: "another commit")
    solve(lists, "AP", tmp_path)
    assert len(entries(tmp_path)) == 2


def test_the_key_is_the_same_in_a_fresh_process(lists, tmp_path):
    """A second process is served from the first one's entry (no new file, the same numbers)."""
    metric = write_plugin(tmp_path / "plug")
    script = textwrap.dedent(f"""\
        import numpy as np, meta_eval as me
        from meta_eval.statistics import maxent as mem
        every = mem.lists_from_collection(me.demo_collection())
        sub = every.subset(np.arange(0, every.batch.n_lists, 25))
        res = mem.informativeness(sub, [{metric!r}, "AP"], cache_dir={str(tmp_path / 'cache')!r})
        print(repr(res.summary.mean_rms.tolist()))
        """)
    env = dict(os.environ, PYTHONPATH=str(Path(me.__file__).parent.parent))
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
            for _ in range(2)]
    assert runs[0].stdout == runs[1].stdout and len(entries(tmp_path / "cache")) == 2
    stamps = [p.stat().st_mtime_ns for p in entries(tmp_path / "cache")]
    subprocess.run([sys.executable, "-c", script], capture_output=True, env=env, check=True)
    assert [p.stat().st_mtime_ns for p in entries(tmp_path / "cache")] == stamps  # read, not rewritten


@pytest.mark.parametrize("kind", ["lambda", "closure", "main", "object"])
def test_a_metric_that_cannot_be_keyed_is_not_cached_and_said_once(lists, tmp_path, kind):
    P = 0.8

    def closure_metric(r):
        return (r.relevant() * P ** np.arange(r.depth)).sum(-1) * (1 - P)

    class Metric:
        def __call__(self, r):
            return closure_metric(r)

    func = {"lambda": lambda r: closure_metric(r), "closure": closure_metric, "object": Metric()}.get(kind)
    if kind == "main":
        func = _main_metric
        func.__module__ = "__main__"
    measure = me.metric_from_callable(func, name=f"m_{kind}")
    first, said = solve(lists, measure, tmp_path)
    again, said_again = solve(lists, measure, tmp_path)
    assert len(said) == 1 and "solved without the MEM cache" in said[0] and not said_again
    assert entries(tmp_path) == []
    np.testing.assert_array_equal(rms(first), rms(again))


def _main_metric(r):
    return (r.relevant() * 0.8 ** np.arange(r.depth)).sum(-1) * 0.2


def test_a_function_in_an_importable_module_is_cached(lists, tmp_path, monkeypatch):
    (tmp_path / "user_metrics.py").write_text("import numpy as np\n\ndef user_rbp(r):\n"
                                              "    return (r.relevant() * 0.8 ** np.arange(r.depth)).sum(-1) * 0.2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import user_metrics

    first, said = solve(lists, me.metric_from_callable(user_metrics.user_rbp), tmp_path / "cache")
    assert not said and len(entries(tmp_path / "cache")) == 1


# ------------------------------------------------------------------------------------------------ damaged entries


@pytest.fixture
def cached_ap(lists, tmp_path):
    """The cache folder with AP's entry, and AP's result solved without a cache."""
    reference, _ = solve(lists, "AP", None)
    solve(lists, "AP", tmp_path)
    (entry,) = entries(tmp_path)
    return entry, rms(reference)


def _rewrite(entry: Path, change) -> None:
    with np.load(entry) as z:
        arrays = {k: z[k] for k in z.files}
    change(arrays)
    with open(entry, "wb") as f:
        np.savez_compressed(f, **arrays)


DAMAGE = {
    "truncated": lambda e: e.write_bytes(e.read_bytes()[: e.stat().st_size // 2]),
    "empty": lambda e: e.write_bytes(b""),
    "garbage": lambda e: e.write_bytes(os.urandom(4096)),
    "not a zip but npy": lambda e: np.save(open(e, "wb"), np.zeros(3)),
    "a folder": lambda e: (e.unlink(), e.mkdir()),
    "a symlink to /dev/zero": lambda e: (e.unlink(), e.symlink_to("/dev/zero")),
    "a dangling symlink": lambda e: (e.unlink(), e.symlink_to(e.parent / "nowhere")),
    "a FIFO": lambda e: (e.unlink(), os.mkfifo(e)),
    "values changed": lambda e: _rewrite(e, lambda a: a.__setitem__("P", a["P"] * 0.5)),
    "under another key": lambda e: _rewrite(e, lambda a: a.__setitem__("key", np.array("0" * 64))),
    "wrong shape, checksum recomputed": lambda e: _rewrite(e, lambda a: (
        a.__setitem__("P", a["P"][:, :5]), a.__setitem__("checksum", np.array(cache_module._checksum(a))))),
    "wrong lengths, checksum recomputed": lambda e: _rewrite(e, lambda a: (
        a.__setitem__("lengths", a["lengths"] + 1), a.__setitem__("checksum", np.array(cache_module._checksum(a))))),
    "a field missing": lambda e: _rewrite(e, lambda a: a.pop("entropy")),
    "an object array (pickle)": lambda e: _rewrite(e, lambda a: a.__setitem__(
        "status", np.array([None] * len(a["status"]), dtype=object))),
    "a huge declared shape": lambda e: _rewrite(e, lambda a: a.__setitem__("P", np.lib.stride_tricks.as_strided(
        np.zeros(1), shape=(10**6, 10**6, 3), strides=(0, 0, 0))[:1, :1, :1])),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_or_planted_entry_is_ignored_reported_recomputed_and_rewritten(lists, tmp_path, cached_ap, damage):
    entry, reference = cached_ap
    if damage == "a FIFO" and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    DAMAGE[damage](entry)
    cache_module._SAID.clear()
    result, said = solve(lists, "AP", tmp_path)
    np.testing.assert_array_equal(rms(result), reference)
    assert f"ignoring the MEM cache entry {entry}" in said[0] and "solving it again" in said[0]
    if damage == "a folder":  # a folder is never removed: the entry is not rewritten, which is said too
        assert len(said) == 2 and "could not write" in said[1] and entry.is_dir()
        return
    assert len(said) == 1
    assert entry.is_file() and not entry.is_symlink()  # rewritten as a verified entry
    again, said = solve(lists, "AP", tmp_path)
    np.testing.assert_array_equal(rms(again), reference)
    assert not said


def test_a_planted_copy_of_another_metrics_entry_is_not_trusted(lists, tmp_path):
    solve(lists, "AP", tmp_path)
    solve(lists, "RR", tmp_path)
    ap, rr = (next(e for e in entries(tmp_path) if e.name.startswith(f"mem_{m}_")) for m in ("AP", "RR"))
    reference = rms(solve(lists, "RR", None)[0])
    rr.write_bytes(ap.read_bytes())
    cache_module._SAID.clear()
    result, said = solve(lists, "RR", tmp_path)
    assert "written under another key" in said[0]
    np.testing.assert_array_equal(rms(result), reference)


def test_entries_are_written_atomically_with_key_and_checksum(lists, tmp_path):
    solve(lists, "AP", tmp_path)
    (entry,) = entries(tmp_path)
    with zipfile.ZipFile(entry) as z:
        assert {"key.npy", "checksum.npy", "format.npy", "P.npy"} <= set(z.namelist())
    with np.load(entry) as z:
        arrays = {k: z[k] for k in z.files}
        assert str(z["checksum"]) == cache_module._checksum(arrays) and entry.name[4:].split("_", 1)[1][:32] in \
            str(z["key"])
    assert [p.name for p in tmp_path.iterdir()] == [entry.name]  # no temporary file left


# ------------------------------------------------------------------------------------------------ unusable folder


@pytest.fixture
def no_solving(monkeypatch):
    from meta_eval.statistics.maxent import solver

    monkeypatch.setattr(solver, "solve_mems", lambda *a, **k: pytest.fail("solving started"))


def test_a_file_where_the_folder_should_be_is_an_error_before_solving(lists, tmp_path, no_solving):
    blocker = tmp_path / "cache"
    blocker.write_text("mine")
    for folder in (blocker, blocker / "sub"):
        with pytest.raises(me.InputError, match=f"cannot use the MEM cache folder {folder}"):
            mem.informativeness(lists, ["AP"], cache_dir=folder)
    assert blocker.read_text() == "mine"


def test_an_unwritable_folder_is_found_before_solving(lists, tmp_path, no_solving, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(cache_module.tempfile, "mkstemp", refuse)
    with pytest.raises(me.InputError, match="cannot write in it \\(Permission denied\\)"):
        mem.informativeness(lists, ["AP"], cache_dir=tmp_path)
    with pytest.warns(CacheWarning, match="cannot be used .*solving without a cache"):
        assert MemCache.open(tmp_path, required=False) is None


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_found_before_solving(lists, tmp_path, no_solving):
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(me.InputError, match="cannot write in it"):
            mem.informativeness(lists, ["AP"], cache_dir=tmp_path)
    finally:
        tmp_path.chmod(0o700)


def test_no_space_is_found_before_solving(lists, tmp_path, no_solving, monkeypatch):
    usage = cache_module.shutil.disk_usage(tmp_path)
    monkeypatch.setattr(cache_module.shutil, "disk_usage", lambda p: usage._replace(free=1000))
    with pytest.raises(me.InputError, match=r"entries need up to .* MB, 0.0 MB are free"):
        mem.informativeness(lists, ["AP"], cache_dir=tmp_path)


def test_the_default_folder_unusable_is_a_warning_and_the_results_come(lists, tmp_path, monkeypatch):
    reference = rms(solve(lists, "AP", None)[0])
    usage = cache_module.shutil.disk_usage(tmp_path)
    monkeypatch.setattr(cache_module.shutil, "disk_usage", lambda p: usage._replace(free=1000))
    cache = MemCache.open(tmp_path, required=False)
    result, said = solve(lists, "AP", cache)
    np.testing.assert_array_equal(rms(result), reference)
    assert len(said) == 1 and "solving without a cache" in said[0] and entries(tmp_path) == []


def test_a_write_that_fails_midway_is_a_warning_and_leaves_nothing(lists, tmp_path, monkeypatch):
    reference = rms(solve(lists, "AP", None)[0])

    def full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache_module.os, "replace", full)
    result, said = solve(lists, "AP", tmp_path)
    np.testing.assert_array_equal(rms(result), reference)
    assert len(said) == 1 and "No space left on device" in said[0]
    assert list(tmp_path.iterdir()) == []


def test_cli_named_cache_unusable_fails_before_reading_runs(tmp_path):
    from typer.testing import CliRunner

    from meta_eval.cli import app

    blocker = tmp_path / "cache"
    blocker.write_text("mine")
    result = CliRunner().invoke(app, ["informativeness", str(tmp_path / "no-runs"), "-Q", str(tmp_path / "no-qrels"),
                                      "-m", "AP", "--cache", str(blocker), "--no-progress"])
    assert result.exit_code == 2 and f"cannot use the MEM cache folder {blocker}" in result.output
    assert "no-qrels" not in result.output and "Traceback" not in result.output
    assert blocker.read_text() == "mine"


def test_cli_default_cache_unusable_is_one_warning_line(tmp_path):
    """The default folder (under XDG_CACHE_HOME) blocked by a file: one warning line, and the results."""
    blocker = tmp_path / "xdg"
    blocker.write_text("mine")
    env = dict(os.environ, XDG_CACHE_HOME=str(blocker), PYTHONPATH=str(Path(me.__file__).parent.parent))
    args = ["informativeness", "-m", "AP", "--g-grid", "0", "--no-aslam", "--no-figures", "--min-relevant", "20",
            "--min-high", "12", "-o", str(tmp_path / "out"), "--no-progress"]
    run = subprocess.run([sys.executable, "-c", "from meta_eval.cli import run; run()", *args], capture_output=True,
                         text=True, env=env)
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stderr.splitlines() if line.startswith("meta-eval: warning")]
    assert lines == [f"meta-eval: warning: the MEM cache folder {blocker / 'meta-eval' / 'mem'} cannot be used "
                     "(cannot create it (Not a directory)); solving without a cache"]
    assert (tmp_path / "out" / "informativeness.csv").exists() and blocker.read_text() == "mine"
