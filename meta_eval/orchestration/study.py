"""The main job: a full meta-evaluation of metrics against GAP and nDCG, written as a self-contained report folder.

The study is a loop over the analyses registry (:mod:`meta_eval.analyses`) in the report's order (each analysis's
``order``) and dependency order: every built-in analysis that reads what the study has (a collection, or only
score tables) and is enabled by its parameters, then the analyses the user adds (``my.py:NAME``). An analysis that
needs more than the study has (the rankings, for a study of score tables) is listed as not applicable, with the
reason.

Parameters have one name from the engine up to the command line: the study sets the concepts every analysis
shares (:data:`SHARED`: ``seed``, ``alpha``, ``n_resamples``, ``confidence``) once, and each analysis's own through
``params`` (``{"informativeness": {"lists": 500}}``; on the command line ``--informativeness-lists 500``) or a
specification (``informativeness(lists=500)``). ``standardise`` (``"z"`` or ``"cdf"``) replaces every (S, T) score
array by its per-topic standardised form before the analyses that compare systems
(:mod:`meta_eval.statistics.standardise`).

The report opens with findings, each analysis's own (:meth:`meta_eval.analyses.Result.findings`: sentences quoting
its compact tables). Tables are compact (one row per metric or a metric x metric matrix) in Markdown, HTML and
LaTeX, the full detail in CSVs; figures are vector PDF (or the requested formats) with PNG previews, every metric in
one colour throughout. The folder is written atomically (:func:`meta_eval.outputs.result_folder.result_folder`):
complete with a ``manifest.json`` listing every file (inputs with checksums, options, seeds, versions, timings,
which analysis wrote which file), or not there at all.
"""

from __future__ import annotations

import json
import platform
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from meta_eval.analyses import (DEFAULT_AGAINST, DEFAULT_METRICS, NEEDS, Analysis, AnalysisData, analyses,
                                dependency_order, parse_analysis)
from meta_eval.core.errors import InputError
from meta_eval.core.params import ANALYSIS_PARAMS
from meta_eval.core.progress import CostModel
from meta_eval.rendering.report import Report

if TYPE_CHECKING:  # pragma: no cover
    from meta_eval.analyses import Result
    from meta_eval.core.progress import StageProgress

#: The parameters the study sets once for every analysis that declares them (paired comparisons need one seed).
SHARED = ("seed", "alpha", "n_resamples", "confidence")
STANDARDISE = ("z", "cdf")


