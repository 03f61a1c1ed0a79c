"""Informativeness studies: PR-curve error of MEM distributions, prediction of other metrics, GAP Figure 2, Aslam.

* :func:`informativeness` -- for each metric, solve MEM for every list and measure the RMS error of the inferred PR
  curve at each relevance threshold (Aslam, Yilmaz & Pavlu, SIGIR 2005; Robertson, Kanoulas & Yilmaz, SIGIR 2010,
  Sec. 4.1). Results per list and means per metric and threshold.
* :func:`prediction_table` -- from the MEM distribution fitted to metric A, E[B] for every metric B, against the
  actual B: RMS error and Pearson r (Aslam et al.'s "prediction of other measures").
* :func:`gap_figure2` -- the GAP paper's Figure 2: mean RMS error of GAP's inferred curves over the (g1, g2) sweep,
  against nDCG's (exponential gain, log discount; linear gain as a second line), for "grade >= 1" and "grade 2".
* :func:`aslam_binary` -- Aslam et al.'s binary comparison: AP, R-prec, P@10, RR (mean RMS and prediction table).

Solved distributions can be cached on disk (``cache_dir``; :mod:`meta_eval.statistics.maxent.cache`): one verified ``.npz`` per
metric and list set, keyed by everything the result depends on, so an interrupted study resumes where it stopped.
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from meta_eval.core.errors import InputError
from meta_eval.core.params import format_value
from meta_eval.statistics.maxent.batch import ListBatch
from meta_eval.statistics.maxent.cache import MemCache, open_cache
from meta_eval.statistics.maxent.curves import pr_error
from meta_eval.statistics.maxent.result import MEMResult
from meta_eval.model.rankings import Rankings


@dataclass
class Lists:
    """A :class:`ListBatch` with the run and topic of each list."""

    batch: ListBatch
    runs: np.ndarray
    topics: np.ndarray

    def subset(self, index) -> "Lists":
        index = np.asarray(index)
        return Lists(self.batch.subset(index), self.runs[index], self.topics[index])

    def binarise(self, rel_level: int = 1) -> "Lists":
        return Lists(self.batch.binarise(rel_level), self.runs, self.topics)


def lists_from_collection(collection, index: np.ndarray | None = None) -> Lists:
    """Every non-empty (run, topic) list of a core ``Collection``, block by block, padded to the longest.

    ``index`` (ascending positions in that order, e.g. from :func:`retrieved_grade_counts`) keeps only those lists;
    the others are never copied, so a sample of a large collection costs memory for the sample alone.
    """
    systems = np.asarray(collection.systems, dtype=object)
    topics = np.asarray(collection.topics, dtype=object)
    parts, offset = [], 0
    for block in collection.blocks:
        r = block.rankings
        s_idx, t_idx = np.nonzero(r.n_ret > 0)
        if index is not None:
            mine = index[(index >= offset) & (index < offset + len(s_idx))] - offset
            offset += len(s_idx)
            s_idx, t_idx = s_idx[mine], t_idx[mine]
        parts.append((r.grades[s_idx, t_idx], r.n_ret[s_idx, t_idx], r.counts[t_idx], systems[s_idx],
                      topics[block.topics[t_idx]]))
    depth = max([int(p[1].max(initial=0)) for p in parts] + [1])
    grades = np.concatenate([np.pad(g[:, :depth], ((0, 0), (0, depth - min(g.shape[1], depth)))) for g, *_ in parts])
    batch = ListBatch.from_rankings(Rankings(grades, np.concatenate([p[1] for p in parts]),
                                             np.concatenate([p[2] for p in parts])))
    return Lists(batch, np.concatenate([p[3] for p in parts]), np.concatenate([p[4] for p in parts]))


def retrieved_grade_counts(collection) -> np.ndarray:
    """int (L, K): documents of each grade retrieved by every list of :func:`lists_from_collection`, in its order
    (unjudged and judged-negative documents count as grade 0), read from the blocks without building the lists."""
    n_grades = max(collection.counts.shape[1], 2)
    out = []
    for block in collection.blocks:
        r = block.rankings
        s_idx, t_idx = np.nonzero(r.n_ret > 0)
        counts = np.zeros((len(s_idx), n_grades), dtype=np.int64)
        for k in range(1, n_grades):
            counts[:, k] = np.count_nonzero(r.grades == k, axis=-1)[s_idx, t_idx]
        counts[:, 0] = r.n_ret[s_idx, t_idx] - counts[:, 1:].sum(1)
        out.append(counts)
    return np.concatenate(out) if out else np.zeros((0, n_grades), dtype=np.int64)


def select_lists(lists: Lists, min_relevant: int = 5, min_high: int = 5, rel_level: int = 1,
                 high_level: int | None = None) -> Lists:
    """Lists that retrieved at least ``min_relevant`` documents of grade >= rel_level and ``min_high`` of grade
    >= high_level (default the top grade) -- the GAP paper's filter (5 relevant and 5 highly relevant)."""
    return lists.subset(qualifying_lists(lists.batch.retrieved_counts(), min_relevant, min_high, rel_level,
                                         high_level))


