"""Benchmark: ``meta-eval evaluate`` as a user runs it (a whole process) beside pytrec_eval and trec_eval.

trec-covid
    The 143 TREC-COVID round-1 runs (155 MB of text, gzip) and 8 measures: ``meta-eval evaluate`` (AP, GAP, nDCG,
    nDCG@10, P@10, Rprec, RR, bpref) against a pytrec_eval script reading the same files (the same measures but GAP,
    which it lacks) and, with ``--trec-eval PATH``, a shell loop of the trec_eval C program over the runs
    (``trec_eval -m ... qrels run``: on the runs decompressed beforehand, its best case, and with each run
    decompressed to a file first, as a user holding the gzip files runs it; trec_eval cannot read a pipe), and
    meta-eval again on the decompressed runs, the same input as trec_eval's best case;
    ``scripts/fetch_trec_eval.py`` fetches a trec_eval binary. Each side is a whole process (interpreter start,
    imports, reading, scoring, printing); best wall time of ``--repeat``, with the CPU time (user + system) and peak
    resident memory of that process. Also ``meta-eval --help`` and ``import meta_eval``.
memory
    Issue 15's cases, each a whole ``meta-eval evaluate`` process beside pytrec_eval: a 50,000-topic qrels against a
    run of 10 topics × 1,000 documents, the same with one topic of 5,020 documents, and with one list of 200,000.
trec-eval
    ``meta-eval trec-eval -q -m all_trec qrels runs...`` (every run's trec_eval report, 426,000 lines) as one
    process on the 143 gzip runs, against a shell loop of the trec_eval 10 C program (``--trec-eval10``, built from
    its sources) over the runs decompressed beforehand (its best case), the two sides alternated ``--repeat``
    times; the outputs are checked identical byte for byte. Also ``meta-eval evaluate`` with its 8 measures against
    the same loop with those measures, the ratio the trec-eval row is held to.
growth
    Synthetic collections of 1×, 4× and 16× the TREC-COVID size (143 runs × 30·k topics × depth 1000,
    ``scripts/make_synthetic.py``): time, CPU and peak memory of ``evaluate`` and of the analyses (``discpower``,
    ``correlate``, ``compare``, ``anova``, the study's informativeness stage on 300 lists), to show linear time and
    memory that follows the collection, not the text.

The machine's load average is printed beside every number: on a shared machine wall times are noisy, CPU times
less so. Every case ends with a ``BENCH`` line.

Usage: python scripts/bench_evaluate.py [--data ../shared/data/trec-covid-round1] [--repeat 3]
       [--only trec-covid|memory|trec-eval|growth] [--trec-eval /path/to/trec_eval]
       [--trec-eval10 /path/to/trec_eval10] [--scales 1 4 16]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from meta_eval.analyses import builtin_modules

OURS = ["AP", "GAP", "nDCG", "nDCG@10", "P@10", "Rprec", "RR", "bpref"]
PEER = ["map", "ndcg", "ndcg_cut.10", "P.10", "Rprec", "recip_rank", "bpref"]
TREC_EVAL = ["-m", "map", "-m", "ndcg", "-m", "ndcg_cut.10", "-m", "P.10", "-m", "Rprec", "-m", "recip_rank",
             "-m", "bpref"]
ROOT = Path(__file__).resolve().parents[1]

_MEASURE = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
            "rc = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, shell=sys.argv[1] == 'shell').returncode; "
            "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
            "print(rc, time.perf_counter() - t, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024)")


# As a user's machine runs them: Python writes and reuses bytecode (a sandbox may set PYTHONDONTWRITEBYTECODE, which
# makes every process compile meta-eval's modules again, about half a second).
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def measure(command: list[str] | str) -> tuple[float, float, float]:
    """Wall time, CPU time (user + system, all child processes) and peak resident memory (MB, the largest
    process) of a command run as its own process (a shell command line when given as a string)."""
    shell = isinstance(command, str)
    args = [command] if shell else command
    out = subprocess.run([sys.executable, "-c", _MEASURE, "shell" if shell else "exec", *args], capture_output=True,
                         text=True, check=True, env=ENV)
    rc, wall, cpu, mb = out.stdout.split()
    if rc != "0":
        raise SystemExit(f"{command} failed with status {rc}")
    return float(wall), float(cpu), float(mb)


def best(command, repeat: int) -> tuple[float, float, float]:
    """The run with the best wall time of ``repeat``."""
    return min((measure(command) for _ in range(repeat)), key=lambda r: r[0])


def load() -> str:
    return "%.1f" % os.getloadavg()[0]


def meta_eval_cmd(*args: str) -> list[str]:
    return [shutil.which("meta-eval") or "meta-eval", *args]


def evaluate_cmd(qrels: Path, runs: Path | str) -> list[str]:
    """``meta-eval evaluate`` with the benchmark's measures."""
    return meta_eval_cmd("evaluate", "-Q", str(qrels), str(runs), *sum((["-m", m] for m in OURS), []),
                         "--no-progress")


