"""ANOVA, effect sizes and topic-set size: two-way ANOVA of system and topic effects per measure (ω², Ferro &
Silvello 2018), effect sizes of every system pair, and Sakai's (2016) topic-set-size design from each measure's
residual variance (the engines are :mod:`meta_eval.statistics.anova` and :mod:`meta_eval.statistics.topic_set_size`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from meta_eval.analyses._base import AnalysisData
from meta_eval.analyses._result import FigureOutput, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.params import ANALYSIS_PARAMS, Param
from meta_eval.core.progress import CostModel
from meta_eval.rendering.figure_style import (COLUMN_WIDTH, FULL_WIDTH, LINE_STYLES, MARKERS, colors_for,
                                              need_columns, styled)
from meta_eval.rendering.findings import Finding, Quoter, extremes
from meta_eval.rendering.paper_table import PaperTable, best_mask


@dataclass
class AnovaDesign(Result):
    """``anova`` (:class:`~meta_eval.statistics.anova.Anova`) and ``design`` (:class:`~meta_eval.statistics.topic_set_size.TopicSetSize`)."""

    anova: Any
    design: Any
    relative: pd.DataFrame
    n_topics: int
    alpha: float
    scale: str = "score"
    colors: dict | None = None

    def sizes(self) -> pd.DataFrame:
        """Every design's topics (the CSV): the fixed minD grid, then minD a tenth of each metric's spread
        (``min_d_rule``: ``fixed`` or ``relative``; ``spread``: the range of the metric's system means)."""
        fixed = self.design.table.assign(min_d_rule="fixed")
        rel = self.relative.reset_index().assign(design="ttest", n_systems=2, min_d_rule="relative")
        first = fixed.iloc[0]
        rel = rel.assign(alpha=first["alpha"], beta=first["beta"])
        return pd.concat([fixed, rel], ignore_index=True)

    @property
    def power(self) -> float:
        return round(1 - float(self.design.table["beta"].iloc[0]), 6)

    def tables(self):
        return [
            TableOutput("anova", f"Two-way ANOVA of the {self.scale}s (system + topic, {self.n_topics} topics): F and "
                        "partial ω² of each effect and the residual variance", self.anova.table,
                        anova_table(self.anova.table)),
            TableOutput("topic_set_size", f"Topic-set size (Sakai 2016): topics needed for power {self.power:g} at "
                        f"the minimum detectable difference minD: a tenth of the spread of each metric's system "
                        f"means (comparable across metrics), and fixed minD in the metric's own units (paired "
                        f"t-test and one-way ANOVA of m systems)", self.sizes(),
                        topic_set_size_table(self.design.table, self.n_topics, self.relative)),
            TableOutput("effect_sizes", "Effect sizes of every system pair", self.anova.pairs())]

    def figures(self) -> list[FigureOutput]:
        # the ω² bar chart repeats the table's two columns: drawn by the command, not in the study report
        return [FigureOutput("anova_omega", "Partial ω² of the system and topic effects",
                             lambda: omega_figure(self.anova.table, colors=self.colors), in_report=False),
                FigureOutput("topic_set_size", "Topics needed against the minimum detectable difference minD, in "
                             "each metric's own units (a metric on a smaller scale needs fewer topics at the same "
                             "minD: the table's first column compares metrics)",
                             lambda: topic_set_size_figure(self.design.table, colors=self.colors))]

    def findings(self):
        return [*anova_findings(self.compact, name="anova"),
                *topic_set_size_findings(self.compact, name="topic_set_size", n_topics=self.n_topics,
                                         power=self.power, alpha=self.alpha)]


def _work(data: AnalysisData, params: Mapping[str, Any]) -> float:
    """Scores analysed: systems × topics × metrics."""
    return len(data.systems) * len(data.topics) * len(data.raw)


#: One core's seconds (scripts/calibrate_study_cost.py: the analysis with its tables and figures, in a study with
#: jobs=1): {run: (units, seconds)}.
COST = CostModel.fit("per-topic scores", _work, {"demo, quick": (3840, 0.92), "demo": (3840, 0.86),
                                                 "TREC-COVID, quick": (25740, 1.27), "TREC-COVID": (25740, 1.21)})


@analysis("anova", summary="Two-way ANOVA of system and topic effects per metric, topic-set size.",
          title="ANOVA, effect sizes and topic-set size", needs="scores", order=30,
          params=(Param("min_d", None, float, "minimum detectable difference of the topic-set-size design "
                        "default: 0.02 .. 0.20 (raw scores), 0.1 .. 1.0 (standardised)",
                        within="[0, inf)", many=True, flags=("--min-d",)),
                  ANALYSIS_PARAMS["alpha"],
                  Param("power", 0.8, float, "power 1 - β of the design", within="[0.5, 0.999]"),
                  Param("n_systems", (2, 10), int, "m of the one-way ANOVA design", within="[2, inf)",
                        many=True, flags=("--anova-systems",)),
                  Param("variance", "two-way", str, "σ² of the design: residual variance of the two-way (system + "
                        "topic) or one-way (system) ANOVA", choices=("two-way", "one-way"))),
          standardised=True, cost=COST)
def run(data: AnalysisData, *, min_d: tuple[float, ...] | None, alpha: float, power: float,
        n_systems: tuple[int, ...], variance: str) -> AnovaDesign:
    """score = system + topic + error per measure; ω² of each effect; the topics each measure needs for a given
    power at a minimum detectable difference, with σ² the ANOVA's residual variance."""
    from meta_eval.statistics.anova import two_way_anova
    from meta_eval.statistics.standardise import note
    from meta_eval.statistics.topic_set_size import DEFAULT_MIN_D, topic_set_size

    beta = round(1.0 - power, 12)  # 1 - 0.8 is 0.19999999999999996 in floating point; the design's β is 0.2
    res = two_way_anova(data.scores, data.systems)
    var = res.residual_variance if variance == "two-way" else res.one_way_variance
    if min_d is None:  # raw scores: the default grid; standardised scores: the same grid in residual s.d. units
        min_d = DEFAULT_MIN_D if data.standardise is None else tuple(np.round(np.arange(0.1, 1.01, 0.05), 2))
    tss = topic_set_size(var, min_d=min_d, alpha=alpha, beta=beta, n_systems=n_systems)
    relative = _relative_sizes(data.scores, var, alpha=alpha, beta=beta)
    text = ("Two-way ANOVA without replication, score = system + topic + error, per metric (Ferro & Silvello 2018); "
            "ω² is the partial omega squared (Olejnik & Algina 2003). Effect size of a system pair: mean difference "
            "over the residual s.d. √V_E (Sakai 2018). Topic-set size (Sakai IRJ 2016): the fewest topics for which "
            f"a paired t-test, or a one-way ANOVA of m systems, has power {1 - beta:g} at α = {alpha:g} for a true "
            f"difference minD, with σ² = the {variance} ANOVA residual variance." + note(data.standardise))
    if data.standardise is not None:
        text += (" Standardisation centres every topic on the systems' mean, so it removes most of the topic "
                 "effect by construction; σ² and minD are then in units of the per-topic s.d.")
    text += (f" Fixed minD favours a metric on a smaller scale; the comparable column sets minD to {RELATIVE:g} of "
             "the spread (largest minus smallest) of each metric's system means.")
    return AnovaDesign(res, tss, relative, len(data.topics), alpha, data.scale, data.colors, text=text)


#: The scale-free minimum detectable difference: this share of the spread of a metric's system means.
RELATIVE = 0.1


def _relative_sizes(scores: Mapping[str, np.ndarray], variances: Mapping[str, float], *, alpha: float,
                    beta: float) -> pd.DataFrame:
    """Topics a paired t-test needs per metric to detect minD = :data:`RELATIVE` × (max - min of the system means):
    the same design in every metric's own scale, so multiplying a metric by a constant changes nothing here (σ
    and minD scale together)."""
    from meta_eval.statistics.topic_set_size import topic_set_size

    rows = []
    for name, x in scores.items():
        means = np.asarray(x, dtype=float).mean(axis=1)
        spread = float(means.max() - means.min())
        if spread > 0:
            t = topic_set_size({name: variances[name]}, min_d=(RELATIVE * spread,), alpha=alpha, beta=beta,
                               designs=("ttest",), n_systems=2).table
            n = t["n_topics"].iloc[0]
        else:
            n = pd.NA
        rows.append({"metric": name, "spread": spread, "min_d": RELATIVE * spread, "n_topics": n})
    return pd.DataFrame(rows).set_index("metric")


# The figures

@styled
def omega_figure(table: pd.DataFrame, *, colors: Mapping[str, object] | None = None, height: float = 2.3):
    """Partial ω² of the system and topic effects per metric (two-way ANOVA): bars per metric, one panel per
    effect. ``table`` is :attr:`Anova.table`."""
    from matplotlib.figure import Figure

    need_columns(table, {"metric", "effect", "omega_sq"}, "omega_figure")
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
    shows — the paired t-test and the one-way ANOVA of the most systems (:func:`topic_set_size_columns`; the ANOVA
    of two systems is the t-test again, nearly to the topic) — one colour and marker per metric. A metric whose
    topic-set size is undefined (zero variance) has no line. ``table`` is :attr:`TopicSetSize.table`; α and the
    power are in the caption the report writes.

    Metrics of similar residual variance need the same topics to the unit, so their curves coincide: each metric
    has its own line style, and its markers sit on every k-th minD of the grid (k metrics, the i-th metric from the
    i-th point), so that on a shared curve every metric still shows its own markers."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    need_columns(table, {"metric", "design", "n_systems", "min_d", "n_topics"}, "topic_set_size_figure")
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
                    marker=MARKERS[i % len(MARKERS)], markersize=3.5, linewidth=1.1,
                    linestyle=LINE_STYLES[i % len(LINE_STYLES)], markevery=(i % len(metrics), len(metrics)),
                    markeredgecolor="white", markeredgewidth=0.4)
        ax.set_yscale("log")
        ax.set_title("paired t-test" if design == "ttest" else f"one-way ANOVA, m = {m} systems", fontsize="medium")
        ax.grid(True, which="major", axis="both")
    axes[0].set_ylabel("topics needed")
    fig.supxlabel("minimum detectable difference (minD)", fontsize="medium")
    handles = [Line2D([], [], color=palette[m], marker=MARKERS[i % len(MARKERS)], markersize=3.5, label=m,
                      linestyle=LINE_STYLES[i % len(LINE_STYLES)]) for i, m in enumerate(metrics)]
    fig.legend(handles=handles, loc="outside right upper", frameon=False, fontsize="small", handlelength=3)
    return fig


