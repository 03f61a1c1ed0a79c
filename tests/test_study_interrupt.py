"""Result folders under interruption and concurrency: a study interrupted (SIGINT) at random points, and two studies
started into one folder at once, leave the folder either complete and consistent with its manifest or absent (or
as the previous complete run left it) — never a mix, never a partial folder that passes for complete."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from meta_eval.outputs.result_folder import verify_folder

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

STUDY = [sys.executable, "-c", "from meta_eval.cli import run; run()", "study", "-m", "AP", "--against", "GAP",
         "-B", "60", "--skip", "informativeness", "--format", "png", "--dpi", "50", "--discpower-top", "5",
         *(arg for s in ("split-half", "anova", "intuitiveness", "incomplete-judgments", "reusability")
           for arg in ("--skip", s))]


def _start(out, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "META_EVAL_PROGRESS": "off"}
    return subprocess.Popen([*STUDY, "--out", str(out), *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)


def _consistent(out) -> None:
    """``out`` is absent, or complete and exactly what its manifest lists; nothing is left beside it."""
    if out.exists():
        assert verify_folder(out) == [], verify_folder(out)
    leftovers = [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]
    assert not leftovers, leftovers


def test_sigint_at_random_points_never_leaves_a_partial_folder(tmp_path):
    out = tmp_path / "study"
    rng = np.random.default_rng(2026)
    seeds_seen = []
    for k, delay in enumerate(rng.uniform(0.3, 5.0, size=4)):
        proc = _start(out, "--seed", str(k))
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert "Traceback" not in err or "KeyboardInterrupt" in err
        _consistent(out)
        if out.exists():
            seeds_seen.append(json.loads((out / "manifest.json").read_text())["study_options"]["seed"])
    # a run that completed replaced the folder as a whole: its manifest names the seed of that run
    assert seeds_seen == sorted(seeds_seen)
    proc = _start(out, "--seed", "9")
    assert proc.wait(timeout=180) == 0, proc.stderr.read()
    _consistent(out)
    assert json.loads((out / "manifest.json").read_text())["study_options"]["seed"] == 9


def test_two_studies_into_one_folder_at_once(tmp_path):
    out = tmp_path / "study"
    first, second = _start(out, "--seed", "1"), _start(out, "--seed", "2")
    results = [(p.wait(timeout=180), p.stderr.read()) for p in (first, second)]
    codes = sorted(code for code, _ in results)
    refused = [err for code, err in results if code == 2]
    # either one was refused with a clear message while the other wrote, or they happened not to overlap
    assert codes in ([0, 2], [0, 0]), results
    for err in refused:
        assert "another meta-eval run" in err and "is writing this folder" in err
    _consistent(out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["study_options"]["seed"] in (1, 2) and manifest["complete"] is True
