"""Figures of the seed papers' analyses (``meta-eval reproduce``), drawn with seaborn on pyplot-free Figures in the
style of :mod:`meta_eval.rendering.figure_style`.

Every function takes the tidy output of an analysis in :mod:`meta_eval.statistics.metric_properties` or :mod:`meta_eval.measures.curves` and
returns a :class:`matplotlib.figure.Figure` (``fig.savefig("x.png")`` renders it with Agg).
"""

from __future__ import annotations

import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from meta_eval.core.errors import InputError
from meta_eval.rendering.figure_style import styled

__all__ = ["graded_pr_figure", "pr_roc_figure", "pattern_scatter", "position_profile_figure", "sensitivity_figure"]


def _integer_ticks(ax) -> None:
    """Ranks and positions are integers: no 2.5 on the x axis."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _need(df: pd.DataFrame, columns: set[str], what: str) -> None:
    if not isinstance(df, pd.DataFrame) or not columns <= set(df.columns):
        raise InputError(f"{what} needs a DataFrame with columns {sorted(columns)}")


@styled
def sensitivity_figure(profile: pd.DataFrame, title: str = "Increment when rank j turns relevant") -> Figure:
    """Δ metric against the rank j of the newly relevant document (Kishida Eq. 10 for AP), one line per metric;
    ``profile`` is :func:`meta_eval.statistics.metric_properties.sensitivity_profile`'s output."""
    _need(profile, {"metric", "rank", "delta"}, "sensitivity_figure")
    return _metric_lines(profile, "rank", "delta", xlabel="rank j", ylabel="Δ metric", title=title)


@styled
def position_profile_figure(profile: pd.DataFrame, title: str = "One relevant document at position i") -> Figure:
    """Metric values against the position of a single relevant document (IJCSIT 2015, Figure 3): ``profile``
    indexed by ``position`` with one column per metric."""
    if not isinstance(profile, pd.DataFrame) or profile.index.name != "position":
        raise InputError("position_profile_figure needs a DataFrame indexed by 'position'")
    long = profile.reset_index().melt(id_vars="position", var_name="metric", value_name="value")
    return _metric_lines(long, "position", "value", xlabel="position of the relevant document", ylabel="value",
                         title=title)


def _metric_lines(data: pd.DataFrame, x: str, y: str, **labels: str) -> Figure:
    """One line with markers per metric of ``data`` (long form), integer ticks on x."""
    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.add_subplot()
    sns.lineplot(data, x=x, y=y, hue="metric", marker="o", ax=ax)
    ax.set(**labels)
    _integer_ticks(ax)
    return fig


@styled
def pr_roc_figure(pr: pd.DataFrame, roc: pd.DataFrame, hue: str = "system") -> Figure:
    """Precision-recall (with interpolated precision, dashed) and ROC curves side by side (Manning et al.
    Fig. 8.2 and 8.4); inputs from :func:`meta_eval.measures.curves.pr_curve` and :func:`meta_eval.measures.curves.roc_curve`."""
    _need(pr, {hue, "recall", "precision", "interpolated"}, "pr_roc_figure (pr)")
    _need(roc, {hue, "fpr", "tpr"}, "pr_roc_figure (roc)")
    fig = Figure(figsize=(10, 4), layout="constrained")
    ax_pr, ax_roc = fig.subplots(1, 2)
    sns.lineplot(pr, x="recall", y="precision", hue=hue, marker="o", sort=False, estimator=None, ax=ax_pr)
    sns.lineplot(pr, x="recall", y="interpolated", hue=hue, linestyle="--", sort=False, estimator=None,
                 legend=False, ax=ax_pr)
    ax_pr.set(xlim=(0, 1.02), ylim=(0, 1.02), title="Precision-recall (dashed: interpolated)")
    sns.lineplot(roc, x="fpr", y="tpr", hue=hue, marker="o", sort=False, estimator=None, ax=ax_roc)
    ax_roc.plot([0, 1], [0, 1], color="grey", linewidth=0.8, linestyle=":")
    ax_roc.set(xlim=(0, 1.02), ylim=(0, 1.02), xlabel="false positive rate", ylabel="true positive rate",
               title="ROC")
    return fig


@styled
def graded_pr_figure(curve: pd.DataFrame, hue: str = "list", title: str = "Graded precision-recall") -> Figure:
    """Graded PR curve of the GAP paper §3.2 (input: :func:`meta_eval.measures.curves.graded_pr_curve`)."""
    _need(curve, {hue, "recall", "precision"}, "graded_pr_figure")
    fig = Figure(figsize=(6, 4), layout="constrained")
    ax = fig.add_subplot()
    sns.lineplot(curve.astype({hue: str}), x="recall", y="precision", hue=hue, marker="o", sort=False,
                 estimator=None, ax=ax)
    ax.set(xlim=(0, 1.02), ylim=(0, 1.02), xlabel="graded recall", ylabel="graded precision", title=title)
    return fig


@styled
def pattern_scatter(scores: pd.DataFrame, title: str = "Kishida's 136 patterns") -> Figure:
    """Pairwise scatter of the metrics over the patterns (Table 4's correlations made visible)."""
    if not isinstance(scores, pd.DataFrame) or scores.shape[1] < 2:
        raise InputError("pattern_scatter needs a DataFrame with at least two metric columns")
    k = scores.shape[1]
    fig = Figure(figsize=(2.2 * k, 2.2 * k), layout="constrained")
    axes = fig.subplots(k, k, squeeze=False)
    cols = list(scores.columns)
    for i, yi in enumerate(cols):
        for j, xj in enumerate(cols):
            ax = axes[i][j]
            if i == j:
                sns.histplot(scores[xj], ax=ax, bins=15)
            else:
                sns.scatterplot(x=scores[xj], y=scores[yi], ax=ax, s=10)
            ax.set(xlabel=xj if i == k - 1 else "", ylabel=yi if j == 0 else "")
    fig.suptitle(title)
    return fig
