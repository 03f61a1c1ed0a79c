"""Informativeness studies: PR-curve error of MEM distributions, prediction of other metrics, GAP Figure 2, Aslam.

* :func:`informativeness` -- for each metric, solve MEM for every list and measure the RMS error of the inferred PR
  curve at each relevance threshold (Aslam, Yilmaz & Pavlu, SIGIR 2005; Robertson, Kanoulas & Yilmaz, SIGIR 2010,
  Sec. 4.1). Results per list and means per metric and threshold.
* :func:`prediction_table` -- from the MEM distribution fitted to metric A, E[B] for every metric B, against the
  actual B: RMS error and Pearson r (Aslam et al.'s "prediction of other measures").
* :func:`gap_figure2` -- the GAP paper's Figure 2: mean RMS error of GAP's inferred curves over the (g1, g2) sweep,
  against nDCG's (exponential gain, log discount; linear gain as a second line), for "grade >= 1" and "grade 2".
* :func:`aslam_binary` -- Aslam et al.'s binary comparison: AP, R-prec, P@10, RR (mean RMS and prediction table).

Solved distributions can be cached on disk (``cache_dir``): one ``.npz`` per metric and list set, so an interrupted
study resumes where it stopped.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from meta_eval.errors import InputError
from meta_eval.mem.batch import ListBatch
from meta_eval.mem.curves import pr_error
from meta_eval.mem.expectations import expectation, observed
from meta_eval.mem.solver import MEMResult, solve_mem
from meta_eval.rankings import Rankings

SOLVER_VERSION = "2"


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


def lists_from_collection(collection) -> Lists:
    """Every non-empty (run, topic) list of a core ``Collection``, block by block, padded to the longest."""
    systems = np.asarray(collection.systems, dtype=object)
    topics = np.asarray(collection.topics, dtype=object)
    parts = []
    for block in collection.blocks:
        r = block.rankings
        s_idx, t_idx = np.nonzero(r.n_ret > 0)
        parts.append((r.grades[s_idx, t_idx], r.n_ret[s_idx, t_idx], r.counts[t_idx], systems[s_idx],
                      topics[block.topics[t_idx]]))
    depth = max([int(p[1].max(initial=0)) for p in parts] + [1])
    grades = np.concatenate([np.pad(g[:, :depth], ((0, 0), (0, depth - min(g.shape[1], depth)))) for g, *_ in parts])
    batch = ListBatch.from_rankings(Rankings(grades, np.concatenate([p[1] for p in parts]),
                                             np.concatenate([p[2] for p in parts])))
    return Lists(batch, np.concatenate([p[3] for p in parts]), np.concatenate([p[4] for p in parts]))


def select_lists(lists: Lists, min_relevant: int = 5, min_high: int = 5, rel_level: int = 1,
                 high_level: int | None = None) -> Lists:
    """Lists that retrieved at least ``min_relevant`` documents of grade >= rel_level and ``min_high`` of grade
    >= high_level (default the top grade) -- the GAP paper's filter (5 relevant and 5 highly relevant)."""
    rc = lists.batch.retrieved_counts()
    high_level = lists.batch.n_grades - 1 if high_level is None else high_level
    keep = (rc[:, rel_level:].sum(1) >= min_relevant) & (rc[:, high_level:].sum(1) >= min_high)
    return lists.subset(np.flatnonzero(keep))


# ------------------------------------------------------------------------------------------------------------
# Solving with a cache
# ------------------------------------------------------------------------------------------------------------

def _key(batch: ListBatch, measure: str, counts: str) -> str:
    h = hashlib.sha1()
    for a in (batch.grades, batch.lengths, batch.counts):
        h.update(np.ascontiguousarray(a).tobytes())
        h.update(str(a.shape).encode())
    h.update(f"{measure}|{counts}|{SOLVER_VERSION}".encode())
    return h.hexdigest()[:20]


def solve_cached(batch: ListBatch, measure: str, *, counts: str = "retrieved", cache_dir: str | Path | None = None,
                 progress: bool = False, **solver_options) -> MEMResult:
    """:func:`solve_mem` with an on-disk cache keyed by the lists, the metric and the count mode."""
    path = None
    if cache_dir is not None:
        path = Path(cache_dir) / f"mem_{_slug(measure)}_{_key(batch, measure, counts)}.npz"
        if path.exists():
            z = np.load(path, allow_pickle=False)
            return MEMResult(**{k: z[k] for k in z.files if k not in ("measure",)}, measure=str(z["measure"]))
    res = solve_mem(batch, measure, counts=counts, progress=progress, **solver_options)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez_compressed(tmp, P=res.P, lengths=res.lengths, measure=np.array(res.measure), target=res.target,
                            achieved=res.achieved, entropy=res.entropy, max_residual=res.max_residual,
                            stationarity=res.stationarity, multipliers=res.multipliers, n_iter=res.n_iter,
                            status=res.status, counts=res.counts)
        tmp.replace(path)
    return res


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)[:40]


