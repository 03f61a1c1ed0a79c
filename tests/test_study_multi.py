"""Studies of several collections: specs and study files, the cross-collection report, and the same CSVs whatever
runs them — this process, two joblib workers (--jobs 2) or a real Dask cluster (a scheduler and two workers
started as separate processes on localhost)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import meta_eval as me
from meta_eval.orchestration.multi_collection_study import CollectionSpec, parse_collection, read_study_file
from meta_eval.outputs.result_folder import verify_folder

DEMO_QRELS, DEMO_RUNS = me.demo_paths()

STUDY_FILE = """
[study]
metrics = ["AP", "nDCG@10"]
against = ["GAP"]
n_resamples = 60
skip = ["properties", "split-half", "anova", "intuitiveness", "incomplete-judgments", "reusability"]
formats = ["png"]
dpi = 50

[study.params.discpower]
top = 0

[study.params.informativeness]
lists = 12
g_grid = 0.5

[[collection]]
name = "early"
qrels = "{qrels}"
runs = ["{runs}/sys0*"]

[[collection]]
name = "late"
qrels = "{qrels}"
runs = "{runs}/sys[12]*"
depth = 50
"""


def _study_file(folder: Path) -> Path:
    path = folder / "study.toml"
    path.write_text(STUDY_FILE.format(qrels=DEMO_QRELS, runs=DEMO_RUNS))
    return path


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from meta_eval.cli import run; run()", "study", *args,
                           "--no-progress"], cwd=cwd, capture_output=True, text=True, timeout=300)


def _csvs(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.csv"))}


def test_collection_specs_and_study_files(tmp_path):
    spec = parse_collection("covid=q.txt:runs/a*,runs/b.gz", depth=10)
    assert spec == CollectionSpec("covid", "q.txt", ["runs/a*", "runs/b.gz"], {"depth": 10})
    with pytest.raises(me.InputError, match="expected NAME=QRELS:RUNS"):
        parse_collection("covid=q.txt")
    with pytest.raises(me.InputError, match="names a folder"):
        parse_collection("a/b=q.txt:runs")
    specs, options = read_study_file(_study_file(tmp_path))
    assert [s.name for s in specs] == ["early", "late"] and specs[1].load == {"depth": 50}
    assert specs[1].runs == [f"{DEMO_RUNS}/sys[12]*"] and options["params"]["informativeness"]["g_grid"] == 0.5
    bad = tmp_path / "bad.toml"
    bad.write_text('[[collection]]\nname = "x"\nqrels = "q"\n')
    with pytest.raises(me.InputError, match="collection 1 lacks runs"):
        read_study_file(bad)
    for name in ("report.html", "Manifest.JSON"):  # beside the collections' folders: the report's own files
        with pytest.raises(me.InputError, match="taken for one of the report's files"):
            parse_collection(f"{name}=q.txt:runs")
    bad.write_text('[[collection]]\nname = "x"\nqrels = "q"\nruns = "r"\ncolour = 1\n')
    with pytest.raises(me.InputError, match=r"unknown option\(s\) \['colour'\]"):
        read_study_file(bad)


def test_a_study_files_plugins_and_parameter_files_are_beside_it(tmp_path, monkeypatch):
    """Like its collections' files, the plug-ins a study file names (metrics, against, analyses) and the files an
    analysis's parameters name are read beside it, whatever the working folder (they were read from the working
    folder: the file failed elsewhere, and a same-named file there would have run instead)."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "llm.qrels").write_text("401 0 d 1\n")
    study = sub / "study.toml"
    study.write_text('[study]\nmetrics = ["AP", "plug.py:intm", "/abs/p.py:x", "pkg.mod:f"]\nagainst = "g.py:*"\n'
                     'analyses = ["my.py:NAME(k=1)"]\n[study.params.judge-agreement]\nother_qrels = "llm.qrels"\n'
                     '[study.params.discpower]\ntop = 3\n[[collection]]\nname = "c"\nqrels = "q.txt"\nruns = "r"\n')
    monkeypatch.chdir(tmp_path)
    _, options = read_study_file("sub/study.toml")
    assert options["metrics"] == ["AP", "sub/plug.py:intm", "/abs/p.py:x", "pkg.mod:f"]
    assert options["against"] == ["sub/g.py:*"] and options["analyses"] == ["sub/my.py:NAME(k=1)"]
    assert options["params"] == {"judge-agreement": {"other_qrels": "sub/llm.qrels"}, "discpower": {"top": 3}}
    _, options = read_study_file(study)
    assert options["metrics"][1] == f"{sub}/plug.py:intm"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def dask_cluster(tmp_path):
    """``dask scheduler`` and two ``dask worker`` processes on localhost; yields the scheduler address."""
    pytest.importorskip("distributed")
    dask = shutil.which("dask", path=str(Path(sys.executable).parent)) or shutil.which("dask")
    if dask is None:
        pytest.skip("the dask command is not installed")
    address = f"tcp://127.0.0.1:{_free_port()}"
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    logs = tmp_path / "dask-logs"
    logs.mkdir()
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                               "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=open(logs / "scheduler", "w"),
                              env=env, cwd=logs)]
    for i in range(2):
        procs.append(subprocess.Popen([dask, "worker", address, "--nworkers", "1", "--nthreads", "1",
                                       "--no-dashboard", "--no-nanny"], stdout=subprocess.DEVNULL,
                                      stderr=open(logs / f"worker{i}", "w"), env=env, cwd=logs))
    try:
        from distributed import Client

        with Client(address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=120)
        yield address
    finally:
        from meta_eval.core.parallel import close_clusters

        close_clusters()
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:  # pragma: no cover
                proc.kill()


