"""The ASL-curve figure of discriminative power, in the style of the GAP paper's Figure 3 (Robertson, Kanoulas &
Yilmaz, SIGIR 2010): one curve per metric (pairs sorted by ASL on x, ASL on y), the alpha line, and an inset
for the best systems. Built without pyplot (``fig.savefig`` renders with Agg) and drawn with seaborn.
"""

from __future__ import annotations

import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from meta_eval.discpower import DiscPower
from meta_eval.errors import InputError

__all__ = ["asl_curve_figure"]


def _curves(result: DiscPower, method: str | None) -> tuple[pd.DataFrame, str | None]:
    data = result.curves()
    methods = list(dict.fromkeys(data["method"]))
    if method is not None:
        if method not in methods:
            raise InputError(f"method {method!r} is not in the result; it has {methods}")
        data = data[data["method"] == method]
        methods = [method]
    style = "method" if len(methods) > 1 else None
    return data, style


def _draw(ax, data: pd.DataFrame, style: str | None, alpha: float, legend: bool) -> None:
    sns.lineplot(data=data, x="rank", y="asl", hue="metric", style=style, ax=ax, legend=legend, linewidth=1.4,
                 drawstyle="steps-post", errorbar=None)
    ax.axhline(alpha, color="0.35", linestyle="--", linewidth=0.9)
    ax.set_ylim(0, max(0.2, float(data["asl"].max()) * 1.02) if len(data) else 1)
    ax.set_xlim(1, max(2, int(data["rank"].max())) if len(data) else 2)


def asl_curve_figure(
    result: DiscPower,
    *,
    top: DiscPower | None = None,
    method: str | None = None,
    title: str | None = None,
    top_label: str | None = None,
    figsize: tuple[float, float] = (7.6, 4.4),
) -> Figure:
    """ASL curves of every metric: x = system pair sorted by ASL, y = ASL; the closer to the origin, the more
    discriminative the metric. A dashed line marks alpha.

    Parameters
    ----------
    result : DiscPower
        From :func:`meta_eval.discpower.discriminative_power` over all systems.
    top : DiscPower, optional
        The same analysis over the best systems (e.g. ``best_systems(..., k=15)``), drawn as an inset.
    method : str, optional
        Draw only this method's curves (default: all, distinguished by line style).
    title, top_label : str, optional
        Figure title and inset title (default "top systems (P pairs)").

    Returns
    -------
    matplotlib.figure.Figure
    """
    data, style = _curves(result, method)
    fig = Figure(figsize=figsize, layout="constrained")
    with sns.axes_style("whitegrid"):
        ax = fig.add_subplot()
        _draw(ax, data, style, result.alpha, legend=True)
    ax.set_xlabel("system pair (sorted by ASL)")
    ax.set_ylabel("achieved significance level (ASL)")
    ax.text(0.01, result.alpha, f"α = {result.alpha:g}", va="bottom", ha="left", fontsize=8, color="0.35",
            transform=ax.get_yaxis_transform())
    if ax.get_legend() is not None:
        sns.move_legend(ax, "upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if top is not None:
        tdata, tstyle = _curves(top, method)
        with sns.axes_style("whitegrid"):
            inset = ax.inset_axes((0.08, 0.42, 0.42, 0.5))
        _draw(inset, tdata, tstyle, top.alpha, legend=False)
        n_pairs = int(tdata["rank"].max()) if len(tdata) else 0
        inset.set_title(top_label or f"top systems ({n_pairs} pairs)", fontsize=8)
        inset.set_xlabel("")
        inset.set_ylabel("")
        inset.tick_params(labelsize=7)
    if title:
        ax.set_title(title)
    return fig
