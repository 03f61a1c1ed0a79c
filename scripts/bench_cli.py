"""Benchmark: what a new user feels on the demo collection — start-up, the demo study, and the default ``--jobs``
against ``--jobs 1`` on every demo command that runs parallel work.

Every figure is a whole process (imports included), the median of ``--repeat`` runs, the two settings alternating so
that a change in the machine's speed touches both. The machine and its load are printed first, so a figure quoted in
the README says where it was measured. The issue's bar: the default is never more than 10 % slower than
``--jobs 1`` on any of these commands (it chooses workers from the size of the work: ``meta_eval.core.parallel``).

Ends with ``BENCH name=cli_default_jobs ours_s=<default, slowest ratio's command> peer_s=<--jobs 1> speedup=...
peak_mb=... worst_ratio=... help_s=... study_s=...``.

``--busy N`` runs N CPU-bound processes (a busy loop each) beside every measurement, as other jobs would on a shared
machine: the issue's bar holds there too.

Usage: python scripts/bench_cli.py [--repeat 3] [--skip-study] [--busy 2] [--only discpower study]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_evaluate import measure, meta_eval_cmd  # noqa: E402  (a whole process: wall, CPU, peak memory)

#: Demo commands with parallel work (the study separately): name -> arguments.
COMMANDS = {
    "discpower": ["discpower", "-m", "AP", "-m", "nDCG@10", "-m", "ERR"],
    "incomplete-judgments": ["incomplete-judgments", "-m", "AP", "-m", "nDCG", "--draws", "5"],
    "informativeness": ["informativeness", "-m", "AP", "-m", "nDCG", "--g-grid", "0", "--no-cache"],
    "study": ["study"],  # the README's main command: every stage, figures drawn by a spare process with workers
}


def machine() -> str:
    load = os.getloadavg()
    return (f"{platform.node()}: {os.cpu_count()} cores, {platform.python_implementation()} "
            f"{platform.python_version()}, load average {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}")


def timed(args: list[str], out: Path | None) -> tuple[float, float, float]:
    """(wall s, CPU s, peak MB) of a whole process."""
    return measure(meta_eval_cmd(*args, *(["-o", str(out)] if out is not None else []), "--no-progress")
                   if args[0] != "--help" else meta_eval_cmd(*args))


@contextlib.contextmanager
def busy(n: int):
    """``n`` CPU-bound processes running until the block ends."""
    loops = []
    try:
        loops += [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-study", action="store_true")
    parser.add_argument("--busy", type=int, default=0, help="CPU-bound processes running beside the measurements")
    parser.add_argument("--only", nargs="+", choices=list(COMMANDS), help="these commands only")
    args = parser.parse_args()
    with busy(args.busy):
        measure_all(args)


def measure_all(args) -> None:
    print(machine() + (f"; {args.busy} CPU-bound processes beside" if args.busy else ""), flush=True)
    help_s = statistics.median(timed(["--help"], None)[0] for _ in range(max(5, args.repeat)))
    print(f"meta-eval --help: {help_s:.2f} s", flush=True)
    rows, peaks = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for name, cmd in COMMANDS.items():
            if (name == "study" and args.skip_study) or (args.only and name not in args.only):
                continue
            times: dict[str, list[float]] = {"default": [], "jobs1": []}
            cpus: dict[str, list[float]] = {"default": [], "jobs1": []}
            for i in range(args.repeat):
                for setting in ("default", "jobs1"):
                    extra = ["--jobs", "1"] if setting == "jobs1" else []
                    wall, cpu, peak = timed([*cmd, *extra], Path(tmp) / f"{name}-{setting}-{i}")
                    times[setting].append(wall)
                    cpus[setting].append(cpu)
                    peaks.append(peak)
            rows[name] = {k: statistics.median(v) for k, v in times.items()}
            ratio = rows[name]["default"] / rows[name]["jobs1"]
            cpu = {k: statistics.median(v) for k, v in cpus.items()}
            print(f"{name:>22}: default {rows[name]['default']:.2f} s, --jobs 1 {rows[name]['jobs1']:.2f} s "
                  f"(default / jobs 1 = {ratio:.2f}; CPU {cpu['default']:.2f} s and {cpu['jobs1']:.2f} s; load "
                  f"{os.getloadavg()[0]:.1f})", flush=True)
        study_s = rows["study"]["default"] if "study" in rows else float("nan")
    worst = max(rows, key=lambda n: rows[n]["default"] / rows[n]["jobs1"])
    ratio = rows[worst]["default"] / rows[worst]["jobs1"]
    print(f"BENCH name=cli_default_jobs ours_s={rows[worst]['default']:.2f} peer_s={rows[worst]['jobs1']:.2f} "
          f"speedup={1 / ratio:.2f} peak_mb={max(peaks):.0f} worst_ratio={ratio:.2f} worst={worst} "
          f"help_s={help_s:.2f} study_s={study_s:.1f} busy={args.busy}")


if __name__ == "__main__":
    main()
