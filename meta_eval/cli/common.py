"""Pieces shared by the subcommands: one definition (name, short form, help) per option concept, collection
loading, error reporting. Every command takes its options from here, so the same concept has the same name and help
everywhere: ``--qrels/-Q``, positional runs, ``--measure/-m`` (alias ``--metric``), ``--resamples/-B``, ``--seed``,
``--alpha``, ``--out/-o``, ``--format``, ``--dpi``, ``--float32``, ``--no-progress``. Every choice is an Enum, so a
typo is rejected with the allowed values."""

from __future__ import annotations

import functools
import inspect
import sys
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Callable, Optional

import typer

from meta_eval.core.errors import MetaEvalError, Terminated

if TYPE_CHECKING:  # pragma: no cover - the collection (numpy, Arrow) is imported when a command runs, not for --help
    from meta_eval.analyses import AnalysisData
    from meta_eval.model.collection import Collection


def choices(name: str, *values: str) -> type[Enum]:
    """A command-line choice: an enumeration of strings named by their values (typer lists them in the help and
    refuses any other, naming the allowed values)."""
    return Enum(name, [(v, v) for v in values], type=str, module=__name__)


Missing = choices("Missing", "zero", "skip")
Unjudged = choices("Unjudged", "nonrel", "remove")
Ties = choices("Ties", "trec_eval", "docid_asc", "input", "rank")
RelFormat = choices("RelFormat", "qrels", "qrels_jg", "prefs", "qrels_prefs")
FigureFormat = choices("FigureFormat", "pdf", "png", "svg")
CIMethod = choices("CIMethod", "normal", "percentile", "basic", "bca")
Standardise = choices("Standardise", "z", "cdf")


QrelsOpt = Annotated[Optional[Path], typer.Option("--qrels", "-Q", help="Qrels file (topic iteration docid grade). "
                                                  "Default: the embedded demo collection.")]
RunsArg = Annotated[Optional[list[str]], typer.Argument(help="Run files, directories or glob patterns (.gz ok).",
                                                        show_default=False)]
DepthOpt = Annotated[Optional[int], typer.Option("--depth", "-M", help="Keep the top N documents per topic (trec_eval -M).")]
LevelOpt = Annotated[int, typer.Option("--rel-level", "-l", help="Relevant = grade >= this (trec_eval -l).")]
MissingOpt = Annotated[Optional[Missing], typer.Option(
    "--missing", help="Topics a run lacks: score 0 (trec_eval -c; the default) or skip. Cells a --scores table lacks: "
    "an error unless this is given.", show_default=False)]
UnjudgedOpt = Annotated[Unjudged, typer.Option("--unjudged", help="Unjudged documents: not relevant, or removed (-J).")]
TiesOpt = Annotated[Ties, typer.Option("--ties", help="Ordering: trec_eval (score desc, docid desc), docid_asc, input, rank.")]
RelFormatOpt = Annotated[RelFormat, typer.Option(
    "--rel-format", "-R", help="How --qrels is read: qrels; qrels_jg (judgment groups: every measure averaged over a "
    "topic's groups); prefs or qrels_prefs (preference judgments, for the prefs_* measures). trec_eval -R.")]
Float32Opt = Annotated[bool, typer.Option("--float32", help="32-bit scores: reproduce trec_eval 9.x / pytrec_eval ties.")]
SeedOpt = Annotated[int, typer.Option("--seed", min=0, max=2**53, help="Seed of every randomised procedure (bootstrap, permutations, "
                                      "samples); the same seed gives the same numbers.")]
def _open_unit(value: float) -> float:
    if not 0.0 < value < 1.0:
        raise typer.BadParameter(f"must be in (0, 1); got {value:g}")
    return value


AlphaOpt = Annotated[float, typer.Option("--alpha", callback=_open_unit, help="Significance level, in (0, 1).")]
ProgressOpt = Annotated[bool, typer.Option("--progress/--no-progress", help="Show progress: bars on a terminal, "
                                           "plain lines with the time left otherwise.")]
JobsOpt = Annotated[Optional[int], typer.Option("--jobs", "-j", min=1, help="Worker processes for the parallel "
                                              "work (default: every core); the numbers do not depend on it.",
                                              show_default=False)]
SchedulerOpt = Annotated[Optional[str], typer.Option(
    "--scheduler", help="Run the parallel work on Dask instead: 'local' (a local cluster of --jobs workers) or a "
    "scheduler address tcp://HOST:PORT (needs meta-eval[dask]).", show_default=False)]
