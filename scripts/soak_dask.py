"""Soak test of the Dask engine: N studies in a row through one real scheduler, byte-identical CSVs every time.

Starts ``dask scheduler`` on 127.0.0.1 (a free port) and ``dask worker`` with two single-threaded worker processes,
then runs ``meta-eval study --scheduler tcp://...`` N times on the demo collection (a reduced budget, every stage),
each with a time limit. Every run must exit 0 within the limit, and every CSV of every run must be byte-identical to
the first run's (and to a run without Dask, ``--jobs 1``). Ends with one line ``SOAK runs=... identical=... hung=...
failed=... median_s=...``.

    python scripts/soak_dask.py --runs 20
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STUDY = ["study", "-B", "100", "--informativeness-lists", "30", "--incomplete-judgments-draws", "2", "--split-half-splits", "10",
         "--format", "png", "--dpi", "50", "--no-progress"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _csv_digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*.csv"))}


def _meta_eval() -> list[str]:
    script = Path(sys.executable).parent / "meta-eval"
    return [str(script)] if script.exists() else [sys.executable, "-c", "from meta_eval.cli import run; run()"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=300, help="seconds allowed per study")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="meta-eval-soak-"))
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    bindir = Path(sys.executable).parent
    dask = [str(bindir / "dask")] if (bindir / "dask").exists() else [sys.executable, "-m", "distributed.cli.dask"]
    env = dict(os.environ, DASK_TEMPORARY_DIRECTORY=str(work / "dask-scratch"))
    logs = open(work / "cluster.log", "w")
    scheduler = subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                  "--dashboard-address", ":0"], stdout=logs, stderr=logs, env=env)
    worker = subprocess.Popen([*dask, "worker", address, "--nworkers", "2", "--nthreads", "1",
                               "--local-directory", str(work / "dask-scratch")], stdout=logs, stderr=logs, env=env)
    identical = hung = failed = 0
    seconds = []
    try:
        time.sleep(5)
        reference = work / "reference"
        done = subprocess.run([*_meta_eval(), *STUDY, "--jobs", "1", "-o", str(reference)], capture_output=True,
                              text=True, timeout=args.timeout)
        if done.returncode != 0:
            print(done.stderr, file=sys.stderr)
            return 1
        expected = _csv_digests(reference)
        for i in range(args.runs):
            out = work / f"run{i}"
            started = time.perf_counter()
            try:
                done = subprocess.run([*_meta_eval(), *STUDY, "--scheduler", address, "-o", str(out)],
                                      capture_output=True, text=True, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                hung += 1
                print(f"run {i}: no result within {args.timeout:.0f} s", file=sys.stderr)
                continue
            seconds.append(time.perf_counter() - started)
            if done.returncode != 0:
                failed += 1
                print(f"run {i}: exit {done.returncode}: {done.stderr[-2000:]}", file=sys.stderr)
                continue
            same = _csv_digests(out) == expected
            identical += same
            print(f"run {i}: {seconds[-1]:.1f} s, CSVs {'identical' if same else 'DIFFER'}", file=sys.stderr)
            shutil.rmtree(out, ignore_errors=True)
    finally:
        for proc in (worker, scheduler):
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        logs.close()
    median = statistics.median(seconds) if seconds else float("nan")
    print(f"SOAK runs={args.runs} identical={identical} hung={hung} failed={failed} median_s={median:.1f} "
          f"csvs={len(expected)} log={work / 'cluster.log'}")
    return 0 if identical == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
