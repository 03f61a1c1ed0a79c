"""Informativeness: how much a metric's value says about the list it scores (maximum-entropy method).

For every (run, topic) list and metric, the maximum-entropy probability-at-rank distribution consistent with the
list's value and its grade counts, and the error of the precision-recall curve it infers (Aslam, Yilmaz & Pavlu,
SIGIR 2005; graded as in the GAP paper, Robertson, Kanoulas & Yilmaz, SIGIR 2010, §4.1 and Figure 2). The engine —
expected-value forms, solver, cache — is :mod:`meta_eval.statistics.maxent`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from meta_eval.analyses._base import AnalysisData
from meta_eval.analyses._result import FigureOutput, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.errors import InputError
from meta_eval.core.params import ANALYSIS_PARAMS, Param, parse_bool
from meta_eval.core.progress import CostModel
from meta_eval.rendering.figure_style import COLUMN_WIDTH, FULL_WIDTH, LINE_STYLES, colors_for, styled
from meta_eval.rendering.findings import Finding, Quoter
from meta_eval.rendering.paper_table import PaperTable, best_mask

ASLAM_MEASURES = ("AP", "Rprec", "P@10", "RR")


@dataclass
class Informativeness(Result):
    """``summary`` per measure (and relevance threshold), ``lists`` per list, GAP's error over its threshold
    probabilities (``g_grid``, None without grades 0/1/2 or with no grid), sample curves (``curves``), what the
    metrics predict of one another (``prediction``), Aslam et al.'s binary comparison (``aslam``), and the lists:
    ``n_lists`` solved out of ``n_qualifying`` that pass the filter."""

    summary: pd.DataFrame
    lists: pd.DataFrame
    g_grid: pd.DataFrame | None
    curves: pd.DataFrame
    n_lists: int
    n_qualifying: int
    targets: list[str]
    against: list[str]
    prediction: pd.DataFrame | None = None
    aslam: Any = None
    colors: dict | None = None

    @property
    def rms(self) -> dict[str, float]:
        """Mean RMS error per measure at the lowest relevance threshold (what learning to rank sets beside)."""
        first = self.summary[self.summary["threshold"] == self.summary["threshold"].min()]
        return dict(zip(first["metric"], first["mean_rms"].astype(float)))

    def tables(self) -> list[TableOutput]:
        out = [TableOutput("informativeness", f"Informativeness: mean RMS error (± s.e.) of the precision-recall "
                           f"curves inferred by the maximum-entropy method from each metric's value, over "
                           f"{int(self.summary['n_lists'].max())} lists (of {self.n_lists} solved) where every "
                           "metric converged", self.summary, informativeness_table(self.summary)),
               TableOutput("informativeness_lists", "Every list, with its RMS error per measure", self.lists)]
        if self.g_grid is not None:
            out.append(TableOutput("informativeness_g_grid", "GAP's mean RMS error over its threshold probabilities "
                                   "g = (g1, g2), with nDCG", self.g_grid, g_grid_table(self.g_grid)))
        if self.prediction is not None:
            out.append(TableOutput("prediction", "Each metric predicted from the distribution fitted to another "
                                   "(Aslam et al. 2005): RMS error and Pearson's r", self.prediction))
        if self.aslam is not None:
            out += [TableOutput("aslam_summary", "Binary maximum entropy (grade ≥ 1): mean RMS error",
                                self.aslam.summary, informativeness_table(self.aslam.summary)),
                    TableOutput("aslam_prediction", "Binary maximum entropy: prediction of the other metrics",
                                self.aslam.prediction)]
        return out

    def figures(self) -> list[FigureOutput]:
        shown = self.summary[~self.summary.metric.str.startswith("GAP(") | self.summary.metric.eq("GAP(g=0.5,0.5)")]
        out = [FigureOutput("informativeness_rms", "Mean RMS error of inferred vs actual PR curves (±1 s.e.)",
                            lambda: rms_bar_figure(shown, colors=self.colors))]
        if self.g_grid is not None:
            out.append(FigureOutput("rms_vs_g", "Mean RMS error (±1 s.e.) over GAP's g (GAP paper, Figure 2); nDCG "
                                    "does not depend on g", lambda: figure2(self.g_grid, colors=self.colors)))
        out.append(FigureOutput("inferred_pr_curves", "Inferred (maximum-entropy) and actual precision-recall "
                                "curves, relevant: grade ≥ 1, for sample lists that retrieve most of their topic's "
                                "relevant documents", lambda: inferred_curves_figure(self.curves, colors=self.colors)))
        return out

    def findings(self) -> list[Finding]:
        """How informative each metric under study is against the references: mean RMS error ± s.e. with the
        number of lists, and whether the 95 % intervals (mean ± 1.96 s.e.) separate them."""
        return informativeness_findings(self.compact, "informativeness", self.targets, self.against)


def informativeness_table(summary: pd.DataFrame, *, decimals: int = 3) -> PaperTable:
    """One row per metric; per relevance threshold t: mean RMS error of the inferred PR curves with its standard
    error (``RMS, grade ≥ t``, ``s.e., grade ≥ t``); the number of lists compared, once (``lists``), or per threshold
    where they differ (``lists, grade ≥ t``: a list without a document at grade t has no curve there). How each
    expected value
    was found and the failures are in the CSV (a metric with more than 10 % failed lists is marked †). Bold: the
    lowest error per threshold."""
    parts = []
    for level, f in summary.groupby("threshold", sort=True):
        f = f.set_index("metric")
        cols = {f"RMS, grade ≥ {level}": f["mean_rms"]}
        if "sem_rms" in f:
            cols[f"s.e., grade ≥ {level}"] = f["sem_rms"]
        parts.append(pd.DataFrame(cols))
    values = pd.concat(parts, axis=1).reindex(list(dict.fromkeys(summary["metric"])))
    if "n_lists" in summary:
        per_level = {level: f.set_index("metric")["n_lists"].reindex(values.index)
                     for level, f in summary.groupby("threshold", sort=True)}
        if len({tuple(n.fillna(-1)) for n in per_level.values()}) == 1:
            values["lists"] = next(iter(per_level.values())).astype(int)
        else:  # the finding quotes its threshold's count (the least of them was quoted as every threshold's)
            for level, n in per_level.items():
                values[f"lists, grade ≥ {level}"] = n.astype(int)
    values.index.name = "metric"
    markers = None
    notes = ["Lower RMS error: the metric's value says more about the list's precision-recall curve."]
    if "reliable" in summary:
        unreliable = ~summary.groupby("metric", sort=False)["reliable"].all().reindex(values.index)
        if unreliable.any():
            markers = pd.DataFrame("", index=values.index, columns=values.columns)
            markers.loc[unreliable, values.columns[0]] = "†"
            notes.append("†: the solve failed on more than 10 % of the lists (see the CSV).")
    if "method" in summary and (summary["method"] == "sampled").any():
        notes.append("Sampled forms (approximate): " + ", ".join(
            dict.fromkeys(summary.loc[summary["method"] == "sampled", "metric"])) + ".")
    best = {c: "min" for c in values.columns if c.startswith("RMS")}
    counts = {c: 0 for c in values.columns if c.startswith("lists")}
    return PaperTable(values, decimals={**counts, "*": decimals}, bold=best_mask(values, best, decimals),
                      markers=markers, note=" ".join(notes))


def g_grid_table(table: pd.DataFrame, *, decimals: int = 3) -> PaperTable:
    """GAP's mean RMS error over its threshold probabilities (rows g = (g1, g2)), per relevance threshold; the lines
    that do not depend on g (e.g. nDCG) as one row each. Bold: the lowest error per threshold."""
    gap = table[table["line"] == "GAP"]
    rows = {}
    for (g1, g2), f in gap.groupby(["g1", "g2"], sort=True):
        rows[f"GAP(g={g1:g},{g2:g})"] = f.set_index("threshold")["mean_rms"]
    for line, f in table[table["line"] != "GAP"].groupby("line", sort=False):
        rows[line] = f.groupby("threshold")["mean_rms"].first()
    values = pd.DataFrame(rows).T
    values.columns = [f"RMS, grade ≥ {t}" for t in values.columns]
    values.index.name = "metric"
    best = {c: "min" for c in values.columns}
    return PaperTable(values, decimals=decimals, bold=best_mask(values, best, decimals))


def informativeness_findings(tables: Mapping[str, PaperTable], name: str, targets: Sequence[str],
                             references: Sequence[str], threshold: int = 1) -> list[Finding]:
    """The finding of :meth:`Informativeness.findings` from a compact table (also used for the binary one)."""
    q = Quoter(tables)
    t = tables[name]
    mean_col, se_col = (f"{what}, grade ≥ {threshold}" for what in ("RMS", "s.e."))
    if mean_col not in t.values.columns:
        return []
    rows = [str(r) for r in t.values.index]
    refs = [r for r in references if r in rows]
    studied = [x for x in targets if x in rows and x not in refs]

    def number(row, column) -> float:
        return float(pd.to_numeric(pd.Series([t.values.loc[row, column]]), errors="coerce").iloc[0])

    if not studied or not all(number(x, mean_col) == number(x, mean_col) for x in studied):
        return []

    def quoted(row) -> str:
        return f"{row} {q(name, row, mean_col)} ± {q(name, row, se_col)}"

    clauses = []
    for x in studied:
        m, s = number(x, mean_col), number(x, se_col)
        lower = [r for r in refs if m + 1.96 * s < number(r, mean_col) - 1.96 * number(r, se_col)]
        higher = [r for r in refs if number(r, mean_col) + 1.96 * number(r, se_col) < m - 1.96 * s]
        same = [r for r in refs if r not in lower and r not in higher]
        verdict = ", ".join(part for part in (
            f"more informative than {' and '.join(lower)}" if lower else "",
            f"less informative than {' and '.join(higher)}" if higher else "",
            f"not distinguishable from {' and '.join(same)}" if same else "") if part)
        flagged = t.markers is not None and t.markers.loc[x].str.contains("†").any()
        clauses.append(f"{quoted(x)}" + (f": {verdict}" if verdict else "")
                       + (" (its solve failed on more than 10 % of the lists)" if flagged else ""))
    lists = next((c for c in (f"lists, grade ≥ {threshold}", "lists") if c in t.values.columns), None)
    n = q(name, rows[0], lists) if lists else "?"
    references_text = (" and ".join(quoted(r) for r in refs) + "; ") if refs else ""
    sentence = (f"Informativeness (mean RMS error ± s.e. of the precision-recall curves inferred from a metric's "
                f"value over {n} lists, relevant: grade ≥ {q.param('threshold', threshold)}; lower is more "
                f"informative; a difference is claimed only where the {q.param('level', 95)} % intervals do not "
                f"overlap): {references_text}{'; '.join(clauses)}.")
    return [q.finding(sentence)]


# ------------------------------------------------------------------------------------------------------------------
# The declaration
# ------------------------------------------------------------------------------------------------------------------


def _grid_problem(step: Any) -> str | None:
    from meta_eval.statistics.maxent.pr_inference import g_grid

    if step == 0:
        return None
    try:
        g_grid(step)
    except InputError as exc:
        return str(exc).split(" ", 3)[-1] if str(exc).startswith("g-grid step") else str(exc)
    return None


def _open_cache(params) -> Any:
    """The cache folder, checked before any work: a folder the user named must be writable (an error), the default
    one may not be (one warning line, and no cache)."""
    from meta_eval.statistics.maxent.cache import MemCache, default_folder

    if params["no_cache"]:
        return None
    return MemCache.open(params["cache"] or default_folder(), required=bool(params["cache"]))


def _warm_solver():
    """Start compiling (or loading from cache) the MEM solver's numba kernel in a thread; returns the thread.

    Most of numba's compilation runs in LLVM without the GIL, so on a fresh install it overlaps the analyses before
    informativeness, whose worker processes then load the cached kernel instead of each compiling it.
    """
    import threading

    from meta_eval.statistics.maxent.solver import warm_up

    thread = threading.Thread(target=warm_up, name="meta-eval-warm-solver", daemon=True)
    thread.start()
    return thread


def _work(data: AnalysisData, params: Mapping[str, Any]) -> float:
    """Ranks of the lists solved × metrics solved: the sample's lists under the metrics asked, GAP's g grid and
    the binary comparison's, less the distributions the MEM cache already holds (they cost nothing)."""
    if data.collection is None:
        return 0.0
    try:
        sample, _ = _sample(data, params["lists"], params["min_relevant"], params["min_high"], params["seed"])
    except InputError:  # no list passes the filter: the analysis stops at once
        return 0.0
    batch = sample.batch
    names = [*_asked(data), *_additions(data, params["g_grid"], batch.n_grades)]
    todo = [m for m in names if m not in _cached(_open_cache(params), batch, names, params["counts"])]
    return float(batch.lengths.sum()) * (len(todo) + 4 * bool(params["aslam"]))


