"""Runs against a baseline (or every pair of runs) under each metric, with significance tests.

For each (run, baseline, metric): the means, the mean per-topic difference with its t interval, the effect size
(Cohen's d_z), a p-value from a paired test (t, Wilcoxon, Sakai's bootstrap or randomisation) adjusted for the
comparisons of that metric, and the topics won, tied and lost; shown as a ranx/PyTerrier-style table of means with
significance markers (the engine is :mod:`meta_eval.statistics.comparison`). In a study it runs when a baseline is
named (or every pair asked for).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from meta_eval.analyses._base import AnalysisData
from meta_eval.analyses._result import Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.params import ANALYSIS_PARAMS, Param, parse_bool
from meta_eval.rendering.findings import Finding, Quoter
from meta_eval.rendering.paper_table import PaperTable, best_mask
from meta_eval.statistics.comparison import BETTER, CORRECTION_NAMES, CORRECTIONS, TESTS, WORSE

TEST_NAMES = {"t": "paired t-test", "wilcoxon": "Wilcoxon signed-rank test",
              "bootstrap": "paired bootstrap test (Sakai 2006)", "randomisation": "paired randomisation test"}


@dataclass
class RunComparison(Result):
    """``comparison`` (:class:`~meta_eval.statistics.comparison.Comparison`) and the scale of the scores."""

    comparison: Any
    scale: str = "score"

    def tables(self) -> list[TableOutput]:
        c = self.comparison
        against = f"against the baseline {c.baseline}" if c.baseline is not None else "every pair of runs"
        return [TableOutput("compare", f"Mean {self.scale} of every run over {c.n_topics} topics, {against} "
                            f"({TEST_NAMES[c.test]}, α = {c.alpha:g})", c.table, means_table(c)),
                TableOutput("compare_detail", f"Differences with {c.confidence:.0%} t intervals, effect sizes "
                            "(Cohen's d_z), p-values and topics won/tied/lost", c.table, detail_table(c))]

    def findings(self) -> list[Finding]:
        """How many runs are significantly better and worse than the baseline, per metric."""
        c = self.comparison
        if c.baseline is None:
            return []
        q = Quoter(self.compact)
        sig = c.table[c.table["p_adjusted"] < c.alpha]
        parts = []
        for measure in dict.fromkeys(c.table["measure"]):
            part = sig[sig["measure"] == measure]
            better, worse = int((part["diff"] > 0).sum()), int((part["diff"] < 0).sum())
            parts.append(f"under {measure}, {q.param(f'better ({measure})', better)} significantly better and "
                         f"{q.param(f'worse ({measure})', worse)} significantly worse")
        runs = q.param("runs", len(c.means) - 1)
        return [q.finding(f"Against the baseline {q.param('baseline', c.baseline)} ({runs} runs, {TEST_NAMES[c.test]}, α = "
                          f"{q.param('alpha', c.alpha)}): " + "; ".join(parts) + ".")]


def means_table(c, decimals: int = 4) -> PaperTable:
    """Mean of every run under every metric, best per column in bold, with significance markers.

    Against a baseline: ▲ (▼) when the run is significantly better (worse) than the baseline. All pairs: ranx's
    convention — each run has a letter and its mean carries the letters of the runs it is significantly better
    than.
    """
    means = c.means.copy()
    means.index.name = "run"
    markers = pd.DataFrame("", index=means.index, columns=means.columns)
    sig = c.table[c.table["p_adjusted"] < c.alpha]
    corr = "" if c.correction == "none" else f", {CORRECTION_NAMES[c.correction]} correction per measure"
    if c.baseline is not None:
        for r in sig.itertuples(index=False):
            markers.loc[r.run, r.measure] = BETTER if r.diff > 0 else WORSE
        note = (f"{BETTER}/{WORSE}: significantly better/worse than the baseline {c.baseline} ({TEST_NAMES[c.test]}, "
                f"α = {c.alpha:g}{corr}); {c.n_topics} topics.")
        label = {r: (f"{r} (baseline)" if r == c.baseline else str(r)) for r in means.index}
        means.index = markers.index = pd.Index([label[r] for r in means.index], name="run")
    else:
        letters = c.letters()
        beaten: dict[tuple[str, str], list[str]] = {}
        for r in sig.itertuples(index=False):
            winner, loser = (r.run, r.baseline) if r.diff > 0 else (r.baseline, r.run)
            beaten.setdefault((winner, r.measure), []).append(letters[loser])
        for (winner, measure), words in beaten.items():
            markers.loc[winner, measure] = "".join(sorted(words, key=lambda w: (len(w), w)))
        note = (f"A run's letters: the runs it is significantly better than ({TEST_NAMES[c.test]}, α = {c.alpha:g}"
                f"{corr}); {c.n_topics} topics.")
        means.index = markers.index = pd.Index([f"{letters[str(r)]}. {r}" for r in means.index], name="run")
    bold = best_mask(means, {col: "max" for col in means.columns}, decimals)
    return PaperTable(means, decimals=decimals, bold=bold, markers=markers, note=note)


def detail_table(c, decimals: int = 4) -> PaperTable:
    """One row per comparison: difference with its interval, effect size, p-values, wins/ties/losses."""
    t = c.table
    values = t.set_index(t["run"] + " vs " + t["baseline"] + ", " + t["measure"])[
        ["diff", "effect_size", "p_value", "p_adjusted", "wins", "ties", "losses"]]
    values.index.name = "comparison"
    low = pd.DataFrame(np.nan, index=values.index, columns=values.columns)
    high = low.copy()
    low["diff"], high["diff"] = t["ci_low"].to_numpy(), t["ci_high"].to_numpy()
    return PaperTable(values, decimals=decimals, low=low, high=high)


@analysis("compare", quick=dict(n_resamples=50),
          summary="Compare runs against a baseline (or all pairs) under each measure.",
          title="Runs against a baseline", needs="scores", order=15,
          params=(Param("baseline", None, str, "the run every other run is compared with (default: the first run)",
                        domain="a run name", flags=("--baseline", "-b")),
                  Param("all_pairs", False, parse_bool, "compare every pair of runs instead (ranx-style letters mark "
                        "the runs each one is significantly better than)", flags=("--all-pairs/--baseline-only",)),
                  Param("test", "t", str, "paired test: t (Student), wilcoxon (signed-rank), bootstrap (Sakai 2006) "
                        "or randomisation", choices=TESTS),
                  Param("correction", "holm", str, "multiple-comparison correction over the comparisons of each "
                        "measure", choices=CORRECTIONS),
                  ANALYSIS_PARAMS["alpha"], ANALYSIS_PARAMS["confidence"],
                  Param("n_resamples", None, int, "replicates of the bootstrap and randomisation tests (default "
                        "1000 for the bootstrap, 10,000 for randomisation)", within="[1, 9007199254740992]",
                        flags=("--resamples", "-B")),
                  ANALYSIS_PARAMS["seed"]),
          enabled=lambda params: params.get("baseline") is not None or bool(params.get("all_pairs")),
          standardised=True)
def run(data: AnalysisData, *, baseline: str | None, all_pairs: bool, test: str, correction: str, alpha: float,
        confidence: float, n_resamples: int | None, seed: int) -> RunComparison:
    """Compare runs against a baseline (or all pairs) under each measure: means, mean difference with its t
    interval, effect size (Cohen's d_z), p-values (paired t, Wilcoxon, Sakai's bootstrap or randomisation) with a
    multiple-comparison correction, and topics won/tied/lost."""
    from meta_eval.statistics.comparison import compare

    result = compare(data.scores, list(data.scores), systems=data.systems, baseline=baseline, all_pairs=all_pairs,
                     test=test, correction=correction, alpha=alpha, confidence=confidence, n_resamples=n_resamples,
                     seed=seed, progress=data.progress)
    against = f"against the baseline {result.baseline}" if result.baseline is not None else "every pair of runs"
    text = (f"Every run {against} under each measure on {len(data.topics)} topics: the {TEST_NAMES[test]} "
            f"(α = {alpha:g}" + ("" if correction == "none" else f", {CORRECTION_NAMES[correction]} correction over "
                                  "the comparisons of each measure") + f"), the mean difference with its "
            f"{confidence:.0%} t interval, Cohen's d_z and the topics won, tied and lost."
            + data.standardise_note())
    return RunComparison(result, data.scale, text=text)
