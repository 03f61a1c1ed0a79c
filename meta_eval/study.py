"""The main job: a full meta-evaluation of metrics against GAP and nDCG, written as a self-contained report folder.

Stages (each timed; a failing stage is reported in the report, not fatal):

1. scores — per-topic scores of every metric, mean per system;
2. discriminative power — Sakai's paired bootstrap over all system pairs (and the top-k systems), ASL curves,
   difference required;
3. correlation — Kendall τ_b, τ_AP (both directions), Spearman and Pearson between system rankings with bootstrap
   intervals, per-topic correlations, system-pair swaps and how many are significant;
4. informativeness — maximum-entropy inference of precision-recall curves from each metric's value (for metrics
   that declare an expected-value form), RMS error against the actual curves, GAP's RMS error over its
   threshold probabilities g, inferred-vs-actual curves for sample lists.

``manifest.json`` records inputs (with checksums), options, seeds, versions and timings so the study can be rerun.
"""

from __future__ import annotations

import hashlib
import json
import platform
import sys
import time
import traceback
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from meta_eval.collection import Collection
from meta_eval.evaluate import aggregate
from meta_eval.measures import Measure
from meta_eval.plugins import load_metric
from meta_eval.report import Report, Section

DEFAULT_METRICS = ("AP", "nDCG@10", "Q", "ERR")
DEFAULT_AGAINST = ("GAP", "nDCG")


@dataclass
class StudyOptions:
    """Everything that determines a study's numbers (written to the manifest)."""

    metrics: Sequence[str] = DEFAULT_METRICS
    against: Sequence[str] = DEFAULT_AGAINST
    n_resamples: int = 1000
    alpha: float = 0.05
    top: int = 15
    seed: int = 0
    mem_lists: int = 300
    g_grid_step: float = 0.1
    skip: Sequence[str] = ()


@dataclass
class StudyResult:
    """Where the report went and what happened in each stage."""

    out: Path
    timings: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    measures: list[str] = field(default_factory=list)


@dataclass
class _Context:
    collection: Collection
    measures: list[Measure]
    scores: dict[str, np.ndarray]
    options: StudyOptions
    report: Report
    progress: bool
    shared: dict = field(default_factory=dict)

    @property
    def targets(self) -> list[str]:
        """The metrics under study (everything that is not an 'against' reference)."""
        against = set(self.shared["against"])
        return [m for m in self.scores if m not in against] or list(self.scores)


STAGES: list[tuple[str, str]] = [
    ("scores", "Scores"),
    ("discpower", "Discriminative power"),
    ("correlation", "Correlation between metrics"),
    ("informativeness", "Informativeness (maximum-entropy method)"),
]


def run_study(
    collection: Collection,
    out: str | Path,
    options: StudyOptions | None = None,
    *,
    inputs: dict | None = None,
    progress: bool = False,
) -> StudyResult:
    """Run every stage on ``collection`` and write the report folder ``out``.

    Parameters
    ----------
    collection : Collection
        The runs and qrels (e.g. ``me.demo_collection()``).
    out : path
        Report folder: ``report.md``, ``report.html``, the CSVs and PNGs behind them, ``manifest.json``.
    options : StudyOptions
        Metrics (names, ``module:function`` or ``file.py:function``), the reference metrics to compare against,
        bootstrap replicates, α, top-k, seed, and the informativeness sample size.
    inputs : dict, optional
        Descriptions of the input files for the manifest (paths; checksums are computed here).
    """
    options = options or StudyOptions()
    started = time.perf_counter()
    report = Report(Path(out), "meta-eval study")
    result = StudyResult(Path(out))
    measures = _measures(list(options.metrics) + list(options.against))
    scores = {m.output_name: np.asarray(_score(collection, m)) for m in measures}
    against = [m.output_name for m in _measures(list(options.against))]
    ctx = _Context(collection, measures, scores, options, report, progress, shared={"against": against})
    result.measures = list(scores)
    report.section("Collection and metrics", _intro_text(ctx))
    stages = [(key, title) for key, title in STAGES if key not in set(options.skip)]
    for key, title in _progress(stages, progress):
        section = report.section(title)
        start = time.perf_counter()
        try:
            STAGE_FUNCTIONS[key](ctx, section)
        except Exception as exc:  # a failed stage is reported, not fatal
            section.error = f"{type(exc).__name__}: {exc}"
            result.errors[key] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        result.timings[key] = round(time.perf_counter() - start, 3)
    result.timings["total"] = round(time.perf_counter() - started, 3)
    report.section("Reproducibility", "Inputs, options, seeds, package versions and stage timings are in "
                   "manifest.json; rerun with the same options to get the same numbers.")
    report.write()
    _write_manifest(result, ctx, inputs or {})
    return result


