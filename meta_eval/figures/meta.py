"""Figures of the meta-evaluation battery (:mod:`meta_eval.meta`): ranking agreement against the fraction of
judgments kept, rank change of runs left out of the pool, ω² of the ANOVA effects, topics needed against the
minimum detectable difference, split-half τ against topic-set size, and the intuitiveness matrix.

Every function takes the tidy table of the analysis (the same DataFrame that goes to its CSV) and returns a
:class:`matplotlib.figure.Figure` built without pyplot, in the style of :mod:`meta_eval.figures.style`; a metric
keeps its colour when the same ``colors`` mapping is passed to every figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from meta_eval.errors import InputError
from meta_eval.figures.style import COLUMN_WIDTH, FULL_WIDTH, colors_for, styled

__all__ = ["incomplete_judgments_figure", "intuitiveness_figure", "omega_figure", "reusability_figure",
           "split_half_figure", "topic_set_size_figure"]

_LABELS = {"kendall_tau_b": "Kendall's τ_b", "tau_ap": "τ_AP (reduced | full)", "tau_ap_b": "τ_AP-b",
           "discpower": "pairs significant (t-test)"}
_STYLES = ("-", (0, (4, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)))
_MARKERS = ("o", "s", "D", "^", "v", "P")


def _need(frame: pd.DataFrame, columns: set[str], name: str) -> None:
    if not isinstance(frame, pd.DataFrame) or not columns <= set(frame.columns):
        raise InputError(f"{name} needs a table with columns {sorted(columns)}; got "
                         f"{list(getattr(frame, 'columns', []))}")


def _band(ax, x, mean, low, high, color, style, label) -> None:
    ax.fill_between(x, low, high, color=color, alpha=0.15, linewidth=0)
    ax.plot(x, mean, color=color, linestyle=style, marker="o", markersize=2.5, linewidth=1.2, label=label)


@styled
def incomplete_judgments_figure(
    summary: pd.DataFrame,
    *,
    coefficients: Sequence[str] = ("kendall_tau_b", "tau_ap", "discpower"),
    threshold: float | None = 0.9,
    colors: Mapping[str, object] | None = None,
    height: float = 2.4,
):
    """Mean coefficient (with its interval over draws) against the fraction of judgments kept: one panel per
    coefficient, one colour per metric, one line style per form (standard solid, condensed dashed).

    ``summary`` is :attr:`IncompleteJudgments.summary`. ``threshold`` draws a reference line on the τ panels
    (0.9, the usual "equivalent rankings" level); the discriminative-power panel shows each metric's value with
    the full qrels as a dotted line at fraction 1.
    """
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    _need(summary, {"metric", "form", "fraction", *coefficients,
                    *(f"{c}_{e}" for c in coefficients for e in ("low", "high"))}, "incomplete_judgments_figure")
    metrics = list(dict.fromkeys(summary["metric"]))
    forms = list(dict.fromkeys(summary["form"]))
    palette = colors_for(metrics, colors)
    fig = Figure(figsize=(FULL_WIDTH, height), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(coefficients), sharex=True))
    for ax, coef in zip(axes, coefficients):
        for (metric, form), grp in summary.groupby(["metric", "form"], sort=False):
            grp = grp.sort_values("fraction")
            _band(ax, grp["fraction"], grp[coef], grp[f"{coef}_low"], grp[f"{coef}_high"], palette[metric],
                  _STYLES[forms.index(form) % len(_STYLES)], None)
            if coef == "discpower" and "discpower_full" in grp:
                ax.plot([grp["fraction"].iloc[-1], 1.0], [grp[coef].iloc[-1], grp["discpower_full"].iloc[0]],
                        color=palette[metric], linestyle=":", linewidth=0.9)
        if threshold is not None and coef != "discpower":
            ax.axhline(threshold, color="0.5", linewidth=0.7, linestyle=(0, (2, 2)), zorder=0)
        ax.set_title(_LABELS.get(coef, coef), fontsize="medium")
        ax.set_xlim(0, 1.02)
    fig.supxlabel("fraction of judgments kept", fontsize="medium")
    axes[0].set_ylabel("mean over draws (interval)")
    handles = [Line2D([], [], color=palette[m], label=m) for m in metrics]
    handles += [Line2D([], [], color="0.3", linestyle=_STYLES[i % len(_STYLES)], label=f)
                for i, f in enumerate(forms)]
    fig.legend(handles=handles, loc="outside right upper", frameon=False, fontsize="small")
    return fig


@styled
def reusability_figure(
    runs: pd.DataFrame,
    *,
    form: str | None = None,
    colors: Mapping[str, object] | None = None,
    height: float = 2.5,
):
    """Rank change of each run when the documents only its group contributed are removed from the pool, against
    its official rank (1 = best): one marker series per metric. Points above zero are runs that lose places
    when left out of the pool.

    ``runs`` is :attr:`Reusability.runs`; ``form`` picks one form (default: the first in the table).
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    _need(runs, {"metric", "form", "rank_full", "rank_change"}, "reusability_figure")
    form = form if form is not None else runs["form"].iloc[0]
    data = runs[runs["form"] == form]
    if data.empty:
        raise InputError(f"no rows of form {form!r}; the table has {sorted(set(runs['form']))}")
    metrics = list(dict.fromkeys(data["metric"]))
    palette = colors_for(metrics, colors)
    fig = Figure(figsize=(FULL_WIDTH, height), layout="constrained")
    ax = fig.subplots()
    offsets = np.linspace(-0.25, 0.25, len(metrics)) if len(metrics) > 1 else [0.0]
    for i, (metric, dx) in enumerate(zip(metrics, offsets)):
        part = data[data["metric"] == metric]
        ax.scatter(part["rank_full"] + dx, part["rank_change"], s=10, color=palette[metric], label=metric,
                   marker=_MARKERS[i % len(_MARKERS)], edgecolor="white", linewidth=0.3, zorder=2)
    ax.axhline(0, color="0.5", linewidth=0.7, zorder=0)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("official rank of the run (full qrels)")
    ax.set_ylabel("rank change when left out\n(> 0: the run drops)")
    ax.set_xlim(0, data["rank_full"].max() + 1)
    fig.legend(loc="outside right upper", frameon=False, fontsize="small")
    ax.set_title(f"Pool reusability ({form} form)", fontsize="medium")
    return fig


