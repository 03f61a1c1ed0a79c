"""Robustness to incomplete judgments (Buckley & Voorhees 2004; Sakai 2007): every run re-scored under reduced
qrels, each measure's system ranking compared with its full-qrels ranking, with intervals over seeded draws (the
engine is :mod:`meta_eval.statistics.incomplete_judgments`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from meta_eval.analyses._base import AnalysisData, MemoryNeed
from meta_eval.analyses._result import FigureOutput, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.params import ANALYSIS_PARAMS, Param
from meta_eval.core.progress import CostModel
from meta_eval.rendering.figure_style import (FULL_WIDTH, MARKERS, colors_for, dodge_offsets, dodged, need_columns,
                                              styled)
from meta_eval.rendering.findings import Finding, Quoter, extremes, ranked
from meta_eval.rendering.paper_table import DASH, PaperTable, best_mask, cell_frames, percent, row_labels

_LABELS = {"kendall_tau_b": r"Kendall's $\tau_b$", "tau_ap": r"$\tau_\mathrm{AP}$ (reduced | full)",
           "tau_ap_b": r"$\tau_{\mathrm{AP}\text{-}b}$", "discpower": "% pairs significant (t-test)"}

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
        return [TableOutput("incomplete_judgments", "Robustness to incomplete judgments: agreement of each metric's "
                            "system ranking under reduced qrels with its full-qrels ranking, and the pairs a paired "
                            f"t-test separates (α = {self.alpha:g}), {self.n_draws} draws per fraction",
                            self.result.summary, judgments_table(self.result, threshold=self.threshold)),
                TableOutput("incomplete_judgments_draws", "Every draw", self.result.draws)]

    def figures(self) -> list[FigureOutput]:
        forms = list(dict.fromkeys(self.result.summary["form"]))
        return [FigureOutput("incomplete_judgments", figure_caption(forms),
                             lambda: incomplete_judgments_figure(self.result.summary, threshold=self.threshold,
                                                                 colors=self.colors))]

    def findings(self):
        return judgments_findings(self.compact, name="incomplete_judgments", sampling=self.sampling,
                                  n_draws=self.n_draws, threshold=self.threshold)


def _memory(data: AnalysisData, params) -> list[MemoryNeed]:
    from meta_eval.statistics.incomplete_judgments import masks_bytes

    need = masks_bytes(len(data.collection.judgments), params["n_draws"], len(params["fractions"]),
                       len(data.systems), len(data.topics), len(data.measures))
    return [MemoryNeed(need, f"{params['n_draws']:,} draws of reduced qrels", "n_draws")]


def _pct(f: float) -> str:
    return f"{100 * f:.0f} %"


def _work(data: AnalysisData, params: Mapping[str, Any]) -> float:
    """Documents re-scored: fractions × draws × forms × documents retrieved × metrics."""
    forms = len(params["forms"]) if params["forms"] else len(data.forms)
    retrieved = float(data.collection.n_ret.sum()) if data.collection is not None else 0.0
    return len(params["fractions"]) * params["n_draws"] * forms * retrieved * len(data.raw)


#: One core's seconds (scripts/calibrate_study_cost.py: the analysis with its tables and figures, in a study with
#: jobs=1): {run: (units, seconds)}.
COST = CostModel.fit("fractions × draws × forms × documents retrieved × metrics", _work,
                     {"demo, quick": (1.596e+06, 1.08), "demo": (1.436e+08, 4.25),
                      "TREC-COVID, quick": (8.423e+07, 2.62), "TREC-COVID": (7.58e+09, 61.51)})


@analysis("incomplete-judgments", quick=dict(fractions=(0.5,), n_draws=2),
          summary="Robustness to incomplete judgments.",
          title="Robustness to incomplete judgments", order=60,
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

          memory=_memory, standardised=True, parallel=True, cost=COST)
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


# The figure

#: What each score form does with the unjudged documents (the figure's caption names its columns).
_FORMS = {"standard": "unjudged documents count as not relevant", "condensed": "unjudged documents removed"}


def figure_caption(forms: Sequence[str]) -> str:
    """The caption of :func:`incomplete_judgments_figure`: what its rows and columns show."""
    columns = "; ".join(f"{f}: {_FORMS.get(f, f)}" for f in forms)
    return ("Ranking agreement with the full qrels (Kendall's τ_b, τ_AP) and the percentage of system pairs a paired "
            "t-test separates, against the percentage of judgments kept (mean over draws, 95 % interval; hollow: "
            f"the full qrels); one column per score form ({columns})")


@styled
def incomplete_judgments_figure(
    summary: pd.DataFrame,
    *,
    coefficients: Sequence[str] = ("kendall_tau_b", "tau_ap", "discpower"),
    threshold: float | None = 0.9,
    colors: Mapping[str, object] | None = None,
    height: float | None = None,
):
    """Each metric's agreement with its full-qrels ranking against the percentage of judgments kept: small
    multiples with one row per coefficient and one column per form (standard: unjudged = not relevant; condensed:
    unjudged removed), one colour and marker per metric, the mean over draws with its interval as an error bar
    (dodged, so that metrics with the same value stand side by side).

    ``summary`` is :attr:`IncompleteJudgments.summary`. ``threshold`` draws a reference line on the τ rows (0.9,
    the usual "equivalent rankings" level). The discriminative-power row is in percent, as the table has it; its
    curves end at 100 % with a hollow marker: the metric's value with the full qrels.
    """
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    need_columns(summary, {"metric", "form", "fraction", *coefficients,
                    *(f"{c}_{e}" for c in coefficients for e in ("low", "high"))}, "incomplete_judgments_figure")
    metrics = list(dict.fromkeys(summary["metric"]))
    forms = list(dict.fromkeys(summary["form"]))
    palette = colors_for(metrics, colors)
    fractions = np.sort(summary["fraction"].unique())
    full = "discpower" in coefficients and "discpower_full" in summary
    ticks = np.append(fractions, 1.0) if full and fractions[-1] < 1 else fractions
    # the dodge spreads the metrics over 80 % of the gap between two fractions: markers of equal values stand apart
    gap = float(np.min(np.diff(ticks))) if len(ticks) > 1 else 0.1
    offsets = dict(zip(metrics, 100 * dodge_offsets(len(metrics), 0.8 * gap / max(len(metrics), 1))))
    fig = Figure(figsize=(FULL_WIDTH, height or 1.7 * len(coefficients) + 0.5), layout="constrained")
    axes = fig.subplots(len(coefficients), len(forms), sharex=True, sharey="row", squeeze=False)
    for row, coef in enumerate(coefficients):
        scale = 100.0 if coef == "discpower" else 1.0  # a share of pairs is a percentage, as in the table
        for col, form in enumerate(forms):
            ax = axes[row, col]
            for i, metric in enumerate(metrics):
                grp = summary[(summary["metric"] == metric) & (summary["form"] == form)].sort_values("fraction")
                marker = MARKERS[i % len(MARKERS)]
                dodged(ax, 100 * grp["fraction"], scale * grp[coef], scale * grp[f"{coef}_low"],
                       scale * grp[f"{coef}_high"], color=palette[metric], marker=marker, offset=offsets[metric])
                if coef == "discpower" and full and len(grp):
                    last = grp.iloc[-1]
                    ax.plot([100 * last["fraction"] + offsets[metric], 100 + offsets[metric]],
                            [scale * last["discpower"], scale * last["discpower_full"]], color=palette[metric],
                            linewidth=0.8, linestyle=(0, (1, 1.5)), marker=marker, markersize=3.5,
                            markevery=[1], markerfacecolor="white", markeredgewidth=0.8)
            if threshold is not None and coef != "discpower":
                ax.axhline(threshold, color="0.5", linewidth=0.7, linestyle=(0, (2, 2)), zorder=0)
            if row == 0:
                ax.set_title(f"{form} form", fontsize="medium")
            if col == 0:
                ax.set_ylabel(_LABELS.get(coef, coef), fontsize="small")
    shown = ticks if len(ticks) <= 6 else ticks[::-2][::-1]  # at most six labels, the last (100 %) always
    for ax in axes[-1]:
        ax.set_xticks(100 * shown, [f"{100 * t:.0f}" + (" (full)" if full and t == 1 else "") for t in shown])
        ax.set_xlim(100 * ticks[0] - 100 * gap / 2, 100 * ticks[-1] + 100 * gap / 2)
    fig.supxlabel("% of the judgments kept (mean over draws, 95 % interval)", fontsize="medium")
    handles = [Line2D([], [], color=palette[m], marker=MARKERS[i % len(MARKERS)], markersize=3, label=m)
               for i, m in enumerate(metrics)]
    if threshold is not None:
        handles.append(Line2D([], [], color="0.5", linewidth=0.7, linestyle=(0, (2, 2)), label=f"τ = {threshold:g}"))
    if full:
        handles.append(Line2D([], [], color="0.3", marker="o", markerfacecolor="white", markersize=3.5,
                              linestyle="", label="full qrels"))
    fig.legend(handles=handles, loc="outside right upper", frameon=False, fontsize="small")
    return fig


# The compact table

def judgments_fractions(summary: pd.DataFrame) -> tuple[float, float]:
    """The two fractions :func:`judgments_table` shows: the smallest studied and the middle one."""
    fractions = sorted(set(summary["fraction"].tolist()))
    return fractions[0], fractions[len(fractions) // 2]


def judgments_table(result, *, threshold: float = 0.9, decimals: int = 3) -> PaperTable:
    """Robustness to incomplete judgments (:class:`~meta_eval.statistics.incomplete_judgments.IncompleteJudgments`), one row per metric (and
    score form): Kendall's τ_b with the full-qrels ranking at the smallest and the middle fraction of judgments
    kept and τ_AP at the middle one (mean over draws with the percentile interval), the smallest fraction from
    which the mean τ_b stays ≥ ``threshold``, and the percentage of system pairs a paired t-test separates at the
    middle fraction and with the full qrels. Bold: best per column."""
    summary = result.summary
    low_f, mid_f = judgments_fractions(summary)
    low_c, mid_c, ap_c = f"τ_b, {percent(low_f)} kept", f"τ_b, {percent(mid_f)} kept", f"τ_AP, {percent(mid_f)} kept"
    need_c, sig_c, full_c = (f"% kept for τ_b ≥ {threshold:g}", f"% significant, {percent(mid_f)} kept",
                             "% significant, full qrels")
    need = result.min_fraction(threshold).set_index(["metric", "form"])["min_fraction"]
    labels = dict(zip(zip(summary["metric"], summary["form"]), row_labels(summary["metric"], summary["form"])))
    rows: dict[str, dict[str, tuple]] = {}
    nan = float("nan")
    for r in summary.itertuples(index=False):
        cells = rows.setdefault(labels[(r.metric, r.form)], {})
        if r.fraction == low_f:
            cells[low_c] = (r.kendall_tau_b, r.kendall_tau_b_low, r.kendall_tau_b_high)
        if r.fraction == mid_f:
            cells[mid_c] = (r.kendall_tau_b, r.kendall_tau_b_low, r.kendall_tau_b_high)
            cells[ap_c] = (r.tau_ap, r.tau_ap_low, r.tau_ap_high)
            cells[sig_c] = (100 * r.discpower, 100 * r.discpower_low, 100 * r.discpower_high)
        cells[need_c] = (100 * need[(r.metric, r.form)], nan, nan)
        cells[full_c] = (100 * r.discpower_full, nan, nan)
    columns = list(dict.fromkeys([low_c, mid_c, ap_c, need_c, sig_c, full_c]))
    values, low, high = cell_frames(rows, list(rows), columns)
    digits = {low_c: decimals, mid_c: decimals, ap_c: decimals, need_c: 0, sig_c: 1, full_c: 1}
    best = {low_c: "max", mid_c: "max", ap_c: "max", need_c: "min", sig_c: "max"}
    return PaperTable(values, decimals=digits, bold=best_mask(values, best, digits), low=low, high=high,
                      note=f"τ with the same form's full-qrels ranking; {DASH} under “{need_c}”: not reached at "
                      "any fraction studied. Intervals: 2.5 and 97.5 percentiles over draws.")


# The findings

def judgments_findings(tables: Mapping[str, PaperTable], *, name: str, sampling: str, n_draws: int,
                       threshold: float) -> list[Finding]:
    """Which metric's ranking survives reduced judgments best (τ_b at the middle fraction) and which needs the
    fewest judgments to keep τ_b ≥ threshold."""
    q = Quoter(tables)
    t = tables[name]
    middle = [c for c in t.values.columns if c.startswith("τ_b, ")]
    need = f"% kept for τ_b ≥ {threshold:g}"
    if not middle:
        return []
    column = middle[-1]
    kept = column.split(", ")[1].replace(" kept", "")
    found = extremes(q, name, column, interval=True, what="τ_b = ")
    if found is None:
        return []
    best, best_cell, worst, worst_cell = found
    sentence = (f"Incomplete judgments ({sampling} sampling, {q.param('draws', n_draws)} draws per fraction): with "
                f"{q.param('kept', kept)} of the judgments kept, the system ranking "
                + (f"keeps {best_cell} with the full-qrels ranking under {best}" if best == worst else
                   f"stays closest to the full-qrels ranking under {best} ({best_cell}) and moves most under {worst} "
                   f"({worst_cell})"))
    if need in t.values.columns:
        reached = ranked(t, need, ascending=True)
        missing = [str(r) for r in t.values.index if str(r) not in reached]
        level = q.param("threshold", threshold)
        parts = []
        if reached and t.text(reached[0], need) == t.text(reached[-1], need):
            who = " and ".join(reached) if missing else "every metric"
            parts.append(f"τ_b stays ≥ {level} down to {q(name, reached[0], need)} % of the judgments under {who}")
        elif reached:
            parts.append(f"τ_b stays ≥ {level} down to {q(name, reached[0], need)} % of the judgments under "
                         f"{reached[0]} but only down to {q(name, reached[-1], need)} % under {reached[-1]}")
        if missing:
            parts.append(f"τ_b ≥ {level} is reached at no fraction studied under {' and '.join(missing)}")
        sentence += "; " + "; ".join(parts)
    return [q.finding(sentence + ".")]
