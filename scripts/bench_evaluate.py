"""Benchmark: ``meta-eval evaluate`` as a user runs it (a whole process) beside the trec_eval 10 C program.

Every comparison runs each side as a whole process (interpreter start, imports, reading, scoring, printing),
alternated ``--repeat`` times so that a change of the machine's load weighs on every side alike, and reports the
median wall time, the median CPU time (user + system, every thread and child) and the peak resident memory, with
the load average before and after: on a shared machine wall times are noisy, CPU times less so.

trec-covid
    The 143 TREC-COVID round-1 runs, decompressed into a temporary folder (155 MB of text; trec_eval reads no pipe),
    and 7 measures: ``meta-eval evaluate`` (AP, nDCG, nDCG@10, P@10, Rprec, RR, bpref) against a shell loop of
    the trec_eval 10 C program (``--trec-eval10``; ``scripts/fetch_trec_eval.py``) with the same measures over the
    same files; also meta-eval on the gzip files. Then ``meta-eval --help`` and ``import meta_eval``.
synthetic
    A synthetic collection of 20 runs × 5,000 topics × depth 100 (10 M lines; ``scripts/make_synthetic.py``:
    docids never repeat across topics, 130 judgments a topic), decompressed, the same two sides.
reading
    ``io.read_runs`` against its floor, in this process, alternated: reading the files, ISA-L's gunzip and Arrow's
    CSV reader (topic, docid, score), one file after the other; CPU time (every thread) and µs per line, on the
    143 TREC-COVID gzip runs and on the synthetic 5,000-topic collection (docids that never repeat across topics).
trec-eval
    ``meta-eval trec-eval -q -m all_trec qrels runs...`` (every run's trec_eval report, 426,000 lines) on the 143
    gzip runs, and ``meta-eval evaluate -q -m all_trec -f trec`` on the decompressed runs, against a shell loop of
    trec_eval 10 ``-q -m all_trec`` over the decompressed runs; the trec-eval output is checked identical byte for
    byte.
workers
    The default ``--jobs`` against ``--jobs 1`` on ``meta-eval discpower`` and ``meta-eval study`` (the demo
    collection), with nothing and with two CPU-bound processes (``python -c "while True: pass"``) running beside
    them; the bar: the default never takes more than 1.1 times as long.
memory
    Issue 15's cases, each a whole ``meta-eval evaluate`` process beside pytrec_eval: a 50,000-topic qrels against a
    run of 10 topics × 1,000 documents, the same with one topic of 5,020 documents, and with one list of 200,000.
growth
    Synthetic collections of 1×, 4× and 16× the TREC-COVID size (143 runs × 30·k topics × depth 1000,
    ``scripts/make_synthetic.py``): time, CPU and peak memory of ``evaluate`` and of the analyses (``discpower``,
    ``correlate``, ``compare``, ``anova``, the study's informativeness stage on 300 lists), to show linear time and
    memory that follows the collection, not the text.

Every case ends with a ``BENCH`` line.

Usage: python scripts/bench_evaluate.py [--data ../shared/data/trec-covid-round1] [--repeat 5]
       [--only trec-covid|synthetic|reading|trec-eval|workers|memory|growth] [--trec-eval10 /path/to/trec_eval10]
       [--scales 1 4 16]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from meta_eval.analyses import builtin_modules

OURS = ["AP", "nDCG", "nDCG@10", "P@10", "Rprec", "RR", "bpref"]
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


def alternate(sides: dict[str, list[str] | str], repeat: int) -> dict[str, tuple[float, float, float]]:
    """Every side run ``repeat`` times, in turn, the order reversed every other round (A B, B A, ...: a load that
    rises or falls meanwhile weighs on every side alike): per side the median wall and CPU times and the largest
    peak memory."""
    for command in sides.values():  # warm the page cache and the bytecode
        measure(command)
    runs: dict[str, list] = {name: [] for name in sides}
    for round_ in range(repeat):
        for name in (list(sides) if round_ % 2 == 0 else list(sides)[::-1]):
            runs[name].append(measure(sides[name]))
    return {name: (statistics.median(r[0] for r in rs), statistics.median(r[1] for r in rs), max(r[2] for r in rs))
            for name, rs in runs.items()}


def load() -> str:
    return "%.1f" % os.getloadavg()[0]


def meta_eval_cmd(*args: str) -> list[str]:
    return [shutil.which("meta-eval") or "meta-eval", *args]


def evaluate_cmd(qrels: Path, runs: Path | str, *extra: str) -> list[str]:
    """``meta-eval evaluate`` with the benchmark's measures."""
    return meta_eval_cmd("evaluate", "-Q", str(qrels), str(runs), *sum((["-m", m] for m in OURS), []),
                         "--no-progress", *extra)