@dataclass
class StudyOptions:
    """Everything that determines a study's numbers and files (written to the manifest).

    ``metrics`` are studied against the references ``against``. ``seed``, ``alpha``, ``n_resamples`` and
    ``confidence`` are set once for every analysis that declares them (:data:`SHARED`); ``params`` sets an
    analysis's own parameters (``{"split-half": {"n_splits": 20}}``), ``analyses`` adds analyses (a user's plug-in
    ``my.py:NAME(param=value)``, or an opt-in built-in ``judge-agreement(other_qrels=llm.qrels)``) or sets a
    built-in's parameters the same way; ``skip`` leaves analyses out. ``formats``/``dpi``: figure formats (vector
    PDF by default, with PNG previews) and the resolution of PNGs; ``figures=False`` draws none (the tables and the
    report only). ``standardise``: ``None`` (raw scores), ``"z"``
    or ``"cdf"``. ``systems``/``topics``: study only these (none: all), cut as every analysis command cuts them
    (:meth:`~meta_eval.analyses.AnalysisData.subset`). Each value is checked against its analysis's declared
    parameter before any work.
    """

    metrics: Sequence[str] = DEFAULT_METRICS
    against: Sequence[str] = DEFAULT_AGAINST
    seed: int = 0
    alpha: float = 0.05
    n_resamples: int = 1000
    confidence: float = 0.95
    params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    analyses: Sequence[Any] = ()
    skip: Sequence[str] = ()
    standardise: str | None = None
    formats: Sequence[str] = ("pdf",)
    dpi: int = 300
    figures: bool = True
    systems: Sequence[str] = ()
    topics: Sequence[str] = ()

    def check(self) -> "StudyOptions":
        """Validate every option (an :class:`InputError` naming the option and its allowed values): the shared
        parameters, the skipped and added analyses, every analysis's own parameters."""
        from meta_eval.rendering.figure_style import check_dpi, check_formats

        for name in SHARED:
            setattr(self, name, ANALYSIS_PARAMS[name].validate(getattr(self, name), "study"))
        if not self.metrics:
            raise InputError("at least one metric to study is needed")
        if self.standardise is not None and self.standardise not in STANDARDISE:
            raise InputError(f"standardise must be one of {', '.join(STANDARDISE)} (or None); got "
                             f"{self.standardise!r}")
        known = {a.name: a for a in analyses()}
        self.skip = (self.skip,) if isinstance(self.skip, str) else tuple(dict.fromkeys(self.skip))
        unknown = [s for s in self.skip if s not in known or s == "scores"]
        if unknown:
            raise InputError(f"skip: unknown analysis {unknown}; analyses are {', '.join(list(known)[1:])}")
        self.analyses = self._specs()
        names = [decl.name for decl, _ in self.added()]  # a bad name, parameter or plug-in now
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise InputError(f"analysis {twice[0]} is added twice (once, with every parameter it needs)")
        for name, values in dict(self.params).items():
            if name not in known:
                raise InputError(f"params: unknown analysis {name!r}; analyses are {', '.join(known)}")
            known[name].bind(values, f"study: analysis {name}")
        for decl, values in self.added():  # one value per parameter: the manifest records what was used
            twice = sorted(set(values) & set(dict(self.params).get(decl.name, {})))
            if twice:
                raise InputError(f"analysis {decl.name}: {twice[0]} is given twice, in --analysis "
                                 f"'{decl.name}(...)' and as the study's parameter of {decl.name} (an option "
                                 f"--{decl.name}-..., or [study.params.{decl.name}]); give it once")
        self.formats = check_formats(self.formats)
        check_dpi(self.dpi)
        return self

    def added(self) -> list[tuple[Analysis, dict[str, Any]]]:
        """The analyses ``analyses`` names, each with the parameters its specification sets: parsed once, whichever
        step of the study asks first (a plug-in's file is loaded once per study), and again when ``analyses``
        changes."""
        specs = self._specs()
        parsed = self.__dict__.get("_added")
        if parsed is None or parsed[0] != specs:
            self._added = parsed = (specs, [parse_analysis(spec) for spec in specs])
        return parsed[1]

    def _specs(self) -> tuple:
        """``analyses`` as a tuple of specifications (one given alone included)."""
        return (self.analyses,) if isinstance(self.analyses, (str, Analysis)) else tuple(self.analyses)

    def __getstate__(self) -> dict[str, Any]:
        """The options without their parsed analyses (a worker process that runs the study loads a plug-in's code
        itself: its module is not importable by name there)."""
        return {name: value for name, value in vars(self).items() if name != "_added"}

    def record(self) -> dict[str, Any]:
        """The options as a manifest records them (sequences as lists)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return {name: list(value) if isinstance(value, (list, tuple)) else value for name, value in values.items()}


@dataclass
class StudyResult:
    """Where the report went and what happened in each analysis (``results``: the result objects, by name;
    ``skipped``: analyses that could not run on these data, with the reason)."""

    out: Path
    timings: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    measures: list[str] = field(default_factory=list)
    findings: list = field(default_factory=list)
    results: dict[str, Result] = field(default_factory=dict)
    files: dict[str, list[str]] = field(default_factory=dict)


def analysis_inputs(options: StudyOptions) -> list[str]:
    """The files the analyses read beside the collection: a plug-in's file, and the files their parameters name
    (declared as inputs of the study before any work, so that no output replaces them)."""
    from meta_eval.measures.plugins import parse_spec

    files: list[str] = []
    for spec, (decl, params) in zip(options._specs(), options.added()):
        plugin = parse_spec(spec) if isinstance(spec, str) else None
        files += ([plugin.target] if plugin is not None and plugin.kind == "file" else []) + decl.input_files(params)
    for name, values in dict(options.params).items():
        decl = next(a for a in analyses() if a.name == name)
        files += decl.input_files(values)
    return files


def study_plan(data: AnalysisData, options: StudyOptions
               ) -> tuple[list[tuple[Analysis, dict[str, Any]]], dict[str, str]]:
    """The analyses a study runs, in dependency order, each with its parameters; and those that cannot run on the
    data (an analysis of rankings in a study of score tables), with the reason.

    A parameter takes, in turn: the value given in ``options.analyses`` for that analysis, its ``options.params``
    value, the study's shared value (:data:`SHARED`), its default.
    """
    skip = set(options.skip)
    given = {decl.name: (decl, values) for decl, values in options.added()}
    has = "collection" if data.collection is not None else "scores"
    chosen, not_applicable = [], {}
    builtin = analyses()
    for decl in [*builtin, *(d for d, _ in given.values() if d.name not in {b.name for b in builtin})]:
        if decl.name in skip:
            continue
        shared = {p.name: getattr(options, p.name) for p in decl.params if p.name in SHARED}
        params = decl.bind({**shared, **dict(options.params).get(decl.name, {}),
                            **(given[decl.name][1] if decl.name in given else {})}, "study")
        asked = decl.name in given or decl.name in options.params
        if decl.enabled is not None and not decl.enabled(params) and not asked:
            continue
        if NEEDS.index(decl.needs) > NEEDS.index(has):
            not_applicable[decl.name] = "it reads the rankings of the runs, and the study has per-topic scores only"
            continue
        reason = decl.not_applicable(data)
        if reason:
            not_applicable[decl.name] = reason
            continue
        unknown = _unknown_measures(data) if decl.needs == "measures" and has == "scores" else []
        if unknown:  # a score table may hold a measure only its author can compute
            not_applicable[decl.name] = (f"it studies the measures' definitions, and meta-eval does not know "
                                         f"{', '.join(unknown)} (a score table's name)")
            continue
        chosen.append((decl, params))
    params = {decl.name: p for decl, p in chosen}
    return [(decl, params[decl.name]) for decl in dependency_order(decl for decl, _ in chosen)], not_applicable


def _unknown_measures(data: AnalysisData) -> list[str]:
    """The score table's measure names meta-eval cannot resolve (read from data: never loading code)."""
    from meta_eval.measures.resolver import known_measure

    return [name for name in data.raw if known_measure(name) is None]


