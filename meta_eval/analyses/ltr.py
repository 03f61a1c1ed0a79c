"""Learning to rank: a metric as the objective of a ranker, and every ranker tested on every metric.

The GAP paper's §5 and Tables 1-2 (Robertson, Kanoulas & Yilmaz, SIGIR 2010): a ranker trained for each metric
(LambdaMART with the metric's |ΔM| lambdas, or SoftRank), every ranker's test queries scored with every metric, each
row tested against the best, beside the metric's informativeness when that analysis ran. The engine is
:mod:`meta_eval.statistics.learning_to_rank`; the data a LETOR file or folder (``demo``: the embedded set).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from meta_eval.analyses._base import AnalysisData
from meta_eval.analyses._result import FigureOutput, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.errors import InputError
from meta_eval.core.params import ANALYSIS_PARAMS, Param
from meta_eval.rendering.figure_style import FULL_WIDTH, colors_for, styled
from meta_eval.rendering.findings import Finding, Quoter, ranked
from meta_eval.rendering.paper_table import PaperTable

ALGORITHM_LABELS = {"lambdamart": "LambdaMART", "softrank": "SoftRank"}


@dataclass
class LearningToRank(Result):
    """The experiment (:class:`~meta_eval.statistics.learning_to_rank.experiment.LTRResult`) and the
    informativeness of each measure (mean RMS error, when that analysis ran)."""

    experiment: Any
    rms: dict[str, float] | None
    alpha: float

    def tables(self) -> list[TableOutput]:
        res = self.experiment
        full = res.table.assign(informativeness_rms=res.table["trained_for"].map(self.rms or {}).astype(float))
        names = ", ".join(dict.fromkeys(ALGORITHM_LABELS.get(a, a) for a in res.table["algorithm"]))
        return [TableOutput("ltr", f"Effectiveness when trained for it: mean test score of a ranker ({names}) trained "
                            "for each metric (rows) on each test metric (columns), beside the trained-for metric's "
                            "informativeness", full, ltr_table(res, self.rms, alpha=self.alpha)),
                TableOutput("ltr_per_query", "Every test query's score", res.per_query)]

    def figures(self) -> list[FigureOutput]:
        return [FigureOutput("ltr", "Mean paired difference (95 % t-interval over test queries) of each objective "
                             "from the best objective, per test metric",
                             lambda: ltr_figure(self.experiment, alpha=self.alpha))]

    def findings(self) -> list[Finding]:
        """The best objective for each test metric, and how the most informative metric fares as an objective."""
        name = "ltr"
        q = Quoter(self.compact)
        t = self.compact[name]
        tests = [c for c in t.values.columns if c.startswith("test ")]
        if not tests or len(t.values) < 2:
            return []
        bests = []
        for column in tests:
            rows = [str(r) for r, b in zip(t.values.index, t.bold[column]) if b]
            if rows:
                bests.append(f"{column[5:]}: {' and '.join(rows)} ({q(name, rows[0], column)})")
        algorithms = ", ".join(dict.fromkeys(ALGORITHM_LABELS.get(a, a) for a in self.experiment.table["algorithm"]))
        queries = q.param("queries", self.experiment.settings["n_test_queries"])
        sentence = (f"Learning to rank ({algorithms}; {queries} test queries): the best objective per test metric — "
                    + "; ".join(bests))
        rms = "RMS (informativeness)"
        if rms in t.values.columns:
            order = ranked(t, rms, ascending=True)
            if order:
                top = order[0]
                best_on = [c[5:] for c in tests if bool(t.bold.loc[top, c])]
                below = [c[5:] for c in tests if "†" in str(t.markers.loc[top, c])]
                sentence += (f". Trained for the most informative metric, {top} (RMS {q(name, top, rms)}), the "
                             f"ranker is the best on {', '.join(best_on) if best_on else 'no test metric'} and "
                             f"significantly below the best on {', '.join(below) if below else 'none'}")
        return [q.finding(sentence + ".")]


def ltr_table(result, informativeness: dict[str, float] | None = None, *, alpha: float = 0.05,
              decimals: int = 4) -> PaperTable:
    """One row per (algorithm, trained-for metric): the mean test score per test metric, the best row of each
    algorithm and column in bold, † on rows significantly below it (p < ``alpha``), and the trained-for metric's
    mean RMS error of the informativeness analysis (lower: more informative)."""
    from meta_eval.statistics.learning_to_rank.experiment import ltr_stage_table

    wide = ltr_stage_table(result, informativeness)
    t = result.table
    several = t["algorithm"].nunique() > 1
    label = [f"{ALGORITHM_LABELS.get(a, a)}, {m}" if several else str(m)
             for a, m in zip(wide["algorithm"], wide["trained_for"])]
    tests = [c for c in wide.columns if c.startswith("test ")]
    values = wide[tests].set_axis(pd.Index(label, name="trained for"))
    markers = pd.DataFrame("", index=values.index, columns=tests)
    bold = pd.DataFrame(False, index=values.index, columns=tests)
    key = {(a, m): lab for a, m, lab in zip(wide["algorithm"], wide["trained_for"], label)}
    for r in t.itertuples(index=False):
        row, col = key[(r.algorithm, r.trained_for)], f"test {r.test_measure}"
        bold.loc[row, col] = bool(r.best)
        markers.loc[row, col] = "†" if r.p_value < alpha else ""
    if informativeness is not None:
        rms = wide["informativeness"].to_numpy(dtype=float)
        values.insert(0, "RMS (informativeness)", rms)
        markers.insert(0, "RMS (informativeness)", "")
        lowest = np.isclose(rms, np.nanmin(rms)) if np.isfinite(rms).any() else np.zeros(len(rms), bool)
        bold.insert(0, "RMS (informativeness)", lowest)
    s = result.settings
    note = (f"Mean over {s.get('n_test_queries', '?')} test queries ({s.get('folds', '?')} fold(s)); bold: the best "
            f"objective per test metric; †: significantly below it ({s.get('significance', 'ttest')}, p < "
            f"{alpha:g}).")
    if informativeness is not None:
        note += " RMS: the trained-for metric's mean RMS error in the informativeness analysis (lower: more informative)."
    return PaperTable(values, decimals={"RMS (informativeness)": 3, "*": decimals}, bold=bold, markers=markers,
                      note=note)


def _existing(value: Any) -> str | None:
    if value is None or str(value) == "demo" or Path(value).exists():
        return None
    return "does not exist (a LETOR file or folder, or 'demo')"


def _positive(value: Any) -> str | None:
    return None if value > 0 else "must be > 0"


@analysis("ltr", quick=dict(letor="demo", rounds=5, max_folds=1),
          summary="Train a ranker for each metric and score the test queries.",
          title="Effectiveness when trained for it (learning to rank)", after=("informativeness",),
          needs="measures", order=90,
          params=(Param("letor", None, str, "LETOR/SVMlight file (split by --folds cross-validation over queries), "
                        "folder of train/vali/test files (.gz ok; a missing vali is carved from train) or of "
                        "Fold1..FoldK folders; demo: the embedded demo set (the default of the command)",
                        check=_existing, domain="a LETOR file or folder, or demo", flags=("--data", "-d")),
                  Param("train_for", None, str, "objective metrics; default: the measures", many=True,
                        domain="measure names", flags=("--train-for",)),
                  Param("test", None, str, "test metrics; default: the measures", many=True, domain="measure names"),
                  Param("algorithms", ("lambdamart",), str, "lambdamart (LightGBM, lambdas scaled by |ΔM|) or "
                        "softrank (smooth nDCG/AP/GAP, PyTorch)", choices=tuple(ALGORITHM_LABELS), many=True,
                        flags=("--algorithm",)),
                  Param("folds", 5, int, "folds of the cross-validation of a single file", within="[3, inf)"),
                  Param("max_folds", None, int, "use only the first N folds (default: all)", within="[1, inf)"),
                  Param("rel_level", 1, int, "binary measures: relevant = label >= this", within="[1, inf)",
                        flags=("--rel-level",)),
                  Param("significance", "ttest", str, "paired test of each row against the best",
                        choices=("ttest", "wilcoxon", "sign")),
                  ANALYSIS_PARAMS["alpha"],
                  Param("rounds", 500, int, "LambdaMART: boosting rounds at most (early stopping on validation)",
                        within="[1, inf)"),
                  Param("early_stopping", 50, int, "LambdaMART: stop after N rounds without improvement of the "
                        "trained-for metric on validation (0: never)", within="[0, inf)"),
                  Param("learning_rate", 0.05, float, "LambdaMART learning rate", check=_positive,
                        domain="a number > 0"),
                  Param("num_leaves", 31, int, "LambdaMART leaves per tree", within="[2, inf)"),
                  Param("truncation_level", 30, int, "LambdaMART: pairs need a document in the top N (LightGBM's "
                        "lambdarank_truncation_level)", within="[1, inf)"),
                  Param("model", "linear", str, "SoftRank scorer: linear or a one-hidden-layer network",
                        choices=("linear", "mlp")),
                  Param("sigma", 0.1, float, "SoftRank score noise σ", check=_positive, domain="a number > 0"),
                  Param("epochs", 150, int, "SoftRank: maximum epochs (full batch, Adam)", within="[1, inf)"),
                  ANALYSIS_PARAMS["seed"]),
          enabled=lambda params: params.get("letor") is not None, files=("letor",), parallel=True)
def run(data: AnalysisData, *, letor: str | None, train_for: tuple[str, ...] | None, test: tuple[str, ...] | None,
        algorithms: tuple[str, ...], folds: int, max_folds: int | None, rel_level: int, significance: str,
        alpha: float, rounds: int, early_stopping: int, learning_rate: float, num_leaves: int,
        truncation_level: int, model: str, sigma: float, epochs: int, seed: int) -> LearningToRank:
    """Train a ranker for each metric (same folds and seeds, early stopping on validation), score the test
    queries with every metric, and test each row against the best of its test metric (the GAP paper's Tables 1-2).
    Test queries without a relevant document are not scored (their number is given)."""
    from meta_eval.model.demo import demo_ltr_data
    from meta_eval.statistics.learning_to_rank.experiment import run_ltr

    path = demo_ltr_data() if letor in (None, "demo") else Path(letor)
    measures = [data.specs.get(m.output_name, m) for m in data.measures] or None
    if not measures and not (train_for and test):
        raise InputError("learning to rank needs measures to train for and to test (-m, or --train-for and --test)")
    res = run_ltr(path, list(train_for or measures), list(test or measures), list(algorithms), k=folds,
                  max_folds=max_folds, seed=seed, rel_level=rel_level, significance=significance,
                  lambdamart=dict(num_boost_round=rounds, early_stopping_rounds=early_stopping or None,
                                  params={"learning_rate": learning_rate, "num_leaves": num_leaves,
                                          "lambdarank_truncation_level": truncation_level}),
                  softrank=dict(model=model, sigma=sigma, epochs=epochs), progress=data.progress, jobs=data.jobs,
                  scheduler=data.scheduler)
    informativeness = data.results.get("informativeness")
    rms = informativeness.rms if informativeness is not None else None
    s = res.settings
    names = " and ".join(ALGORITHM_LABELS[a] for a in algorithms)
    text = (
        f"{names} (LambdaMART: LightGBM with RankNet gradients scaled by |ΔM| for the metric M trained for; SoftRank: "
        f"a smooth rank distribution, PyTorch) trained for each metric on {path.name} ({s['folds']} fold(s) of "
        f"cross-validation over queries, seed {seed}, early stopping on the trained-for metric on the validation "
        f"queries); every ranker's test queries are scored with every metric ({s['n_test_queries']} test queries; "
        f"{res.skipped} without a relevant document not scored). Each row is tested against the best row of its "
        f"test metric ({significance} over the test queries, α = {alpha:g}). The GAP paper (§5) argues that a more "
        "informative metric is a better objective; "
        + ("the RMS column puts each metric's informativeness beside its effectiveness as an objective, without "
           "asserting the claim." if rms else "the informativeness analysis did not run, so no RMS column."))
    return LearningToRank(res, rms, alpha, text=text)


# ------------------------------------------------------------------------------------------------------------------
# The figure: what training for each metric gains or loses on each test metric
# ------------------------------------------------------------------------------------------------------------------
# One panel per test measure. Each row is a trained-for metric; the point is its mean paired difference from the
# best row of the same algorithm and test measure (over the test queries), with the 95 % t-interval of that
# difference. The best row sits at 0; a filled marker is a row significantly below the best, a hollow one is not.
# Paired differences are shown rather than means with error bars because the query-to-query spread dwarfs the
# differences between objectives, which a paired test resolves.


def paired_differences(result, level: float = 0.95) -> pd.DataFrame:
    """Per (algorithm, test measure, trained for): mean paired difference from the best row and its t-interval."""
    from scipy import stats

    rows = []
    table = result.table
    for (algorithm, measure), part in result.per_query.groupby(["algorithm", "test_measure"], sort=False):
        wide = part.pivot_table(index="trained_for", columns=["fold", "query"], values="value", sort=False)
        info = table[(table["algorithm"] == algorithm) & (table["test_measure"] == measure)].set_index("trained_for")
        best = info.index[info["best"]][0]
        for trained in wide.index:
            d = wide.loc[trained].to_numpy() - wide.loc[best].to_numpy()
            n = len(d)
            half = stats.t.ppf(0.5 + level / 2, n - 1) * d.std(ddof=1) / np.sqrt(n) if n > 1 else np.nan
            rows.append({"algorithm": algorithm, "test_measure": measure, "trained_for": trained,
                         "difference": d.mean(), "low": d.mean() - half, "high": d.mean() + half,
                         "p_value": info.loc[trained, "p_value"], "best": trained == best})
    return pd.DataFrame(rows)


@styled
def ltr_figure(result, *, alpha: float = 0.05, colors=None, title: str | None = None):
    """Paired differences from the best objective, one panel per test measure (see above)."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    data = paired_differences(result)
    measures = list(dict.fromkeys(data["test_measure"]))
    algorithms = list(dict.fromkeys(data["algorithm"]))
    objectives = list(dict.fromkeys(data["trained_for"]))
    palette = colors_for(algorithms, colors)
    fig = Figure(figsize=(min(FULL_WIDTH, 1.2 + 1.9 * len(measures)), 0.9 + 0.32 * len(objectives) * len(algorithms)),
                 layout="constrained")
    axes = fig.subplots(1, len(measures), sharey=True, squeeze=False)[0]
    offsets = (np.arange(len(algorithms)) - (len(algorithms) - 1) / 2) * 0.22
    for ax, measure in zip(axes, measures):
        part = data[data["test_measure"] == measure]
        for offset, algorithm in zip(offsets, algorithms):
            rows = part[part["algorithm"] == algorithm].set_index("trained_for").reindex(objectives)
            y = np.arange(len(objectives)) + offset
            colour = palette[algorithm]
            xerr = [rows["difference"] - rows["low"], rows["high"] - rows["difference"]]
            ax.errorbar(rows["difference"], y, xerr=xerr, fmt="none", ecolor=colour, elinewidth=1.0, capsize=2)
            best = rows["best"].to_numpy(dtype=bool)
            significant = (rows["p_value"] < alpha).to_numpy()
            other = ~best & ~significant
            ax.scatter(rows["difference"][best], y[best], color=colour, marker="D", s=26, zorder=3,
                       label=algorithm)
            ax.scatter(rows["difference"][significant], y[significant], color=colour, s=24, zorder=3)
            ax.scatter(rows["difference"][other], y[other], facecolor="white", edgecolor=colour, s=24, zorder=3)
        ax.axvline(0.0, color="0.4", linewidth=0.8, zorder=0)
        ax.set_title(f"test: {measure}", fontsize="medium")
        ax.xaxis.set_major_locator(MaxNLocator(nbins=3))
        ax.grid(axis="x", color="0.9", linewidth=0.6)
    axes[0].set_yticks(np.arange(len(objectives)), [f"trained for {o}" for o in objectives])
    axes[0].set_ylim(len(objectives) - 0.5, -0.5)
    handles, labels = axes[0].get_legend_handles_labels()
    if len(algorithms) > 1:
        seen = dict(zip(labels, handles))
        fig.legend(list(seen.values()), list(seen.keys()), loc="outside right center", frameon=False)
    fig.supxlabel("mean paired difference from the best objective (◆), 95 % CI", fontsize="small")
    who = "" if len(algorithms) > 1 else f"{algorithms[0]}: "
    fig.suptitle(title or f"{who}● significantly below the best (p < {alpha:g}), ○ not", fontsize="small")
    return fig
