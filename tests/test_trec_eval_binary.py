"""meta-eval against the trec_eval program itself, file for file: the same qrels and run files read by both, every
measure of ``-m all_trec`` that both print, per topic, with and without ``-c``.

Runs where a trec_eval binary is given: ``META_EVAL_TREC_EVAL=path`` or ``trec_eval`` on the PATH
(``scripts/fetch_trec_eval.py`` fetches jtreceval's build of trec_eval 9.0.4 from PyPI); skipped otherwise. trec_eval
9.x stores scores as 32-bit floats, so meta-eval runs with ``score_precision="float32"``; its interpolated
precision follows 9.x's cut (``IPrec(cut=v9)``), compared by name below. A trec_eval 10 binary is compared with
meta-eval's defaults; it stops with status 4 at the first topic of the qrels a run lacks (without ``-c``), so the
topics it printed before are compared, and its ``rbp`` (which reads uninitialised memory) is left out. Values are
compared to trec_eval's printed 4 decimals. (``tests/test_trec_eval10.py`` compares ``meta-eval trec-eval`` with
trec_eval 10 byte for byte.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import meta_eval as me
from tests.conftest import shared_path
from tests.trec_eval_source import version

TREC_EVAL = os.environ.get("META_EVAL_TREC_EVAL") or shutil.which("trec_eval")
pytestmark = pytest.mark.skipif(not TREC_EVAL, reason="no trec_eval binary (META_EVAL_TREC_EVAL or trec_eval on PATH)")
VERSION_10 = bool(TREC_EVAL) and version(TREC_EVAL).startswith("10")

NOT_NUMBERS = {"runid", "relstring"}
# trec_eval 10 changed the cut of interpolated precision; meta-eval's default follows 10, so 9.x's is asked for.
V9 = [f"IPrec(cut=v9)@{level:.2f}" for level in [i / 10 for i in range(11)]] + ["IPrec11(cut=v9)"]
V9_NAMES = {f"iprec_at_recall_{level:.2f}" for level in [i / 10 for i in range(11)]} | {"11pt_avg"}


def trec_eval(qrels: Path, run: Path, *flags: str) -> dict[tuple[str, str], float]:
    proc = subprocess.run([TREC_EVAL, "-q", "-m", "all_trec", *flags, str(qrels), str(run)], capture_output=True,
                          text=True)
    assert proc.returncode == 0 or (VERSION_10 and proc.returncode == 4 and "-c" not in flags), proc.stderr
    rows = {}
    for line in proc.stdout.splitlines():
        measure, topic, value = line.split()
        if measure not in NOT_NUMBERS and not (VERSION_10 and measure == "rbp"):
            rows[(measure, topic)] = float(value)
    return rows


def ours(qrels: Path, run: Path, **options) -> dict[tuple[str, str], float]:
    if VERSION_10:
        collection = me.load_collection(qrels, [run], **options)
        return {(r.measure, r.topic): r.value for r in me.evaluate(collection, ["all_trec"]).itertuples()}
    collection = me.load_collection(qrels, [run], score_precision="float32", **options)
    results = me.evaluate(collection, ["all_trec"])
    v9 = me.evaluate(collection, V9)
    rows = {(r.measure, r.topic): r.value for r in results.itertuples() if r.measure not in V9_NAMES}
    for r in v9.itertuples():
        rows[(_v9_name(r.measure), r.topic)] = r.value
    return rows


def _v9_name(output_name: str) -> str:
    """trec_eval's name of a v9-cut interpolated precision measure."""
    if output_name.startswith("IPrec11"):
        return "11pt_avg"
    return f"iprec_at_recall_{float(output_name.rsplit('@', 1)[1]):.2f}"


def assert_same(peer: dict, mine: dict) -> int:
    common = sorted(set(peer) & set(mine))
    wrong = [(key, mine[key], peer[key]) for key in common if abs(mine[key] - peer[key]) > 5.01e-5]
    assert not wrong, wrong[:10]
    return len(common)


@st.composite
def collection_files(draw):
    """Qrels and a run as text, with ties, unjudged documents, topics the run skips and mixed whitespace."""
    qrels, run = [], []
    for t in range(draw(st.integers(1, 4))):
        pool = draw(st.integers(1, 20))
        for d in range(pool):
            if d == 0 or draw(st.booleans()):
                grade = draw(st.integers(0, 3)) if d == 0 else draw(st.integers(-1, 3))
                qrels.append(f"{t} 0 d{d} {grade}")
        if t > 0 and draw(st.booleans()):
            continue
        depth = draw(st.integers(1, pool + 3))  # documents beyond the pool are unjudged
        docs = draw(st.permutations(range(pool + 3)))[:depth]
        for d in docs:
            space = draw(st.sampled_from([" ", "\t", "  "]))
            run.append(space.join([str(t), "Q0", f"d{d}", "1", f"{draw(st.integers(0, 4)) / 3:.6f}", "r"]))
    return "\n".join(qrels) + "\n", "\n".join(run) + "\n"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=collection_files(), average_over_qrels=st.booleans())
def test_random_files_match_the_trec_eval_program(tmp_path, files, average_over_qrels):
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text(files[0])
    run.write_text(files[1])
    flags = ["-c"] if average_over_qrels else []
    peer = trec_eval(qrels, run, *flags)
    mine = ours(qrels, run, missing="zero" if average_over_qrels else "skip")
    assert assert_same(peer, mine) > 0


def test_trec_covid_runs_match_the_trec_eval_program(tmp_path):
    base = shared_path("data", "trec-covid-round1")
    import gzip

    for path in sorted((base / "runs").iterdir())[:8]:
        run = tmp_path / path.name.removesuffix(".gz")
        run.write_bytes(gzip.decompress(path.read_bytes()))
        assert assert_same(trec_eval(base / "qrels.txt", run, "-c"),
                           ours(base / "qrels.txt", run, missing="zero")) > 1000