def qualifying_lists(retrieved: np.ndarray, min_relevant: int = 5, min_high: int = 5, rel_level: int = 1,
                     high_level: int | None = None) -> np.ndarray:
    """Positions of the lists that pass :func:`select_lists`' filter, from their retrieved grade counts (L, K)
    (:meth:`ListBatch.retrieved_counts`, or :func:`retrieved_grade_counts` of a collection)."""
    high_level = retrieved.shape[1] - 1 if high_level is None else high_level
    keep = (retrieved[:, rel_level:].sum(1) >= min_relevant) & (retrieved[:, high_level:].sum(1) >= min_high)
    return np.flatnonzero(keep)


# ------------------------------------------------------------------------------------------------------------
# Solving with a cache
# ------------------------------------------------------------------------------------------------------------

def solve_cached(batch: ListBatch, measure, *, counts: str = "retrieved", cache_dir: str | Path | None = None,
                 progress: bool = False, **solver_options) -> MEMResult:
    """:func:`solve_mem` with an on-disk cache keyed by everything that determines the result: the lists, the
    metric and the code behind it, the count mode, the solver options and versions (:mod:`meta_eval.statistics.maxent.cache`)."""
    return solve_cached_many(batch, [measure], counts=counts, cache_dir=cache_dir, progress=progress,
                             **solver_options)[0]


def solve_cached_many(batch: ListBatch, measures: Sequence, *, counts: str = "retrieved",
                      cache_dir: "str | Path | MemCache | None" = None, progress: bool = False,
                      **solver_options) -> list[MEMResult]:
    """:func:`solve_cached` for several metrics: those not in the cache are solved together
    (:func:`~meta_eval.statistics.maxent.solver.solve_mems`, one pass of the workers over all their chunks).

    ``cache_dir`` is a folder (an error if it cannot be written or lacks the room for the entries to write — found
    before any solving) or a :class:`~meta_eval.statistics.maxent.cache.MemCache` already opened; :mod:`meta_eval.statistics.maxent.cache`
    says what is keyed, checked and warned about.
    """
    from meta_eval.statistics.maxent.solver import solve_mems

    cache = open_cache(cache_dir)
    keys = [cache.key(batch, m, counts, solver_options) if cache is not None else None for m in measures]
    out: list[MEMResult | None] = [cache.load(key, m, batch) if key is not None else None
                                   for key, m in zip(keys, measures)]
    todo = [k for k, res in enumerate(out) if res is None]
    if cache is not None and any(keys[k] is not None for k in todo):
        cache = cache.check_space(batch, sum(keys[k] is not None for k in todo))
    solved = solve_mems(batch, [measures[k] for k in todo], counts=counts, progress=progress, **solver_options)
    for k, res in zip(todo, solved):
        out[k] = res
        if cache is not None and keys[k] is not None:
            cache.store(keys[k], measures[k], res)
    return out


