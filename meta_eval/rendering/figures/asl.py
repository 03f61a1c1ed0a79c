"""The ASL-curve figure of discriminative power (Sakai 2006; the GAP paper's Figure 3, Robertson, Kanoulas &
Yilmaz, SIGIR 2010): one curve per metric, system pairs sorted by achieved significance level (ASL) on x, ASL on y.

The y axis is zoomed on [0, 4α] by default: the region where the metrics differ is where their curves cross α
(the pairs told apart are those left of the crossing), and on a 0-1 axis it is a few pixels high. The best-systems
analysis is a second panel beside the first, not an inset over it. Built without pyplot (``fig.savefig`` renders
with Agg), in the style of :mod:`meta_eval.rendering.figure_style`.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from meta_eval.statistics.significance.discriminative_power import DiscPower
from meta_eval.core.errors import InputError
from meta_eval.rendering.figure_style import FULL_WIDTH, colors_for, styled

__all__ = ["asl_curve_figure"]


def _curves(result: DiscPower, method: str | None) -> tuple[pd.DataFrame, str | None]:
    data = result.curves()
    methods = list(dict.fromkeys(data["method"]))
    if method is not None:
        if method not in methods:
            raise InputError(f"method {method!r} is not in the result; it has {methods}")
        data = data[data["method"] == method]
        methods = [method]
    style = "method" if len(methods) > 1 else "metric"
    return data, style


def _n_systems(result: DiscPower) -> int:
    return len(next(iter(result.tests.values())).systems)


def _draw(ax, data: pd.DataFrame, style: str, alpha: float, ymax: float, palette: dict, legend: bool) -> None:
    import seaborn as sns

    sns.lineplot(data=data, x="rank", y="asl", hue="metric", style=style, palette=palette, ax=ax, legend=legend,
                 linewidth=1.3, drawstyle="steps-post", errorbar=None)
    ax.axhline(alpha, color="0.2", linestyle=(0, (4, 2)), linewidth=0.8, zorder=1)
    _mark_crossings(ax, data, alpha, palette)
    n_pairs = int(data["rank"].max()) if len(data) else 1
    ax.set_xlim(_left_edge(data, alpha, n_pairs), max(2, n_pairs))
    ax.set_ylim(0, ymax)
    _alpha_tick(ax, alpha, ymax)
    ax.set_xlabel("system pairs, sorted by ASL")


def _crossings(data: pd.DataFrame, alpha: float) -> pd.Series:
    """Per curve (metric, and method when several are drawn), the pairs told apart: the last rank with ASL < α."""
    keys = ["metric"] + (["method"] if data["method"].nunique() > 1 else [])
    below = data[data["asl"] < alpha]
    return below.groupby(keys, sort=False)["rank"].max()


def _mark_crossings(ax, data: pd.DataFrame, alpha: float, palette: dict) -> None:
    """A dot where each curve crosses α: its x is the number of pairs the metric tells apart, readable even where
    curves run on top of one another."""
    for key, rank in _crossings(data, alpha).items():
        metric = key[0] if isinstance(key, tuple) else key
        ax.plot([rank], [alpha], marker="o", markersize=4, color=palette[metric], markeredgecolor="white",
                markeredgewidth=0.5, zorder=3, clip_on=False)


def _left_edge(data: pd.DataFrame, alpha: float, n_pairs: int) -> float:
    """Zoom the x axis on the pairs where the curves rise towards α: from a little before the first curve reaches
    α/4 (pairs left of it are significant under every metric), but never hiding more than 3/4 of the axis."""
    risen = data[data["asl"] >= alpha / 4]
    if risen.empty:
        return 0
    first = float(risen.groupby("metric", sort=False)["rank"].min().min())
    left = first - 0.1 * (n_pairs - first)
    return max(0.0, min(left, 0.75 * n_pairs))


def _alpha_tick(ax, alpha: float, ymax: float) -> None:
    """α as a labelled tick on the ASL axis (a label inside the axes sat on a curve)."""
    from matplotlib.ticker import MaxNLocator

    ticks = [t for t in MaxNLocator(nbins=4).tick_values(0, ymax) if 0 <= t <= ymax and abs(t - alpha) > ymax / 12]
    ticks = sorted([*ticks, alpha])
    ax.set_yticks(ticks)
    ax.set_yticklabels([f"α = {t:g}" if t == alpha else f"{t:g}" for t in ticks])


@styled
def asl_curve_figure(
    result: DiscPower,
    *,
    top: DiscPower | None = None,
    method: str | None = None,
    title: str | None = None,
    top_label: str | None = None,
    colors: Mapping[str, object] | None = None,
    ymax: float | None = None,
    figsize: tuple[float, float] | None = None,
):
    """ASL curves of every metric: x = system pair sorted by ASL, y = ASL, and a dashed line at α.

    The further right a curve crosses α (a dot marks each crossing), the more pairs the metric tells apart. The x
    axis starts a little before the first curve rises to α/4: the pairs left of it are significant under every
    metric, and on a full axis the crossings crowd into its last fifth. With ``top``, a second panel shows the
    same analysis over the best systems.

    Parameters
    ----------
    result : DiscPower
        From :func:`meta_eval.statistics.significance.discriminative_power` over all systems.
    top : DiscPower, optional
        The same analysis over the best systems (e.g. ``best_systems(..., k=15)``), drawn in a second panel.
    method : str, optional
        Draw only this method's curves (default: all, distinguished by line style).
    title, top_label : str, optional
        Figure title; title of the second panel (default "top S systems (P pairs)").
    colors : mapping metric -> colour, optional
        The study's metric colours (:func:`meta_eval.rendering.figure_style.metric_colors`).
    ymax : float, optional
        Upper limit of the ASL axis (default min(1, 4α)); 1 shows the whole curves.
    figsize : (float, float), optional
        Default: the full text width, 2.7 in high (half the width without ``top``).

    Returns
    -------
    matplotlib.figure.Figure
        ``fig.axes[0]`` is the all-systems panel, ``fig.axes[1]`` the best-systems panel.
    """
    from matplotlib.figure import Figure

    data, style = _curves(result, method)
    ymax = float(ymax) if ymax is not None else min(1.0, 4 * result.alpha)
    if not 0 < ymax <= 1:
        raise InputError(f"ymax must be in (0, 1]; got {ymax!r}")
    panels = [(data, result, f"all {_n_systems(result)} systems ({int(data['rank'].max()) if len(data) else 0} pairs)")]
    if top is not None:
        tdata, _ = _curves(top, method)
        n_top = int(tdata["rank"].max()) if len(tdata) else 0
        label = f"{top_label} ({n_top} pairs)" if top_label else f"top {_n_systems(top)} systems ({n_top} pairs)"
        panels.append((tdata, top, label))
    palette = colors_for(list(dict.fromkeys(data["metric"])), colors)
    if figsize is None:
        figsize = (FULL_WIDTH if top is not None else FULL_WIDTH * 0.55, 2.7)
    fig = Figure(figsize=figsize, layout="constrained")
    axes = fig.subplots(1, len(panels), squeeze=False, sharey=True)[0]
    for i, (ax, (frame, res, label)) in enumerate(zip(axes, panels)):
        _draw(ax, frame, style, res.alpha, ymax, palette, legend=i == 0)
        ax.set_title(label, fontsize="medium")
        ax.set_ylabel("achieved significance level" if i == 0 else "")
        ax.tick_params(axis="y", labelleft=i == 0)
    legend = axes[0].get_legend()
    if legend is not None:
        handles, labels = axes[0].get_legend_handles_labels()
        legend.remove()
        keep = [(h, lab) for h, lab in zip(handles, labels) if lab not in ("metric", "method")]
        told = [_crossings(frame, res.alpha) for frame, res, _ in panels]
        shown = [lab if style == "method" else f"{lab} ({', '.join(str(int(t.get(lab, 0))) for t in told)})"
                 for _, lab in keep]
        heading = None if style == "method" else "pairs told apart"
        fig.legend([h for h, _ in keep], shown, loc="outside right center", frameon=False, title=heading,
                   title_fontsize="small")
    if title:
        fig.suptitle(title)
    return fig
