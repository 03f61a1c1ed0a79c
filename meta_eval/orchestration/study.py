"""The main job: a full meta-evaluation of metrics against GAP and nDCG, written as a self-contained report folder.

The study is a loop over the analysis registry (:mod:`meta_eval.analyses`) in dependency order. The built-in
analyses, in the report's order:

1. scores — per-topic scores of every metric, mean per system (and the per-topic standardisation reference);
2. discpower — Sakai's paired bootstrap over all system pairs and over the top-k systems, ASL curves, difference
   required;
3. split-half — Voorhees' split-half stability: τ between the rankings of disjoint topic halves by half size;
4. anova — two-way ANOVA (system + topic) with ω², system-pair effect sizes, Sakai's topic-set-size design;
5. correlation — Kendall τ_b, τ_AP (both directions), Spearman and Pearson between system rankings with bootstrap
   intervals, per-topic correlations, system-pair swaps and how many are significant;
6. intuitiveness — Sakai's concordance test of every metric pair against a gold criterion (default P@10);
7. incomplete-judgments — rankings under reduced qrels (standard and condensed forms) against the full qrels;
8. reusability — leave-one-run-out pool reusability: score and rank change of a run left out of the pool;
9. informativeness — maximum-entropy inference of precision-recall curves from each metric's value, RMS error
   against the actual curves, GAP's RMS error over its threshold probabilities g, inferred-vs-actual curves;
10. ltr (opt-in, ``ltr_data``) — effectiveness of a LambdaMART ranker trained for each metric, beside the metric's
    informativeness (the GAP paper §5);
11. judge-agreement (opt-in: ``analyses=["judge-agreement(other_qrels=FILE)"]``) — how each metric's ranking moves
    under another judge's qrels.

Each analysis declares its parameters; the study sets those it maps to its options (``StudyOptions``: one name per
concept across analyses, e.g. ``seed``, ``alpha``, ``n_resamples``) and leaves the others at their defaults.
``StudyOptions.analyses`` adds analyses (a user's plug-in, ``my.py:NAME(param=value)``) or sets a built-in's other
parameters (``incomplete-judgments(sampling=depth)``). Budgets (draws, fractions, splits) are options whose
defaults keep the demo study fast. ``standardise`` (``"z"`` or ``"cdf"``) replaces every (S, T) score array by its
per-topic standardised form before the analyses that compare systems (:mod:`meta_eval.statistics.standardise`); the
scores table, informativeness and intuitiveness (unchanged by an increasing map per topic) use the metric values
themselves.

The report opens with findings, each analysis's own (:meth:`meta_eval.analyses.Result.findings`: sentences quoting
its compact tables). Tables are compact (one row per metric or a metric x metric matrix) in Markdown, HTML and
LaTeX, the full detail in CSVs; figures are vector PDF (or the requested formats) with PNG previews, every metric in
one colour throughout. The folder is written atomically (:func:`meta_eval.outputs.result_folder.result_folder`): complete with a
``manifest.json`` listing every file (inputs with checksums, options, seeds, versions, timings), or not there at all.
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
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from meta_eval.analyses import Analysis, AnalysisData, analyses, builtin_names, dependency_order, parse_analysis
from meta_eval.model.collection import Collection
from meta_eval.core.errors import InputError
from meta_eval.measures.resolver import resolve
from meta_eval.core.params import check as check_params
from meta_eval.rendering.report import Report

if TYPE_CHECKING:  # pragma: no cover
    from meta_eval.analyses import Result
    from meta_eval.measures import Measure

DEFAULT_METRICS = ("AP", "nDCG@10", "Q", "ERR")
DEFAULT_AGAINST = ("GAP", "nDCG")
#: The built-in analyses, in the report's order (the first, the scores, cannot be skipped).
STAGE_NAMES = builtin_names()
CI_METHODS = ("percentile", "basic", "bca", "normal")
STANDARDISE = ("z", "cdf")
DEFAULT_FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
JUDGMENT_THRESHOLD = 0.9  # τ_b level "equivalent rankings" (Voorhees 2000) the incomplete-judgments finding uses
#: Command-line spellings of the options whose flag is not ``--`` + the field name with dashes.
_FLAGS = {"n_resamples": "--resamples/-B", "judgment_fractions": "--judgment-fraction"}


@dataclass
class StudyOptions:
    """Everything that determines a study's numbers and files (written to the manifest).

    ``ci`` is the bootstrap interval of the correlations (:func:`meta_eval.statistics.correlation.correlate_systems`):
    ``normal`` by default, the one interval that never puts the estimate at its edge (see the Notes there).
    ``formats``/``dpi``: figure formats (vector PDF by default, with PNG previews) and the resolution of PNGs.
    ``standardise``: ``None`` (raw scores), ``"z"`` or ``"cdf"`` (per-topic standardisation before the analyses).

    Budgets of the battery (cost grows with them; the defaults keep the demo study fast): ``judgment_fractions``
    and ``judgment_draws`` (incomplete judgments: fractions of the qrels kept, seeded draws per fraction; the
    stand-alone command defaults to 20 draws), ``split_half_splits`` (random splits per half size), ``pool_depth``
    (reusability), ``gold`` (intuitiveness criterion). ``ltr_data`` (a LETOR file or folder, or ``"demo"`` for
    the embedded demo set) turns on the learning-to-rank analysis: ``ltr_folds`` folds (None: all),
    ``ltr_rounds`` boosting rounds at most (early stopping on validation).

    ``analyses``: more analyses, each a specification (``judge-agreement(other_qrels=llm.qrels)``,
    ``my.py:NAME``, ``module:NAME(param=value)``) or a declaration (:func:`meta_eval.analyses.analysis`); naming a
    built-in sets its parameters beyond these options. Each analysis's options are checked against its declared
    parameters (:mod:`meta_eval.analyses`).
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
    analyses: Sequence[Any] = ()

    def check(self) -> "StudyOptions":
        """Validate every option (an :class:`InputError` naming the option and its allowed values): the study's
        own, then each analysis's against its declared parameters."""
        from meta_eval.rendering.figure_style import check_dpi, check_formats
        from meta_eval.statistics.maxent.pr_inference import g_grid

        self.skip = (self.skip,) if isinstance(self.skip, str) else tuple(self.skip)
        unknown = [s for s in self.skip if s not in STAGE_NAMES[1:]]
        if unknown:
            raise InputError(f"skip: unknown stage(s) {unknown}; stages are {', '.join(STAGE_NAMES[1:])}")
        self.seed, self.alpha, self.confidence, self.n_resamples = check_params(
            "study", seed=self.seed, alpha=self.alpha, confidence=self.confidence, n_resamples=self.n_resamples)
        if self.n_resamples < 10:
            raise InputError(f"n_resamples must be at least 10; got {self.n_resamples!r}")
        g_grid(self.g_grid_step)  # a step that divides 1, with a grid of bounded size (its own message)
        if not self.metrics:
            raise InputError("at least one metric to study is needed")
        if self.standardise is not None and self.standardise not in STANDARDISE:
            raise InputError(f"standardise must be one of {', '.join(STANDARDISE)} (or None); got "
                             f"{self.standardise!r}")
        self.analyses = (self.analyses,) if isinstance(self.analyses, (str, Analysis)) else tuple(self.analyses)
        for decl in analyses():
            for name, value in _checked_fields(decl, self).items():
                setattr(self, name, value)
        self.judgment_fractions = tuple(sorted(set(self.judgment_fractions)))
        for spec in self.analyses:
            parse_analysis(spec)  # a bad name, parameter or plug-in now, before any work
        self.formats = check_formats(self.formats)
        check_dpi(self.dpi)
        return self


