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
from meta_eval.rendering.figure_style import FULL_WIDTH, MARKERS, colors_for, need_columns, styled
from meta_eval.rendering.findings import Finding, Quoter, ranked
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
        return [FigureOutput(f"reusability_{form}", f"Rank change of each run left out of the pool ({form} form)",
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


@analysis("reusability", quick=dict(pool_depth=10),
          summary="Pool reusability: leave each run out of the pool.",
          title="Pool reusability", order=70,
          params=(Param("pool_depth", 100, int, "pool depth: a run contributed the documents of its top k",
                        within="[1, inf)", flags=("--pool-depth", "-k")),
                  Param("group_by", None, str, "leave groups out instead of single runs: 'prefix' (run names "
                        "without their trailing number) or a file of 'run group' lines", flags=("--group-by",)),
                  Param("forms", None, str, "score form; default: standard (condensed without the "
                        "unjudged)", choices=("standard", "condensed"), many=True, flags=("--form",))),
          files=("group_by",), standardised=True)
def run(data: AnalysisData, *, pool_depth: int, group_by: str | None,
        forms: tuple[str, ...] | None) -> ReusabilityResult:
    """Leave-one-run-out (or leave-one-group-out): the runs of the left-out unit re-scored without its unique
    judgments and ranked among the other runs' official scores."""
    from meta_eval.statistics.reusability import reusability
    from meta_eval.statistics.standardise import note

    groups = _groups(group_by)
    res = reusability(data.collection, data.measures, groups=groups, depth=pool_depth,
                      forms=tuple(forms) if forms else data.forms[:1], standardise=data.standardise)
    unit = "run" if groups is None else "group"
    text = (f"Leave-one-{unit}-out (Zobel 1998; Büttcher et al. 2007): the judged documents that only the {unit} "
            f"contributed to the depth-{pool_depth} pool are removed for its runs, which are re-scored and ranked "
            "among the other runs' official scores." + note(data.standardise))
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
    height: float = 2.5,
):
    """Rank change of each run when the documents only its group contributed are removed from the pool, against
    its official rank (1 = best): one marker series per metric. Points above zero are runs that lose places
    when left out of the pool.

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
    fig = Figure(figsize=(FULL_WIDTH, height), layout="constrained")
    ax = fig.subplots()
    offsets = np.linspace(-0.25, 0.25, len(metrics)) if len(metrics) > 1 else [0.0]
    for i, (metric, dx) in enumerate(zip(metrics, offsets)):
        part = data[data["metric"] == metric]
        ax.scatter(part["rank_full"] + dx, part["rank_change"], s=10, color=palette[metric], label=metric,
                   marker=MARKERS[i % len(MARKERS)], edgecolor="white", linewidth=0.3, zorder=2)
    ax.axhline(0, color="0.5", linewidth=0.7, zorder=0)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("official rank of the run (full qrels)")
    ax.set_ylabel("rank change when left out\n(> 0: the run drops)")
    ax.set_xlim(0, data["rank_full"].max() + 1)
    fig.legend(loc="outside right upper", frameon=False, fontsize="small")
    ax.set_title(f"{form} form", fontsize="medium")
    return fig


# The compact table

def reusability_table(result) -> PaperTable:
    """Pool reusability (:class:`~meta_eval.statistics.reusability.Reusability`), one row per metric (and form): the judgments
    removed per run left out of the pool (mean), its mean score change, the largest score drop, the mean |rank
    change|, the largest rank drop and how many runs drop. Bold: the smallest mean |rank change| and largest drop
    in rank."""
    removed = result.runs.groupby(["metric", "form"], sort=False)["removed"].mean().rename("removed")
    summary = result.summary.join(removed, on=["metric", "form"])
    import pandas as pd

    values = pd.DataFrame({
        "judgments removed": summary["removed"].to_numpy(),
        "mean score change": summary["mean_score_change"].to_numpy(),
        "largest score drop": summary["min_score_change"].to_numpy(),
        "mean |rank change|": summary["mean_abs_rank_change"].to_numpy(),
        "largest rank drop": summary["max_rank_change"].to_numpy().astype(int),
        "runs dropping": summary["runs_dropping"].to_numpy().astype(int),
    }, index=pd.Index(row_labels(summary["metric"], summary["form"]), name="metric"))
    digits = {"judgments removed": 1, "mean score change": 4, "largest score drop": 4, "mean |rank change|": 2}
    best = {"mean |rank change|": "min", "largest rank drop": "min"}
    runs = int(summary["runs"].max()) if len(summary) else 0
    return PaperTable(values, decimals=digits, bold=best_mask(values, best, digits),
                      note=f"Each of the {runs} runs is re-scored without the judgments only it contributed to the "
                      "pool and ranked among the other runs' official scores; a rank drop is a positive change.")


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
        sentence = (f"{lead} moves least under {best} (mean |rank change| {q(name, best, column)}, at most "
                    f"{q(name, best, 'largest rank drop')} places down) and most under {worst} "
                    f"({q(name, worst, column)}, at most {q(name, worst, 'largest rank drop')} places down).")
    return [q.finding(sentence)]
