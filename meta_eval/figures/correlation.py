"""Figures for the correlation analyses: heatmap, metric-vs-metric scatter of system means, rank-vs-rank plot.

Every function returns a :class:`matplotlib.figure.Figure` built without pyplot (no global state, no GUI backend
needed: ``fig.savefig(...)`` renders with Agg), and draws with seaborn.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from numpy.typing import ArrayLike
from scipy.stats import rankdata

from meta_eval.correlation.rank import kendall_tau_b, tau_ap
from meta_eval.errors import InputError

__all__ = ["correlation_heatmap", "means_scatter", "rank_rank"]

_LABELS = {
    "kendall_tau_b": "Kendall's τ_b",
    "tau_ap": "τ_AP (row = reference)",
    "tau_ap_a": "τ_AP-a (row = reference)",
    "tau_ap_sym": "symmetrised τ_AP (τ_AP-b)",
    "spearman": "Spearman's ρ",
    "pearson": "Pearson's r",
}


def correlation_heatmap(
    matrix: pd.DataFrame,
    *,
    title: str | None = None,
    vmin: float | None = None,
    vmax: float = 1.0,
    annot: bool = True,
    fmt: str = ".3f",
    cmap: str = "viridis",
    lower: bool = False,
) -> Figure:
    """Heatmap of a metric x metric correlation matrix.

    Parameters
    ----------
    matrix : pandas.DataFrame
        Square matrix, e.g. ``SystemCorrelation.matrix("kendall_tau_b")`` or ``TopicCorrelation.pooled``.
    title : str, optional
        Figure title; by default the name of ``matrix.attrs["coefficient"]`` (set by ``SystemCorrelation.matrix``).
    vmin, vmax : float
        Colour range; ``vmin`` defaults to min(0, smallest entry).
    annot, fmt : bool, str
        Write the values in the cells with this format.
    cmap : str
        Colour map.
    lower : bool
        Show only the lower triangle and the diagonal (for symmetric coefficients).
    """
    if not isinstance(matrix, pd.DataFrame) or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] == 0:
        raise InputError(f"expected a non-empty square DataFrame (metrics x metrics), got {type(matrix).__name__}"
                         f" of shape {getattr(matrix, 'shape', None)}")
    values = matrix.to_numpy(dtype=float)
    if vmin is None:
        finite = values[np.isfinite(values)]
        vmin = min(0.0, float(finite.min())) if finite.size else 0.0
    k = matrix.shape[0]
    fig = Figure(figsize=(1.2 + 0.9 * k, 0.8 + 0.8 * k), layout="constrained")
    ax = fig.add_subplot()
    mask = np.triu(np.ones((k, k), dtype=bool), 1) if lower else None
    sns.heatmap(matrix, ax=ax, vmin=vmin, vmax=vmax, annot=annot, fmt=fmt, cmap=cmap, mask=mask, square=True,
                cbar_kws={"shrink": 0.8})
    ax.set_ylabel(matrix.index.name or "")
    ax.set_xlabel("evaluated" if matrix.index.name == "reference" else "")
    coefficient = matrix.attrs.get("coefficient", "")
    ax.set_title(title if title is not None else _LABELS.get(coefficient, coefficient))
    return fig


def _means_pair(x: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.ndim == 2:
        x = x.mean(axis=1)
    if y.ndim == 2:
        y = y.mean(axis=1)
    if x.shape != y.shape or x.ndim != 1 or x.size < 2:
        raise InputError(f"expected system means (S,) or scores (S, T) of the same length with S >= 2; got "
                         f"{x.shape} and {y.shape}")
    return x, y


def means_scatter(
    x: ArrayLike,
    y: ArrayLike,
    *,
    name_x: str = "x",
    name_y: str = "y",
    systems: Sequence[str] | None = None,
    label: int = 0,
) -> Figure:
    """Scatter of system means under two metrics, with the identity line and Kendall's τ and τ_AP in the title.

    Parameters
    ----------
    x, y : array_like, shape (S,) or (S, T)
        System means (or per-topic scores, averaged over topics) under the two metrics; ``x`` is the reference
        for τ_AP(y | x).
    name_x, name_y : str
        Metric names for the axes.
    systems : sequence of str, optional
        System names, used with ``label``.
    label : int
        Annotate the ``label`` best systems under ``x`` with their names.
    """
    x, y = _means_pair(x, y)
    fig = Figure(figsize=(5, 5), layout="constrained")
    ax = fig.add_subplot()
    sns.scatterplot(x=x, y=y, ax=ax, s=25, edgecolor="none", alpha=0.8)
    lo = min(x.min(), y.min())
    hi = max(x.max(), y.max())
    pad = 0.03 * (hi - lo or 1.0)
    ax.plot([lo - pad, hi + pad], [lo - pad, hi + pad], ls="--", lw=1, color="grey", label="y = x")
    ax.set_xlim(lo - pad, hi + pad)
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_aspect("equal")
    ax.set_xlabel(f"mean {name_x}")
    ax.set_ylabel(f"mean {name_y}")
    ax.set_title(f"{name_y} vs {name_x}\nτ = {kendall_tau_b(x, y):.3f}, τ_AP({name_y}|{name_x}) = {tau_ap(x, y):.3f}",
                 fontsize="medium")
    ax.legend(loc="best", frameon=False)
    _annotate(ax, x, x, y, systems, label)
    return fig


def rank_rank(
    x: ArrayLike,
    y: ArrayLike,
    *,
    name_x: str = "x",
    name_y: str = "y",
    systems: Sequence[str] | None = None,
    label: int = 0,
) -> Figure:
    """Rank of each system under ``y`` against its rank under ``x`` (1 = best; ties get their average rank).

    Points on the identity line are ranked the same; the title gives Kendall's τ and τ_AP(y | x). Arguments as in
    :func:`means_scatter`.
    """
    x, y = _means_pair(x, y)
    rx = rankdata(-x)
    ry = rankdata(-y)
    n = x.size
    fig = Figure(figsize=(5, 5), layout="constrained")
    ax = fig.add_subplot()
    ax.plot([1, n], [1, n], ls="--", lw=1, color="grey", label="same rank")
    sns.scatterplot(x=rx, y=ry, ax=ax, s=25, edgecolor="none", alpha=0.8)
    ax.set_xlim(n + 0.5 + 0.02 * n, 0.5 - 0.02 * n)  # best rank at the top right
    ax.set_ylim(n + 0.5 + 0.02 * n, 0.5 - 0.02 * n)
    ax.set_aspect("equal")
    ax.set_xlabel(f"rank by {name_x}")
    ax.set_ylabel(f"rank by {name_y}")
    ax.set_title(f"ranks by {name_y} vs {name_x}\nτ = {kendall_tau_b(x, y):.3f}, "
                 f"τ_AP({name_y}|{name_x}) = {tau_ap(x, y):.3f}", fontsize="medium")
    ax.legend(loc="best", frameon=False)
    _annotate(ax, x, rx, ry, systems, label)
    return fig


def _annotate(ax, order_by, px, py, systems, label: int) -> None:
    if not label:
        return
    if systems is None or len(systems) != len(order_by):
        raise InputError(f"label={label} needs {len(order_by)} system names")
    for i in np.argsort(-order_by, kind="stable")[:label]:
        ax.annotate(str(systems[i]), (px[i], py[i]), fontsize=7, xytext=(3, 3), textcoords="offset points")