# The compact tables

def anova_table(table: pd.DataFrame) -> PaperTable:
    """Two-way ANOVA per metric (:attr:`~meta_eval.statistics.anova.Anova.table`): F and partial ω² of the system and topic
    effects, and the residual variance V_E. Bold: the largest system ω² (the system effect explains most)."""
    wide = {}
    for metric, f in table.groupby("metric", sort=False):
        f = f.set_index("effect")
        wide[metric] = {"F, system": f.loc["system", "F"], "ω², system": f.loc["system", "omega_sq"],
                        "F, topic": f.loc["topic", "F"], "ω², topic": f.loc["topic", "omega_sq"],
                        "V_E": f.loc["residual", "sum_sq"] / f.loc["residual", "df"]}
    values = pd.DataFrame(wide).T.astype(float)
    values.index.name = "metric"
    digits = {"F, system": 1, "F, topic": 1, "ω², system": 3, "ω², topic": 3, "V_E": 4}
    return PaperTable(values, decimals=digits, bold=best_mask(values, {"ω², system": "max"}, digits),
                      note="ω²: partial omega squared (Olejnik & Algina 2003); V_E: residual variance of the two-way "
                      "model (σ² of the topic-set-size design). p-values and sums of squares are in the CSV.")


def topic_set_size_columns(table: pd.DataFrame) -> list[tuple[str, int, float]]:
    """The (design, m, minD) cells :func:`topic_set_size_table` shows: the t-test at two minimum detectable
    differences of the grid (0.05 and 0.10 on raw scores, 0.25 and 0.5 on standardised ones, else the grid's
    quartiles) and the ANOVA design of the most systems at the larger one."""
    grid = sorted(set(np.round(table["min_d"], 6)))
    wanted = [d for d in ((0.05, 0.1) if grid[-1] < 0.5 else (0.25, 0.5)) if any(np.isclose(grid, d))]
    if len(wanted) < 2:
        wanted = sorted({grid[len(grid) // 4], grid[len(grid) // 2]})
    out = [("ttest", 2, d) for d in wanted if (table["design"] == "ttest").any()]
    anova = table[table["design"] == "anova"]
    if len(anova):
        out.append(("anova", int(anova["n_systems"].max()), wanted[-1]))
    return out


def topic_set_size_table(table: pd.DataFrame, n_topics: int | None = None,
                         relative: pd.DataFrame | None = None) -> PaperTable:
    """Topics needed per metric (:attr:`~meta_eval.statistics.topic_set_size.TopicSetSize.table`) for the designs and
    minimum detectable differences of :func:`topic_set_size_columns`, after the scale-free column (``relative``:
    minD a tenth of the spread of each metric's system means). Bold: the fewest topics, in the scale-free column
    only (a fixed minD favours the metric on the smallest scale)."""
    cols = {}
    if relative is not None:
        cols[f"t-test, minD = {RELATIVE:g} × spread"] = relative["n_topics"].astype("Int64")
    for design, m, d in topic_set_size_columns(table):
        rows = table[(table["design"] == design) & (table["n_systems"] == m) & np.isclose(table["min_d"], d)]
        name = f"t-test, minD = {d:g}" if design == "ttest" else f"ANOVA (m = {m}), minD = {d:g}"
        cols[name] = rows.set_index("metric")["n_topics"].astype("Int64")  # missing where σ² = 0 (undefined)
    values = pd.DataFrame(cols).reindex(list(dict.fromkeys(table["metric"])))
    values.index.name = "metric"
    first = table.iloc[0]
    note = (f"Power {1 - first['beta']:g} at α = {first['alpha']:g} (Sakai 2016); σ² from the ANOVA residual "
            "variance" + (f"; this collection has {n_topics} topics" if n_topics else "") + ". The fixed minD are "
            "in each metric's own units: a metric on a smaller scale needs fewer topics there, so only the first "
            "column compares metrics.")
    best = {values.columns[0]: "min"} if relative is not None else {c: "min" for c in values.columns}
    return PaperTable(values, bold=best_mask(values, best, 0), note=note)


# The findings

def anova_findings(tables: Mapping[str, PaperTable], *, name: str) -> list[Finding]:
    """Which metric's scores the system effect explains most and least (partial ω² of the two-way ANOVA)."""
    q = Quoter(tables)
    found = extremes(q, name, "ω², system", what="ω² = ")
    if found is None:
        return []
    best, best_cell, worst, worst_cell = found
    topic = extremes(q, name, "ω², topic", what="ω² = ")
    if best == worst:
        sentence = f"Two-way ANOVA (system + topic) of {best}: system effect {best_cell}"
        return [q.finding(sentence + (f", topic effect {topic[1]}." if topic is not None else "."))]
    sentence = (f"Two-way ANOVA (system + topic): the system effect is largest under {best} ({best_cell}) and "
                f"smallest under {worst} ({worst_cell})")
    if topic is not None and topic[1] == topic[3]:
        sentence += f"; the topic effect is {topic[1]} under every metric"
    elif topic is not None:
        sentence += f"; the topic effect ranges from {topic[3]} ({topic[2]}) to {topic[1]} ({topic[0]})"
    return [q.finding(sentence + ".")]


def topic_set_size_findings(tables: Mapping[str, PaperTable], *, name: str, n_topics: int, power: float,
                            alpha: float) -> list[Finding]:
    """How many topics each metric needs (paired t-test design, minD a tenth of the spread of each metric's system
    means: the scale-free column, so a metric on a smaller scale does not "need fewer topics" for its scale)."""
    q = Quoter(tables)
    t = tables[name]
    column = next((c for c in t.values.columns if "spread" in c), None)
    if column is None:
        return []
    found = extremes(q, name, column, ascending=True)
    if found is None:
        return []
    best, best_cell, worst, worst_cell = found
    needs = (f"{best} needs {best_cell} topics" if best == worst else
             f"{best} needs the fewest topics, {best_cell}, and {worst} the most, {worst_cell}")
    sentence = (f"Topic-set size (Sakai's design; paired t-test, power {q.param('power', power)}, α = "
                f"{q.param('alpha', alpha)}, minD = {q.param('share', RELATIVE)} of the spread of each metric's "
                f"system means): {needs}; this collection has {q.param('topics', n_topics)}.")
    return [q.finding(sentence)]