def c_loop(trec_eval: str, options: list[str], qrels: Path, runs: list[Path]) -> str:
    """A shell loop of the trec_eval program over the runs."""
    return " ; ".join(f"{trec_eval} {' '.join(options)} {qrels} {path}" for path in runs)


def gunzip_all(runs: Path, folder: str | Path) -> list[Path]:
    """The runs decompressed into ``folder``, outside the timing: trec_eval reads plain files only (it sizes the
    file before reading it, so it cannot read a pipe)."""
    from meta_eval.inputs.trec import read_bytes

    out = []
    for path in sorted(runs.iterdir()):
        target = Path(folder) / path.name.removesuffix(".gz")
        target.write_bytes(read_bytes(path))
        out.append(target)
    return out


def compare(name: str, qrels: Path, gz_runs: Path, repeat: int, trec_eval10: str | None) -> None:
    """``meta-eval evaluate`` (7 measures) against the trec_eval 10 loop, both on the runs decompressed."""
    if not trec_eval10:
        print(f"{name}: not run (give --trec-eval10 PATH to a trec_eval 10 binary)")
        return
    with tempfile.TemporaryDirectory() as plain:
        plain_runs = gunzip_all(gz_runs, plain)
        before = load()
        sides = {"ours": evaluate_cmd(qrels, plain), "c": c_loop(trec_eval10, TREC_EVAL, qrels, plain_runs),
                 "ours_gz": evaluate_cmd(qrels, gz_runs)}
        t = alternate(sides, repeat)
    ours, c, gz = t["ours"], t["c"], t["ours_gz"]
    print(f"{name}: {len(plain_runs)} runs, load average {before} before, {load()} after; medians of {repeat}")
    print(f"  meta-eval evaluate      : {ours[0]:.2f} s wall, {ours[1]:.2f} s CPU, {ours[2]:.0f} MB peak")
    print(f"  trec_eval 10 loop       : {c[0]:.2f} s wall, {c[1]:.2f} s CPU  ({c[0] / ours[0]:.2f}x wall, "
          f"{c[1] / ours[1]:.2f}x CPU)")
    print(f"  meta-eval on the gzip   : {gz[0]:.2f} s wall, {gz[1]:.2f} s CPU")
    print(f"BENCH name=evaluate_{name} ours_s={ours[0]:.3f} peer_s={c[0]:.3f} speedup={c[0] / ours[0]:.2f} "
          f"peak_mb={ours[2]:.0f} ours_cpu_s={ours[1]:.3f} peer_cpu_s={c[1]:.3f} cpu_speedup={c[1] / ours[1]:.2f} "
          f"ours_gz_s={gz[0]:.3f} load_before={before} load={load()}")


def trec_covid(data: Path, repeat: int, trec_eval10: str | None) -> None:
    compare("trec_covid", data / "qrels.txt", data / "runs", repeat, trec_eval10)
    help_run = best(meta_eval_cmd("--help"), max(repeat, 5))
    import_run = best([sys.executable, "-c", "import meta_eval"], max(repeat, 5))
    print(f"BENCH name=startup help_s={help_run[0]:.3f} help_cpu_s={help_run[1]:.3f} import_s={import_run[0]:.3f} "
          f"import_cpu_s={import_run[1]:.3f} load={load()}")