# --------------------------------------------------------------------------------------------- stages


def stage_scores(ctx: _Context, section: Section) -> None:
    col = ctx.collection
    means = pd.DataFrame({m.output_name: aggregate(ctx.scores[m.output_name], m) for m in ctx.measures},
                         index=pd.Index(col.systems, name="run"))
    first = next(iter(ctx.scores))
    means = means.sort_values(first, ascending=False).reset_index()
    section.text = (f"Mean over {len(col.topics)} topics of each metric, systems sorted by {first}. Per-topic "
                    "scores are in scores.csv (run, topic, measure, value).")
    ctx.report.table(section, "Mean score per system", means, "system_means")
    tidy = []
    topics = np.asarray(col.topics, dtype=object)
    for name, values in ctx.scores.items():
        s_idx, t_idx = np.nonzero(~np.isnan(values))
        tidy.append(pd.DataFrame({"run": np.asarray(col.systems, dtype=object)[s_idx], "topic": topics[t_idx],
                                  "measure": name, "value": values[s_idx, t_idx]}))
    pd.concat(tidy, ignore_index=True).to_csv(ctx.report.out / "scores.csv", index=False)


def stage_discpower(ctx: _Context, section: Section) -> None:
    from meta_eval.discpower import best_systems, discriminative_power
    from meta_eval.figures.asl import asl_curve_figure

    opts, systems = ctx.options, list(ctx.collection.systems)
    common = dict(methods=("bootstrap",), alpha=opts.alpha, n_resamples=opts.n_resamples, seed=opts.seed,
                  progress=ctx.progress)
    result = discriminative_power(ctx.scores, systems, **common)
    ctx.shared["discpower"] = result
    summary = result.summary()
    top_result = None
    if 1 < opts.top < len(systems):
        best = best_systems(ctx.scores, systems, opts.top)
        top_result = discriminative_power(ctx.scores, systems, subset=best, **common)
        top_summary = top_result.summary().assign(subset=f"top {opts.top}")
        summary = pd.concat([summary.assign(subset="all"), top_summary], ignore_index=True)
    section.text = (f"Sakai's (2006) paired bootstrap test, B = {opts.n_resamples}, seed {opts.seed}, one replicate "
                    f"matrix shared by every pair and metric. A pair is told apart when ASL < {opts.alpha:g}; "
                    "diff_required is the largest, over pairs, estimated difference needed for significance.")
    ctx.report.table(section, "Discriminative power", summary, "discpower_summary")
    result.asl_table().to_csv(ctx.report.out / "asl.csv", index=False)
    fig = asl_curve_figure(result, top=top_result, method="bootstrap", title="ASL curves (paired bootstrap)",
                           top_label=f"top {opts.top} systems" if top_result is not None else None)
    ctx.report.figure(section, "ASL curves: system pairs sorted by achieved significance level", fig, "asl_curves")


