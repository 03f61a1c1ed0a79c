"""A study of several collections: each collection's full study, and the cross-collection tables and figures.

A metric paper evaluates on several collections (the GAP paper: TREC 9, 10 and 12). :func:`run_multi_study` runs
:func:`meta_eval.orchestration.study.run_study` on every collection — in parallel through :mod:`meta_eval.core.parallel` (joblib
processes or a Dask cluster: each task loads its collection from the files and returns its report folder) — and
writes one result folder::

    OUT/report.md, report.html      cross-collection sections, a link to each collection's report
    OUT/<name>/...                   the full study of collection <name> (as ``meta-eval study`` writes it)
    OUT/discpower_by_collection.csv  pairs told apart per metric, side by side
    OUT/agreement_by_collection.csv  Kendall's τ_b and τ_AP with each reference metric, side by side
    OUT/informativeness_by_collection.csv, OUT/rms_vs_g_by_collection.*  the GAP paper's Figure 2, one panel per
                                     collection
    OUT/manifest.json                every input (with checksums), the options, per-collection timings

Collections are given as ``NAME=QRELS:RUNS`` (:func:`parse_collection`) or in a TOML study file
(:func:`read_study_file`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

from meta_eval.core.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from meta_eval.orchestration.study import StudyOptions

LOAD_OPTIONS = ("depth", "rel_level", "missing", "unjudged", "ties", "score_precision")


@dataclass
class CollectionSpec:
    """One collection of a multi-collection study: its name, qrels, runs and loading options
    (:func:`meta_eval.load_collection` keywords)."""

    name: str
    qrels: str
    runs: list[str]
    load: dict[str, Any] = field(default_factory=dict)

    def check(self) -> "CollectionSpec":
        if not self.name or any(c in self.name for c in "/\\") or self.name.startswith("."):
            raise InputError(f"collection name {self.name!r}: give a non-empty name without '/' (it names a folder)")
        if Path(self.name).suffix.lower() in _REPORT_SUFFIXES:
            raise InputError(f"collection name {self.name!r}: it would be taken for one of the report's files, which "
                             "sit beside the collections' folders; choose a name without that suffix")
        unknown = sorted(set(self.load) - set(LOAD_OPTIONS))
        if unknown:
            raise InputError(f"collection {self.name!r}: unknown option(s) {unknown}; allowed: {', '.join(LOAD_OPTIONS)}")
        if not self.runs:
            raise InputError(f"collection {self.name!r}: no runs given")
        return self


#: The suffixes of the files a multi-collection study writes beside the collections' folders.
_REPORT_SUFFIXES = {".html", ".md", ".json", ".csv", ".tex", ".png", ".pdf", ".svg"}


@dataclass
class MultiStudyResult:
    """Where the report went, each collection's timings and failed stages, and the cross-collection tables."""

    out: Path
    timings: dict[str, dict[str, float]] = field(default_factory=dict)
    errors: dict[str, dict[str, str]] = field(default_factory=dict)
    tables: dict[str, Any] = field(default_factory=dict)


def parse_collection(text: str, **load) -> CollectionSpec:
    """``NAME=QRELS:RUNS`` (RUNS a file, folder or glob pattern; several separated by commas) -> a spec."""
    name, eq, rest = text.partition("=")
    qrels, colon, runs = rest.partition(":")
    if not eq or not colon or not qrels or not runs:
        raise InputError(f"--collection {text!r}: expected NAME=QRELS:RUNS (e.g. covid=qrels.txt:runs/)")
    return CollectionSpec(name.strip(), qrels, [r for r in runs.split(",") if r], dict(load)).check()


