"""Formal properties of the metrics under study: what kind of number each is, before any experiment.

For every measure of the study — the user's new one first — Moffat's seven numeric properties, Amigó et al.'s
ranking constraints, Kishida's sensitivity to rank and to a newly found relevant document, and Ferrante et al.'s
interval scale, each decided by exhaustive enumeration of small cases and a seeded random search beyond them (the
engine is :mod:`meta_eval.statistics.metric_properties.formal`). It needs the measures only, not the collection's runs.

Tables: Moffat's seven (metrics × properties, ✓ / ✗ / –, with the counterexamples as footnotes), the other
constraints the same way, and the counterexamples themselves (rankings, qrels and values, to check by hand).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import pandas as pd

from meta_eval.analyses._base import AnalysisData
from meta_eval.analyses._result import FigureOutput, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.params import ANALYSIS_PARAMS, Param
from meta_eval.core.progress import CostModel

#: The counterexamples table's columns: up to three cases (A, B; the interval scale's C), each as ranking, qrels
#: and value.
CASE_COLUMNS = ("space", "shows", *(f"{what} {case}" for case in "ABC" for what in ("ranking", "qrels", "value")))
LEGEND = ("✓ held (no counterexample in the space searched), ✗ violated, – undefined, ✓/✗ held for binary "
          "relevance only (violated once grades are told apart); a number points to the smallest counterexample: "
          "rankings as grades top first, q = judged documents per grade 0/1/..., then the value")


@dataclass
class PropertiesResult(Result):
    """``result``: the verdicts (:class:`~meta_eval.statistics.metric_properties.formal.FormalProperties`); ``new``: the plug-ins
    among its metrics (the metrics a paper proposes), listed first."""

    result: Any
    new: list[str] = field(default_factory=list)

    # ------------------------------------------------------------------------------------------------ tables

    def tables(self) -> list[TableOutput]:
        from meta_eval.statistics.metric_properties.formal import CONSTRAINTS, MOFFAT, SPACES

        res = self.result
        notes: list[str] = []
        moffat = self._grid(MOFFAT, notes, "Moffat's seven")
        constraints = self._grid(CONSTRAINTS, notes, "the other constraints")
        searched = "; ".join(f"{space}: {res.sizes.describe(space)}" for space in SPACES)
        return [
            TableOutput("properties", "Moffat's seven numeric properties of each metric (" + searched + ")",
                        res.to_frame(), moffat),
            TableOutput("properties_constraints", "Amigó et al.'s ranking constraints, Kishida's sensitivity to "
                        "rank (top-heavy) and to a newly found relevant document, and the interval scale",
                        res.matrix().reset_index(), constraints),
            TableOutput("properties_counterexamples", "The smallest counterexample of every violated property",
                        self._counterexamples().reset_index(), self._counterexample_table()),
        ]

    def _grid(self, props: tuple[str, ...], notes: list[str], what: str):
        """The compact table of ``props``: symbols, a ``held`` count, and numbered footnotes (continuing
        ``notes``) with each violation's counterexample."""
        from meta_eval.rendering.paper_table import PaperTable

        res = self.result
        values = pd.DataFrame([[res.symbol(m, p) for p in props] for m in res.metrics],
                              index=pd.Index(res.metrics, name="metric"), columns=list(props))
        markers = pd.DataFrame("", index=values.index, columns=values.columns)
        own: list[str] = []
        for m in res.metrics:
            for p in props:
                v = res.verdict(m, p)
                if v.status == "violated":
                    notes.append(f"{len(notes) + 1}: {m}, {p} ({v.space}): {v.claim}: "
                                 + "; ".join(_case_text(c) for c in v.evidence))
                    own.append(notes[-1])
                    markers.loc[m, p] = str(len(notes))
        values["held"] = [sum(res.status(m, p) == "held" for p in props) for m in res.metrics]
        markers["held"] = ""
        return PaperTable(values, caption=f"Formal properties: {what}", decimals=0, markers=markers,
                          note=LEGEND + ". " + ". ".join(own) + ("." if own else ""))

    def _counterexamples(self) -> pd.DataFrame:
        """One row per violated property ("metric: property"): its space, what it shows, and its cases."""
        rows = {}
        for m in self.result.metrics:
            for p in self.result.properties:
                v = self.result.verdict(m, p)
                if v.status == "violated":
                    rows[f"{m}: {p}"] = {"space": v.space, "shows": v.claim, **{
                        f"{what} {'ABC'[k]}": value for k, case in enumerate(v.evidence)
                        for what, value in (("ranking", case.ranking_text), ("qrels", case.counts_text),
                                            ("value", case.value))}}
        frame = pd.DataFrame.from_dict(rows, orient="index", columns=list(CASE_COLUMNS))
        frame.index.name = "metric: property"
        return frame

    def _counterexample_table(self):
        from meta_eval.rendering.paper_table import PaperTable

        return PaperTable(self._counterexamples().drop(columns="shows"), caption="Smallest counterexamples "
                          "(rankings: grades top first; qrels: judged documents per grade 0/1/...)", decimals=4)

    # ------------------------------------------------------------------------------------------------ figure

    def figures(self) -> list[FigureOutput]:
        return [FigureOutput("properties", "Formal properties of each metric: held, violated (for binary "
                             "relevance or only once grades are told apart) or undefined", self._figure)]

    def _figure(self):
        from meta_eval.rendering.figure_style import styled

        return styled(_property_grid)(self.result)

    # ------------------------------------------------------------------------------------------------ findings

    def findings(self) -> list:
        from meta_eval.rendering.findings import Quoter, ranked
        from meta_eval.statistics.metric_properties.formal import MOFFAT

        res = self.result
        q = Quoter(self.compact)
        out = []
        order = ranked(self.compact["properties"], "held")
        if len(order) >= 2 and q.tables["properties"].text(order[0], "held") != \
                q.tables["properties"].text(order[-1], "held"):
            best = [m for m in order if q.tables["properties"].text(m, "held") ==
                    q.tables["properties"].text(order[0], "held")]
            out.append(q.finding(f"Of Moffat's seven properties, {_listed(best)} "
                                 f"{'holds' if len(best) == 1 else 'hold'} the most "
                                 f"({q('properties', best[0], 'held')}) and {order[-1]} the fewest "
                                 f"({q('properties', order[-1], 'held')})."))
        out += [q.finding(s) for s in _only_ones(res, MOFFAT)]
        out += [q.finding(self._profile(q, m)) for m in self.new]
        return out

    def _profile(self, q, metric: str) -> str:
        """What a new metric holds and breaks, quoting its first counterexample."""
        res = self.result
        held = [p for p in res.properties if res.status(metric, p) == "held"]
        binary = [p for p in res.properties if res.binary_only(metric, p)]
        broken = [p for p in res.properties if res.status(metric, p) == "violated" and p not in binary]
        text = (f"The new metric {metric} holds {q('properties', metric, 'held')} of Moffat's seven properties and "
                f"{q('properties_constraints', metric, 'held')} of the other constraints"
                + (f" ({_listed(held)})" if held else ""))
        if binary:
            text += f"; {_listed(binary)} only for binary relevance"
        if not broken:
            return text + ("; it violates no property for binary relevance in the space searched." if binary else
                           "; it violates no property in the space searched.")
        row, t = f"{metric}: {broken[0]}", "properties_counterexamples"
        example = (f"[{q(t, row, 'ranking A')}] with qrels {q(t, row, 'qrels A')} scores {q(t, row, 'value A')} and "
                   f"[{q(t, row, 'ranking B')}] with qrels {q(t, row, 'qrels B')} scores {q(t, row, 'value B')}")
        return (text + f"; it violates {_listed(broken)}. For instance ({broken[0]}): {example} — "
                f"{res.verdict(metric, broken[0]).claim}.")


