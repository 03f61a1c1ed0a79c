"""Pool reusability (Zobel 1998; Büttcher et al. 2007): each run (or group of runs) left out of the depth-k pool and
re-scored without the judgments only it contributed (the engine is :mod:`meta_eval.statistics.reusability`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from meta_eval.analyses._base import AnalysisData
from meta_eval.analyses._result import FigureOutput, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.errors import InputError
from meta_eval.core.params import Param
from meta_eval.core.progress import CostModel
from meta_eval.rendering.figure_style import FULL_WIDTH, MARKERS, colors_for, need_columns, styled
from meta_eval.rendering.findings import Finding, Quoter, joined, ranked, tied
from meta_eval.rendering.paper_table import PaperTable, best_mask, row_labels


@dataclass
class ReusabilityResult(Result):
    """``result`` (:class:`~meta_eval.statistics.reusability.Reusability`), the pool depth and what was left out (run or group)."""

    result: Any
    depth: int
    unit: str
    scale: str = "score"
    colors: dict | None = None

    @property
    def still(self) -> bool:
        """Whether no run changes rank under any measure (a figure of zeros would say nothing)."""
        return bool((self.result.runs["rank_change"] == 0).all())

    def tables(self):
        return [TableOutput("reusability", f"Pool reusability (leave-one-{self.unit}-out, pool depth {self.depth}): "
                            f"change of a run's mean {self.scale} and rank when the judgments only it contributed "
                            "are removed", self.result.runs, reusability_table(self.result)),
                TableOutput("reusability_summary", "Per metric", self.result.summary)]

    def figures(self) -> list[FigureOutput]:
        if self.still:
            return []
        return [FigureOutput(f"reusability_{form}", f"Rank change of each run left out of the depth-{self.depth} pool "
                             f"({form} form), one panel per metric: a stem from 0 for each run that moves (> 0: it "
                             "drops); runs that keep their rank are the zero line",
                             lambda form=form: reusability_figure(self.result.runs, form=form, colors=self.colors))
                for form in dict.fromkeys(self.result.runs["form"])]

    def findings(self):
        return reusability_findings(self.compact, name="reusability", unit=self.unit, depth=self.depth)


def _groups(group_by):
    """None (leave single runs out), ``"prefix"``, or the run -> group map of a file of ``run group`` lines (or
    given as a mapping, from Python)."""
    if group_by is None or group_by == "prefix" or isinstance(group_by, Mapping):
        return group_by
    path = Path(group_by)
    if not path.is_file():
        raise InputError(f"--group-by must be 'prefix' or a file of 'run group' lines; {group_by!r} is neither")
    from meta_eval.inputs.trec import read_run_groups

    return read_run_groups(path)


def judged_depth(collection) -> int:
    """The depth to which the qrels judged the runs: the deepest k such that some run has every one of its top k
    documents judged on every topic it retrieved for (at least 1).

    Leave-one-out (Zobel 1998; Büttcher et al. 2007) removes what a run alone contributed to the pool *as it was
    built*: a document counts as contributed by a run when it is in the run's top k, k the pool depth. A k deeper
    than the pool makes nearly every judged document "contributed" by many runs, so that nothing is unique and no run
    moves (the demo collection, pooled at depth 10, loses 0.2 judgments per run at k = 100). A run of the pool is
    judged down to the pool depth on every topic; a run outside it is not, so the deepest such run gives the depth
    (10 for the demo collection, 7 for TREC-COVID round 1).
    """
    from meta_eval.model.rankings import UNJUDGED

    unbounded = np.iinfo(np.int64).max
    depth = np.full(len(collection.systems), unbounded, dtype=np.int64)
    for block in collection.blocks:
        unjudged = block.rankings.grades == UNJUDGED
        n_ret = block.rankings.n_ret
        judged_top = np.where(unjudged.any(axis=-1), unjudged.argmax(axis=-1), n_ret)  # leading judged documents
        depth = np.minimum(depth, np.where(n_ret > 0, judged_top, unbounded).min(axis=1, initial=unbounded))
    found = depth[depth < unbounded]
    return max(1, int(found.max())) if found.size else 1


def _work(data: AnalysisData, params: Mapping[str, Any]) -> float:
    """Documents re-scored: every run once, without its unique judgments, under every metric and form."""
    forms = len(params["forms"]) if params["forms"] else 1
    retrieved = float(data.collection.n_ret.sum()) if data.collection is not None else 0.0
    return retrieved * len(data.raw) * forms


#: One core's seconds (scripts/calibrate_study_cost.py: the analysis with its tables and figures, in a study with
#: jobs=1): {run: (units, seconds)}.
COST = CostModel.fit("documents retrieved × metrics × forms", _work,
                     {"demo, quick": (398910, 0.38), "demo": (398910, 0.05),
                      "TREC-COVID, quick": (2.106e+07, 1.22), "TREC-COVID": (2.106e+07, 1.43)})


@analysis("reusability", quick=dict(pool_depth=10),
          summary="Pool reusability: leave each run out of the pool.",
          title="Pool reusability", order=70,
          params=(Param("pool_depth", None, int, "pool depth: a run contributed the documents of its top k; "
                        "default: the depth the qrels judged the runs to (the deepest k to which some run is judged "
                        "on every topic)", within="[1, inf)", flags=("--pool-depth", "-k")),
                  Param("group_by", None, str, "leave groups out instead of single runs: 'prefix' (run names "
                        "without their trailing number) or a file of 'run group' lines", flags=("--group-by",)),
                  Param("forms", None, str, "score form; default: standard (condensed without the "
                        "unjudged)", choices=("standard", "condensed"), many=True, flags=("--form",))),
          files=("group_by",), standardised=True, cost=COST)
def run(data: AnalysisData, *, pool_depth: int | None, group_by: str | None,
        forms: tuple[str, ...] | None) -> ReusabilityResult:
    """Leave-one-run-out (or leave-one-group-out): the runs of the left-out unit re-scored without its unique
    judgments and ranked among the other runs' official scores, at the collection's pool depth by default."""
    from meta_eval.statistics.reusability import reusability
    from meta_eval.statistics.standardise import note

    groups = _groups(group_by)
    inferred = pool_depth is None
    if inferred:
        pool_depth = judged_depth(data.collection)
    res = reusability(data.collection, data.measures, groups=groups, depth=pool_depth,
                      forms=tuple(forms) if forms else data.forms[:1], standardise=data.standardise)
    unit = "run" if groups is None else "group"
    text = (f"Leave-one-{unit}-out (Zobel 1998; Büttcher et al. 2007): the judged documents that only the {unit} "
            f"contributed to the depth-{pool_depth} pool are removed for its runs, which are re-scored and ranked "
            "among the other runs' official scores." + note(data.standardise))
    if inferred:
        text += (f" Pool depth {pool_depth}: the depth the qrels judged the runs to (the deepest k to which some run "
                 "is judged on every topic); a deeper k would count nearly every judged document as found by many "
                 "runs.")
    result = ReusabilityResult(res, pool_depth, unit, data.scale, data.colors, text=text)
    if result.still:  # a figure of zeros says nothing the sentence does not
        result.text += (f"\n\nNo run changes rank under any metric when left out of the pool (at most "
                        f"{int(res.runs['removed'].max())} judgments removed per run), so the figure of rank changes "
                        "is left out.")
    return result


# The figure

@styled
def reusability_figure(
    runs: pd.DataFrame,
    *,
    form: str | None = None,
    colors: Mapping[str, object] | None = None,
    height: float | None = None,
):
    """Rank change of each run when the documents only its group contributed are removed from the pool, against
    its official rank (1 = best): small multiples, one panel per metric (shared axes), a stem from 0 for each run
    that moves (> 0: it loses places when left out of the pool). Runs that keep their rank are the zero line: on a
    collection of many runs most do, and one panel for all metrics piled their markers on it.

    ``runs`` is :attr:`Reusability.runs`; ``form`` picks one form (default: the first in the table).
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    need_columns(runs, {"metric", "form", "rank_full", "rank_change"}, "reusability_figure")
    form = form if form is not None else runs["form"].iloc[0]
    data = runs[runs["form"] == form]
    if data.empty:
        raise InputError(f"no rows of form {form!r}; the table has {sorted(set(runs['form']))}")
    metrics = list(dict.fromkeys(data["metric"]))
    palette = colors_for(metrics, colors)
    n_cols = min(len(metrics), 3)
    n_rows = -(-len(metrics) // n_cols)
    fig = Figure(figsize=(FULL_WIDTH, height or 0.5 + 1.45 * n_rows), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, sharex=True, sharey=True, squeeze=False).ravel()
    for i, (ax, metric) in enumerate(zip(axes, metrics)):
        part = data[(data["metric"] == metric) & (data["rank_change"] != 0)]
        ax.axhline(0, color="0.5", linewidth=0.7, zorder=0)
        ax.vlines(part["rank_full"], 0, part["rank_change"], color=palette[metric], linewidth=0.9)
        ax.plot(part["rank_full"], part["rank_change"], linestyle="none", marker=MARKERS[i % len(MARKERS)],
                markersize=3.5, color=palette[metric], markeredgecolor="white", markeredgewidth=0.4)
        moved = len(part)
        ax.set_title(f"{metric} ({moved} of {int((data['metric'] == metric).sum())} runs move)", fontsize="small")
    for ax in axes[len(metrics):]:
        ax.set_visible(False)
    axes[0].yaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))  # 10 ticks crowd a 1.45-inch panel
    axes[0].xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True, min_n_ticks=2))  # ranks: 1, 2, ..., not 2.5
    axes[0].set_xlim(0.5, data["rank_full"].max() + 0.5)
    low, high = min(0, int(data["rank_change"].min())), max(1, int(data["rank_change"].max()))
    pad = 0.1 * (high - low)
    axes[0].set_ylim(low - pad, high + pad)
    fig.supxlabel("official rank of the run (full qrels)", fontsize="medium")
    fig.supylabel("rank change when left out\n(> 0: the run drops)", fontsize="medium")
    return fig