def _asked(data: AnalysisData) -> list[str]:
    """The metrics of the analysis as the workers rebuild them (each one's specification)."""
    return [data.specs.get(name, name) for name in data.raw]


def _additions(data: AnalysisData, g_grid: float, n_grades: int) -> list[str]:
    """The metrics solved beyond those asked: GAP over its g grid and the baselines of the GAP paper's Figure 2
    (grades 0/1/2 only)."""
    from meta_eval.statistics import maxent as mem

    if not g_grid or n_grades != 3:
        return []
    asked = set(_asked(data)) | set(data.raw)
    return [m for m in mem.figure2_measures(mem.g_grid(g_grid)) if m not in asked]


def _cached(cache, batch, names: Sequence[str], counts: str) -> set[str]:
    """The metrics whose distributions for these lists the cache holds (:class:`~meta_eval.statistics.maxent.
    cache.MemCache`, or None: none)."""
    if cache is None:
        return set()
    keys = {m: cache.key(batch, m, counts, {}) for m in names}
    return {m for m, key in keys.items() if key is not None and cache.path(key, m).exists()}


#: One core's seconds (scripts/calibrate_study_cost.py: the analysis with its tables and figures, in a study with
#: jobs=1 and no cache): {run: (units, seconds)}.
COST = CostModel.fit("list ranks × metrics solved", _work,
                     {"demo, quick": (7500, 1.51), "demo": (598320, 2.85),
                      "TREC-COVID, quick": (64550, 1.74), "TREC-COVID": (4.743e+06, 9.14)})