@pytest.mark.slow
def test_same_csvs_in_one_process_on_two_workers_and_on_a_dask_cluster(tmp_path, dask_cluster):
    study = _study_file(tmp_path)
    single = _cli("--study-file", str(study), "-o", "single", "--jobs", "1", cwd=tmp_path)
    assert single.returncode == 0, single.stderr
    out = tmp_path / "single"
    manifest = json.loads((out / "manifest.json").read_text())
    assert [c["name"] for c in manifest["collections"]] == ["early", "late"]
    assert all(c["sha256"] and not c["errors"] for c in manifest["collections"])
    assert manifest["collections"][1]["shape"]["depth"] == 50
    for name in ("discpower_by_collection", "agreement_by_collection", "informativeness_by_collection",
                 "rms_vs_g_by_collection"):
        assert (out / f"{name}.csv").is_file(), name
    assert (out / "rms_vs_g_by_collection.png").is_file() and (out / "early" / "report.html").is_file()
    report = (out / "report.md").read_text()
    assert "[early](early/report.html)" in report and "| AP |" in report
    expected = _csvs(out)
    assert len(expected) > 20
    assert verify_folder(out) == []  # the collections' own manifests are listed with the rest
    again = _cli("--study-file", str(study), "-o", "single", "--jobs", "1", cwd=tmp_path)  # into its own folder
    assert again.returncode == 0, again.stderr
    assert _csvs(out) == expected and verify_folder(out) == []

    two = _cli("--study-file", str(study), "-o", "two", "--jobs", "2", cwd=tmp_path)
    assert two.returncode == 0, two.stderr
    assert _csvs(tmp_path / "two") == expected

    on_dask = _cli("--study-file", str(study), "-o", "cluster", "--scheduler", dask_cluster, cwd=tmp_path)
    assert on_dask.returncode == 0, on_dask.stderr
    assert _csvs(tmp_path / "cluster") == expected


def test_collections_need_distinct_names_and_no_loose_runs(tmp_path):
    res = _cli("-c", f"a={DEMO_QRELS}:{DEMO_RUNS}", "-c", f"a={DEMO_QRELS}:{DEMO_RUNS}", "-o", "x", cwd=tmp_path)
    assert res.returncode == 2 and "distinct names" in res.stderr
    res = _cli("-c", f"a={DEMO_QRELS}:{DEMO_RUNS}", str(DEMO_RUNS), "-o", "x", cwd=tmp_path)
    assert res.returncode == 2 and "give the runs and qrels inside them" in res.stderr
    res = _cli("-c", f"a={DEMO_QRELS}:{DEMO_RUNS}", "--scheduler", "nowhere", "-o", "x", cwd=tmp_path)
    assert res.returncode == 2 and "scheduler must be 'local'" in res.stderr
    res = _cli("-c", f"a={DEMO_QRELS}:{DEMO_RUNS}", "-c", f"A={DEMO_QRELS}:{DEMO_RUNS}", "-o", "x", cwd=tmp_path)
    assert res.returncode == 2 and "distinct names, case aside" in res.stderr  # one folder on macOS or Windows


@pytest.mark.parametrize("problem", ["missing", "no topic in common"])
def test_an_error_in_one_collections_files_names_the_collection(tmp_path, problem):
    """Two collections may share a runs folder: an error naming a run alone did not say which collection."""
    other = tmp_path / "other.txt"
    if problem == "no topic in common":
        other.write_text("".join(f"9{i} 0 doc{i} 1\n" for i in range(3)))
    res = _cli("-c", f"a={DEMO_QRELS}:{DEMO_RUNS}", "-c", f"b={other}:{DEMO_RUNS}", "-o", "x", cwd=tmp_path)
    assert res.returncode == 2 and "error: collection 'b': " in res.stderr, res.stderr
    assert not (tmp_path / "x").exists()