def check_before(options: StudyOptions) -> None:
    """What the analyses check on the system before any work (:attr:`Analysis.before`: a cache folder that can be
    written), for every analysis the study may run: an error now rather than after the analyses before it."""
    given = {decl.name: values for decl, values in options.added()}
    for decl in analyses():
        if decl.before is None or decl.name in options.skip:
            continue
        shared = {p.name: getattr(options, p.name) for p in decl.params if p.name in SHARED}
        params = decl.bind({**shared, **dict(options.params).get(decl.name, {}), **given.get(decl.name, {})})
        if decl.enabled is None or decl.enabled(params) or decl.name in given:
            decl.before(params)


def _check_budgets(data: AnalysisData, plan: list[tuple[Analysis, dict[str, Any]]]) -> None:
    """Refuse, before any analysis runs, a budget whose arrays cannot fit in memory (each analysis checks its own
    again when it allocates; here the study fails at once rather than after the analyses before it)."""
    from meta_eval.core.memory_budget import require

    for decl, params in plan:
        for need in decl.memory(data, params) if decl.memory is not None else ():
            flag = study_flag(decl, decl.param(need.lower))
            require(need.n_bytes, need.what, flag)


def study_flag(decl: Analysis, param) -> str:
    """The study's option of an analysis parameter: the shared ones plain (``--seed``, ``--resamples/-B``), the
    others prefixed with the analysis (``--split-half-splits`` for split-half's ``--splits``)."""
    if param.name in SHARED:
        return ANALYSIS_PARAMS[param.name].option if param.name != "n_resamples" else "--resamples/-B"
    long = next((f for f in (param.flags or (param.option,)) if f.startswith("--")), param.option)
    return f"--{decl.name}-{long.split('/')[0][2:]}"


