"""Benchmark: read all TREC-COVID round-1 runs and score 8 measures, meta-eval vs pytrec_eval, in one process.

Measures: AP, GAP, nDCG, nDCG@10, P@5, Rprec, RR, bpref (pytrec_eval: the same minus GAP, which it lacks).
Both sides include parsing (gzip + text) and scoring; the qrels are parsed by each side. Prints both wall times,
the ratio and the peak resident memory of the process, then one ``BENCH`` line.

Memory cases (issue 15), each run as a whole ``meta-eval evaluate`` process (peak RSS of that process) beside
pytrec_eval: a 50,000-topic qrels against a run of 10 topics × 1,000 documents, the same with one topic of 5,020
documents, and with one list of 200,000 documents.

Usage: python scripts/bench_evaluate.py [--data ../shared/data/trec-covid-round1] [--repeat 3] [--only memory]
"""

from __future__ import annotations

import argparse
import gzip
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import meta_eval as me

OURS = ["AP", "GAP", "nDCG", "nDCG@10", "P@5", "Rprec", "RR", "bpref"]
PEER = {"map", "ndcg", "ndcg_cut.10", "P.5", "Rprec", "recip_rank", "bpref"}


def run_ours(data: Path) -> dict:
    col = me.load_collection(data / "qrels.txt", [data / "runs"])
    return me.score(col, OURS)


def run_peer(data: Path) -> dict:
    import pytrec_eval

    with open(data / "qrels.txt") as f:
        qrels = pytrec_eval.parse_qrel(f)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, PEER)
    out = {}
    for path in sorted((data / "runs").iterdir()):
        with gzip.open(path, "rt") as f:
            out[path.name] = evaluator.evaluate(pytrec_eval.parse_run(f))
    return out


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


_PEAK = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
         "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode; "
         "print(rc, time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)")


def peak_of(command: list[str]) -> tuple[float, float]:
    """Wall time and peak resident memory (MB) of a command run as its own process."""
    out = subprocess.run([sys.executable, "-c", _PEAK, *command], capture_output=True, text=True, check=True)
    rc, seconds, mb = out.stdout.split()
    if rc != "0":
        raise SystemExit(f"{command} failed with status {rc}")
    return float(seconds), float(mb)


_PEER_SCRIPT = """
import sys, pytrec_eval
with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg"}).evaluate(run)
"""


def write_memory_case(root: Path, long_list: int | None, n_topics: int = 50_000) -> tuple[Path, Path]:
    """A 50,000-topic qrels (20 judgments each) and a run of 10 topics × 1,000 documents; with ``long_list`` the
    first topic's list has that many documents instead."""
    rng = np.random.default_rng(0)
    qrels = root / "qrels.txt"
    with open(qrels, "w") as f:
        for t in range(n_topics):
            grades = rng.integers(0, 3, 20)
            f.write("".join(f"{t} 0 d{t}_{d} {g}\n" for d, g in enumerate(grades)))
    run = root / "run.txt"
    with open(run, "w") as f:
        for t in range(10):
            n = long_list if (long_list and t == 0) else 1000
            f.write("".join(f"{t} Q0 d{t}_{d} {d + 1} {n - d} r\n" for d in range(n)))
    return qrels, run


def memory_cases() -> None:
    cases = {"qrels50k_run10x1000": None, "qrels50k_topic5020": 5020, "qrels50k_list200k": 200_000}
    for name, long_list in cases.items():
        with tempfile.TemporaryDirectory() as tmp:
            qrels, run = write_memory_case(Path(tmp), long_list)
            ours_s, ours_mb = peak_of(["meta-eval", "evaluate", "-Q", str(qrels), str(run), "-m", "map", "-m", "ndcg"])
            peer_s, peer_mb = peak_of([sys.executable, "-c", _PEER_SCRIPT, str(qrels), str(run)])
        print(f"{name}: meta-eval {ours_s:.2f} s {ours_mb:.0f} MB; pytrec_eval {peer_s:.2f} s {peer_mb:.0f} MB")
        print(f"BENCH name=evaluate_{name} ours_s={ours_s:.3f} peer_s={peer_s:.3f} speedup={peer_s / ours_s:.2f} "
              f"peak_mb={ours_mb:.0f} peer_peak_mb={peer_mb:.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/trec-covid-round1")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=["trec-covid", "memory"], default=None)
    args = parser.parse_args()
    if args.only != "trec-covid":
        memory_cases()
    if args.only == "memory":
        return
    ours = best_of(lambda: run_ours(args.data), args.repeat)
    peer = best_of(lambda: run_peer(args.data), args.repeat)
    scores = run_ours(args.data)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"meta-eval   : {ours:.3f} s  ({len(OURS)} measures, {scores['AP'].shape[0]} runs × {scores['AP'].shape[1]} topics)")
    print(f"pytrec_eval : {peer:.3f} s  ({len(PEER)} measures)")
    print(f"mean AP over runs: {np.mean(scores['AP']):.4f}")
    print(f"BENCH name=evaluate_trec_covid ours_s={ours:.3f} peer_s={peer:.3f} speedup={peer / ours:.2f} peak_mb={peak:.0f}")


if __name__ == "__main__":
    main()
