"""The shape of every analysis: what it declares (:class:`Analysis`), what it receives (:class:`AnalysisData`) and
what it returns (:class:`Result`).

An analysis is a function from data to a result object, declared once with its parameters (the shared
:class:`~meta_eval.core.params.Param` machinery: name, default, domain, help), the analyses whose results it reads, and
optionally its memory estimate. Every result answers the same four questions, whoever asks (the study report, the
analysis's own command, a notebook):

``to_frame()``  the full tidy table (its CSV);
``table()``     the compact table a paper shows (a :class:`~meta_eval.rendering.paper_table.PaperTable`, written as LaTeX);
``figures()``   the figures, drawn when asked for;
``findings()``  sentences whose every number is quoted from the result's own compact tables
                (:class:`~meta_eval.rendering.findings.Quoter`), so a test can check the text against the table.

A result with several tables lists them all in :meth:`Result.tables` (the first is the one of ``to_frame`` and
``table``); a table without a compact form is written as its CSV only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from meta_eval.analyses._containment import checked
from meta_eval.analyses._result import Result
from meta_eval.core.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import pandas as pd

    from meta_eval.core.params import Param
    from meta_eval.core.progress import CostModel
    from meta_eval.measures import Measure
    from meta_eval.model.collection import Collection

__all__ = ["DEFAULT_AGAINST", "DEFAULT_METRICS", "NEEDS", "Analysis", "AnalysisData", "MemoryNeed"]

#: What an analysis reads, least first (:attr:`Analysis.needs`).
NEEDS = ("measures", "scores", "collection")
#: The measures a study (and every analysis command) studies by default, and the references it compares them with.
DEFAULT_METRICS = ("AP", "nDCG@10", "Q", "ERR")
DEFAULT_AGAINST = ("GAP", "nDCG")


@dataclass(frozen=True)
class MemoryNeed:
    """The peak memory one part of an analysis will hold (bytes), described for the message, and the parameter to
    lower when it does not fit (:func:`meta_eval.core.memory_budget.require`)."""

    n_bytes: float
    what: str
    lower: str


@dataclass(frozen=True)
class Analysis:
    """The declaration of an analysis: everything the study, the command line and the contract test need.

    Attributes
    ----------
    name : str
        Its name (``anova``, ``judge-agreement``): its command, ``study --skip NAME``, ``study --analysis NAME``;
        a built-in's is its module's name with dashes.
    title : str
        The report section's title.
    run : callable
        ``run(data: AnalysisData, **params) -> Result``.
    params : tuple of Param
        Its parameters with their domains; each is checked before ``run`` is called.
    requires : tuple of str
        Analyses whose results ``run`` needs (``data.results[name]``): they run first, and without them this one
        does not run.
    after : tuple of str
        Analyses whose results ``run`` uses when they ran (run first when selected; ``data.results.get(name)``).
    summary : str
        One line for listings and the command's help.
    needs : {"measures", "scores", "collection"}
        What it reads: the measures alone (``data.measures``: e.g. their formal properties), the per-topic scores
        (``data.scores``: it also runs on score tables, ``--scores FILE``), or the collection's rankings and qrels
        (``data.collection``).
    order : int
        Its place in the study's report (then its name).
    measures : tuple of str or None
        Default measures of its command (None: the study's metrics and references).
    enabled : callable or None
        ``enabled(params) -> bool``: whether it runs in a study with these parameters (e.g. only with a second
        qrels); None: always.
    memory : callable or None
        ``memory(data, params) -> list[MemoryNeed]``: what it will allocate, checked before a study's first
        analysis runs.
    prepare : callable or None
        Started when a study that will run it begins (e.g. compiling a solver in a thread); its return value is
        ``data.prepared[name]``.
    files : tuple of str
        Parameters whose value may name an input file (recorded as inputs: no output may replace them).
    standardised : bool
        Whether it compares systems on ``data.scores`` (per-topic standardised on request): its command then takes
        ``--standardise``.
    parallel : bool
        Whether it runs tasks on workers (``data.jobs``, ``data.scheduler``): its command then takes ``--jobs`` and
        ``--scheduler``.
    quick : mapping
        Parameters that make a quick run of it (small budgets: what the contract test runs it with).
    before : callable or None
        ``before(params)``: what must be checked on the system before any work (a cache folder that can be
        written); raises :class:`~meta_eval.core.errors.InputError`. Its command and the study call it before they
        read a file.
    min_measures : int
        How many measures it compares at least (2 for a correlation): with fewer, a study lists it as not
        applicable and its command refuses before any work.
    applies : callable or None
        ``applies(data) -> str | None``: why it cannot run on this data (an option of the collection it would
        ignore), or None; a study then lists it as not applicable, and running it is an error saying why.
    source : str
        A plug-in's file or module ("" for meta-eval's own analyses).
    cost : CostModel or None
        What a run costs (:class:`~meta_eval.core.progress.CostModel`: seconds of one core, from
        ``count(data, params)`` units, fitted on measured runs): a study's time left is estimated from it. None:
        unknown (the study says so).
    """

    name: str
    title: str
    run: Callable[..., Result]
    params: tuple[Param, ...] = ()
    requires: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    summary: str = ""
    needs: str = "collection"
    order: int = 100
    measures: tuple[str, ...] | None = None
    enabled: Callable[[Mapping[str, Any]], bool] | None = None
    memory: Callable[[AnalysisData, Mapping[str, Any]], list[MemoryNeed]] | None = None
    prepare: Callable[[], Any] | None = None
    files: tuple[str, ...] = ()
    standardised: bool = False
    parallel: bool = False
    quick: Mapping[str, Any] = field(default_factory=dict)
    before: Callable[[Mapping[str, Any]], Any] | None = None
    min_measures: int = 1
    source: str = ""
    cost: CostModel | None = None
    applies: Callable[[AnalysisData], str | None] | None = None

    def input_files(self, params: Mapping[str, Any]) -> list[str]:
        """The files the parameters name (of the ``files`` parameters, the values that are existing files)."""
        from pathlib import Path

        return [str(params[p]) for p in self.files if params.get(p) is not None and Path(str(params[p])).is_file()]

    def param(self, name: str) -> Param:
        """The declared parameter ``name``."""
        for p in self.params:
            if p.name == name:
                return p
        raise InputError(unknown_parameter(self, name))

    def not_applicable(self, data: AnalysisData) -> str | None:
        """Why it cannot run on ``data``: too few measures (:meth:`too_few`), or its own :attr:`applies`."""
        reason = self.too_few(list(data.raw) or [m.output_name for m in data.measures])
        return reason or (self.applies(data) if self.applies is not None else None)

    def too_few(self, measures: Sequence[str]) -> str | None:
        """Why it cannot run on ``measures`` (fewer than :attr:`min_measures`), or None."""
        if len(measures) >= self.min_measures:
            return None
        return (f"{self.name} compares at least {self.min_measures} measure{'s' * (self.min_measures > 1)}; got "
                f"{len(measures)} "
                f"({', '.join(measures) or 'none'}): name more with -m/--metric or -a/--against")

    def defaults(self) -> dict[str, Any]:
        """Every parameter's default."""
        return {p.name: p.default for p in self.params}

    def bind(self, values: Mapping[str, Any] | None = None, where: str | None = None) -> dict[str, Any]:
        """Every parameter, from ``values`` (checked against its declaration) or its default.

        Raises
        ------
        InputError
            An undeclared parameter, or a value outside its domain (naming the analysis, the parameter and the
            allowed values).
        """
        where = where or f"analysis {self.name}"
        values = dict(values or {})
        unknown = [k for k in values if k not in {p.name for p in self.params}]
        if unknown:
            raise InputError(unknown_parameter(self, unknown[0]))
        return {p.name: p.validate(values[p.name], where) if p.name in values else p.default for p in self.params}

    def __call__(self, data: AnalysisData, **params: Any) -> Result:
        """Run the analysis on ``data`` with ``params`` (checked; undeclared ones take their defaults)."""
        bound = self.bind(params)
        reason = self.not_applicable(data)
        if reason:
            raise InputError(reason)
        result = self.run(data, **bound)
        if not isinstance(result, Result):
            where = f"analysis plug-in {self.name} ({self.source})" if self.source else f"analysis {self.name}"
            raise InputError(f"{where}: run() returned {type(result).__name__}, not a Result "
                             "(meta_eval.analyses.Result)")
        result.analysis, result.params = self.name, bound
        return checked(self, result)


