"""Discriminative power: how many system pairs each metric tells apart.

Sakai's (2006) paired bootstrap test of every system pair (or any other test of
:mod:`meta_eval.statistics.significance`: the randomised Tukey HSD, classical tests with corrections) under every
metric, over all systems and over the top-k systems (the GAP paper's Figure 3), with the difference required;
the ASL-curve figure (Sakai 2006; Robertson, Kanoulas & Yilmaz, SIGIR 2010, Figure 3).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from meta_eval.analyses._base import AnalysisData, MemoryNeed
from meta_eval.analyses._result import FigureOutput, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.errors import InputError
from meta_eval.core.params import ANALYSIS_PARAMS, Param
from meta_eval.core.progress import CostModel
from meta_eval.rendering.figure_style import FULL_WIDTH, colors_for, styled
from meta_eval.rendering.findings import Finding, Quoter, joined, ranked, tied
from meta_eval.rendering.paper_table import PaperTable, best_mask
from meta_eval.statistics.significance.discriminative_power import DEFAULT_RESAMPLES, METHODS, PairTests

#: The tests a user picks from (meta_eval.statistics.significance.discriminative_power.METHODS).
TESTS = METHODS


@dataclass
class DiscriminativePower(Result):
    """The tests over all systems (``all_systems``) and over the ``best`` top-k systems (``top_systems``, None when
    not run); ``spread``: each metric's standard deviation of its per-topic scores (what makes Δ comparable)."""

    all_systems: PairTests
    top_systems: PairTests | None
    best: list[str]
    k: int
    methods: tuple[str, ...]
    n_resamples: int | None
    alpha: float
    spread: dict[str, float]
    scale: str = "score"
    colors: dict | None = None

    @property
    def method(self) -> str:
        """The method of the compact table, the findings and the main figure (the first asked for)."""
        return self.methods[0]

    def summary(self) -> pd.DataFrame:
        """One row per subset (``all``, ``top k``), metric and method: pairs, significant, proportion, Δ required."""
        frames = [self.all_systems.summary().assign(subset="all")]
        if self.top_systems is not None:
            frames.append(self.top_systems.summary().assign(subset=f"top {self.k}"))
        frame = pd.concat(frames, ignore_index=True)
        frame["diff_required_sd"] = frame["diff_required"] / frame["metric"].map(self.spread)
        return frame[["subset", "metric", "method", "pairs", "significant", "proportion", "diff_required",
                      "diff_required_sd"]]

    def asl(self) -> pd.DataFrame:
        """One row per subset, metric, method and system pair: its achieved significance level."""
        frames = [self.all_systems.asl_table().assign(subset="all")]
        if self.top_systems is not None:
            frames.append(self.top_systems.asl_table().assign(subset=f"top {self.k}"))
        frame = pd.concat(frames, ignore_index=True)
        return frame[["subset", *(c for c in frame.columns if c != "subset")]]

    def tables(self) -> list[TableOutput]:
        top_text = (f" and over the top {self.k} ({pairs(self.top_systems, self.method):,} pairs)"
                    if self.top_systems is not None else "")
        replicates = f", B = {_replicates(self.method, self.n_resamples)}" \
            if self.method in DEFAULT_RESAMPLES else ""
        caption = (f"Discriminative power ({self.method}{replicates}): percentage of system pairs told apart "
                   f"(ASL < {self.alpha:g}) and the difference required (Δ, and Δ over the metric's s.d. of "
                   f"per-topic {self.scale}s), over all {_n_systems(self.all_systems)} systems "
                   f"({pairs(self.all_systems, self.method):,} pairs){top_text}")
        return [TableOutput("discpower_summary", caption, self.summary(), self.compact_table()),
                TableOutput("asl", "Achieved significance level of every system pair", self.asl())]

    def compact_table(self) -> PaperTable:
        """One row per metric: % of pairs discriminated, Δ required and Δ/σ, and the same for the top-k systems.
        Bold marks only what can be compared across metrics: the most pairs told apart and the smallest Δ/σ (Δ
        itself is in the metric's own units: a metric on a smaller scale needs a smaller Δ)."""
        values = _columns(self.all_systems, self.method, self.spread, "")
        if self.top_systems is not None:
            values = values.join(_columns(self.top_systems, self.method, self.spread, f" (top {self.k})"))
        values.index.name = "metric"
        decimals = {c: (1 if c.startswith("%") else 3) for c in values.columns}
        best = {c: ("max" if c.startswith("%") else "min") for c in values.columns if not c.startswith("Δ required")}
        return PaperTable(values, decimals=decimals, bold=best_mask(values, best, decimals),
                          note="Δ is in each metric's own units; Δ/σ divides it by the s.d. of the metric's "
                          "per-topic scores, so metrics on different scales compare.")

    def figures(self) -> list[FigureOutput]:
        top_label = f"top {self.k} systems" if self.top_systems is not None else None
        out = []
        for i, method in enumerate(self.methods):
            stem = "asl_curves" if i == 0 else f"asl_curves_{method}"

            def draw(method=method):
                return asl_curve_figure(self.all_systems, top=self.top_systems, method=method, colors=self.colors,
                                        top_label=top_label)

            out.append(FigureOutput(stem, f"ASL curves ({method}): system pairs sorted by ASL, as a percentage of "
                                    f"the pairs (from 0 in every panel), zoomed on ASL ≤ {min(1, 4 * self.alpha):g}; "
                                    "a curve crosses α at the percentage of pairs the metric tells apart (the table's "
                                    "% discriminated; the legend gives the counts)", draw))
        return out

    def findings(self) -> list[Finding]:
        """Most and least discriminative metric (all systems, then the top-k systems); one clause when every metric
        tells apart as many pairs (as shown)."""
        q = Quoter(self.compact)
        t = self.compact["discpower_summary"]
        counts = {"all": pairs(self.all_systems, self.method),
                  "top": pairs(self.top_systems, self.method) if self.top_systems is not None else None}
        out = []
        for suffix, label in ((("", "all"), (f" (top {self.k})", "top")) if self.top_systems is not None
                              else (("", "all"),)):
            column = f"% discriminated{suffix}"
            order = ranked(t, column)
            if len(order) < 2:
                continue
            best, worst = order[0], order[-1]
            most, fewest = joined(tied(t, column, order)), joined(tied(t, column, order[::-1])[::-1])
            n_pairs = q.param(f"pairs ({label})", counts[label])
            b = f", B = {q.param('B', _replicates(self.method, self.n_resamples))}" \
                if self.method in DEFAULT_RESAMPLES else ""
            lead = (f"Discriminative power ({self.method}{b}, α = {q.param('alpha', self.alpha)}, {n_pairs} system "
                    "pairs): " if label == "all" else f"Among the top {q.param('top', self.k)} systems ({n_pairs} "
                    "pairs), ")
            if t.text(best, column) == t.text(worst, column):
                sentence = f"{lead}every metric tells apart {q('discpower_summary', best, column)} % of the pairs."
            else:
                sentence = (f"{lead}{most} {'tell' if most != best else 'tells'} apart the most pairs, "
                            f"{q('discpower_summary', best, column)} %, and {fewest} the fewest, "
                            f"{q('discpower_summary', worst, column)} %.")
            out.append(q.finding(sentence[0].upper() + sentence[1:]))
        return out


