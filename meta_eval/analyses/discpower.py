"""Discriminative power in a study: Sakai's (2006) paired bootstrap test over every system pair, and over the top-k
systems, with ASL curves and the difference required (the engine is :mod:`meta_eval.statistics.significance`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from meta_eval.analyses._base import AnalysisData, FigureOutput, MemoryNeed, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.params import ANALYSIS_PARAMS, Param


@dataclass
class DiscriminativePower(Result):
    """The test over all systems (``all``) and over the ``best`` top-k systems (``top``, None when not run)."""

    all: Any  # meta_eval.statistics.significance.DiscriminativePower
    top: Any
    best: list[str]
    k: int
    n_systems: int
    n_resamples: int
    alpha: float
    colors: dict | None = None

    def tables(self) -> list[TableOutput]:
        from meta_eval.rendering.paper_table import discpower_table

        summary = self.all.summary().assign(subset="all")
        asl = self.all.asl_table().assign(subset="all")
        if self.top is not None:
            summary = pd.concat([summary, self.top.summary().assign(subset=f"top {self.k}")], ignore_index=True)
            asl = pd.concat([asl, self.top.asl_table().assign(subset=f"top {self.k}")], ignore_index=True)
        compact = discpower_table(self.all.summary(), self.top.summary() if self.top else None,
                                  self.k if self.top else None)
        from meta_eval.rendering.paper_table import discpower_pairs

        top_text = (f" and over the top {self.k} ({discpower_pairs(self.top.summary()):,} pairs)" if self.top
                    else "")
        caption = (f"Discriminative power: percentage of system pairs told apart (ASL < {self.alpha:g}) by Sakai's "
                   f"paired bootstrap (B = {self.n_resamples}) and the difference required (Δ), over all "
                   f"{self.n_systems} systems ({discpower_pairs(self.all.summary()):,} pairs){top_text}")
        return [TableOutput("discpower_summary", caption, summary, compact),
                TableOutput("asl", "Achieved significance level of every system pair", asl)]

    def figures(self) -> list[FigureOutput]:
        from meta_eval.rendering.figures.asl import asl_curve_figure

        def draw():
            return asl_curve_figure(self.all, top=self.top, method="bootstrap", colors=self.colors,
                                    top_label=f"top {self.k} systems" if self.top is not None else None)

        return [FigureOutput("asl_curves", f"ASL curves (paired bootstrap): system pairs sorted by ASL, zoomed on ASL "
                             f"≤ {min(1, 4 * self.alpha):g}; the further right a curve crosses α, the more pairs the "
                             "metric tells apart", draw)]

    def findings(self):
        from meta_eval.rendering.findings import discpower_findings

        from meta_eval.rendering.paper_table import discpower_pairs

        pairs = {"all": discpower_pairs(self.all.summary()),
                 "top": discpower_pairs(self.top.summary()) if self.top is not None else None}
        return discpower_findings(self.compact, name="discpower_summary", method="paired bootstrap",
                                  n_resamples=self.n_resamples, alpha=self.alpha, top=self.k if self.best else None,
                                  pairs=pairs)


def _memory(data: AnalysisData, params) -> list[MemoryNeed]:
    from meta_eval.core.resampling import bootstrap_bytes

    n_top, B = len(data.topics), params["n_resamples"]
    return [MemoryNeed(bootstrap_bytes(n_top, B), f"the study's bootstrap of {B:,} replicates over {n_top} topics",
                       "n_resamples")]


@analysis("discpower", title="Discriminative power", summary="How many system pairs each measure tells apart.",
          params=(ANALYSIS_PARAMS["n_resamples"], ANALYSIS_PARAMS["alpha"], ANALYSIS_PARAMS["seed"],
                  Param("top", 15, int, "also analyse the top-k systems (0: not)", within="[0, inf)")),
          study={"n_resamples": "n_resamples", "alpha": "alpha", "seed": "seed", "top": "top"}, memory=_memory,
          standardised=True, parallel=True)
def run(data: AnalysisData, *, n_resamples: int, alpha: float, seed: int, top: int) -> DiscriminativePower:
    """Sakai's paired bootstrap test of every system pair under every measure, one replicate matrix shared by
    every pair and measure; the same over the ``top`` systems that rank best under every measure at once."""
    from meta_eval.statistics.best_systems import best_systems
    from meta_eval.statistics.significance.discriminative_power import discriminative_power

    systems = data.systems
    common = dict(methods=("bootstrap",), alpha=alpha, n_resamples=n_resamples, seed=seed, progress=data.progress,
                  jobs=data.jobs, scheduler=data.scheduler)
    result = discriminative_power(data.scores, systems, **common)
    top_result, best = None, []
    if 1 < top < len(systems):
        best = best_systems(data.scores, systems, top)
        top_result = discriminative_power(data.scores, systems, subset=best, **common)
    text = (f"Sakai's (2006) paired bootstrap test, B = {n_resamples}, seed {seed}, one replicate "
            f"matrix shared by every pair and metric. A pair is told apart when its achieved significance "
            f"level (ASL) is below α = {alpha:g}; Δ required is the largest, over pairs, estimated "
            f"difference in mean {data.scale} needed for significance (Sakai 2006). Bold: the most pairs told "
            f"apart, the smallest difference required.{data.standardise_note()}")
    if best:
        text += (f"\n\nTop {top} systems: the {top} systems that rank best under every metric at "
                 f"once (best_systems rule 'both': the smallest depth d at which the top-d sets of all "
                 f"{len(data.scores)} metrics share at least {top} systems, ties broken by the best worst "
                 f"rank, then rank sum): {', '.join(best)}.")
    return DiscriminativePower(result, top_result, best, top, len(systems), n_resamples, alpha, data.colors,
                               text=text)