def run_study(source: Any, out: str | Path, options: StudyOptions | None = None, *, inputs: dict | None = None,
              progress: bool = False, jobs: int | None = 1, scheduler: str | None = None,
              overwrite: bool = False) -> StudyResult:
    """Run every analysis on ``source`` and write the report folder ``out``.

    Parameters
    ----------
    source : Collection or ScoreTable
        The runs and qrels (e.g. ``me.demo_collection()``), or per-topic scores
        (:func:`meta_eval.inputs.score_tables.read_scores`): then the analyses of scores run and the others are
        listed as not applicable.
    out : path
        Report folder: ``report.md``, ``report.html``, the tables (CSV and LaTeX) and figures behind them,
        ``manifest.json``. Written into a temporary folder and moved into place when complete; an existing
        meta-eval result folder there is replaced as a whole, anything else is refused.
    options : StudyOptions
        Metrics (names, ``module:function`` or ``file.py:function``), the references, the shared parameters, each
        analysis's parameters, analyses to add or skip, figure formats.
    inputs : dict, optional
        Descriptions of the input files for the manifest (paths; checksums are computed here).
    progress : bool
        Show progress: a line as each analysis begins, with the one that ended (its measured and estimated time),
        what follows and the time left — the analyses' cost models (:attr:`Analysis.cost`) at the speed measured
        so far (:class:`meta_eval.core.progress.StageProgress`); each analysis's own progress in its units; the
        figures the report waits for.
    jobs, scheduler
        Worker processes (None: every core) or a Dask cluster (``"local"``, ``"tcp://HOST:PORT"``) for the
        analyses' independent tasks (:mod:`meta_eval.core.parallel`); the numbers do not depend on them.
    overwrite : bool
        Replace ``out`` even when it holds another command's results or files meta-eval did not write.

    Notes
    -----
    An analysis that fails is reported in the report and in ``StudyResult.errors``; it does not stop the others
    (the command line exits with status 1 when any did).
    """
    from meta_eval.core.file_identity import named_files
    from meta_eval.core.parallel import resolve_jobs
    from meta_eval.outputs.result_folder import result_folder

    options = (options or StudyOptions()).check()
    check_before(options)
    started = time.perf_counter()
    how = dict(jobs=jobs, scheduler=scheduler, progress=progress)
    start = time.perf_counter()
    data = _data(source, options, how).subset(list(options.systems) or None, list(options.topics) or None)
    result = StudyResult(Path(out), measures=list(data.raw))
    result.timings["scoring"] = round(time.perf_counter() - start, 3)
    plan, result.skipped = study_plan(data, options)
    _check_budgets(data, plan)
    collection = data.collection
    read = named_files([*(_source_files(source)), *(f for decl, params in plan for f in decl.input_files(params))])
    with result_folder(out, kind="study", inputs=read, overwrite=overwrite) as tmp:
        report = Report(tmp, "meta-eval study", formats=options.formats, dpi=options.dpi, figures=options.figures,
                        background=resolve_jobs(jobs) > 1, progress=progress)  # figures drawn on a spare core
        stages = study_progress(data, plan, enabled=progress)
        stages.beside = lambda: figure_backlog(report, stages.speed())
        try:
            data.scores  # noqa: B018 - standardised once, before the first analysis
            findings = report.section("Findings")
            report.section("Collection and metrics", _intro_text(data, source))
            report.add_data(data)
            for decl, _ in plan:
                if decl.prepare is not None:
                    data.prepared[decl.name] = decl.prepare()
            found: dict[str, list] = {}
            for decl, params in plan:
                stages.begin(decl.name)
                section = report.section(decl.title)
                start = time.perf_counter()
                first = len(report.written)
                try:
                    missing = [r for r in decl.requires if r not in data.results]
                    if missing:
                        raise InputError(f"needs {', '.join(missing)}, which failed")
                    done = decl(data, **params)
                    if not decl.source:  # a plug-in's files go in a folder of its own: they cannot clash
                        _check_stems(done, result.files, decl.name)
                    report.add(section, done, folder=decl.name if decl.source else "")
                    found[decl.name] = done.finding_list
                    data.results[decl.name] = done
                except Exception as exc:  # a failed analysis is reported, not fatal
                    section.error = f"{type(exc).__name__}: {exc}"
                    result.errors[decl.name] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
                result.files[decl.name] = sorted(report.written[first:])
                result.timings[decl.name] = round(time.perf_counter() - start, 3)
            result.results = dict(data.results)
            result.findings = [f for decl, _ in plan for f in found.get(decl.name, ())]
            findings.text = _findings_text(data, options, result)
            report.section("Reproducibility", "Inputs, options, seeds, package versions, analysis timings and every "
                           "file of this folder (with checksums, and which analysis wrote it) are in manifest.json; "
                           "rerun with the same options to get the same numbers.")
            start = time.perf_counter()
            waiting = report.backlog()[0]  # figures still drawn in the background: the report waits for them
            stages.begin("report", estimate=figure_backlog(report, stages.speed()) + REPORT_COST.seconds(len(plan))
                         if waiting else None)
            report.write()  # after the last figure is written (in the background on several cores)
            stages.close()
            result.timings["report"] = round(time.perf_counter() - start, 3)
            result.timings["total"] = round(time.perf_counter() - started, 3)
        finally:
            stages.close(completed=False)
            report.close()
        _write_manifest(report, result, data, options, inputs or {}, collection)
    return result


