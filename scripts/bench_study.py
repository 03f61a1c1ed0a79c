"""Benchmark: ``meta-eval study`` on TREC-COVID round 1 with ``--jobs 2`` against ``--jobs 1`` (every core against one).

Each run is a whole ``meta-eval study`` process with the default metrics and budgets (AP, nDCG@10, Q, ERR against GAP
and nDCG; MEM on 300 lists plus GAP's 11-point g grid); the runs alternate between the two settings so that a change
in the machine's speed touches both. The stage timings come from each report's ``manifest.json``; the median over
``--repeat`` runs is printed per stage. The BENCH line gives the informativeness stage (the issue's measure) with
``--jobs 2`` as ours and ``--jobs 1`` as the peer, and the whole study beside it. Both settings write the same
CSVs (checked here too).

Usage: python scripts/bench_study.py [--data ../shared/data/trec-covid-round1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_evaluate import ROOT, measure, meta_eval_cmd  # noqa: E402  (a whole process: wall, CPU, peak memory)


def study(data: Path, jobs: int, out: Path) -> dict[str, float]:
    """One whole ``meta-eval study`` process: its stage timings, wall and CPU time and peak memory."""
    wall, cpu, peak_mb = measure(meta_eval_cmd("study", "-Q", str(data / "qrels.txt"), str(data / "runs"), "--jobs",
                                               str(jobs), "-o", str(out), "--no-progress"))
    timings = json.loads((out / "manifest.json").read_text())["timings_s"]
    return dict(timings, wall=wall, cpu=cpu, peak_mb=peak_mb)


def csvs(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.csv"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/trec-covid-round1")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs: dict[int, list[dict[str, float]]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            for jobs in (2, 1):
                out = Path(tmp) / f"jobs{jobs}-{i}"
                runs[jobs].append(study(args.data, jobs, out))
                print(f"--jobs {jobs}: informativeness {runs[jobs][-1]['informativeness']:.1f} s, "
                      f"study {runs[jobs][-1]['wall']:.1f} s, load {os.getloadavg()[0]:.1f}", flush=True)
        same = csvs(Path(tmp) / "jobs1-0") == csvs(Path(tmp) / "jobs2-0")
    median = {jobs: {key: statistics.median(r[key] for r in rs) for key in rs[0]} for jobs, rs in runs.items()}
    print(f"{'stage':>22}  {'--jobs 1':>9}  {'--jobs 2':>9}  speed-up (medians of {args.repeat})")
    for stage in median[1]:
        one, two = median[1][stage], median[2][stage]
        print(f"{stage:>22}  {one:9.2f}  {two:9.2f}  {one / two if two else float('nan'):.2f}")
    speedups = [a["informativeness"] / b["informativeness"] for a, b in zip(runs[1], runs[2])]
    print(f"BENCH name=study_informativeness_jobs2 ours_s={median[2]['informativeness']:.2f} "
          f"peer_s={median[1]['informativeness']:.2f} "
          f"speedup={median[1]['informativeness'] / median[2]['informativeness']:.2f} "
          f"speedup_min={min(speedups):.2f} speedup_max={max(speedups):.2f} peak_mb={median[2]['peak_mb']:.0f} "
          f"study_jobs2_s={median[2]['wall']:.1f} study_jobs1_s={median[1]['wall']:.1f} identical_csvs={same}")


if __name__ == "__main__":
    main()
