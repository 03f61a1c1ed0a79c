"""The main job: a full meta-evaluation of metrics against GAP and nDCG, written as a self-contained report folder.

Stages (each timed; a failing stage is reported in the report, not fatal):

1. scores — per-topic scores of every metric, mean per system (and the per-topic standardisation reference);
2. discriminative power — Sakai's paired bootstrap over all system pairs and over the top-k systems, ASL curves,
   difference required;
3. correlation — Kendall τ_b, τ_AP (both directions), Spearman and Pearson between system rankings with bootstrap
   intervals, per-topic correlations, system-pair swaps and how many are significant;
4. split-half — Voorhees' split-half stability: τ between the rankings of disjoint topic halves by half size;
5. anova — two-way ANOVA (system + topic) with ω², system-pair effect sizes, Sakai's topic-set-size design;
6. correlation — (as 3 above);
7. intuitiveness — Sakai's concordance test of every metric pair against a gold criterion (default P@10);
8. incomplete-judgments — rankings under reduced qrels (standard and condensed forms) against the full qrels;
9. reusability — leave-one-run-out pool reusability: score and rank change of a run left out of the pool;
10. informativeness — maximum-entropy inference of precision-recall curves from each metric's value, RMS error
    against the actual curves, GAP's RMS error over its threshold probabilities g, inferred-vs-actual curves;
11. ltr (opt-in, ``ltr_data``) — effectiveness of a LambdaMART ranker trained for each metric, beside the metric's
    informativeness (the GAP paper §5).

Stages 4-9 wrap :mod:`meta_eval.meta.stages`; their budgets (draws, fractions, splits) are options whose defaults
keep the demo study fast. ``standardise`` (``"z"`` or ``"cdf"``) replaces every (S, T) score array by its per-topic
standardised form before the analyses that compare systems (:mod:`meta_eval.meta.standardise`); the scores table,
informativeness and intuitiveness (unchanged by an increasing map per topic) use the metric values themselves.

The report opens with findings written from the numbers of its tables (:mod:`meta_eval.findings`). Tables are
compact (one row per metric or a metric x metric matrix) in Markdown, HTML and LaTeX, the full detail in CSVs;
figures are vector PDF (or the requested formats) with PNG previews, every metric in one colour throughout.
The folder is written atomically (:func:`meta_eval.resultdir.result_folder`): complete with a ``manifest.json``
listing every file (inputs with checksums, options, seeds, versions, timings), or not there at all.
"""

from __future__ import annotations

import json
import platform
import sys
import time
import traceback
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from meta_eval.collection import Collection
from meta_eval.errors import InputError
from meta_eval.measures.resolver import measures_of, resolve
from meta_eval.report import Report, Section
from meta_eval.params import check as check_params
from meta_eval.params import rng as rng_from_seed

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from meta_eval.measures import Measure

DEFAULT_METRICS = ("AP", "nDCG@10", "Q", "ERR")
DEFAULT_AGAINST = ("GAP", "nDCG")
STAGE_NAMES = ("scores", "discpower", "split-half", "anova", "correlation", "intuitiveness", "incomplete-judgments",
               "reusability", "informativeness", "ltr")
CI_METHODS = ("percentile", "basic", "bca", "normal")
STANDARDISE = ("z", "cdf")
DEFAULT_FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
JUDGMENT_THRESHOLD = 0.9  # τ_b level "equivalent rankings" (Voorhees 2000) the incomplete-judgments finding uses