def read_study_file(path: str | Path) -> tuple[list[CollectionSpec], dict[str, Any]]:
    """Collections and study options from a TOML file; relative paths are relative to the file's folder (the
    collections' files, a plug-in's file in ``metrics``, ``against`` and ``analyses``, and a file an analysis's
    parameter names in ``[study.params.ANALYSIS]``).

    Example::

        [study]                      # any StudyOptions field: metrics, against, n_resamples, seed, skip, ...
        metrics = ["AP", "nDCG@10"]
        n_resamples = 1000

        [[collection]]
        name = "covid"
        qrels = "covid/qrels.txt"
        runs = ["covid/runs"]        # a string or a list; files, folders or globs
        depth = 100                  # optional loading options (depth, rel_level, missing, unjudged, ties, ...)

    Returns
    -------
    (collections, study options as a dict)

    Raises
    ------
    InputError
        Naming the file and the key: not TOML, an unknown section or key, ``[collection]`` for
        ``[[collection]]``, a value of the wrong type (``qrels = 5``, a list where a string belongs, a table where
        a value belongs), a collection without name, qrels or runs.
    """
    import tomllib

    from meta_eval.inputs.trec import read_text

    path = Path(path)
    try:
        data = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not a valid TOML study file ({exc})", str(path)) from None
    unknown = sorted(set(data) - {"study", "collection"})
    if unknown:
        raise InputError(f"unknown section(s) {unknown}; a study file has [study] and [[collection]]", str(path))
    collections = data.get("collection", [])
    if isinstance(collections, dict):
        raise InputError("[collection] is a single table: write [[collection]] (double brackets), one such section "
                         "per collection", str(path))
    if not isinstance(collections, list) or not all(isinstance(entry, dict) for entry in collections):
        raise InputError("'collection' must be [[collection]] sections (tables with name, qrels and runs), not "
                         f"{_toml_kind(collections)}", str(path))
    specs = [_collection_entry(entry, i, path) for i, entry in enumerate(collections)]
    if not specs:
        raise InputError("no [[collection]] in the study file", str(path))
    return specs, _study_table(data.get("study", {}), path)


#: The type of every key of a [[collection]] table: the files, then the loading options.
_ENTRY_TYPES: dict[str, tuple[type, str]] = {
    "name": (str, "a string"), "qrels": (str, "a string (a path)"), "depth": (int, "an integer"),
    "rel_level": (int, "an integer"), "missing": (str, "a string"), "unjudged": (str, "a string"),
    "ties": (str, "a string"), "score_precision": (str, "a string"),
}


def _toml_kind(value: Any) -> str:
    """A TOML value's kind in words, for messages."""
    kinds = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
             dict: "a table"}
    return next((words for kind, words in kinds.items() if isinstance(value, kind)), type(value).__name__)


def _collection_entry(entry: dict, i: int, path: Path) -> CollectionSpec:
    """One [[collection]] table as a spec, every key checked for its name and type (the message names the file,
    the collection and the key); relative paths are relative to the file's folder."""
    where = f"collection {i + 1}" + (f" ({entry['name']})" if isinstance(entry.get("name"), str) else "")
    missing = [key for key in ("name", "qrels", "runs") if key not in entry]
    if missing:
        raise InputError(f"collection {i + 1} lacks {', '.join(missing)}", str(path))
    unknown = sorted(set(entry) - {"runs", *_ENTRY_TYPES})
    if unknown:
        raise InputError(f"{where}: unknown option(s) {unknown}; allowed: name, qrels, runs, "
                         f"{', '.join(LOAD_OPTIONS)}", str(path))
    for key, value in entry.items():
        kind, words = _ENTRY_TYPES.get(key, (str, ""))
        runs_ok = key == "runs" and (isinstance(value, str) or isinstance(value, list) and value
                                     and all(isinstance(r, str) for r in value))
        if key == "runs" and not runs_ok:
            raise InputError(f"{where}: runs must be a string or a non-empty list of strings (files, folders or "
                             f"globs); got {_toml_kind(value)}", str(path))
        if key != "runs" and (not isinstance(value, kind) or isinstance(value, bool)):
            raise InputError(f"{where}: {key} must be {words}; got {_toml_kind(value)} ({value!r})", str(path))
    entry = dict(entry)
    runs = entry.pop("runs")
    runs = [runs] if isinstance(runs, str) else runs
    base = path.parent
    try:
        return CollectionSpec(entry.pop("name"), str(base / entry.pop("qrels")), [str(base / r) for r in runs],
                              entry).check()
    except InputError as exc:
        raise InputError(str(exc), str(path)) from None


