"""Scores: each system's mean under each measure, the per-topic scores behind them and, for a standardised study,
the per-topic reference of the standardisation (to standardise new runs the same way)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from meta_eval.analyses._base import AnalysisData, Result, TableOutput
from meta_eval.analyses._registry import analysis


@dataclass
class Scores(Result):
    """Means per system (rows sorted by the first measure under study), per-topic scores (tidy), and the
    standardisation reference when the scores were standardised."""

    means: pd.DataFrame
    per_topic: pd.DataFrame
    standardisation: pd.DataFrame | None
    n_topics: int

    def tables(self) -> list[TableOutput]:
        from meta_eval.rendering.paper_table import means_table

        out = [TableOutput("system_means", f"Mean score of each system over {self.n_topics} topics (best in bold)",
                           self.means.reset_index().rename(columns={"system": "run"}), means_table(self.means)),
               TableOutput("scores", "Per-topic scores (run, topic, measure, value)", self.per_topic)]
        if self.standardisation is not None:
            out.append(TableOutput("standardisation", "Reference mean and s.d. of each topic, per measure",
                                   self.standardisation))
        return out


@analysis("scores", title="Scores", summary="Mean score of each system under each measure.")
def run(data: AnalysisData) -> Scores:
    """Mean of each measure over the topics per system (the measure's own aggregate: mean, geometric mean or sum),
    and every per-topic value."""
    from meta_eval.measures.scoring import aggregate
    from meta_eval.statistics.standardise import describe

    col = data.collection
    means = pd.DataFrame({m.output_name: aggregate(data.raw[m.output_name], m) for m in data.measures},
                         index=pd.Index(col.systems, name="system"))
    first = data.targets[0]
    means = means.sort_values(first, ascending=False, kind="stable")
    text = (f"Mean over {len(col.topics)} topics of each metric, systems sorted by {first}; the best value of "
            "each metric in bold. Per-topic scores are in scores.csv (run, topic, measure, value).")
    reference = None
    if data.standardise is not None:
        text += (f"\n\n{describe(data.standardise)} The means above are of the raw scores; standardisation.csv holds "
                 "each topic's reference mean and s.d. per metric, to standardise new runs against the same "
                 "reference.")
        reference = _standardisation_frame(data)
    return Scores(means, _tidy(data), reference, len(col.topics), text=text)


def _tidy(data: AnalysisData) -> pd.DataFrame:
    """run, topic, measure, value for every defined per-topic score."""
    col = data.collection
    tidy = []
    topics = np.asarray(col.topics, dtype=object)
    for name, values in data.raw.items():
        s_idx, t_idx = np.nonzero(~np.isnan(values))
        tidy.append(pd.DataFrame({"run": np.asarray(col.systems, dtype=object)[s_idx], "topic": topics[t_idx],
                                  "measure": name, "value": values[s_idx, t_idx]}))
    return pd.concat(tidy, ignore_index=True)


def _standardisation_frame(data: AnalysisData) -> pd.DataFrame:
    """Per measure and topic: the reference mean and s.d. of the standardisation (to standardise new runs)."""
    from meta_eval.statistics.standardise import fit_standardisation

    frames = [fit_standardisation(x, data.standardise, topics=data.topics).to_frame().assign(measure=name)
              for name, x in data.raw.items()]
    return pd.concat(frames, ignore_index=True)[["measure", "topic", "mean", "sd"]]