def check_plugins(lists: Lists, measures: Sequence) -> None:
    """Score every metric that is not meta-eval's own on the actual lists once, before any solving: a plug-in that
    breaks its contract is reported with the run and topic of the list (the solver would meet it on its own probe
    lists, or in a worker)."""
    import inspect

    from meta_eval.measures.plugins import PluginError
    from meta_eval.measures.registry import Measure, is_builtin
    from meta_eval.measures.resolver import load_metric
    from meta_eval.statistics.maxent.verify import score_batch

    for spec in measures:
        try:
            found = load_metric(spec) if isinstance(spec, (str, Measure)) else []
        except InputError:
            continue  # a name only MEM knows; a bad name is reported by the solver's own check
        for m in found:
            if is_builtin(inspect.unwrap(m.family.func)):
                continue
            try:
                score_batch(m, lists.batch)
            except PluginError as exc:
                if exc.index is None:
                    raise
                i = int(np.ravel_multi_index(exc.index, (lists.batch.n_lists,)))
                raise exc.at(f"run {lists.runs[i]}, topic {lists.topics[i]}") from None


# ------------------------------------------------------------------------------------------------------------
# Informativeness (PR-curve error), compared on the lists where every metric converged
# ------------------------------------------------------------------------------------------------------------

WARN_RATE, UNRELIABLE_RATE = 0.01, 0.10  # failure rates above which a metric is warned about / marked unreliable


@dataclass
class InformativenessResult:
    """Per-list rows, the comparison of metrics on their common lists, and warnings.

    Attributes
    ----------
    lists : DataFrame
        One row per list, metric and threshold: run, topic, metric, threshold, n, method, status, reason, entropy,
        max_residual, approx_error, on_face (at an attainable extreme, solved on a face), rms_error, common (the
        list counts in the comparison). Failed lists are kept, with the reason.
    summary : DataFrame
        One row per metric and threshold (see :func:`summarise`).
    warnings : list of str
        Metrics failing on more than 1 % of the lists (more than 10 %: unreliable), and metrics whose expectations
        were sampled (approximate).
    """

    lists: pd.DataFrame
    summary: pd.DataFrame
    protocol: str
    counts: str
    warnings: list = field(default_factory=list)


def curve_errors(lists: Lists, res: MEMResult, thresholds: Sequence[int], protocol: str = "recall-changes",
                 align: str = "recall") -> dict[int, np.ndarray]:
    """RMS PR-curve error of a solved distribution at each relevance threshold l (relevant = grade >= l)."""
    b = lists.batch
    out = {}
    for level in thresholds:
        if not 1 <= level < b.n_grades:
            raise InputError(f"threshold (--threshold, -t) must lie in 1..{b.n_grades - 1}, the grades above 0 of "
                             f"the lists; got {level}")
        S = res.survival(level)
        R = b.counts[:, level:].sum(1)
        out[level] = pr_error(S, b.grades >= level, b.lengths, R, protocol=protocol, align=align)
    return out


def common_lists(df: pd.DataFrame) -> pd.Series:
    """True for the rows of lists (run, topic) on which every metric of ``df`` converged (status 0)."""
    ok = df.groupby(["run", "topic"], sort=False)["status"].transform(lambda s: bool((s == 0).all()))
    return ok.astype(bool)


