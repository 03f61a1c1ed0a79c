"""Benchmark: a per-list metric plug-in against its vectorised twin, in the commands a user runs (issue 35).

The metric: graded rank-biased precision, GRBP = Σ_i (1 - p) p^(i-1) g_i / c (p = 0.8, g_i the grade at rank i,
unjudged and non-relevant 0, c the highest grade), written three ways in one plug-in file (:data:`PLUGIN`, written
to a temporary folder and named ``plug.py:FORM`` as a user names it):

- ``grbp_loop``: per list, a loop down the ranking — the form a researcher writes first;
- ``grbp_numpy``: per list, numpy over the one list;
- ``grbp``: vectorised over ``me.Rankings`` — the twin the other two are compared with.

Commands, each run as a subprocess (``--jobs 1``: the CPU time of a command is its own, read from
``RUSAGE_CHILDREN``), the forms alternating ``--repeat`` times, MEM's cache a fresh folder for every run:

- ``meta-eval study -m plug.py:FORM`` on the embedded demo collection: every analysis of the default study;
- with the shared data (``$META_EVAL_SHARED``, default ``/work/shared``): ``meta-eval incomplete-judgments`` on
  TREC-COVID round 1 (143 runs, 30 topics, lists of up to 1,000 documents: every run re-scored under 360 reduced
  qrels — the analysis the issue measured at 473 s against 34 s); ``--covid-study``: the whole study there too.

Every command runs in the temporary folder (``python -c`` puts the working folder first on ``sys.path``: the
meta_eval timed is the one on ``PYTHONPATH``), after one untimed warm-up that compiles MEM's numba kernels for
that code. Each run prints its CPU time (user + system), wall time and the load average; each case ends with a BENCH line
(best CPU times; ``ratio`` = per-list / vectorised, the issue's target is at most 2), and the last BENCH line,
``name=perlist_plugin``, gives the worst ratio of all the cases run. ``--code DIR`` times the meta_eval package in
DIR instead of this checkout (the main checkout: the figures before per-list plug-ins were compiled).

``--distinct`` measures instead what batching identical lists or caching values across calls could save (what
the function sees is only a list's grades and its topic's counts, so equal ones have equal values): in this
process, for every call of the per-list plug-in, its lists, the distinct ones among them, and those never seen in
an earlier call — per module that called it, over the demo study and, on TREC-COVID, incomplete judgments and
reusability.

Usage: python scripts/bench_plugins.py [--repeat 2] [--style loop numpy] [--no-covid] [--covid-study] [--code DIR]
       python scripts/bench_plugins.py --distinct
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

PLUGIN = textwrap.dedent('''
    """Graded RBP (p = 0.8) three ways: per list with a loop, per list with numpy, vectorised."""
    import numpy as np

    import meta_eval as me

    P = 0.8


    @me.per_list
    def grbp_loop(grades, counts):
        """Graded RBP, one list, a loop down the ranking."""
        top = max(len(counts) - 1, 1)
        total, weight = 0.0, 1 - P
        for g in grades:
            if g > 0:
                total += weight * g / top
            weight *= P
        return total


    @me.per_list
    def grbp_numpy(grades, counts):
        """Graded RBP, one list, numpy."""
        top = max(len(counts) - 1, 1)
        return (1 - P) * float(np.sum(np.maximum(grades, 0) * P ** np.arange(len(grades)))) / top


    def grbp(r):
        """Graded RBP, every list at once."""
        return (1 - P) * (np.maximum(r.grades, 0) * P ** (r.ranks - 1)).sum(-1) / max(r.max_grade, 1)
    ''')

STYLES = {"loop": "grbp_loop", "numpy": "grbp_numpy"}
TWIN = "grbp"


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def peak_mb() -> float:
    """Peak resident memory of the largest command run so far, in MB (Linux ru_maxrss is in KB)."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def run(command: list[str], env: dict, label: str) -> tuple[float, float]:
    """(CPU s, wall s) of one command; its output goes to a log shown only when it fails."""
    cpu, wall = children_cpu(), time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=env["BENCH_CWD"])
    cpu, wall = children_cpu() - cpu, time.perf_counter() - wall
    if done.returncode != 0:
        sys.exit(f"{label} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    warned = [line for line in done.stderr.splitlines() if "per-list plug-in" in line]
    print(f"  {label:44s} {cpu:8.2f} s CPU {wall:8.2f} s wall  load {os.getloadavg()[0]:5.2f}"
          + (f"\n    stderr: {warned[0][:160]}" if warned else ""), flush=True)
    return cpu, wall


def case(name: str, command, forms: list[str], repeat: int, env: dict, tmp: Path) -> tuple[float, str, float, float]:
    """Time ``command(form, out)`` for each form, alternating; a BENCH line per per-list form; returns the worst
    (ratio, case, per-list CPU s, vectorised CPU s)."""
    times: dict[str, list[tuple[float, float]]] = {form: [] for form in forms}
    print(f"{name}:", flush=True)
    for r in range(repeat):
        for form in forms:
            run_env = dict(env, XDG_CACHE_HOME=str(tmp / f"cache-{name}-{form}-{r}"))  # no MEM cache shared
            times[form].append(run(command(form, tmp / f"out-{name}-{form}-{r}"), run_env, f"{form} (run {r + 1})"))
    twin = min(t[0] for t in times[TWIN])
    worst = (0.0, "", 0.0, twin)
    for form in forms:
        if form == TWIN:
            continue
        ours = min(t[0] for t in times[form])
        ratio = ours / twin
        worst = max(worst, (ratio, f"{name}_{form}", ours, twin))
        print(f"BENCH name=perlist_plugin_{name}_{form} ours_s={ours:.2f} peer_s={twin:.2f} "
              f"speedup={twin / ours:.2f} peak_mb={peak_mb():.0f} ratio={ratio:.2f} "
              f"ours_wall_s={min(t[1] for t in times[form]):.2f} peer_wall_s={min(t[1] for t in times[TWIN]):.2f} "
              f"load={os.getloadavg()[0]:.2f}", flush=True)
    return worst


def distinct_lists(plugin: Path, covid: Path, tmp: Path, draws: int) -> None:
    """The share of distinct lists in each call of the per-list plug-in, and of lists new to all earlier calls."""
    from collections import defaultdict

    import meta_eval as me
    from meta_eval.measures import plugins
    from meta_eval.orchestration.study import StudyOptions, run_study
    from meta_eval.statistics.incomplete_judgments import incomplete_judgments
    from meta_eval.statistics.reusability import reusability

    stats: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])  # calls, lists, distinct in the call, new
    seen: set[bytes] = set()
    original = plugins._Lists.of.__func__

    def recording(cls, r):
        lists = original(cls, r)
        keys = [hashlib.blake2b(g[:n].tobytes() + c.tobytes(), digest_size=8).digest()
                for g, n, c in zip(lists.grades, lists.lengths.tolist(), lists.counts)]
        row = stats[_caller()]
        row[0] += 1
        row[1] += len(keys)
        row[2] += len(set(keys))
        row[3] += len(set(keys) - seen)
        seen.update(keys)
        return lists

    plugins._Lists.of = classmethod(recording)
    spec = f"{plugin}:grbp_loop"
    run_study(me.demo_collection(), tmp / "distinct-demo", StudyOptions(metrics=[spec], formats=("png",)), jobs=1)
    _print_distinct("demo study", stats)
    if covid.is_dir():
        stats.clear()
        seen.clear()
        col = me.load_collection(str(covid / "qrels.txt"), str(covid / "runs"))
        incomplete_judgments(col, [spec], n_draws=draws, jobs=1)
        reusability(col, [spec])
        _print_distinct("TREC-COVID", stats)


