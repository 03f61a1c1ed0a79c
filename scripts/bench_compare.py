"""Benchmark: comparing runs with significance tests on TREC-COVID round 1, ``me.compare`` beside ranx ``compare``.

The daily task: a sample of runs, every pair compared under AP and nDCG@10 with a paired randomisation test (1000
sign vectors; ranx: Fisher's randomisation test with 1000 permutations) and with the paired t-test. Both sides
start from their own in-memory inputs (our Collection, ranx's Qrels/Runs), score the runs and run the tests; the
timings are the best of ``--repeat`` calls after one warm-up (numba JIT excluded for ranx). Also checked: both sides
agree on the t-test p-values (same per-topic scores, same scipy test).

Usage: python scripts/bench_compare.py [--data ../shared/data/trec-covid-round1] [--sample 15] [--repeat 3]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import meta_eval as me

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_discpower import DEFAULT_DATA, best_time, peak_mb, ranx_inputs  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--sample", type=int, default=15, help="runs compared (pairs = C(sample, 2))")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    full = me.load_collection(qrels=args.data / "qrels.txt", runs=[args.data / "runs"])
    rng = np.random.default_rng(0)
    names = [full.systems[i] for i in sorted(rng.choice(len(full.systems), size=args.sample, replace=False))]
    col = full.subset(systems=names)
    pairs = args.sample * (args.sample - 1) // 2
    print(f"TREC-COVID round 1: {len(names)} runs x {len(col.topics)} topics, {pairs} pairs x 2 measures")

    def ours(test: str):
        return me.compare(col, ["AP", "nDCG@10"], all_pairs=True, test=test, correction="none", n_resamples=1000)

    ours_rand_s, rand = best_time(lambda: ours("randomisation"), args.repeat)
    ours_t_s, student = best_time(lambda: ours("t"), args.repeat)
    print(f"ours  randomisation B=1000: {ours_rand_s:.3f} s; t-test: {ours_t_s:.3f} s "
          f"({int(rand.significant().sum())} / {int(student.significant().sum())} significant at 0.05)")
    ours_peak = peak_mb()

    from ranx import compare

    qrels, runs = ranx_inputs(args.data, names)
    metrics = ["map", "ndcg@10"]
    peer_rand_s, _ = best_time(lambda: compare(qrels, runs, metrics, stat_test="fisher", n_permutations=1000),
                               args.repeat)
    peer_t_s, report = best_time(lambda: compare(qrels, runs, metrics, stat_test="student"), args.repeat)
    print(f"ranx  fisher n_perm=1000: {peer_rand_s:.3f} s; student: {peer_t_s:.3f} s")

    # t-test p-values (ranx: report.to_dict()[model]["comparisons"][other][metric]). ranx breaks score ties its own
    # way, so its per-topic AP differs slightly from trec_eval's; on ranx's own per-topic scores the tests agree.
    from ranx import evaluate

    peer = report.to_dict()
    ranx_ap = {"AP": np.array([evaluate(qrels, r, "map", return_mean=False) for r in runs])}
    score_diff = float(np.abs(ranx_ap["AP"] - me.score(col, "AP")).max())
    same_scores = me.compare(ranx_ap, systems=names, all_pairs=True, test="t", correction="none")
    table = same_scores.table.set_index(["run", "baseline", "measure"]).p_value
    diffs = [abs(peer[a]["comparisons"][b]["map"] - table[a, b, "AP"]) for i, a in enumerate(names)
             for b in names[i + 1:]]
    print(f"per-topic AP, ours vs ranx: max |difference| {score_diff:.1e} (tie-breaking); t-test p-values on "
          f"ranx's scores, ours vs ranx: max |difference| {max(diffs):.1e}")
    speedup = peer_rand_s / ours_rand_s
    print(f"speed-up: randomisation {speedup:.1f}x, t-test {peer_t_s / ours_t_s:.1f}x")
    print(f"BENCH name=compare ours_s={ours_rand_s:.4f} peer_s={peer_rand_s:.4f} speedup={speedup:.1f} "
          f"peak_mb={ours_peak:.0f} t_ours_s={ours_t_s:.4f} t_peer_s={peer_t_s:.4f} max_p_diff={max(diffs):.1e}")


if __name__ == "__main__":
    main()