FormatOpt = Annotated[Optional[list[FigureFormat]], typer.Option(
    "--format", help="Figure format (repeatable): vector pdf (default) or svg, each with a PNG preview, or png at "
    "--dpi.", show_default=False)]
DpiOpt = Annotated[int, typer.Option("--dpi", min=50, max=1200, help="Resolution of PNG figures.")]
FiguresOpt = Annotated[bool, typer.Option("--figures/--no-figures", help="Draw the figures into --out.")]
ConfidenceOpt = Annotated[float, typer.Option("--confidence", min=0.5, max=0.999,
                                              help="Confidence level of the intervals.")]
CIOpt = Annotated[CIMethod, typer.Option("--ci", help="Bootstrap interval of the correlations: normal (centred on the "
                                         "estimate), percentile, basic or bca (both correct the downward bias of "
                                         "resampled correlations).")]
OutDirOpt = Annotated[Optional[Path], typer.Option("--out", "-o", help="Result folder (written completely or not at "
                                                   "all; an earlier meta-eval result folder there is replaced, "
                                                   "anything else is refused).")]
OverwriteOpt = Annotated[bool, typer.Option("--overwrite", help="Replace a result folder written by another "
                                             "meta-eval command, or one holding files meta-eval did not write.")]
StandardiseOpt = Annotated[Optional[Standardise], typer.Option(
    "--standardise", help="Analyse per-topic standardised scores: z (z-scores over the systems) or cdf (their normal "
    "CDF), Webber et al. 2008 / Urbano et al. 2019. Default: raw scores.", show_default=False)]


def declared_inputs(qrels=None, runs=None, measures=None, files=()) -> list[str]:
    """The files a command will read, named before it reads them, so an output that would replace one is refused
    before any work (:mod:`meta_eval.outputs.writer`, :mod:`meta_eval.outputs.result_folder`; what is actually read is checked again
    when writing): the qrels, the run files (folders and globs expanded), plug-in files of ``-m file.py:function``
    and any other ``files``."""
    from meta_eval.core.file_identity import named_files
    from meta_eval.measures.plugins import parse_spec

    plugins = [spec for spec in map(parse_spec, map(str, measures or ())) if spec is not None]
    return named_files([qrels, *(runs or ()), *(p.target for p in plugins if p.kind == "file"), *files])


def folder_target(out, kind: str, *, overwrite: bool = False, qrels=None, runs=None, measures=None, files=(),
                  inputs: list[str] | None = None):
    """The ``--out`` result folder of a command, checked before any work (None without ``--out``):
    :class:`meta_eval.outputs.result_folder.FolderTarget` with the files the command reads (``inputs``, or the
    :func:`declared_inputs` of the other arguments)."""
    if out is None:
        return None
    from meta_eval.outputs.result_folder import FolderTarget

    if inputs is None:
        inputs = declared_inputs(qrels, runs, measures, files)
    return FolderTarget(out, kind, inputs=inputs, overwrite=overwrite)


def measures_option(defaults: tuple[str, ...] | list[str], what: str = "Measure") -> object:
    """``--measure/-m`` (alias ``--metric``): one name and help for measure names everywhere."""
    return Annotated[Optional[list[str]], typer.Option(
        "--measure", "-m", "--metric", help=f"{what}: a name (AP, nDCG@10, GAP(g=0.5,0.5)), a trec_eval name (map, "
        "P.5,10) or module:function / file.py:function (repeatable). Default: " + ", ".join(defaults) + ".",
        show_default=False)]


def figure_formats(formats: list | None) -> tuple[str, ...]:
    """The ``--format`` values (default: pdf), each given once."""
    from meta_eval.core.params import unique

    return unique((_value(f) for f in formats), "--format") if formats else ("pdf",)