# The compact table

def reusability_table(result) -> PaperTable:
    """Pool reusability (:class:`~meta_eval.statistics.reusability.Reusability`), one row per metric (and form): the judgments
    removed per run left out of the pool (mean), its mean score change (reduced - full: negative when runs lose),
    the largest score drop and the largest rank drop over runs (positive magnitudes, 0 when no run drops), the mean
    |rank change| and how many runs drop. Bold: the smallest mean |rank change|, the one column that weighs a run
    that rises (the condensed form's bias) as much as one that drops. When every change is 0 the note says why
    (what the left-out runs lost)."""
    removed = result.runs.groupby(["metric", "form"], sort=False)["removed"].mean().rename("removed")
    summary = result.summary.join(removed, on=["metric", "form"])
    values = pd.DataFrame({
        "judgments removed": summary["removed"].to_numpy(),
        "mean score change": summary["mean_score_change"].to_numpy(),
        # a drop is a magnitude: the engine's changes are reduced - full, so the largest drop is -min(change)
        "largest score drop": np.maximum(0.0, -summary["min_score_change"].to_numpy(dtype=float)),
        "mean |rank change|": summary["mean_abs_rank_change"].to_numpy(),
        "largest rank drop": np.maximum(0, summary["max_rank_change"].to_numpy()).astype(int),
        "runs dropping": summary["runs_dropping"].to_numpy().astype(int),
    }, index=pd.Index(row_labels(summary["metric"], summary["form"]), name="metric"))
    digits = {"judgments removed": 1, "mean score change": 4, "largest score drop": 4, "mean |rank change|": 2}
    best = {"mean |rank change|": "min"}
    runs = int(summary["runs"].max()) if len(summary) else 0
    note = (f"Each of the {runs} runs is re-scored without the judgments only it contributed to the depth-"
            f"{result.depth} pool and ranked among the other runs' official scores; score change: reduced minus "
            "full (negative: the run loses); a drop, of score or rank, is a positive magnitude (0: no run drops).")
    changes = values.drop(columns="judgments removed")
    if len(values) and np.allclose(changes.to_numpy(dtype=float), 0):
        note += " " + _why_no_change(result.runs, result.depth)
    return PaperTable(values, decimals=digits, bold=best_mask(values, best, digits), note=note)