def unknown_parameter(analysis: Analysis, name: str) -> str:
    """``analysis anova has no parameter 'alpah' (did you mean alpha?); parameters: ...``."""
    from meta_eval.core.params import did_you_mean

    names = [p.name for p in analysis.params]
    close = did_you_mean(name, names)
    return (f"analysis {analysis.name} has no parameter {name!r}" + (f" (did you mean {close}?)" if close else "")
            + f"; parameters: {', '.join(names) or 'none'}")


@dataclass
class AnalysisData:
    """What an analysis receives: the collection, the measures and their per-topic scores, the results of the
    analyses that ran before it, and how to run (workers, progress).

    ``raw`` are the metric values, (systems, topics) per measure; :attr:`scores` the arrays the analyses that
    compare systems use: the same, or their per-topic standardised form when ``standardise`` is ``"z"`` or
    ``"cdf"`` (:mod:`meta_eval.statistics.standardise`). ``against`` names the reference measures of a study (the
    others are its :attr:`targets`). ``specs`` maps each measure's output name to the specification a worker
    process rebuilds it from. ``systems`` and ``topics`` are the collection's (given only for data without a
    collection, :meth:`from_scores`).
    """

    collection: Collection | None
    measures: list[Measure]
    raw: dict[str, np.ndarray]
    standardise: str | None = None
    against: list[str] = field(default_factory=list)
    jobs: int | None = 1
    scheduler: str | None = None
    progress: bool = False
    specs: dict[str, str] = field(default_factory=dict)
    results: dict[str, Result] = field(default_factory=dict)
    prepared: dict[str, Any] = field(default_factory=dict)
    colors: dict | None = None
    systems: list[str] | None = None
    topics: list[str] | None = None

    def __post_init__(self) -> None:
        if self.collection is not None:
            self.systems = list(self.collection.systems) if self.systems is None else list(self.systems)
            self.topics = list(self.collection.topics) if self.topics is None else list(self.topics)
        elif self.systems is None:
            raise InputError("analysis data without a collection needs the system names")
        if self.colors is None:
            from meta_eval.rendering.figure_style import metric_colors

            self.colors = metric_colors(list(self.raw), references=self.against)

    @classmethod
    def from_collection(cls, collection: Collection, measures: Iterable[str | Measure] | str, *,
                        against: Sequence[str | Measure] = (), standardise: str | None = None, **how: Any
                        ) -> "AnalysisData":
        """Score ``measures`` (then ``against``) on ``collection``: every specification the one resolver accepts
        (:func:`meta_eval.measures.resolve`), each measure once. ``how``: ``jobs``, ``scheduler``, ``progress``."""
        import numpy as np

        from meta_eval.measures.registry import Measure
        from meta_eval.measures.resolver import resolve
        from meta_eval.measures.scoring import per_topic
        from meta_eval.statistics.standardise import check_method

        check_method(standardise)
        specs = [measures] if isinstance(measures, str) else list(measures)
        against = [against] if isinstance(against, (str, Measure)) else list(against)  # "GAP" was G, A, P
        resolved = resolve([*specs, *against])
        reference = [m.output_name for m in resolve(list(against))] if against else []
        raw = {m.output_name: np.asarray(per_topic(collection, m)) for m in resolved}
        return cls(collection, resolved, raw, standardise, reference,
                   specs={m.output_name: m.spec for m in resolved}, **how)

    @classmethod
    def from_scores(cls, scores: Mapping[str, np.ndarray] | Any, systems: Sequence[str] | None = None, *,
                    topics: Sequence[str] | None = None, against: Sequence[str] = (), standardise: str | None = None,
                    **how: Any) -> "AnalysisData":
        """Data of (S, T) score arrays alone, without a collection: for the analyses that only compare systems on
        scores (split-half, ANOVA, discriminative power, correlation, error rates).

        ``scores`` is ``{measure: (S, T) array}`` with the ``systems`` (and optionally ``topics``) named, or a
        :class:`~meta_eval.inputs.score_tables.ScoreTable` (:func:`~meta_eval.inputs.score_tables.read_scores`: a tidy table, a
        topic × run matrix, ``trec_eval -q`` output), which names its own."""
        import numpy as np

        from meta_eval.core.params import unique
        from meta_eval.statistics.standardise import check_method

        check_method(standardise)
        if not isinstance(scores, Mapping):
            from meta_eval.inputs.score_tables import ScoreTable

            if not isinstance(scores, ScoreTable):
                raise InputError(f"scores must be a mapping {{measure: (S, T) array}} or a ScoreTable; got "
                                 f"{type(scores).__name__}")
            if systems is not None or topics is not None:
                raise InputError("a ScoreTable names its own systems and topics; give none")
            scores, systems, topics = scores.scores, scores.systems, scores.topics
        if systems is None:
            raise InputError("analysis data without a collection needs the system names")
        systems = unique(map(str, systems), "systems", "names of")  # a name twice: one row silently kept by subset
        topics = None if topics is None else unique(map(str, topics), "topics", "names of")
        against = [against] if isinstance(against, str) else list(against)  # "nDCG" was n, D, C, G
        raw = {name: np.asarray(x, dtype=np.float64) for name, x in scores.items()}
        if not raw:
            raise InputError("analysis data needs at least one score array")
        n_top = next(iter(raw.values())).shape[-1]
        for name, x in raw.items():
            if x.shape != (len(systems), n_top):
                raise InputError(f"the scores of {name!r} have shape {x.shape}; expected ({len(systems)} systems, "
                                 f"{n_top} topics)")
            _check_scale(name, x, systems)
            _check_defined(name, x, systems, topics)
        if topics is not None and len(topics) != n_top:
            raise InputError(f"{len(topics)} topic names for scores of {n_top} topics")
        unknown = [m for m in against if m not in raw]
        if unknown:
            raise InputError(f"reference measures {unknown} are not among the scores ({', '.join(raw)})")
        return cls(None, [], raw, standardise, list(against), systems=list(systems),
                   topics=list(topics) if topics is not None else [str(t) for t in range(n_top)], **how)

    @classmethod
    def from_measures(cls, measures: Iterable[str | Measure] | str, **how: Any) -> "AnalysisData":
        """Data of the measures alone (no collection, no scores): for the analyses of what a measure is (its formal
        properties)."""
        from meta_eval.measures.resolver import resolve

        resolved = resolve(measures)
        return cls(None, resolved, {}, systems=[], topics=[], specs={m.output_name: m.spec for m in resolved}, **how)

    def subset(self, systems: Sequence[str] | None = None, topics: Sequence[str] | None = None) -> "AnalysisData":
        """The same data on some systems and topics (each named once and known), every score array and the
        collection cut alike. They keep the data's order, whatever order they are named in: a seeded resampling of
        the topics then gives the same numbers for the same selection."""
        import numpy as np

        from meta_eval.core.params import unique

        from meta_eval.model.collection import selected_names

        systems, topics = selected_names(systems, "system"), selected_names(topics, "topic")
        if systems is None and topics is None:
            return self
        rows = np.sort(self._positions(unique(systems, "--system"), self.systems, "system")) \
            if systems is not None else np.arange(len(self.systems))
        cols = np.sort(self._positions(unique(topics, "--topic"), self.topics, "topic")) \
            if topics is not None else np.arange(len(self.topics))
        collection = None if self.collection is None else self.collection.subset(
            systems=[self.systems[i] for i in rows], topics=[self.topics[j] for j in cols])
        raw = {name: x[np.ix_(rows, cols)] for name, x in self.raw.items()}
        return replace(self, collection=collection, raw=raw, systems=[self.systems[i] for i in rows],
                       topics=[self.topics[j] for j in cols], results={}, prepared={})

    @staticmethod
    def _positions(names: Sequence[str], known: Sequence[str], what: str):
        import numpy as np

        where = {str(k): i for i, k in enumerate(known)}
        unknown = [n for n in names if str(n) not in where]
        if unknown:
            raise InputError(f"unknown {what}s {unknown[:5]}; e.g. {', '.join(map(str, list(known)[:5]))}")
        return np.array([where[str(n)] for n in names], dtype=np.int64)

    def standardisation(self) -> "pd.DataFrame | None":
        """Per measure and topic, the reference mean and s.d. of the standardisation (``standardisation.csv``: to
        standardise new runs the same way); None for raw scores."""
        if self.standardise is None:
            return None
        import pandas as pd

        from meta_eval.statistics.standardise import fit_standardisation

        frames = [fit_standardisation(x, self.standardise, topics=self.topics).to_frame().assign(measure=name)
                  for name, x in self.raw.items()]
        return pd.concat(frames, ignore_index=True)[["measure", "topic", "mean", "sd"]]

    @cached_property
    def scores(self) -> dict[str, np.ndarray]:
        """The arrays the analyses compare systems on (standardised per topic when the data is)."""
        from meta_eval.statistics.standardise import standardise_all

        return standardise_all(self.raw, self.standardise)

    @property
    def targets(self) -> list[str]:
        """The measures under study (every measure that is not a reference)."""
        return [m for m in self.raw if m not in set(self.against)] or list(self.raw)

    @property
    def scale(self) -> str:
        """What the analysed scores are: ``"score"``, ``"z-score"`` or ``"standardised score"``."""
        return {None: "score", "z": "z-score", "cdf": "standardised score"}[self.standardise]

    @property
    def forms(self) -> tuple[str, ...]:
        """Score forms the re-judging analyses can use: the standard form needs the unjudged documents."""
        if self.collection is not None and self.collection.options.get("unjudged") == "remove":
            return ("condensed",)
        return ("standard", "condensed")

    def standardise_note(self) -> str:
        """`` Computed on per-topic z-scores.`` (empty for raw scores), for method texts."""
        if self.standardise is None:
            return ""
        how = "z-scores" if self.standardise == "z" else "normal-CDF standardised scores"
        return f" Computed on per-topic {how}."