# ------------------------------------------------------------------------------------------------------------
# Informativeness (PR-curve error)
# ------------------------------------------------------------------------------------------------------------

@dataclass
class InformativenessResult:
    """Per-list rows (run, topic, metric, threshold, n, entropy, max_residual, status, rms_error) and means."""

    lists: pd.DataFrame
    summary: pd.DataFrame
    protocol: str
    counts: str


def curve_errors(lists: Lists, res: MEMResult, thresholds: Sequence[int], protocol: str = "recall-changes",
                 align: str = "recall") -> dict[int, np.ndarray]:
    """RMS PR-curve error of a solved distribution at each relevance threshold l (relevant = grade >= l)."""
    b = lists.batch
    out = {}
    for level in thresholds:
        if not 1 <= level < b.n_grades:
            raise InputError(f"threshold must lie in 1..{b.n_grades - 1}; got {level}")
        S = res.survival(level)
        R = b.counts[:, level:].sum(1)
        out[level] = pr_error(S, b.grades >= level, b.lengths, R, protocol=protocol, align=align)
    return out


def summarise(df: pd.DataFrame) -> pd.DataFrame:
    ok = df[df["status"] == 0]
    g = ok.groupby(["metric", "threshold"], sort=False)
    summary = g.agg(mean_rms=("rms_error", "mean"), sem_rms=("rms_error", "sem"), n_lists=("rms_error", "count"),
                    mean_entropy=("entropy", "mean")).reset_index()
    failed = df[df["status"] != 0].groupby(["metric", "threshold"], sort=False).size().rename("n_failed")
    summary = summary.merge(failed, on=["metric", "threshold"], how="left").fillna({"n_failed": 0})
    summary["n_failed"] = summary["n_failed"].astype(int)
    return summary


def informativeness(lists: Lists, measures: Sequence[str], thresholds: Sequence[int] | None = None, *,
                    counts: str = "retrieved", protocol: str = "recall-changes", align: str = "recall",
                    cache_dir: str | Path | None = None, progress: bool = False,
                    solver_options: dict | None = None) -> InformativenessResult:
    """Solve MEM under each metric for every list and measure the error of the inferred PR curves.

    Parameters
    ----------
    lists : Lists
        The ranked lists (see :func:`lists_from_collection`, :func:`select_lists`).
    measures : sequence of str
        Metrics with a registered expected-value form (e.g. ``"AP"``, ``"GAP(g=0.5,0.5)"``, ``"nDCG(gain=exp)"``).
    thresholds : sequence of int, optional
        Relevance thresholds l of the binary PR curves (relevant = grade >= l); default every grade 1..c.
    counts, protocol, align
        See :func:`meta_eval.mem.solver.solve_mem` and :mod:`meta_eval.mem.curves`.
    cache_dir : path, optional
        Where solved distributions are cached (resumable).

    Returns
    -------
    InformativenessResult
        ``lists``: one row per list, metric and threshold with columns
        run, topic, metric, threshold, n, entropy, max_residual, status, rms_error; ``summary``: means per metric
        and threshold (failed lists -- status != 0 -- are counted in ``n_failed`` and left out of the means).
    """
    b = lists.batch
    thresholds = list(range(1, b.n_grades)) if thresholds is None else list(thresholds)
    frames = []
    for m in measures:
        res = solve_cached(b, m, counts=counts, cache_dir=cache_dir, progress=progress, **(solver_options or {}))
        errs = curve_errors(lists, res, thresholds, protocol, align)
        for level in thresholds:
            frames.append(pd.DataFrame({
                "run": lists.runs, "topic": lists.topics, "metric": m, "threshold": level, "n": b.lengths,
                "entropy": res.entropy, "max_residual": res.max_residual, "status": res.status,
                "rms_error": errs[level]}))
    df = pd.concat(frames, ignore_index=True)
    return InformativenessResult(df, summarise(df), protocol, counts)


# ------------------------------------------------------------------------------------------------------------
# Prediction of other metrics
# ------------------------------------------------------------------------------------------------------------

def predict(res: MEMResult, batch: ListBatch, measures: Sequence[str]) -> dict[str, np.ndarray]:
    """E[B](P) under a solved distribution for each metric B (exact expectations)."""
    P = np.nan_to_num(res.P[:, : batch.depth])
    out = {}
    for m in measures:
        val = expectation(m, batch).value(P)
        out[m] = np.where(res.status == 0, val, np.nan)
    return out


