"""Benchmark: read all TREC-COVID round-1 runs and score 8 measures, meta-eval vs pytrec_eval, in one process.

Measures: AP, GAP, nDCG, nDCG@10, P@5, Rprec, RR, bpref (pytrec_eval: the same minus GAP, which it lacks).
Both sides include parsing (gzip + text) and scoring; the qrels are parsed by each side. Prints both wall times,
the ratio and the peak resident memory of the process, then one ``BENCH`` line.

Usage: python scripts/bench_evaluate.py [--data ../shared/data/trec-covid-round1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gzip
import resource
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/trec-covid-round1")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
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