def _study_table(study: Any, path: Path) -> dict[str, Any]:
    """The [study] table: a table whose keys are :class:`~meta_eval.orchestration.study.StudyOptions` fields; a
    list where one value belongs (or a table anywhere) is refused, a single string where a list belongs is that
    list of one."""
    from dataclasses import MISSING, fields

    from meta_eval.orchestration.study import StudyOptions

    if not isinstance(study, dict):
        raise InputError(f"[study] must be one table of options; got {_toml_kind(study)}", str(path))
    declared = {f.name: f.default if f.default is not MISSING else f.default_factory() for f in fields(StudyOptions)
                if f.default is not MISSING or f.default_factory is not MISSING}
    unknown = sorted(set(study) - set(declared))
    if unknown:
        raise InputError(f"[study] has unknown option(s) {unknown}; known: {', '.join(sorted(declared))}", str(path))
    out = {}
    for key, value in study.items():
        if key == "params":  # [study.params.ANALYSIS]: a table of tables of options (each checked by the study)
            if not isinstance(value, dict) or not all(isinstance(v, dict) and not any(isinstance(x, dict) for x in
                                                                                      v.values())
                                                      for v in value.values()):
                raise InputError("[study] params must be [study.params.ANALYSIS] tables of options; got "
                                 f"{_toml_kind(value)}", str(path))
            out[key] = {name: _files_beside(name, values, path.parent) for name, values in value.items()}
            continue
        many = isinstance(declared[key], tuple)
        if many and isinstance(value, str):
            value = [value]
        shape_ok = (isinstance(value, list) and not any(isinstance(v, (list, dict)) for v in value)) if many \
            else not isinstance(value, (list, dict))
        if not shape_ok:
            wanted = "a list of values" if many else "a single value"
            raise InputError(f"[study] {key} must be {wanted}; got {_toml_kind(value)}", str(path))
        out[key] = [_plugin_beside(v, path.parent) for v in value] if key in _SPECS else value
    return out


#: The [study] keys whose values are measure or analysis specifications (``file.py:NAME`` names a plug-in's file).
_SPECS = ("metrics", "against", "analyses")


def _plugin_beside(spec: Any, base: Path) -> Any:
    """A specification whose plug-in file is a relative path, made relative to the study file's folder (as the
    collections' files are); anything else as it is."""
    from meta_eval.measures.plugins import parse_spec

    plugin = parse_spec(spec) if isinstance(spec, str) else None
    if plugin is None or plugin.kind != "file" or Path(plugin.target).expanduser().is_absolute():
        return spec
    return f"{base / plugin.target}:{plugin.attr}"


def _files_beside(name: str, values: dict[str, Any], base: Path) -> dict[str, Any]:
    """[study.params.NAME]: the values of the analysis's file parameters that name a file beside the study file,
    as paths there (other values, such as the word 'demo', as they are)."""
    from meta_eval.analyses import analyses

    files = next((decl.files for decl in analyses() if decl.name == name), ())
    return {key: str(base / value) if key in files and isinstance(value, str) and not Path(value).is_absolute()
            and (base / value).is_file() else value for key, value in values.items()}


def run_multi_study(
    collections: Sequence[CollectionSpec],
    out: str | Path,
    options: StudyOptions | None = None,
    *,
    jobs: int | None = 1,
    scheduler: str | None = None,
    inputs: dict | None = None,
    progress: bool = False,
    overwrite: bool = False,
) -> MultiStudyResult:
    """Study every collection (:func:`meta_eval.orchestration.study.run_study`) and compare them side by side.

    Parameters
    ----------
    collections : sequence of CollectionSpec
        Distinct names; each collection's files are read by the task that studies it.
    out : path
        The result folder (module docstring), written atomically.
    options : StudyOptions
        The same options for every collection.
    jobs, scheduler
        Collections studied in parallel (:func:`meta_eval.core.parallel.parallel_map`): ``jobs`` worker processes
        (None: every core) or a Dask cluster (``"local"``, ``"tcp://HOST:PORT"``: the workers must see the input
        files). Every collection's numbers are the same whatever the engine.
    inputs : dict, optional
        Extra manifest entries (e.g. the command line).
    progress : bool
        Show progress over collections.
    overwrite : bool
        Replace ``out`` even when it holds another command's results (:func:`meta_eval.outputs.result_folder.result_folder`).
    """
    from meta_eval.core.file_identity import named_files
    from meta_eval.core.parallel import parallel_map
    from meta_eval.outputs.result_folder import result_folder
    from meta_eval.orchestration.study import StudyOptions

    options = (options or StudyOptions()).check()
    specs = [spec.check() for spec in collections]
    names = [spec.name for spec in specs]
    if len({name.lower() for name in names}) != len(names) or not names:
        raise InputError(f"collections need distinct names, case aside (each names a folder); got {names}")
    started = time.perf_counter()
    result = MultiStudyResult(Path(out))
    read = []
    for spec in specs:
        with _about(spec):
            read += named_files([spec.qrels, *spec.runs])
    with result_folder(out, kind="study", inputs=read, overwrite=overwrite) as tmp:
        # progress counts the work by the size of each collection's files, not the number of collections
        done = parallel_map(_study_one, specs, common=dict(options=options), jobs=jobs, scheduler=scheduler,
                            desc="collections", unit="collection", progress=progress,
                            weights=[_input_bytes(spec) for spec in specs])
        for spec, (files, info) in zip(specs, done):
            for rel, data in files.items():
                target = tmp / spec.name / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            result.timings[spec.name] = info["timings"]
            result.errors[spec.name] = info["errors"]
        result.tables = _cross_tables(tmp, specs)
        _write_report(tmp, specs, done, result, options)
        _write_manifest(tmp, specs, done, result, options, inputs or {}, time.perf_counter() - started)
    return result


