"""Figures of the correlation analyses: a metric x metric heatmap (one coefficient, or τ_b below the diagonal and
symmetrised τ_AP above it), scatter plots of system means and rank-rank plots, one panel or a grid of them.

Scatter plots of means have no diagonal (the metrics live on different scales); they draw each system's mean with
its standard error over topics on both axes. Rank-rank plots use ranks 1..S, where the diagonal does mean "same
rank". Every function returns a :class:`matplotlib.figure.Figure` built without pyplot, in the style of
:mod:`meta_eval.rendering.figure_style`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from meta_eval.core.errors import InputError
from meta_eval.rendering.figure_style import COLUMN_WIDTH, FULL_WIDTH, colors_for, styled

__all__ = ["correlation_heatmap", "means_scatter", "rank_rank", "rank_grid", "scatter_grid"]

_LABELS = {
    "kendall_tau_b": r"Kendall's $\tau_b$",
    "tau_ap": r"$\tau_{AP}$ (row = reference)",
    "tau_ap_a": r"$\tau_{AP\text{-}a}$ (row = reference)",
    "tau_ap_sym": r"symmetrised $\tau_{AP}$",
    "spearman": r"Spearman's $\rho$",
    "pearson": "Pearson's r",
}


@styled
def correlation_heatmap(
    matrix: pd.DataFrame,
    *,
    upper: pd.DataFrame | None = None,
    title: str | None = None,
    vmin: float | None = None,
    vmax: float = 1.0,
    annot: bool = True,
    fmt: str = ".3f",
    cmap: str = "viridis",
    lower: bool = False,
    colorbar_label: str = "",
):
    """Heatmap of a metric x metric correlation matrix.

    Parameters
    ----------
    matrix : pandas.DataFrame
        Square matrix, e.g. ``SystemCorrelation.matrix("kendall_tau_b")`` or ``TopicCorrelation.pooled``.
    upper : pandas.DataFrame, optional
        A second matrix (same labels) shown above the diagonal, ``matrix`` below it, the diagonal left blank:
        e.g. τ_b below and symmetrised τ_AP above.
    title : str, optional
        Figure title; by default the name of the coefficient(s) (``matrix.attrs["coefficient"]``).
    vmin, vmax : float
        Colour range; ``vmin`` defaults to min(0, smallest entry).
    annot, fmt : bool, str
        Write the values in the cells with this format.
    cmap : str
        Colour map (default viridis: perceptually uniform and colour-blind safe).
    lower : bool
        Show only the lower triangle and the diagonal (for symmetric coefficients).
    colorbar_label : str
        What the colours mean, beside the colour bar (with ``title=""``, the figure carries no title: a report or
        paper gives the caption).
    """
    import seaborn as sns
    from matplotlib.figure import Figure

    _check_square(matrix)
    values = matrix.to_numpy(dtype=float).copy()
    k = matrix.shape[0]
    mask = np.triu(np.ones((k, k), dtype=bool), 1) if lower else np.zeros((k, k), dtype=bool)
    if upper is not None:
        _check_square(upper)
        if list(upper.index) != list(matrix.index) or list(upper.columns) != list(matrix.columns):
            raise InputError("the upper matrix must have the same metrics, in the same order, as the lower one")
        above = np.triu(np.ones((k, k), dtype=bool), 1)
        values[above] = upper.to_numpy(dtype=float)[above]
        mask = np.eye(k, dtype=bool)
    if vmin is None:
        finite = values[np.isfinite(values) & ~mask]
        vmin = min(0.0, float(finite.min())) if finite.size else 0.0
    fig = Figure(figsize=(min(FULL_WIDTH, 1.2 + 0.75 * k), 0.6 + 0.62 * k), layout="constrained")
    ax = fig.add_subplot()
    frame = pd.DataFrame(values, index=matrix.index, columns=matrix.columns)
    sns.heatmap(frame, ax=ax, vmin=vmin, vmax=vmax, annot=annot, fmt=fmt, cmap=cmap, mask=mask, square=True,
                cbar_kws={"shrink": 0.8, "label": colorbar_label}, annot_kws={"fontsize": "small"}, linewidths=0.5, linecolor="white")
    ax.grid(False)
    ax.tick_params(length=0)
    ax.set_ylabel(matrix.index.name or "")
    ax.set_xlabel("evaluated" if matrix.index.name == "reference" else "")
    if title is None:
        low = _LABELS.get(matrix.attrs.get("coefficient", ""), matrix.attrs.get("coefficient", ""))
        if upper is not None:
            high = _LABELS.get(upper.attrs.get("coefficient", ""), upper.attrs.get("coefficient", ""))
            title = f"below the diagonal: {low}; above: {high}"
        else:
            title = low
    ax.set_title(title, fontsize="medium")
    return fig


def _check_square(matrix) -> None:
    if not isinstance(matrix, pd.DataFrame) or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] == 0:
        raise InputError(f"expected a non-empty square DataFrame (metrics x metrics), got {type(matrix).__name__}"
                         f" of shape {getattr(matrix, 'shape', None)}")


def _as_scores(x: ArrayLike) -> tuple[np.ndarray, np.ndarray | None]:
    """System means and their standard errors over topics (None when only means are given)."""
    a = np.asarray(x, dtype=float)
    if a.ndim == 2:
        se = a.std(axis=1, ddof=1) / np.sqrt(a.shape[1]) if a.shape[1] > 1 else None
        return a.mean(axis=1), se
    return a, None


def _means_pair(x: ArrayLike, y: ArrayLike):
    (mx, sx), (my, sy) = _as_scores(x), _as_scores(y)
    if mx.shape != my.shape or mx.ndim != 1 or mx.size < 2:
        raise InputError(f"expected system means (S,) or scores (S, T) of the same length with S >= 2; got "
                         f"{np.shape(x)} and {np.shape(y)}")
    return mx, my, sx, sy


def _coefficients(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    from meta_eval.statistics.correlation.rank import kendall_tau_b, tau_ap

    return float(kendall_tau_b(x, y)), float(tau_ap(x, y))


def _scatter_panel(ax, x, y, sx, sy, color, systems, label) -> None:
    if sx is not None or sy is not None:
        ax.errorbar(x, y, xerr=sx, yerr=sy, fmt="none", ecolor="0.75", elinewidth=0.6, capsize=0, zorder=1)
    ax.scatter(x, y, s=12, color=color, edgecolor="white", linewidth=0.3, zorder=2)
    _annotate(ax, x, x, y, systems, label)


def _rank_panel(ax, x, y, color, systems, label) -> None:
    from scipy.stats import rankdata

    n = x.size
    rx, ry = rankdata(-x), rankdata(-y)
    ax.plot([1, n], [1, n], ls=(0, (4, 2)), lw=0.8, color="0.6", zorder=0, label="same rank")
    ax.scatter(rx, ry, s=12, color=color, edgecolor="white", linewidth=0.3, zorder=2)
    ticks = _rank_ticks(n)
    ax.set_xticks(ticks)
    ax.set_yticks(ticks)
    ax.set_xlim(0.5 - 0.02 * n, n + 0.5 + 0.02 * n)
    ax.set_ylim(0.5 - 0.02 * n, n + 0.5 + 0.02 * n)
    ax.set_aspect("equal")
    _annotate(ax, x, rx, ry, systems, label)


def _rank_ticks(n: int) -> list[int]:
    """1, then round steps up to n (e.g. 1, 10, 20, 30 for 32 systems)."""
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000):
        if n / step <= 5:
            break
    return [1, *range(step, n + 1, step)] if step > 1 else list(range(1, n + 1))


def _corner(ax, x, y) -> None:
    """Kendall's τ_b and τ_AP(y | x) in the upper left corner."""
    tau, tap = _coefficients(x, y)
    ax.text(0.03, 0.97, f"$\\tau_b$ = {tau:.3f}\n$\\tau_{{AP}}$ = {tap:.3f}", transform=ax.transAxes, va="top",
            ha="left", fontsize="x-small")


