"""Intuitiveness (Sakai 2012): on the topic-level disagreements between two measures, how often a simple gold
criterion sides with each (the engine is :mod:`meta_eval.statistics.intuitiveness`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from meta_eval.analyses._base import AnalysisData
from meta_eval.analyses._result import FigureOutput, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.params import Param
from meta_eval.core.progress import CostModel
from meta_eval.rendering.findings import Finding, Quoter
from meta_eval.rendering.heatmap import correlation_heatmap
from meta_eval.rendering.paper_table import PaperTable


@dataclass
class IntuitivenessResult(Result):
    """``result`` (:class:`~meta_eval.statistics.intuitiveness.Intuitiveness`) against the gold criterion ``gold``."""

    result: Any
    gold: str
    targets: list[str]
    against: list[str]

    def tables(self):
        return [TableOutput("intuitiveness", f"Intuitiveness against {self.gold} (Sakai 2012): row metric's share of "
                            f"its disagreements with the column metric on which {self.gold} sides with it",
                            self.result.table, intuitiveness_table(self.result.matrix(), self.gold))]

    def figures(self) -> list[FigureOutput]:
        return [FigureOutput("intuitiveness", f"Intuitiveness matrix against {self.gold}",
                             lambda: intuitiveness_figure(self.result.matrix(), gold=self.gold))]

    def findings(self):
        return intuitiveness_findings(self.compact, name="intuitiveness", gold=self.gold, targets=self.targets,
                                      references=self.against, counts=self.result.table)


def _one_measure(spec: Any) -> str | None:
    from meta_eval.measures.resolver import load_metric

    return None if len(load_metric(spec)) == 1 else "names several metrics; give one (e.g. P@10)"


def _work(data: AnalysisData, params: Mapping[str, Any]) -> float:
    """System pairs × topics × metric pairs: the disagreements of every two metrics, checked against the gold."""
    S, M = len(data.systems), len(data.raw)
    return S * (S - 1) / 2 * len(data.topics) * M * (M - 1) / 2


#: One core's seconds (scripts/calibrate_study_cost.py: the analysis with its tables and figures, in a study with
#: jobs=1): {run: (units, seconds)}.
COST = CostModel.fit("system pairs × topics × metric pairs", _work,
                     {"demo, quick": (148800, 0.59), "demo": (148800, 0.41),
                      "TREC-COVID, quick": (4.569e+06, 0.51), "TREC-COVID": (4.569e+06, 0.43)})


@analysis("intuitiveness", min_measures=2, summary="Intuitiveness: agreement with a simple gold criterion.",
          title="Intuitiveness", order=50,
          params=(Param("gold", "P@10", str, "gold criterion: a measure whose preferences count as right (default: "
                        "the number of relevant documents in the top 10)", check=_one_measure,
                        domain="one measure (e.g. P@10)"),),
          cost=COST)
def run(data: AnalysisData, *, gold: str) -> IntuitivenessResult:
    """Sakai's concordance test of every measure pair against ``gold``, on the metric values themselves
    (standardisation, an increasing map per topic, would change no preference)."""
    from meta_eval.measures.scoring import score
    from meta_eval.statistics.intuitiveness import intuitiveness

    metrics = {k: v for k, v in data.raw.items() if k != gold}
    label = f"{gold} (relevant documents in the top {gold.split('@')[1]})" if gold.startswith("P@") else gold
    res = intuitiveness(metrics, score(data.collection, gold), gold_name=gold)
    text = (f"Concordance test (Sakai 2012): for every topic and system pair on which two metrics prefer different "
            f"systems, the share of those disagreements on which the gold criterion {label} strictly prefers the "
            "system each metric prefers (gold ties count for neither).")
    if data.standardise is not None:
        text += (" Standardisation is an increasing map per topic and leaves every within-topic preference, "
                 "hence this analysis, unchanged: it uses the metric values themselves.")
    return IntuitivenessResult(res, gold, data.targets, list(data.against), text=text)


# The figure

def intuitiveness_figure(matrix: pd.DataFrame, *, gold: str = "gold"):
    """Heatmap of the intuitiveness matrix: cell (x, y) = share of the x/y disagreements on which the gold
    criterion sides with x (:meth:`Intuitiveness.matrix`). Drawn by the project's heatmap."""

    matrix = matrix.copy()
    matrix.index.name = "row metric"
    fig = correlation_heatmap(matrix, vmin=0.0, vmax=1.0, cmap="viridis", title="",
                              colorbar_label=f"share of disagreements on which {gold} sides with the row metric")
    fig.axes[0].set_xlabel("column metric")
    return fig


