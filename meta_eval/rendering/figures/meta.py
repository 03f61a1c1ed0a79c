"""Figures of the meta-evaluation battery (:mod:`meta_eval.meta`): ranking agreement against the fraction of
judgments kept, rank change of runs left out of the pool, ω² of the ANOVA effects, topics needed against the
minimum detectable difference, split-half τ against topic-set size, and the intuitiveness matrix.

Every function takes the tidy table of the analysis (the same DataFrame that goes to its CSV) and returns a
:class:`matplotlib.figure.Figure` built without pyplot, in the style of :mod:`meta_eval.rendering.figure_style`; a metric
keeps its colour when the same ``colors`` mapping is passed to every figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from meta_eval.core.errors import InputError
from meta_eval.rendering.figure_style import COLUMN_WIDTH, FULL_WIDTH, colors_for, styled

__all__ = ["incomplete_judgments_figure", "intuitiveness_figure", "omega_figure", "reusability_figure",
           "split_half_figure", "topic_set_size_figure"]

_LABELS = {"kendall_tau_b": r"Kendall's $\tau_b$", "tau_ap": r"$\tau_\mathrm{AP}$ (reduced | full)",
           "tau_ap_b": r"$\tau_{\mathrm{AP}\text{-}b}$", "discpower": "pairs significant (t-test)"}
_STYLES = ("-", (0, (4, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)))
_MARKERS = ("o", "s", "D", "^", "v", "P")


def _need(frame: pd.DataFrame, columns: set[str], name: str) -> None:
    if not isinstance(frame, pd.DataFrame) or not columns <= set(frame.columns):
        raise InputError(f"{name} needs a table with columns {sorted(columns)}; got "
                         f"{list(getattr(frame, 'columns', []))}")


def _dodged(ax, x, mean, low, high, *, color, marker: str, offset: float, style="-", label=None) -> None:
    """A metric's means joined by a line, each with its interval as an error bar, shifted by ``offset`` along x so
    that the intervals of metrics at the same x stand side by side instead of merging into one band."""
    x = np.asarray(x, dtype=float) + offset
    mean, low, high = (np.asarray(v, dtype=float) for v in (mean, low, high))
    ax.errorbar(x, mean, yerr=np.vstack([mean - low, high - mean]), color=color, linestyle=style, linewidth=1.1,
                marker=marker, markersize=3, markeredgecolor="white", markeredgewidth=0.4, elinewidth=0.7,
                capsize=0, label=label)


def _offsets(n: int, step: float) -> np.ndarray:
    """x offsets of ``n`` dodged series, centred on 0, ``step`` apart."""
    return (np.arange(n) - (n - 1) / 2) * step


@styled
def incomplete_judgments_figure(
    summary: pd.DataFrame,
    *,
    coefficients: Sequence[str] = ("kendall_tau_b", "tau_ap", "discpower"),
    threshold: float | None = 0.9,
    colors: Mapping[str, object] | None = None,
    height: float | None = None,
):
    """Each metric's agreement with its full-qrels ranking against the fraction of judgments kept: small multiples
    with one row per coefficient and one column per form (standard: unjudged = not relevant; condensed: unjudged
    removed), one colour and marker per metric, the mean over draws with its interval as an error bar (dodged).

    ``summary`` is :attr:`IncompleteJudgments.summary`. ``threshold`` draws a reference line on the τ rows (0.9,
    the usual "equivalent rankings" level); on the discriminative-power row a hollow marker at fraction 1 is the
    metric's value with the full qrels.
    """
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    _need(summary, {"metric", "form", "fraction", *coefficients,
                    *(f"{c}_{e}" for c in coefficients for e in ("low", "high"))}, "incomplete_judgments_figure")
    metrics = list(dict.fromkeys(summary["metric"]))
    forms = list(dict.fromkeys(summary["form"]))
    palette = colors_for(metrics, colors)
    fractions = np.sort(summary["fraction"].unique())
    step = 0.5 * float(np.min(np.diff(fractions))) / max(len(metrics), 1) if len(fractions) > 1 else 0.01
    offsets = dict(zip(metrics, _offsets(len(metrics), step)))
    fig = Figure(figsize=(FULL_WIDTH, height or 1.7 * len(coefficients) + 0.5), layout="constrained")
    axes = fig.subplots(len(coefficients), len(forms), sharex=True, sharey="row", squeeze=False)
    for row, coef in enumerate(coefficients):
        for col, form in enumerate(forms):
            ax = axes[row, col]
            for i, metric in enumerate(metrics):
                grp = summary[(summary["metric"] == metric) & (summary["form"] == form)].sort_values("fraction")
                _dodged(ax, grp["fraction"], grp[coef], grp[f"{coef}_low"], grp[f"{coef}_high"],
                        color=palette[metric], marker=_MARKERS[i % len(_MARKERS)], offset=offsets[metric])
                if coef == "discpower" and "discpower_full" in grp and len(grp):
                    ax.plot([1.0 + offsets[metric]], [grp["discpower_full"].iloc[0]], marker=_MARKERS[
                        i % len(_MARKERS)], markersize=3.5, markerfacecolor="white", color=palette[metric])
            if threshold is not None and coef != "discpower":
                ax.axhline(threshold, color="0.5", linewidth=0.7, linestyle=(0, (2, 2)), zorder=0)
            if row == 0:
                ax.set_title(f"{form} form", fontsize="medium")
            if col == 0:
                ax.set_ylabel(_LABELS.get(coef, coef), fontsize="small")
            ax.set_xlim(0, 1.05)
    ticks = [0, 0.25, 0.5, 0.75, 1.0]
    for ax in axes[-1]:
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks[:-1]] + (["1 (full)"] if "discpower" in coefficients else
                                                                ["1"]))
    fig.supxlabel("fraction of judgments kept (mean over draws, 95 % interval)", fontsize="medium")
    handles = [Line2D([], [], color=palette[m], marker=_MARKERS[i % len(_MARKERS)], markersize=3, label=m)
               for i, m in enumerate(metrics)]
    if threshold is not None:
        handles.append(Line2D([], [], color="0.5", linewidth=0.7, linestyle=(0, (2, 2)), label=f"τ = {threshold:g}"))
    if "discpower" in coefficients and "discpower_full" in summary:
        handles.append(Line2D([], [], color="0.3", marker="o", markerfacecolor="white", markersize=3.5,
                              linestyle="", label="full qrels"))
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
    ax.set_title(f"{form} form", fontsize="medium")
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
    height: float = 2.4,
):
    """Topics needed against the minimum detectable difference (log scale), one panel per design the paper table
    shows — the paired t-test and the one-way ANOVA of the most systems (:func:`~meta_eval.rendering.paper_table.
    topic_set_size_columns`; the ANOVA of two systems is the t-test again, nearly to the topic) — one colour and
    marker per metric. A metric whose topic-set size is undefined (zero variance) has no line. ``table`` is
    :attr:`TopicSetSize.table`; α and the power are in the caption the report writes."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    _need(table, {"metric", "design", "n_systems", "min_d", "n_topics"}, "topic_set_size_figure")
    metrics = list(dict.fromkeys(table["metric"]))
    palette = colors_for(metrics, colors)
    designs = [("ttest", 2)] if (table["design"] == "ttest").any() else []
    anova = table[table["design"] == "anova"]
    if len(anova):
        designs.append(("anova", int(anova["n_systems"].max())))
    fig = Figure(figsize=(FULL_WIDTH if len(designs) > 1 else COLUMN_WIDTH + 1.2, height), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(designs), sharey=True))
    for ax, (design, m) in zip(axes, designs):
        part = table[(table["design"] == design) & (table["n_systems"] == m)]
        for i, metric in enumerate(metrics):
            grp = part[part["metric"] == metric].sort_values("min_d")
            ax.plot(grp["min_d"], pd.to_numeric(grp["n_topics"]).astype(float), color=palette[metric],
                    marker=_MARKERS[i % len(_MARKERS)], markersize=2.5, linewidth=1.1)
        ax.set_yscale("log")
        ax.set_title("paired t-test" if design == "ttest" else f"one-way ANOVA, m = {m} systems", fontsize="medium")
        ax.grid(True, which="major", axis="both")
    axes[0].set_ylabel("topics needed")
    fig.supxlabel("minimum detectable difference (minD)", fontsize="medium")
    handles = [Line2D([], [], color=palette[m], marker=_MARKERS[i % len(_MARKERS)], markersize=3, label=m)
               for i, m in enumerate(metrics)]
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
    over splits as an error bar: one panel per coefficient, one colour and marker per metric, the metrics dodged
    side by side at each size. ``summary`` has the columns of :attr:`SplitHalf.summary` plus ``metric``."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    _need(summary, {"metric", "size", "coefficient", "mean", "ci_low", "ci_high"}, "split_half_figure")
    metrics = list(dict.fromkeys(summary["metric"]))
    coefficients = list(dict.fromkeys(summary["coefficient"]))
    palette = colors_for(metrics, colors)
    sizes = np.sort(summary["size"].unique())
    gap = float(np.min(np.diff(sizes))) if len(sizes) > 1 else 1.0
    offsets = dict(zip(metrics, _offsets(len(metrics), 0.6 * gap / max(len(metrics), 1))))
    fig = Figure(figsize=(FULL_WIDTH if len(coefficients) > 1 else COLUMN_WIDTH + 1.2, height),
                 layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(coefficients), sharey=True))
    for ax, coef in zip(axes, coefficients):
        for i, metric in enumerate(metrics):
            grp = summary[(summary["coefficient"] == coef) & (summary["metric"] == metric)].sort_values("size")
            _dodged(ax, grp["size"], grp["mean"], grp["ci_low"], grp["ci_high"], color=palette[metric],
                    marker=_MARKERS[i % len(_MARKERS)], offset=offsets[metric])
        ax.set_title(_LABELS.get(coef, coef), fontsize="medium")
        ax.set_xlabel("topics per half")
    axes[0].set_ylabel("τ between the halves")
    handles = [Line2D([], [], color=palette[m], marker=_MARKERS[i % len(_MARKERS)], markersize=3, label=m)
               for i, m in enumerate(metrics)]
    fig.legend(handles=handles, loc="outside right upper", frameon=False, fontsize="small")
    return fig


def intuitiveness_figure(matrix: pd.DataFrame, *, gold: str = "gold"):
    """Heatmap of the intuitiveness matrix: cell (x, y) = share of the x/y disagreements on which the gold
    criterion sides with x (:meth:`Intuitiveness.matrix`). Drawn by the project's heatmap."""
    from meta_eval.rendering.figures.correlation import correlation_heatmap

    matrix = matrix.copy()
    matrix.index.name = "row metric"
    fig = correlation_heatmap(matrix, vmin=0.0, vmax=1.0, cmap="viridis", title="",
                              colorbar_label=f"share of disagreements on which {gold} sides with the row metric")
    fig.axes[0].set_xlabel("column metric")
    return fig