@dataclass
class StudyOptions:
    """Everything that determines a study's numbers and files (written to the manifest).

    ``ci`` is the bootstrap interval of the correlations (:func:`meta_eval.correlation.correlate_systems`):
    ``normal`` by default, the one interval that never puts the estimate at its edge (see the Notes there).
    ``formats``/``dpi``: figure formats (vector PDF by default, with PNG previews) and the resolution of PNGs.
    ``standardise``: ``None`` (raw scores), ``"z"`` or ``"cdf"`` (per-topic standardisation before the analyses).

    Budgets of the battery (cost grows with them; the defaults keep the demo study fast): ``judgment_fractions``
    and ``judgment_draws`` (incomplete judgments: fractions of the qrels kept, seeded draws per fraction; the
    stand-alone command defaults to 20 draws), ``split_half_splits`` (random splits per half size), ``pool_depth``
    (reusability), ``gold`` (intuitiveness criterion). ``ltr_data`` (a LETOR file or folder, or ``"demo"`` for
    the embedded demo set) turns on the learning-to-rank stage: ``ltr_folds`` folds (None: all),
    ``ltr_rounds`` boosting rounds at most (early stopping on validation).
    """

    metrics: Sequence[str] = DEFAULT_METRICS
    against: Sequence[str] = DEFAULT_AGAINST
    n_resamples: int = 1000
    alpha: float = 0.05
    top: int = 15
    seed: int = 0
    mem_lists: int = 300
    g_grid_step: float = 0.1
    skip: Sequence[str] = ()
    ci: str = "normal"
    confidence: float = 0.95
    formats: Sequence[str] = ("pdf",)
    dpi: int = 300
    standardise: str | None = None
    judgment_fractions: Sequence[float] = DEFAULT_FRACTIONS
    judgment_draws: int = 5
    split_half_splits: int = 100
    pool_depth: int = 100
    gold: str = "P@10"
    ltr_data: str | Path | None = None
    ltr_folds: int | None = None
    ltr_rounds: int = 500

    def check(self) -> "StudyOptions":
        """Validate every option (an :class:`InputError` naming the option and its allowed values)."""
        from meta_eval.figures.style import check_dpi, check_formats

        self.skip = (self.skip,) if isinstance(self.skip, str) else tuple(self.skip)
        unknown = [s for s in self.skip if s not in STAGE_NAMES[1:]]
        if unknown:
            raise InputError(f"skip: unknown stage(s) {unknown}; stages are {', '.join(STAGE_NAMES[1:])}")
        if self.ci not in CI_METHODS:
            raise InputError(f"ci must be one of {', '.join(CI_METHODS)}; got {self.ci!r}")
        self.seed, self.alpha, self.confidence, self.n_resamples = check_params(
            "study", seed=self.seed, alpha=self.alpha, confidence=self.confidence, n_resamples=self.n_resamples)
        if self.n_resamples < 10:
            raise InputError(f"n_resamples must be at least 10; got {self.n_resamples!r}")
        if int(self.top) < 0 or int(self.mem_lists) < 0:
            raise InputError(f"top and mem_lists must be >= 0; got {self.top!r}, {self.mem_lists!r}")
        from meta_eval.mem.study import g_grid

        g_grid(self.g_grid_step)  # a step that divides 1, with a grid of bounded size
        if not self.metrics:
            raise InputError("at least one metric to study is needed")
        if self.standardise is not None and self.standardise not in STANDARDISE:
            raise InputError(f"standardise must be one of {', '.join(STANDARDISE)} (or None); got "
                             f"{self.standardise!r}")
        fractions = list(self.judgment_fractions)
        if not fractions or not all(0 < float(f) <= 1 for f in fractions):
            raise InputError(f"judgment_fractions must lie in (0, 1]; got {fractions}")
        self.judgment_fractions = tuple(sorted({float(f) for f in fractions}))
        for name in ("judgment_draws", "split_half_splits", "pool_depth", "ltr_rounds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise InputError(f"{name} must be a positive integer; got {value!r}")
        if self.ltr_folds is not None and (not isinstance(self.ltr_folds, (int, np.integer)) or self.ltr_folds < 1):
            raise InputError(f"ltr_folds must be a positive integer or None; got {self.ltr_folds!r}")
        if len(measures_of(self.gold)) != 1:
            raise InputError(f"gold must name one metric (e.g. P@10); {self.gold!r} names several")
        if self.ltr_data is not None and str(self.ltr_data) != "demo" and not Path(self.ltr_data).exists():
            raise InputError(f"ltr_data: {self.ltr_data} does not exist (a LETOR file or folder, or 'demo')")
        self.formats = check_formats(self.formats)
        check_dpi(self.dpi)
        return self


@dataclass
class StudyResult:
    """Where the report went and what happened in each stage."""

    out: Path
    timings: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    measures: list[str] = field(default_factory=list)
    findings: list = field(default_factory=list)


@dataclass
class _Context:
    """What the stages share. ``scores`` are the arrays the analyses use (standardised when the study is),
    ``raw`` the metric values themselves."""

    collection: Collection
    measures: list[Measure]
    scores: dict[str, np.ndarray]
    options: StudyOptions
    report: Report
    progress: bool
    against: list[str]
    colors: dict
    raw: dict[str, np.ndarray] = field(default_factory=dict)
    tables: dict = field(default_factory=dict)
    shared: dict = field(default_factory=dict)
    jobs: int | None = 1  # workers of the parallel stages (meta_eval.parallel); never changes a number
    scheduler: str | None = None
    specs: dict[str, str] = field(default_factory=dict)  # output name -> specification workers rebuild it from

    @property
    def scale(self) -> str:
        """What the analysed scores are: ``"score"``, ``"z-score"`` or ``"standardised score"``."""
        return {None: "score", "z": "z-score", "cdf": "standardised score"}[self.options.standardise]

    @property
    def forms(self) -> tuple[str, ...]:
        """Score forms the re-judging stages can use: the standard form needs the unjudged documents."""
        if self.collection.options.get("unjudged") == "remove":
            return ("condensed",)
        return ("standard", "condensed")

    @property
    def targets(self) -> list[str]:
        """The metrics under study (everything that is not an 'against' reference)."""
        return [m for m in self.scores if m not in set(self.against)] or list(self.scores)

    def table(self, section: Section, caption: str, table, name: str, full=None) -> None:
        self.tables[name] = table
        self.report.table(section, caption, table, name, full)


STAGES: list[tuple[str, str]] = [
    ("scores", "Scores"),
    ("discpower", "Discriminative power"),
    ("split-half", "Split-half stability"),
    ("anova", "ANOVA, effect sizes and topic-set size"),
    ("correlation", "Correlation between metrics"),
    ("intuitiveness", "Intuitiveness"),
    ("incomplete-judgments", "Robustness to incomplete judgments"),
    ("reusability", "Pool reusability"),
    ("informativeness", "Informativeness (maximum-entropy method)"),
    ("ltr", "Effectiveness when trained for it (learning to rank)"),
]


def _check_budgets(collection: Collection, options: StudyOptions, n_measures: int) -> None:
    """Refuse, before any stage runs, a budget whose arrays cannot fit in memory (each stage checks its own again
    when it allocates; here the study fails at once rather than after the stages before it)."""
    from meta_eval.correlation.systems import correlation_bytes
    from meta_eval.discpower.stability import split_half_bytes
    from meta_eval.memory import require
    from meta_eval.meta.judgments import masks_bytes
    from meta_eval.resampling import bootstrap_bytes

    n_sys, n_top = len(collection.systems), len(collection.topics)
    skip = set(options.skip)
    if not {"discpower", "correlation"} <= skip:
        require(bootstrap_bytes(n_top, options.n_resamples) + (0 if "correlation" in skip else correlation_bytes(
            n_measures, n_sys, n_top, options.n_resamples)), f"the study's bootstrap of {options.n_resamples:,} "
            f"replicates over {n_top} topics", "--resamples/-B")
    if "split-half" not in skip:
        require(split_half_bytes(n_sys, n_top, options.split_half_splits, len(_half_sizes(n_top))),
                f"split-half with {options.split_half_splits:,} splits", "--split-half-splits")
    if "incomplete-judgments" not in skip:
        require(masks_bytes(len(collection.judgments), options.judgment_draws, len(options.judgment_fractions),
                            n_sys, n_top, n_measures),
                f"{options.judgment_draws:,} draws of reduced qrels", "--judgment-draws")


def run_study(
    collection: Collection,
    out: str | Path,
    options: StudyOptions | None = None,
    *,
    inputs: dict | None = None,
    progress: bool = False,
    jobs: int | None = 1,
    scheduler: str | None = None,
    overwrite: bool = False,
) -> StudyResult:
    """Run every stage on ``collection`` and write the report folder ``out``.

    Parameters
    ----------
    collection : Collection
        The runs and qrels (e.g. ``me.demo_collection()``).
    out : path
        Report folder: ``report.md``, ``report.html``, the tables (CSV and LaTeX) and figures behind them,
        ``manifest.json``. Written into a temporary folder and moved into place when complete; an existing
        meta-eval result folder there is replaced as a whole, anything else is refused.
    options : StudyOptions
        Metrics (names, ``module:function`` or ``file.py:function``), the reference metrics to compare against,
        bootstrap replicates, α, top-k, seed, interval method, the informativeness sample size, figure formats.
    inputs : dict, optional
        Descriptions of the input files for the manifest (paths; checksums are computed here).
    progress : bool
        Show progress (:func:`meta_eval.progress.progress`).
    jobs, scheduler
        Worker processes (None: every core) or a Dask cluster (``"local"``, ``"tcp://HOST:PORT"``) for the
        stages' independent tasks (:mod:`meta_eval.parallel`); the numbers do not depend on them.
    overwrite : bool
        Replace ``out`` even when it holds another command's results or files meta-eval did not write
        (:func:`meta_eval.resultdir.check_output_folder`).

    A stage that fails is reported in the report and in ``StudyResult.errors``; it does not stop the others
    (the command line exits with status 1 when any did).
    """
    from meta_eval.figures.style import metric_colors
    from meta_eval.meta.standardise import standardise_all
    from meta_eval.parallel import resolve_jobs
    from meta_eval.progress import progress as progress_bar
    from meta_eval.files import named_files
    from meta_eval.resultdir import result_folder

    options = (options or StudyOptions()).check()
    started = time.perf_counter()
    named = _measures(list(options.metrics) + list(options.against))
    measures = [m for m, _ in named.values()]
    _check_budgets(collection, options, len(measures))
    against = list(_measures(list(options.against)))
    result = StudyResult(Path(out))
    read = named_files([collection.options.get("qrels"), *(collection.options.get("runs") or ())])
    with result_folder(out, kind="study", inputs=read, overwrite=overwrite) as tmp:
        report = Report(tmp, "meta-eval study", formats=options.formats, dpi=options.dpi,
                        background=resolve_jobs(jobs) > 1)  # figures drawn on a spare core
        try:
            raw = {m.output_name: np.asarray(_score(collection, m)) for m in measures}
            scores = standardise_all(raw, options.standardise)
            ctx = _Context(collection, measures, scores, options, report, progress, against,
                           colors=metric_colors(list(scores), references=against), raw=raw, jobs=jobs, scheduler=scheduler,
                           specs={name: spec for name, (_, spec) in named.items()})
            result.measures = list(scores)
            findings = report.section("Findings")
            report.section("Collection and metrics", _intro_text(ctx))
            stages = [(key, title) for key, title in STAGES
                      if key not in set(options.skip) and (key != "ltr" or options.ltr_data is not None)]
            if "informativeness" in dict(stages):
                ctx.shared["solver_ready"] = _warm_solver()
            for key, title in progress_bar(stages, desc="study", unit="stage", enabled=progress):
                section = report.section(title)
                start = time.perf_counter()
                try:
                    STAGE_FUNCTIONS[key](ctx, section)
                except Exception as exc:  # a failed stage is reported, not fatal
                    section.error = f"{type(exc).__name__}: {exc}"
                    result.errors[key] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                result.timings[key] = round(time.perf_counter() - start, 3)
            result.findings = _findings(ctx)
            findings.text = _findings_text(ctx, result.findings, result.errors)
            report.section("Reproducibility", "Inputs, options, seeds, package versions, stage timings and every "
                           "file of this folder (with checksums) are in manifest.json; rerun with the same options to "
                           "get the same numbers.")
            report.write()  # after the last figure is written (in the background on several cores)
            result.timings["total"] = round(time.perf_counter() - started, 3)
        finally:
            report.close()
        _write_manifest(tmp, result, ctx, inputs or {})
    return result


# --------------------------------------------------------------------------------------------- stages


def stage_scores(ctx: _Context, section: Section) -> None:
    import pandas as pd

    from meta_eval.evaluate import aggregate
    from meta_eval.tables import means_table

    col = ctx.collection
    means = pd.DataFrame({m.output_name: aggregate(ctx.raw[m.output_name], m) for m in ctx.measures},
                         index=pd.Index(col.systems, name="system"))
    first = ctx.targets[0]
    means = means.sort_values(first, ascending=False, kind="stable")
    section.text = (f"Mean over {len(col.topics)} topics of each metric, systems sorted by {first}; the best value of "
                    "each metric in bold. Per-topic scores are in scores.csv (run, topic, measure, value).")
    if ctx.options.standardise is not None:
        section.text += (f"\n\n{_standardise_text(ctx.options.standardise)} The means above are of the raw scores; "
                         "standardisation.csv holds each topic's reference mean and s.d. per metric, to standardise "
                         "new runs against the same reference.")
        ctx.report.data("standardisation", _standardisation_frame(ctx))
    ctx.table(section, f"Mean score of each system over {len(col.topics)} topics (best in bold)", means_table(means),
              "system_means",
              full=means.reset_index().rename(columns={"system": "run"}))
    tidy = []
    topics = np.asarray(col.topics, dtype=object)
    for name, values in ctx.raw.items():
        s_idx, t_idx = np.nonzero(~np.isnan(values))
        tidy.append(pd.DataFrame({"run": np.asarray(col.systems, dtype=object)[s_idx], "topic": topics[t_idx],
                                  "measure": name, "value": values[s_idx, t_idx]}))
    ctx.report.data("scores", pd.concat(tidy, ignore_index=True))


def stage_discpower(ctx: _Context, section: Section) -> None:
    import pandas as pd

    from meta_eval.discpower import best_systems, discriminative_power
    from meta_eval.figures.asl import asl_curve_figure
    from meta_eval.tables import discpower_table

    opts, systems = ctx.options, list(ctx.collection.systems)
    common = dict(methods=("bootstrap",), alpha=opts.alpha, n_resamples=opts.n_resamples, seed=opts.seed,
                  progress=ctx.progress, jobs=ctx.jobs, scheduler=ctx.scheduler)
    result = discriminative_power(ctx.scores, systems, **common)
    ctx.shared["discpower"] = result
    summary = result.summary().assign(subset="all")
    top_result, best = None, []
    if 1 < opts.top < len(systems):
        best = best_systems(ctx.scores, systems, opts.top)
        top_result = discriminative_power(ctx.scores, systems, subset=best, **common)
        summary = pd.concat([summary, top_result.summary().assign(subset=f"top {opts.top}")], ignore_index=True)
    ctx.shared["top_systems"] = best
    section.text = (f"Sakai's (2006) paired bootstrap test, B = {opts.n_resamples}, seed {opts.seed}, one replicate "
                    f"matrix shared by every pair and metric. A pair is told apart when its achieved significance "
                    f"level (ASL) is below α = {opts.alpha:g}; Δ required is the largest, over pairs, estimated "
                    f"difference in mean {ctx.scale} needed for significance (Sakai 2006). Bold: the most pairs told "
                    f"apart, the smallest difference required.{_standardise_note(ctx)}")
    if best:
        section.text += (f"\n\nTop {opts.top} systems: the {opts.top} systems that rank best under every metric at "
                         f"once (best_systems rule 'both': the smallest depth d at which the top-d sets of all "
                         f"{len(ctx.scores)} metrics share at least {opts.top} systems, ties broken by the best worst "
                         f"rank, then rank sum): {', '.join(best)}.")
    table = discpower_table(result.summary(), top_result.summary() if top_result else None,
                            opts.top if top_result else None)
    top_text = f" and over the top {opts.top}" if top_result else ""
    ctx.table(section, f"Discriminative power: percentage of system pairs told apart (ASL < {opts.alpha:g}) by Sakai's "
              f"paired bootstrap (B = {opts.n_resamples}) and the difference required (Δ), over all {len(systems)} "
              f"systems{top_text}", table, "discpower_summary", full=summary)
    asl = result.asl_table().assign(subset="all")
    if top_result is not None:
        asl = pd.concat([asl, top_result.asl_table().assign(subset=f"top {opts.top}")], ignore_index=True)
    ctx.report.data("asl", asl)
    fig = asl_curve_figure(result, top=top_result, method="bootstrap", colors=ctx.colors,
                           top_label=f"top {opts.top} systems" if top_result is not None else None)
    ctx.report.figure(section, f"ASL curves (paired bootstrap): system pairs sorted by ASL, zoomed on ASL ≤ "
                      f"{min(1, 4 * opts.alpha):g}; the further right a curve crosses α, the more pairs the metric "
                      "tells apart", fig, "asl_curves")


def stage_correlation(ctx: _Context, section: Section) -> None:
    from meta_eval.correlation import correlate_systems, correlate_topics, swap_table
    from meta_eval.figures.correlation import correlation_heatmap, rank_grid, scatter_grid
    from meta_eval.tables import PaperTable, agreement_table, swaps_compact

    opts, col = ctx.options, ctx.collection
    systems = list(col.systems)
    sysres = correlate_systems(ctx.scores, systems, n_resamples=opts.n_resamples, seed=opts.seed,
                               confidence=opts.confidence, ci_method=opts.ci, progress=ctx.progress)
    section.text = (f"Correlation of the system rankings by mean score. τ_AP(y|x) takes x as the reference ranking; "
                    f"the symmetrised τ_AP is the mean of both directions (τ_AP-b). Intervals: {opts.confidence:.0%} "
                    f"bootstrap {opts.ci} intervals over topics (B = {opts.n_resamples}, the design of the "
                    "discriminative-power test). system_correlation.csv holds every coefficient (τ_AP in both "
                    "directions, tie-aware τ_AP-a, Spearman, Pearson) with its interval, standard error and bootstrap "
                    f"bias.{_standardise_note(ctx)}")
    ctx.table(section, f"Agreement of the system rankings: Kendall's τ_b below the diagonal, symmetrised τ_AP above, "
              f"with {opts.confidence:.0%} bootstrap {opts.ci} intervals over {len(col.topics)} topics",
              agreement_table(sysres), "system_correlation", full=sysres.table)
    heat = correlation_heatmap(sysres.matrix("kendall_tau_b"), upper=sysres.matrix("tau_ap_sym"), fmt=".2f",
                               vmin=min(0.5, float(sysres.table.value.min())))
    ctx.report.figure(section, "Kendall's τ_b (below the diagonal) and symmetrised τ_AP (above) between system "
                      "rankings", heat, "heatmap_agreement")
    dp = ctx.shared.get("discpower")
    pvalues = {m: dp.tests[(m, "bootstrap")].asl for m in ctx.scores} if dp is not None else None
    swaps = swap_table(ctx.scores, pvalues, alpha=opts.alpha, systems=systems)
    pairs = [(x, y) for x in ctx.targets for y in ctx.against if x != y]
    test = "paired bootstrap" if pvalues is not None else "none (discriminative power skipped)"
    ctx.table(section, f"System pairs ordered oppositely by two metrics, and how many of those swaps are significant "
              f"({test}, α = {opts.alpha:g})", swaps_compact(swaps, pairs or None), "swaps", full=swaps)
    topres = correlate_topics(ctx.scores, list(col.topics))
    pooled = topres.pooled.copy()
    pooled.index.name = ""
    mask = np.triu(np.ones(pooled.shape, dtype=bool), 1)
    ctx.table(section, f"Pearson correlation of per-topic {ctx.scale}s (all system-topic pairs)",
              PaperTable(pooled.mask(mask)), "topic_correlation", full=topres.to_frame())
    if pairs:
        ctx.report.figure(section, f"System means of the {ctx.scale}s (±1 s.e. over topics) under each metric "
                          "studied (rows) against "
                          "each reference (columns); τ_AP(row | column)",
                          scatter_grid(ctx.scores, ctx.targets, ctx.against, colors=ctx.colors), "scatter_means")
        ctx.report.figure(section, "System ranks (1 = best) under each metric studied (rows) against each reference "
                          "(columns); the dashed diagonal is 'same rank'",
                          rank_grid(ctx.scores, ctx.targets, ctx.against, colors=ctx.colors), "rank_rank")


def stage_informativeness(ctx: _Context, section: Section) -> None:
    from meta_eval import mem
    from meta_eval.figures.informativeness import figure2, inferred_curves_figure, rms_bar_figure
    from meta_eval.tables import g_grid_table, informativeness_table

    opts = ctx.options
    lists = _mem_sample(ctx)
    if "solver_ready" in ctx.shared:
        ctx.shared.pop("solver_ready").join()
    # every metric gets MEM (declared, derived or sampled expected-value forms), solved by workers that rebuild
    # it from its specification
    with_form = [ctx.specs.get(name, name) for name in ctx.scores]
    section.text = (
        f"Maximum-entropy method (Aslam, Yilmaz & Pavlu 2005; graded as in the GAP paper §4.1) on "
        f"{lists.batch.n_lists} (run, topic) lists with at least one relevant document retrieved (seeded sample of at "
        f"most {opts.mem_lists}). "
        "For each metric, the maximum-entropy probability-at-rank distribution consistent with the list's value and "
        "its retrieved grade counts is solved; its expected precision-recall curve is compared with the actual one "
        "(RMS error at the points where recall changes). Lower is more informative. Metrics are compared on the "
        "same lists: those on which every metric's solve converged (a list failing for one metric is left out of "
        "every mean); the table gives n, each metric's failures and the mean ± 1 standard error.")
    result = mem.informativeness(lists, with_form, progress=ctx.progress, jobs=ctx.jobs, scheduler=ctx.scheduler)
    for warning in result.warnings:  # failure rates above 1 % (above 10 %: the metric's row is unreliable)
        print(f"meta-eval: warning: informativeness: {warning}", file=sys.stderr)
        section.text += f"\n\n**Warning:** {warning}."
    ctx.report.data("informativeness_lists", result.lists)
    first = result.summary[result.summary["threshold"] == result.summary["threshold"].min()]
    ctx.shared["informativeness_rms"] = dict(zip(first["metric"], first["mean_rms"].astype(float)))
    ctx.table(section, f"Informativeness: mean RMS error (± s.e.) of the precision-recall curves inferred by the "
              f"maximum-entropy method from each metric's value, over {lists.batch.n_lists} lists",
              informativeness_table(result.summary),
              "informativeness", full=result.summary)
    ctx.report.figure(section, "Mean RMS error of inferred vs actual PR curves (±1 s.e.)",
                      rms_bar_figure(result.summary, colors=ctx.colors), "informativeness_rms")
    if lists.batch.n_grades == 3:
        grid = mem.g_grid(opts.g_grid_step)
        fig2 = mem.gap_figure2(lists, grid=grid, filter_lists=False, progress=ctx.progress, jobs=ctx.jobs,
                               scheduler=ctx.scheduler)
        ctx.table(section, "GAP's mean RMS error over its threshold probabilities g = (g1, g2), with nDCG",
                  g_grid_table(fig2.table), "informativeness_g_grid", full=fig2.table)
        ctx.report.figure(section, "Mean RMS error (±1 s.e.) over GAP's g (GAP paper, Figure 2); nDCG does not "
                          "depend on g", figure2(fig2.table, colors=ctx.colors), "rms_vs_g")
    samples = _inferred_curves(lists, [ctx.specs.get(name, name) for name in ctx.targets], seed=opts.seed)
    ctx.report.figure(section, "Inferred (maximum-entropy) vs actual PR curves for sample lists, grade ≥ 1",
                      inferred_curves_figure(samples, colors=ctx.colors), "inferred_pr_curves")


def stage_split_half(ctx: _Context, section: Section) -> None:
    from meta_eval.meta.stages import split_half_stage
    from meta_eval.tables import split_half_table

    opts = ctx.options
    out = split_half_stage(ctx.raw, list(ctx.collection.systems), sizes=_half_sizes(len(ctx.collection.topics)),
                           n_splits=opts.split_half_splits, seed=opts.seed, standardise=opts.standardise,
                           colors=ctx.colors)
    _emit(ctx, section, out, {"split_half": (
        "Split-half stability: Kendall's τ_b and τ_AP-b between the system rankings of two disjoint halves of n "
        f"topics ({opts.split_half_splits} random splits; 2.5-97.5 percentile intervals)",
        split_half_table(out.result))})


def stage_anova(ctx: _Context, section: Section) -> None:
    from meta_eval.meta.stages import anova_stage
    from meta_eval.tables import anova_table, topic_set_size_table

    opts = ctx.options
    out = anova_stage(ctx.raw, list(ctx.collection.systems), alpha=opts.alpha, standardise=opts.standardise,
                      colors=ctx.colors)
    res, tss = out.result
    if opts.standardise is not None:
        out.text += (" Standardisation centres every topic on the systems' mean, so it removes most of the topic "
                     "effect by construction; σ² and minD are then in units of the per-topic s.d.")
    ctx.shared["topic_set_size"] = {"alpha": opts.alpha, "power": round(1 - float(tss.table["beta"].iloc[0]), 6)}
    _emit(ctx, section, out, {
        "anova": (f"Two-way ANOVA of the {ctx.scale}s (system + topic, {len(ctx.collection.topics)} topics): F and "
                  "partial ω² of each effect and the residual variance", anova_table(res.table)),
        "topic_set_size": (f"Topic-set size (Sakai 2016): topics needed for power "
                           f"{ctx.shared['topic_set_size']['power']:g} at the minimum detectable "
                           "difference minD, paired t-test and one-way ANOVA of m systems",
                           topic_set_size_table(tss.table, len(ctx.collection.topics)))},
          figures=("topic_set_size",))  # the ω² bar chart repeats the table's two columns (meta-eval anova draws it)


def stage_intuitiveness(ctx: _Context, section: Section) -> None:
    from meta_eval.meta.stages import intuitiveness_stage
    from meta_eval.tables import intuitiveness_table

    gold = ctx.options.gold
    out = intuitiveness_stage(ctx.collection, ctx.raw, gold=gold)
    if ctx.options.standardise is not None:
        out.text += (" Standardisation is an increasing map per topic and leaves every within-topic preference, "
                     "hence this analysis, unchanged: it uses the metric values themselves.")
    _emit(ctx, section, out, {"intuitiveness": (
        f"Intuitiveness against {gold} (Sakai 2012): row metric's share of its disagreements with the column metric "
        f"on which {gold} sides with it", intuitiveness_table(out.result.matrix(), gold))})


def stage_incomplete_judgments(ctx: _Context, section: Section) -> None:
    from meta_eval.meta.stages import incomplete_judgments_stage
    from meta_eval.tables import judgments_table

    opts = ctx.options
    out = incomplete_judgments_stage(ctx.collection, ctx.measures, fractions=opts.judgment_fractions,
                                     n_draws=opts.judgment_draws, forms=ctx.forms, alpha=opts.alpha,
                                     threshold=JUDGMENT_THRESHOLD, seed=opts.seed, standardise=opts.standardise,
                                     colors=ctx.colors, progress=ctx.progress, n_jobs=ctx.jobs,
                                     scheduler=ctx.scheduler)
    _emit(ctx, section, out, {"incomplete_judgments": (
        f"Robustness to incomplete judgments: agreement of each metric's system ranking under reduced qrels with "
        f"its full-qrels ranking, and the pairs a paired t-test separates (α = {opts.alpha:g}), {opts.judgment_draws} "
        "draws per fraction", judgments_table(out.result, threshold=JUDGMENT_THRESHOLD))})


def stage_reusability(ctx: _Context, section: Section) -> None:
    from meta_eval.meta.stages import reusability_stage
    from meta_eval.tables import reusability_table

    opts = ctx.options
    out = reusability_stage(ctx.collection, ctx.measures, depth=opts.pool_depth, forms=ctx.forms[:1],
                            standardise=opts.standardise, colors=ctx.colors)
    runs = out.result.runs
    still = bool((runs["rank_change"] == 0).all())
    _emit(ctx, section, out, {"reusability": (
        f"Pool reusability (leave-one-run-out, pool depth {opts.pool_depth}): change of a run's mean {ctx.scale} and "
        "rank when the judgments only it contributed are removed", reusability_table(out.result))},
          figures=() if still else None)
    if still:  # a figure of zeros says nothing the sentence does not
        section.text += (f"\n\nNo run changes rank under any metric when left out of the pool (at most "
                         f"{int(runs['removed'].max())} judgments removed per run), so the figure of rank changes is "
                         "left out.")


def stage_ltr(ctx: _Context, section: Section) -> None:
    from meta_eval.figures.ltr import ltr_figure
    from meta_eval.ltr.experiment import default_data, run_ltr
    from meta_eval.tables import ltr_table

    opts = ctx.options
    data = default_data() if str(opts.ltr_data) == "demo" else Path(opts.ltr_data)
    specs = _unique_specs([*opts.metrics, *opts.against])
    res = run_ltr(data, train_for=specs, test=specs, algorithms=("lambdamart",), max_folds=opts.ltr_folds,
                  seed=opts.seed, rel_level=ctx.collection.rel_level,
                  lambdamart={"num_boost_round": opts.ltr_rounds}, progress=ctx.progress, jobs=ctx.jobs,
                  scheduler=ctx.scheduler)
    ctx.shared["ltr"] = res
    rms = ctx.shared.get("informativeness_rms")
    s = res.settings
    section.text = (
        f"LambdaMART (LightGBM with a custom objective: RankNet gradients scaled by |ΔM| for the metric M trained "
        f"for; meta_eval.ltr) trained for each metric of the study on {data.name} ({s['folds']} fold(s) of "
        f"cross-validation over queries, seed {opts.seed}, at most {opts.ltr_rounds} boosting rounds with early "
        f"stopping on the trained-for metric on the validation queries); every ranker's test queries are scored "
        f"with every metric ({s['n_test_queries']} test queries; {res.skipped} without a relevant document not "
        "scored). Each row is tested against the best row of its test metric (paired t-test over the test "
        "queries). The GAP paper (§5) argues that a more informative metric is a better objective; "
        + ("the RMS column puts each metric's informativeness beside its effectiveness as an objective, without "
           "asserting the claim." if rms else "the informativeness stage did not run, so no RMS column."))
    full = res.table.assign(informativeness_rms=res.table["trained_for"].map(rms or {}).astype(float))
    ctx.table(section, "Effectiveness when trained for it: mean test score of a LambdaMART ranker trained for each "
              "metric (rows) on each test metric (columns), beside the trained-for metric's informativeness",
              ltr_table(res, rms, alpha=opts.alpha), "ltr", full=full)
    ctx.report.data("ltr_per_query", res.per_query)
    ctx.report.figure(section, "Mean paired difference (95 % t-interval over test queries) of each objective from "
                      "the best objective, per test metric", ltr_figure(res, alpha=opts.alpha), "ltr")


STAGE_FUNCTIONS: dict[str, Callable[[_Context, Section], None]] = {
    "scores": stage_scores,
    "discpower": stage_discpower,
    "split-half": stage_split_half,
    "anova": stage_anova,
    "correlation": stage_correlation,
    "intuitiveness": stage_intuitiveness,
    "incomplete-judgments": stage_incomplete_judgments,
    "reusability": stage_reusability,
    "informativeness": stage_informativeness,
    "ltr": stage_ltr,
}


# --------------------------------------------------------------------------------------------- helpers


def _emit(ctx: _Context, section: Section, out, compact: dict, figures: Sequence[str] | None = None) -> None:
    """Put a battery stage (:class:`meta_eval.meta.stages.StageOutput`) into its section: the method text; each
    table named in ``compact`` (stem -> (caption, PaperTable)) shown with its full frame as the CSV, the other
    frames as CSVs only; the figures named in ``figures`` (default: all)."""
    section.text = out.text
    for stem, _, frame in out.tables:
        if stem in compact:
            caption, table = compact[stem]
            ctx.table(section, caption, table, stem, full=frame)
        else:
            ctx.report.data(stem, frame)
    for stem, caption, fig in out.figures:
        if figures is None or stem in figures:
            ctx.report.figure(section, caption, fig, stem)


def _warm_solver():
    """Start compiling (or loading from cache) the MEM solver's numba kernel in a thread; returns the thread.

    Most of numba's compilation runs in LLVM without the GIL, so on a fresh install it overlaps the stages before
    informativeness, whose worker processes then load the cached kernel instead of each compiling it.
    """
    import threading

    from meta_eval.mem._newton import warm_up

    thread = threading.Thread(target=warm_up, name="meta-eval-warm-solver", daemon=True)
    thread.start()
    return thread


def _half_sizes(n_topics: int, most: int = 10) -> list[int]:
    """At most ``most`` half sizes from 1 to T // 2, evenly spaced (the largest always included)."""
    half = max(n_topics // 2, 1)
    return sorted(set(np.linspace(1, half, min(most, half)).round().astype(int).tolist()))


def _unique_specs(specs: Sequence[str]) -> list[str]:
    """The metric specifications without those naming a metric already named (the study's metric list)."""
    seen: set[str] = set()
    out = []
    for spec in specs:
        names = {m.output_name for m in measures_of(spec)}
        if not names <= seen:
            out.append(spec)
            seen |= names
    return out


def _standardise_text(method: str) -> str:
    how = ("z-scores: (score − topic mean) / topic s.d." if method == "z"
           else "normal-CDF standardised scores: Φ((score − topic mean) / topic s.d.)")
    return (f"Scores standardised per topic over the systems ({how}; Webber, Moffat & Zobel 2008; Urbano, Lima & "
            "Hanjalic 2019) before discriminative power, split-half stability, ANOVA, correlation, incomplete "
            "judgments and reusability.")


def _standardise_note(ctx: _Context) -> str:
    if ctx.options.standardise is None:
        return ""
    how = "z-scores" if ctx.options.standardise == "z" else "normal-CDF standardised scores"
    return f" Computed on per-topic {how}."


def _standardisation_frame(ctx: _Context) -> pd.DataFrame:
    """Per metric and topic: the reference mean and s.d. of the standardisation (to standardise new runs)."""
    import pandas as pd

    from meta_eval.meta.standardise import fit_standardisation

    frames = [fit_standardisation(x, ctx.options.standardise, topics=list(ctx.collection.topics)).to_frame()
              .assign(measure=name) for name, x in ctx.raw.items()]
    return pd.concat(frames, ignore_index=True)[["measure", "topic", "mean", "sd"]]


def _intro_text(ctx: _Context) -> str:
    col = ctx.collection
    s, t, d = col.shape
    return (f"{s} systems × {t} topics (depth up to {d}, grades 0..{col.max_grade}); "
            f"ordering: {col.options.get('ties', 'trec_eval')}; missing topics: {col.missing}. "
            f"Metrics under study: {', '.join(ctx.targets)}; compared against: {', '.join(ctx.against)}."
            + (f"\n\n{_standardise_text(ctx.options.standardise)} Informativeness and intuitiveness use the metric "
               "values themselves." if ctx.options.standardise else ""))


def _findings(ctx: _Context) -> list:
    """Findings from the compact tables of the stages that ran."""
    from meta_eval import findings as F

    opts, out, tables = ctx.options, [], ctx.tables
    if "discpower_summary" in tables:
        top = opts.top if ctx.shared.get("top_systems") else None
        out += F.discpower_findings(tables, name="discpower_summary", method="paired bootstrap",
                                    n_resamples=opts.n_resamples, alpha=opts.alpha, top=top)
    if "split_half" in tables:
        out += F.split_half_findings(tables, name="split_half", n_splits=opts.split_half_splits)
    if "anova" in tables:
        out += F.anova_findings(tables, name="anova")
    if "topic_set_size" in tables:
        out += F.topic_set_size_findings(tables, name="topic_set_size", n_topics=len(ctx.collection.topics),
                                         **ctx.shared["topic_set_size"])
    if "system_correlation" in tables:
        out += F.agreement_findings(tables, name="system_correlation", targets=ctx.targets, references=ctx.against,
                                    interval=opts.ci, confidence=opts.confidence)
    if "intuitiveness" in tables:
        out += F.intuitiveness_findings(tables, name="intuitiveness", gold=opts.gold, targets=ctx.targets,
                                        references=ctx.against)
    if "incomplete_judgments" in tables:
        out += F.judgments_findings(tables, name="incomplete_judgments", sampling="uniform",
                                    n_draws=opts.judgment_draws, threshold=JUDGMENT_THRESHOLD)
    if "reusability" in tables:
        out += F.reusability_findings(tables, name="reusability", unit="run", depth=opts.pool_depth)
    if "informativeness" in tables:
        out += F.informativeness_findings(tables, name="informativeness", targets=ctx.targets,
                                          references=ctx.against)
    if "ltr" in tables:
        out += F.ltr_findings(tables, name="ltr", algorithm="LambdaMART",
                              n_queries=ctx.shared["ltr"].settings["n_test_queries"])
    return out


def _findings_text(ctx: _Context, found: list, errors: dict[str, str]) -> str:
    parts = ["\n".join(f"- {f.sentence}" for f in found) if found else "No stage produced numbers to summarise."]
    best = ctx.shared.get("top_systems")
    if best:
        parts.append(f"The top-{len(best)} analysis uses the systems that rank best under all {len(ctx.scores)} "
                     f"metrics at once (rule 'both', see Discriminative power): {', '.join(best)}.")
    skipped = [s for s in ctx.options.skip]
    if skipped or errors:
        parts.append("Not summarised: " + ", ".join([*(f"{s} (skipped)" for s in skipped),
                                                     *(f"{s} (failed)" for s in errors)]) + ".")
    return "\n\n".join(parts)


def _mem_sample(ctx: _Context):
    """The lists of the informativeness stage: those with a relevant document retrieved, a seeded sample."""
    from meta_eval import mem

    eligible = mem.qualifying_lists(mem.retrieved_grade_counts(ctx.collection), min_relevant=1, min_high=0)
    limit = ctx.options.mem_lists
    if limit and eligible.size > limit:
        rng = rng_from_seed(ctx.options.seed, "study")
        eligible = eligible[np.sort(rng.choice(eligible.size, size=limit, replace=False))]
    return mem.lists_from_collection(ctx.collection, index=eligible)  # only the sample is built


def _inferred_curves(lists, measures: list[str], seed: int, n_lists: int = 3) -> pd.DataFrame:
    """Tidy actual and inferred PR curves (threshold grade >= 1) for a few sample lists."""
    import pandas as pd

    from meta_eval import mem

    rng = rng_from_seed(seed, "study")
    pick = np.sort(rng.choice(lists.batch.n_lists, size=min(n_lists, lists.batch.n_lists), replace=False))
    sample = lists.subset(pick)
    batch = sample.batch
    R = batch.counts[:, 1:].sum(1)
    frames = []
    actual = np.cumsum(batch.grades >= 1, axis=1)
    for i in range(batch.n_lists):
        n = batch.lengths[i]
        ranks = np.arange(1, n + 1)
        label = f"{sample.runs[i]}, topic {sample.topics[i]}"
        seen = actual[i, :n] > 0  # the curve starts at the first relevant document (recall 0 has no precision)
        frames.append(pd.DataFrame({"list": label, "source": "actual", "recall": actual[i, :n][seen] / R[i],
                                    "precision": actual[i, :n][seen] / ranks[seen]}))
    for m in measures:
        res = mem.solve_mem(batch, m)
        prec, rec = mem.expected_precision_recall(res.survival(1), R, batch.lengths)
        for i in range(batch.n_lists):
            n = batch.lengths[i]
            frames.append(pd.DataFrame({"list": f"{sample.runs[i]}, topic {sample.topics[i]}",
                                        "source": f"MEM from {res.measure}", "recall": rec[i, :n],
                                        "precision": prec[i, :n]}))
    return pd.concat(frames, ignore_index=True)


def _measures(specs: Sequence[str]) -> dict[str, tuple[Measure, str]]:
    """Each metric the specifications name, by output name: the measure and the specification a worker process
    rebuilds it from (:attr:`Measure.spec`: a plug-in's absolute path or module and its name)."""
    return {m.output_name: (m, m.spec) for m in resolve(specs)}


def _score(collection: Collection, measure: Measure) -> np.ndarray:
    from meta_eval.evaluate import per_topic

    return per_topic(collection, measure)


def _versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for package in ("meta-eval", "numpy", "scipy", "pandas", "pyarrow", "cvxpy", "seaborn", "matplotlib"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "not installed"
    return out


def _write_manifest(folder: Path, result: StudyResult, ctx: _Context, inputs: dict) -> None:
    from meta_eval.resultdir import _sha256

    files = {}
    for key in ("qrels", "runs"):
        for path in (ctx.collection.options.get(key) or []) if key == "runs" else [ctx.collection.options.get(key)]:
            if path and Path(path).is_file():
                files[str(path)] = _sha256(Path(path))
    options = ctx.options
    manifest = {
        "meta_eval": "study",
        "meta_eval_study": 1,
        "command": inputs.get("command", " ".join(sys.argv)),
        "inputs": {"qrels": ctx.collection.options.get("qrels"), "runs": ctx.collection.options.get("runs"),
                   "sha256": files, **{k: v for k, v in inputs.items() if k != "command"}},
        "collection_options": {k: v for k, v in ctx.collection.options.items() if k not in ("qrels", "runs")},
        "study_options": {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in vars(options).items()},
        "measures": result.measures,
        "seeds": {"bootstrap": options.seed, "informativeness": options.seed, "split_half": options.seed,
                  "incomplete_judgments": options.seed, "ltr": options.seed},
        "standardise": options.standardise,
        "top_systems": ctx.shared.get("top_systems", []),
        "versions": _versions(),
        "timings_s": result.timings,
        "errors": result.errors,
        "shape": dict(zip(("systems", "topics", "depth"), map(int, ctx.collection.shape))),
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
