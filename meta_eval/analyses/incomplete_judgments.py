"""Robustness to incomplete judgments (Buckley & Voorhees 2004; Sakai 2007): every run re-scored under reduced
qrels, each measure's system ranking compared with its full-qrels ranking, with intervals over seeded draws (the
engine is :mod:`meta_eval.statistics.incomplete_judgments`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from meta_eval.analyses._base import AnalysisData, FigureOutput, MemoryNeed, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.params import ANALYSIS_PARAMS, Param

DEFAULT_FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


@dataclass
class IncompleteJudgmentsResult(Result):
    """``result`` (:class:`~meta_eval.statistics.incomplete_judgments.IncompleteJudgments`) with the settings its table and findings quote."""

    result: Any
    n_draws: int
    alpha: float
    threshold: float
    sampling: str
    colors: dict | None = None

    def tables(self):
        from meta_eval.rendering.paper_table import judgments_table

        return [TableOutput("incomplete_judgments", "Robustness to incomplete judgments: agreement of each metric's "
                            "system ranking under reduced qrels with its full-qrels ranking, and the pairs a paired "
                            f"t-test separates (α = {self.alpha:g}), {self.n_draws} draws per fraction",
                            self.result.summary, judgments_table(self.result, threshold=self.threshold)),
                TableOutput("incomplete_judgments_draws", "Every draw", self.result.draws)]

    def figures(self) -> list[FigureOutput]:
        from meta_eval.rendering.figures.meta import incomplete_judgments_figure

        return [FigureOutput("incomplete_judgments", "Ranking agreement and discriminative power against the fraction "
                             "of judgments kept (standard: solid; condensed: dashed)",
                             lambda: incomplete_judgments_figure(self.result.summary, threshold=self.threshold,
                                                                 colors=self.colors))]

    def findings(self):
        from meta_eval.rendering.findings import judgments_findings

        return judgments_findings(self.compact, name="incomplete_judgments", sampling=self.sampling,
                                  n_draws=self.n_draws, threshold=self.threshold)


def _memory(data: AnalysisData, params) -> list[MemoryNeed]:
    from meta_eval.statistics.incomplete_judgments import masks_bytes

    need = masks_bytes(len(data.collection.judgments), params["n_draws"], len(params["fractions"]),
                       len(data.systems), len(data.topics), len(data.measures))
    return [MemoryNeed(need, f"{params['n_draws']:,} draws of reduced qrels", "n_draws")]


def _pct(f: float) -> str:
    return f"{100 * f:.0f} %"


@analysis("incomplete-judgments", title="Robustness to incomplete judgments", command="incomplete-judgments",
          summary="Robustness to incomplete judgments.",
          params=(Param("fractions", DEFAULT_FRACTIONS, float, "fraction of the judgments kept",
                        within="(0, 1]", many=True, flags=("--fraction",)),
                  replace(ANALYSIS_PARAMS["n_draws"], doc="seeded draws per fraction (the budget: cost grows with "
                          "fractions x draws)", flags=("--draws",)),
                  Param("sampling", "uniform", str, "uniform: per topic and grade, at random; depth: per topic, the "
                        "documents that entered the pool first", choices=("uniform", "depth")),
                  Param("forms", None, str, "score form: standard (unjudged = not relevant) and/or "
                        "condensed (unjudged removed); default: both (condensed only without the unjudged)",
                        choices=("standard", "condensed"), many=True, flags=("--form",)),
                  Param("reference", "same", str, "full-qrels ranking each form is compared with: the same form's, "
                        "or the standard form's", choices=("same", "standard")),
                  ANALYSIS_PARAMS["alpha"],
                  replace(ANALYSIS_PARAMS["threshold"], doc="τ level the finding reports the smallest fraction for"),
                  ANALYSIS_PARAMS["seed"]),
          study={"fractions": "judgment_fractions", "n_draws": "judgment_draws", "alpha": "alpha", "seed": "seed"},
          memory=_memory, standardised=True, parallel=True)
def run(data: AnalysisData, *, fractions: tuple[float, ...], n_draws: int, sampling: str,
        forms: tuple[str, ...] | None, reference: str, alpha: float, threshold: float,
        seed: int) -> IncompleteJudgmentsResult:
    """Reduced qrels (seeded draws of each fraction), every run re-scored in each form, each measure's ranking
    compared with the full-qrels ranking (τ_b, τ_AP), and the share of system pairs a paired t-test separates."""
    from meta_eval.statistics.incomplete_judgments import incomplete_judgments
    from meta_eval.statistics.standardise import note

    forms = tuple(forms) if forms else data.forms
    res = incomplete_judgments(data.collection, data.measures, fractions=fractions, n_draws=n_draws,
                               sampling=sampling, forms=forms, alpha=alpha, reference=reference, seed=seed,
                               jobs=data.jobs, scheduler=data.scheduler, standardise=data.standardise,
                               progress=data.progress)
    against = "the same form" if reference == "same" else "the standard form"
    text = (f"Reduced qrels: {sampling} sampling of {', '.join(_pct(f) for f in fractions)} of the "
            f"{len(data.collection.judgments)} judgments, {n_draws} seeded draws each (seed {seed}); every run "
            f"re-scored in the {' and '.join(forms)} form{'s' if len(forms) > 1 else ''} (condensed: unjudged "
            f"documents removed, Sakai 2007) and its system ranking compared with {against} under the full qrels "
            f"(Kendall's τ_b, τ_AP). Discriminative power: share of system pairs a paired t-test separates at "
            f"α = {alpha:g}. Intervals: 2.5 and 97.5 percentiles over draws." + note(data.standardise))
    return IncompleteJudgmentsResult(res, n_draws, alpha, threshold, sampling, data.colors, text=text)