@dataclass
class CollectionOptions:
    """The collection a command reads, as its options name it: ``--qrels/-Q`` and the runs (the demo collection
    when neither is given), ``--depth/-M``, ``--rel-level/-l``, ``--missing``, ``--unjudged``, ``--ties``,
    ``--float32``, ``--progress``. Declared once (:data:`COLLECTION_PARAMETERS`) and added to a command by
    :func:`with_collection`."""

    qrels: Path | None = None
    runs: list[str] | None = None
    depth: int | None = None
    rel_level: int = 1
    missing: Missing | None = None  # None: zero for runs, an error for a score table's missing cells
    unjudged: Unjudged = Unjudged.nonrel
    ties: Ties = Ties.trec_eval
    float32: bool = False
    progress: bool = True

    def load(self, **extra) -> Collection:
        """The collection (:func:`collection_from_cli`); ``extra``: its other keywords, for a command's own reading
        options."""
        return collection_from_cli(self.qrels, self.runs, self.depth, self.rel_level, self.missing, self.unjudged,
                                   self.ties, self.float32, progress=self.progress, **extra)

    def load_options(self) -> dict:
        """The :func:`meta_eval.load_collection` keywords of these options (without the files)."""
        return dict(depth=self.depth, rel_level=self.rel_level, missing=_value(self.missing) or "zero",
                    unjudged=_value(self.unjudged), ties=_value(self.ties),
                    score_precision="float32" if self.float32 else "float64")


def _parameter(name: str, annotation, default) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


#: The collection options, in the order a command's help lists them: the files first, then how they are read.
COLLECTION_PARAMETERS = (
    _parameter("runs", RunsArg, None), _parameter("qrels", QrelsOpt, None),
    _parameter("depth", DepthOpt, None), _parameter("rel_level", LevelOpt, 1),
    _parameter("missing", MissingOpt, None), _parameter("unjudged", UnjudgedOpt, Unjudged.nonrel),
    _parameter("ties", TiesOpt, Ties.trec_eval), _parameter("float32", Float32Opt, False),
    _parameter("progress", ProgressOpt, True),
)
_FILES = ("runs", "qrels")


def with_collection(func: Callable | None = None, *, exclude: tuple[str, ...] = ()) -> Callable:
    """Give a command the collection options: ``func(inputs: CollectionOptions, **own)`` becomes a command whose
    signature holds its own options and those of :data:`COLLECTION_PARAMETERS` (the runs and the qrels where
    ``inputs`` stood, the reading options last); ``exclude`` leaves some out (their defaults apply)."""

    def decorate(func: Callable) -> Callable:
        signature = inspect.signature(func, eval_str=True)
        own = list(signature.parameters.values())
        at = [p.name for p in own].index("inputs")
        added = [p for p in COLLECTION_PARAMETERS if p.name not in exclude]
        files = [p for p in added if p.name in _FILES]
        reading = [p for p in added if p.name not in _FILES]
        params = [*own[:at], *files, *own[at + 1:], *reading]

        @functools.wraps(func)
        def command(**kwargs):
            values = {p.name: kwargs.pop(p.name) for p in added}
            return func(inputs=CollectionOptions(**values), **kwargs)

        command.__signature__ = signature.replace(parameters=[p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
                                                              for p in params])
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command

    return decorate(func) if func is not None else decorate


def collection_from_cli(
    qrels: Path | None,
    runs: list[str] | None,
    depth: int | None = None,
    rel_level: int = 1,
    missing: Missing | None = None,
    unjudged: Unjudged = Unjudged.nonrel,
    ties: Ties = Ties.trec_eval,
    float32: bool = False,
    progress: bool = True,
    rel_format: RelFormat = RelFormat.qrels,
) -> Collection:
    """Load the collection named on the command line, or the demo collection when none is; ``rel_format`` reads
    the qrels as judgment groups or preference judgments instead (:mod:`meta_eval.model.judgment_groups`,
    :mod:`meta_eval.model.preferences`)."""
    from meta_eval.model.collection import load_collection
    from meta_eval.model.demo import demo_collection

    keep_freed_memory()
    missing = _value(missing) or "zero"  # trec_eval -c: a run's missing topic scores 0
    options = dict(depth=depth, rel_level=rel_level, missing=missing, unjudged=_value(unjudged),
                   ties=_value(ties), score_precision="float32" if float32 else "float64")
    if qrels is None and not runs:
        col = demo_collection(**options)
        print(f"meta-eval: no --qrels given: using the embedded demo collection ({len(col.systems)} systems x "
              f"{len(col.topics)} topics; `meta-eval COMMAND -Q qrels RUNS` for yours)", file=sys.stderr)
        return col
    if qrels is None:
        raise typer.BadParameter("runs were given without --qrels")
    if not runs:
        raise typer.BadParameter("--qrels was given without any run")
    rel_format = _value(rel_format)
    if rel_format == "qrels_jg":
        from meta_eval.model.judgment_groups import load_judgment_groups

        del options["score_precision"]
        return load_judgment_groups(qrels, runs, **options)
    if rel_format in ("prefs", "qrels_prefs"):
        from meta_eval.model.preferences import load_preferences

        return load_preferences(qrels, runs, fmt=rel_format, depth=depth, missing=missing, progress=progress)
    return load_collection(qrels, runs, progress=progress, **options)


