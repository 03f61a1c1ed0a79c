"""The ASL-curve figure of discriminative power (Sakai 2006; the GAP paper's Figure 3, Robertson, Kanoulas &
Yilmaz, SIGIR 2010): one curve per metric, system pairs sorted by achieved significance level (ASL) on x, ASL on y.

The y axis is zoomed on [0, 4α] by default: the region where the metrics differ is where their curves cross α
(the pairs told apart are those left of the crossing), and on a 0-1 axis it is a few pixels high. The best-systems
analysis is a second panel beside the first, not an inset over it. Built without pyplot (``fig.savefig`` renders
with Agg), in the style of :mod:`meta_eval.figures.style`.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from meta_eval.discpower import DiscPower
from meta_eval.errors import InputError
from meta_eval.figures.style import FULL_WIDTH, colors_for, styled

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
    ax.text(0.02, alpha, f"α = {alpha:g}", transform=ax.get_yaxis_transform(), ha="left", va="bottom",
            fontsize="small", color="0.2")
    n_pairs = int(data["rank"].max()) if len(data) else 1
    ax.set_xlim(0, max(2, n_pairs))
    ax.set_ylim(0, ymax)
    ax.set_xlabel("system pairs, sorted by ASL")


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

    The further right a curve crosses α, the more pairs the metric tells apart. With ``top``, a second panel
    shows the same analysis over the best systems.

    Parameters
    ----------
    result : DiscPower
        From :func:`meta_eval.discpower.discriminative_power` over all systems.
    top : DiscPower, optional
        The same analysis over the best systems (e.g. ``best_systems(..., k=15)``), drawn in a second panel.
    method : str, optional
        Draw only this method's curves (default: all, distinguished by line style).
    title, top_label : str, optional
        Figure title; title of the second panel (default "top S systems (P pairs)").
    colors : mapping metric -> colour, optional
        The study's metric colours (:func:`meta_eval.figures.style.metric_colors`).
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
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for i, (ax, (frame, res, label)) in enumerate(zip(axes, panels)):
        _draw(ax, frame, style, res.alpha, ymax, palette, legend=i == 0)
        ax.set_title(label, fontsize="medium")
        ax.set_ylabel("achieved significance level" if i == 0 else "")
    legend = axes[0].get_legend()
    if legend is not None:
        handles, labels = axes[0].get_legend_handles_labels()
        legend.remove()
        keep = [(h, lab) for h, lab in zip(handles, labels) if lab not in ("metric", "method")]
        fig.legend([h for h, _ in keep], [lab for _, lab in keep], loc="outside right center", frameon=False)
    if title:
        fig.suptitle(title)
    return fig