def _applies(data: AnalysisData) -> str | None:
    """A relevance level other than 1 is not for this analysis: it was ignored (the solver's forms read grade >=
    1, the table said nothing of -l)."""
    level = data.collection.options.get("rel_level", 1) if data.collection is not None else 1
    if level == 1:
        return None
    return (f"analysis informativeness: --rel-level {level} does not apply; each metric is solved as defined over "
            f"the grades, and the PR curves are inferred at each relevance threshold: give --threshold {level} (-t) "
            f"for relevance at grade >= {level}")


@analysis("informativeness", quick=dict(lists=8, g_grid=0.5, no_cache=True),
          summary="Informativeness by the maximum-entropy method.",
          title="Informativeness (maximum-entropy method)", order=80,
          params=(Param("lists", 300, int, "lists solved: a seeded sample of at most this many of the lists that "
                        "pass the filter (0: every one)", within="[0, inf)"),
                  Param("min_relevant", 5, int, "filter: lists that retrieve at least this many relevant (grade >= "
                        "1) documents", within="[0, inf)"),
                  Param("min_high", 5, int, "filter: ... and this many of the top grade (GAP paper: 5 and 5)",
                        within="[0, inf)"),
                  Param("thresholds", None, int, "relevance thresholds of the PR curves; default: every grade",
                        within="[1, inf)", many=True, flags=("--threshold", "-t")),
                  Param("protocol", "recall-changes", str, "PR-curve error at the points where recall changes (GAP "
                        "paper) or at the 11 standard recall levels", choices=("recall-changes", "11pt")),
                  Param("align", "recall", str, "recall-changes protocol: read the inferred curve at the same recall "
                        "or the same rank", choices=("recall", "rank")),
                  Param("counts", "retrieved", str, "expected grade counts: retrieved by the run or the qrels "
                        "totals", choices=("retrieved", "qrels")),
                  Param("g_grid", 0.1, float, "GAP over its threshold probabilities g = (g1, 1 - g1), grades 0/1/2 "
                        "(the GAP paper's Figure 2): the step of g1; 0 for none (another g: -m 'GAP(g=0.3,0.7)')",
                        check=_grid_problem, domain="0, or a number in (0, 1] that divides 1 (0.5, 0.25, 0.2, ...)"),
                  Param("predict", None, str, "also predict these metrics from each distribution (prediction.csv: "
                        "RMS error and Pearson's r)", many=True, domain="measure names"),
                  Param("aslam", False, parse_bool, "also run Aslam et al.'s binary comparison (AP, Rprec, P@10, RR)",
                        flags=("--aslam/--no-aslam",)),
                  Param("cache", "", str, "folder of solved distributions, keyed by the lists, the metric and its "
                        "code, the options and the versions (a rerun resumes from it); default: ~/.cache/meta-eval/mem",
                        domain="a folder"),
                  Param("no_cache", False, parse_bool, "solve everything anew, without the cache",
                        flags=("--no-cache",)),
                  ANALYSIS_PARAMS["seed"]),
          prepare=_warm_solver, before=_open_cache, parallel=True, cost=COST, applies=_applies)