def _columns(tests: PairTests, method: str, spread: Mapping[str, float], suffix: str) -> pd.DataFrame:
    f = tests.summary()
    f = f[f["method"] == method].set_index("metric")
    return pd.DataFrame({f"% discriminated{suffix}": 100.0 * f["proportion"],
                         f"Δ required{suffix}": f["diff_required"],
                         f"Δ/σ{suffix}": f["diff_required"] / f.index.map(spread)})


def pairs(tests: PairTests, method: str) -> int:
    """The number of system pairs the tests of ``method`` cover (one value: every metric tests them all)."""
    summary = tests.summary()
    found = set(summary.loc[summary["method"] == method, "pairs"].astype(int))
    if len(found) != 1:
        raise InputError(f"the metrics were tested on different numbers of pairs ({sorted(found)})")
    return found.pop()


def _replicates(method: str, n_resamples: int | None) -> int:
    """The replicates a randomised test ran (its default when none was given): what a caption must state."""
    return n_resamples or DEFAULT_RESAMPLES[method]


#: The suffixes of the corrected forms of the classical tests, in words.
_CORRECTIONS = {"holm": "Holm's step-down", "bonferroni": "Bonferroni's", "bh": "Benjamini-Hochberg's"}


def _multiplicity(methods) -> str:
    """What each test does about the number of pairs: a reader must know whether "told apart" is per pair."""
    parts = []
    plain = [m for m in methods if m != "tukey" and m.rsplit("-", 1)[-1] not in _CORRECTIONS]
    if plain:
        parts.append(f"{', '.join(plain)}: uncorrected, each pair tested at α on its own, as discriminative power "
                     "counts pairs (Sakai 2006)")
    parts += [f"{m}: {_CORRECTIONS[m.rsplit('-', 1)[-1]]} correction over the pairs" for m in methods
              if m.rsplit("-", 1)[-1] in _CORRECTIONS]
    if "tukey" in methods:
        parts.append("tukey: the family-wise error over all pairs is controlled by the test itself")
    return "Multiple comparisons: " + "; ".join(parts) + "."


def _n_systems(tests: PairTests) -> int:
    return len(next(iter(tests.tests.values())).systems)