@styled
def means_scatter(
    x: ArrayLike,
    y: ArrayLike,
    *,
    name_x: str = "x",
    name_y: str = "y",
    systems: Sequence[str] | None = None,
    label: int = 0,
    color=None,
):
    """Scatter of system means under two metrics, with Kendall's τ and τ_AP(y | x) in the title.

    Parameters
    ----------
    x, y : array_like, shape (S,) or (S, T)
        System means, or per-topic scores (then each point has error bars of ±1 standard error over topics);
        ``x`` is the reference for τ_AP(y | x).
    name_x, name_y : str
        Metric names for the axes.
    systems : sequence of str, optional
        System names, used with ``label``.
    label : int
        Annotate the ``label`` best systems under ``x`` with their names.
    color : colour, optional
        Colour of the points (the study passes the metric's colour).
    """
    from matplotlib.figure import Figure

    mx, my, sx, sy = _means_pair(x, y)
    fig = Figure(figsize=(COLUMN_WIDTH, COLUMN_WIDTH), layout="constrained")
    ax = fig.add_subplot()
    _scatter_panel(ax, mx, my, sx, sy, color or "C0", systems, label)
    ax.set_xlabel(f"mean {name_x}")
    ax.set_ylabel(f"mean {name_y}")
    tau, tap = _coefficients(mx, my)
    ax.set_title(f"{name_y} vs {name_x}\n$\\tau_b$ = {tau:.3f}, $\\tau_\\mathrm{{AP}}$({name_y}|{name_x}) = {tap:.3f}",
                 fontsize="medium")
    return fig