def run(data: AnalysisData, *, lists: int, min_relevant: int, min_high: int, thresholds: tuple[int, ...] | None,
        protocol: str, align: str, counts: str, g_grid: float, predict: tuple[str, ...] | None, aslam: bool,
        cache: str, no_cache: bool, seed: int) -> Informativeness:
    """Informativeness by the maximum-entropy method, for any metric (a name, module:function or
    file.py:function): for every list and metric, the maximum-entropy distribution of relevance given the
    metric's value and the grade counts, and the RMS error of the PR curves it infers. Metrics are compared on
    the lists where every metric converged; GAP over its threshold probabilities g (the GAP paper's Figure 2)."""
    from meta_eval.statistics import maxent as mem

    cache_dir = _open_cache({"cache": cache, "no_cache": no_cache})
    sample, n_qualifying = _sample(data, lists, min_relevant, min_high, seed)
    ready = data.prepared.pop("informativeness", None)
    if ready is not None:
        ready.join()
    measures = _asked(data)  # workers rebuild each from its specification
    grid = mem.g_grid(g_grid) if g_grid and sample.batch.n_grades == 3 else None
    additions = _additions(data, g_grid, sample.batch.n_grades)
    _announce(data, additions, _cached(cache_dir, sample.batch, measures + additions, counts),
              float(sample.batch.lengths.sum()))
    mem.check_plugins(sample, measures)
    # what was asked, then what was added (its own progress line, counting the metrics the announcement names)
    solve = dict(counts=counts, cache_dir=cache_dir, progress=data.progress, jobs=data.jobs, scheduler=data.scheduler)
    solved = mem.solve_cached_many(sample.batch, measures, **solve)
    by_name = dict(zip(measures, solved))
    by_name.update(zip(additions, mem.solve_cached_many(sample.batch, additions, **solve) if additions else []))
    result = mem.informativeness(sample, measures, thresholds, counts=counts, protocol=protocol, align=align,
                                 solved=solved)
    text = _method_text(sample.batch.n_lists, n_qualifying, lists, min_relevant, min_high, protocol, counts, seed)
    for warning in result.warnings:  # failure rates above 1 % (above 10 %: the metric's row is unreliable)
        print(f"meta-eval: warning: informativeness: {warning}", file=sys.stderr)
        text += f"\n\n**Warning:** {warning}."
    grid_table = None
    if grid is not None:
        grid_table = mem.gap_figure2(sample, grid=grid, filter_lists=False, protocol=protocol, counts=counts,
                                     solved=[by_name[m] for m in mem.figure2_measures(grid)]).table
    prediction = None if not predict else mem.prediction_table(sample, measures, list(predict), counts=counts,
                                                               cache_dir=cache_dir, jobs=data.jobs,
                                                               scheduler=data.scheduler)
    binary = None if not aslam else mem.aslam_binary(sample, ASLAM_MEASURES, filter_lists=False, protocol=protocol,
                                                     counts=counts, cache_dir=cache_dir, jobs=data.jobs,
                                                     scheduler=data.scheduler)
    curves = _inferred_curves(sample, measures, seed=seed)
    return Informativeness(result.summary, result.lists, grid_table, curves, sample.batch.n_lists, n_qualifying,
                           data.targets, list(data.against), prediction, binary, data.colors, text=text)


