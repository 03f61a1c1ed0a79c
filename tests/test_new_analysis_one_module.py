"""A new analysis is one module (issue 30): the project's example analysis, copied as it is into the analyses
package of a copy of meta-eval with no other file edited, gets its command and study options, runs through
``meta-eval analysis``, and the registry-driven tests (contract, command line, study) take it in unchanged."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "top_stability.py"


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("clone")
    shutil.copytree(REPO / "meta_eval", root / "meta_eval", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "tests", root / "tests", ignore=shutil.ignore_patterns("__pycache__", "data"))
    for shared in ("tests/data", "data", "examples", "scripts"):  # read-only inputs of the tests
        (root / shared).symlink_to(REPO / shared)
    shutil.copy(EXAMPLE, root / "meta_eval" / "analyses" / "top_stability.py")  # the one file added
    return root


def _run(clone: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(clone)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd or clone,
                          timeout=900)


def _meta_eval(clone: Path, *args: str) -> subprocess.CompletedProcess:
    return _run(clone, "-c", "from meta_eval.cli import run; run()", *args)


def test_the_clone_is_the_package_imported(clone):
    done = _run(clone, "-c", "import meta_eval, sys; sys.stdout.write(meta_eval.__file__)")
    assert done.stdout.startswith(str(clone)), done.stdout + done.stderr


def test_the_dropped_module_gets_its_command_and_study_options(clone):
    helped = _meta_eval(clone, "top-stability", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "--k" in helped.stdout and "top-k" in " ".join(helped.stdout.split())
    study = _meta_eval(clone, "study", "--help")
    assert "--top-stability-k" in study.stdout
    listed = _meta_eval(clone, "analysis")
    assert "top-stability" in listed.stdout


def test_it_runs_as_a_command_and_in_a_study(clone, tmp_path):
    ran = _meta_eval(clone, "analysis", "top-stability", "-m", "AP", "-m", "P@10", "-a", "none", "--no-progress")
    assert ran.returncode == 0, ran.stderr
    assert "Under topic resampling" in " ".join(ran.stdout.split())
    out = tmp_path / "study"
    studied = _meta_eval(clone, "study", "-o", str(out), "--top-stability-k", "3", "-B", "20", "--skip",
                         "informativeness", "--skip", "incomplete-judgments", "--skip", "split-half", "--skip",
                         "reusability", "--skip", "properties", "--format", "png", "--dpi", "50", "--no-progress")
    assert studied.returncode == 0, studied.stderr
    assert (out / "top_stability.csv").exists()  # a built-in now: its files beside the others'
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["analyses"]["top-stability"]["error"] is None


def test_the_registry_driven_contract_test_takes_it_in(clone):
    done = _run(clone, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                "tests/test_contract.py::test_every_analysis_keeps_the_contract[top-stability]")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "1 passed" in done.stdout
