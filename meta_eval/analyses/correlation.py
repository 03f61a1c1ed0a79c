"""Correlation between metrics: how alike their system rankings are.

Kendall's τ_b, τ_AP in both directions and symmetrised (τ_AP-b), tie-aware τ_AP-a, Spearman and Pearson between
the metrics' system rankings with bootstrap intervals over topics; the system pairs two metrics order oppositely and
how many of those swaps are significant; the correlation of per-topic scores (the engine is
:mod:`meta_eval.statistics.correlation`). A directed τ_AP(y | x) takes x as the reference ranking and is always
written with its direction; the symmetrised one is written τ_AP-b.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from meta_eval.analyses._base import AnalysisData, MemoryNeed
from meta_eval.analyses._result import FigureOutput, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.errors import InputError
from meta_eval.core.params import ANALYSIS_PARAMS, Param
from meta_eval.core.progress import CostModel
from meta_eval.rendering.figure_style import COLUMN_WIDTH, FULL_WIDTH, colors_for, styled
from meta_eval.rendering.findings import Finding, Quoter
from meta_eval.rendering.heatmap import correlation_heatmap
from meta_eval.rendering.paper_table import PaperTable, matrix_table

CI_METHODS = ("normal", "percentile", "basic", "bca")
SWAP_TESTS = ("bootstrap", "ttest", "none")
TOPIC_COEFFICIENTS = ("pearson", "spearman", "kendall")


@dataclass
class Correlation(Result):
    """``systems`` (:class:`~meta_eval.statistics.correlation.systems.SystemCorrelation`), ``swaps`` (one row per
    measure pair), ``topics`` (:class:`~meta_eval.statistics.correlation.topics.TopicCorrelation`), the (studied,
    reference) ``pairs`` the figures and the swap table show."""

    systems: Any
    swaps: pd.DataFrame
    topics: Any
    pairs: list[tuple[str, str]]
    test: str
    targets: list[str]
    against: list[str]
    n_topics: int
    alpha: float
    scale: str
    scores: dict
    colors: dict | None = None

    def tables(self) -> list[TableOutput]:
        sysres = self.systems
        pooled = self.topics.pooled.copy()
        pooled.index.name = ""
        mask = np.triu(np.ones(pooled.shape, dtype=bool), 0)  # the lower triangle; the diagonal (1) is left out
        directed = sysres.matrix("tau_ap")
        directed.index.name = "reference x"
        return [
            TableOutput("system_correlation", f"Agreement of the system rankings: Kendall's τ_b below the diagonal, "
                        f"τ_AP-b (τ_AP symmetrised) above, with {sysres.confidence:.0%} bootstrap "
                        f"{sysres.ci_method} intervals over {self.n_topics} topics", sysres.table,
                        agreement_table(sysres)),
            TableOutput("tau_ap", "Directed τ_AP(y | x): x (the row) is the reference ranking, y (the column) the "
                        "ranking evaluated", directed.reset_index(), PaperTable(directed)),
            TableOutput("swaps", f"System pairs ordered oppositely by two metrics, and how many of those swaps are "
                        f"significant ({self.test}, α = {self.alpha:g})", self.swaps,
                        swaps_table(self.swaps, self.pairs or None)),
            TableOutput("topic_correlation", f"{self.topics.method.title()} correlation of per-topic "
                        f"{self.scale}s (all system-topic pairs)", self.topics.to_frame(),
                        PaperTable(pooled.mask(mask).iloc[1:, :-1])),
        ]

    def figures(self) -> list[FigureOutput]:
        sysres = self.systems
        out = [FigureOutput("heatmap_agreement", "Kendall's τ_b (below the diagonal) and τ_AP-b (above) between "
                            "system rankings", lambda: correlation_heatmap(
                                sysres.matrix("kendall_tau_b"), upper=sysres.matrix("tau_ap_sym"), fmt=".2f",
                                vmin=min(0.5, float(sysres.table.value.min())),
                                colorbar_label="rank correlation (τ_b below, τ_AP-b above)")),
               FigureOutput("heatmap_tau_ap", "Directed τ_AP(column | row): the row is the reference ranking",
                            lambda: correlation_heatmap(sysres.matrix("tau_ap"), fmt=".2f",
                                                        colorbar_label="τ_AP(column | row)"), in_report=False),
               FigureOutput("heatmap_topics", f"{self.topics.method.title()} correlation of per-topic scores",
                            lambda: correlation_heatmap(self.topics.pooled, lower=True, fmt=".2f",
                                                        title=f"per-topic scores, pooled {self.topics.method}",
                                                        colorbar_label=f"{self.topics.method} correlation"),
                            in_report=False)]
        rows, columns = self._grid()
        if rows and columns:
            out += [
                FigureOutput("scatter_means", f"System means of the {self.scale}s (±1 s.e. over topics) under each "
                             "metric (rows) against each reference (columns), with τ_b and the directed "
                             "τ_AP(row | column)", lambda: scatter_grid(self.scores, rows, columns, colors=self.colors)),
                FigureOutput("rank_rank", "System ranks (1 = best) under each metric (rows) against each reference "
                             "(columns), with τ_b and the directed τ_AP(row | column); the dashed diagonal is 'same "
                             "rank'", lambda: rank_grid(self.scores, rows, columns, colors=self.colors))]
        return out

    def _grid(self) -> tuple[list[str], list[str]]:
        """The metrics of the scatter and rank grids: those under study against the references (without
        references, every metric against the first)."""
        if self.against:
            return [t for t in self.targets if t not in self.against], list(self.against)
        names = list(self.scores)
        return names[1:], names[:1]

    def findings(self) -> list[Finding]:
        """Which metric under study agrees most and least with which reference (τ_b and τ_AP-b, with intervals),
        from the metric x metric table (τ_b below the diagonal, τ_AP-b above)."""
        name = "system_correlation"
        q = Quoter(self.compact)
        t = self.compact[name]
        labels = [str(x) for x in t.values.index]
        rows, columns = self._grid()
        found = []
        for x in rows:
            for y in columns:
                if x == y or x not in labels or y not in labels:
                    continue
                i, j = sorted((labels.index(x), labels.index(y)))
                below = (labels[j], labels[i])  # τ_b cell: lower triangle
                value = pd.to_numeric(pd.Series([t.values.loc[below]]), errors="coerce").iloc[0]
                if value == value:
                    found.append((float(value), x, y, below, (labels[i], labels[j])))
        if not found:
            return []
        found.sort(key=lambda p: -p[0])

        def cell(at) -> str:  # the value, then its interval when there is one (none with B = 0)
            interval = q.interval(name, *at)
            return f"{q(name, *at)} {interval}" if interval else q(name, *at)

        def describe(p) -> str:
            _, x, y, below, above = p
            return f"{x} with {y} (τ_b = {cell(below)}, τ_AP-b = {cell(above)})"

        level = q.param("confidence", round(100 * self.systems.confidence))
        method = self.systems.ci_method
        if len(found) == 1:
            sentence = f"Agreement of the system rankings ({level} % {method} intervals): {describe(found[0])}."
        else:
            sentence = (f"Agreement of the system rankings with the references ({level} % {method} intervals): "
                        f"highest for {describe(found[0])}, lowest for {describe(found[-1])}.")
        return [q.finding(sentence)]


def agreement_table(sysres, *, decimals: int = 3) -> PaperTable:
    """Metric x metric: Kendall's τ_b below the diagonal, τ_AP-b above it, each with its bootstrap interval."""
    level = f"{sysres.confidence:.0%}"
    method = {"bca": "BCa", "normal": "normal", "basic": "basic", "percentile": "percentile"}[sysres.ci_method]
    return matrix_table(
        sysres.matrix("kendall_tau_b"), sysres.matrix("tau_ap_sym"),
        low=(sysres.matrix("kendall_tau_b", "ci_low"), sysres.matrix("tau_ap_sym", "ci_low")),
        high=(sysres.matrix("kendall_tau_b", "ci_high"), sysres.matrix("tau_ap_sym", "ci_high")),
        caption="Agreement of the system rankings: Kendall's τ_b below the diagonal, τ_AP-b above it.",
        note=f"{level} bootstrap {method} intervals over topics (B = {sysres.n_resamples}).", decimals=decimals)


