"""Benchmark: MEM for AP, nDCG, ERR, RR, Q and GAP on every filtered TREC-COVID round-1 list, full depth.

Ours: the batched solver (:func:`meta_eval.mem.solve_mem`) on every (run, topic) list that retrieved at least 5
relevant (grade >= 1) and 5 highly relevant (grade 2) documents, full depth, grades 0/1/2. Peer: the reference
solvers of :mod:`meta_eval.mem.reference` (cvxpy/Clarabel exponential-cone program for nDCG, scipy trust-constr for
GAP), one list at a time, on a random sample of the same lists, in the same process. The per-list speed-up compares
mean per-list times; ``peer_s`` extrapolates the reference's mean per-list time to all lists. The agreement of the
maximum entropies on the sample is printed too (reference solutions with constraint residual > 1e-7 are reported
as inaccurate and left out of the agreement figure).

Per metric: wall and CPU time, converged fraction, failure reasons, how the expected-value form was obtained
(declared, derived, prefix-state, sampled). Then the six metrics again in one pass of the workers
(:func:`meta_eval.mem.solve_mems`, as ``meta-eval informativeness`` and the study solve them), checked identical.

The mix: on the embedded demo collection (every list, full depth), AP, nDCG, ERR and two plug-ins written per list
in a file, named by ``file.py:function`` as a user would -- a polynomial one (AP written by hand: a derived form)
and a cascade (1/rank of the first top-grade document: a prefix-state form) -- in one pass of the workers, with
how each form was found, its verification residual and the failure rates (``--mix-covid`` runs the mix on the
TREC-COVID lists too).

The BENCH line carries ``total_s`` (all six metrics, one at a time), ``together_s`` (in one pass), ``min_converged``
(the lowest converged fraction over the six metrics), ``mix_demo_s`` and ``mix_min_converged``.

Usage: python scripts/bench_mem.py [--data ../shared/data/trec-covid-round1] [--sample 8] [--seed 0] [--jobs 1]
       [--mix-covid] [--others]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import meta_eval as me
from meta_eval.mem import lists_from_collection, reference_solve, select_lists, solve_mem, solve_mems

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "trec-covid-round1"
MEASURES = ("AP", "nDCG", "ERR", "RR", "Q", "GAP(g=0.5,0.5)")
OTHERS = ("P@10", "Recall@100", "Rprec", "DCG", "nDCG@10", "nDCG(gain=exp)", "RBP", "GenAP", "nERR", "Success@10")
REFERENCE = ("GAP(g=0.5,0.5)", "nDCG")  # the reference solvers: scipy trust-constr (pairwise), cvxpy (linear)
PLUGINS = '''"""Two user metrics for the MEM benchmark, written for one list as a user would."""
import numpy as np
import meta_eval as me


@me.per_list
def hand_ap(grades, counts):
    """AP written by hand: a polynomial of degree 2 in the grade indicators."""
    rel = np.asarray(grades) >= 1
    R = counts[1:].sum()
    return float(np.sum(rel * np.cumsum(rel) / np.arange(1, len(rel) + 1)) / R) if R else 0.0


@me.per_list
def first_top(grades, counts):
    """1 / rank of the first document of the top grade: a cascade."""
    hits = np.flatnonzero(np.asarray(grades) >= len(counts) - 1)
    return 1.0 / (hits[0] + 1) if hits.size else 0.0
'''


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def mix(batch, jobs: int, label: str) -> tuple[float, float]:
    """Solve the mix of built-in metrics and two plug-ins (module docstring); (seconds, lowest converged fraction)."""
    from meta_eval.mem.result import STATUS

    with tempfile.TemporaryDirectory() as tmp:
        plugin = Path(tmp) / "bench_plugins.py"
        plugin.write_text(PLUGINS)
        measures = ["AP", "nDCG", "ERR", f"{plugin}:hand_ap", f"{plugin}:first_top"]
        t0 = time.perf_counter()
        results = solve_mems(batch, measures, jobs=jobs)
        seconds = time.perf_counter() - t0
    lowest = 1.0
    for res in results:
        ok = res.status == 0
        lowest = min(lowest, ok.mean())
        reasons = ", ".join(f"{n} {STATUS[k]}" for k, n in enumerate(np.bincount(res.status, minlength=4)) if n and k)
        form = res.info.get("form", "")
        print(f"mix   {label:10s} {res.measure:12s} form {res.method}{' (' + form + ')' if form else ''}; "
              f"residual {res.form_residual:.1e}; converged {ok.sum()}/{len(ok)} ({100 * ok.mean():.1f} %"
              f"{'; ' + reasons if reasons else ''}; failure rate {100 * (1 - ok.mean()):.1f} %)")
    print(f"mix   {label:10s} {len(measures)} metrics ({batch.n_lists} lists, 2 plug-ins) in one pass: "
          f"{seconds:.1f} s wall")
    return seconds, lowest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--sample", type=int, default=8, help="lists solved by the reference solvers (per metric)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes for the solver (meta_eval.parallel)")
    ap.add_argument("--mix-covid", action="store_true", help="also solve the plug-in mix on the TREC-COVID lists")
    ap.add_argument("--others", action="store_true",
                    help="also every other built-in metric with a form (OTHERS) on the TREC-COVID lists")
    args = ap.parse_args()

    demo = lists_from_collection(me.demo_collection()).batch
    mix_s, mix_conv = mix(demo, args.jobs, "demo")

    col = me.load_collection(qrels=args.data / "qrels.txt", runs=[args.data / "runs"])
    lists = select_lists(lists_from_collection(col))
    batch = lists.batch
    L = batch.n_lists
    print(f"{L} lists pass the filter (of {len(col.systems) * len(col.topics)}); "
          f"mean length {batch.lengths.mean():.0f}, grades 0..{batch.n_grades - 1}")

    from meta_eval.mem.result import STATUS

    ours, results, converged = {}, {}, {}
    for m in MEASURES:
        t0, c0 = time.perf_counter(), time.process_time()
        res = solve_mem(batch, m, jobs=args.jobs)
        ours[m] = time.perf_counter() - t0
        results[m] = res
        ok = res.status == 0
        converged[m] = ok.mean()
        reasons = ", ".join(f"{n} {STATUS[k]}" for k, n in enumerate(np.bincount(res.status, minlength=4)) if n and k)
        print(f"ours  {m:16s} {ours[m]:7.2f} s wall {time.process_time() - c0:7.2f} s CPU "
              f"({1e3 * ours[m] / L:.2f} ms/list) form {res.method}; converged {ok.sum()}/{L} "
              f"({100 * ok.mean():.1f} %{'; ' + reasons if reasons else ''}); max residual "
              f"{np.nanmax(res.max_residual[ok]):.1e}; iterations median {np.median(res.n_iter):.0f} "
              f"max {res.n_iter.max()}")
    total = sum(ours.values())
    # the same six metrics in one pass of the workers (what `meta-eval informativeness` and the study do)
    t0 = time.perf_counter()
    together = solve_mems(batch, MEASURES, jobs=args.jobs)
    together_s = time.perf_counter() - t0
    same = all(np.array_equal(a.P, results[m].P, equal_nan=True) for m, a in zip(MEASURES, together))
    print(f"ours  all six in one pass (solve_mems): {together_s:.1f} s wall, against {total:.1f} s one metric at a "
          f"time; identical distributions: {same}")

    rng = np.random.default_rng(args.seed)
    sample = rng.choice(L, size=min(args.sample, L), replace=False)
    ref_time = {}
    for m in REFERENCE:
        times, diffs = [], []
        reference_solve(batch.subset(sample[:1]), m)  # warm-up (cvxpy canonicalisation caches, imports)
        for i in sample:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                ref = reference_solve(batch.subset(np.array([i])), m)
                times.append(time.perf_counter() - t0)
            if ref.status.startswith(("optimal", "`xtol`", "`gtol`")):
                diffs.append(abs(results[m].entropy[i] - ref.entropy))
            else:
                print(f"  reference {m} list {i}: {ref.status}")
        ref_time[m] = float(np.mean(times))
        print(f"peer  {m:16s} {ref_time[m]:7.3f} s/list on {len(sample)} lists; per-list speed-up "
              f"{ref_time[m] / (ours[m] / L):.0f}x; max |entropy difference| {max(diffs, default=np.nan):.1e} "
              f"({len(diffs)} accurate reference solutions)")
    ref_per_list = sum(ref_time.values())
    ours_per_list = sum(ours[m] for m in REFERENCE) / L
    speedup = ref_per_list / ours_per_list
    print(f"total wall time (six metrics, all lists): {total:.1f} s (target <= 60 s); "
          f"per-list speed-up on {', '.join(REFERENCE)} {speedup:.0f}x")
    if args.mix_covid:
        mix(batch, args.jobs, "trec-covid")
    if args.others:
        for res in solve_mems(batch, OTHERS, jobs=args.jobs):
            ok = res.status == 0
            reasons = ", ".join(f"{n} {STATUS[k]}" for k, n in enumerate(np.bincount(res.status, minlength=4))
                                if n and k)
            print(f"other {res.measure:16s} form {res.method}; converged {ok.sum()}/{L} ({100 * ok.mean():.1f} %"
                  f"{'; ' + reasons if reasons else ''})")
    print(f"BENCH name=mem_six_metrics_covid ours_s={total:.2f} peer_s={ref_per_list * L:.1f} speedup={speedup:.0f} "
          f"peak_mb={peak_mb():.0f} total_s={total:.2f} together_s={together_s:.2f} "
          f"min_converged={min(converged.values()):.4f} mix_demo_s={mix_s:.2f} mix_min_converged={mix_conv:.4f}")


if __name__ == "__main__":
    main()