def summarise(df: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Compare metrics honestly: means over the lists where *every* metric converged.

    A list on which any metric failed is left out of every metric's mean (the common-list rule), so metrics are
    never compared on different subsets; lists without a relevant document at a threshold have no PR-curve error
    there (for any metric). Columns: metric, threshold, n_lists (lists in the comparison), mean_rms, approx_error
    (for a sampled form: the mean estimated error of the expected metric value on those lists, beside the RMS error
    it qualifies; NaN for an exact form), sem_rms, ci_low, ci_high (t interval at ``confidence``), n_total (lists
    attempted), n_failed (this metric's failures), failure_rate, reliable (failure rate <= 10 %), method
    (declared/derived/prefix-state/sampled), approximate (the form was sampled).
    """
    from scipy import stats

    df = df.assign(common=common_lists(df)) if "common" not in df else df
    rows = []
    for (metric, level), part in df.groupby(["metric", "threshold"], sort=False):
        errors = part.loc[part.common, "rms_error"].dropna().to_numpy()
        n = errors.size
        mean = errors.mean() if n else np.nan
        sem = errors.std(ddof=1) / np.sqrt(n) if n > 1 else np.nan
        half = stats.t.ppf(0.5 + confidence / 2, n - 1) * sem if n > 1 else np.nan
        failed = int((part.status != 0).sum())
        rate = failed / len(part) if len(part) else np.nan
        approx = part.loc[part.common, "approx_error"] if "approx_error" in part else pd.Series(dtype=float)
        approx = float(approx.mean()) if approx.notna().any() else np.nan
        rows.append(dict(metric=metric, threshold=int(level), n_lists=n, mean_rms=mean, approx_error=approx,
                         sem_rms=sem,
                         ci_low=mean - half, ci_high=mean + half, n_total=len(part), n_failed=failed,
                         failure_rate=rate, reliable=bool(rate <= UNRELIABLE_RATE),
                         method=str(part["method"].iloc[0]) if "method" in part else "declared",
                         approximate=bool((part.get("method", pd.Series(dtype=str)) == "sampled").any())))
    return pd.DataFrame(rows)


def failure_warnings(df: pd.DataFrame) -> list[str]:
    """One sentence per metric failing on more than 1 % of its lists, with the reasons and the common n."""
    out = []
    per_list = df.drop_duplicates(["run", "topic", "metric"])
    common = int(common_lists(per_list).groupby([per_list.run, per_list.topic]).all().sum())
    for metric, part in per_list.groupby("metric", sort=False):
        failed = part[part.status != 0]
        rate = len(failed) / len(part) if len(part) else 0.0
        if rate <= WARN_RATE:
            continue
        reasons = ", ".join(f"{n} {reason}" for reason, n in failed["reason"].value_counts().items())
        level = "unreliable: " if rate > UNRELIABLE_RATE else ""
        out.append(f"{level}{metric} failed on {len(failed)} of {len(part)} lists ({100 * rate:.1f} %: {reasons}); "
                   f"metrics are compared on the {common} lists where every metric converged")
    return out


def informativeness(lists: Lists, measures: Sequence, thresholds: Sequence[int] | None = None, *,
                    counts: str = "retrieved", protocol: str = "recall-changes", align: str = "recall",
                    cache_dir: str | Path | None = None, progress: bool = False,
                    solver_options: dict | None = None, jobs: int | None = 1,
                    scheduler: str | None = None, solved: Sequence[MEMResult] | None = None
                    ) -> InformativenessResult:
    """Solve MEM under each metric for every list and measure the error of the inferred PR curves.

    Parameters
    ----------
    lists : Lists
        The ranked lists (see :func:`lists_from_collection`, :func:`select_lists`).
    measures : sequence
        Any metric meta-eval can score: names (``"AP"``, ``"GAP(g=0.5,0.5)"``, ``"nDCG(gain=exp)"``),
        ``module:function``, ``file.py:function``, Measures (:func:`meta_eval.statistics.maxent.forms.metric_form`).
    thresholds : sequence of int, optional
        Relevance thresholds l of the binary PR curves (relevant = grade >= l); default every grade 1..c.
    counts, protocol, align
        See :func:`meta_eval.statistics.maxent.solver.solve_mem` and :mod:`meta_eval.statistics.maxent.curves`.
    cache_dir : path, optional
        Where solved distributions are cached (resumable).
    jobs, scheduler
        Workers for the solver (:func:`meta_eval.core.parallel.parallel_map`); they never change a result.
    solved : sequence of MEMResult, optional
        The distributions of ``measures`` on these lists, already solved (one per measure, in order: e.g. one
        :func:`solve_cached_many` pass for several analyses, so the workers' tails overlap); the plug-ins are
        then not checked here again.

    Returns
    -------
    InformativenessResult
        Every list with its status and reason; the summary compares the metrics on the lists where every metric
        converged (:func:`summarise`); warnings for failure rates above 1 %.
    """
    from meta_eval.statistics.maxent.result import STATUS

    b = lists.batch
    thresholds = list(range(1, b.n_grades)) if thresholds is None else list(thresholds)
    frames = []
    if solved is None:
        check_plugins(lists, measures)
        solved = solve_cached_many(b, list(measures), counts=counts, cache_dir=cache_dir, progress=progress,
                                   jobs=jobs, scheduler=scheduler, **(solver_options or {}))
    elif len(solved) != len(measures) or any(not np.array_equal(r.lengths, b.lengths) for r in solved):
        raise InputError(f"solved must hold one result per measure ({len(measures)}) for these {b.n_lists} lists")
    for res in solved:
        errs = curve_errors(lists, res, thresholds, protocol, align)
        reason = np.array([STATUS[int(code)] for code in res.status], dtype=object)
        for level in thresholds:
            frames.append(pd.DataFrame({
                "run": lists.runs, "topic": lists.topics, "metric": res.measure, "threshold": level, "n": b.lengths,
                "method": res.method, "status": res.status, "reason": reason, "entropy": res.entropy,
                "max_residual": res.max_residual, "approx_error": res.approx_error, "on_face": res.on_face,
                "rms_error": errs[level]}))
    df = pd.concat(frames, ignore_index=True)
    df["common"] = common_lists(df)
    return InformativenessResult(df, summarise(df), protocol, counts,
                                 failure_warnings(df) + approximate_notes(df) + face_notes(df))


def approximate_notes(df: pd.DataFrame) -> list[str]:
    """One sentence per metric whose expected values were sampled (no exact form): its results are approximate."""
    out = []
    per_list = df.drop_duplicates(["run", "topic", "metric"])
    for metric, part in per_list.groupby("metric", sort=False):
        if not (part["method"] == "sampled").any():
            continue
        err = part.loc[part.status == 0, "approx_error"]
        size = f"; estimated error of its expected value: mean {err.mean():.2g}, largest {err.max():.2g}" \
            if err.notna().any() else ""
        out.append(f"approximate: {metric} has no exact expected-value form (neither declared, a degree-2 polynomial "
                   f"nor a prefix-state automaton); its MEM distributions were fitted to sampled expectations{size}")
    return out


def face_notes(df: pd.DataFrame) -> list[str]:
    """One sentence per metric with a probed form (derived, prefix-state) and converged lists at an attainable
    extreme (``on_face``). The declared forms' extremes are each reached by one face of lists (AP, nDCG, ERR, RR, Q,
    GAP: the lists ordered by grade); a probed metric's may be reached by several (Success@k at 1), where the
    solver's face may not be the one of largest entropy (:class:`~meta_eval.statistics.maxent.solver.MEMResult`)."""
    out = []
    per_list = df.drop_duplicates(["run", "topic", "metric"])
    for metric, part in per_list.groupby("metric", sort=False):
        probed = part["method"].isin(["derived", "prefix-state"])
        n = int((part["on_face"] & probed & (part.status == 0)).sum())
        if n:
            out.append(f"at an extreme: {metric} is at its attainable maximum or minimum on {n} of {len(part)} lists, "
                       "solved on the face of the lists reaching that value that the solver approached; where "
                       "several faces reach it (Success@k at 1 with several relevant documents in the top k) the "
                       "problem is not convex and that face may not have the largest entropy")
    return out


# ------------------------------------------------------------------------------------------------------------
# Prediction of other metrics
# ------------------------------------------------------------------------------------------------------------

def predict(res: MEMResult, batch: ListBatch, measures: Sequence) -> dict[str, np.ndarray]:
    """E[B](P) under a solved distribution for each metric B (exact where B's form is exact, else sampled)."""
    from meta_eval.statistics.maxent.forms import metric_form

    P = np.nan_to_num(res.P[:, : batch.depth])
    out = {}
    for m in measures:
        source = metric_form(m, batch)
        val = source.form(np.arange(batch.n_lists), batch).value(P)
        out[source.name] = np.where(res.status == 0, val, np.nan)
    return out


def prediction_table(lists: Lists, constrain: Sequence[str], targets: Sequence[str] | None = None, *,
                     counts: str = "retrieved", cache_dir: str | Path | None = None,
                     progress: bool = False, jobs: int | None = 1, scheduler: str | None = None) -> pd.DataFrame:
    """Predict each target metric B from the MEM distribution fitted to each metric A (Aslam et al. 2005).

    Returns a tidy DataFrame with columns source (A), target (B), rmse, pearson_r, n. Every pair is computed on the
    same lists: those where every source metric converged and every target is defined. The diagonal (A = B) is
    the constraint itself (rmse ~ 0) and is kept as a check.
    """
    from meta_eval.statistics.maxent.forms import metric_form

    b = lists.batch
    targets = list(constrain) if targets is None else list(targets)
    check_plugins(lists, [*constrain, *targets])
    actual = {t: metric_form(t, b).observed(b) for t in targets}
    solved = dict(zip(constrain, solve_cached_many(b, list(constrain), counts=counts, cache_dir=cache_dir,
                                                   progress=progress, jobs=jobs, scheduler=scheduler)))
    common = np.logical_and.reduce([res.status == 0 for res in solved.values()] +
                                   [np.isfinite(v) for v in actual.values()])
    rows = []
    for a, res in solved.items():
        pred = predict(res, b, targets)
        for t in targets:
            ok = common & np.isfinite(pred[t])
            x, y = pred[t][ok], actual[t][ok]
            r = stats.pearsonr(x, y).statistic if ok.sum() > 2 and np.std(x) > 0 and np.std(y) > 0 else np.nan
            rows.append(dict(source=a, target=t, rmse=float(np.sqrt(np.mean((x - y) ** 2))) if ok.any() else np.nan,
                             pearson_r=float(r), n=int(ok.sum())))
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------------------------
# The two studies
# ------------------------------------------------------------------------------------------------------------

#: Most points of a g grid: each is a full MEM solve of every list (a step of 0.001).
MAX_G_GRID_POINTS = 1001


def g_grid(step: float = 0.1) -> list[tuple[float, float]]:
    """Threshold-probability pairs (g1, g2) = (i·step, 1 − i·step), i = 0 .. 1/step: from (0, 1) to (1, 0).

    Raises
    ------
    InputError
        Unless ``step`` is in [0.001, 1] and divides 1 into equal parts (0.5, 0.25, 0.2, 0.1 ...): any other step
        would end the grid short of (1, 0) or past it, with a g that is not a distribution (0.6 gave (1.2, −0.2)).
    """
    if isinstance(step, bool) or not isinstance(step, (int, float, np.integer, np.floating)) \
            or not math.isfinite(step) or not 0 < step <= 1:
        raise InputError(f"g-grid step {step!r} is out of range; allowed: a number in (0, 1] that divides 1 into "
                         "equal parts (0.5, 0.25, 0.2, 0.1, ...)")
    n = round(1.0 / step)
    if n + 1 > MAX_G_GRID_POINTS:
        raise InputError(f"g-grid step {step:g} gives {n + 1:,} points, each a MEM solve of every list; at most "
                         f"{MAX_G_GRID_POINTS:,} (a step of at least {1 / (MAX_G_GRID_POINTS - 1):g})")
    if abs(n * step - 1.0) > 1e-9:
        raise InputError(f"g-grid step {step:g} does not divide 1 into equal parts (1/{step:g} = {1 / step:.4g}); "
                         "use 1/n: 0.5, 0.25, 0.2, 0.1, 0.05 ...")
    return [(round(i / n, 10), round(1.0 - i / n, 10)) for i in range(n + 1)]


def gap_measure(g: Sequence[float]) -> str:
    """The name of GAP with threshold probabilities ``g``, exact (:func:`meta_eval.core.params.format_value`)."""
    return f"GAP(g={format_value(tuple(g))})"


@dataclass
class Figure2Result:
    """The GAP paper's Figure 2 data.

    ``table``: one row per (metric line, g pair, threshold) with columns line ("GAP", "nDCG(gain=exp)",
    "nDCG"), g1, g2, threshold, mean_rms, sem_rms, n_lists, n_failed; nDCG rows repeat over the g pairs (flat lines).
    ``lists``: the per-list rows behind it.
    """

    table: pd.DataFrame
    lists: pd.DataFrame
    n_lists: int
    warnings: list = field(default_factory=list)


def figure2_measures(grid: Sequence[Sequence[float]] | None = None,
                     baselines: Sequence[str] = ("nDCG(gain=exp)", "nDCG")) -> list[str]:
    """The metrics of :func:`gap_figure2`: GAP at each (g1, g2) of the grid, then the baselines."""
    return [gap_measure(tuple(g)) for g in (g_grid() if grid is None else grid)] + list(baselines)


def gap_figure2(lists: Lists, grid: Sequence[Sequence[float]] | None = None,
                baselines: Sequence[str] = ("nDCG(gain=exp)", "nDCG"), *, filter_lists: bool = True,
                protocol: str = "recall-changes", counts: str = "retrieved", cache_dir=None,
                progress: bool = False, jobs: int | None = 1, scheduler: str | None = None,
                solved: Sequence[MEMResult] | None = None) -> Figure2Result:
    """Mean RMS error of inferred PR curves for GAP over a (g1, g2) sweep and for nDCG (GAP paper, Figure 2).

    Lists are first restricted to those with at least 5 relevant (grade >= 1) and 5 highly relevant (top grade)
    documents retrieved (``filter_lists``). Thresholds: 1 ("grade >= 1 relevant") and c ("grade c relevant").
    ``solved``: the distributions of :func:`figure2_measures` on the (filtered) lists, already solved
    (:func:`informativeness`).
    """
    if lists.batch.n_grades != 3:
        raise InputError(f"Figure 2 needs grades 0/1/2; the lists have grades 0..{lists.batch.n_grades - 1}")
    sel = select_lists(lists) if filter_lists else lists
    if sel.batch.n_lists == 0:
        raise InputError("no list passes the filter (>= 5 relevant and >= 5 highly relevant retrieved)")
    grid = g_grid() if grid is None else [tuple(g) for g in grid]
    measures = figure2_measures(grid, baselines)
    res = informativeness(sel, measures, thresholds=(1, 2), counts=counts, protocol=protocol,
                          cache_dir=cache_dir, progress=progress, jobs=jobs, scheduler=scheduler, solved=solved)
    s = res.summary
    rows = []
    for g, m in zip(grid, measures):
        for _, r in s[s.metric == m].iterrows():
            rows.append(dict(line="GAP", g1=g[0], g2=g[1], metric=m, **_stats(r)))
    for base in baselines:
        for g in grid:
            for _, r in s[s.metric == base].iterrows():
                rows.append(dict(line=base, g1=g[0], g2=g[1], metric=base, **_stats(r)))
    return Figure2Result(pd.DataFrame(rows), res.lists, sel.batch.n_lists, res.warnings)


def _stats(r) -> dict:
    return dict(threshold=int(r.threshold), mean_rms=r.mean_rms, sem_rms=r.sem_rms, ci_low=r.ci_low,
                ci_high=r.ci_high, n_lists=int(r.n_lists), n_total=int(r.n_total), n_failed=int(r.n_failed),
                failure_rate=r.failure_rate, reliable=bool(r.reliable))


@dataclass
class AslamResult:
    """Aslam et al.'s binary comparison: ``summary`` (mean RMS PR error per metric), ``prediction`` table."""

    summary: pd.DataFrame
    prediction: pd.DataFrame
    lists: pd.DataFrame
    warnings: list = field(default_factory=list)


def aslam_binary(lists: Lists, measures: Sequence[str] = ("AP", "Rprec", "P@10", "RR"), *, rel_level: int = 1,
                 filter_lists: bool = True, protocol: str = "recall-changes", counts: str = "retrieved",
                 cache_dir=None, progress: bool = False, jobs: int | None = 1,
                 scheduler: str | None = None) -> AslamResult:
    """Binary MEM (relevant = grade >= rel_level) under each metric: PR-curve error and prediction of the others.

    The same list filter as :func:`gap_figure2` is applied first (so both studies use the same lists).
    """
    sel = select_lists(lists) if filter_lists and lists.batch.n_grades == 3 else lists
    binl = sel.binarise(rel_level)
    info = informativeness(binl, measures, thresholds=(1,), counts=counts, protocol=protocol,
                           cache_dir=cache_dir, progress=progress, jobs=jobs, scheduler=scheduler)
    pred = prediction_table(binl, measures, counts=counts, cache_dir=cache_dir, progress=progress, jobs=jobs,
                            scheduler=scheduler)
    return AslamResult(info.summary, pred, info.lists, info.warnings)