def keep_freed_memory() -> None:
    """Let glibc's malloc keep freed memory for reuse, and let Arrow allocate through it.

    Loading runs and scoring them allocate and free many arrays of 0.1 to 30 MB (a run's columns, a measure's
    temporaries). By default glibc maps each of them afresh and unmaps it when freed, so every allocation pays its
    page faults again: on the 143 TREC-COVID runs, ~150,000 faults and 0.3-0.5 s of system time in
    ``meta-eval evaluate``. With both the mmap and the trim threshold at 32 MB, freed blocks are reused (about
    21,000 faults; scoring 0.28 -> 0.13 s) and at most 32 MB of freed memory is kept (a trim threshold of 256 MB was no
    faster and kept up to 90 MB more at the peak of ``discpower`` on a 4x collection). Arrow's own allocator
    (mimalloc) then does worse than glibc's: with the system pool, ``evaluate`` took 1.74 s against 2.00 s (means of
    8 runs each) and peaked at 153 MB against 215 MB.

    Only the command line calls this (a library should not tune its host's allocator); without glibc's ``mallopt``
    (macOS, musl) it does nothing. Written by hand: no library exposes ``mallopt``."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        return
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    mallopt(m_mmap_threshold, 32 << 20)
    mallopt(m_trim_threshold, 32 << 20)
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())


def _value(option):
    return option.value if isinstance(option, Enum) else option


def check_environment() -> None:
    """The environment variables meta-eval reads, checked when a command starts, whether or not it reaches the code
    that reads them: ``META_EVAL_MEMORY`` (:func:`~meta_eval.core.memory_budget.configured_bytes`) and
    ``META_EVAL_PROGRESS`` (:func:`~meta_eval.core.progress.forced_mode`)."""
    from meta_eval.core.memory_budget import configured_bytes
    from meta_eval.core.progress import forced_mode

    configured_bytes()
    forced_mode()


def reports_errors(func: Callable) -> Callable:
    """Run a command as a user expects of a Unix tool:

    * meta-eval's own errors: one line on stderr and exit status 2 (no traceback); its warnings
      (:class:`~meta_eval.core.errors.MetaEvalWarning`): one line on stderr;
    * memory exhausted past the memory check (a ``MemoryError``): one line, status 1;
    * Ctrl-C: "interrupted", status 130; SIGTERM: status 143, quietly; a reader that went away (``| head``):
      status 141, quietly — in each case the worker processes are stopped first (none keeps computing) and the
      tracebacks of the engine's own threads, which the abrupt end may cause, are not printed.
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        import signal
        import warnings

        def on_sigterm(signum, frame):
            raise Terminated(128 + signum)

        previous = signal.signal(signal.SIGTERM, on_sigterm) if _main_thread() else None
        try:
            with warnings.catch_warnings():
                warnings.showwarning = _one_line(warnings.showwarning)
                check_environment()
                return func(*args, **kwargs)
        except MetaEvalError as exc:
            _stop_workers()
            print(f"meta-eval: error: {exc}", file=sys.stderr)
            raise typer.Exit(code=2) from None
        except KeyboardInterrupt:
            _stop_workers()
            print("meta-eval: interrupted", file=sys.stderr)
            raise typer.Exit(code=130) from None
        except MemoryError:  # past the memory check: the budget was overridden (META_EVAL_MEMORY) or memory went
            _stop_workers()
            print(f"meta-eval: error: out of memory: the work needed more than the process could get{_memory_set()};"
                  " lower the sizes (resamples, splits, draws) or free memory", file=sys.stderr)
            raise typer.Exit(code=1) from None
        except BrokenPipeError:
            _stop_workers()
            _silence_stdout()
            raise typer.Exit(code=141) from None
        except typer.Exit:
            raise
        except BaseException:  # SystemExit of SIGTERM included
            _stop_workers()
            raise
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)

    return wrapper


def _memory_set() -> str:
    """What a user set of the memory the process may use, said when it ran out of memory."""
    import os

    setting = os.environ.get("META_EVAL_MEMORY")
    return f" (META_EVAL_MEMORY={setting} let it start: the memory check believed it)" if setting else ""