def stage_correlation(ctx: _Context, section: Section) -> None:
    from meta_eval.correlation import correlate_systems, correlate_topics, swap_table
    from meta_eval.figures.correlation import correlation_heatmap, means_scatter, rank_rank

    opts, col = ctx.options, ctx.collection
    systems = list(col.systems)
    sysres = correlate_systems(ctx.scores, systems, n_resamples=opts.n_resamples, seed=opts.seed,
                               progress=ctx.progress)
    section.text = ("Correlation of the system rankings by mean score. τ_AP(y|x) takes x as the reference "
                    "ranking. Intervals: bootstrap percentile intervals over topics (same seeded design as the "
                    "discriminative-power test).")
    ctx.report.table(section, "Correlation of system rankings", sysres.table, "system_correlation")
    ctx.report.figure(section, "Kendall's τ_b between system rankings",
                      correlation_heatmap(sysres.matrix("kendall_tau_b"), lower=True), "heatmap_kendall")
    topres = correlate_topics(ctx.scores, list(col.topics))
    ctx.report.table(section, "Per-topic scores: pooled Pearson correlation", topres.pooled.reset_index(names="metric"),
                     "topic_correlation_pooled")
    dp = ctx.shared.get("discpower")
    pvalues = {m: dp.tests[(m, "bootstrap")].asl for m in ctx.scores} if dp is not None else None
    swaps = swap_table(ctx.scores, pvalues, alpha=opts.alpha, systems=systems)
    ctx.report.table(section, "System-pair swaps between metrics (significant: paired bootstrap)", swaps, "swaps")
    for x in ctx.targets:
        for y in ctx.shared["against"]:
            if x == y:
                continue
            name = f"{x}__{y}"
            ctx.report.figure(section, f"{x} vs {y}: system means",
                              means_scatter(ctx.scores[y], ctx.scores[x], name_x=y, name_y=x), f"scatter_{name}")
            ctx.report.figure(section, f"{x} vs {y}: system ranks",
                              rank_rank(ctx.scores[y], ctx.scores[x], name_x=y, name_y=x), f"rankrank_{name}")


def stage_informativeness(ctx: _Context, section: Section) -> None:
    from meta_eval import mem
    from meta_eval.figures.informativeness import figure2, inferred_curves_figure, rms_bar_figure

    opts = ctx.options
    lists = _mem_sample(ctx)
    with_form, without = _split_by_expectation(list(ctx.scores), lists.batch)
    section.text = (
        f"Maximum-entropy method (Aslam, Yilmaz & Pavlu 2005; graded as in the GAP paper §4.1) on {lists.batch.n_lists} "
        f"(run, topic) lists with at least one relevant document retrieved (seeded sample of at most {opts.mem_lists}). "
        "For each metric, the maximum-entropy probability-at-rank distribution consistent with the list's value and "
        "its retrieved grade counts is solved; its expected precision-recall curve is compared with the actual one "
        "(RMS error at the points where recall changes). Lower is more informative.")
    if without:
        section.text += ("\n\nNo expected-value form is declared for " + ", ".join(without) + " (declare one with "
                         "meta_eval.mem.register_expectation to include a metric here).")
    if not with_form:
        return
    result = mem.informativeness(lists, with_form, progress=ctx.progress)
    result.lists.to_csv(ctx.report.out / "informativeness_lists.csv", index=False)
    ctx.report.table(section, "Mean RMS error of inferred PR curves (by relevance threshold)", result.summary,
                     "informativeness_summary")
    ctx.report.figure(section, "Mean RMS error of inferred vs actual PR curves", rms_bar_figure(result.summary),
                      "informativeness_rms")
    if lists.batch.n_grades == 3:
        grid = mem.g_grid(opts.g_grid_step)
        fig2 = mem.gap_figure2(lists, grid=grid, filter_lists=False, progress=ctx.progress)
        ctx.report.table(section, "GAP's RMS error over its threshold probabilities (g1, g2), with nDCG",
                         fig2.table, "informativeness_g_grid")
        ctx.report.figure(section, "RMS error vs (g1, g2) (GAP paper, Figure 2)", figure2(fig2.table), "rms_vs_g")
    samples = _inferred_curves(lists, with_form[:3], seed=opts.seed)
    ctx.report.figure(section, "Inferred (maximum-entropy) vs actual PR curves for sample lists, grade >= 1",
                      inferred_curves_figure(samples), "inferred_pr_curves")


STAGE_FUNCTIONS: dict[str, Callable[[_Context, Section], None]] = {
    "scores": stage_scores,
    "discpower": stage_discpower,
    "correlation": stage_correlation,
    "informativeness": stage_informativeness,
}


# --------------------------------------------------------------------------------------------- helpers


def _mem_sample(ctx: _Context):
    """The lists of the informativeness stage: those with a relevant document retrieved, a seeded sample."""
    from meta_eval import mem

    lists = mem.select_lists(mem.lists_from_collection(ctx.collection), min_relevant=1, min_high=0)
    limit = ctx.options.mem_lists
    if limit and lists.batch.n_lists > limit:
        rng = np.random.default_rng(ctx.options.seed)
        lists = lists.subset(np.sort(rng.choice(lists.batch.n_lists, size=limit, replace=False)))
    return lists


