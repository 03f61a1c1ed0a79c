"""Effectiveness when trained for it: a LambdaMART ranker trained for each measure of a study, every ranker scored
with every measure, beside the measure's informativeness (the GAP paper §5; the engine is :mod:`meta_eval.statistics.learning_to_rank`).
Runs in a study only when given learning-to-rank data (a LETOR file or folder, or ``demo``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from meta_eval.analyses._base import AnalysisData, FigureOutput, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.params import ANALYSIS_PARAMS, Param


@dataclass
class LearningToRank(Result):
    """The experiment (:class:`~meta_eval.statistics.learning_to_rank.LTRResult`) and the informativeness of each measure (mean RMS
    error, when that analysis ran)."""

    experiment: Any
    rms: dict[str, float] | None
    alpha: float

    def tables(self) -> list[TableOutput]:
        from meta_eval.rendering.paper_table import ltr_table

        res = self.experiment
        full = res.table.assign(informativeness_rms=res.table["trained_for"].map(self.rms or {}).astype(float))
        return [TableOutput("ltr", "Effectiveness when trained for it: mean test score of a LambdaMART ranker trained "
                            "for each metric (rows) on each test metric (columns), beside the trained-for metric's "
                            "informativeness", full, ltr_table(res, self.rms, alpha=self.alpha)),
                TableOutput("ltr_per_query", "Every test query's score", res.per_query)]

    def figures(self) -> list[FigureOutput]:
        from meta_eval.rendering.figures.ltr import ltr_figure

        return [FigureOutput("ltr", "Mean paired difference (95 % t-interval over test queries) of each objective "
                             "from the best objective, per test metric",
                             lambda: ltr_figure(self.experiment, alpha=self.alpha))]

    def findings(self):
        from meta_eval.rendering.findings import ltr_findings

        return ltr_findings(self.compact, name="ltr", algorithm="LambdaMART",
                            n_queries=self.experiment.settings["n_test_queries"])


def _existing(value: Any) -> str | None:
    if str(value) == "demo" or Path(value).exists():
        return None
    return "does not exist (a LETOR file or folder, or 'demo')"


@analysis("ltr", title="Effectiveness when trained for it (learning to rank)", after=("informativeness",),
          summary="Train a ranker for each measure and score the test queries with every measure.",
          params=(Param("letor", None, str, "LETOR file or folder, or 'demo' (the embedded demo set)",
                        check=_existing, domain="a LETOR file or folder, or demo"),
                  Param("folds", None, int, "folds used (None: all)", within="[1, inf)"),
                  Param("rounds", 500, int, "boosting rounds at most (early stopping on validation)",
                        within="[1, inf)"),
                  ANALYSIS_PARAMS["seed"], ANALYSIS_PARAMS["alpha"]),
          study={"letor": "ltr_data", "folds": "ltr_folds", "rounds": "ltr_rounds", "seed": "seed",
                 "alpha": "alpha"},
          enabled=lambda params: params.get("letor") is not None, files=("letor",), parallel=True)
def run(data: AnalysisData, *, letor: str | None, folds: int | None, rounds: int, seed: int,
        alpha: float) -> LearningToRank:
    """LambdaMART (LightGBM with RankNet gradients scaled by |ΔM|) trained for each measure; every ranker's test
    queries scored with every measure, each row tested against the best row of its test measure."""
    from meta_eval.core.errors import InputError
    from meta_eval.inputs.demo import demo_ltr_data
    from meta_eval.statistics.learning_to_rank.experiment import run_ltr

    if letor is None:
        raise InputError("analysis ltr: parameter letor is needed (a LETOR file or folder, or 'demo')")
    path = demo_ltr_data() if str(letor) == "demo" else Path(letor)
    res = run_ltr(path, train_for=data.measures, test=data.measures, algorithms=("lambdamart",), max_folds=folds,
                  seed=seed, rel_level=data.collection.rel_level, lambdamart={"num_boost_round": rounds},
                  progress=data.progress, jobs=data.jobs, scheduler=data.scheduler)
    informativeness = data.results.get("informativeness")
    rms = informativeness.rms if informativeness is not None else None
    s = res.settings
    text = (
        f"LambdaMART (LightGBM with a custom objective: RankNet gradients scaled by |ΔM| for the metric M trained "
        f"for; meta_eval.statistics.learning_to_rank) trained for each metric of the study on {path.name} ({s['folds']} fold(s) of "
        f"cross-validation over queries, seed {seed}, at most {rounds} boosting rounds with early "
        f"stopping on the trained-for metric on the validation queries); every ranker's test queries are scored "
        f"with every metric ({s['n_test_queries']} test queries; {res.skipped} without a relevant document not "
        "scored). Each row is tested against the best row of its test metric (paired t-test over the test "
        "queries). The GAP paper (§5) argues that a more informative metric is a better objective; "
        + ("the RMS column puts each metric's informativeness beside its effectiveness as an objective, without "
           "asserting the claim." if rms else "the informativeness stage did not run, so no RMS column."))
    return LearningToRank(res, rms, alpha, text=text)