def _announce(data: AnalysisData, additions: list[str], cached: set[str], ranks: float) -> None:
    """One line on stderr when more is solved than the metrics under study: each group of metrics — those under
    study, the references they are compared with, GAP's g grid with the GAP paper's Figure 2 baselines — with its
    estimated cost (the cost model's seconds of one core; nothing for what the MEM cache holds) and how to leave
    the added ones out."""
    from meta_eval.core.progress import duration

    references = [m for m in data.raw if m in set(data.against)]
    targets = [m for m in data.raw if m not in set(references)]
    if not references and not additions:
        return
    specs = {name: data.specs.get(name, name) for name in data.raw}

    def group(what: str, names: list[str], off: str = "") -> str:
        todo = [m for m in names if specs.get(m, m) not in cached]
        held = f", {len(names) - len(todo)} cached" if len(todo) < len(names) else ""
        cost = COST.per_unit_s * ranks * len(todo)
        return (f"{len(names)} {what} ({', '.join(names)}: {f'{cost:.1f} s' if cost < 60 else duration(cost)}{held}"
                + (f"; {off}" if off else "") + ")")

    groups = [group("under study", targets)]
    if references:
        groups.append(group("reference(s)", references, "--against none leaves them out"))
    if additions:
        groups.append(group("for GAP over its g grid and the GAP paper's Figure 2", additions,
                            "g_grid=0 leaves them out: --g-grid 0, in a study --informativeness-g-grid 0"))
    print(f"meta-eval: informativeness: solving {len(data.raw) + len(additions)} metrics, estimated in seconds of "
          f"one core: {', '.join(groups[:-1])} and {groups[-1]}", file=sys.stderr)