def prediction_table(lists: Lists, constrain: Sequence[str], targets: Sequence[str] | None = None, *,
                     counts: str = "retrieved", cache_dir: str | Path | None = None,
                     progress: bool = False) -> pd.DataFrame:
    """Predict each target metric B from the MEM distribution fitted to each metric A (Aslam et al. 2005).

    Returns a tidy DataFrame with columns source (A), target (B), rmse, pearson_r, n. The diagonal (A = B) is the
    constraint itself (rmse ~ 0) and is kept as a check.
    """
    b = lists.batch
    targets = list(constrain) if targets is None else list(targets)
    actual = {t: observed(t, b) for t in targets}
    rows = []
    for a in constrain:
        res = solve_cached(b, a, counts=counts, cache_dir=cache_dir, progress=progress)
        pred = predict(res, b, targets)
        for t in targets:
            ok = np.isfinite(pred[t]) & np.isfinite(actual[t])
            x, y = pred[t][ok], actual[t][ok]
            r = stats.pearsonr(x, y).statistic if ok.sum() > 2 and np.std(x) > 0 and np.std(y) > 0 else np.nan
            rows.append(dict(source=a, target=t, rmse=float(np.sqrt(np.mean((x - y) ** 2))) if ok.any() else np.nan,
                             pearson_r=float(r), n=int(ok.sum())))
    return pd.DataFrame(rows)


# ------------------------------------------------------------------------------------------------------------
# The two studies
# ------------------------------------------------------------------------------------------------------------

def g_grid(step: float = 0.1) -> list[tuple[float, float]]:
    """Threshold-probability pairs (g1, g2) from (0, 1) to (1, 0)."""
    n = int(round(1.0 / step))
    return [(round(i * step, 10), round(1.0 - i * step, 10)) for i in range(n + 1)]


def gap_measure(g: Sequence[float]) -> str:
    return "GAP(g=" + ",".join(f"{x:g}" for x in g) + ")"


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


def gap_figure2(lists: Lists, grid: Sequence[Sequence[float]] | None = None,
                baselines: Sequence[str] = ("nDCG(gain=exp)", "nDCG"), *, filter_lists: bool = True,
                protocol: str = "recall-changes", counts: str = "retrieved", cache_dir=None,
                progress: bool = False) -> Figure2Result:
    """Mean RMS error of inferred PR curves for GAP over a (g1, g2) sweep and for nDCG (GAP paper, Figure 2).

    Lists are first restricted to those with at least 5 relevant (grade >= 1) and 5 highly relevant (top grade)
    documents retrieved (``filter_lists``). Thresholds: 1 ("grade >= 1 relevant") and c ("grade c relevant").
    """
    if lists.batch.n_grades != 3:
        raise InputError(f"Figure 2 needs grades 0/1/2; the lists have grades 0..{lists.batch.n_grades - 1}")
    sel = select_lists(lists) if filter_lists else lists
    if sel.batch.n_lists == 0:
        raise InputError("no list passes the filter (>= 5 relevant and >= 5 highly relevant retrieved)")
    grid = g_grid() if grid is None else [tuple(g) for g in grid]
    measures = [gap_measure(g) for g in grid] + list(baselines)
    res = informativeness(sel, measures, thresholds=(1, 2), counts=counts, protocol=protocol,
                          cache_dir=cache_dir, progress=progress)
    s = res.summary
    rows = []
    for g, m in zip(grid, measures):
        for _, r in s[s.metric == m].iterrows():
            rows.append(dict(line="GAP", g1=g[0], g2=g[1], metric=m, **_stats(r)))
    for base in baselines:
        for g in grid:
            for _, r in s[s.metric == base].iterrows():
                rows.append(dict(line=base, g1=g[0], g2=g[1], metric=base, **_stats(r)))
    return Figure2Result(pd.DataFrame(rows), res.lists, sel.batch.n_lists)


def _stats(r) -> dict:
    return dict(threshold=int(r.threshold), mean_rms=r.mean_rms, sem_rms=r.sem_rms, n_lists=int(r.n_lists),
                n_failed=int(r.n_failed))


@dataclass
class AslamResult:
    """Aslam et al.'s binary comparison: ``summary`` (mean RMS PR error per metric), ``prediction`` table."""

    summary: pd.DataFrame
    prediction: pd.DataFrame
    lists: pd.DataFrame


def aslam_binary(lists: Lists, measures: Sequence[str] = ("AP", "Rprec", "P@10", "RR"), *, rel_level: int = 1,
                 filter_lists: bool = True, protocol: str = "recall-changes", counts: str = "retrieved",
                 cache_dir=None, progress: bool = False) -> AslamResult:
    """Binary MEM (relevant = grade >= rel_level) under each metric: PR-curve error and prediction of the others.

    The same list filter as :func:`gap_figure2` is applied first (so both studies use the same lists).
    """
    sel = select_lists(lists) if filter_lists and lists.batch.n_grades == 3 else lists
    binl = sel.binarise(rel_level)
    info = informativeness(binl, measures, thresholds=(1,), counts=counts, protocol=protocol,
                           cache_dir=cache_dir, progress=progress)
    pred = prediction_table(binl, measures, counts=counts, cache_dir=cache_dir, progress=progress)
    return AslamResult(info.summary, pred, info.lists)