def _one_line(show: Callable) -> Callable:
    """``warnings.showwarning`` printing meta-eval's own warnings as one line, like its errors."""

    def show_warning(message, category, filename, lineno, file=None, line=None) -> None:
        from meta_eval.core.errors import MetaEvalWarning

        if issubclass(category, MetaEvalWarning):
            print(f"meta-eval: warning: {message}", file=sys.stderr)
        else:
            show(message, category, filename, lineno, file, line)

    return show_warning


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _stop_workers() -> None:
    """Stop the worker processes and keep their engine's threads from printing tracebacks as they are cut off."""
    import threading

    threading.excepthook = lambda args: None
    if "meta_eval.core.parallel" in sys.modules:
        sys.modules["meta_eval.core.parallel"].terminate_workers()


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the interpreter's final flush does not fail again."""
    from meta_eval.cli.app import stdout_to_devnull

    stdout_to_devnull()


# --------------------------------------------------------------------------------------------- what an analysis reads

MeasuresOpt = Annotated[Optional[list[str]], typer.Option(
    "--measure", "-m", "--metric", help="Measure to study (repeatable): a name (AP, nDCG@10, GAP(g=0.5,0.5)), a "
    "trec_eval name (map, P.5,10) or module:function / file.py:function. Default: AP, nDCG@10, Q, ERR (with "
    "--scores: every measure of the table).", show_default=False)]
AgainstOpt = Annotated[Optional[list[str]], typer.Option(
    "--against", "-a", help="Reference measure the others are compared with (repeatable; 'none' for none). Default: "
    "GAP, nDCG (with --scores: those of them the table has).", show_default=False)]
ScoresOpt = Annotated[Optional[list[Path]], typer.Option(
    "--scores", help="Per-topic score table instead of runs and qrels (repeatable): a tidy csv/tsv/parquet (run, "
    "topic, measure, value; what evaluate -q -o writes), a topic x run matrix, or trec_eval -q output.",
    show_default=False)]
ScoresLayoutOpt = Annotated[Optional[str], typer.Option(
    "--scores-layout", help="How --scores is laid out: tidy, wide or trec (default: told from the file).",
    show_default=False)]
ScoresMeasureOpt = Annotated[Optional[str], typer.Option(
    "--scores-measure", help="The measure of a one-measure score table (a topic x run matrix; default: the file's "
    "name).", show_default=False)]
SystemOpt = Annotated[Optional[list[str]], typer.Option("--system", help="Analyse only these systems (repeatable).",
                                                       show_default=False)]
TopicOpt = Annotated[Optional[list[str]], typer.Option("--topic", help="Analyse only these topics (repeatable).",
                                                      show_default=False)]
MeasureArgs = Annotated[Optional[list[str]], typer.Argument(
    help="The measures: names (AP, nDCG@10, RBP(p=0.8)), trec_eval names or file.py:function plug-ins.",
    show_default=False)]

#: What every analysis command reads, beside its own parameters (the runs first, the reading options last).
DATA_PARAMETERS = (
    _parameter("runs", RunsArg, None), _parameter("qrels", QrelsOpt, None), _parameter("scores", ScoresOpt, None),
    _parameter("scores_layout", ScoresLayoutOpt, None), _parameter("scores_measure", ScoresMeasureOpt, None),
    _parameter("measures", MeasuresOpt, None), _parameter("against", AgainstOpt, None),
    _parameter("systems", SystemOpt, None), _parameter("topics", TopicOpt, None),
    *(p for p in COLLECTION_PARAMETERS if p.name not in _FILES),
)

#: The options of a command that writes a result folder, in the order its help lists them: the folder, then its
#: figures (the study's --out, a report folder with a default name, is its own).
WRITING_PARAMETERS = (
    _parameter("out", OutDirOpt, None), _parameter("overwrite", OverwriteOpt, False),
    _parameter("fmt", FormatOpt, None), _parameter("dpi", DpiOpt, 300), _parameter("figures", FiguresOpt, True),
)

#: ``--standardise``, for a command whose analyses can read standardised scores; ``--jobs`` and ``--scheduler``, for
#: one that runs tasks on workers.
STANDARDISE_PARAMETER = _parameter("standardise", StandardiseOpt, None)
PARALLEL_PARAMETERS = (_parameter("jobs", JobsOpt, None), _parameter("scheduler", SchedulerOpt, None))