def _split_by_expectation(names: list[str], batch) -> tuple[list[str], list[str]]:
    """Metrics that declare an expected-value form (MEM works for them) and those that do not."""
    from meta_eval import mem
    from meta_eval.errors import InputError

    probe = batch.subset(np.arange(min(1, batch.n_lists)))
    with_form, without = [], []
    for name in names:
        try:
            mem.expectation(name, probe)
            with_form.append(name)
        except InputError:
            without.append(name)
    return with_form, without


def _inferred_curves(lists, measures: list[str], seed: int, n_lists: int = 3) -> pd.DataFrame:
    """Tidy actual and inferred PR curves (threshold grade >= 1) for a few sample lists."""
    from meta_eval import mem

    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(lists.batch.n_lists, size=min(n_lists, lists.batch.n_lists), replace=False))
    sample = lists.subset(pick)
    batch = sample.batch
    R = batch.counts[:, 1:].sum(1)
    frames = []
    actual = np.cumsum(batch.grades >= 1, axis=1)
    for i in range(batch.n_lists):
        n = batch.lengths[i]
        ranks = np.arange(1, n + 1)
        label = f"{sample.runs[i]} / topic {sample.topics[i]}"
        frames.append(pd.DataFrame({"list": label, "source": "actual", "recall": actual[i, :n] / R[i],
                                    "precision": actual[i, :n] / ranks}))
    for m in measures:
        res = mem.solve_mem(batch, m)
        prec, rec = mem.expected_precision_recall(res.survival(1), R, batch.lengths)
        for i in range(batch.n_lists):
            n = batch.lengths[i]
            frames.append(pd.DataFrame({"list": f"{sample.runs[i]} / topic {sample.topics[i]}",
                                        "source": f"MEM from {m}", "recall": rec[i, :n], "precision": prec[i, :n]}))
    return pd.concat(frames, ignore_index=True)


def _measures(specs: Sequence[str]) -> list[Measure]:
    out: dict[str, Measure] = {}
    for spec in specs:
        for m in load_metric(spec):
            out.setdefault(m.output_name, m)
    return list(out.values())


def _score(collection: Collection, measure: Measure) -> np.ndarray:
    from meta_eval.evaluate import per_topic

    return per_topic(collection, measure)


def _intro_text(ctx: _Context) -> str:
    col = ctx.collection
    s, t, d = col.grades.shape
    return (f"{s} systems × {t} topics (depth up to {d}, grades 0..{col.rankings.max_grade}); "
            f"ordering: {col.options.get('ties', 'trec_eval')}; missing topics: {col.missing}. "
            f"Metrics under study: {', '.join(ctx.targets)}; compared against: {', '.join(ctx.shared['against'])}.")


def _progress(items, enabled: bool):
    if not enabled:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc="study", unit="stage")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for package in ("meta-eval", "numpy", "scipy", "pandas", "pyarrow", "cvxpy", "seaborn", "matplotlib"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "not installed"
    return out


def _write_manifest(result: StudyResult, ctx: _Context, inputs: dict) -> None:
    files = {}
    for key in ("qrels", "runs"):
        for path in (ctx.collection.options.get(key) or []) if key == "runs" else [ctx.collection.options.get(key)]:
            if path and Path(path).is_file():
                files[str(path)] = _sha256(Path(path))
    options = ctx.options
    manifest = {
        "meta_eval_study": 1,
        "command": inputs.get("command", " ".join(sys.argv)),
        "inputs": {"qrels": ctx.collection.options.get("qrels"), "runs": ctx.collection.options.get("runs"),
                   "sha256": files, **{k: v for k, v in inputs.items() if k != "command"}},
        "collection_options": {k: v for k, v in ctx.collection.options.items() if k not in ("qrels", "runs")},
        "study_options": {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in vars(options).items()},
        "measures": result.measures,
        "seeds": {"bootstrap": options.seed, "informativeness": options.seed},
        "versions": _versions(),
        "timings_s": result.timings,
        "errors": result.errors,
        "shape": dict(zip(("systems", "topics", "depth"), map(int, ctx.collection.grades.shape))),
    }
    (result.out / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
