"""Store every CSV and LaTeX table the demo study and the battery commands write, and compare a new run with them.

``tests/test_study_fixture.py`` reruns the same commands and compares their files with the stored ones: a
restructuring must not change one number or one table. When a change alters a table on purpose, rerun this script
in the same commit and say why::

    python scripts/study_fixture.py --reason "..."              # writes tests/data/study_fixture/*.json.gz
    python scripts/study_fixture.py --only anova --reason "..."  # one configuration; the others are kept
    python scripts/study_fixture.py --check                       # compare a fresh run with the stored files

**What is guaranteed, and so compared** (:func:`compare`): the same files, the same columns, rows and text, exact
integers, and floating-point numbers to a tolerance that states what the computation guarantees on another CPU —
not bytes. Compiled floating point is not bit-identical across machines: numpy's SIMD sums and exp/log, OpenBLAS's
kernels and numba's code differ with the CPU's instruction set (on a machine without AVX-512 the demo study's
numbers move by up to 2e-14 relative). So:

- text, booleans and integers: exact;
- floats: relative 1e-9 (:data:`RTOL`; absolute 1e-12 near 0) — a floating reduction in another order differs by
  ~1e-15, a real change of method by far more;
- the maximum-entropy solutions (``informativeness*`` files): relative 1e-6 (:data:`MEM_RTOL`), the solver's
  stationarity tolerance of 1e-7 with a margin, and the solver's residuals and error estimates (:data:`NOISE`) only
  to the solver's absolute tolerance, since they are rounding noise by nature;
- LaTeX tables: the text outside numbers exactly, a printed decimal to one unit of its last digit (a value on a
  rounding boundary may print either way).

The fixture records, per configuration, the command-line arguments, the files, the commit that produced them
(``uncommitted_changes``: the files come from the change committed with them), why they were (re)generated, and the
Python and numpy versions.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "data" / "study_fixture"

SMALL = ["-B", "100", "--informativeness-lists", "30", "--incomplete-judgments-draws", "2", "--split-half-splits",
         "10"]  # soak_dask's
FIGURES = ["--format", "png", "--dpi", "50", "--no-progress", "--jobs", "1"]

#: Configuration name -> arguments of ``meta-eval`` (the result folder is appended as ``-o/--out DIR``).
CONFIGS: dict[str, list[str]] = {
    "study-small": ["study", *SMALL, *FIGURES],
    "study-default": ["study", *FIGURES],
    "study-standardised-ltr": ["study", *SMALL, *FIGURES, "--standardise", "z", "--ltr-data", "demo",
                               "--ltr-rounds", "20", "--ltr-max-folds", "1", "-m", "AP", "-m", "P.5,10", "-a", "GAP",
                               "-a", "nDCG", "--discpower-top", "5"],
    "incomplete-judgments": ["incomplete-judgments", "-m", "AP", "-m", "nDCG@10", "-a", "none", "--fraction", "0.3",
                             "--fraction", "0.7", "--draws", "3", "--format", "png", "--dpi", "50", "--no-progress",
                             "--jobs", "1"],
    "reusability": ["reusability", "-m", "AP", "-m", "RR", "-a", "none", "-k", "10", "--form", "standard", "--form",
                    "condensed", "--format", "png", "--dpi", "50", "--no-progress"],
    "anova": ["anova", "-m", "AP", "-m", "nDCG@10", "-a", "none", "--min-d", "0.05", "--min-d", "0.1", "--standardise",
              "cdf", "--format", "png", "--dpi", "50", "--no-progress"],
    "intuitiveness": ["intuitiveness", "-m", "AP", "-m", "nDCG", "-m", "ERR", "-a", "none", "--format", "png", "--dpi",
                      "50", "--no-progress"],
    "split-half": ["split-half", "-m", "AP", "-m", "Q", "-a", "none", "--size", "5", "--size", "10", "--splits", "20",
                   "--seed", "3", "--format", "png", "--dpi", "50", "--no-progress"],
}

#: Relative and absolute tolerance of floating-point numbers (see the module's docstring).
RTOL, ATOL = 1e-9, 1e-12
#: Relative tolerance of the maximum-entropy solutions: the solver's stationarity tolerance (1e-7) with a margin.
MEM_RTOL = 1e-6
#: Columns that are rounding noise by nature (the solver's residuals, the sampled form's error estimate), compared
#: to the solver's absolute metric tolerance only.
NOISE = {"max_residual": 1e-9, "approx_error": 1e-9}


def command(args: list[str], out: Path) -> list[str]:
    """The process that runs ``meta-eval ARGS -o OUT`` with the checkout's code."""
    return [sys.executable, "-c", "from meta_eval.cli import run; run()", *args, "--out", str(out)]