@styled
def omega_figure(table: pd.DataFrame, *, colors: Mapping[str, object] | None = None, height: float = 2.3):
    """Partial ω² of the system and topic effects per metric (two-way ANOVA): bars per metric, one panel per
    effect. ``table`` is :attr:`Anova.table`."""
    from matplotlib.figure import Figure

    _need(table, {"metric", "effect", "omega_sq"}, "omega_figure")
    metrics = list(dict.fromkeys(table["metric"]))
    palette = colors_for(metrics, colors)
    effects = [e for e in ("system", "topic") if e in set(table["effect"])]
    fig = Figure(figsize=(min(FULL_WIDTH, max(COLUMN_WIDTH, 1.5 + 0.9 * len(metrics) * len(effects))), height),
                 layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(effects), sharey=True))
    for ax, effect in zip(axes, effects):
        part = table[table["effect"] == effect].set_index("metric").reindex(metrics)
        ax.bar(range(len(metrics)), part["omega_sq"], color=[palette[m] for m in metrics], width=0.65)
        for i, v in enumerate(part["omega_sq"]):
            ax.text(i, v, f"{v:.2f}", ha="center", va="bottom", fontsize="x-small")
        ax.set_xticks(range(len(metrics)))
        rotate = max(map(len, metrics)) > 6
        ax.set_xticklabels(metrics, rotation=30 if rotate else 0, ha="right" if rotate else "center")
        ax.set_title(f"{effect} effect", fontsize="medium")
    axes[0].set_ylabel("partial ω²")
    axes[0].set_ylim(0, max(1.0, float(np.nanmax(table["omega_sq"].to_numpy(float), initial=0)) * 1.1))
    return fig