def _memory(data: AnalysisData, params) -> list[MemoryNeed]:
    from meta_eval.core.resampling import bootstrap_bytes

    n_top, B = len(data.topics), params["n_resamples"] or 1000
    return [MemoryNeed(bootstrap_bytes(n_top, B), f"a bootstrap of {B:,} replicates over {n_top} topics",
                       "n_resamples")]


def _work(data: AnalysisData, params: Mapping[str, Any]) -> float:
    """System pairs (all, and the top-k systems') × topics × metrics × replicates, summed over the tests (a test
    that does not resample counts one replicate)."""

    S, k = len(data.systems), params["top"]
    pairs = S * (S - 1) / 2 + (k * (k - 1) / 2 if 1 < k < S else 0)
    replicates = sum((params["n_resamples"] or DEFAULT_RESAMPLES[m]) if m in DEFAULT_RESAMPLES else 1
                     for m in params["methods"])
    return pairs * len(data.topics) * len(data.raw) * replicates


#: One core's seconds (scripts/calibrate_study_cost.py: the analysis with its tables and figures, in a study with
#: jobs=1): {run: (units, seconds)}.
COST = CostModel.fit("system pairs × topics × metrics × replicates", _work,
                     {"demo, quick": (3.036e+06, 0.69), "demo": (7.212e+07, 0.82),
                      "TREC-COVID, quick": (9.147e+07, 1.06), "TREC-COVID": (1.846e+09, 2.52)})


@analysis("discpower", quick=dict(n_resamples=50, top=5),
          summary="Discriminative power: how many system pairs each metric tells apart.",
          title="Discriminative power", needs="scores", order=10,
          params=(Param("methods", ("bootstrap",), str, "test of every system pair: bootstrap (Sakai's paired "
                        "bootstrap), unpaired-bootstrap, tukey (randomised Tukey HSD), ttest, wilcoxon, sign and the "
                        "corrected forms e.g. ttest-holm, wilcoxon-bh", choices=TESTS, many=True,
                        flags=("--method",)),
                  Param("n_resamples", None, int, "replicates of the randomised tests (default 1000 for the "
                        "bootstraps, 5000 for Tukey HSD)", within="[1, 9007199254740992]",
                        flags=("--resamples", "-B")),
                  ANALYSIS_PARAMS["alpha"], ANALYSIS_PARAMS["seed"],
                  Param("top", 15, int, "also analyse the top-k systems by every metric at once (0: not)",
                        within="[0, inf)", check=lambda k: "needs at least 2 systems to form a pair (0: not)"
                        if k == 1 else None, domain="0, or an integer >= 2")),
          memory=_memory, standardised=True, parallel=True, cost=COST)
def run(data: AnalysisData, *, methods: tuple[str, ...], n_resamples: int | None, alpha: float, seed: int,
        top: int) -> DiscriminativePower:
    """Test every system pair under every metric (Sakai's paired bootstrap by default, one replicate matrix
    shared by every pair and metric) and count the pairs each metric tells apart (ASL < alpha), with the estimated
    difference required; the same over the top-k systems that rank best under every metric at once."""
    from meta_eval.statistics.best_systems import best_systems
    from meta_eval.statistics.significance.discriminative_power import discriminative_power

    common = dict(methods=methods, alpha=alpha, n_resamples=n_resamples, seed=seed, progress=data.progress,
                  jobs=data.jobs, scheduler=data.scheduler)
    result = discriminative_power(data.scores, data.systems, **common)
    top_result, best = None, []
    if 1 < top < len(data.systems):
        best = best_systems(data.scores, data.systems, top)
        top_result = discriminative_power(data.scores, data.systems, subset=best, **common)
    spread = {name: float(np.std(x)) for name, x in data.scores.items()}
    randomised = [m for m in methods if m in DEFAULT_RESAMPLES]
    b = (", B = " + ", ".join(f"{_replicates(m, n_resamples)}" + (f" ({m})" if len(randomised) > 1 else "")
                              for m in randomised)) if randomised else ""
    text = (f"{', '.join(methods)} test of every system pair{b}, seed {seed}; the randomised tests share one "
            f"replicate matrix across pairs and metrics. A pair is told apart when its achieved significance level "
            f"(ASL) is below α = {alpha:g}; Δ required is the largest, over pairs, estimated difference in mean "
            f"{data.scale} needed for significance (Sakai 2006), in each metric's own units, and Δ/σ the same over "
            f"the s.d. of the metric's per-topic {data.scale}s. {_multiplicity(methods)} Bold: the most pairs told "
            f"apart, the smallest Δ/σ.{data.standardise_note()}")
    if best:
        text += (f"\n\nTop {top} systems: the {top} systems that rank best under every metric at once (the "
                 f"smallest depth d at which the top-d sets of all {len(data.scores)} metrics share at least {top} "
                 f"systems, ties broken by the best worst rank, then rank sum): {', '.join(best)}.")
    return DiscriminativePower(result, top_result, best, top, tuple(methods), n_resamples, alpha, spread, data.scale,
                               data.colors, text=text)


