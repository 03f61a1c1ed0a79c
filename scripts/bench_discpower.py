"""Benchmark: discriminative power over all 10,153 pairs of the 143 TREC-COVID round-1 runs, one metric (AP).

Ours: Sakai's paired bootstrap (B = 1000) and the randomised Tukey HSD (B = 5000) on the (143 x 30) score matrix
from the core API. Peer: ranx ``compare`` doing pairwise tests (Fisher randomisation, 1000 permutations, and the
paired t-test) on a sample of the same runs, in the same process. ranx's compare also scores the runs; its
per-pair time is reported both as is and with its own scoring time subtracted (the conservative ratio, used in
the BENCH line; ``peer_s`` there is ranx's tests-only per-pair time extrapolated to all pairs). Timings are the
best of ``--repeat`` runs after one warm-up (numba JIT and BLAS start-up excluded for both sides).

Usage: python scripts/bench_discpower.py [--data ../shared/data/trec-covid-round1] [--sample 15] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gzip
import os
import resource
import time
import tracemalloc
from itertools import combinations
from pathlib import Path

import numpy as np

import meta_eval as me
from meta_eval.statistics.significance.bootstrap import paired_bootstrap
from meta_eval.statistics.significance.tukey import tukey_hsd

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "trec-covid-round1"


def peak_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux ru_maxrss is in KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def best_time(fn, repeat: int) -> tuple[float, object]:
    """Best wall time of ``repeat`` calls after one warm-up call, and the last result."""
    out = fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def ranx_inputs(data: Path, names: list[str]):
    """ranx Qrels and Runs built from the same files (qrels: topic iter doc grade; runs: TREC format)."""
    from ranx import Qrels, Run

    qrels: dict[str, dict[str, int]] = {}
    for line in (data / "qrels.txt").read_text().splitlines():
        if line.strip():
            topic, _, doc, grade = line.split()
            qrels.setdefault(topic, {})[doc] = int(grade)
    runs = []
    for name in names:
        path = data / "runs" / f"{name}.gz"
        if not path.exists():
            path = next(p for p in (data / "runs").iterdir() if p.name.startswith(name))
        run: dict[str, dict[str, float]] = {}
        with gzip.open(path, "rt") as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 6:
                    run.setdefault(parts[0], {})[parts[2]] = float(parts[4])
        runs.append(Run.from_dict(run, name=name))
    return Qrels.from_dict(qrels), runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--sample", type=int, default=15, help="runs given to ranx (pairs = C(sample, 2))")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    t0 = time.perf_counter()
    col = me.load_collection(qrels=args.data / "qrels.txt", runs=[args.data / "runs"])
    scores = me.score(col, "AP")
    load_s = time.perf_counter() - t0
    n_sys, n_top = scores.shape
    n_pairs = n_sys * (n_sys - 1) // 2
    print(f"TREC-COVID round 1: {n_sys} runs x {n_top} topics = {n_pairs} pairs (loaded and scored in {load_s:.2f} s)")
    print(f"threads: OMP/BLAS as configured, {os.cpu_count()} CPUs visible")

    boot_s, boot = best_time(lambda: paired_bootstrap(scores, col.systems, n_resamples=1000, seed=0), args.repeat)
    print(f"ours  paired bootstrap B=1000: {boot_s:.3f} s for {n_pairs} pairs ({boot_s / n_pairs * 1e6:.1f} us/pair); "
          f"{boot.n_significant()} significant at 0.05, diff required {boot.diff_required:.4f}")
    tukey_s, tk = best_time(lambda: tukey_hsd(scores, col.systems, n_resamples=5000, seed=0), args.repeat)
    print(f"ours  randomised Tukey HSD B=5000: {tukey_s:.3f} s; {tk.n_significant()} significant, "
          f"critical difference {tk.diff_required:.4f}")
    ours_peak = peak_mb()
    tracemalloc.start()
    paired_bootstrap(scores, col.systems, n_resamples=1000, seed=0)
    boot_alloc = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.reset_peak()
    tukey_hsd(scores, col.systems, n_resamples=5000, seed=0)
    tukey_alloc = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    print(f"peak memory: process {ours_peak:.0f} MB after loading and our runs (ru_maxrss); allocated by the "
          f"analysis itself (tracemalloc peak): bootstrap {boot_alloc:.0f} MB, Tukey {tukey_alloc:.0f} MB")

    from ranx import compare, evaluate

    rng = np.random.default_rng(0)
    sample = sorted(rng.choice(n_sys, size=min(args.sample, n_sys), replace=False))
    names = [col.systems[i] for i in sample]
    qrels, runs = ranx_inputs(args.data, names)
    peer_pairs = len(list(combinations(names, 2)))
    peer_s, _ = best_time(lambda: compare(qrels, runs, "map", stat_test="fisher", n_permutations=1000), args.repeat)
    eval_s, _ = best_time(lambda: [evaluate(qrels, r, "map", return_mean=False) for r in runs], args.repeat)
    student_s, _ = best_time(lambda: compare(qrels, runs, "map", stat_test="student"), args.repeat)
    tests_s = max(peer_s - eval_s, 1e-9)
    ours_pp = boot_s / n_pairs
    print(f"ranx  compare fisher n_perm=1000 on {len(names)} runs ({peer_pairs} pairs): {peer_s:.3f} s "
          f"({peer_s / peer_pairs * 1e6:.0f} us/pair); of which scoring {eval_s:.3f} s -> tests "
          f"{tests_s / peer_pairs * 1e6:.0f} us/pair")
    student_pp = (student_s - eval_s) / peer_pairs * 1e6
    print(f"ranx  compare student: {student_s:.3f} s ({student_pp:.0f} us/pair without scoring)")
    ratio_total = (peer_s / peer_pairs) / ours_pp
    ratio_tests = (tests_s / peer_pairs) / ours_pp
    print(f"per-pair speed-up (bootstrap B=1000 vs ranx fisher 1000 perms): {ratio_tests:.0f}x tests only, "
          f"{ratio_total:.0f}x against the whole compare call")
    verdict = {True: "ok", False: "MISSED"}
    print(f"targets: bootstrap < 2 s: {verdict[boot_s < 2]}; Tukey < 10 s: {verdict[tukey_s < 10]}; "
          f"speed-up >= 50x: {verdict[ratio_tests >= 50]}")
    print(
        f"BENCH name=discpower ours_s={boot_s:.4f} peer_s={tests_s / peer_pairs * n_pairs:.4f} "
        f"speedup={ratio_tests:.1f} peak_mb={ours_peak:.0f} total_s={boot_s + tukey_s:.4f}"
    )


if __name__ == "__main__":
    main()
