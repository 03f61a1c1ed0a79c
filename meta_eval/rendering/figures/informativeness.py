"""Informativeness figures: the GAP paper's Figure 2 (Robertson, Kanoulas & Yilmaz, SIGIR 2010), the mean PR-curve
RMS error per metric, and inferred-vs-actual PR curves of sample lists.

Every mean is drawn with ±1 standard error (the ``sem_rms`` column) when the table has it. Built without pyplot
(``fig.savefig`` renders with Agg), in the style of :mod:`meta_eval.rendering.figure_style`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from meta_eval.core.errors import InputError
from meta_eval.rendering.figure_style import COLUMN_WIDTH, FULL_WIDTH, colors_for, styled

__all__ = ["figure2", "inferred_curves_figure", "rms_bar_figure"]

_MARKERS = ("o", "s", "D", "^", "v")


def _threshold_label(level) -> str:
    """``relevant: grade ≥ t``, as the tables say it (with grades 0..2, "grade 2" would read as exactly 2)."""
    return f"relevant: grade \u2265 {int(level)}"


@styled
def figure2(table: pd.DataFrame, *, title: str | None = None, colors: Mapping[str, object] | None = None,
            width: float = FULL_WIDTH, height: float = 2.6):
    """Mean RMS error of inferred vs actual PR curves over the (g1, g2) sweep, one panel per threshold.

    GAP's curve is drawn over g1 (with g2 = 1 - g1 for three grades) with ±1 s.e. error bars; the lines that do
    not depend on g (nDCG, nDCG with exponential gain) are horizontal, with a ±1 s.e. band.

    Parameters
    ----------
    table : DataFrame
        :attr:`meta_eval.statistics.maxent.Figure2Result.table` (columns line, g1, g2, threshold, mean_rms, optional sem_rms).
    title : str, optional
        Figure title.
    colors : mapping line -> colour, optional
        The study's metric colours (``GAP``, ``nDCG``, ...).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    need = {"line", "g1", "g2", "threshold", "mean_rms"}
    if not need <= set(table.columns):
        raise InputError(f"figure2 needs columns {sorted(need)}; got {list(table.columns)}")
    data = table.copy()
    if "sem_rms" not in data:
        data["sem_rms"] = np.nan
    numeric = bool(np.allclose(data.g1 + data.g2, 1.0))
    order = sorted(set(zip(data.g1, data.g2)))
    position = {g: (g[0] if numeric else i) for i, g in enumerate(order)}
    data["x"] = [position[g] for g in zip(data.g1, data.g2)]
    lines = list(dict.fromkeys(data.line))
    palette = colors_for(lines, colors)
    levels = sorted(data.threshold.unique())
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, len(levels), squeeze=False)[0]
    for ax, level in zip(axes, levels):
        sub = data[data.threshold == level]
        for k, line in enumerate(lines):
            part = sub[sub.line == line].sort_values("x")
            if part.empty:
                continue
            constant = part.mean_rms.nunique() == 1 and len(part) > 1
            if constant:
                y, e = float(part.mean_rms.iloc[0]), float(part.sem_rms.iloc[0])
                ax.axhline(y, color=palette[line], linestyle=(0, (4, 2)) if k % 2 else (0, (1, 1.5)), lw=1.2,
                           label=line)
                if e == e:
                    ax.axhspan(y - e, y + e, color=palette[line], alpha=0.15, lw=0)
            else:
                ax.errorbar(part.x, part.mean_rms, yerr=part.sem_rms.where(part.sem_rms.notna()), color=palette[line],
                            marker=_MARKERS[k % len(_MARKERS)], markersize=3.5, lw=1.2, capsize=1.5, label=line)
        if numeric:
            ax.set_xlim(-0.03, 1.03)
            ax.set_xlabel("GAP's g1 (g2 = 1 − g1)")
        else:
            ax.set_xticks(range(len(order)))
            ax.set_xticklabels([f"({a:g}, {b:g})" for a, b in order], rotation=60, ha="right")
            ax.set_xlabel("(g1, g2)")
        ax.set_ylabel("mean RMS error")
        ax.set_title(_threshold_label(level), fontsize="medium")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", frameon=False)
    if title:
        fig.suptitle(title)
    return fig