# ------------------------------------------------------------------------------------------------------------------
# The ASL-curve figure
# ------------------------------------------------------------------------------------------------------------------


def _curves(result: PairTests, method: str | None) -> tuple[pd.DataFrame, str | None]:
    data = result.curves()
    methods = list(dict.fromkeys(data["method"]))
    if method is not None:
        if method not in methods:
            raise InputError(f"method {method!r} is not in the result; it has {methods}")
        data = data[data["method"] == method]
        methods = [method]
    style = "method" if len(methods) > 1 else "metric"
    return data, style


def _draw(ax, data: pd.DataFrame, style: str, alpha: float, ymax: float, palette: dict, legend: bool) -> None:
    """One panel: the curves over the percentage of the panel's pairs, so that panels of different sizes share one
    x axis from 0 to 100 and a curve crosses α at the metric's % discriminated (the table's column)."""
    import seaborn as sns

    n_pairs = max(int(data["rank"].max()) if len(data) else 1, 1)
    data = data.assign(share=100.0 * data["rank"] / n_pairs)
    sns.lineplot(data=data, x="share", y="asl", hue="metric", style=style, palette=palette, ax=ax, legend=legend,
                 linewidth=1.3, drawstyle="steps-post", errorbar=None)
    ax.axhline(alpha, color="0.2", linestyle=(0, (4, 2)), linewidth=0.8, zorder=1)
    _mark_crossings(ax, data, alpha, palette, n_pairs)
    ax.set_xlim(0, 100)
    ax.set_ylim(0, ymax)
    _alpha_tick(ax, alpha, ymax)
    ax.set_xlabel("")


def _crossings(data: pd.DataFrame, alpha: float) -> pd.Series:
    """Per curve (metric, and method when several are drawn), the pairs told apart: the last rank with ASL < α."""
    keys = ["metric"] + (["method"] if data["method"].nunique() > 1 else [])
    below = data[data["asl"] < alpha]
    return below.groupby(keys, sort=False)["rank"].max()


def _mark_crossings(ax, data: pd.DataFrame, alpha: float, palette: dict, n_pairs: int) -> None:
    """A dot where each curve crosses α: its x is the percentage of pairs the metric tells apart, readable even
    where curves run on top of one another."""
    for key, rank in _crossings(data, alpha).items():
        metric = key[0] if isinstance(key, tuple) else key
        ax.plot([100.0 * rank / n_pairs], [alpha], marker="o", markersize=4, color=palette[metric],
                markeredgecolor="white", markeredgewidth=0.5, zorder=3, clip_on=False)


def _alpha_tick(ax, alpha: float, ymax: float) -> None:
    """α as a labelled tick on the ASL axis (a label inside the axes sat on a curve)."""
    from matplotlib.ticker import MaxNLocator

    ticks = [t for t in MaxNLocator(nbins=4).tick_values(0, ymax) if 0 <= t <= ymax and abs(t - alpha) > ymax / 12]
    ticks = sorted([*ticks, alpha])
    ax.set_yticks(ticks)
    ax.set_yticklabels([f"α = {t:g}" if t == alpha else f"{t:g}" for t in ticks])


@styled
def asl_curve_figure(result: PairTests, *, top: PairTests | None = None, method: str | None = None,
                     title: str | None = None, top_label: str | None = None,
                     colors: Mapping[str, object] | None = None, ymax: float | None = None,
                     figsize: tuple[float, float] | None = None):
    """ASL curves of every metric: x = system pair sorted by ASL, y = ASL, and a dashed line at α.

    The further right a curve crosses α (a dot marks each crossing), the more pairs the metric tells apart. The x
    axis is the percentage of the panel's pairs, from 0 to 100: a curve crosses α at the metric's % discriminated
    (the table's column), and with ``top`` the second panel (the same analysis over the best systems, far fewer
    pairs) shares the axis, so the two panels read alike and compare at a glance.

    Parameters
    ----------
    result : PairTests
        From :func:`meta_eval.statistics.significance.discriminative_power` over all systems.
    top : PairTests, optional
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
    axes = fig.subplots(1, len(panels), squeeze=False, sharex=True, sharey=True)[0]
    for i, (ax, (frame, res, label)) in enumerate(zip(axes, panels)):
        _draw(ax, frame, style, res.alpha, ymax, palette, legend=i == 0)
        ax.set_title(label, fontsize="medium")
        ax.set_ylabel("achieved significance level" if i == 0 else "")
    fig.supxlabel("system pairs sorted by ASL (% of the panel's pairs)", fontsize="medium")
    for i, ax in enumerate(axes):
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