def writing_options(given: dict[str, Any]) -> dict[str, Any]:
    """The values of :data:`WRITING_PARAMETERS`, taken out of a command's keyword arguments ``given``."""
    return {p.name: given.pop(p.name) for p in WRITING_PARAMETERS}


def data_parameters(decl) -> list[inspect.Parameter]:
    """The reading options of an analysis's command: the measures as arguments for an analysis of measures, else
    :data:`DATA_PARAMETERS`."""
    if decl.needs == "measures":
        return [_parameter("measures_args", MeasureArgs, None), _parameter("progress", ProgressOpt, True)]
    return list(DATA_PARAMETERS)


@dataclass
class DataOptions:
    """What an analysis command reads, as its options name it, and how to load it (:meth:`load`): the runs and
    ``--qrels`` (the demo collection when neither is given) or ``--scores`` tables, the measures and references,
    a subset of systems and topics, the collection's reading options, and how to run (workers, progress)."""

    collection: CollectionOptions = field(default_factory=CollectionOptions)
    scores: list[Path] | None = None
    scores_layout: str | None = None
    scores_measure: str | None = None
    measures: list[str] | None = None
    against: list[str] | None = None
    systems: list[str] | None = None
    topics: list[str] | None = None
    standardise: str | None = None
    jobs: int | None = None
    scheduler: str | None = None
    default_measures: tuple[str, ...] | None = None
    _table: Any = field(default=None, repr=False)  # the --scores tables, read once

    def __post_init__(self) -> None:
        """Each value of a repeatable option once, refused before any work (:func:`meta_eval.core.params.unique`:
        ``--topic 2 --topic 2`` would weigh one topic double, ``-m AP -m AP`` study one measure twice)."""
        from meta_eval.core.params import unique

        for name, flag in _REPEATABLE.items():
            if getattr(self, name):
                setattr(self, name, list(unique(getattr(self, name), flag)))

    @classmethod
    def from_command(cls, given: dict, needs: str = "collection", defaults: tuple[str, ...] | None = None
                     ) -> "DataOptions":
        """The options of :data:`DATA_PARAMETERS` (and ``standardise``, ``jobs``, ``scheduler``), taken out of a
        command's keyword arguments."""
        take = {name: given.pop(name) for name in list(given) if name in _DATA_NAMES}
        if "measures_args" in take:
            take["measures"] = take.pop("measures_args")
        reading = {name: take.pop(name) for name in list(take) if name in _COLLECTION_NAMES}
        return cls(CollectionOptions(**reading), **{k: _value(v) for k, v in take.items()},
                   default_measures=defaults)

    @property
    def progress(self) -> bool:
        return self.collection.progress

    def declared_inputs(self, files=()) -> list[str]:
        """The files the command will read (:func:`declared_inputs`), named before any work."""
        return declared_inputs(self.collection.qrels, [*(self.collection.runs or ()), *(self.scores or ())],
                               [*(self.measures or ()), *(self.against or ())], files)

    def _measures(self) -> tuple[list[str], list[str]]:
        """The measures studied and the references, as named or by default (with --scores: the table's)."""
        from meta_eval.analyses import DEFAULT_AGAINST, DEFAULT_METRICS

        if self.scores:
            table = self.score_table()
            against = [] if self.against == ["none"] else \
                list(self.against or (m for m in DEFAULT_AGAINST if m in table.scores))
            return [m for m in (self.measures or table.scores) if m not in against], against
        metrics = list(self.measures or self.default_measures or DEFAULT_METRICS)
        against = [] if self.against == ["none"] else list(self.against or
                                                            (() if self.default_measures else DEFAULT_AGAINST))
        return metrics, against

    def check_measures(self, decl=None) -> None:
        """Resolve the measures named (an unknown name, a bad parameter or a plug-in that cannot load fails now,
        before any file is read), and refuse fewer than the analysis compares; a score table's names are checked
        when it is read."""
        if self.scores:
            return
        from meta_eval.core.errors import InputError
        from meta_eval.measures.resolver import resolve

        metrics, against = self._measures()
        _one_measure_each(metrics, "-m")
        _one_measure_each(against, "--against")
        _one_measure_each([*metrics, *(a for a in against if a not in metrics)], "-m/--against")  # -m AP -a map
        measures = resolve([*metrics, *against])
        reason = decl.too_few([m.name for m in measures]) if decl is not None else None
        if reason:
            raise InputError(reason)

    def load(self, decl) -> "AnalysisData":
        """The data ``decl`` needs: its measures alone, a score table, or the collection; cut to the systems and
        topics named."""
        from meta_eval.analyses import AnalysisData
        from meta_eval.core.errors import InputError

        how = dict(jobs=self.jobs, scheduler=self.scheduler, progress=self.progress)
        if decl.needs == "measures":
            from meta_eval.measures.resolver import resolve_read

            metrics = self._measures()[0]
            return AnalysisData.from_measures(resolve_read(metrics) if self.scores and not self.measures else metrics,
                                              **how)
        if self.scores:
            if decl.needs == "collection":
                raise InputError(f"analysis {decl.name} reads the rankings of the runs (it needs the runs and "
                                 "--qrels); a score table holds per-topic scores only")
            if self.collection.qrels is not None or self.collection.runs:
                raise InputError("--scores replaces the runs and --qrels: give one or the other")
            data = self._from_scores(how)
        else:
            metrics, against = self._measures()
            data = AnalysisData.from_collection(self.collection.load(), [*metrics, *against], against=against,
                                                standardise=self.standardise, **how)
        return data.subset(self.systems, self.topics)

    def score_table(self):
        """The ``--scores`` tables, read as one :class:`~meta_eval.inputs.score_tables.ScoreTable` (the measures
        named by ``-m``/``--against`` kept, every measure without them), missing cells as ``--missing`` says."""
        from meta_eval.inputs.score_tables import read_scores

        if self._table is not None:
            return self._table
        from meta_eval.analyses import DEFAULT_AGAINST

        keep = [*self.measures, *(a for a in self.against or () if a != "none")] if self.measures else None
        table = self._table = read_scores(list(self.scores), layout=self.scores_layout, measure=self.scores_measure,
                                          measures=keep, missing=_value(self.collection.missing) or "error",
                                          canonical=_canonical_name,
                                          optional=DEFAULT_AGAINST if self.against is None else ())
        if table.filled:
            print(f"meta-eval: {table.filled} missing cell(s) of the score table scored 0 (--missing zero)",
                  file=sys.stderr)
        return table  # (topics dropped by --missing skip: read_scores's warning names them)

    def _from_scores(self, how: dict) -> "AnalysisData":
        from meta_eval.analyses import DEFAULT_AGAINST, AnalysisData

        table = self.score_table()
        against = [] if self.against == ["none"] else \
            list(self.against or (m for m in DEFAULT_AGAINST if m in table.scores))
        return AnalysisData.from_scores(table, against=against, standardise=self.standardise, **how)


