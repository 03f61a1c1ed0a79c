"""ANOVA, effect sizes and topic-set size: two-way ANOVA of system and topic effects per measure (ω², Ferro &
Silvello 2018), effect sizes of every system pair, and Sakai's (2016) topic-set-size design from each measure's
residual variance (the engines are :mod:`meta_eval.statistics.anova` and :mod:`meta_eval.statistics.topic_set_size`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from meta_eval.analyses._base import AnalysisData, FigureOutput, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.params import ANALYSIS_PARAMS, Param


@dataclass
class AnovaDesign(Result):
    """``anova`` (:class:`~meta_eval.statistics.anova.Anova`) and ``design`` (:class:`~meta_eval.statistics.topic_set_size.TopicSetSize`)."""

    anova: Any
    design: Any
    n_topics: int
    alpha: float
    scale: str = "score"
    colors: dict | None = None

    @property
    def power(self) -> float:
        return round(1 - float(self.design.table["beta"].iloc[0]), 6)

    def tables(self):
        from meta_eval.rendering.paper_table import anova_table, topic_set_size_table

        return [
            TableOutput("anova", f"Two-way ANOVA of the {self.scale}s (system + topic, {self.n_topics} topics): F and "
                        "partial ω² of each effect and the residual variance", self.anova.table,
                        anova_table(self.anova.table)),
            TableOutput("topic_set_size", f"Topic-set size (Sakai 2016): topics needed for power {self.power:g} at "
                        "the minimum detectable difference minD, paired t-test and one-way ANOVA of m systems",
                        self.design.table, topic_set_size_table(self.design.table, self.n_topics)),
            TableOutput("effect_sizes", "Effect sizes of every system pair", self.anova.pairs())]

    def figures(self) -> list[FigureOutput]:
        from meta_eval.rendering.figures.meta import omega_figure, topic_set_size_figure

        # the ω² bar chart repeats the table's two columns: drawn by the command, not in the study report
        return [FigureOutput("anova_omega", "Partial ω² of the system and topic effects",
                             lambda: omega_figure(self.anova.table, colors=self.colors), in_report=False),
                FigureOutput("topic_set_size", "Topics needed against the minimum detectable difference",
                             lambda: topic_set_size_figure(self.design.table, colors=self.colors))]

    def findings(self):
        from meta_eval.rendering.findings import anova_findings, topic_set_size_findings

        return [*anova_findings(self.compact, name="anova"),
                *topic_set_size_findings(self.compact, name="topic_set_size", n_topics=self.n_topics,
                                         power=self.power, alpha=self.alpha)]


@analysis("anova", title="ANOVA, effect sizes and topic-set size", command="anova",
          summary="Two-way ANOVA of system and topic effects per metric.",
          params=(Param("min_d", None, float, "minimum detectable difference of the topic-set-size design "
                        "default: 0.02 .. 0.20 (raw scores), 0.1 .. 1.0 (standardised)",
                        within="[0, inf)", many=True, flags=("--min-d",)),
                  ANALYSIS_PARAMS["alpha"],
                  Param("power", 0.8, float, "power 1 - β of the design", within="[0.5, 0.999]"),
                  Param("n_systems", (2, 10), int, "m of the one-way ANOVA design", within="[2, inf)",
                        many=True, flags=("--anova-systems",)),
                  Param("variance", "two-way", str, "σ² of the design: residual variance of the two-way (system + "
                        "topic) or one-way (system) ANOVA", choices=("two-way", "one-way"))),
          study={"alpha": "alpha"}, standardised=True)
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
    text = ("Two-way ANOVA without replication, score = system + topic + error, per metric (Ferro & Silvello 2018); "
            "ω² is the partial omega squared (Olejnik & Algina 2003). Effect size of a system pair: mean difference "
            "over the residual s.d. √V_E (Sakai 2018). Topic-set size (Sakai IRJ 2016): the fewest topics for which "
            f"a paired t-test, or a one-way ANOVA of m systems, has power {1 - beta:g} at α = {alpha:g} for a true "
            f"difference minD, with σ² = the {variance} ANOVA residual variance." + note(data.standardise))
    if data.standardise is not None:
        text += (" Standardisation centres every topic on the systems' mean, so it removes most of the topic "
                 "effect by construction; σ² and minD are then in units of the per-topic s.d.")
    return AnovaDesign(res, tss, len(data.topics), alpha, data.scale, data.colors, text=text)