@styled
def topic_set_size_figure(
    table: pd.DataFrame,
    *,
    colors: Mapping[str, object] | None = None,
    height: float = 2.6,
):
    """Topics needed against the minimum detectable difference (log scale): one colour per metric, one line style
    per design (paired t-test; one-way ANOVA with m systems). ``table`` is :attr:`TopicSetSize.table`."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    _need(table, {"metric", "design", "n_systems", "min_d", "n_topics"}, "topic_set_size_figure")
    metrics = list(dict.fromkeys(table["metric"]))
    palette = colors_for(metrics, colors)
    designs = list(dict.fromkeys(zip(table["design"], table["n_systems"])))
    labels = [("paired t-test" if d == "ttest" else f"ANOVA, m = {m}") for d, m in designs]
    fig = Figure(figsize=(min(FULL_WIDTH, 5.2), height), layout="constrained")
    ax = fig.subplots()
    for (metric, design, m), grp in table.groupby(["metric", "design", "n_systems"], sort=False):
        grp = grp.sort_values("min_d")
        ax.plot(grp["min_d"], grp["n_topics"], color=palette[metric],
                linestyle=_STYLES[designs.index((design, m)) % len(_STYLES)], linewidth=1.2)
    ax.set_yscale("log")
    ax.set_xlabel("minimum detectable difference (minD)")
    ax.set_ylabel("topics needed")
    alpha, beta = table["alpha"].iloc[0], table["beta"].iloc[0]
    ax.set_title(f"Topic-set size (α = {alpha:g}, power {1 - beta:g})", fontsize="medium")
    ax.grid(True, which="major", axis="both")
    handles = [Line2D([], [], color=palette[m], label=m) for m in metrics]
    handles += [Line2D([], [], color="0.3", linestyle=_STYLES[i % len(_STYLES)], label=lab)
                for i, lab in enumerate(labels)]
    fig.legend(handles=handles, loc="outside right upper", frameon=False, fontsize="small")
    return fig


@styled
def split_half_figure(
    summary: pd.DataFrame,
    *,
    colors: Mapping[str, object] | None = None,
    height: float = 2.4,
):
    """Mean τ between the system rankings of two disjoint topic halves against the half size, with the interval
    over splits: one panel per coefficient, one colour per metric. ``summary`` has the columns of
    :attr:`SplitHalf.summary` plus ``metric``."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    _need(summary, {"metric", "size", "coefficient", "mean", "ci_low", "ci_high"}, "split_half_figure")
    metrics = list(dict.fromkeys(summary["metric"]))
    coefficients = list(dict.fromkeys(summary["coefficient"]))
    palette = colors_for(metrics, colors)
    fig = Figure(figsize=(FULL_WIDTH if len(coefficients) > 1 else COLUMN_WIDTH + 1.2, height),
                 layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(coefficients), sharey=True))
    for ax, coef in zip(axes, coefficients):
        for metric, grp in summary[summary["coefficient"] == coef].groupby("metric", sort=False):
            grp = grp.sort_values("size")
            _band(ax, grp["size"], grp["mean"], grp["ci_low"], grp["ci_high"], palette[metric], "-", metric)
        ax.set_title(_LABELS.get(coef, coef), fontsize="medium")
        ax.set_xlabel("topics per half")
    axes[0].set_ylabel("τ between the halves' rankings")
    handles = [Line2D([], [], color=palette[m], label=m) for m in metrics]
    fig.legend(handles=handles, loc="outside right upper", frameon=False, fontsize="small")
    return fig


def intuitiveness_figure(matrix: pd.DataFrame, *, gold: str = "gold"):
    """Heatmap of the intuitiveness matrix: cell (x, y) = share of the x/y disagreements on which the gold
    criterion sides with x (:meth:`Intuitiveness.matrix`). Drawn by the project's heatmap."""
    from meta_eval.figures.correlation import correlation_heatmap

    matrix = matrix.copy()
    matrix.index.name = "metric (row)"
    return correlation_heatmap(matrix, vmin=0.0, vmax=1.0, cmap="viridis",
                               title=f"Intuitiveness against {gold}: row metric agrees with the gold criterion")
