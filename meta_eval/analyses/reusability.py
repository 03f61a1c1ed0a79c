"""Pool reusability (Zobel 1998; Büttcher et al. 2007): each run (or group of runs) left out of the depth-k pool and
re-scored without the judgments only it contributed (the engine is :mod:`meta_eval.statistics.reusability`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from meta_eval.analyses._base import AnalysisData, FigureOutput, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.errors import InputError
from meta_eval.core.params import Param


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
        from meta_eval.rendering.paper_table import reusability_table

        return [TableOutput("reusability", f"Pool reusability (leave-one-{self.unit}-out, pool depth {self.depth}): "
                            f"change of a run's mean {self.scale} and rank when the judgments only it contributed "
                            "are removed", self.result.runs, reusability_table(self.result)),
                TableOutput("reusability_summary", "Per metric", self.result.summary)]

    def figures(self) -> list[FigureOutput]:
        from meta_eval.rendering.figures.meta import reusability_figure

        if self.still:
            return []
        return [FigureOutput(f"reusability_{form}", f"Rank change of each run left out of the pool ({form} form)",
                             lambda form=form: reusability_figure(self.result.runs, form=form, colors=self.colors))
                for form in dict.fromkeys(self.result.runs["form"])]

    def findings(self):
        from meta_eval.rendering.findings import reusability_findings

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


@analysis("reusability", title="Pool reusability", command="reusability",
          summary="Pool reusability: leave each run out of the pool.",
          params=(Param("pool_depth", 100, int, "pool depth: a run contributed the documents of its top k",
                        within="[1, inf)", flags=("--pool-depth", "-k")),
                  Param("group_by", None, str, "leave groups out instead of single runs: 'prefix' (run names "
                        "without their trailing number) or a file of 'run group' lines", flags=("--group-by",)),
                  Param("forms", None, str, "score form; default: standard (condensed without the "
                        "unjudged)", choices=("standard", "condensed"), many=True, flags=("--form",))),
          study={"pool_depth": "pool_depth"}, files=("group_by",), standardised=True)
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