@styled
def rms_bar_figure(summary: pd.DataFrame, *, title: str | None = None, colors: Mapping[str, object] | None = None,
                   width: float | None = None, height: float = 2.4):
    """Mean RMS error of the inferred PR curves per metric, ±1 s.e., one marker per relevance threshold.

    ``summary`` has columns ``metric, threshold, mean_rms`` and optionally ``sem_rms`` (a study summary). Lower is
    more informative.
    """
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    need = {"metric", "threshold", "mean_rms"}
    if not need <= set(summary.columns):
        raise InputError(f"rms_bar_figure needs columns {sorted(need)}; got {list(summary.columns)}")
    metrics = list(dict.fromkeys(summary.metric))
    levels = sorted(summary.threshold.unique())
    palette = colors_for(metrics, colors)
    fig = Figure(figsize=(width or min(FULL_WIDTH, max(COLUMN_WIDTH, 1.2 + 0.55 * len(metrics))), height),
                 layout="constrained")
    ax = fig.subplots()
    offsets = np.linspace(-0.15, 0.15, len(levels)) if len(levels) > 1 else [0.0]
    for k, (level, dx) in enumerate(zip(levels, offsets)):
        part = summary[summary.threshold == level].set_index("metric").reindex(metrics)
        sem = part["sem_rms"].to_numpy(float) if "sem_rms" in part else None
        for i, m in enumerate(metrics):
            if part.mean_rms.iloc[i] != part.mean_rms.iloc[i]:
                continue
            ax.errorbar(i + dx, part.mean_rms.iloc[i], yerr=None if sem is None else sem[i], color=palette[m],
                        marker=_MARKERS[k % len(_MARKERS)], markersize=4.5, capsize=2, lw=1.0,
                        markerfacecolor=palette[m] if k == 0 else "white")
    ax.set_xticks(range(len(metrics)))
    ax.set_xticklabels(metrics, rotation=30 if max(map(len, metrics)) > 6 else 0,
                       ha="right" if max(map(len, metrics)) > 6 else "center")
    ax.set_xlim(-0.5, len(metrics) - 0.5)
    ax.set_ylabel("mean RMS error")
    handles = [Line2D([], [], color="0.3", marker=_MARKERS[k % len(_MARKERS)], linestyle="none",
                      markerfacecolor="0.3" if k == 0 else "white", label=_threshold_label(level))
               for k, level in enumerate(levels)]
    ax.legend(handles=handles, loc="best", frameon=False)
    if title:
        ax.set_title(title)
    return fig


@styled
def inferred_curves_figure(curves: pd.DataFrame, *, colors: Mapping[str, object] | None = None,
                           height: float = 2.3):
    """Actual and inferred (maximum-entropy) precision-recall curves, one panel per list.

    ``curves`` has columns ``list, source, recall, precision`` (source ``actual`` or ``MEM from <metric>``); the
    actual curve is black, each inferred curve has its metric's colour.
    """
    from matplotlib.figure import Figure

    need = {"list", "source", "recall", "precision"}
    if not need <= set(curves.columns):
        raise InputError(f"inferred_curves_figure needs columns {sorted(need)}; got {list(curves.columns)}")
    names = list(dict.fromkeys(curves["list"]))
    sources = [s for s in dict.fromkeys(curves["source"]) if s != "actual"]
    metric_of = {s: s.removeprefix("MEM from ") for s in sources}
    palette = colors_for(list(metric_of.values()), colors)
    fig = Figure(figsize=(min(FULL_WIDTH, 0.9 + height * 0.95 * len(names)), height), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(names), sharey=True))
    for ax, name in zip(axes, names):
        part = curves[curves["list"] == name]
        actual = part[part.source == "actual"]
        ax.plot(actual.recall, actual.precision, color="black", lw=1.0, label="actual")
        for k, source in enumerate(sources):
            s = part[part.source == source]
            ax.plot(s.recall, s.precision, color=palette[metric_of[source]], lw=1.3,
                    linestyle=["-", (0, (4, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2))][k % 4], label=source)
        ax.set_title(name, fontsize="small")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("recall")
    axes[0].set_ylabel("precision")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", frameon=False)
    return fig