_PEER_SCRIPT = """
import gzip, sys, pathlib, pytrec_eval
qrels_path, runs, measures = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
with open(qrels_path) as f:
    qrels = pytrec_eval.parse_qrel(f)
evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(measures))
for path in sorted(pathlib.Path(runs).iterdir()):
    with (gzip.open(path, "rt") if path.suffix == ".gz" else open(path)) as f:
        res = evaluator.evaluate(pytrec_eval.parse_run(f))
    keys = next(iter(res.values())).keys()
    print(path.name, *(f"{sum(v[k] for v in res.values()) / len(res):.4f}" for k in keys))
"""


def trec_covid(data: Path, repeat: int, trec_eval: str | None) -> None:
    qrels, runs = data / "qrels.txt", data / "runs"
    ours_cmd = evaluate_cmd(qrels, runs)
    peer_cmd = [sys.executable, "-c", _PEER_SCRIPT, str(qrels), str(runs), ",".join(PEER)]
    measure(ours_cmd)  # warm the page cache and the bytecode
    print(f"load average before: {load()}")
    ours = best(ours_cmd, repeat)
    peer = best(peer_cmd, repeat)
    print(f"meta-eval evaluate : {ours[0]:.2f} s wall, {ours[1]:.2f} s CPU, {ours[2]:.0f} MB peak  ({len(OURS)} measures)")
    print(f"pytrec_eval        : {peer[0]:.2f} s wall, {peer[1]:.2f} s CPU, {peer[2]:.0f} MB peak  ({len(PEER)} measures)")
    line = (f"BENCH name=evaluate_trec_covid_process ours_s={ours[0]:.3f} peer_s={peer[0]:.3f} "
            f"speedup={peer[0] / ours[0]:.2f} peak_mb={ours[2]:.0f} ours_cpu_s={ours[1]:.3f} peer_cpu_s={peer[1]:.3f} "
            f"cpu_speedup={peer[1] / ours[1]:.2f}")
    if trec_eval:
        args = f"{trec_eval} {' '.join(TREC_EVAL)} {qrels}"
        with tempfile.TemporaryDirectory() as plain, tempfile.TemporaryDirectory() as scratch:
            plain_runs = gunzip_all(runs, plain)
            c = best(" ; ".join(f"{args} {path}" for path in plain_runs), repeat)
            # as a user with the gzip files runs it: trec_eval reads no pipe, so each run goes through a file
            gz = best(" ; ".join(f"gzip -dc {path} > {scratch}/run ; {args} {scratch}/run"
                                 for path in sorted(runs.iterdir())), repeat)
            # the same input for both: meta-eval on the decompressed files trec_eval read
            same = best(evaluate_cmd(qrels, plain), repeat)
        print(f"trec_eval C loop   : {c[0]:.2f} s wall, {c[1]:.2f} s CPU  (on the runs decompressed beforehand)")
        print(f"                     {gz[0]:.2f} s wall, {gz[1]:.2f} s CPU  (each run decompressed to a file first)")
        print(f"meta-eval evaluate : {same[0]:.2f} s wall, {same[1]:.2f} s CPU, {same[2]:.0f} MB peak  (on the "
              "decompressed runs trec_eval read)")
        line += (f" trec_eval_s={c[0]:.3f} trec_eval_cpu_s={c[1]:.3f} speedup_trec_eval={c[0] / ours[0]:.2f}"
                 f" trec_eval_gz_s={gz[0]:.3f} speedup_trec_eval_gz={gz[0] / ours[0]:.2f}"
                 f" ours_plain_s={same[0]:.3f} speedup_trec_eval_same_input={c[0] / same[0]:.2f}")
    else:
        print("trec_eval C loop   : not run (give --trec-eval PATH to a trec_eval binary)")
    print(line + f" load={load()}")
    help_run = best(meta_eval_cmd("--help"), max(repeat, 5))
    import_run = best([sys.executable, "-c", "import meta_eval"], max(repeat, 5))
    print(f"BENCH name=startup help_s={help_run[0]:.3f} help_cpu_s={help_run[1]:.3f} import_s={import_run[0]:.3f} "
          f"import_cpu_s={import_run[1]:.3f} load={load()}")