def environment() -> dict[str, str]:
    """The current environment with the checkout first on the import path."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(
        os.pathsep)}


def outputs(folder: Path) -> dict[str, str]:
    """The text of every ``.csv`` and ``.tex`` file of a result folder, by file name."""
    return {p.name: p.read_text() for p in sorted(folder.iterdir()) if p.suffix in (".csv", ".tex")}


def run(args: list[str], out: Path) -> dict[str, str]:
    """Run one configuration into ``out`` and return its files (RuntimeError with stderr if it fails)."""
    done = subprocess.run(command(args, out), capture_output=True, text=True, env=environment(), cwd=REPO)
    if done.returncode != 0:
        raise RuntimeError(f"meta-eval {' '.join(args)} exited {done.returncode}:\n{done.stderr[-4000:]}")
    return outputs(out)


def load(name: str) -> dict:
    """The stored configuration ``name``: its arguments, files, commit and reason."""
    with gzip.open(FIXTURE / f"{name}.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)


# ----------------------------------------------------------------------------------------------------------------
# Comparison to what is guaranteed
# ----------------------------------------------------------------------------------------------------------------


def compare(expected: dict[str, str], got: dict[str, str]) -> list[str]:
    """Every difference between two sets of result files beyond what another CPU may change (empty: the same)."""
    problems = []
    missing, added = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
    if missing or added:
        problems.append(f"files: {missing} missing, {added} not in the fixture")
    for name in sorted(set(expected) & set(got)):
        check = compare_csv if name.endswith(".csv") else compare_tex
        rtol = MEM_RTOL if name.startswith("informativeness") else RTOL
        problems += [f"{name}: {p}" for p in check(expected[name], got[name], rtol)]
    return problems


def compare_csv(expected: str, got: str, rtol: float = RTOL) -> list[str]:
    """Differences between two CSV texts: columns, rows and text exactly, floats to ``rtol`` (:data:`NOISE`
    columns to their absolute tolerance)."""
    import numpy as np
    import pandas as pd

    a, b = (pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""]) for text in (expected, got))
    if list(a.columns) != list(b.columns) or a.shape != b.shape:
        return [f"columns/shape {list(a.columns)} {a.shape} != {list(b.columns)} {b.shape}"]
    problems = []
    for col in a.columns:
        x, y = a[col], b[col]
        if x.dtype.kind == "f" or y.dtype.kind == "f":
            if x.dtype.kind not in "fiu" or y.dtype.kind not in "fiu":
                problems.append(f"column {col}: numbers in one file, text in the other")
                continue
            xv, yv = x.to_numpy(np.float64), y.to_numpy(np.float64)
            tol = dict(rtol=0.0, atol=NOISE[col]) if col in NOISE else dict(rtol=rtol, atol=ATOL)
            bad = ~np.isclose(xv, yv, equal_nan=True, **tol)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                problems.append(f"column {col}: {int(bad.sum())} value(s) differ, first at row {i + 2}: "
                                f"{xv[i]!r} != {yv[i]!r}")
        elif not x.astype(str).equals(y.astype(str)):
            i = int(np.flatnonzero(x.astype(str).to_numpy() != y.astype(str).to_numpy())[0])
            problems.append(f"column {col}: row {i + 2}: {x.iloc[i]!r} != {y.iloc[i]!r}")
    return problems


_NUMBER = re.compile(r"(?<![A-Za-z_{])-?\d+(?:\.(\d+))?")


def compare_tex(expected: str, got: str, rtol: float = RTOL) -> list[str]:
    """Differences between two LaTeX tables: the text outside numbers exactly; a number with d decimals to one unit
    of its last decimal (and to ``rtol``), an integer exactly."""
    skeleton = [_NUMBER.sub("#", text) for text in (expected, got)]
    if skeleton[0] != skeleton[1]:
        lines = [(x, y) for x, y in zip(skeleton[0].splitlines(), skeleton[1].splitlines()) if x != y]
        return [f"text differs: {lines[0] if lines else 'line count'}"]
    problems = []
    for x, y in zip(_NUMBER.finditer(expected), _NUMBER.finditer(got)):
        if x.group(0) == y.group(0):
            continue
        decimals = len(x.group(1) or "")
        unit = 10.0 ** -decimals if decimals else 0.0
        a, b = float(x.group(0)), float(y.group(0))
        if decimals != len(y.group(1) or "") or abs(a - b) > unit * (1 + 1e-9) + rtol * abs(a):
            problems.append(f"{x.group(0)} != {y.group(0)}")
    return problems


# ----------------------------------------------------------------------------------------------------------------
# Command line
# ----------------------------------------------------------------------------------------------------------------


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=REPO).stdout.strip()


def _store(name: str, files: dict[str, str], reason: str) -> None:
    import numpy

    record = {"args": CONFIGS[name], "commit": _git("rev-parse", "HEAD"),
              "uncommitted_changes": bool(_git("status", "--porcelain", "--untracked-files=no")),
              "reason": reason, "python": platform.python_version(), "numpy": numpy.__version__,
              "machine": platform.machine(), "files": files}
    FIXTURE.mkdir(parents=True, exist_ok=True)
    # mtime=0: the same files give the same bytes, so an unchanged configuration leaves git with nothing to commit
    with open(FIXTURE / f"{name}.json.gz", "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as f:
        f.write(json.dumps(record, indent=1).encode("utf-8"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reason", help="why the fixture is (re)generated (required unless --check)")
    parser.add_argument("--only", action="append", choices=sorted(CONFIGS), help="only these configurations "
                        "(repeatable); the others are kept")
    parser.add_argument("--check", action="store_true", help="compare a fresh run with the stored files")
    args = parser.parse_args()
    if not args.check and not args.reason:
        parser.error("--reason is required to (re)generate the fixture")
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for name, cli in CONFIGS.items():
            if args.only and name not in args.only:
                continue
            print(f"{name}: meta-eval {' '.join(cli)}", file=sys.stderr)
            files = run(cli, Path(tmp) / name)
            if args.check:
                problems = compare(load(name)["files"], files)
                failed |= bool(problems)
                print("\n".join(f"  {p}" for p in problems) or "  the same", file=sys.stderr)
            else:
                _store(name, files, args.reason)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
