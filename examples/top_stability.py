"""Your own analysis in one file: how stable each measure's top-k systems are when the topics are resampled.

Run it in a study, its table, figure and findings in the report::

    meta-eval study --analysis examples/top_stability.py:top_stability
    meta-eval study --analysis "examples/top_stability.py:top_stability(k=3,n_resamples=500)"

or on its own (with ``--out``, a result folder)::

    meta-eval analysis examples/top_stability.py:top_stability -m AP -m nDCG@10 -m P@10

Copied into the analyses package (``meta_eval/analyses/top_stability.py``) it is a built-in analysis: its command
``meta-eval top-stability`` and its study options (``--top-stability-k``) follow from the declaration.

For each measure, the topics are resampled with replacement (B bootstrap samples of T topics, one seed); in each
sample the systems are ranked by their mean, and the share of the full topic set's top-k systems that are still in
the sample's top k is recorded. A measure whose top k barely moves needs fewer topics to name the best systems.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from meta_eval.analyses import ANALYSIS_PARAMS, FigureOutput, Param, Result, TableOutput, analysis
from meta_eval.rendering.findings import Quoter, ranked
from meta_eval.rendering.paper_table import PaperTable, best_mask


@dataclass
class TopStability(Result):
    """Per measure: the mean share of the top k kept over the samples, with its 2.5 and 97.5 percentiles."""

    summary: pd.DataFrame
    k: int
    n_resamples: int

    def tables(self):
        values = self.summary.set_index("measure")[["mean_overlap"]].rename(columns={"mean_overlap": "top-k kept"})
        low = self.summary.set_index("measure")[["low"]].set_axis(values.columns, axis=1)
        high = self.summary.set_index("measure")[["high"]].set_axis(values.columns, axis=1)
        table = PaperTable(values, bold=best_mask(values, {"top-k kept": "max"}), low=low, high=high)
        return [TableOutput("top_stability", f"Share of the top {self.k} systems still in the top {self.k} when the "
                            f"topics are resampled ({self.n_resamples} bootstrap samples)", self.summary, table)]

    def figures(self):
        def draw():
            import matplotlib.pyplot as plt

            fig, ax = plt.subplots(figsize=(3.35, 2.2))
            s = self.summary
            ax.bar(s["measure"], s["mean_overlap"], yerr=[s["mean_overlap"] - s["low"], s["high"] - s["mean_overlap"]])
            ax.set_ylabel(f"top-{self.k} kept")
            ax.set_ylim(0, 1)
            fig.tight_layout()
            return fig

        return [FigureOutput("top_stability", f"Share of the top {self.k} kept under topic resampling", draw)]

    def findings(self):
        q = Quoter(self.compact)
        order = ranked(self.compact["top_stability"], "top-k kept")
        if len(order) < 2:
            return []
        best, worst = order[0], order[-1]
        cell = lambda m: f"{q('top_stability', m, 'top-k kept')} {q.interval('top_stability', m, 'top-k kept')}"  # noqa: E731
        return [q.finding(f"Under topic resampling the top {q.param('k', self.k)} systems are most stable under "
                          f"{best} ({cell(best)} kept) and least under {worst} ({cell(worst)}).")]


@analysis("top-stability", title="Stability of the top systems", needs="scores",
          summary="How stable each measure's top-k systems are under topic resampling.",
          params=(Param("k", 5, int, "size of the top", within="[1, inf)"), ANALYSIS_PARAMS["n_resamples"],
                  ANALYSIS_PARAMS["seed"]))
def top_stability(data, *, k: int, n_resamples: int, seed: int) -> TopStability:
    """Share of each measure's top-k systems kept when the topics are resampled with replacement."""
    from meta_eval.core.params import rng

    gen = rng(seed, "top-stability")
    n_topics = len(data.topics)
    samples = gen.integers(0, n_topics, size=(n_resamples, n_topics))  # the same samples for every measure
    rows = []
    for name, x in data.scores.items():
        full = np.argsort(-x.mean(axis=1), kind="stable")[:k]
        means = x[:, samples].mean(axis=2).T  # (B, S)
        tops = np.argsort(-means, axis=1, kind="stable")[:, :k]
        kept = np.isin(tops, full).sum(axis=1) / k
        rows.append({"measure": name, "mean_overlap": kept.mean(), "low": np.quantile(kept, 0.025),
                     "high": np.quantile(kept, 0.975)})
    text = (f"{n_resamples} bootstrap samples of the {n_topics} topics (seed {seed}); in each, the systems ranked by "
            f"their mean and the share of the full topic set's top {k} still in the top {k} recorded; mean and "
            "2.5-97.5 percentiles over the samples.")
    return TopStability(pd.DataFrame(rows), k, n_resamples, text=text)