#: One core's seconds of the report phase after the analyses (the Markdown and HTML of every section, the
#: manifest), per analysis in the report (scripts/calibrate_study_cost.py, in a study with jobs=1; the figures are
#: the analyses' own cost, or the backlog of the background writer, measured when the phase begins).
REPORT_COST = CostModel.fit("analyses in the report", float,
                            {"demo, quick": (10, 0.008), "demo": (10, 0.008), "TREC-COVID, quick": (10, 0.007),
                             "TREC-COVID": (10, 0.008)})


#: The figures of a study drawn and written (PDF and its PNG preview), one core's seconds in all
#: (scripts/calibrate_study_cost.py: "figures", counted in their analyses' seconds too): {run: (figures, seconds)}.
FIGURE_RUNS = {"demo, quick": (13, 7.753), "demo": (12, 7.494), "TREC-COVID, quick": (13, 8.478),
               "TREC-COVID": (13, 7.956)}
#: One core's seconds per figure: the runs' seconds over their figures (a figure costs about the same whatever the
#: collection's size: it draws a table of metrics, not the collection), 0.62 s.
FIGURE_COST = CostModel("figures", float, per_unit_s=sum(s for _, s in FIGURE_RUNS.values())
                        / sum(n for n, _ in FIGURE_RUNS.values()), measured=FIGURE_RUNS)


def figure_backlog(report: Report, speed: float = 1.0) -> float:
    """Seconds the background figure writer still needs: the figures waiting at the measured time of those
    written, or before the first is written at :data:`FIGURE_COST` times ``speed`` (0 without a writer)."""
    waiting, seconds = report.backlog()
    return seconds if seconds is not None else FIGURE_COST.seconds(waiting) * speed


def study_progress(data: AnalysisData, plan: list[tuple[Analysis, dict[str, Any]]], *,
                   enabled: bool = True) -> StageProgress:
    """The study's progress over its analyses and its report: each estimated by its cost model
    (:attr:`Analysis.cost`; None without one)."""
    from meta_eval.core.progress import StageProgress

    estimates = [(decl.name, estimated_seconds(decl, data, params) if enabled else None) for decl, params in plan]
    return StageProgress(estimates, closing=("report", REPORT_COST.seconds(len(plan))), desc="study",
                         noun="analyses", enabled=enabled)


def estimated_seconds(decl: Analysis, data: AnalysisData, params: dict[str, Any]) -> float | None:
    """One core's seconds ``decl`` is estimated to take on ``data`` (its cost model), or None: it has none, or its
    model fails on these data (a plug-in's — an estimate never stops a study)."""
    if decl.cost is None:
        return None
    try:
        return decl.cost.seconds(data, params)
    except Exception:  # noqa: BLE001 -- a plug-in's cost model is its own; the study says "unknown cost"
        return None


def _data(source: Any, options: StudyOptions, how: dict) -> AnalysisData:
    """The study's data: the collection scored under every metric and reference, or a score table."""
    from meta_eval.inputs.score_tables import ScoreTable

    if isinstance(source, ScoreTable):
        missing = [m for m in [*options.metrics, *options.against] if m not in source.scores]
        if missing:
            raise InputError(f"the score table has no scores of {missing}; it has {', '.join(source.scores)}")
        kept = {m: source.scores[m] for m in dict.fromkeys([*options.metrics, *options.against])}
        return AnalysisData.from_scores(kept, source.systems, topics=source.topics, against=list(options.against),
                                        standardise=options.standardise, **how)
    return AnalysisData.from_collection(source, [*options.metrics, *options.against], against=list(options.against),
                                        standardise=options.standardise, **how)


def _source_files(source: Any) -> list:
    options = getattr(source, "options", None)
    if isinstance(options, Mapping):
        return [options.get("qrels"), *(options.get("runs") or ())]
    return [s for s in str(getattr(source, "source", "")).split(", ") if s and Path(s).is_file()]