def synthetic(cache: Path, repeat: int, trec_eval10: str | None) -> None:
    """20 runs × 5,000 topics × depth 100 (:func:`make_synthetic.make_collection`)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from make_synthetic import make_collection

    folder = cache / "runs20-topics5000-depth100"
    if not (folder / "runs").is_dir():
        make_collection(folder, 20, 5000, 100, seed=0)
    compare("synthetic_5000_topics", folder / "qrels.txt", folder / "runs", repeat, trec_eval10)


def trec_eval_report(data: Path, repeat: int, trec_eval10: str | None) -> None:
    """``meta-eval trec-eval -q -m all_trec`` on the 143 gzip runs and ``meta-eval evaluate -q -m all_trec -f trec``
    on the decompressed ones, against a shell loop of trec_eval 10, alternated."""
    if not trec_eval10:
        print("trec-eval: not run (give --trec-eval10 PATH to a trec_eval 10 binary)")
        return
    qrels, runs = data / "qrels.txt", data / "runs"
    gz = sorted(runs.iterdir())
    ours_cmd = meta_eval_cmd("trec-eval", "-q", "-m", "all_trec", str(qrels), *map(str, gz))
    with tempfile.TemporaryDirectory() as plain, tempfile.TemporaryDirectory() as out:
        plain_runs = gunzip_all(runs, plain)
        loop = c_loop(trec_eval10, ["-q", "-m", "all_trec"], qrels, plain_runs)
        subprocess.run(f"( {loop} ) > {out}/c.txt", shell=True, check=True)
        with open(f"{out}/ours.txt", "wb") as f:
            subprocess.run(ours_cmd, stdout=f, check=True, env=ENV)
        identical = Path(f"{out}/c.txt").read_bytes() == Path(f"{out}/ours.txt").read_bytes()
        before = load()
        evaluate_all = meta_eval_cmd("evaluate", "-Q", str(qrels), plain, "-m", "all_trec", "-q", "-f", "trec",
                                     "--no-progress")
        t = alternate({"trec_eval": ours_cmd, "evaluate": evaluate_all, "c": loop}, repeat)
    ours, ev, c = t["trec_eval"], t["evaluate"], t["c"]
    print(f"trec-eval: load average {before} before, {load()} after; medians of {repeat}")
    print(f"  meta-eval trec-eval -q -m all_trec        : {ours[0]:.2f} s wall, {ours[1]:.2f} s CPU, {ours[2]:.0f} MB"
          f" peak (output identical to the loop's: {identical})")
    print(f"  meta-eval evaluate -q -m all_trec -f trec : {ev[0]:.2f} s wall, {ev[1]:.2f} s CPU, {ev[2]:.0f} MB peak")
    print(f"  trec_eval 10 loop, -q -m all_trec         : {c[0]:.2f} s wall, {c[1]:.2f} s CPU")
    print(f"BENCH name=trec_eval_all_trec_q ours_s={ours[0]:.3f} peer_s={c[0]:.3f} speedup={c[0] / ours[0]:.2f} "
          f"peak_mb={ours[2]:.0f} ours_cpu_s={ours[1]:.3f} peer_cpu_s={c[1]:.3f} identical={int(identical)} "
          f"load_before={before} load={load()}")
    print(f"BENCH name=evaluate_all_trec_q_trec ours_s={ev[0]:.3f} peer_s={c[0]:.3f} speedup={c[0] / ev[0]:.2f} "
          f"peak_mb={ev[2]:.0f} ours_cpu_s={ev[1]:.3f} peer_cpu_s={c[1]:.3f} cpu_speedup={c[1] / ev[1]:.2f} "
          f"load_before={before} load={load()}")


def _floor(files: list[Path]) -> int:
    """Read, decompress and parse (the three columns a run needs) every file, as ``io.read_run`` would: the lines."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    from isal import isal_zlib

    from meta_eval.inputs.trec import RUN_FIELDS

    lines = 0
    for path in files:
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = isal_zlib.decompress(data, wbits=31)
        delimiter = "\t" if b" " not in data else " "
        table = pacsv.read_csv(pa.BufferReader(data), read_options=pacsv.ReadOptions(
            column_names=list(RUN_FIELDS), use_threads=False, block_size=len(data) + 1),
            parse_options=pacsv.ParseOptions(delimiter=delimiter, quote_char=False, double_quote=False),
            convert_options=pacsv.ConvertOptions(column_types={"score": pa.float64(), "topic": pa.string(),
                                                               "docid": pa.string()},
                                                 include_columns=["topic", "docid", "score"], check_utf8=False))
        lines += table.num_rows
    return lines