def _checked_fields(decl: Analysis, options: StudyOptions) -> dict[str, Any]:
    """The options that set ``decl``'s parameters, each checked against the parameter's declaration (the message
    names the option)."""
    from dataclasses import replace

    out = {}
    for param in decl.params:
        name = decl.study.get(param.name)
        if isinstance(name, str):
            out[name] = replace(param, name=name).validate(getattr(options, name), "study")
    return out


@dataclass
class StudyResult:
    """Where the report went and what happened in each analysis (``results``: the result objects, by name)."""

    out: Path
    timings: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    measures: list[str] = field(default_factory=list)
    findings: list = field(default_factory=list)
    results: dict[str, Result] = field(default_factory=dict)


def analysis_inputs(options: StudyOptions) -> list[str]:
    """The files the added analyses read: a plug-in's file, and the files their parameters name (declared as
    inputs of the study before any work, so that no output replaces them)."""
    from meta_eval.measures.plugins import parse_spec

    files: list[str] = []
    for spec in options.analyses:
        decl, params = parse_analysis(spec)
        plugin = parse_spec(spec) if isinstance(spec, str) else None
        files += ([plugin.target] if plugin is not None and plugin.kind == "file" else []) + decl.input_files(params)
    return files


def study_plan(data: AnalysisData, options: StudyOptions) -> list[tuple[Analysis, dict[str, Any]]]:
    """The analyses a study runs, in dependency order, each with its parameters: the built-ins not skipped and
    enabled by their parameters, then the added ones (``options.analyses``).

    A parameter takes, in turn: the value given in ``options.analyses`` for that analysis, the study option the
    declaration maps it to (``Analysis.study``), its default.
    """
    skip = set(options.skip)
    given = [parse_analysis(spec) for spec in options.analyses]
    builtin = set(STAGE_NAMES)
    overrides = {decl.name: values for decl, values in given if decl.name in builtin}
    chosen: list[tuple[Analysis, dict[str, Any]]] = []
    for decl in analyses():
        if decl.name in skip:
            continue
        params = decl.bind({**_study_values(decl, data, options), **overrides.get(decl.name, {})}, "study")
        if decl.enabled is None or decl.enabled(params) or decl.name in overrides:
            chosen.append((decl, params))
    for decl, values in given:
        if decl.name not in builtin and decl.name not in skip:
            chosen.append((decl, decl.bind({**_study_values(decl, data, options), **values}, "study")))
    params = {decl.name: p for decl, p in chosen}
    return [(decl, params[decl.name]) for decl in dependency_order(decl for decl, _ in chosen)]


