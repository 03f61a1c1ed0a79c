"""Split-half stability (Voorhees 2009): the agreement of the system rankings of two disjoint halves of the topics,
against the half size (the engine is :func:`meta_eval.statistics.stability.split_half`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from meta_eval.analyses._base import AnalysisData, MemoryNeed
from meta_eval.analyses._result import FigureOutput, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.params import ANALYSIS_PARAMS, Param
from meta_eval.core.progress import CostModel
from meta_eval.rendering.figure_style import (COLUMN_WIDTH, FULL_WIDTH, MARKERS, colors_for, dodge_offsets, dodged,
                                              need_columns, styled)
from meta_eval.rendering.findings import Finding, Quoter, extremes
from meta_eval.rendering.paper_table import PaperTable, best_mask, cell_frames

_LABELS = {"kendall_tau_b": r"Kendall's $\tau_b$", "tau_ap": r"$\tau_\mathrm{AP}$ (reduced | full)",
           "tau_ap_b": r"$\tau_{\mathrm{AP}\text{-}b}$", "discpower": "pairs significant (t-test)"}


@dataclass
class SplitHalfStability(Result):
    """``summary``: metric, size, coefficient, mean, ci_low, ci_high, splits (one row per measure, half size and
    coefficient)."""

    summary: pd.DataFrame
    n_splits: int
    colors: dict | None = None

    def tables(self) -> list[TableOutput]:
        return [TableOutput("split_half", "Split-half stability: Kendall's τ_b and τ_AP-b between the system rankings "
                            "of two disjoint halves of n topics "
                            f"({self.n_splits} random splits; 2.5-97.5 percentile intervals)", self.summary,
                            split_half_table(self.summary))]

    def figures(self) -> list[FigureOutput]:
        return [FigureOutput("split_half", "Split-half stability against topic-set size",
                             lambda: split_half_figure(self.summary, colors=self.colors))]

    def findings(self):
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


def _work(data: AnalysisData, params: Mapping[str, Any]) -> float:
    """Splits × half sizes × metrics × systems × (systems + topics): each split averages every system over its
    halves and compares the two rankings (τ_AP: every system pair)."""
    S, T = len(data.systems), len(data.topics)
    n_sizes = len(params["sizes"]) if params["sizes"] else len(half_sizes(T))
    return params["n_splits"] * n_sizes * len(data.raw) * S * (S + T)


#: One core's seconds (scripts/calibrate_study_cost.py: the analysis with its tables and figures, in a study with
#: jobs=1): {run: (units, seconds)}.
COST = CostModel.fit("splits × sizes × metrics × systems × (systems + topics)", _work,
                     {"demo, quick": (99840, 0.53), "demo": (9.984e+06, 0.83),
                      "TREC-COVID, quick": (1.484e+06, 0.63), "TREC-COVID": (1.484e+08, 1.44)})


@analysis("split-half", quick=dict(n_splits=5, sizes=(2, 5)),
          summary="Split-half stability of the system rankings.",
          title="Split-half stability", needs="scores", order=20,
          params=(Param("sizes", None, int, "topics per half; default: at most 10 sizes evenly spaced from 1 to "
                        "T/2", within="[1, inf)",
                        many=True, flags=("--size",)),
                  replace(ANALYSIS_PARAMS["n_splits"], flags=("--splits",)), ANALYSIS_PARAMS["seed"]),
          memory=_memory, standardised=True, cost=COST)
def run(data: AnalysisData, *, sizes: tuple[int, ...] | None, n_splits: int, seed: int) -> SplitHalfStability:
    """Voorhees' split-half stability of each measure; the same splits for every measure (one seed)."""
    from meta_eval.statistics.stability import split_half
    from meta_eval.statistics.standardise import note

    sizes = sizes or tuple(half_sizes(len(data.topics)))
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


# The figure