def swaps_table(swaps: pd.DataFrame, pairs: Sequence[tuple[str, str]] | None = None) -> PaperTable:
    """One row per metric pair (x vs y): pairs, % of pairs ordered oppositely, how many of those swaps are
    significant under x, under y, under both."""
    frame = swaps
    if pairs is not None:
        wanted = {tuple(p) for p in pairs} | {(b, a) for a, b in pairs}
        frame = swaps[[(x, y) in wanted for x, y in zip(swaps.metric_x, swaps.metric_y)]]
    values = pd.DataFrame({
        "pairs": frame["n_pairs"].astype(int).to_numpy(),
        "% swapped": 100.0 * frame["swap_rate"].to_numpy(),
        "significant under x": frame["n_swaps_significant_x"].to_numpy(),
        "under y": frame["n_swaps_significant_y"].to_numpy(),
        "under both": frame["n_swaps_significant_both"].to_numpy(),
    }, index=pd.Index([f"{x} vs {y}" for x, y in zip(frame.metric_x, frame.metric_y)], name="x vs y"))
    return PaperTable(values, decimals={"% swapped": 1})


def _memory(data: AnalysisData, params) -> list[MemoryNeed]:
    from meta_eval.core.resampling import bootstrap_bytes
    from meta_eval.statistics.correlation.systems import correlation_bytes

    n_top, B = len(data.topics), params["n_resamples"]
    need = bootstrap_bytes(n_top, B) + correlation_bytes(len(data.raw), len(data.systems), n_top, B)
    return [MemoryNeed(need, f"a bootstrap of {B:,} replicates over {n_top} topics", "n_resamples")]