def gunzip_all(runs: Path, folder: str) -> list[Path]:
    """The runs decompressed into ``folder``, outside the timing: trec_eval reads plain files only (it sizes the
    file before reading it, so it cannot read a pipe), and this is its best case: the gunzip is not counted for it,
    while meta-eval's time includes its own."""
    from meta_eval.inputs.trec import read_bytes

    out = []
    for path in sorted(runs.iterdir()):
        target = Path(folder) / path.name.removesuffix(".gz")
        target.write_bytes(read_bytes(path))
        out.append(target)
    return out


def trec_eval_report(data: Path, repeat: int, trec_eval10: str | None) -> None:
    """``meta-eval trec-eval -q -m all_trec`` on the 143 runs against a shell loop of trec_eval 10, alternated;
    and ``evaluate`` (8 measures) against the loop with those measures."""
    if not trec_eval10:
        print("trec-eval: not run (give --trec-eval10 PATH to a trec_eval 10 binary)")
        return
    qrels, runs = data / "qrels.txt", data / "runs"
    gz = sorted(runs.iterdir())
    ours_cmd = meta_eval_cmd("trec-eval", "-q", "-m", "all_trec", str(qrels), *map(str, gz))
    with tempfile.TemporaryDirectory() as plain, tempfile.TemporaryDirectory() as out:
        plain_runs = gunzip_all(runs, plain)
        loop = " ; ".join(f"{trec_eval10} -q -m all_trec {qrels} {path}" for path in plain_runs)
        subprocess.run(f"( {loop} ) > {out}/c.txt", shell=True, check=True)
        with open(f"{out}/ours.txt", "wb") as f:
            subprocess.run(ours_cmd, stdout=f, check=True, env=ENV)
        identical = Path(f"{out}/c.txt").read_bytes() == Path(f"{out}/ours.txt").read_bytes()
        short = " ; ".join(f"{trec_eval10} {' '.join(TREC_EVAL)} {qrels} {path}" for path in plain_runs)
        print(f"load average before: {load()}")
        sides = {"ours": ours_cmd, "c": loop, "evaluate": evaluate_cmd(qrels, runs), "c8": short}
        times: dict[str, list] = {name: [] for name in sides}
        for _ in range(repeat):  # alternated, so that a change of load weighs on every side alike
            for name, command in sides.items():
                times[name].append(measure(command))
    best = {name: min(runs_, key=lambda r: r[0]) for name, runs_ in times.items()}
    print(f"meta-eval trec-eval -q -m all_trec : {best['ours'][0]:.2f} s wall, {best['ours'][1]:.2f} s CPU, "
          f"{best['ours'][2]:.0f} MB peak (output identical to the loop's: {identical})")
    print(f"trec_eval 10 loop, all_trec -q     : {best['c'][0]:.2f} s wall, {best['c'][1]:.2f} s CPU")
    print(f"meta-eval evaluate (8 measures)    : {best['evaluate'][0]:.2f} s wall; trec_eval 10 loop with those "
          f"measures {best['c8'][0]:.2f} s: {best['c8'][0] / best['evaluate'][0]:.2f}x")
    print(f"BENCH name=trec_eval_all_trec_q ours_s={best['ours'][0]:.3f} peer_s={best['c'][0]:.3f} "
          f"speedup={best['c'][0] / best['ours'][0]:.2f} peak_mb={best['ours'][2]:.0f} "
          f"ours_cpu_s={best['ours'][1]:.3f} peer_cpu_s={best['c'][1]:.3f} "
          f"evaluate_speedup={best['c8'][0] / best['evaluate'][0]:.2f} identical={int(identical)} load={load()}")


def write_memory_case(root: Path, long_list: int | None, n_topics: int = 50_000) -> tuple[Path, Path]:
    """A 50,000-topic qrels (20 judgments each) and a run of 10 topics × 1,000 documents; with ``long_list`` the
    first topic's list has that many documents instead."""
    rng = np.random.default_rng(0)
    qrels = root / "qrels.txt"
    with open(qrels, "w") as f:
        for t in range(n_topics):
            grades = rng.integers(0, 3, 20)
            f.write("".join(f"{t} 0 d{t}_{d} {g}\n" for d, g in enumerate(grades)))
    run = root / "run.txt"
    with open(run, "w") as f:
        for t in range(10):
            n = long_list if (long_list and t == 0) else 1000
            f.write("".join(f"{t} Q0 d{t}_{d} {d + 1} {n - d} r\n" for d in range(n)))
    return qrels, run