def _why_no_change(runs: pd.DataFrame, depth: int) -> str:
    """Why every score and rank change is 0: what the runs left out of the pool lost."""
    lost = runs.drop_duplicates("run")
    most, relevant = int(lost["removed"].max()), int(lost["removed_relevant"].max())
    if most == 0:
        return (f"Every change is 0 because no judged document is in the top {depth} of one run alone: each run "
                "shares its whole contribution to the pool with others.")
    if relevant == 0:
        return (f"Every change is 0 because no relevant document is in the top {depth} of one run alone: a run loses "
                f"at most {most} judgments, none of them relevant.")
    return (f"Every change is 0 because the relevant documents a run alone contributed (at most {relevant} per run) "
            "change none of its mean scores.")


# The findings

def reusability_findings(tables: Mapping[str, PaperTable], *, name: str, unit: str, depth: int) -> list[Finding]:
    """Under which metric a run left out of the pool moves least and most (mean |rank change|)."""
    q = Quoter(tables)
    column = "mean |rank change|"
    order = ranked(tables[name], column, ascending=True)
    if not order:
        return []
    best, worst = order[0], order[-1]
    lead = (f"Pool reusability (leave-one-{unit}-out, pool depth {q.param('depth', depth)}): a {unit} left out of "
            f"the pool (losing {q(name, best, 'judgments removed')} judgments on average)")
    t = tables[name]
    drops = ranked(t, "largest rank drop")
    if t.text(best, column) == t.text(worst, column):
        if t.text(drops[0], "largest rank drop") == t.text(drops[-1], "largest rank drop"):
            sentence = (f"{lead} moves alike under every metric: mean |rank change| {q(name, best, column)}, at most "
                        f"{q(name, best, 'largest rank drop')} places down")
            if float(t.values.loc[best, column]) == 0 and float(t.values.loc[best, "largest rank drop"]) == 0:
                sentence = f"{lead} keeps its rank under every metric"
        else:
            sentence = (f"{lead} moves alike under every metric on average (mean |rank change| "
                        f"{q(name, best, column)}); it drops at most {q(name, drops[0], 'largest rank drop')} places "
                        f"under {drops[0]}")
        sentence += "."
    else:
        least, most = tied(t, column, order), tied(t, column, order[::-1])[::-1]

        def moved(rows: list[str]) -> str:  # the largest drop only when the rows named share it
            drop = {t.text(r, "largest rank drop") for r in rows}
            return f"{q(name, rows[0], column)}" + (f", at most {q(name, rows[0], 'largest rank drop')} places down"
                                                     if len(drop) == 1 else "")

        sentence = (f"{lead} moves least under {joined(least)} (mean |rank change| {moved(least)}) and most under "
                    f"{joined(most)} ({moved(most)}).")
    return [q.finding(sentence)]