def _method_text(n_lists: int, n_qualifying: int, limit: int, min_relevant: int, min_high: int, protocol: str,
                 counts: str, seed: int) -> str:
    sampled = (f"a seeded sample (seed {seed}) of {n_lists} of the {n_qualifying}" if n_lists < n_qualifying
               else f"all {n_lists}")
    where = "at the points where recall changes" if protocol == "recall-changes" else "at the 11 recall levels"
    return (f"Maximum-entropy method (Aslam, Yilmaz & Pavlu 2005; graded as in the GAP paper §4.1) on {sampled} "
            f"(run, topic) lists that retrieve at least {min_relevant} relevant (grade ≥ 1) and {min_high} top-grade "
            f"documents (the GAP paper's filter; at most {limit or 'every'} lists). For each metric, the "
            "maximum-entropy probability-at-rank distribution consistent with the list's value and its "
            f"{counts} grade counts is solved; its expected precision-recall curve is compared with the actual one "
            f"(RMS error {where}). Lower is more informative. Metrics are compared on the same lists: those on "
            "which every metric's solve converged (a list failing for one metric is left out of every mean); the "
            "table gives their number and the mean ± 1 standard error, informativeness.csv each metric's failures "
            "and how its expected value was found.")


def _sample(data: AnalysisData, limit: int, min_relevant: int, min_high: int, seed: int):
    """The lists of the analysis: those that pass the filter, a seeded sample of ``limit``; and how many pass."""
    from meta_eval.core.params import rng
    from meta_eval.statistics import maxent as mem

    retrieved = mem.retrieved_grade_counts(data.collection)
    high = min_high if retrieved.shape[1] > 2 else 0
    eligible = mem.qualifying_lists(retrieved, min_relevant=min_relevant, min_high=high)
    if eligible.size == 0:
        raise InputError(f"no list retrieves {min_relevant} relevant and {high} top-grade documents; lower "
                         "--min-relevant / --min-high")
    n = eligible.size
    if limit and n > limit:
        eligible = eligible[np.sort(rng(seed, "informativeness").choice(n, size=limit, replace=False))]
    return mem.lists_from_collection(data.collection, index=eligible), n  # only the sample is built


def _inferred_curves(lists, measures: list[str], seed: int, n_lists: int = 3) -> pd.DataFrame:
    """Tidy actual and inferred PR curves (relevant: grade >= 1) for a few sample lists, drawn among those that
    retrieve at least half of their topic's relevant documents (else those that retrieve the most): a list that
    retrieves a tenth of them shows a curve that ends at recall 0.1."""
    from meta_eval.core.params import rng
    from meta_eval.statistics import maxent as mem

    batch = lists.batch
    R = batch.counts[:, 1:].sum(1)
    found = (batch.grades >= 1).sum(1) / np.maximum(R, 1)
    pool = np.flatnonzero(found >= 0.5)
    if pool.size < n_lists:
        pool = np.argsort(-found, kind="stable")[:max(n_lists, pool.size)]
    pick = np.sort(rng(seed, "informativeness curves").choice(pool, size=min(n_lists, pool.size), replace=False))
    sample = lists.subset(pick)
    batch, R = sample.batch, R[pick]
    frames = []
    actual = np.cumsum(batch.grades >= 1, axis=1)
    for i in range(batch.n_lists):
        n = batch.lengths[i]
        ranks = np.arange(1, n + 1)
        seen = actual[i, :n] > 0  # the curve starts at the first relevant document (recall 0 has no precision)
        frames.append(pd.DataFrame({"list": f"{sample.runs[i]}, topic {sample.topics[i]}", "source": "actual",
                                    "recall": actual[i, :n][seen] / R[i], "precision": actual[i, :n][seen] /
                                    ranks[seen]}))
    for m in measures:
        res = mem.solve_mem(batch, m)
        prec, rec = mem.expected_precision_recall(res.survival(1), R, batch.lengths)
        for i in range(batch.n_lists):
            n = batch.lengths[i]
            frames.append(pd.DataFrame({"list": f"{sample.runs[i]}, topic {sample.topics[i]}",
                                        "source": f"MEM from {res.measure}", "recall": rec[i, :n],
                                        "precision": prec[i, :n]}))
    return pd.concat(frames, ignore_index=True)


