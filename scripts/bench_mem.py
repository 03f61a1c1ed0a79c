"""Benchmark: MEM lists/s per core for AP, nDCG, ERR, RR, Q and GAP at full depth, old and new solver side by side.

Lists: every TREC-COVID round-1 (run, topic) list that retrieved at least 5 relevant (grade >= 1) and 5 highly
relevant (grade 2) documents, at full depth (3,374 lists, mean length 870, grades 0/1/2); and a synthetic collection
with grades 0-3 at depth 1,000 (``scripts/make_synthetic.py --grade-share 0.6,0.2,0.12,0.08``: 36 runs x 20 topics,
the lists passing the same filter with grade 3 as the top grade), where ERR's failures and nDCG's speed at depth
1,000 are measured.

Speed per core: each metric is solved by ``solve_mem`` in a fresh process with one worker (after a warm-up on three
lists that loads the compiled kernels), timed by CPU time (``time.process_time``) and wall time; lists/s per core =
lists / CPU s. With ``--compare REF`` (a git ref of this repository, or the folder of another checkout) the same
runs are made with REF's code, ours and REF's alternating run by run (``--repeat`` rounds), so both see the same
load; the table gives the median CPU time of each side, the ratio REF / ours and the load average around each run.
Then the six metrics on TREC-COVID in one pass of ``--jobs`` workers (``solve_mems``, as ``meta-eval
informativeness`` and the study solve them): wall time, ours and REF alternating.

Unless ``--fast``: the embedded demo with AP, nDCG, ERR and two plug-ins written per list in a file and named by
``file.py:function`` (a polynomial: a derived form; a cascade: a prefix-state form) in one pass; and the reference
solvers of :mod:`meta_eval.statistics.maxent.reference` (cvxpy exponential cones for nDCG, scipy trust-constr for GAP) on
``--sample`` lists, their agreement with ours and the per-list speed-up. ``--others`` solves every other built-in
metric with a form on TREC-COVID.

The BENCH line: ``ours_s`` / ``peer_s`` the CPU seconds of the six metrics on TREC-COVID (peer: REF's solver with
``--compare``, else the reference solvers' mean per-list time times the lists), ``speedup`` their ratio; per metric
``<metric>_lps`` (lists/s per core, ours) and ``<metric>_x`` (REF / ours CPU); ``together_s`` (six metrics, one
pass, ``--jobs`` workers, wall; ``together_ref_s`` REF's); ``err_fail_covid``, ``err_fail_syn`` (ERR's failed
lists, %), ``ndcg1000_lps`` (nDCG lists/s per core at depth 1,000); ``load`` (mean 1-minute load average).

Usage: python scripts/bench_mem.py [--compare REF] [--repeat 3] [--jobs 2] [--data DIR] [--fast] [--sample 8]
       [--lists N] [--others] [--mix-covid]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "trec-covid-round1"
MEASURES = ("AP", "nDCG", "ERR", "RR", "Q", "GAP(g=0.5,0.5)")
SYNTHETIC = ("nDCG", "ERR")  # measured on the synthetic 0-3 collection (GAP(g=0.5,0.5) needs grades 0-2)
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
    """Peak resident memory of this process and of the worker processes it waited for (MB)."""
    return max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024


# ------------------------------------------------------------------------------------------------------------
# The worker: one timed solve in a fresh process, with whichever meta_eval is first on its path
# ------------------------------------------------------------------------------------------------------------

def worker(spec: dict) -> dict:
    """Solve ``spec["measures"]`` on the lists saved at ``spec["lists"]`` (one metric at a time with one worker, or
    all together with ``spec["jobs"]`` workers) and return the times and failures. Uses only what every version of
    the solver has (``solve_mem``, ``solve_mems``, ``ListBatch``), so it runs old code as well as new."""
    from meta_eval.statistics.maxent import solve_mem, solve_mems
    from meta_eval.statistics.maxent.batch import ListBatch

    with np.load(spec["lists"]) as f:
        batch = ListBatch(f["grades"], f["lengths"], f["counts"])
    # compiled kernels loaded (or compiled, the first time a code tree runs) and imports made outside the timing:
    # 64 lists spread over the batch, so the rarer paths (value matching near an extreme, faces) are compiled too
    warm = batch.subset(np.unique(np.linspace(0, batch.n_lists - 1, min(64, batch.n_lists)).astype(int)))
    for m in spec["measures"]:
        solve_mem(warm, m)
    out = {"load": os.getloadavg()[0]}
    if spec.get("together"):
        t0 = time.perf_counter()
        results = solve_mems(batch, list(spec["measures"]), jobs=spec["jobs"])
        out["wall"] = time.perf_counter() - t0
        out["failed"] = {m: int((r.status != 0).sum()) for m, r in zip(spec["measures"], results)}
    else:
        for m in spec["measures"]:
            c0, t0 = time.process_time(), time.perf_counter()
            res = solve_mem(batch, m)
            out[m] = {"cpu": time.process_time() - c0, "wall": time.perf_counter() - t0,
                      "failed": int((res.status != 0).sum()), "iterations": float(res.n_iter.mean())}
    out["load"] = (out["load"] + os.getloadavg()[0]) / 2
    return out


def run_worker(code: Path, spec: dict) -> dict:
    """:func:`worker` in a fresh process importing meta_eval from ``code``."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run([sys.executable, __file__, "--worker", json.dumps(spec)], capture_output=True, text=True,
                          env=env, cwd=str(code))
    if done.returncode != 0:
        raise RuntimeError(f"benchmark worker ({code}) failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def code_tree(ref: str, tmp: Path) -> Path:
    """The folder of REF's code: a checkout folder as given, or a git ref of this repository exported there."""
    if Path(ref).is_dir():
        return Path(ref).resolve()
    out = tmp / "ref"
    out.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


def save_lists(batch, path: Path) -> Path:
    np.savez(path, grades=batch.grades, lengths=batch.lengths, counts=batch.counts)
    return path


# ------------------------------------------------------------------------------------------------------------
# Side by side
# ------------------------------------------------------------------------------------------------------------

def side_by_side(trees: dict, lists: Path, measures, repeat: int) -> dict:
    """Per metric and side: every round's worker output, the sides alternating (ours first in even rounds)."""
    runs = {side: [] for side in trees}
    for k in range(repeat):
        for side in (list(trees) if k % 2 == 0 else list(trees)[::-1]):
            runs[side].append(run_worker(trees[side], {"lists": str(lists), "measures": list(measures)}))
    return runs


def per_core_table(label: str, runs: dict, measures, n_lists: int) -> dict:
    """Print lists/s per core (median CPU over rounds), the ratio to REF, failures; return the figures."""
    figures = {}
    sides = list(runs)
    print(f"\n{label}: {n_lists} lists, one process per metric and side, median of {len(runs['ours'])} round(s); "
          f"load average {np.mean([r['load'] for s in sides for r in runs[s]]):.1f}")
    print(f"  {'metric':16s} " + " ".join(f"{s + ' CPU s':>12s} {s + ' wall s':>12s} {s + ' lists/s':>13s}"
                                          for s in sides) + ("  REF/ours CPU" if len(sides) > 1 else "")
          + "  failed (ours/REF)  iterations")
    for m in measures:
        row, cpu = {}, {}
        for s in sides:
            cpu[s] = float(np.median([r[m]["cpu"] for r in runs[s]]))
            row[s] = (cpu[s], float(np.median([r[m]["wall"] for r in runs[s]])), n_lists / cpu[s])
        ratio = cpu["ref"] / cpu["ours"] if "ref" in cpu else np.nan
        failed = "/".join(str(runs[s][0][m]["failed"]) for s in sides)
        iters = "/".join(f"{runs[s][0][m]['iterations']:.1f}" for s in sides)
        print(f"  {m:16s} " + " ".join(f"{row[s][0]:12.2f} {row[s][1]:12.2f} {row[s][2]:13.0f}" for s in sides)
              + (f"  {ratio:12.2f}x" if len(sides) > 1 else "") + f"  {failed:>17s}  {iters}")
        figures[m] = {"lps": row["ours"][2], "cpu": cpu["ours"], "ref_cpu": cpu.get("ref", np.nan), "x": ratio,
                      "failed": runs["ours"][0][m]["failed"], "ref_failed": runs.get("ref", [{m: {}}])[0][m].get(
                          "failed", -1)}
    return figures


def together(trees: dict, lists: Path, jobs: int, repeat: int) -> dict:
    """The six metrics in one pass of ``jobs`` workers: wall seconds per side (median over rounds)."""
    walls = {side: [] for side in trees}
    loads = []
    for k in range(repeat):
        for side in (list(trees) if k % 2 == 0 else list(trees)[::-1]):
            out = run_worker(trees[side], {"lists": str(lists), "measures": list(MEASURES), "together": True,
                                           "jobs": jobs})
            walls[side].append(out["wall"])
            loads.append(out["load"])
    med = {side: float(np.median(w)) for side, w in walls.items()}
    print(f"\nsix metrics in one pass (solve_mems, {jobs} workers), median of {repeat}: "
          + ", ".join(f"{side} {med[side]:.1f} s wall" for side in med)
          + (f"; REF/ours {med['ref'] / med['ours']:.2f}x" if "ref" in med else "")
          + f"; load average {np.mean(loads):.1f} (target <= 30 s)")
    return med


# ------------------------------------------------------------------------------------------------------------
# In this process (our code): the demo mix, the reference solvers, the other metrics
# ------------------------------------------------------------------------------------------------------------

def mix(batch, jobs: int, label: str) -> tuple[float, float]:
    """Solve the mix of built-in metrics and two plug-ins (module docstring); (seconds, lowest converged fraction)."""
    from meta_eval.statistics.maxent import solve_mems
    from meta_eval.statistics.maxent import STATUS

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
              f"{'; ' + reasons if reasons else ''})")
    print(f"mix   {label:10s} {len(measures)} metrics ({batch.n_lists} lists, 2 plug-ins) in one pass: "
          f"{seconds:.1f} s wall")
    return seconds, lowest