# The compact table

def intuitiveness_table(matrix: pd.DataFrame, gold: str, *, decimals: int = 3) -> PaperTable:
    """Intuitiveness matrix (:meth:`~meta_eval.statistics.intuitiveness.Intuitiveness.matrix`): row x, column y = the share of the
    disagreements of x and y on which the gold criterion prefers x's choice; a dash on the diagonal."""
    values = matrix.copy()
    values.index.name = "metric"
    return PaperTable(values, decimals=decimals,
                      note=f"Row metric's share of its disagreements with the column metric (topic × system pairs "
                      f"ordered oppositely) on which {gold} sides with the row metric; the two shares of a pair add "
                      "up to less than 1 when the gold criterion ties. Counts are in the CSV.")


# The findings

def intuitiveness_findings(tables: Mapping[str, PaperTable], *, name: str, gold: str, targets: Sequence[str],
                           references: Sequence[str], counts: pd.DataFrame | None = None,
                           alpha: float = 0.05) -> list[Finding]:
    """Each metric under study against each reference: the share of their disagreements on which the gold
    criterion sides with each (Sakai 2012). With the ``counts`` (the engine's table), a metric is called more or
    less intuitive only where an exact two-sided sign test over the disagreements the gold criterion decides
    rejects equal shares at ``alpha`` (the pairs share topics and systems, so its p-value is optimistic: a
    difference it does not find is not there); else "not distinguishable", with the counts."""
    q = Quoter(tables)
    t = tables[name]
    rows = [str(r) for r in t.values.index]
    pairs = [(x, y) for x in targets for y in references if x != y and x in rows and y in rows]
    if not pairs:  # no reference among the metrics: every pair
        pairs = [(x, y) for i, x in enumerate(rows) for y in rows[i + 1:]]
    by_metric: dict[str, dict[str, list[str]]] = {}
    for x, y in pairs:
        a, b = q(name, x, y), q(name, y, x)
        if a == "–" or b == "–":  # the two metrics never disagree
            continue
        side = "more" if float(t.values.loc[x, y]) > float(t.values.loc[y, x]) else \
            "less" if float(t.values.loc[x, y]) < float(t.values.loc[y, x]) else "as"
        said = f"{y} ({a} vs {b}"
        decided = _decided(counts, x, y)
        if decided is not None:
            k_x, k_y, p = decided
            said += (f"; {q.param(f'{x} > {y}', k_x)} vs {q.param(f'{y} > {x}', k_y)} of the disagreements "
                     f"{gold} decides, sign test p = {q.param(f'p ({x}, {y})', f'{p:.2g}')}")
            if side != "as" and p >= alpha:
                side = "indistinct"
        by_metric.setdefault(x, {}).setdefault(side, []).append(said + ")")
    if not by_metric:
        return []
    parts = []
    for x, sides in by_metric.items():
        said = [f"{word} intuitive than {' and '.join(sides[key])}" for key, word in
                (("more", "more"), ("less", "less"), ("as", "as")) if key in sides]
        if "indistinct" in sides:
            said.append(f"not distinguishable from {' and '.join(sides['indistinct'])}")
        parts.append(f"{x} is " + "; ".join(said))
    sentence = (f"Intuitiveness against {q.param('gold', gold)} (Sakai's concordance test: in the system-topic pairs "
                f"two metrics order oppositely, the share where {gold} sides with each; higher is more intuitive). "
                + ". ".join(parts) + ".")
    return [q.finding(sentence)]


def _decided(counts: pd.DataFrame | None, x: str, y: str) -> tuple[int, int, float] | None:
    """(disagreements the gold criterion decides for x, for y, the exact two-sided sign test's p-value) of the
    pair x, y in the engine's table; None without it."""
    if counts is None:
        return None
    from scipy.stats import binomtest

    row = counts[((counts["metric_x"] == x) & (counts["metric_y"] == y))
                 | ((counts["metric_x"] == y) & (counts["metric_y"] == x))]
    if row.empty:
        return None
    r = row.iloc[0]
    k_x, k_y = (int(r["agree_x"]), int(r["agree_y"])) if r["metric_x"] == x else (int(r["agree_y"]),
                                                                                 int(r["agree_x"]))
    return k_x, k_y, float(binomtest(k_x, k_x + k_y, 0.5).pvalue) if k_x + k_y else 1.0
