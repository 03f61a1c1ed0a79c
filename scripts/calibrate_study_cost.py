"""Calibration of the study's cost models: one core's seconds of each analysis, beside the units its model counts.

Runs a whole study in this process with ``jobs=1`` (every figure drawn here, no worker) and the CPU clock
(``time.process_time``: a busy machine slows the wall clock, not the work), without the MEM cache, and prints one
line per analysis and for the report, ``analysis units seconds``, and one for the figures (already counted in
their analyses' seconds), ``figures count seconds``. The runs the models are fitted on are stated in each analysis
module (``COST = CostModel.fit(..., {run: (units, seconds)})``) and in ``orchestration/study.py`` (``REPORT_COST``,
``FIGURE_RUNS``); this script reproduces them:

    python scripts/calibrate_study_cost.py --quick     # "demo, quick": every analysis's quick parameters, B = 50
    python scripts/calibrate_study_cost.py             # "demo": the defaults
    python scripts/calibrate_study_cost.py --quick --data ../shared/data/trec-covid-round1    # "TREC-COVID, quick"
    python scripts/calibrate_study_cost.py --data ../shared/data/trec-covid-round1            # "TREC-COVID"

``--fit FILE...`` reads such outputs (one file per run, named after it) and prints each model's coefficients and
its relative error on every run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

#: The analyses of the default study whose quick parameters the quick run uses (properties has none).
QUICK_RESAMPLES = 50


def quick_params() -> dict[str, dict]:
    """Every built-in analysis's quick parameters (what the contract test runs it with)."""
    from meta_eval.analyses import analyses

    return {a.name: dict(a.quick) for a in analyses() if a.quick}


def measure(source, quick: bool) -> list[tuple[str, float, float]]:
    """(analysis, units, CPU seconds) of every analysis of a study of ``source``, then the report's."""
    from meta_eval.core import progress
    from meta_eval.orchestration import study
    from meta_eval.orchestration.study import StudyOptions, run_study

    from meta_eval.rendering.report import Report

    seen, figures = {}, []
    made, draw = study.study_progress, Report.figure

    def timed(self, *args, **kwargs):  # a figure drawn and written here (jobs=1): its CPU time
        started = time.process_time()
        try:
            return draw(self, *args, **kwargs)
        finally:
            figures.append(time.process_time() - started)

    def keep(data, plan, *, enabled=True):
        seen.update(data=data, plan=plan, stages=made(data, plan, enabled=enabled))
        return seen["stages"]

    params = {name: p for name, p in quick_params().items() if name != "informativeness"} if quick else {}
    params["informativeness"] = {**(quick_params()["informativeness"] if quick else {}), "no_cache": True}
    options = StudyOptions(params={k: v for k, v in params.items() if k in _default_analyses()},
                           n_resamples=QUICK_RESAMPLES if quick else 1000)
    os.environ["META_EVAL_PROGRESS"] = "off"
    progress.clock, study.study_progress, Report.figure = time.process_time, keep, timed
    with tempfile.TemporaryDirectory() as tmp:
        run_study(source, Path(tmp) / "study", options, progress=True, jobs=1)
    stages = seen["stages"]
    rows = [(decl.name, float(decl.cost.count(seen["data"], p)) if decl.cost else float("nan"),
             stages.measured[decl.name]) for decl, p in seen["plan"]]
    return rows + [("report", float(len(seen["plan"])), stages.measured["report"]),
                   ("figures", float(len(figures)), sum(figures))]


def _default_analyses() -> set[str]:
    import meta_eval as me
    from meta_eval.analyses import AnalysisData
    from meta_eval.orchestration.study import StudyOptions, study_plan

    data = AnalysisData.from_collection(me.demo_collection(), ["AP"])
    return {decl.name for decl, _ in study_plan(data, StudyOptions())[0]}


def fit(files: list[Path]) -> None:
    """Each model's coefficients from the runs in ``files`` and its relative error on each run."""
    from meta_eval.analyses import analyses
    from meta_eval.core.progress import CostModel

    runs = {f.stem: {line.split()[0]: (float(line.split()[1]), float(line.split()[2]))
                     for line in f.read_text().splitlines() if line and not line.startswith("#")} for f in files}
    units = {a.name: a.cost.unit for a in analyses() if a.cost is not None} | {"report": "analyses in the report",
                                                                              "figures": "figures"}
    for name in next(iter(runs.values())):
        measured = {run: rows[name] for run, rows in runs.items() if name in rows}
        model = CostModel.fit(units.get(name, "?"), float, measured)
        errors = ", ".join(f"{run} {model.seconds(u) / s - 1:+.0%}" for run, (u, s) in measured.items())
        print(f"{name:>22}: {model.fixed_s:.3g} s + {model.per_unit_s:.3g} s x units  ({errors})  "
              f"{ {run: (round(u, 1), round(s, 2)) for run, (u, s) in measured.items()} }")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="a collection: DATA/qrels.txt and DATA/runs (default: the demo)")
    parser.add_argument("--quick", action="store_true", help="every analysis with its quick parameters")
    parser.add_argument("--fit", type=Path, nargs="+", help="fit the models on these outputs of this script")
    args = parser.parse_args()
    if args.fit:
        fit(args.fit)
        return
    import meta_eval as me

    source = me.demo_collection() if args.data is None else \
        me.load_collection(args.data / "qrels.txt", sorted(str(p) for p in (args.data / "runs").iterdir()))
    load = os.getloadavg()[0]
    started = time.perf_counter()
    rows = measure(source, args.quick)
    print(f"# {'quick ' if args.quick else ''}{args.data or 'demo'}: jobs=1, CPU seconds; load {load:.1f} -> "
          f"{os.getloadavg()[0]:.1f}, wall {time.perf_counter() - started:.0f} s")
    for name, units, seconds in rows:
        print(f"{name} {units:.6g} {seconds:.3f}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