def _study_values(decl: Analysis, data: AnalysisData, options: StudyOptions) -> dict[str, Any]:
    out = {}
    for param, source in decl.study.items():
        out[param] = getattr(options, source) if isinstance(source, str) else source(data, options)
    return out


def _check_budgets(data: AnalysisData, plan: list[tuple[Analysis, dict[str, Any]]]) -> None:
    """Refuse, before any analysis runs, a budget whose arrays cannot fit in memory (each analysis checks its own
    again when it allocates; here the study fails at once rather than after the analyses before it)."""
    from meta_eval.core.memory_budget import require

    for decl, params in plan:
        for need in decl.memory(data, params) if decl.memory is not None else ():
            field_name = decl.study.get(need.lower, need.lower)
            flag = _FLAGS.get(field_name, "--" + str(field_name).replace("_", "-"))
            require(need.n_bytes, need.what, flag)


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
    """Run every analysis on ``collection`` and write the report folder ``out``.

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
        bootstrap replicates, α, top-k, seed, interval method, the informativeness sample size, figure formats,
        more analyses.
    inputs : dict, optional
        Descriptions of the input files for the manifest (paths; checksums are computed here).
    progress : bool
        Show progress (:func:`meta_eval.core.progress.progress`).
    jobs, scheduler
        Worker processes (None: every core) or a Dask cluster (``"local"``, ``"tcp://HOST:PORT"``) for the
        analyses' independent tasks (:mod:`meta_eval.core.parallel`); the numbers do not depend on them.
    overwrite : bool
        Replace ``out`` even when it holds another command's results or files meta-eval did not write
        (:func:`meta_eval.outputs.result_folder.check_output_folder`).

    An analysis that fails is reported in the report and in ``StudyResult.errors``; it does not stop the others
    (the command line exits with status 1 when any did).
    """
    from meta_eval.core.file_identity import named_files
    from meta_eval.core.parallel import resolve_jobs
    from meta_eval.core.progress import progress as progress_bar
    from meta_eval.outputs.result_folder import result_folder

    options = (options or StudyOptions()).check()
    started = time.perf_counter()
    named = _measures(list(options.metrics) + list(options.against))
    measures = [m for m, _ in named.values()]
    against = list(_measures(list(options.against)))
    how = dict(jobs=jobs, scheduler=scheduler, progress=progress, specs={n: spec for n, (_, spec) in named.items()})
    shape = AnalysisData(collection, measures, {}, options.standardise, against, **how)  # before any score
    plan = study_plan(shape, options)
    _check_budgets(shape, plan)
    result = StudyResult(Path(out))
    read = named_files([collection.options.get("qrels"), *(collection.options.get("runs") or ()),
                        *(f for decl, params in plan for f in decl.input_files(params))])
    with result_folder(out, kind="study", inputs=read, overwrite=overwrite) as tmp:
        report = Report(tmp, "meta-eval study", formats=options.formats, dpi=options.dpi,
                        background=resolve_jobs(jobs) > 1)  # figures drawn on a spare core
        try:
            start = time.perf_counter()
            raw = {m.output_name: np.asarray(_score(collection, m)) for m in measures}
            result.timings["scoring"] = round(time.perf_counter() - start, 3)
            data = AnalysisData(collection, measures, raw, options.standardise, against, **how)
            data.scores  # noqa: B018 - standardised once, before the first analysis
            result.measures = list(raw)
            findings = report.section("Findings")
            report.section("Collection and metrics", _intro_text(data))
            for decl, _ in plan:
                if decl.prepare is not None:
                    data.prepared[decl.name] = decl.prepare()
            found: dict[str, list] = {}
            for decl, params in progress_bar(plan, desc="analyses", unit="stage", enabled=progress):
                section = report.section(decl.title)
                start = time.perf_counter()
                try:
                    missing = [r for r in decl.requires if r not in data.results]
                    if missing:
                        raise InputError(f"needs {', '.join(missing)}, which failed")
                    done = decl(data, **params)
                    report.add(section, done)
                    found[decl.name] = done.findings()
                    data.results[decl.name] = done
                except Exception as exc:  # a failed analysis is reported, not fatal
                    section.error = f"{type(exc).__name__}: {exc}"
                    result.errors[decl.name] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                result.timings[decl.name] = round(time.perf_counter() - start, 3)
            result.results = dict(data.results)
            result.findings = [f for decl, _ in plan for f in found.get(decl.name, ())]
            findings.text = _findings_text(data, options, result.findings, result.errors)
            report.section("Reproducibility", "Inputs, options, seeds, package versions, stage timings and every "
                           "file of this folder (with checksums) are in manifest.json; rerun with the same options to "
                           "get the same numbers.")
            start = time.perf_counter()
            report.write()  # after the last figure is written (in the background on several cores)
            result.timings["report"] = round(time.perf_counter() - start, 3)
            result.timings["total"] = round(time.perf_counter() - started, 3)
        finally:
            report.close()
        _write_manifest(tmp, result, data, options, inputs or {})
    return result