def reading(data: Path, cache: Path, repeat: int) -> None:
    """``io.read_runs`` against the floor (read, gunzip, parse), CPU time, in this process (its allocator tuned as
    the command line tunes it)."""
    from meta_eval.cli.common import keep_freed_memory
    from meta_eval.inputs.trec import read_runs

    keep_freed_memory()

    sys.path.insert(0, str(ROOT / "scripts"))
    from make_synthetic import make_collection

    synthetic = cache / "runs20-topics5000-depth100"
    if not (synthetic / "runs").is_dir():
        make_collection(synthetic, 20, 5000, 100, seed=0)
    for name, folder in (("trec_covid", data / "runs"), ("synthetic_5000_topics", synthetic / "runs")):
        files = sorted(folder.iterdir())
        cpu: dict[str, list[float]] = {"floor": [], "read_runs": []}
        lines = _floor(files)  # warm the page cache
        for round_ in range(repeat):
            for side in (("floor", "read_runs") if round_ % 2 == 0 else ("read_runs", "floor")):
                start = time.process_time()
                _floor(files) if side == "floor" else read_runs(files)
                cpu[side].append(time.process_time() - start)
        floor, ours = statistics.median(cpu["floor"]), statistics.median(cpu["read_runs"])
        print(f"reading {name}: read_runs {ours:.3f} s CPU ({1e6 * ours / lines:.3f} µs/line), floor {floor:.3f} s "
              f"CPU ({1e6 * floor / lines:.3f} µs/line): {ours / floor:.2f}x the floor (load {load()})")
        print(f"BENCH name=read_runs_{name} ours_s={ours:.3f} peer_s={floor:.3f} speedup={floor / ours:.2f} "
              f"peak_mb=nan lines={lines} us_per_line={1e6 * ours / lines:.4f} floor_ratio={ours / floor:.3f} "
              f"load={load()}")


#: The commands of the workers case (the demo collection): name -> arguments.
WORKERS = {"discpower": ["discpower"], "study": ["study"]}


def workers(repeat: int) -> None:
    """The default ``--jobs`` against ``--jobs 1``, alone and beside two CPU-bound processes."""
    for busy in (0, 2):
        loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
        try:
            time.sleep(3.0 if busy else 0.0)  # the loops running before the commands start
            for name, args in WORKERS.items():
                with tempfile.TemporaryDirectory() as tmp:
                    out = (lambda tag: ["-o", str(Path(tmp) / tag)]) if name == "study" else (lambda tag: [])
                    before = load()
                    t = alternate({"default": meta_eval_cmd(*args, *out("default"), "--no-progress"),
                                   "jobs1": meta_eval_cmd(*args, *out("jobs1"), "--jobs", "1", "--no-progress")},
                                  repeat)
                d, one = t["default"], t["jobs1"]
                print(f"{name} beside {busy} busy loops: default {d[0]:.2f} s wall ({d[1]:.2f} s CPU), --jobs 1 "
                      f"{one[0]:.2f} s wall ({one[1]:.2f} s CPU): {d[0] / one[0]:.2f} (load {before} -> {load()})")
                print(f"BENCH name=workers_{name}_busy{busy} ours_s={d[0]:.3f} peer_s={one[0]:.3f} "
                      f"speedup={one[0] / d[0]:.2f} peak_mb={d[2]:.0f} ratio={d[0] / one[0]:.3f} "
                      f"ours_cpu_s={d[1]:.3f} peer_cpu_s={one[1]:.3f} load_before={before} load={load()}")
        finally:
            for process in loops:
                process.kill()
                process.wait()


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
          ("informativeness", ["study", "-m", "AP", "--against", "nDCG", "--informativeness-lists", "300", "--jobs", "1",
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
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", choices=["trec-covid", "synthetic", "reading", "trec-eval", "workers", "memory",
                                           "growth"], default=None)
    parser.add_argument("--trec-eval10", default=os.environ.get("META_EVAL_TREC_EVAL10") or shutil.which("trec_eval"),
                        help="trec_eval 10 binary (built from its sources).")
    parser.add_argument("--scales", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "meta-eval-synthetic")
    args = parser.parse_args()
    if args.only in (None, "trec-covid"):
        trec_covid(args.data, args.repeat, args.trec_eval10)
    if args.only in (None, "synthetic"):
        synthetic(args.cache, args.repeat, args.trec_eval10)
    if args.only in (None, "reading"):
        reading(args.data, args.cache, args.repeat)
    if args.only in (None, "trec-eval"):
        trec_eval_report(args.data, args.repeat, args.trec_eval10)
    if args.only in (None, "workers"):
        workers(max(3, args.repeat // 2))
    if args.only in (None, "memory"):
        memory_cases()
    if args.only in (None, "growth"):
        growth(args.scales, args.cache)


if __name__ == "__main__":
    main()
