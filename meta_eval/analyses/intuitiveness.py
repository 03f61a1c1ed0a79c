"""Intuitiveness (Sakai 2012): on the topic-level disagreements between two measures, how often a simple gold
criterion sides with each (the engine is :mod:`meta_eval.statistics.intuitiveness`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from meta_eval.analyses._base import AnalysisData, FigureOutput, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.params import Param


@dataclass
class IntuitivenessResult(Result):
    """``result`` (:class:`~meta_eval.statistics.intuitiveness.Intuitiveness`) against the gold criterion ``gold``."""

    result: Any
    gold: str
    targets: list[str]
    against: list[str]

    def tables(self):
        from meta_eval.rendering.paper_table import intuitiveness_table

        return [TableOutput("intuitiveness", f"Intuitiveness against {self.gold} (Sakai 2012): row metric's share of "
                            f"its disagreements with the column metric on which {self.gold} sides with it",
                            self.result.table, intuitiveness_table(self.result.matrix(), self.gold))]

    def figures(self) -> list[FigureOutput]:
        from meta_eval.rendering.figures.meta import intuitiveness_figure

        return [FigureOutput("intuitiveness", f"Intuitiveness matrix against {self.gold}",
                             lambda: intuitiveness_figure(self.result.matrix(), gold=self.gold))]

    def findings(self):
        from meta_eval.rendering.findings import intuitiveness_findings

        return intuitiveness_findings(self.compact, name="intuitiveness", gold=self.gold, targets=self.targets,
                                      references=self.against)


def _one_measure(spec: Any) -> str | None:
    from meta_eval.measures.resolver import load_metric

    return None if len(load_metric(spec)) == 1 else "names several metrics; give one (e.g. P@10)"


@analysis("intuitiveness", title="Intuitiveness", command="intuitiveness",
          summary="Intuitiveness: agreement with a simple gold criterion.",
          params=(Param("gold", "P@10", str, "gold criterion: a measure whose preferences count as right (default: "
                        "the number of relevant documents in the top 10)", check=_one_measure,
                        domain="one measure (e.g. P@10)"),),
          study={"gold": "gold"}, measures=("AP", "nDCG", "nDCG@10", "RR"))
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
