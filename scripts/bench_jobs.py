"""Benchmark: ``--jobs`` above the usable cores, capped (ours) against uncapped (peer: a checkout without the cap).

The same command, ``meta-eval discpower`` on the demo collection (four metrics, the paired bootstrap and the
randomised Tukey HSD), run in turn (alternating, so load drifts touch both sides alike): ours with ``-j JOBS``
(capped at the usable cores, with a one-line note), the peer checkout with ``-j JOBS`` (as many workers as asked),
and ours with the default (automatic) choice. Each run is a fresh process; its CPU time is that of the process and
of every worker it waited for (``RUSAGE_CHILDREN``), beside its wall time; the load average is printed before and
after. ``peer_s``/``ours_s`` are the medians of the wall times.

Usage: python scripts/bench_jobs.py --peer /path/to/checkout/without/the/cap [--jobs 16] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMMAND = ["discpower", "-m", "AP", "-m", "nDCG", "-m", "P@10", "-m", "RR", "--method", "bootstrap", "--method",
           "tukey", "-B", "2000", "--top", "0", "--no-progress"]


def run_once(code: Path, jobs: str | None) -> tuple[float, float, float]:
    """(wall s, CPU s of the process and its workers, peak MB of the largest of them) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "PYTHONPATH": str(code)}
    with tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", "from meta_eval.cli import run; run()", *COMMAND,
                               *(["-j", jobs] if jobs else []), "-o", f"{scratch}/out"], env=env, cwd=scratch,
                              capture_output=True, text=True)
        wall = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"{code}: exit {done.returncode}\n{done.stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", type=Path, required=True, help="a checkout of meta-eval without the cap")
    parser.add_argument("--jobs", default="16")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sides = {"ours -j": (REPO, args.jobs), "peer -j": (args.peer, args.jobs), "ours default": (REPO, None)}
    times: dict[str, list[tuple[float, float, float]]] = {name: [] for name in sides}
    print(f"load average before: {os.getloadavg()}; usable cores: {len(os.sched_getaffinity(0))}")
    for _ in range(args.repeat):
        for name, (code, jobs) in sides.items():  # alternating
            times[name].append(run_once(code, jobs))
            wall, cpu, _ = times[name][-1]
            print(f"{name:13s} wall {wall:6.2f} s  cpu {cpu:6.2f} s  load {os.getloadavg()[0]:.2f}", flush=True)
    median = {name: statistics.median(w for w, _, _ in runs) for name, runs in times.items()}
    cpu = {name: statistics.median(c for _, c, _ in runs) for name, runs in times.items()}
    for name in sides:
        print(f"{name:13s} median wall {median[name]:.2f} s, median cpu {cpu[name]:.2f} s")
    print(f"load average after: {os.getloadavg()}")
    peak = max(p for _, _, p in times["ours -j"])
    print(f"BENCH name=jobs_cap ours_s={median['ours -j']:.2f} peer_s={median['peer -j']:.2f} "
          f"speedup={median['peer -j'] / median['ours -j']:.2f} peak_mb={peak:.0f} jobs={args.jobs} "
          f"default_s={median['ours default']:.2f} ours_cpu_s={cpu['ours -j']:.2f} peer_cpu_s={cpu['peer -j']:.2f}")


if __name__ == "__main__":
    main()
