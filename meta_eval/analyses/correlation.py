"""Correlation between measures in a study: agreement of their system rankings (Kendall's τ_b, τ_AP, Spearman,
Pearson, with bootstrap intervals), the system pairs two measures order oppositely and how many of those swaps are
significant, and the correlation of per-topic scores (the engine is :mod:`meta_eval.statistics.correlation`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from meta_eval.analyses._base import AnalysisData, FigureOutput, MemoryNeed, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.params import ANALYSIS_PARAMS, Param

CI_METHODS = ("percentile", "basic", "bca", "normal")


@dataclass
class Correlation(Result):
    """``systems`` (:class:`~meta_eval.statistics.correlation.SystemCorrelation`), ``swaps`` (one row per measure pair),
    ``topics`` (:func:`~meta_eval.statistics.correlation.correlate_topics`), the (studied, reference) ``pairs`` the figures
    and the swap table show."""

    systems: Any
    swaps: pd.DataFrame
    topics: Any
    pairs: list[tuple[str, str]]
    test: str
    targets: list[str]
    against: list[str]
    n_topics: int
    alpha: float
    scale: str
    scores: dict
    colors: dict | None = None

    def tables(self) -> list[TableOutput]:
        from meta_eval.rendering.paper_table import PaperTable, agreement_table, swaps_compact

        sysres = self.systems
        pooled = self.topics.pooled.copy()
        pooled.index.name = ""
        mask = np.triu(np.ones(pooled.shape, dtype=bool), 0)  # the lower triangle; the diagonal (1) is left out
        return [
            TableOutput("system_correlation", f"Agreement of the system rankings: Kendall's τ_b below the diagonal, "
                        f"symmetrised τ_AP above, with {sysres.confidence:.0%} bootstrap {sysres.ci_method} "
                        f"intervals over {self.n_topics} topics", sysres.table, agreement_table(sysres)),
            TableOutput("swaps", f"System pairs ordered oppositely by two metrics, and how many of those swaps are "
                        f"significant ({self.test}, α = {self.alpha:g})", self.swaps,
                        swaps_compact(self.swaps, self.pairs or None)),
            TableOutput("topic_correlation", f"Pearson correlation of per-topic {self.scale}s (all system-topic "
                        "pairs)", self.topics.to_frame(), PaperTable(pooled.mask(mask).iloc[1:, :-1])),
        ]

    def figures(self) -> list[FigureOutput]:
        from meta_eval.rendering.figures.correlation import correlation_heatmap, rank_grid, scatter_grid

        sysres = self.systems
        out = [FigureOutput("heatmap_agreement", "Kendall's τ_b (below the diagonal) and symmetrised τ_AP (above) "
                            "between system rankings", lambda: correlation_heatmap(
                                sysres.matrix("kendall_tau_b"), upper=sysres.matrix("tau_ap_sym"), fmt=".2f",
                                vmin=min(0.5, float(sysres.table.value.min()))))]
        if self.pairs:
            out += [
                FigureOutput("scatter_means", f"System means of the {self.scale}s (±1 s.e. over topics) under each "
                             "metric studied (rows) against each reference (columns); τ_AP(row | column)",
                             lambda: scatter_grid(self.scores, self.targets, self.against, colors=self.colors)),
                FigureOutput("rank_rank", "System ranks (1 = best) under each metric studied (rows) against each "
                             "reference (columns); the dashed diagonal is 'same rank'",
                             lambda: rank_grid(self.scores, self.targets, self.against, colors=self.colors))]
        return out

    def findings(self):
        from meta_eval.rendering.findings import agreement_findings

        return agreement_findings(self.compact, name="system_correlation", targets=self.targets,
                                  references=self.against, interval=self.systems.ci_method,
                                  confidence=self.systems.confidence)


def _memory(data: AnalysisData, params) -> list[MemoryNeed]:
    from meta_eval.statistics.correlation.systems import correlation_bytes
    from meta_eval.core.resampling import bootstrap_bytes

    n_top, B = len(data.topics), params["n_resamples"]
    need = bootstrap_bytes(n_top, B) + correlation_bytes(len(data.measures), len(data.systems), n_top, B)
    return [MemoryNeed(need, f"the study's bootstrap of {B:,} replicates over {n_top} topics", "n_resamples")]


@analysis("correlation", title="Correlation between metrics", after=("discpower",),
          summary="Agreement of the measures' system rankings, swaps and per-topic correlation.",
          params=(ANALYSIS_PARAMS["n_resamples"], ANALYSIS_PARAMS["seed"], ANALYSIS_PARAMS["confidence"],
                  Param("ci", "normal", str, "bootstrap interval of the correlations", choices=CI_METHODS),
                  ANALYSIS_PARAMS["alpha"]),
          study={"n_resamples": "n_resamples", "seed": "seed", "confidence": "confidence", "ci": "ci",
                 "alpha": "alpha"}, memory=_memory, standardised=True)
def run(data: AnalysisData, *, n_resamples: int, seed: int, confidence: float, ci: str,
        alpha: float) -> Correlation:
    """Correlate the measures' system rankings (bootstrap intervals over topics), count the pairs each two order
    oppositely (significant by the discriminative-power test when it ran), correlate per-topic scores."""
    from meta_eval.statistics.correlation import correlate_systems, correlate_topics, swap_table

    systems = data.systems
    sysres = correlate_systems(data.scores, systems, n_resamples=n_resamples, seed=seed, confidence=confidence,
                               ci_method=ci, progress=data.progress)
    dp = data.results.get("discpower")
    pvalues = {m: dp.all.tests[(m, "bootstrap")].asl for m in data.scores} if dp is not None else None
    swaps = swap_table(data.scores, pvalues, alpha=alpha, systems=systems)
    pairs = [(x, y) for x in data.targets for y in data.against if x != y]
    test = "paired bootstrap" if pvalues is not None else "none (discriminative power skipped)"
    text = (f"Correlation of the system rankings by mean score. τ_AP(y|x) takes x as the reference ranking; "
            f"the symmetrised τ_AP is the mean of both directions (τ_AP-b). Intervals: {confidence:.0%} "
            f"bootstrap {ci} intervals over topics (B = {n_resamples}, the design of the "
            "discriminative-power test). system_correlation.csv holds every coefficient (τ_AP in both "
            "directions, tie-aware τ_AP-a, Spearman, Pearson) with its interval, standard error and bootstrap "
            f"bias.{data.standardise_note()}")
    return Correlation(sysres, swaps, correlate_topics(data.scores, data.topics), pairs, test, data.targets,
                       list(data.against), len(data.topics), alpha, data.scale, data.scores, data.colors, text=text)