def _only_ones(res, props: tuple[str, ...], most: int = 3) -> list[str]:
    """"X is the only metric under study that is both P and Q." for pairs of properties each held by several
    metrics but both by one (at most ``most`` sentences, the pairs whose properties are most widely held first)."""
    if len(res.metrics) < 3:
        return []
    holders = {p: {m for m in res.metrics if res.status(m, p) == "held"} for p in props}
    found = []
    for a, b in combinations(props, 2):
        both = holders[a] & holders[b]
        if len(both) == 1 and len(holders[a]) >= 2 and len(holders[b]) >= 2:
            found.append((-(len(holders[a]) + len(holders[b])), a, b, next(iter(both))))
    found.sort()
    return [f"{m} is the only metric under study that is both {a} and {b}." for _, a, b, m in found[:most]]


def _listed(words: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _case_text(case) -> str:
    return f"[{case.ranking_text}] q={case.counts_text} → {case.value:.4g}"


def _property_grid(res):
    """Metrics × properties coloured by verdict (Okabe–Ito colours: blue held, sky blue held for binary relevance
    only, vermillion violated, grey undefined), the symbol in each cell."""
    import numpy as np
    from matplotlib.colors import ListedColormap
    from matplotlib.figure import Figure

    from meta_eval.statistics.metric_properties.formal import MOFFAT

    from matplotlib.patches import Patch

    levels = {"held": 0, "binary": 1, "violated": 2, "undefined": 3}
    colours = ["#0072B2", "#56B4E9", "#D55E00", "#BBBBBB"]
    codes = np.array([[levels["binary"] if res.binary_only(m, p) else levels[res.status(m, p)]
                       for p in res.properties] for m in res.metrics])
    fig = Figure(figsize=(7.0, 0.35 * len(res.metrics) + 2.3))
    ax = fig.add_subplot()
    ax.imshow(codes, cmap=ListedColormap(colours), vmin=0, vmax=3, aspect="auto")
    labels = ["holds", "holds for binary relevance only", "violated", "undefined"]
    shown = sorted(set(codes.ravel().tolist()))  # a legend of the colours the grid uses
    ax.legend(handles=[Patch(facecolor=colours[k], label=labels[k]) for k in shown], loc="lower center",
              bbox_to_anchor=(0.5, 1.0), ncol=len(shown), frameon=False, fontsize="small")
    for i, m in enumerate(res.metrics):
        for j, p in enumerate(res.properties):
            ax.text(j, i, res.symbol(m, p), ha="center", va="center", fontsize=7,
                    color="white" if codes[i, j] in (0, 2) else "black")
    ax.set_xticks(range(len(res.properties)), res.properties, rotation=60, ha="right")
    ax.set_yticks(range(len(res.metrics)), res.metrics)
    ax.grid(False)
    ax.tick_params(length=0)
    ax.axvline(len(MOFFAT) - 0.5, color="white", linewidth=3)  # Moffat's seven | the other constraints
    fig.tight_layout()
    return fig


def _size_params() -> tuple[Param, ...]:
    """The search sizes as declared parameters (defaults, ranges and meanings from :class:`SearchSizes`)."""
    from dataclasses import fields

    from meta_eval.statistics.metric_properties.formal.result import DOCS, LIMITS, SearchSizes

    return tuple(Param(f.name, f.default, int, DOCS[f.name], within="[{}, {}]".format(*LIMITS[f.name]))
                 for f in fields(SearchSizes) if f.name != "seed")


def _work(data: AnalysisData, params: Mapping[str, Any]) -> float:
    """Measures whose properties are searched (each over the same spaces of rankings and qrels)."""
    return len([m for m in data.measures if m.family.input == "rankings"]) or len(data.raw)


#: One core's seconds (scripts/calibrate_study_cost.py: the analysis with its tables and figures, in a study with
#: jobs=1): {run: (units, seconds)}.
COST = CostModel.fit("measures searched", _work, {"demo, quick": (6, 3.61), "demo": (6, 3.89),
                                                  "TREC-COVID, quick": (6, 3.75), "TREC-COVID": (6, 3.68)})


@analysis("properties", summary="Formal properties of each metric, with a counterexample for each it lacks.",
          title="Formal properties", params=(*_size_params(), ANALYSIS_PARAMS["seed"]),
          needs="measures", order=5, measures=("AP", "nDCG@10", "P@10", "RR", "RBP", "ERR", "GAP", "DCG"),
          cost=COST)
def run(data: AnalysisData, **sizes: int) -> PropertiesResult:
    """Decide Moffat's seven numeric properties, Amigó et al.'s ranking constraints, Kishida's top-heaviness and
    response to a newly found relevant document, and the interval scale for every measure, by exhaustive
    enumeration of small rankings and qrels and a seeded random search beyond them: held (no counterexample in
    the space searched), violated (with the smallest counterexample) or undefined."""
    from meta_eval.measures.resolver import resolve_read
    from meta_eval.statistics.metric_properties.formal import SearchSizes, formal_properties

    measures = [m for m in data.measures if m.family.input == "rankings"]
    new = [m for m in measures if m.family.source]
    res = formal_properties([*new, *(m for m in measures if m not in new)] or resolve_read(data.raw),
                            SearchSizes(**sizes), progress=data.progress)
    text = (f"Each property is decided on two spaces, binary (grades 0-1) and graded (grades 0-{sizes['grades']}): "
            f"{res.sizes.describe('binary')}; {res.sizes.describe('graded')}. Probes: Amigó et al.'s thresholds up "
            f"to n = {sizes['threshold_depth']}, boundedness on lists of up to {sizes['growth_length']} documents. "
            "Held means no counterexample in that space; a violation is shown by the smallest counterexample found. "
            "Sources: Moffat (AIRS 2013), Amigó, Gonzalo & Verdejo (SIGIR 2013), Kishida (NII 2005), Ferrante et "
            "al. (TKDE 2019, SIGIR 2021); the exact tests are in meta_eval.statistics.metric_properties.formal.")
    return PropertiesResult(res, [m.output_name for m in new], text=text)