def _canonical_name(name: str) -> str:
    """A measure's canonical name (``map`` and ``ap`` -> ``AP``, ``ndcg_cut_10`` -> ``nDCG@10``), or the name itself
    when it names no measure meta-eval knows (a plug-in's name in a score table: names read from data never load
    code)."""
    from meta_eval.measures.resolver import known_measure

    found = known_measure(name)
    return found.name if found is not None else name


_COLLECTION_NAMES = {p.name for p in COLLECTION_PARAMETERS}
#: The repeatable options of :class:`DataOptions` whose values must differ, and their spelling in a message (the
#: runs are files: a run named twice is read once, :mod:`meta_eval.core.file_identity`).
_REPEATABLE = {"measures": "-m", "against": "--against", "systems": "--system", "topics": "--topic"}


def _one_measure_each(specs: list[str], flag: str) -> None:
    """Refuse two specifications of one option that name one measure (``-m AP -m ap``, ``-m map -m MAP``: names are
    case-insensitive, :func:`meta_eval.measures.resolver.resolve`; ``-m AP -m map``: trec_eval's spelling of the same
    measure, analysed twice); :func:`unique` refused the exact repeats."""
    from meta_eval.core.errors import InputError
    from meta_eval.measures.resolver import load_metric

    first: dict[str, str] = {}
    for spec in specs:
        for name in {m.name.lower(): m.name for m in load_metric(spec)}.values():
            if name.lower() in first and first[name.lower()] != spec:
                raise InputError(f"option {flag}: {first[name.lower()]} and {spec} name one measure ({name}); "
                                 "give it once")
            first.setdefault(name.lower(), spec)


_DATA_NAMES = {p.name for p in DATA_PARAMETERS} | {"measures_args", "standardise", "jobs", "scheduler"}