def _pvalues(data: AnalysisData, test: str, n_resamples: int, alpha: float, seed: int) -> dict | None:
    """Pairwise p-values per metric for the swap table: the discriminative-power stage's when it ran the same
    paired bootstrap with the same seed, else computed here (the same numbers)."""
    if test == "none":
        return None
    dp = data.results.get("discpower")
    if test == "bootstrap" and dp is not None and (dp.n_resamples or 1000) == n_resamples and \
            dp.params.get("seed") == seed and dp.all_systems.alpha == alpha and \
            all((m, "bootstrap") in dp.all_systems.tests for m in data.scores):
        return {m: dp.all_systems.tests[(m, "bootstrap")].asl for m in data.scores}
    from meta_eval.statistics.significance.bootstrap import paired_bootstrap
    from meta_eval.statistics.significance.classical import classical_test

    if test == "bootstrap":
        return {m: paired_bootstrap(s, data.systems, n_resamples=n_resamples, alpha=alpha, seed=seed).asl
                for m, s in data.scores.items()}
    return {m: classical_test(s, data.systems, test="ttest", alpha=alpha).asl for m, s in data.scores.items()}


def _work(data: AnalysisData, params: Mapping[str, Any]) -> float:
    """Replicates × metric pairs × system pairs: each replicate's coefficients (τ_AP compares every system
    pair) for every pair of metrics."""
    S, M = len(data.systems), len(data.raw)
    return max(params["n_resamples"], 1) * M * (M - 1) / 2 * S * S


#: One core's seconds (scripts/calibrate_study_cost.py: the analysis with its tables and figures, in a study with
#: jobs=1, after discpower, whose p-values it reuses): {run: (units, seconds)}.
COST = CostModel.fit("replicates × metric pairs × systems²", _work,
                     {"demo, quick": (768000, 2.82), "demo": (1.536e+07, 3.05),
                      "TREC-COVID, quick": (1.534e+07, 3.52), "TREC-COVID": (3.067e+08, 4.24)})


@analysis("correlation", quick=dict(n_resamples=30), min_measures=2,
          summary="Correlate metrics: Kendall's tau-b, tau_AP, Spearman, Pearson.",
          title="Correlation between metrics", after=("discpower",), needs="scores", order=40,
          params=(replace(ANALYSIS_PARAMS["n_resamples"], within="[0, 9007199254740992]",
                          doc="replicates of the bootstrap intervals over topics (0: no intervals)"),
                  ANALYSIS_PARAMS["seed"], ANALYSIS_PARAMS["confidence"],
                  Param("ci", "normal", str, "bootstrap interval of the correlations: normal (centred on the "
                        "estimate), percentile, basic or bca", choices=CI_METHODS),
                  ANALYSIS_PARAMS["alpha"],
                  Param("test", "bootstrap", str, "pairwise test that decides which swapped system pairs are "
                        "significant: Sakai's paired bootstrap, paired t-test, or none", choices=SWAP_TESTS),
                  Param("per_topic", "pearson", str, "coefficient of the per-topic correlations",
                        choices=TOPIC_COEFFICIENTS)),
          memory=_memory, standardised=True, cost=COST)