# --------------------------------------------------------------------------------------------- helpers


def _intro_text(data: AnalysisData) -> str:
    from meta_eval.statistics.standardise import describe

    col = data.collection
    s, t, d = col.shape
    return (f"{s} systems × {t} topics (depth up to {d}, grades 0..{col.max_grade}); "
            f"ordering: {col.options.get('ties', 'trec_eval')}; missing topics: {col.missing}. "
            f"Metrics under study: {', '.join(data.targets)}; compared against: {', '.join(data.against)}."
            + (f"\n\n{describe(data.standardise)} Informativeness and intuitiveness use the metric "
               "values themselves." if data.standardise else ""))


def _top_systems(data: AnalysisData) -> list[str]:
    dp = data.results.get("discpower")
    return list(dp.best) if dp is not None else []


def _findings_text(data: AnalysisData, options: StudyOptions, found: list, errors: dict[str, str]) -> str:
    parts = ["\n".join(f"- {f.sentence}" for f in found) if found else "No stage produced numbers to summarise."]
    best = _top_systems(data)
    if best:
        parts.append(f"The top-{len(best)} analysis uses the systems that rank best under all {len(data.scores)} "
                     f"metrics at once (rule 'both', see Discriminative power): {', '.join(best)}.")
    skipped = list(options.skip)
    if skipped or errors:
        parts.append("Not summarised: " + ", ".join([*(f"{s} (skipped)" for s in skipped),
                                                     *(f"{s} (failed)" for s in errors)]) + ".")
    return "\n\n".join(parts)


def _measures(specs: Sequence[str]) -> dict[str, tuple[Measure, str]]:
    """Each metric the specifications name, by output name: the measure and the specification a worker process
    rebuilds it from (:attr:`Measure.spec`: a plug-in's absolute path or module and its name)."""
    return {m.output_name: (m, m.spec) for m in resolve(specs)}


def _score(collection: Collection, measure: Measure) -> np.ndarray:
    from meta_eval.measures.scoring import per_topic

    return per_topic(collection, measure)


def _versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for package in ("meta-eval", "numpy", "scipy", "pandas", "pyarrow", "cvxpy", "seaborn", "matplotlib"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "not installed"
    return out


def _write_manifest(folder: Path, result: StudyResult, data: AnalysisData, options: StudyOptions,
                    inputs: dict) -> None:
    from meta_eval.outputs.result_folder import _sha256

    files = {}
    for key in ("qrels", "runs"):
        for path in (data.collection.options.get(key) or []) if key == "runs" else [data.collection.options.get(key)]:
            if path and Path(path).is_file():
                files[str(path)] = _sha256(Path(path))
    manifest = {
        "meta_eval": "study",
        "meta_eval_study": 1,
        "command": inputs.get("command", " ".join(sys.argv)),
        "inputs": {"qrels": data.collection.options.get("qrels"), "runs": data.collection.options.get("runs"),
                   "sha256": files, **{k: v for k, v in inputs.items() if k != "command"}},
        "collection_options": {k: v for k, v in data.collection.options.items() if k not in ("qrels", "runs")},
        "study_options": {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in vars(options).items()},
        "measures": result.measures,
        "seeds": {"bootstrap": options.seed, "informativeness": options.seed, "split_half": options.seed,
                  "incomplete_judgments": options.seed, "ltr": options.seed},
        "standardise": options.standardise,
        "top_systems": _top_systems(data),
        "versions": _versions(),
        "timings_s": result.timings,
        "errors": result.errors,
        "shape": dict(zip(("systems", "topics", "depth"), map(int, data.collection.shape))),
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
