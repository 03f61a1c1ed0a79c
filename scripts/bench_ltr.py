"""Benchmark: time per boosting round of LambdaMART trained for a metric (meta-eval's custom objective: |ΔM| swap
deltas in numpy, called by LightGBM every round) against LightGBM's built-in C++ ``lambdarank``, on the MSLR-WEB
sample (its train file: 43 queries, 5,000 documents, up to 308 per query, labels 0-4).

Both sides train the same booster (same parameters, one thread, no validation set) for ``--rounds`` rounds; the
time per round is the best of ``--repeat`` runs. Custom objectives: nDCG(gain=exp) (LightGBM's own gain),
GAP (closed-form deltas), AP, and RR through the general batched path. The target of issue 11 is a custom round
within 3x of the built-in for nDCG and GAP. The BENCH line reports GAP (``ours_s``) against the built-in
(``peer_s``), plus the nDCG ratio.

Usage: python scripts/bench_ltr.py [--data ../shared/data/mslr-sample] [--rounds 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import lightgbm as lgb

from meta_eval.inputs.letor import read_letor
from meta_eval.statistics.learning_to_rank.lambdamart import DEFAULT_PARAMS, MetricObjective

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "mslr-sample"


def per_round(train, objective, rounds: int, repeat: int) -> float:
    params = {**DEFAULT_PARAMS, "seed": 0, "objective": objective, "metric": "None"}
    best = float("inf")
    for _ in range(repeat):
        data = lgb.Dataset(train.X, train.y, group=train.sizes, free_raw_data=False)
        data.construct()  # binning is the same for both sides: time the rounds only
        start = time.perf_counter()
        lgb.train(params, data, num_boost_round=rounds)
        best = min(best, (time.perf_counter() - start) / rounds)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not args.data.exists():
        raise SystemExit(f"no data at {args.data} (the MSLR sample lives in ../shared/data/mslr-sample)")
    train = read_letor(args.data / "train.txt.gz")
    print(f"{train.n_queries} queries, {len(train.y)} documents (largest query {train.sizes.max()}), "
          f"{args.rounds} rounds, best of {args.repeat}")
    builtin = per_round(train, "lambdarank", args.rounds, args.repeat)
    print(f"  LightGBM lambdarank (built-in)  {builtin * 1e3:7.2f} ms/round")
    times = {}
    for name in ("nDCG(gain=exp)", "GAP", "AP", "RR"):
        objective = MetricObjective(name, train, train.max_label)
        times[name] = per_round(train, objective, args.rounds, args.repeat)
        print(f"  custom objective, {name:<14}  {times[name] * 1e3:7.2f} ms/round  "
              f"({times[name] / builtin:.2f}x the built-in)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    gap, ndcg = times["GAP"], times["nDCG(gain=exp)"]
    print(f"BENCH name=ltr_lambdamart_round ours_s={gap:.4f} peer_s={builtin:.4f} speedup={builtin / gap:.2f} "
          f"peak_mb={peak:.0f} ndcg_ours_s={ndcg:.4f} ndcg_ratio={ndcg / builtin:.2f} gap_ratio={gap / builtin:.2f} "
          f"rr_general_s={times['RR']:.4f}")


if __name__ == "__main__":
    main()