# ------------------------------------------------------------------------------------------------------------------
# Figures
# ------------------------------------------------------------------------------------------------------------------

_MARKERS = ("o", "s", "D", "^", "v")


def _threshold_label(level) -> str:
    """``relevant: grade ≥ t``, as the tables say it (with grades 0..2, "grade 2" would read as exactly 2)."""
    return f"relevant: grade \u2265 {int(level)}"


@styled
def figure2(table: pd.DataFrame, *, title: str | None = None, colors: Mapping[str, object] | None = None,
            width: float = FULL_WIDTH, height: float = 2.6):
    """Mean RMS error of inferred vs actual PR curves over the (g1, g2) sweep, one panel per threshold.

    GAP's curve is drawn over g1 (with g2 = 1 - g1 for three grades) with ±1 s.e. error bars; the lines that do
    not depend on g (nDCG, nDCG with exponential gain) are horizontal, with a ±1 s.e. band.

    Parameters
    ----------
    table : DataFrame
        :attr:`meta_eval.statistics.maxent.pr_inference.Figure2Result.table` (columns line, g1, g2, threshold,
        mean_rms, optional sem_rms).
    title : str, optional
        Figure title.
    colors : mapping line -> colour, optional
        The study's metric colours (``GAP``, ``nDCG``, ...).
    """
    from matplotlib.figure import Figure

    need = {"line", "g1", "g2", "threshold", "mean_rms"}
    if not need <= set(table.columns):
        raise InputError(f"figure2 needs columns {sorted(need)}; got {list(table.columns)}")
    data = table.copy()
    if "sem_rms" not in data:
        data["sem_rms"] = np.nan
    numeric = bool(np.allclose(data.g1 + data.g2, 1.0))
    order = sorted(set(zip(data.g1, data.g2)))
    position = {g: (g[0] if numeric else i) for i, g in enumerate(order)}
    data["x"] = [position[g] for g in zip(data.g1, data.g2)]
    lines = list(dict.fromkeys(data.line))
    palette = colors_for(lines, colors)
    levels = sorted(data.threshold.unique())
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, len(levels), squeeze=False)[0]
    for ax, level in zip(axes, levels):
        sub = data[data.threshold == level]
        for k, line in enumerate(lines):
            part = sub[sub.line == line].sort_values("x")
            if part.empty:
                continue
            if part.mean_rms.nunique() == 1 and len(part) > 1:
                y, e = float(part.mean_rms.iloc[0]), float(part.sem_rms.iloc[0])
                ax.axhline(y, color=palette[line], linestyle=(0, (4, 2)) if k % 2 else (0, (1, 1.5)), lw=1.2,
                           label=line)
                if e == e:
                    ax.axhspan(y - e, y + e, color=palette[line], alpha=0.15, lw=0)
            else:
                ax.errorbar(part.x, part.mean_rms, yerr=part.sem_rms.where(part.sem_rms.notna()), color=palette[line],
                            marker=_MARKERS[k % len(_MARKERS)], markersize=3.5, lw=1.2, capsize=1.5, label=line)
        if numeric:
            ax.set_xlim(-0.03, 1.03)
            ax.set_xlabel("GAP's g1 (g2 = 1 − g1)")
        else:
            ax.set_xticks(range(len(order)))
            ax.set_xticklabels([f"({a:g}, {b:g})" for a, b in order], rotation=60, ha="right")
            ax.set_xlabel("(g1, g2)")
        ax.set_ylabel("mean RMS error")
        ax.set_title(_threshold_label(level), fontsize="medium")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", frameon=False)
    if title:
        fig.suptitle(title)
    return fig


