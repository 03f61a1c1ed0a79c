"""Informativeness figures: the GAP paper's Figure 2 (Robertson, Kanoulas & Yilmaz, SIGIR 2010) and a bar chart of
mean PR-curve RMS error per metric. Built without pyplot (``fig.savefig`` renders with Agg) and drawn with seaborn.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from meta_eval.errors import InputError

__all__ = ["figure2", "rms_bar_figure"]

PANELS = {1: "grade \u2265 1 relevant", 2: "grade 2 relevant"}
STYLES = {"GAP": dict(color="tab:blue", linestyle="-", marker="o"),
          "nDCG(gain=exp)": dict(color="tab:red", linestyle="--", marker=None),
          "nDCG": dict(color="tab:orange", linestyle=":", marker=None)}


def figure2(table: pd.DataFrame, *, title: str | None = None, width: float = 10.0, height: float = 3.8) -> Figure:
    """Mean RMS error of inferred vs actual PR curves over the (g1, g2) sweep, one panel per threshold.

    Parameters
    ----------
    table : DataFrame
        :attr:`meta_eval.mem.Figure2Result.table` (columns line, g1, g2, threshold, mean_rms, sem_rms).
    title : str, optional
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    need = {"line", "g1", "g2", "threshold", "mean_rms"}
    if not need <= set(table.columns):
        raise InputError(f"figure2 needs columns {sorted(need)}; got {list(table.columns)}")
    data = table.copy()
    data["g"] = [f"({a:g}, {b:g})" for a, b in zip(data.g1, data.g2)]
    order = list(dict.fromkeys(data.sort_values("g1")["g"]))
    data["x"] = data["g"].map({g: i for i, g in enumerate(order)})
    levels = sorted(data.threshold.unique())
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, len(levels), sharey=False, squeeze=False)[0]
    for ax, level in zip(axes, levels):
        sub = data[data.threshold == level]
        lines = list(dict.fromkeys(sub.line))
        palette = {ln: STYLES.get(ln, {}).get("color", None) for ln in lines}
        palette = {k: v for k, v in palette.items() if v is not None} or None
        sns.lineplot(data=sub, x="x", y="mean_rms", hue="line", style="line", markers=True, dashes=True,
                     palette=palette, ax=ax, errorbar=None, sort=True)
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels(order, rotation=60, ha="right", fontsize=8)
        ax.set_xlabel("(g1, g2)")
        ax.set_ylabel("mean RMS error")
        ax.set_title(PANELS.get(int(level), f"grade \u2265 {level} relevant"))
        ax.legend(title=None, fontsize=8)
    if title:
        fig.suptitle(title)
    return fig


def rms_bar_figure(summary: pd.DataFrame, *, title: str | None = None, width: float = 7.0,
                   height: float = 3.5) -> Figure:
    """Mean RMS PR-curve error per metric (bars), one hue per relevance threshold (from a study summary)."""
    need = {"metric", "threshold", "mean_rms"}
    if not need <= set(summary.columns):
        raise InputError(f"rms_bar_figure needs columns {sorted(need)}; got {list(summary.columns)}")
    fig = Figure(figsize=(width, height), layout="constrained")
    ax = fig.subplots()
    data = summary.assign(threshold=summary.threshold.map(lambda t: f"grade \u2265 {t}"))
    sns.barplot(data=data, x="metric", y="mean_rms", hue="threshold", ax=ax, errorbar=None)
    ax.set_ylabel("mean RMS error (inferred vs actual PR curve)")
    ax.set_xlabel("")
    ax.tick_params(axis="x", rotation=30)
    if title:
        ax.set_title(title)
    return fig


def inferred_curves_figure(curves: pd.DataFrame, *, height: float = 3.2) -> Figure:
    """Actual and inferred (maximum-entropy) precision-recall curves, one panel per list.

    ``curves`` has columns ``list, source, recall, precision`` (source ``actual`` or ``MEM from <metric>``).
    """
    need = {"list", "source", "recall", "precision"}
    if not need <= set(curves.columns):
        raise InputError(f"inferred_curves_figure needs columns {sorted(need)}; got {list(curves.columns)}")
    names = list(dict.fromkeys(curves["list"]))
    fig = Figure(figsize=(height * 1.25 * len(names) + 1.5, height), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(names), sharey=True))
    for ax, name in zip(axes, names):
        part = curves[curves["list"] == name]
        sns.lineplot(data=part, x="recall", y="precision", hue="source", style="source", ax=ax, estimator=None,
                     sort=False, legend=ax is axes[-1])
        ax.set_title(name, fontsize=9)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
    if axes[-1].get_legend() is not None:
        sns.move_legend(axes[-1], "upper left", bbox_to_anchor=(1.02, 1), frameon=False, title=None)
    return fig
