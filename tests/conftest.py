"""Shared fixtures. Reference data in ../shared is optional: tests that need it skip cleanly without it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# The property tests run on a fixed sequence of examples, so the README's test command passes or fails the same way
# on every machine and every run (a test that fails at random trains everyone to ignore it). To look for new
# counterexamples: HYPOTHESIS_PROFILE=explore python -m pytest ... (what it finds becomes a test of its own).
# No deadline and no "too slow" health check: both are wall-clock limits, which fail on a loaded machine.
_NO_CLOCK = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True)
settings.register_profile("deterministic", derandomize=True, **_NO_CLOCK)
settings.register_profile("explore", derandomize=False, **_NO_CLOCK)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))

REPO = Path(__file__).resolve().parents[1]
# ../shared beside the checkout (CI, the main clone); META_EVAL_SHARED points elsewhere (a git worktree).
SHARED = Path(os.environ["META_EVAL_SHARED"]) if os.environ.get("META_EVAL_SHARED") else REPO.parent / "shared"


def shared_path(*parts: str) -> Path:
    """Path inside ../shared, skipping the calling test when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"reference data not available: {path}")
    return path


@pytest.fixture
def shared_dir() -> Path:
    """The ../shared directory (skips the test when it does not exist)."""
    return shared_path()


def write_collection(root: Path, *, n_topics: int, n_docs: int, n_runs: int, depth: int, seed: int = 0,
                     grade_p=(0.6, 0.25, 0.15), noise: float | None = None, gz: bool = False) -> tuple[Path, Path]:
    """Write a small graded collection as TREC files: ``root/qrels.txt`` and ``root/runs/run<i>[.gz]``.

    Every document is judged, grades 0..len(grade_p)-1 drawn with ``grade_p``. Run i ranks by
    ``grade + N(0, noise_i)`` with noise falling from ``noise`` (so runs differ in quality), or at random when
    ``noise`` is None; it retrieves ``depth`` documents per topic.
    """
    import gzip

    import numpy as np

    rng = np.random.default_rng(seed)
    qrels, runs = [], [[] for _ in range(n_runs)]
    for t in range(1, n_topics + 1):
        grades = rng.choice(len(grade_p), size=n_docs, p=grade_p)
        docs = [f"d{t}_{j}" for j in range(n_docs)]
        qrels += [f"{t} 0 {d} {g}" for d, g in zip(docs, grades)]
        for i, lines in enumerate(runs):
            if noise is None:
                order = rng.permutation(n_docs)[:depth]
            else:
                order = np.argsort(-(grades + rng.normal(0, noise * (1 - 0.14 * i), n_docs)))[:depth]
            lines += [f"{t} Q0 {docs[j]} {r + 1} {depth - r} run{i}" for r, j in enumerate(order)]
    (root / "qrels.txt").write_text("\n".join(qrels) + "\n")
    run_dir = root / "runs"
    run_dir.mkdir(exist_ok=True)
    for i, lines in enumerate(runs):
        text = "\n".join(lines) + "\n"
        if gz:
            (run_dir / f"run{i}.gz").write_bytes(gzip.compress(text.encode()))
        else:
            (run_dir / f"run{i}.txt").write_text(text)
    return root / "qrels.txt", run_dir


def marking_plugin(folder: Path) -> Path:
    """A metric plug-in that leaves ``folder/scored`` when it scores anything: proof that the work began."""
    plugin = folder / "marking.py"
    plugin.write_text(f"import pathlib\nimport numpy as np\n\n\ndef marking(r):\n"
                      f"    pathlib.Path({str(folder / 'scored')!r}).touch()\n    return np.zeros(r.shape)\n")
    return plugin