def run_several(collections: Sequence[str] | None, study_file: str | Path | None, load: dict, options: StudyOptions,
                out: str | Path, *, jobs: int | None, scheduler: str | None, progress: bool, inputs: dict,
                extra=None, overwrite: bool = False, given: Iterable[str] = ()) -> MultiStudyResult:
    """``meta-eval study --collection ... / --study-file ...``: the collections of both, with the options of the
    command line and of the study file; prints each collection's stage timings and the report's path.

    ``given`` names the options the command line set, as the study file names them (a
    :class:`~meta_eval.orchestration.study.StudyOptions` field, ``analysis.param`` in ``params``, or one of
    :data:`LOAD_OPTIONS`): one the study file sets too is refused, naming it (the file's value used to win,
    silently, while the manifest recorded the command line's)."""
    from dataclasses import fields, replace

    if extra:
        raise InputError("with --collection or --study-file, give the runs and qrels inside them (NAME=QRELS:RUNS), "
                         "not as arguments, --qrels or --scores (a study of several collections reads runs)")
    specs = [parse_collection(text, **load) for text in collections or ()]
    if study_file is not None:
        from_file, settings = read_study_file(study_file)
        given = set(given)
        for s in from_file:
            _given_once(sorted(set(s.load) & given), f"collection {s.name!r}", study_file)
        specs += [CollectionSpec(s.name, s.qrels, s.runs, {**load, **s.load}) for s in from_file]
        known = {f.name for f in fields(options)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise InputError(f"[study] has unknown option(s) {unknown}; known: {', '.join(sorted(known))}",
                             str(study_file))
        _given_once(sorted(key for key in settings if key != "params" and key in given), "[study]", study_file)
        settings = {k: tuple(v) if isinstance(v, list) else v for k, v in settings.items()}
        if "params" in settings:
            settings["params"] = _merged_params(options.params, settings["params"], study_file)
        options = replace(options, **settings).check()
    result = run_multi_study(specs, out, options, jobs=jobs, scheduler=scheduler, progress=progress, inputs=inputs,
                             overwrite=overwrite)
    for name, timings in result.timings.items():
        failed = result.errors.get(name) or {}
        print(f"{name}: {timings.get('total', float('nan')):.1f} s" + (f"; failed: {', '.join(failed)}" if failed
                                                                       else ""), file=sys.stderr)
    print(f"report: {result.out / 'report.html'}", file=sys.stderr)
    return result


def _given_once(twice: list[str], where: str, study_file: str | Path) -> None:
    if twice:
        raise InputError(f"{where} sets {', '.join(twice)}, also given on the command line: give each in one place",
                         str(study_file))


def _merged_params(given: dict, from_file: Any, study_file: str | Path) -> dict:
    """The analyses' parameters of the command line and of [study.params]; one set in both is refused."""
    if not isinstance(from_file, dict):
        return from_file  # StudyOptions.check names the problem
    merged = {name: dict(values) for name, values in given.items()}
    for name, values in from_file.items():
        twice = sorted(set(values) & set(merged.get(name, {}))) if isinstance(values, dict) else []
        _given_once([f"{name}.{key}" for key in twice], "[study.params]", study_file)
        merged[name] = {**merged.get(name, {}), **values} if isinstance(values, dict) else values
    return merged


def _input_bytes(spec: CollectionSpec) -> float:
    """The size of a collection's files on disk: what its study's cost grows with (0 for what is not a file)."""
    return float(sum(os.path.getsize(p) for p in (spec.qrels, *spec.runs) if os.path.isfile(p)))


@contextmanager
def _about(spec: CollectionSpec) -> Iterator[None]:
    """Errors of reading ``spec``'s files name the collection (one runs folder may serve several)."""
    try:
        yield
    except InputError as exc:
        raise InputError(f"collection {spec.name!r}: {exc}") from None


def _study_one(spec: CollectionSpec, *, options: StudyOptions) -> tuple[dict[str, bytes], dict]:
    """Load one collection, study it in a scratch folder, return the folder's files (a task: the files travel
    back to the client, so Dask workers need no shared output folder)."""
    from meta_eval.model.collection import load_collection
    from meta_eval.orchestration.study import run_study

    with _about(spec):
        collection = load_collection(spec.qrels, spec.runs, **spec.load)
    scratch = Path(tempfile.mkdtemp(prefix="meta-eval-study-"))
    try:
        res = run_study(collection, scratch / "out", options, inputs={"command": f"collection {spec.name}"})
        files = {str(p.relative_to(res.out)): p.read_bytes() for p in sorted(res.out.rglob("*")) if p.is_file()}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if options.systems or options.topics:  # what the study studied (run_study cuts the same selection)
        collection = collection.subset(list(options.systems) or None, list(options.topics) or None)
    s, t, d = collection.shape
    info = dict(timings=res.timings, errors=res.errors, systems=s, topics=t, depth=d, max_grade=collection.max_grade,
                qrels=collection.options.get("qrels"), runs=collection.options.get("runs"))
    return files, info


# --------------------------------------------------------------------------------------------- cross tables


def _read(folder: Path, name: str):
    import pandas as pd

    path = folder / f"{name}.csv"
    return pd.read_csv(path) if path.is_file() else None


def _cross_tables(tmp: Path, specs: Sequence[CollectionSpec]) -> dict[str, pd.DataFrame]:
    """Each collection's tables stacked with a ``collection`` column, and their side-by-side pivots."""
    import pandas as pd

    stacked: dict[str, list] = {"discpower_summary": [], "system_correlation": [], "informativeness_g_grid": [],
                                "informativeness": []}
    for spec in specs:
        for name in stacked:
            frame = _read(tmp / spec.name, name)
            if frame is not None:
                stacked[name].append(frame.assign(collection=spec.name))
    order = [spec.name for spec in specs]
    tables = {}
    if stacked["discpower_summary"]:
        d = pd.concat(stacked["discpower_summary"], ignore_index=True)
        if "subset" in d:
            d = d[d.subset == "all"]
        tables["discpower_by_collection"] = _side_by_side(d, "metric", "proportion", order)
        if "pairs" in d:  # what each percentage is of: collections differ in their systems
            tables["discpower_pairs"] = d.groupby("collection", sort=False)["pairs"].max().reset_index()
    if stacked["system_correlation"]:
        c = pd.concat(stacked["system_correlation"], ignore_index=True)
        c = c[c.coefficient.isin(["kendall_tau_b", "tau_ap_sym"])]
        c = c.assign(agreement=c.coefficient.map({"kendall_tau_b": "τ_b", "tau_ap_sym": "τ_AP"}) + "(" + c.metric_x
                     + ", " + c.metric_y + ")")
        wide = c.pivot_table(index="agreement", columns="collection", values="value", sort=False)
        tables["agreement_by_collection"] = wide.reindex(columns=order).reset_index()
    if stacked["informativeness_g_grid"]:
        tables["rms_vs_g_by_collection"] = pd.concat(stacked["informativeness_g_grid"], ignore_index=True)
    if stacked["informativeness"]:
        i = pd.concat(stacked["informativeness"], ignore_index=True)
        if {"metric", "mean_rms", "threshold"} <= set(i.columns):
            i = i.assign(metric=i.metric + ", grade ≥ " + i.threshold.astype(str))
            tables["informativeness_by_collection"] = _side_by_side(i, "metric", "mean_rms", order)
            if "n_lists" in i:  # the lists each mean is over (compared where every metric converged)
                tables["informativeness_lists"] = i.groupby("collection", sort=False)["n_lists"].min().reset_index()
    return tables


def _side_by_side(frame, index: str, value: str, order: list[str]):
    wide = frame.pivot_table(index=index, columns="collection", values=value, sort=False)
    return wide.reindex(columns=[c for c in order if c in wide.columns]).reset_index()


# --------------------------------------------------------------------------------------------- report


def _write_report(tmp: Path, specs, done, result: MultiStudyResult, options) -> None:
    import pandas as pd

    from meta_eval.rendering.report import Report
    from meta_eval.rendering.paper_table import PaperTable

    title = f"meta-eval study of {len(specs)} collection{'s' if len(specs) > 1 else ''}"
    report = Report(tmp, title, formats=options.formats, dpi=options.dpi)
    rows = [dict(collection=spec.name, systems=info["systems"], topics=info["topics"], depth=info["depth"],
                 grades=f"0..{info['max_grade']}", failed=", ".join(info["errors"]) or "—")
            for spec, (_, info) in zip(specs, done)]
    intro = report.section("Collections", "Each collection's full study (findings, scores, discriminative power, "
                           "correlation, informativeness, ...) is in its folder: " + ", ".join(
                               f"[{s.name}]({s.name}/report.html)" for s in specs) + ". The sections below put the "
                           "collections side by side, with the same metrics and options everywhere.")
    overview = pd.DataFrame(rows)
    report.table(intro, "The collections", PaperTable(overview.set_index("collection")), "collections",
                 full=overview)
    tables = result.tables
    if "discpower_by_collection" in tables:
        t = tables["discpower_by_collection"]
        section = report.section("Discriminative power", f"Percentage of system pairs told apart (ASL < "
                                 f"{options.alpha:g}, Sakai's paired bootstrap, B = {options.n_resamples}) over all "
                                 f"systems of each collection ({_counts(tables.get('discpower_pairs'), 'pairs', '; ')}"
                                 "the CSV holds the proportions).")
        # in percent, as each collection's own table (% discriminated); the CSV keeps the proportions
        report.table(section, "Discriminative power: percentage of system pairs told apart, per collection",
                     PaperTable(100 * t.set_index("metric"), decimals=1), "discpower_by_collection", full=t)
    if "agreement_by_collection" in tables:
        t = tables["agreement_by_collection"]
        section = report.section("Correlation", "Kendall's τ_b and the symmetrised τ_AP between the system "
                                 "rankings of each pair of metrics, per collection (intervals in each collection's "
                                 "system_correlation.csv).")
        report.table(section, "Agreement of the system rankings, per collection",
                     PaperTable(t.set_index("agreement"), decimals=3), "agreement_by_collection",
                     full=t)
    if "informativeness_by_collection" in tables or "rms_vs_g_by_collection" in tables:
        section = report.section("Informativeness", "Mean RMS error of the precision-recall curves inferred by the "
                                 "maximum-entropy method from each metric's value (lower is more informative; lists "
                                 f"compared, the fewest over the thresholds: "
                                 f"{_counts(tables.get('informativeness_lists'), 'lists', ')') or '–)'}.")
        if "informativeness_by_collection" in tables:
            t = tables["informativeness_by_collection"]
            report.table(section, "Informativeness: mean RMS error per metric and relevance threshold, per "
                         "collection", PaperTable(t.set_index("metric"), decimals=4),
                         "informativeness_by_collection", full=t)
        if "rms_vs_g_by_collection" in tables:
            g = tables["rms_vs_g_by_collection"]
            report.data("rms_vs_g_by_collection", g)
            report.figure(section, "Mean RMS error (±1 s.e.) over GAP's g, one panel per collection (GAP paper, "
                          "Figure 2); nDCG does not depend on g", figure2_by_collection(g, [s.name for s in specs]),
                          "rms_vs_g_by_collection")
    binary = [spec.name for spec, (_, info) in zip(specs, done) if info["max_grade"] <= 1]
    if binary:  # GAP's grades collapse: its column repeats AP's there
        intro.text += (f" {', '.join(binary)} {'has' if len(binary) == 1 else 'have'} binary grades (0..1): there "
                       "GAP equals AP and graded nDCG its binary form.")
    report.write()


def _counts(counts, unit: str, end: str) -> str:
    """``c1: 45 pairs, c2: 36 pairs`` and ``end`` from a frame of (collection, count): what each collection's numbers
    are over; empty without counts."""
    if counts is None or not len(counts):
        return ""
    return ", ".join(f"{name}: {int(n):,} {unit}" for name, n in counts.to_numpy()) + end


def figure2_by_collection(table: pd.DataFrame, order: Sequence[str] | None = None):
    """The GAP paper's Figure 2 for several collections: one column of panels per collection (rows: relevance
    thresholds), from the stacked ``informativeness_g_grid`` tables (column ``collection``), in the paper style."""
    from meta_eval.rendering.figure_style import paper_style

    with paper_style():
        return _figure2_panels(table, list(order or dict.fromkeys(table.collection)))


def _figure2_panels(table: pd.DataFrame, order: list[str]):
    import numpy as np
    from matplotlib.figure import Figure

    from meta_eval.rendering.figure_style import FULL_WIDTH, metric_colors

    levels = sorted(table.threshold.unique())
    lines = list(dict.fromkeys(table.line))
    palette = metric_colors(lines, references=("GAP", "nDCG"))  # black and grey, as in each collection's figures
    fig = Figure(figsize=(FULL_WIDTH, 1.2 + 1.9 * len(levels)), layout="constrained")
    axes = fig.subplots(len(levels), len(order), squeeze=False, sharey="row")
    for j, name in enumerate(order):
        for i, level in enumerate(levels):
            ax = axes[i, j]
            sub = table[(table.collection == name) & (table.threshold == level)]
            for k, line in enumerate(lines):
                part = sub[sub.line == line].sort_values("g1")
                if part.empty:
                    continue
                sem = part.sem_rms if "sem_rms" in part else np.full(len(part), np.nan)
                if part.mean_rms.nunique() == 1 and len(part) > 1:  # a metric that does not depend on g
                    y, e = float(part.mean_rms.iloc[0]), float(np.asarray(sem)[0])
                    ax.axhline(y, color=palette[line], lw=1.2, linestyle=(0, (4, 2)) if k % 2 else (0, (1, 1.5)),
                               label=line)
                    if e == e:
                        ax.axhspan(y - e, y + e, color=palette[line], alpha=0.15, lw=0)
                else:
                    ax.errorbar(part.g1, part.mean_rms, yerr=sem, color=palette[line], marker="o",
                                markersize=3, lw=1.2, capsize=1.5, label=line)
            ax.set_title(f"{name}, relevant: grade ≥ {level}", fontsize="medium")
            ax.set_xlim(-0.03, 1.03)
            if i == len(levels) - 1:
                ax.set_xlabel("GAP's g1 (g2 = 1 − g1)")
            if j == 0:
                ax.set_ylabel("mean RMS error")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", frameon=False)
    return fig


def _write_manifest(tmp: Path, specs, done, result: MultiStudyResult, options, inputs: dict, seconds: float) -> None:
    from meta_eval.outputs.result_folder import _sha256

    collections = []
    for spec, (_, info) in zip(specs, done):
        files = [info["qrels"], *(info["runs"] or [])]
        collections.append(dict(name=spec.name, qrels=info["qrels"], runs=info["runs"], load_options=spec.load,
                                sha256={str(f): _sha256(Path(f)) for f in files if f and Path(f).is_file()},
                                shape=dict(systems=info["systems"], topics=info["topics"], depth=info["depth"]),
                                timings_s=info["timings"], errors=info["errors"]))
    manifest = {
        "meta_eval": "study",
        "meta_eval_study_multi": 1,
        "command": inputs.get("command", " ".join(sys.argv)),
        "collections": collections,
        "study_options": options.record(),
        "inputs": {k: v for k, v in inputs.items() if k != "command"},
        "timings_s": {"total": round(seconds, 3)},
    }
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