def reference_solvers(batch, sample_size: int, seed: int, ours_cpu: dict) -> float:
    """The reference solvers on a sample; returns their mean per-list seconds summed over REFERENCE's metrics."""
    from meta_eval.statistics.maxent import reference_solve, solve_mem

    rng = np.random.default_rng(seed)
    sample = rng.choice(batch.n_lists, size=min(sample_size, batch.n_lists), replace=False)
    per_list = 0.0
    for m in REFERENCE:
        ours = solve_mem(batch.subset(sample), m)
        times, diffs = [], []
        reference_solve(batch.subset(sample[:1]), m)  # warm-up (cvxpy canonicalisation caches, imports)
        for k, i in enumerate(sample):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                ref = reference_solve(batch.subset(np.array([i])), m)
                times.append(time.perf_counter() - t0)
            if ref.status.startswith(("optimal", "`xtol`", "`gtol`")):
                diffs.append(abs(ours.entropy[k] - ref.entropy))
        mean = float(np.mean(times))
        per_list += mean
        print(f"peer  {m:16s} {mean:7.3f} s/list on {len(sample)} lists; per-list speed-up "
              f"{mean / (ours_cpu[m] / batch.n_lists):.0f}x; max |entropy difference| "
              f"{max(diffs, default=np.nan):.1e} ({len(diffs)} accurate reference solutions)")
    return per_list


