"""Benchmark: how honest the study's progress is, and what solving GAP's g grid in a second pass costs.

1. A whole ``meta-eval study`` (default options, no MEM cache, every core) in plain-lines mode: its first estimate of
   the whole study and its estimate after the first analyses beside the measured total, and — from the same run's
   stage times — what counting stages (the previous display: elapsed / k × (n − k), first printed after 10 s)
   said at that point. Then MEM's first time left beside its measured time, and what the rate since the start
   (the previous rule, which counted the workers' start-up as work) gave on the same line.
2. Informativeness's solves on the demo sample (300 lists; 6 metrics, then the 12 of GAP's g grid): two passes,
   as now (each its own progress line, counting what the announcement names), against one pass of all 18 (before),
   alternating, on 2 workers: wall and CPU time, the load.

Usage: python scripts/bench_progress.py [--data ../shared/data/trec-covid-round1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def seconds(text: str) -> float:
    """``01:05`` or ``1:01:05`` as seconds."""
    return float(sum(int(p) * 60 ** k for k, p in enumerate(reversed(text.split(":")))))


def study_lines(data: Path | None, out: Path) -> tuple[list[str], float]:
    """The progress lines of a whole ``meta-eval study`` process, and its wall time."""
    inputs = [] if data is None else ["-Q", str(data / "qrels.txt"), str(data / "runs")]
    started = time.perf_counter()
    run = subprocess.run(["meta-eval", "study", *inputs, "-o", str(out), "--informativeness-no-cache"],
                         capture_output=True, text=True, env={**os.environ, "META_EVAL_PROGRESS": "lines"},
                         check=True)
    return run.stderr.splitlines(), time.perf_counter() - started


def study_estimates(lines: list[str]) -> dict[str, float]:
    """Ours: the first estimate and the estimate after the first analysis that ends 10 s or more into the study;
    the stage count at that same point; the measured total (the study's own clock)."""
    total = seconds(re.search(r"study: done in (\S+)", "\n".join(lines)).group(1))
    first = seconds(re.search(r"about (\S+) left",
                              next(x for x in lines if x.startswith("study: ") and x.endswith(" left"))).group(1))
    staged = [x for x in lines if re.match(r"study: \S+ \(\d+/\d+, ", x)]
    n = int(re.search(r"/(\d+),", staged[0]).group(1))
    elapsed, out = 0.0, {"first": first, "total": total}
    for k, line in enumerate(staged[1:], start=1):  # line k: analysis k ended (its measured time), k + 1 begins
        elapsed += seconds(re.search(r" took (\S+)", line).group(1))
        if elapsed >= 10.0:
            out.update(at=elapsed, ours=elapsed + seconds(re.search(r"about (\S+) left", line).group(1)),
                       stages=elapsed + elapsed / k * (n - k))
            break
    return out


def mem_estimates(lines: list[str]) -> dict[str, float]:
    """On the first MEM line with a time left: the total it implies, the total the rate since the start (the
    previous rule) implies on the same line; MEM's measured time."""
    shown = [x for x in lines if x.startswith("MEM ") and "about" in x]
    done = [x for x in lines if x.startswith("MEM ") and ": done" in x]
    if not shown or not done:
        return {}
    m = re.search(r"(\d+)%, (\S+) elapsed, about (\S+) left", shown[0])
    share, at = float(m.group(1)) / 100, seconds(m.group(2))
    return {"mem_at": at, "mem_ours": at + seconds(m.group(3)), "mem_old": at / share if share else float("inf"),
            "mem_total": seconds(re.search(r"in (\S+)$", done[0]).group(1))}


def mem_passes(repeat: int) -> dict[str, list[tuple[float, float]]]:
    """(wall, CPU) of the demo sample's solves in two passes and in one, alternating, on 2 workers."""
    import meta_eval as me
    from meta_eval.analyses import AnalysisData
    from meta_eval.analyses.informativeness import _additions, _asked, _sample
    from meta_eval.core.parallel import terminate_workers
    from meta_eval.statistics import maxent as mem

    data = AnalysisData.from_collection(me.demo_collection(), ["AP", "nDCG@10", "Q", "ERR", "GAP", "nDCG"],
                                        against=["GAP", "nDCG"])
    batch = _sample(data, 300, 5, 5, 0)[0].batch
    asked, added = _asked(data), _additions(data, 0.1, batch.n_grades)
    how = {"jobs": 2, "progress": False}
    runs: dict[str, list[tuple[float, float]]] = {"two passes": [], "one pass": []}
    mem.solve_mems(batch, asked[:1], **how)  # workers started and kernels loaded before the first measure
    for _ in range(repeat):
        for name, times in runs.items():
            wall, cpu = time.perf_counter(), _cpu()
            if name == "two passes":
                mem.solve_mems(batch, asked, **how)
                mem.solve_mems(batch, added, **how)
            else:
                mem.solve_mems(batch, asked + added, **how)
            times.append((time.perf_counter() - wall, _cpu() - cpu))
    terminate_workers()
    return runs


def _cpu() -> float:
    """CPU seconds of this process and its waited-for children (the workers count when they are reaped, so the
    per-run CPU here is this process's; the wall time is the measure)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="DATA/qrels.txt and DATA/runs (default: the demo collection)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        lines, wall = study_lines(args.data, Path(tmp) / "study")
    study, mem_line = study_estimates(lines), mem_estimates(lines)
    print(f"study ({args.data or 'demo'}): measured {study['total']:.0f} s (wall {wall:.0f} s); first estimate "
          f"{study['first']:.0f} s; after {study['at']:.0f} s: ours {study['ours']:.0f} s, counting stages "
          f"{study['stages']:.0f} s; load {load:.1f} -> {os.getloadavg()[0]:.1f}")
    if mem_line:
        print(f"MEM: measured {mem_line['mem_total']:.0f} s; first time left at {mem_line['mem_at']:.0f} s gives "
              f"{mem_line['mem_ours']:.0f} s in all; the rate since the start gave {mem_line['mem_old']:.0f} s")
    passes = mem_passes(args.repeat)
    wall = {name: statistics.median(w for w, _ in rs) for name, rs in passes.items()}
    cpu = {name: statistics.median(c for _, c in rs) for name, rs in passes.items()}
    for name in passes:
        print(f"MEM solves, {name}: wall {wall[name]:.2f} s (runs {[round(w, 2) for w, _ in passes[name]]}), CPU "
              f"here {cpu[name]:.2f} s; load {os.getloadavg()[0]:.1f}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"BENCH name=mem_two_passes ours_s={wall['two passes']:.2f} peer_s={wall['one pass']:.2f} "
          f"speedup={wall['one pass'] / wall['two passes']:.2f} peak_mb={peak:.0f} "
          f"study_s={study['total']:.0f} study_first_estimate_s={study['first']:.0f} "
          f"study_estimate_at_{study['at']:.0f}s={study['ours']:.0f} stage_count_at_{study['at']:.0f}s="
          f"{study['stages']:.0f} mem_s={mem_line.get('mem_total', float('nan')):.0f} "
          f"mem_first_estimate_s={mem_line.get('mem_ours', float('nan')):.0f} "
          f"mem_rate_since_start_s={mem_line.get('mem_old', float('nan')):.0f} load={os.getloadavg()[0]:.1f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