@styled
def rms_bar_figure(summary: pd.DataFrame, *, title: str | None = None, colors: Mapping[str, object] | None = None,
                   width: float | None = None, height: float = 2.4):
    """Mean RMS error of the inferred PR curves per metric, ±1 s.e., one marker per relevance threshold.

    ``summary`` has columns ``metric, threshold, mean_rms`` and optionally ``sem_rms`` (a study summary). Lower is
    more informative.
    """
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    need = {"metric", "threshold", "mean_rms"}
    if not need <= set(summary.columns):
        raise InputError(f"rms_bar_figure needs columns {sorted(need)}; got {list(summary.columns)}")
    metrics = list(dict.fromkeys(summary.metric))
    levels = sorted(summary.threshold.unique())
    palette = colors_for(metrics, colors)
    fig = Figure(figsize=(width or min(FULL_WIDTH, max(COLUMN_WIDTH, 1.2 + 0.55 * len(metrics))), height),
                 layout="constrained")
    ax = fig.subplots()
    offsets = np.linspace(-0.15, 0.15, len(levels)) if len(levels) > 1 else [0.0]
    for k, (level, dx) in enumerate(zip(levels, offsets)):
        part = summary[summary.threshold == level].set_index("metric").reindex(metrics)
        sem = part["sem_rms"].to_numpy(float) if "sem_rms" in part else None
        for i, m in enumerate(metrics):
            if part.mean_rms.iloc[i] != part.mean_rms.iloc[i]:
                continue
            ax.errorbar(i + dx, part.mean_rms.iloc[i], yerr=None if sem is None else sem[i], color=palette[m],
                        marker=_MARKERS[k % len(_MARKERS)], markersize=4.5, capsize=2, lw=1.0,
                        markerfacecolor=palette[m] if k == 0 else "white")
    ax.set_xticks(range(len(metrics)))
    ax.set_xticklabels(metrics, rotation=30 if max(map(len, metrics)) > 6 else 0,
                       ha="right" if max(map(len, metrics)) > 6 else "center")
    ax.set_xlim(-0.5, len(metrics) - 0.5)
    ax.set_ylabel("mean RMS error")
    handles = [Line2D([], [], color="0.3", marker=_MARKERS[k % len(_MARKERS)], linestyle="none",
                      markerfacecolor="0.3" if k == 0 else "white", label=_threshold_label(level))
               for k, level in enumerate(levels)]
    ax.legend(handles=handles, loc="best", frameon=False)
    if title:
        ax.set_title(title)
    return fig


@styled
def inferred_curves_figure(curves: pd.DataFrame, *, colors: Mapping[str, object] | None = None,
                           height: float = 2.3):
    """Actual and inferred (maximum-entropy) precision-recall curves, one panel per list.

    ``curves`` has columns ``list, source, recall, precision`` (source ``actual`` or ``MEM from <metric>``); the
    actual curve is a broad light-grey band under the others (black would be GAP's colour, a reference's, and a
    thin solid line would be AP's style), each inferred curve has its metric's colour and its own line style.
    """
    from matplotlib.figure import Figure

    need = {"list", "source", "recall", "precision"}
    if not need <= set(curves.columns):
        raise InputError(f"inferred_curves_figure needs columns {sorted(need)}; got {list(curves.columns)}")
    names = list(dict.fromkeys(curves["list"]))
    sources = [s for s in dict.fromkeys(curves["source"]) if s != "actual"]
    metric_of = {s: s.removeprefix("MEM from ") for s in sources}
    palette = colors_for(list(metric_of.values()), colors)
    fig = Figure(figsize=(min(FULL_WIDTH, 0.9 + height * 0.95 * len(names)), height), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(names), sharey=True))
    for ax, name in zip(axes, names):
        part = curves[curves["list"] == name]
        actual = part[part.source == "actual"]
        ax.plot(actual.recall, actual.precision, color="0.8", lw=3.2, solid_capstyle="butt", zorder=1,
                label="actual")
        for k, source in enumerate(sources):
            s = part[part.source == source]
            ax.plot(s.recall, s.precision, color=palette[metric_of[source]], lw=1.2,
                    linestyle=LINE_STYLES[k % len(LINE_STYLES)], label=source, zorder=2)
        ax.set_title(name, fontsize="small")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("recall")
    axes[0].set_ylabel("precision")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", frameon=False)
    return fig