def run(data: AnalysisData, *, n_resamples: int, seed: int, confidence: float, ci: str, alpha: float, test: str,
        per_topic: str) -> Correlation:
    """Correlate the metrics' system rankings: Kendall's tau-b, tau_AP (both directions, symmetrised, tie-aware),
    Spearman and Pearson with bootstrap intervals over topics; count the system pairs each two metrics order
    oppositely and how many of those swaps are significant; correlate per-topic scores. In tau_AP(y|x) the
    metric x is the reference."""
    from meta_eval.statistics.correlation import correlate_systems, correlate_topics, swap_table

    sysres = correlate_systems(data.scores, data.systems, n_resamples=n_resamples, seed=seed, confidence=confidence,
                               ci_method=ci, progress=data.progress)
    swaps = swap_table(data.scores, _pvalues(data, test, n_resamples or 1000, alpha, seed), alpha=alpha,
                       systems=data.systems)
    pairs = [(x, y) for x in data.targets for y in data.against if x != y]
    shown = {"bootstrap": f"paired bootstrap, B = {n_resamples or 1000}", "ttest": "paired t-test", "none": "none"}[test]
    text = (f"Correlation of the system rankings by mean score. τ_AP(y | x) takes x as the reference ranking; "
            f"τ_AP-b is the mean of both directions (Urbano & Marrero 2017). Intervals: {confidence:.0%} "
            f"bootstrap {ci} intervals over topics (B = {n_resamples}, seed {seed}, the design of the "
            "discriminative-power test). system_correlation.csv holds every coefficient (τ_AP in both "
            "directions, tie-aware τ_AP-a, Spearman, Pearson) with its interval, standard error and bootstrap "
            f"bias; tau_ap.csv the directed τ_AP matrix. Swaps significant by the {shown} at α = {alpha:g}."
            f"{data.standardise_note()}")
    return Correlation(sysres, swaps, correlate_topics(data.scores, data.topics, method=per_topic), pairs, shown,
                       data.targets, list(data.against), len(data.topics), alpha, data.scale, data.scores,
                       data.colors, text=text)


# ------------------------------------------------------------------------------------------------------------------
# Scatter plots of means and rank-rank plots, one panel or a grid of them
# ------------------------------------------------------------------------------------------------------------------
# Scatter plots of means have no diagonal (the metrics live on different scales); they draw each system's mean with
# its standard error over topics on both axes. Rank-rank plots use ranks 1..S, where the diagonal does mean "same
# rank". Each panel names its τ_AP with its direction: τ_AP(y|x), x the reference on the horizontal axis.


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

    from meta_eval.statistics.correlation.rank import snap_ties

    n = x.size
    rx, ry = rankdata(-snap_ties(x)), rankdata(-snap_ties(y))
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
    """Kendall's τ_b and the directed τ_AP(y|x) in the upper left corner (x: the horizontal axis, the reference)."""
    tau, tap = _coefficients(x, y)
    ax.text(0.03, 0.97, f"$\\tau_b$ = {tau:.3f}\n$\\tau_{{AP}}$(y|x) = {tap:.3f}", transform=ax.transAxes,
            va="top", ha="left", fontsize="x-small")


@styled
def means_scatter(x: ArrayLike, y: ArrayLike, *, name_x: str = "x", name_y: str = "y",
                  systems: Sequence[str] | None = None, label: int = 0, color=None):
    """Scatter of system means under two metrics, with Kendall's τ_b and the directed τ_AP(y | x) in the title.

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
def rank_rank(x: ArrayLike, y: ArrayLike, *, name_x: str = "x", name_y: str = "y",
              systems: Sequence[str] | None = None, label: int = 0, color=None):
    """Rank of each system under ``y`` against its rank under ``x`` (1 = best; ties get their average rank).

    Points on the dashed diagonal are ranked the same; the title gives Kendall's τ_b and the directed τ_AP(y | x).
    Arguments as in :func:`means_scatter`.
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
                 f"$\\tau_\\mathrm{{AP}}$({name_y}|{name_x}) = {tap:.3f}", fontsize="medium")
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
def scatter_grid(scores: Mapping[str, ArrayLike], rows: Sequence[str], columns: Sequence[str], *,
                 colors: Mapping[str, object] | None = None, panel: float | None = None):
    """Small multiples of :func:`means_scatter`: the metric of row i (y) against the metric of column j (x).

    Each panel shows the system means with ±1 standard error over topics and, in its corner, Kendall's τ_b and
    the directed τ_AP(y|x) (the column metric, on the horizontal axis, is the reference).

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

    Notes
    -----
    The longer of ``rows`` and ``columns`` is laid out across the page (e.g. four metrics studied against two
    references: four columns, two rows).
    """
    return _grid(scores, rows, columns, "means", colors, panel)


@styled
def rank_grid(scores: Mapping[str, ArrayLike], rows: Sequence[str], columns: Sequence[str], *,
              colors: Mapping[str, object] | None = None, panel: float | None = None):
    """Small multiples of :func:`rank_rank` (ranks 1..S, 1 = best); arguments as :func:`scatter_grid`."""
    return _grid(scores, rows, columns, "ranks", colors, panel)


def _annotate(ax, order_by, px, py, systems, label: int) -> None:
    if not label:
        return
    if systems is None or len(systems) != len(order_by):
        raise InputError(f"label={label} needs {len(order_by)} system names")
    for i in np.argsort(-order_by, kind="stable")[:label]:
        ax.annotate(str(systems[i]), (px[i], py[i]), fontsize="x-small", xytext=(3, 3), textcoords="offset points")