@styled
def rank_rank(
    x: ArrayLike,
    y: ArrayLike,
    *,
    name_x: str = "x",
    name_y: str = "y",
    systems: Sequence[str] | None = None,
    label: int = 0,
    color=None,
):
    """Rank of each system under ``y`` against its rank under ``x`` (1 = best; ties get their average rank).

    Points on the dashed diagonal are ranked the same; the title gives Kendall's τ and τ_AP(y | x). Arguments as
    in :func:`means_scatter`.
    """
    from matplotlib.figure import Figure

    mx, my, _, _ = _means_pair(x, y)
    fig = Figure(figsize=(COLUMN_WIDTH, COLUMN_WIDTH), layout="constrained")
    ax = fig.add_subplot()
    _rank_panel(ax, mx, my, color or "C0", systems, label)
    ax.set_xlabel(f"rank by {name_x}")
    ax.set_ylabel(f"rank by {name_y}")
    tau, tap = _coefficients(mx, my)
    ax.set_title(f"ranks by {name_y} vs {name_x}\n$\\tau_b$ = {tau:.3f}, "
                 f"$\\tau_\\mathrm{{AP}}$({name_y}|{name_x}) = {tap:.3f}",
                 fontsize="medium")
    return fig


def _grid(scores: Mapping[str, ArrayLike], rows: Sequence[str], columns: Sequence[str], kind: str,
          colors: Mapping[str, object] | None, panel: float | None):
    """Panels of ``rows`` metrics (y) against ``columns`` metrics (x); laid out with the longer list across."""
    from matplotlib.figure import Figure

    rows, columns = list(rows), list(columns)
    missing = [m for m in [*rows, *columns] if m not in scores]
    if missing:
        raise InputError(f"no scores for {missing}; have {list(scores)}")
    if not rows or not columns:
        raise InputError("a grid needs at least one row metric and one column metric")
    palette = colors_for(rows, colors)
    across = len(rows) > len(columns)  # studied metrics across the page, references down
    n_r, n_c = (len(columns), len(rows)) if across else (len(rows), len(columns))
    size = panel or min(2.0, (FULL_WIDTH - 0.2) / n_c)
    fig = Figure(figsize=(min(FULL_WIDTH, 0.2 + size * n_c), 0.1 + size * n_r), layout="constrained")
    axes = fig.subplots(n_r, n_c, squeeze=False)
    prefix = "mean " if kind == "means" else "rank by "
    for i, y_name in enumerate(rows):
        for j, x_name in enumerate(columns):
            ax = axes[j][i] if across else axes[i][j]
            mx, my, sx, sy = _means_pair(scores[x_name], scores[y_name])
            if x_name == y_name:
                ax.text(0.5, 0.5, "—", transform=ax.transAxes, ha="center", va="center", color="0.5")
            elif kind == "means":
                _scatter_panel(ax, mx, my, sx, sy, palette[y_name], None, 0)
                _corner(ax, mx, my)
            else:
                _rank_panel(ax, mx, my, palette[y_name], None, 0)
                _corner(ax, mx, my)
            ax.set_xlabel(prefix + x_name, fontsize="small", labelpad=1)
            ax.set_ylabel(prefix + y_name, fontsize="small", labelpad=1)
            ax.tick_params(labelsize="x-small")
    return fig


@styled
def scatter_grid(
    scores: Mapping[str, ArrayLike],
    rows: Sequence[str],
    columns: Sequence[str],
    *,
    colors: Mapping[str, object] | None = None,
    panel: float | None = None,
):
    """Small multiples of :func:`means_scatter`: the metric of row i (y) against the metric of column j (x).

    Each panel shows the system means with ±1 standard error over topics and, in its corner, Kendall's τ_b and
    τ_AP(row | column) (the column metric is the reference).

    Parameters
    ----------
    scores : mapping metric -> array (S, T)
        Per-topic scores (or system means (S,), then without error bars).
    rows, columns : sequence of str
        Metrics on the y axes (e.g. the metrics under study) and on the x axes (e.g. GAP and nDCG).
    colors : mapping metric -> colour, optional
        Colours of the row metrics.
    panel : float, optional
        Panel size in inches (default: the text width shared by the panels across, at most 2 in).

    The longer of ``rows`` and ``columns`` is laid out across the page (e.g. four metrics studied against two
    references: four columns, two rows).
    """
    return _grid(scores, rows, columns, "means", colors, panel)


@styled
def rank_grid(
    scores: Mapping[str, ArrayLike],
    rows: Sequence[str],
    columns: Sequence[str],
    *,
    colors: Mapping[str, object] | None = None,
    panel: float | None = None,
):
    """Small multiples of :func:`rank_rank` (ranks 1..S, 1 = best); arguments as :func:`scatter_grid`."""
    return _grid(scores, rows, columns, "ranks", colors, panel)


def _annotate(ax, order_by, px, py, systems, label: int) -> None:
    if not label:
        return
    if systems is None or len(systems) != len(order_by):
        raise InputError(f"label={label} needs {len(order_by)} system names")
    for i in np.argsort(-order_by, kind="stable")[:label]:
        ax.annotate(str(systems[i]), (px[i], py[i]), fontsize="x-small", xytext=(3, 3), textcoords="offset points")
