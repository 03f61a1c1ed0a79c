"""Benchmark: robustness to incomplete judgments on TREC-COVID round 1 (143 runs x 30 topics, depth 1000).

Ours: ``meta_eval.statistics.incomplete_judgments.incomplete_judgments`` for 6 metrics (AP, nDCG, nDCG@10, P@10, bpref, GAP) x 9 fractions
(0.1 .. 0.9) x 20 seeded draws, in the standard and the condensed form: every run re-scored under 180 reduced
qrels, τ_b / τ_AP against the full-qrels ranking and t-test discriminative power for each. Budget: < 60 s on 2 cores.

Peer: no Python package does this analysis; the usual route is to write each reduced qrels and re-evaluate every
run with pytrec_eval (trec_eval 9.0.8 inside), once per form (``judged_docs_only_flag`` gives the condensed form).
The peer evaluates the 5 of our 6 metrics it has (no GAP) on a sample of the same reduced qrels, and its time per
qrels is extrapolated to all 180 (``peer_s`` in the BENCH line; ``peer_combos`` says how many were timed). As a
check, AP from both sides under the first reduced qrels is compared (our collection loaded with 32-bit scores,
as pytrec_eval orders documents by float scores): ``check_max_abs_diff``.

Usage: python scripts/bench_meta.py [--data ../shared/data/trec-covid-round1] [--jobs 2] [--draws 20]
       [--peer-combos 3]
"""

from __future__ import annotations

import argparse
import gzip
import os
import resource
import time
from pathlib import Path

import numpy as np

import meta_eval as me
from meta_eval.statistics.incomplete_judgments import incomplete_judgments, judgment_masks

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "trec-covid-round1"
MEASURES = ["AP", "nDCG", "nDCG@10", "P@10", "bpref", "GAP"]
PEER_MEASURES = {"AP": "map", "nDCG": "ndcg", "nDCG@10": "ndcg_cut_10", "P@10": "P_10", "bpref": "bpref"}
FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def cpu_seconds() -> float:
    """User + system CPU time of this process and its finished children (the worker processes, once shut down)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def peak_mb(who=resource.RUSAGE_SELF) -> float:
    """Peak resident memory so far, in MB (Linux ru_maxrss is in KB): of this process, or of the largest finished
    child (the worker processes, once shut down)."""
    return resource.getrusage(who).ru_maxrss / 1024


def read_runs(data: Path) -> dict[str, dict[str, dict[str, float]]]:
    runs = {}
    for path in sorted((data / "runs").glob("*.gz")):
        run: dict[str, dict[str, float]] = {}
        with gzip.open(path, "rt") as f:
            for line in f:
                topic, _, doc, _, score, _ = line.split()
                run.setdefault(topic, {})[doc] = float(score)
        runs[path.name[:-3]] = run
    return runs


def reduced_qrels(col, keep: np.ndarray) -> dict[str, dict[str, int]]:
    j = col.judgments
    names = col.doc_names.to_pylist()
    qrels: dict[str, dict[str, int]] = {t: {} for t in col.topics}
    for t, d, g in zip(j.topic[keep], j.doc[keep], j.grade[keep]):
        qrels[col.topics[t]][names[d]] = int(g)
    return qrels


def peer_once(qrels, runs) -> dict[str, dict]:
    import pytrec_eval

    out = {}
    for form, flag in (("standard", False), ("condensed", True)):
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(PEER_MEASURES.values()), judged_docs_only_flag=flag)
        out[form] = {name: evaluator.evaluate(run) for name, run in runs.items()}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--peer-combos", type=int, default=3)
    args = ap.parse_args()

    t0 = time.perf_counter()
    col = me.load_collection(args.data / "qrels.txt", [args.data / "runs"])
    load_s = time.perf_counter() - t0
    print(f"loaded {col} in {load_s:.1f} s; {len(col.judgments)} judgments")

    load0 = os.getloadavg()[0]  # other jobs on the machine stretch the wall time; CPU time shows the work
    t0, cpu0 = time.perf_counter(), cpu_seconds()
    res = incomplete_judgments(col, MEASURES, fractions=FRACTIONS, n_draws=args.draws, n_jobs=args.jobs,
                               progress=True)
    ours_s = time.perf_counter() - t0
    if args.jobs > 1:
        from joblib.externals.loky import get_reusable_executor

        get_reusable_executor().shutdown(wait=True)
    worker_mb = peak_mb(resource.RUSAGE_CHILDREN)
    cpu_s = cpu_seconds() - cpu0
    combos = len(FRACTIONS) * args.draws
    print(f"ours: {len(MEASURES)} metrics x {len(FRACTIONS)} fractions x {args.draws} draws x 2 forms "
          f"in {ours_s:.1f} s ({args.jobs} jobs; {cpu_s:.1f} s of CPU time; load average before "
          f"{load0:.1f})")
    table = res.min_fraction(0.9)
    print(table.to_string(index=False))

    runs = read_runs(args.data)
    masks = judgment_masks(col, FRACTIONS, args.draws, seed=0).reshape(combos, -1)
    picks = np.linspace(0, combos - 1, args.peer_combos).astype(int)
    qrels = [reduced_qrels(col, masks[i]) for i in picks]
    t0 = time.perf_counter()
    peer = [peer_once(q, runs) for q in qrels]
    peer_each = (time.perf_counter() - t0) / len(picks)
    peer_s = peer_each * combos
    print(f"peer (pytrec_eval, 5 metrics, both forms): {peer_each:.2f} s per reduced qrels, x {combos} = "
          f"{peer_s:.0f} s (extrapolated from {len(picks)})")

    col32 = me.load_collection(args.data / "qrels.txt", [args.data / "runs"], score_precision="float32")
    ours_ap = me.score(col32.with_judgments(masks[picks[0]]), "AP")
    theirs = peer[0]["standard"]
    diff = max(abs(ours_ap[s, t] - theirs[name].get(topic, {}).get("map", 0.0))
               for s, name in enumerate(col32.systems) for t, topic in enumerate(col32.topics))
    print(f"check: AP under reduced qrels #{picks[0]}, ours vs pytrec_eval, max |diff| = {diff:.2e}")
    print(f"BENCH name=meta_incomplete_judgments ours_s={ours_s:.2f} peer_s={peer_s:.1f} "
          f"speedup={peer_s / ours_s:.1f} peak_mb={peak_mb():.0f} worker_peak_mb={worker_mb:.0f} combos={combos} "
          f"metrics={len(MEASURES)} jobs={args.jobs} cpu_s={cpu_s:.1f} load={load0:.1f} peer_combos={len(picks)} "
          f"check_max_abs_diff={diff:.1e} load_s={load_s:.1f}")


if __name__ == "__main__":
    main()