_PEER_ONE = """
import sys, pytrec_eval
with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg"}).evaluate(run)
"""


def memory_cases() -> None:
    cases = {"qrels50k_run10x1000": None, "qrels50k_topic5020": 5020, "qrels50k_list200k": 200_000}
    for name, long_list in cases.items():
        with tempfile.TemporaryDirectory() as tmp:
            qrels, run = write_memory_case(Path(tmp), long_list)
            ours_s, _, ours_mb = measure(meta_eval_cmd("evaluate", "-Q", str(qrels), str(run), "-m", "map", "-m",
                                                       "ndcg"))
            peer_s, _, peer_mb = measure([sys.executable, "-c", _PEER_ONE, str(qrels), str(run)])
        print(f"{name}: meta-eval {ours_s:.2f} s {ours_mb:.0f} MB; pytrec_eval {peer_s:.2f} s {peer_mb:.0f} MB")
        print(f"BENCH name=evaluate_{name} ours_s={ours_s:.3f} peer_s={peer_s:.3f} speedup={peer_s / ours_s:.2f} "
              f"peak_mb={ours_mb:.0f} peer_peak_mb={peer_mb:.0f}")


#: The growth series' commands (one process each, on one core where it has --jobs, so CPU times compare): every
#: analysis, informativeness as the study's stage on a fixed sample of 300 lists (MEM's cost is per list; with
#: every list it would follow the collection exactly, at 16× for hours).
_STUDY_OTHER_STAGES = [s for s in builtin_modules() if s not in ("scores", "informativeness", "ltr")]
GROWTH = [("evaluate", ["evaluate", "-m", "AP", "-m", "nDCG", "-m", "P@10", "-m", "bpref"]),
          ("discpower", ["discpower", "-m", "AP", "-m", "nDCG", "--top", "0", "-B", "1000", "--jobs", "1"]),
          ("correlate", ["correlate", "-m", "AP", "-m", "nDCG", "-B", "200"]),
          ("compare", ["compare", "-m", "AP", "-m", "nDCG"]),
          ("anova", ["anova", "-m", "AP", "-m", "nDCG"]),
          ("informativeness", ["study", "-m", "AP", "--against", "nDCG", "--mem-lists", "300", "--jobs", "1",
                               *sum((["--skip", stage] for stage in _STUDY_OTHER_STAGES), [])])]


def growth(scales: list[int], cache: Path) -> None:
    """Every analysis on synthetic collections of 1×, 4×, 16× the TREC-COVID size (:data:`GROWTH`)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from make_synthetic import make_collection

    base = None
    for k in scales:
        folder = cache / f"covid-x{k}"
        if not (folder / "runs").is_dir():
            make_collection(folder, 143, 30 * k, 1000, seed=0)
        qrels, runs = folder / "qrels.txt", folder / "runs"
        text_mb = sum(p.stat().st_size for p in runs.iterdir()) / 2**20
        rows = {}
        for name, args in GROWTH:
            with tempfile.TemporaryDirectory() as tmp:
                out = ["-o", str(Path(tmp) / "out")] if args[0] == "study" else []
                wall, cpu, mb = measure(meta_eval_cmd(*args, *out, "-Q", str(qrels), str(runs), "--no-progress"))
            rows[name] = (wall, cpu, mb)
            ratio = "" if base is None else f" cpu_vs_1x={cpu / base[name][1]:.2f}"
            print(f"BENCH name=growth_{name}_x{k} ours_s={wall:.3f} cpu_s={cpu:.3f} peak_mb={mb:.0f} "
                  f"gz_mb={text_mb:.0f} lines={143 * 30 * k * 1000}{ratio} load={load()}")
        base = base or rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared/data/trec-covid-round1")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=["trec-covid", "memory", "trec-eval", "growth"], default=None)
    parser.add_argument("--trec-eval", default=shutil.which("trec_eval"), help="trec_eval binary for the C loop.")
    parser.add_argument("--trec-eval10", default=shutil.which("trec_eval10"),
                        help="trec_eval 10 binary (built from its sources) for the trec-eval row.")
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "meta-eval-synthetic")
    args = parser.parse_args()
    if args.only in (None, "trec-covid"):
        trec_covid(args.data, args.repeat, args.trec_eval)
    if args.only in (None, "memory"):
        memory_cases()
    if args.only in (None, "trec-eval"):
        trec_eval_report(args.data, args.repeat, args.trec_eval10)
    if args.only in (None, "growth"):
        growth(args.scales, args.cache)


if __name__ == "__main__":
    main()