@styled
def split_half_figure(
    summary: pd.DataFrame,
    *,
    colors: Mapping[str, object] | None = None,
    height: float = 2.4,
):
    """Mean τ between the system rankings of two disjoint topic halves against the half size, with the interval
    over splits as an error bar: one panel per coefficient, one colour and marker per metric, the metrics dodged
    side by side at each size. ``summary`` has the columns of :attr:`SplitHalf.summary` plus ``metric``."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    need_columns(summary, {"metric", "size", "coefficient", "mean", "ci_low", "ci_high"}, "split_half_figure")
    metrics = list(dict.fromkeys(summary["metric"]))
    coefficients = list(dict.fromkeys(summary["coefficient"]))
    palette = colors_for(metrics, colors)
    sizes = np.sort(summary["size"].unique())
    gap = float(np.min(np.diff(sizes))) if len(sizes) > 1 else 1.0
    offsets = dict(zip(metrics, dodge_offsets(len(metrics), 0.6 * gap / max(len(metrics), 1))))
    fig = Figure(figsize=(FULL_WIDTH if len(coefficients) > 1 else COLUMN_WIDTH + 1.2, height),
                 layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(coefficients), sharey=True))
    for ax, coef in zip(axes, coefficients):
        for i, metric in enumerate(metrics):
            grp = summary[(summary["coefficient"] == coef) & (summary["metric"] == metric)].sort_values("size")
            dodged(ax, grp["size"], grp["mean"], grp["ci_low"], grp["ci_high"], color=palette[metric],
                    marker=MARKERS[i % len(MARKERS)], offset=offsets[metric])
        ax.set_title(_LABELS.get(coef, coef), fontsize="medium")
        ax.set_xlabel("topics per half")
    axes[0].set_ylabel("τ between the halves")
    handles = [Line2D([], [], color=palette[m], marker=MARKERS[i % len(MARKERS)], markersize=3, label=m)
               for i, m in enumerate(metrics)]
    fig.legend(handles=handles, loc="outside right upper", frameon=False, fontsize="small")
    return fig


# The compact table

def split_half_table(summary: pd.DataFrame, *, decimals: int = 3) -> PaperTable:
    """Split-half stability, one row per metric: Kendall's τ_b and τ_AP-b between the rankings of two disjoint
    halves of n topics (the largest n, with the percentile interval over splits) and τ_b at half that size. Bold:
    the largest value per column."""
    sizes = sorted(set(summary["size"].astype(int)))
    big, small = sizes[-1], sizes[(len(sizes) - 1) // 2]
    rows: dict[str, dict[str, tuple]] = {}
    wanted = {(big, "kendall_tau_b"): f"τ_b, n = {big}", (big, "tau_ap_b"): f"τ_AP-b, n = {big}",
              (small, "kendall_tau_b"): f"τ_b, n = {small}"}
    for r in summary.itertuples(index=False):
        name = wanted.get((int(r.size), r.coefficient))
        if name:
            rows.setdefault(r.metric, {})[name] = (r.mean, r.ci_low, r.ci_high)
    columns = list(dict.fromkeys(wanted.values()))
    values, low, high = cell_frames(rows, list(rows), columns)
    splits = int(summary["splits"].max())
    return PaperTable(values, decimals=decimals, bold=best_mask(values, {c: "max" for c in columns}, decimals),
                      low=low, high=high,
                      note=f"Mean over {splits} random splits, 2.5 and 97.5 percentiles in brackets.")


# The findings

def split_half_findings(tables: Mapping[str, PaperTable], *, name: str, n_splits: int) -> list[Finding]:
    """Which metric's system ranking is most and least stable across disjoint topic halves (largest halves)."""
    q = Quoter(tables)
    t = tables[name]
    column = next((c for c in t.values.columns if c.startswith("τ_b, n = ")), None)
    if column is None:
        return []
    size = column.split("= ")[1]
    found = extremes(q, name, column, interval=True, what="τ_b = ")
    if found is None:
        return []
    best, best_cell, worst, worst_cell = found
    lead = (f"Split-half stability ({q.param('splits', n_splits)} random splits into two halves "
            f"of {q.param('half', size)} topics): ")
    sentence = lead + (f"the halves rank the systems with {best_cell} under {best}." if best == worst else
                       f"the halves rank the systems most alike under {best} ({best_cell}) and least alike under "
                       f"{worst} ({worst_cell}).")
    return [q.finding(sentence)]
