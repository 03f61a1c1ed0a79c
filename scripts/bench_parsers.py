"""Benchmark: the CSV parser under ``meta-eval evaluate`` (Arrow's) against polars' on the TREC-COVID runs.

What ``docs/benchmarks.md`` ("What bounds evaluate") says of a faster parser: each side parses the three columns a
run needs (topic, docid, score) of the 143 decompressed runs, one file after the other on one thread, in its own
process (``POLARS_MAX_THREADS=1``), after a warm-up pass; reported are the median CPU time of the parse (the files
are read before the clock starts) and the library's import time (a process that imports it and nothing else).
polars is not a dependency of meta-eval: give ``--python`` an interpreter that has it (and pyarrow).

Usage: python scripts/bench_parsers.py [--data ../shared/data/trec-covid-round1] [--repeat 5] [--python PY]
"""

from __future__ import annotations

import argparse
import gzip
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: One side's parse, timed in its own process: prints the CPU seconds of each pass.
PARSE = {
    "arrow": """
import sys, time, pyarrow as pa, pyarrow.csv as pacsv
datas = [open(p, 'rb').read() for p in sys.argv[2:]]
fields = ["topic", "q0", "docid", "rank", "score", "tag"]
for _ in range(int(sys.argv[1])):
    start = time.process_time()
    for d in datas:
        pacsv.read_csv(pa.BufferReader(d), read_options=pacsv.ReadOptions(column_names=fields, use_threads=False,
                       block_size=len(d) + 1), parse_options=pacsv.ParseOptions(delimiter="\\t", quote_char=False),
                       convert_options=pacsv.ConvertOptions(column_types={"topic": pa.string(), "docid": pa.string(),
                       "score": pa.float64()}, include_columns=["topic", "docid", "score"], check_utf8=False))
    print(time.process_time() - start)
""",
    "polars": """
import sys, time, polars as pl
datas = [open(p, 'rb').read() for p in sys.argv[2:]]
schema = {"topic": pl.String, "q0": pl.String, "docid": pl.String, "rank": pl.String, "score": pl.Float64,
          "tag": pl.String}
for _ in range(int(sys.argv[1])):
    start = time.process_time()
    for d in datas:
        pl.read_csv(d, separator="\\t", has_header=False, columns=[0, 2, 4], schema=schema, quote_char=None)
    print(time.process_time() - start)
""",
}
MODULE = {"arrow": "pyarrow.csv", "polars": "polars"}


def parse_seconds(python: str, side: str, files: list[Path], repeat: int) -> float:
    """Median CPU seconds of ``side``'s parse of ``files`` (a warm-up pass first)."""
    env = {**os.environ, "POLARS_MAX_THREADS": "1", "OMP_NUM_THREADS": "1"}
    out = subprocess.run([python, "-c", PARSE[side], str(repeat + 1), *map(str, files)], capture_output=True,
                         text=True, env=env, check=True).stdout.split()
    return statistics.median(float(x) for x in out[1:])


def import_seconds(python: str, side: str, repeat: int) -> float:
    """Median wall seconds of a process importing ``side``'s library, less a bare interpreter's."""
    def run(code: str) -> float:
        times = []
        for _ in range(repeat):
            out = subprocess.run([python, "-c", f"import time; t = time.perf_counter(); {code}; "
                                  "print(time.perf_counter() - t)"], capture_output=True, text=True, check=True)
            times.append(float(out.stdout))
        return statistics.median(times)

    return run(f"import {MODULE[side]}") - run("pass")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "trec-covid-round1")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--python", default=sys.executable, help="an interpreter with polars and pyarrow")
    args = parser.parse_args()
    check = subprocess.run([args.python, "-c", "import polars, pyarrow"], capture_output=True)
    if check.returncode:
        sys.exit(f"{args.python} cannot import polars and pyarrow: give --python an interpreter that has both")
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for path in sorted((args.data / "runs").iterdir()):
            target = Path(tmp) / path.name.removesuffix(".gz")
            target.write_bytes(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes())
            files.append(target)
        size = sum(f.stat().st_size for f in files) / 1e6
        parse = {side: parse_seconds(args.python, side, files, args.repeat) for side in PARSE}
    imports = {side: import_seconds(args.python, side, args.repeat) for side in PARSE}
    load = os.getloadavg()[0]
    for side in PARSE:
        print(f"{side:7s}: parse {parse[side]:.3f} s CPU ({size / parse[side]:.0f} MB/s, one thread), import "
              f"{imports[side]:.3f} s (load {load:.1f})")
    print(f"BENCH name=parse_trec_covid ours_s={parse['arrow']:.3f} peer_s={parse['polars']:.3f} "
          f"speedup={parse['polars'] / parse['arrow']:.2f} peak_mb=nan ours_import_s={imports['arrow']:.3f} "
          f"peer_import_s={imports['polars']:.3f} mb={size:.0f} load={load:.1f}")


if __name__ == "__main__":
    main()
