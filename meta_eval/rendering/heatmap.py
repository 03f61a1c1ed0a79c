"""A metric x metric heatmap: one coefficient, or two (e.g. τ_b below the diagonal and τ_AP-b above it).

Built without pyplot, in the style of :mod:`meta_eval.rendering.figure_style`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from meta_eval.core.errors import InputError
from meta_eval.rendering.figure_style import FULL_WIDTH, fit_length, styled

__all__ = ["correlation_heatmap"]

_LABELS = {
    "kendall_tau_b": r"Kendall's $\tau_b$",
    "tau_ap": r"$\tau_{AP}$ (row = reference)",
    "tau_ap_a": r"$\tau_{AP\text{-}a}$ (row = reference)",
    "tau_ap_sym": r"$\tau_{AP\text{-}b}$ (symmetrised)",
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
        What the colours mean, beside the colour bar, on as many lines as it takes to fit the figure's height (with
        ``title=""``, the figure carries no title: a report or paper gives the caption).
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
                cbar_kws={"shrink": 0.8, "label": colorbar_label}, annot_kws={"fontsize": "small"}, linewidths=0.5,
                linecolor="white")
    ax.grid(False)
    ax.tick_params(length=0)
    ax.set_ylabel(matrix.index.name or "")
    ax.set_xlabel("evaluated" if matrix.index.name == "reference" else "")
    if title is None:
        low = _LABELS.get(matrix.attrs.get("coefficient", ""), matrix.attrs.get("coefficient", ""))
        if upper is not None:  # one line per triangle: on one line the title was wider than a heatmap of few metrics
            high = _LABELS.get(upper.attrs.get("coefficient", ""), upper.attrs.get("coefficient", ""))
            title = f"below the diagonal: {low}\nabove: {high}"
        else:
            title = low
    ax.set_title(title, fontsize="medium")
    if colorbar_label:
        fit_length(ax.collections[0].colorbar.ax.yaxis.label, 0.95 * fig.get_figheight() * fig.dpi)
    return fig


def _check_square(matrix) -> None:
    if not isinstance(matrix, pd.DataFrame) or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] == 0:
        raise InputError(f"expected a non-empty square DataFrame (metrics x metrics), got {type(matrix).__name__}"
                         f" of shape {getattr(matrix, 'shape', None)}")