def _check_defined(name: str, scores: "np.ndarray", systems: Sequence[str], topics: Sequence[str] | None) -> None:
    """Refuse a NaN among given scores: the analyses would compare systems on different topics (a mean over the
    others, a test on fewer pairs), silently."""
    import numpy as np

    gaps = np.argwhere(np.isnan(scores))
    if len(gaps):
        system, topic = gaps[0]
        where = repr(topics[topic]) if topics is not None and len(topics) == scores.shape[-1] else \
            f"{topic + 1} of {scores.shape[-1]}"
        raise InputError(f"the scores of {name!r} have {len(gaps)} missing (NaN) cell(s), the first of run "
                         f"{systems[system]!r} on topic {where}: every system needs a score on every topic (fill "
                         "them, or leave the topic out; read_scores(missing='zero'|'skip') does either)")


def _check_scale(name: str, scores: "np.ndarray", systems: Sequence[str]) -> None:
    """Refuse scores out of the scale the analyses can square (:func:`~meta_eval.core.params.out_of_scale`)."""
    from meta_eval.core.params import out_of_scale, scale_problem

    at = out_of_scale(scores)
    if at is not None:
        system, topic = divmod(at, scores.shape[-1])
        raise InputError(f"the scores of {name!r}: {scale_problem(scores.flat[at])} (run {systems[system]!r}, "
                         f"topic {topic + 1} of {scores.shape[-1]})")