def _check_stems(result: Result, files: dict[str, list[str]], name: str) -> None:
    """An analysis never writes over another's files (a plug-in's table named ``scores`` would replace the scores
    analysis's ``scores.csv``): a stem already written by an earlier analysis is refused, naming both."""
    written = {Path(f).stem: owner for owner, names in files.items() for f in names}
    for stem in [t.stem for t in result.outputs] + [f.stem for f in result.figure_outputs]:
        if stem in written or stem in ("report", "manifest", "standardisation"):
            owner = written.get(stem, "the study")
            raise InputError(f"its table or figure {stem!r} would replace a file of {owner}; name it apart")


# --------------------------------------------------------------------------------------------- helpers


def _intro_text(data: AnalysisData, source: Any) -> str:
    from meta_eval.statistics.standardise import describe

    col = data.collection
    if col is not None:
        s, t, d = col.shape
        shape = (f"{s} systems × {t} topics (depth up to {d}, grades 0..{col.max_grade}); "
                 f"ordering: {col.options.get('ties', 'trec_eval')}; missing topics: {col.missing}. ")
    else:
        dropped, filled = getattr(source, "dropped", ()), getattr(source, "filled", 0)
        shape = (f"{len(data.systems)} systems × {len(data.topics)} topics of per-topic scores ({source.source}); "
                 + (f"topics left out for a missing cell (--missing skip): {', '.join(dropped)}; " if dropped else "")
                 + (f"{filled} missing cells scored 0 (--missing zero); " if filled else "")
                 + "the analyses that read rankings do not apply. ")
    return (shape + f"Metrics under study: {', '.join(data.targets)}; compared against: "
            f"{', '.join(data.against) or 'none'}."
            + (f"\n\n{describe(data.standardise)} Informativeness and intuitiveness use the metric values "
               "themselves." if data.standardise else ""))


def _top_systems(data: AnalysisData) -> list[str]:
    dp = data.results.get("discpower")
    return list(dp.best) if dp is not None else []


def _findings_text(data: AnalysisData, options: StudyOptions, result: StudyResult) -> str:
    found = result.findings
    parts = ["\n".join(f"- {f.sentence}" for f in found) if found else "No analysis produced numbers to summarise."]
    best = _top_systems(data)
    if best:
        parts.append(f"The top-{len(best)} analysis uses the systems that rank best under all {len(data.scores)} "
                     f"metrics at once (rule 'both', see Discriminative power): {', '.join(best)}.")
    missing = [*(f"{s} (skipped)" for s in options.skip), *(f"{s} (failed)" for s in result.errors),
               *(f"{s} (not applicable: {why})" for s, why in result.skipped.items())]
    if missing:
        parts.append("Not summarised: " + ", ".join(missing) + ".")
    return "\n\n".join(parts)


def _versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for package in ("meta-eval", "numpy", "scipy", "pandas", "pyarrow", "cvxpy", "seaborn", "matplotlib"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "not installed"
    return out


def _write_manifest(report: Report, result: StudyResult, data: AnalysisData, options: StudyOptions,
                    inputs: dict, collection) -> None:
    from meta_eval.outputs.result_folder import _sha256

    files = {}
    read = ([collection.options.get("qrels"), *(collection.options.get("runs") or [])] if collection is not None
            else [])
    for path in read:
        if path and Path(path).is_file():
            files[str(path)] = _sha256(Path(path))
    shape = dict(zip(("systems", "topics", "depth"), map(int, collection.shape))) if collection is not None else \
        {"systems": len(data.systems), "topics": len(data.topics)}
    manifest = {
        "meta_eval": "study",
        "meta_eval_study": 2,
        "command": inputs.get("command", " ".join(sys.argv)),
        "inputs": {"qrels": collection.options.get("qrels") if collection is not None else None,
                   "runs": collection.options.get("runs") if collection is not None else None,
                   "sha256": files, **{k: v for k, v in inputs.items() if k != "command"}},
        "collection_options": ({k: v for k, v in collection.options.items() if k not in ("qrels", "runs")}
                               if collection is not None else {}),
        "study_options": options.record(),
        "measures": result.measures,
        "analyses": {name: {"files": names, "seconds": result.timings.get(name), "error": result.errors.get(name)}
                     for name, names in result.files.items()},
        "not_applicable": result.skipped,
        "seed": options.seed,
        "standardise": options.standardise,
        "top_systems": _top_systems(data),
        "versions": _versions(),
        "timings_s": result.timings,
        "errors": result.errors,
        "shape": shape,
    }
    report.write_text("manifest.json", json.dumps(manifest, indent=2, default=str) + "\n")