def _caller() -> str:
    """The module of meta-eval's statistics or analyses that called the plug-in."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if "/meta_eval/statistics/" in name or "/meta_eval/analyses/" in name:
            return name.split("/meta_eval/")[1]
        frame = frame.f_back
    return "?"


def _print_distinct(title: str, stats: dict) -> None:
    print(f"{title}: caller, calls, lists, distinct within a call, new to all earlier calls")
    for caller, (calls, lists, distinct, new) in stats.items():
        print(f"  {caller:52s} {calls:6d} {lists:10,d} {distinct / max(lists, 1):8.1%} {new / max(lists, 1):8.1%}")
    total = np.sum(list(stats.values()), axis=0)
    print(f"  {'all':52s} {total[0]:6d} {total[1]:10,d} {total[2] / total[1]:8.1%} {total[3] / total[1]:8.1%}",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--style", nargs="+", choices=sorted(STYLES), default=["loop", "numpy"])
    parser.add_argument("--no-demo", action="store_true", help="leave out the demo study")
    parser.add_argument("--no-covid", action="store_true", help="leave out TREC-COVID")
    parser.add_argument("--covid-study", action="store_true", help="also the whole study on TREC-COVID (long)")
    parser.add_argument("--draws", type=int, default=20, help="draws per fraction of incomplete judgments (COVID)")
    parser.add_argument("--distinct", action="store_true", help="measure the distinct lists per call instead")
    parser.add_argument("--code", type=Path, default=Path(__file__).resolve().parents[1],
                        help="folder holding the meta_eval package to time (default: this checkout)")
    args = parser.parse_args()

    shared = Path(os.environ.get("META_EVAL_SHARED", "/work/shared"))
    covid = shared / "data" / "trec-covid-round1"
    env = dict(os.environ, PYTHONPATH=str(args.code.resolve()), PYTHONDONTWRITEBYTECODE="1")
    forms = [TWIN] + [STYLES[s] for s in args.style]
    cli = [sys.executable, "-c", "from meta_eval.cli import run; run()"]
    results = []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        env["BENCH_CWD"] = folder  # python -c puts the working folder first on sys.path: no meta_eval there
        imported = subprocess.run([sys.executable, "-c", "import meta_eval; print(meta_eval.__file__)"], env=env,
                                  cwd=folder, capture_output=True, text=True).stdout.strip()
        print(f"meta_eval from {imported}; {os.cpu_count()} CPUs visible; load {os.getloadavg()}", flush=True)
        run([*cli, "informativeness", "-m", "AP", "--lists", "8", "--no-cache", "--no-figures", "-o",
             str(tmp / "warm-up")], env, "warm-up (MEM's kernels compiled, untimed)")
        plugin = tmp / "plug.py"
        plugin.write_text(PLUGIN)
        if args.distinct:
            return distinct_lists(plugin, covid, tmp, args.draws)
        if not args.no_demo:
            results.append(case("demo_study", lambda form, out: [*cli, "study", "-m", f"{plugin}:{form}", "-o",
                                                                   str(out), "--jobs", "1"],
                                forms, args.repeat, env, tmp))
        if covid.is_dir() and not args.no_covid:
            data = ["-Q", str(covid / "qrels.txt"), str(covid / "runs")]
            results.append(case("covid_incomplete_judgments",
                                lambda form, out: [*cli, "incomplete-judgments", *data, "-m", f"{plugin}:{form}",
                                                   "--draws", str(args.draws), "--no-figures", "-o", str(out),
                                                   "--jobs", "1"], forms, args.repeat, env, tmp))
            if args.covid_study:
                results.append(case("covid_study", lambda form, out: [*cli, "study", *data, "-m", f"{plugin}:{form}",
                                                                      "-o", str(out), "--jobs", "1"],
                                    forms, 1, env, tmp))
    ratio, worst_case, ours, twin = max(results)
    print(f"BENCH name=perlist_plugin ours_s={ours:.2f} peer_s={twin:.2f} speedup={twin / ours:.2f} "
          f"peak_mb={peak_mb():.0f} ratio={ratio:.2f} case={worst_case} load={os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
