"""Scores: each system's mean under each metric, and the per-topic scores behind them.

The means are each measure's own aggregate over the topics (the mean; the geometric mean or the sum where the
measure declares it, as trec_eval's gm_map); the per-topic scores go to ``scores.csv`` in the tidy layout
``meta-eval evaluate -q`` writes (run, topic, measure, value), which ``--scores`` reads back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from meta_eval.analyses._base import AnalysisData
from meta_eval.analyses._result import Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.progress import CostModel
from meta_eval.rendering.paper_table import PaperTable, best_mask


@dataclass
class Scores(Result):
    """Means per system (rows sorted by the first measure under study) and the per-topic scores (tidy)."""

    means: pd.DataFrame
    per_topic: pd.DataFrame
    n_topics: int

    def tables(self) -> list[TableOutput]:
        return [TableOutput("system_means", f"Mean score of each system over {self.n_topics} topics (best in bold)",
                            self.means.reset_index().rename(columns={"system": "run"}), means_table(self.means)),
                TableOutput("scores", "Per-topic scores (run, topic, measure, value)", self.per_topic)]


def _work(data: AnalysisData, params: Mapping[str, Any]) -> float:
    """Per-topic scores written: systems × topics × metrics."""
    return len(data.systems) * len(data.topics) * len(data.raw)


#: One core's seconds (scripts/calibrate_study_cost.py: the analysis with its tables, in a study with jobs=1):
#: {run: (units, seconds)}.
COST = CostModel.fit("per-topic scores", _work, {"demo, quick": (3840, 0.05), "demo": (3840, 0.05),
                                                 "TREC-COVID, quick": (25740, 0.11), "TREC-COVID": (25740, 0.12)})


@analysis("scores", summary="Mean score of each system under each measure.",
          title="Scores", needs="scores", order=0, cost=COST)
def run(data: AnalysisData) -> Scores:
    """Mean of each measure over the topics per system (the measure's own aggregate: mean, geometric mean or sum),
    and every per-topic value."""
    measure = {m.output_name: m for m in data.measures}
    means = pd.DataFrame({name: _summary(x, measure.get(name), name) for name, x in data.raw.items()},
                         index=pd.Index(data.systems, name="system"))
    first = data.targets[0]
    means = means.sort_values(first, ascending=False, kind="stable")
    text = (f"Mean over {len(data.topics)} topics of each metric, systems sorted by {first}; the best value of "
            "each metric in bold. Per-topic scores are in scores.csv (run, topic, measure, value).")
    if data.standardise is not None:
        text += (" The means are of the raw scores; standardisation.csv holds each topic's reference mean and s.d. "
                 "per metric, to standardise new runs against the same reference.")
    return Scores(means, _tidy(data), len(data.topics), text=text)


def _summary(x: np.ndarray, measure, name: str) -> np.ndarray:
    """Each system's summary over the topics as the measure declares it (a geometric mean for gm_map), also for a
    score table's measures, found by name (names read from data never load code); a name meta-eval does not know,
    or a summary that needs the collection, is the arithmetic mean. Added in topic order, as from the runs."""
    from meta_eval.measures.resolver import known_measure
    from meta_eval.measures.scoring import aggregate, arithmetic_mean

    if measure is None:
        measure = known_measure(name)
        if measure is not None and callable(measure.family.aggregate):
            measure = None
    return aggregate(x, measure) if measure is not None else arithmetic_mean(x)


def _tidy(data: AnalysisData) -> pd.DataFrame:
    """run, topic, measure, value for every defined per-topic score."""
    systems, topics = np.asarray(data.systems, dtype=object), np.asarray(data.topics, dtype=object)
    tidy = []
    for name, values in data.raw.items():
        s_idx, t_idx = np.nonzero(~np.isnan(values))
        tidy.append(pd.DataFrame({"run": systems[s_idx], "topic": topics[t_idx], "measure": name,
                                  "value": values[s_idx, t_idx]}))
    return pd.concat(tidy, ignore_index=True)


# The compact table

def means_table(means: pd.DataFrame, *, limit: int = 25, decimals: int = 4) -> PaperTable:
    """Mean score per system (rows, as ordered) and metric (columns), best in bold; more than ``limit`` systems
    are cut to the first ``limit`` with a note."""
    shown = means.iloc[:limit] if len(means) > limit else means
    note = (f"The first {limit} of {len(means)} systems by {means.columns[0]}; all are in the CSV."
            if len(means) > limit else "")
    shown = shown.copy()
    shown.index.name = shown.index.name or "system"
    return PaperTable(shown, decimals=decimals, bold=best_mask(shown, {c: "max" for c in shown.columns}, decimals),
                      note=note)
