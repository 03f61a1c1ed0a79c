"""Benchmark: the formal properties of AP, nDCG@10, P@10, RR, RBP, ERR, GAP, DCG and a plug-in at the default
search sizes (the goal: under 30 s on 2 cores).

Two measurements, alternated and each the best of ``--repeat`` runs: the command a user runs, ``meta-eval analysis
properties -m ...`` in a fresh process (imports, the demo collection it scores the metrics on, the report printed;
wall and CPU time and peak memory: the BENCH line's ``ours_s``, ``cpu_s``, ``peak_mb``), and the function
:func:`meta_eval.statistics.metric_properties.formal.formal_properties` in this process (``function_s``, ``function_cpu_s``). There is
no peer tool, so ``peer_s=nan``. The load average is printed beside every timing: other jobs on the machine stretch
the wall time, not the CPU time.

Usage: python scripts/bench_properties.py [--repeat 3] [--plugin tests/data/my_metric.py:grbp]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_evaluate import measure, meta_eval_cmd  # noqa: E402  (a whole process: wall, CPU, peak memory)

REPO = Path(__file__).resolve().parents[1]
METRICS = ("AP", "nDCG@10", "P@10", "RR", "RBP", "ERR", "GAP", "DCG")


def peak_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux ru_maxrss is in KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def in_process(metrics: list[str]) -> tuple[float, float, object]:
    from meta_eval.statistics.metric_properties.formal import formal_properties

    w0, c0 = time.perf_counter(), time.process_time()
    res = formal_properties(metrics)
    return time.perf_counter() - w0, time.process_time() - c0, res


def command(metrics: list[str]) -> tuple[float, float, float]:
    """Wall time, CPU time and peak memory of ``meta-eval analysis properties -m ...`` as its own process."""
    return measure(meta_eval_cmd("analysis", "properties", *sum((["-m", m] for m in metrics), [])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--plugin", default=str(REPO / "tests" / "data" / "my_metric.py") + ":grbp")
    args = parser.parse_args()
    metrics = [*METRICS, args.plugin]
    print(f"{len(metrics)} metrics: {', '.join(metrics)}; {os.cpu_count()} CPUs visible")

    runs, cmds = [], []
    for k in range(args.repeat):  # alternate the two measurements, so that load hits both alike
        wall, cpu, res = in_process(metrics)
        runs.append((wall, cpu))
        print(f"run {k + 1}: formal_properties {wall:.2f} s wall, {cpu:.2f} s CPU (load {os.getloadavg()[0]:.1f})",
              flush=True)
        c_wall, c_cpu, c_mb = command(metrics)
        cmds.append((c_wall, c_cpu, c_mb))
        print(f"run {k + 1}: meta-eval analysis properties {c_wall:.2f} s wall, {c_cpu:.2f} s CPU, {c_mb:.0f} MB "
              f"(load {os.getloadavg()[0]:.1f})", flush=True)
    best, best_cmd = min(runs), min(cmds)
    counts = res.to_frame().groupby("space")["checked"].sum()
    print(f"verdicts: {len(res.verdicts)} ({len(res.metrics)} metrics x {len(res.properties)} properties x 2 spaces); "
          f"comparisons and cases checked: {int(counts['binary']):,} binary, {int(counts['graded']):,} graded")
    print(f"best: function {best[0]:.2f} s wall ({best[1]:.2f} s CPU, process peak {peak_mb():.0f} MB); command "
          f"{best_cmd[0]:.2f} s wall ({best_cmd[1]:.2f} s CPU, {best_cmd[2]:.0f} MB); goal 30 s")
    load = os.getloadavg()[0]
    print(f"BENCH name=properties ours_s={best_cmd[0]:.3f} peer_s=nan speedup=nan peak_mb={best_cmd[2]:.0f} "
          f"cpu_s={best_cmd[1]:.3f} function_s={best[0]:.3f} function_cpu_s={best[1]:.3f} load={load:.1f}")


if __name__ == "__main__":
    main()
