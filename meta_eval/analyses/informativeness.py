"""Informativeness in a study: how much a measure's value says about the list it scores, by the maximum-entropy
method (Aslam, Yilmaz & Pavlu 2005; graded as in the GAP paper §4.1). The engine — forms, solver, cache — is
:mod:`meta_eval.mem`; this module declares the analysis, its sample of lists, its tables, figures and findings."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from meta_eval.analyses.base import AnalysisData, FigureOutput, Result, TableOutput
from meta_eval.analyses.registry import analysis
from meta_eval.errors import InputError
from meta_eval.params import ANALYSIS_PARAMS, Param


@dataclass
class Informativeness(Result):
    """``summary`` per measure (and relevance threshold), ``lists`` per list, GAP's error over its threshold
    probabilities (``g_grid``, None without grades 0/1/2), sample curves (``curves``) and the number of lists."""

    summary: pd.DataFrame
    lists: pd.DataFrame
    g_grid: pd.DataFrame | None
    curves: pd.DataFrame
    n_lists: int
    targets: list[str]
    against: list[str]
    colors: dict | None = None

    @property
    def rms(self) -> dict[str, float]:
        """Mean RMS error per measure at the lowest relevance threshold (what learning to rank sets beside)."""
        first = self.summary[self.summary["threshold"] == self.summary["threshold"].min()]
        return dict(zip(first["metric"], first["mean_rms"].astype(float)))

    def tables(self) -> list[TableOutput]:
        from meta_eval.tables import g_grid_table, informativeness_table

        out = [TableOutput("informativeness", f"Informativeness: mean RMS error (± s.e.) of the precision-recall "
                           f"curves inferred by the maximum-entropy method from each metric's value, over "
                           f"{self.n_lists} lists", self.summary, informativeness_table(self.summary)),
               TableOutput("informativeness_lists", "Every list, with its RMS error per measure", self.lists)]
        if self.g_grid is not None:
            out.append(TableOutput("informativeness_g_grid", "GAP's mean RMS error over its threshold probabilities "
                                   "g = (g1, g2), with nDCG", self.g_grid, g_grid_table(self.g_grid)))
        return out

    def figures(self) -> list[FigureOutput]:
        from meta_eval.figures.informativeness import figure2, inferred_curves_figure, rms_bar_figure

        out = [FigureOutput("informativeness_rms", "Mean RMS error of inferred vs actual PR curves (±1 s.e.)",
                            lambda: rms_bar_figure(self.summary, colors=self.colors))]
        if self.g_grid is not None:
            out.append(FigureOutput("rms_vs_g", "Mean RMS error (±1 s.e.) over GAP's g (GAP paper, Figure 2); nDCG "
                                    "does not depend on g", lambda: figure2(self.g_grid, colors=self.colors)))
        out.append(FigureOutput("inferred_pr_curves", "Inferred (maximum-entropy) vs actual PR curves for sample "
                                "lists, grade ≥ 1", lambda: inferred_curves_figure(self.curves, colors=self.colors)))
        return out

    def findings(self):
        from meta_eval.findings import informativeness_findings

        return informativeness_findings(self.compact, name="informativeness", targets=self.targets,
                                        references=self.against)


def _grid_problem(step: Any) -> str | None:
    from meta_eval.mem.study import g_grid

    try:
        g_grid(step)
    except InputError as exc:
        return str(exc).split(" ", 3)[-1] if str(exc).startswith("g-grid step") else str(exc)
    return None


def _warm_solver():
    """Start compiling (or loading from cache) the MEM solver's numba kernel in a thread; returns the thread.

    Most of numba's compilation runs in LLVM without the GIL, so on a fresh install it overlaps the analyses before
    informativeness, whose worker processes then load the cached kernel instead of each compiling it.
    """
    import threading

    from meta_eval.mem.solver import warm_up

    thread = threading.Thread(target=warm_up, name="meta-eval-warm-solver", daemon=True)
    thread.start()
    return thread


@analysis("informativeness", title="Informativeness (maximum-entropy method)",
          summary="Informativeness by the maximum-entropy method, on a sample of lists.",
          params=(Param("lists", 300, int, "lists sampled (0: every list with a relevant document retrieved)",
                        within="[0, inf)"),
                  Param("g_grid_step", 0.1, float, "step of GAP's threshold probabilities g = (g1, 1 - g1)",
                        check=_grid_problem, domain="a number in (0, 1] that divides 1 (0.5, 0.25, 0.2, 0.1, ...)"),
                  ANALYSIS_PARAMS["seed"]),
          study={"lists": "mem_lists", "g_grid_step": "g_grid_step", "seed": "seed"}, prepare=_warm_solver,
          parallel=True)
def run(data: AnalysisData, *, lists: int, g_grid_step: float, seed: int) -> Informativeness:
    """For each measure, the maximum-entropy probability-at-rank distribution consistent with a list's value and
    its retrieved grade counts; the RMS error of its expected precision-recall curve against the actual one."""
    from meta_eval import mem

    sample = _sample(data, lists, seed)
    ready = data.prepared.pop("informativeness", None)
    if ready is not None:
        ready.join()
    # every measure gets MEM (declared, derived or sampled expected-value forms), solved by workers that rebuild
    # it from its specification
    with_form = [data.specs.get(name, name) for name in data.raw]
    text = (
        f"Maximum-entropy method (Aslam, Yilmaz & Pavlu 2005; graded as in the GAP paper §4.1) on "
        f"{sample.batch.n_lists} (run, topic) lists with at least one relevant document retrieved (seeded sample of "
        f"at most {lists}). "
        "For each metric, the maximum-entropy probability-at-rank distribution consistent with the list's value and "
        "its retrieved grade counts is solved; its expected precision-recall curve is compared with the actual one "
        "(RMS error at the points where recall changes). Lower is more informative. Metrics are compared on the "
        "same lists: those on which every metric's solve converged (a list failing for one metric is left out of "
        "every mean); the table gives n, each metric's failures and the mean ± 1 standard error.")
    grid = mem.g_grid(g_grid_step) if sample.batch.n_grades == 3 else None
    figure2 = mem.figure2_measures(grid) if grid is not None else []
    # every distribution in one pass of the workers (Figure 2's GAP grid too), so their tails overlap
    mem.check_plugins(sample, with_form)
    solved = mem.solve_cached_many(sample.batch, with_form + figure2, progress=data.progress, jobs=data.jobs,
                                   scheduler=data.scheduler)
    result = mem.informativeness(sample, with_form, solved=solved[:len(with_form)])
    for warning in result.warnings:  # failure rates above 1 % (above 10 %: the metric's row is unreliable)
        print(f"meta-eval: warning: informativeness: {warning}", file=sys.stderr)
        text += f"\n\n**Warning:** {warning}."
    grid_table = None
    if grid is not None:
        grid_table = mem.gap_figure2(sample, grid=grid, filter_lists=False, solved=solved[len(with_form):]).table
    curves = _inferred_curves(sample, [data.specs.get(name, name) for name in data.targets], seed=seed)
    return Informativeness(result.summary, result.lists, grid_table, curves, sample.batch.n_lists, data.targets,
                           list(data.against), data.colors, text=text)


def _sample(data: AnalysisData, limit: int, seed: int):
    """The lists of the analysis: those with a relevant document retrieved, a seeded sample of ``limit``."""
    from meta_eval import mem
    from meta_eval.params import rng

    eligible = mem.qualifying_lists(mem.retrieved_grade_counts(data.collection), min_relevant=1, min_high=0)
    if limit and eligible.size > limit:
        eligible = eligible[np.sort(rng(seed, "study").choice(eligible.size, size=limit, replace=False))]
    return mem.lists_from_collection(data.collection, index=eligible)  # only the sample is built


def _inferred_curves(lists, measures: list[str], seed: int, n_lists: int = 3) -> pd.DataFrame:
    """Tidy actual and inferred PR curves (threshold grade >= 1) for a few sample lists."""
    from meta_eval import mem
    from meta_eval.params import rng

    pick = np.sort(rng(seed, "study").choice(lists.batch.n_lists, size=min(n_lists, lists.batch.n_lists),
                                             replace=False))
    sample = lists.subset(pick)
    batch = sample.batch
    R = batch.counts[:, 1:].sum(1)
    frames = []
    actual = np.cumsum(batch.grades >= 1, axis=1)
    for i in range(batch.n_lists):
        n = batch.lengths[i]
        ranks = np.arange(1, n + 1)
        label = f"{sample.runs[i]}, topic {sample.topics[i]}"
        seen = actual[i, :n] > 0  # the curve starts at the first relevant document (recall 0 has no precision)
        frames.append(pd.DataFrame({"list": label, "source": "actual", "recall": actual[i, :n][seen] / R[i],
                                    "precision": actual[i, :n][seen] / ranks[seen]}))
    for m in measures:
        res = mem.solve_mem(batch, m)
        prec, rec = mem.expected_precision_recall(res.survival(1), R, batch.lengths)
        for i in range(batch.n_lists):
            n = batch.lengths[i]
            frames.append(pd.DataFrame({"list": f"{sample.runs[i]}, topic {sample.topics[i]}",
                                        "source": f"MEM from {res.measure}", "recall": rec[i, :n],
                                        "precision": prec[i, :n]}))
    return pd.concat(frames, ignore_index=True)
