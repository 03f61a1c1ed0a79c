"""Scale benchmark: ``meta-eval evaluate`` on MS MARCO-shaped synthetic collections, per row and at the peak.

The collections have MS MARCO's shape (Nguyen et al. 2016; the TREC Deep Learning track's runs): thousands of
topics, passage ids drawn from a corpus of 8.8 M that rarely repeat across topics (each topic's runs draw from
a pool of its own, twice the depth), space-separated lines, scores with ties, two judgments per topic. At three
sizes (``--runs``: runs of ``--topics`` × ``--depth`` rows each) ``meta-eval evaluate`` (7 measures, reading in
pieces within ``--memory``) is timed, and, at the smallest size, a loop of the trec_eval 10 C program over the
same files, alternately. Every size reports µs per row (wall and CPU) and peak resident memory; the largest is
extrapolated to 100 runs × 7,000 topics × 1,000 depth (700 M rows): the time at its µs per row, the peak as the
peaks' growth from the middle size to the largest carried on to 100 runs (memory holds the runs being read, at most
one per thread ahead, and one piece of at most ``--memory``: it stops growing once the runs outnumber those).

Every size ends with a ``BENCH`` line; the machine's load average is printed beside every number (wall times on a
shared machine are noisy; CPU times less so).

Usage: python scripts/bench_scale.py [--runs 4 8 16] [--topics 7000] [--depth 1000] [--memory 256M] [--repeat 1]
       [--trec-eval10 PATH] [--cache DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_evaluate import TREC_EVAL, load, measure, meta_eval_cmd  # noqa: E402

CORPUS = 8_841_823  # MS MARCO passages
OURS = ["AP", "nDCG", "nDCG@10", "P@10", "Rprec", "RR", "bpref"]
TARGET_ROWS = 700_000_000  # 100 runs × 7,000 topics × 1,000 depth
TARGET_RUNS = 100


def make_collection(folder: Path, runs: int, topics: int, depth: int, seed: int = 0) -> tuple[Path, Path]:
    """Write ``folder/qrels.txt`` and ``folder/runs/run###.txt`` (see the module docstring); existing runs are
    kept (a larger size reuses a smaller one's)."""
    rng = np.random.default_rng(seed)
    (folder / "runs").mkdir(parents=True, exist_ok=True)
    pool = 2 * depth
    start = rng.integers(0, CORPUS, topics)  # topic t's pool: start + k × step (mod the corpus), k < 2 × depth
    step = rng.integers(1, CORPUS // pool, topics)
    topic_ids = pa.array([str(1_000_000 + t) for t in range(topics)])
    judged = np.stack([rng.integers(0, pool, topics), rng.integers(0, pool, topics)], axis=1)
    judged[:, 1] = np.where(judged[:, 1] == judged[:, 0], (judged[:, 0] + 1) % pool, judged[:, 1])
    qrels = pa.table({"topic": pc.take(topic_ids, pa.array(np.repeat(np.arange(topics), 2))),
                      "iter": pa.array(np.zeros(2 * topics, dtype=np.int64)),
                      "docid": _docids(np.repeat(start, 2), np.repeat(step, 2), judged.ravel()),
                      "grade": pa.array(np.tile([1, 0], topics))})
    _write(qrels, folder / "qrels.txt")
    for r in range(runs):
        path = folder / "runs" / f"run{r:03d}.txt"
        if path.exists():
            continue
        run_rng = np.random.default_rng([seed, r])
        picked = np.argsort(run_rng.random((topics, pool)), axis=1)[:, :depth]  # (T, D) pool positions
        t = np.repeat(np.arange(topics), depth)
        score = np.round(np.sort(run_rng.random((topics, depth)) * 20, axis=1)[:, ::-1], 2).ravel()  # ties
        table = pa.table({"topic": pc.take(topic_ids, pa.array(t)), "q0": pa.array(np.full(t.size, "Q0")),
                          "docid": _docids(start[t], step[t], picked.ravel()),
                          "rank": pa.array(np.tile(np.arange(1, depth + 1), topics)), "score": pa.array(score),
                          "tag": pa.array(np.full(t.size, f"run{r:03d}"))})
        _write(table, path)
    return folder / "qrels.txt", folder / "runs"


def _docids(start: np.ndarray, step: np.ndarray, position: np.ndarray) -> pa.Array:
    return pa.array((start + position * step) % CORPUS).cast(pa.string())


def _write(table: pa.Table, path: Path) -> None:
    options = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    pacsv.write_csv(table, path, options)


def evaluate_cmd(qrels: Path, runs: Path, memory: str) -> list[str]:
    return meta_eval_cmd("evaluate", "-Q", str(qrels), str(runs), *sum((["-m", m] for m in OURS), []),
                         "--memory", memory, "--no-progress")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs=3, default=[4, 8, 16])
    parser.add_argument("--topics", type=int, default=7000)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--memory", default="256M", help="evaluate's --memory (the budget of the lists held at once)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--trec-eval10", default=os.environ.get("META_EVAL_TREC_EVAL10") or shutil.which("trec_eval"))
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "meta-eval-scale")
    args = parser.parse_args()
    folder = args.cache / f"t{args.topics}-d{args.depth}"
    qrels, _ = make_collection(folder, max(args.runs), args.topics, args.depth)
    points = []
    for runs in sorted(args.runs):
        subset = folder / f"first{runs}"  # the first `runs` runs, linked
        subset.mkdir(exist_ok=True)
        for r in range(runs):
            link = subset / f"run{r:03d}.txt"
            if not link.exists():
                link.symlink_to(folder / "runs" / f"run{r:03d}.txt")
        rows = runs * args.topics * args.depth
        ours, peer = [], []
        for _ in range(args.repeat):  # alternated, so that a change of load weighs on both alike
            ours.append(measure(evaluate_cmd(qrels, subset, args.memory)))
            if args.trec_eval10 and runs == min(args.runs):
                loop = " ; ".join(f"{args.trec_eval10} {' '.join(TREC_EVAL)} {qrels} {subset / f'run{r:03d}.txt'}"
                                  for r in range(runs))
                peer.append(measure(loop))
        wall = statistics.median(x[0] for x in ours)
        cpu = statistics.median(x[1] for x in ours)
        peak = max(x[2] for x in ours)
        peer_s = statistics.median(x[0] for x in peer) if peer else float("nan")
        peer_cpu = statistics.median(x[1] for x in peer) if peer else float("nan")
        points.append((runs, rows, wall, cpu, peak))
        print(f"{runs} runs × {args.topics} topics × {args.depth} = {rows / 1e6:.0f} M rows: meta-eval {wall:.1f} s "
              f"wall ({1e6 * wall / rows:.3f} µs/row), {cpu:.1f} s CPU ({1e6 * cpu / rows:.3f} µs/row), peak "
              f"{peak:.0f} MB; trec_eval 10 loop {peer_s:.1f} s wall, {peer_cpu:.1f} s CPU (load {load()})")
        print(f"BENCH name=scale_{rows // 1_000_000}M ours_s={wall:.3f} peer_s={peer_s:.3f} "
              f"speedup={peer_s / wall:.2f} peak_mb={peak:.0f} rows={rows} us_per_row={1e6 * wall / rows:.4f} "
              f"cpu_s={cpu:.3f} cpu_us_per_row={1e6 * cpu / rows:.4f} peer_cpu_s={peer_cpu:.3f} "
              f"memory={args.memory} load={load()}")
    runs, rows, wall, cpu, peak = points[-1]
    slope = max((peak - points[1][4]) / (runs - points[1][0]), 0.0)  # MB per run, from the middle size on
    peak_700 = peak + slope * (TARGET_RUNS - runs)
    hours = wall / rows * TARGET_ROWS / 3600
    per_run = args.topics * args.depth / 1e6
    print(f"extrapolated to {TARGET_RUNS} runs × 7,000 topics × 1,000 depth ({TARGET_ROWS / 1e6:.0f} M rows): "
          f"{hours * 60:.0f} min at {1e6 * wall / rows:.3f} µs/row (CPU {1e6 * cpu / rows:.3f} µs/row), peak "
          f"{peak_700:.0f} MB ({peak:.0f} MB at {runs} runs + {slope:.1f} MB per further run of {per_run:.0f} M rows)")
    print(f"BENCH name=scale_700M_extrapolated ours_s={hours * 3600:.0f} peer_s=nan speedup=nan peak_mb={peak_700:.0f} "
          f"us_per_row={1e6 * wall / rows:.4f} fits_8gb={int(peak_700 <= 8192)} load={load()}")


if __name__ == "__main__":
    main()
