"""Split-half stability (Voorhees 2009): the agreement of the system rankings of two disjoint halves of the topics,
against the half size (the engine is :func:`meta_eval.statistics.stability.split_half`)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from meta_eval.analyses._base import AnalysisData, FigureOutput, MemoryNeed, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.params import ANALYSIS_PARAMS, Param


@dataclass
class SplitHalfStability(Result):
    """``summary``: metric, size, coefficient, mean, ci_low, ci_high, splits (one row per measure, half size and
    coefficient)."""

    summary: pd.DataFrame
    n_splits: int
    colors: dict | None = None

    def tables(self) -> list[TableOutput]:
        from meta_eval.rendering.paper_table import split_half_table

        return [TableOutput("split_half", "Split-half stability: Kendall's τ_b and τ_AP-b between the system rankings "
                            "of two disjoint halves of n topics "
                            f"({self.n_splits} random splits; 2.5-97.5 percentile intervals)", self.summary,
                            split_half_table(self.summary))]

    def figures(self) -> list[FigureOutput]:
        from meta_eval.rendering.figures.meta import split_half_figure

        return [FigureOutput("split_half", "Split-half stability against topic-set size",
                             lambda: split_half_figure(self.summary, colors=self.colors))]

    def findings(self):
        from meta_eval.rendering.findings import split_half_findings

        return split_half_findings(self.compact, name="split_half", n_splits=self.n_splits)


def half_sizes(n_topics: int, most: int = 10) -> list[int]:
    """At most ``most`` half sizes from 1 to T // 2, evenly spaced (the largest always included)."""
    half = max(n_topics // 2, 1)
    return sorted(set(np.linspace(1, half, min(most, half)).round().astype(int).tolist()))


def _memory(data: AnalysisData, params) -> list[MemoryNeed]:
    from meta_eval.statistics.stability import split_half_bytes

    n_sizes = len(params["sizes"]) if params["sizes"] else len(half_sizes(len(data.topics)))
    return [MemoryNeed(split_half_bytes(len(data.systems), len(data.topics), params["n_splits"], n_sizes),
                       f"split-half with {params['n_splits']:,} splits", "n_splits")]


@analysis("split-half", title="Split-half stability", command="split-half",
          summary="Split-half stability of the system rankings.",
          params=(Param("sizes", None, int, "topics per half; default: 1 .. T/2", within="[1, inf)",
                        many=True, flags=("--size",)),
                  replace(ANALYSIS_PARAMS["n_splits"], flags=("--splits",)), ANALYSIS_PARAMS["seed"]),
          study={"n_splits": "split_half_splits", "seed": "seed",
                 "sizes": lambda data, options: half_sizes(len(data.topics))},
          memory=_memory, standardised=True)
def run(data: AnalysisData, *, sizes: tuple[int, ...] | None, n_splits: int, seed: int) -> SplitHalfStability:
    """Voorhees' split-half stability of each measure; the same splits for every measure (one seed)."""
    from meta_eval.statistics.stability import split_half
    from meta_eval.statistics.standardise import note

    frames = []
    for name, values in data.scores.items():
        res = split_half(values, data.systems, sizes=sizes, n_splits=n_splits, seed=seed)
        frames.append(res.summary.assign(metric=name))
    summary = pd.concat(frames, ignore_index=True)[["metric", "size", "coefficient", "mean", "ci_low", "ci_high",
                                                     "splits"]]
    text = (f"Split-half stability (Voorhees 2009): {n_splits} random splits (seed {seed}) of the topics into two "
            "disjoint halves of n topics; systems ranked by their mean over each half; Kendall's τ_b and τ_AP-b "
            "between the two rankings, with 2.5-97.5 percentile intervals over splits." + note(data.standardise))
    return SplitHalfStability(summary, n_splits, data.colors, text=text)