def others(batch, jobs: int) -> None:
    from meta_eval.statistics.maxent import solve_mems
    from meta_eval.statistics.maxent import STATUS

    for res in solve_mems(batch, OTHERS, jobs=jobs):
        ok = res.status == 0
        reasons = ", ".join(f"{n} {STATUS[k]}" for k, n in enumerate(np.bincount(res.status, minlength=4)) if n and k)
        print(f"other {res.measure:16s} form {res.method}; converged {ok.sum()}/{batch.n_lists} "
              f"({100 * ok.mean():.1f} %{'; ' + reasons if reasons else ''})")


def synthetic_lists(tmp: Path):
    """The synthetic grades 0-3 collection at depth 1,000 (module docstring), filtered like TREC-COVID."""
    sys.path.insert(0, str(REPO / "scripts"))
    from make_synthetic import make_collection

    import meta_eval as me
    from meta_eval.statistics.maxent import lists_from_collection, select_lists

    qrels, runs = make_collection(tmp / "synthetic", 36, 20, 1000, seed=7, grade_share=(0.6, 0.2, 0.12, 0.08))
    return select_lists(lists_from_collection(me.load_collection(qrels=qrels, runs=[runs]))).batch


def sample(batch, size: int, seed: int):
    """A seeded sample of ``size`` lists (all of them for 0)."""
    if not 0 < size < batch.n_lists:
        return batch
    return batch.subset(np.sort(np.random.default_rng(seed).choice(batch.n_lists, size, replace=False)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--compare", metavar="REF", help="a git ref of this repository or another checkout's folder: "
                    "its solver is timed beside ours")
    ap.add_argument("--repeat", type=int, default=1, help="rounds of the side-by-side runs (sides alternate)")
    ap.add_argument("--jobs", type=int, default=2, help="workers of the six-metrics-in-one-pass run")
    ap.add_argument("--fast", action="store_true", help="leave out the demo mix and the reference solvers")
    ap.add_argument("--sample", type=int, default=8, help="lists solved by the reference solvers (per metric)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lists", type=int, default=0, help="a seeded sample of this many lists of each collection "
                    "(0: all)")
    ap.add_argument("--mix-covid", action="store_true", help="also solve the plug-in mix on the TREC-COVID lists")
    ap.add_argument("--others", action="store_true",
                    help="also every other built-in metric with a form (OTHERS) on the TREC-COVID lists")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return

    sys.path.insert(0, str(REPO))  # this checkout's meta_eval, whatever is installed
    import meta_eval as me
    from meta_eval.statistics.maxent import lists_from_collection, select_lists

    col = me.load_collection(qrels=args.data / "qrels.txt", runs=[args.data / "runs"])
    batch = sample(select_lists(lists_from_collection(col)).batch, args.lists, args.seed)
    L = batch.n_lists
    print(f"TREC-COVID: {L} lists pass the filter (of {len(col.systems) * len(col.topics)}); mean length "
          f"{batch.lengths.mean():.0f}, grades 0..{batch.n_grades - 1}; machine: {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        trees = {"ours": REPO}
        if args.compare:
            trees["ref"] = code_tree(args.compare, tmp)
            print(f"REF: {args.compare} ({trees['ref']})")
        covid = per_core_table("TREC-COVID, full depth", side_by_side(trees, save_lists(batch, tmp / "covid.npz"),
                               MEASURES, args.repeat), MEASURES, L)
        syn = sample(synthetic_lists(tmp), args.lists, args.seed)
        syn_table = per_core_table(f"synthetic grades 0-3, depth {syn.depth} (mean length {syn.lengths.mean():.0f})",
                                   side_by_side(trees, save_lists(syn, tmp / "syn.npz"), SYNTHETIC, args.repeat),
                                   SYNTHETIC, syn.n_lists)
        one_pass = together(trees, tmp / "covid.npz", args.jobs, args.repeat)

    ours_s = sum(covid[m]["cpu"] for m in MEASURES)
    if args.compare:
        peer_s = sum(covid[m]["ref_cpu"] for m in MEASURES)
    if not args.fast:
        print()
        mix(lists_from_collection(me.demo_collection()).batch, args.jobs, "demo")
        per_list = reference_solvers(batch, args.sample, args.seed, {m: covid[m]["cpu"] for m in MEASURES})
        if not args.compare:
            peer_s = per_list * L
    elif not args.compare:
        peer_s = np.nan
    if args.mix_covid:
        mix(batch, args.jobs, "trec-covid")
    if args.others:
        others(batch, args.jobs)
    slug = {"GAP(g=0.5,0.5)": "GAP"}
    per_metric = " ".join(f"{slug.get(m, m)}_lps={covid[m]['lps']:.0f} {slug.get(m, m)}_x={covid[m]['x']:.2f}"
                          for m in MEASURES)
    print(f"BENCH name=mem_per_core_covid ours_s={ours_s:.2f} peer_s={peer_s:.2f} speedup={peer_s / ours_s:.2f} "
          f"peak_mb={peak_mb():.0f} {per_metric} together_s={one_pass['ours']:.2f} "
          + (f"together_ref_s={one_pass['ref']:.2f} " if "ref" in one_pass else "")
          + f"err_fail_covid={100 * covid['ERR']['failed'] / L:.2f} "
          f"err_fail_syn={100 * syn_table['ERR']['failed'] / syn.n_lists:.2f} "
          f"ndcg1000_lps={syn_table['nDCG']['lps']:.0f} load={os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
