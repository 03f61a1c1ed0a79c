"""The search: build each space's cases and comparisons once, score every metric on them, decide each property.

A *space* is the binary one (grades 0..1) or the graded one (grades 0..c). Its cases — the exhaustive enumeration,
the random pool (random base cases, their variants, the ideal list of each random qrels) and the probes — do not
depend on the metric; the comparisons are index pairs into them, built once per cutoff. A metric is then scored on
each batch in one vectorised call, and every property is decided from those values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.statistics.metric_properties.formal import probes
from meta_eval.statistics.metric_properties.formal.cases import (Cases, Enumeration, growth_cases, ideal_cases, interval_cases,
                                               random_bases, threshold_cases)
from meta_eval.statistics.metric_properties.formal.comparisons import COMPARISONS, Comparison, Context, holds
from meta_eval.statistics.metric_properties.formal.result import (HELD, UNDEFINED, VIOLATED, Case, FormalProperties, SearchSizes,
                                                Verdict)
from meta_eval.model.rankings import Rankings

#: Every property, in the order of the report: Moffat's seven, Amigó et al.'s five ranking constraints, Kishida's
#: two, Ferrante et al.'s interval scale. Key -> (source, the function whose docstring defines it).
PROPERTIES: dict[str, tuple[str, Callable]] = {
    "bounded": ("Moffat 2013", probes.bounded),
    "monotone": ("Moffat 2013", COMPARISONS["monotone"].build),
    "convergent": ("Moffat 2013", COMPARISONS["convergent"].build),
    "top-weighted": ("Moffat 2013", COMPARISONS["top-weighted"].build),
    "localised": ("Moffat 2013", COMPARISONS["localised"].build),
    "complete": ("Moffat 2013", probes.complete),
    "realisable": ("Moffat 2013", probes.realisable),
    "priority": ("Amigó et al. 2013", COMPARISONS["priority"].build),
    "deepness": ("Amigó et al. 2013", COMPARISONS["deepness"].build),
    "deepness threshold": ("Amigó et al. 2013", probes.deepness_threshold),
    "closeness threshold": ("Amigó et al. 2013", probes.closeness_threshold),
    "confidence": ("Amigó et al. 2013", COMPARISONS["confidence"].build),
    "top-heavy": ("Kishida 2005", COMPARISONS["top-heavy"].build),
    "new relevant": ("Kishida 2005", COMPARISONS["new relevant"].build),
    "interval": ("Ferrante et al. 2019, 2021", probes.interval),
}
#: Candidate cells (base cases × depth²) per block when the comparisons are built: bounds the memory of the
#: candidate masks and variants.
BLOCK_CELLS = 2_000_000
#: Ranks (cases × depth) a metric scores in one call.
SCORE_CELLS = 4_000_000
MOFFAT = tuple(k for k, (src, _) in PROPERTIES.items() if src.startswith("Moffat"))
CONSTRAINTS = tuple(k for k in PROPERTIES if k not in MOFFAT)

#: The longest list the boundedness probe looks at again when it saw growth (growth_length's own maximum).
LONGEST_GROWTH = 1 << 16


@dataclass(frozen=True)
class Metric:
    """A metric as the search uses it: its name, a function of Rankings, and its cutoff k (None: whole list)."""

    name: str
    func: Callable[[Rankings], np.ndarray]
    cutoff: int | None

    def score(self, cases: Cases) -> np.ndarray:
        """One value per case: one vectorised call per block of up to :data:`SCORE_CELLS` ranks (one call for
        the default search sizes), which bounds the metric's temporary arrays."""
        rows = max(SCORE_CELLS // max(cases.depth, 1), 1)
        out = []
        for start in range(0, len(cases), rows):
            block = cases.take(slice(start, start + rows))
            values = np.asarray(self.func(block.rankings()), dtype=np.float64)
            if values.shape != (len(block),):
                raise InputError(f"metric {self.name} returned shape {values.shape} for {len(block)} lists; a "
                                 "metric returns one value per list")
            out.append(values)
        return np.concatenate(out) if out else np.zeros(0)


def metrics_of(specs: Iterable) -> list[Metric]:
    """The metrics named: measure names (``AP``, ``RBP(p=0.5)``, trec_eval lists), ``file.py:function`` plug-ins,
    :class:`~meta_eval.measures.Measure` objects, or plain functions of Rankings."""
    from meta_eval.measures import Measure
    from meta_eval.measures.resolver import resolve
    from meta_eval.statistics.metric_properties.metric_input import as_metric

    if isinstance(specs, (str, Measure)) or callable(specs):
        specs = [specs]
    out: list[Metric] = []
    for spec in specs:
        if isinstance(spec, (str, Measure)):
            for m in resolve(spec):
                if m.family.input != "rankings":
                    raise InputError(f"{m.output_name} scores preference judgments, not graded ranked lists: its "
                                     "formal properties are not defined here")
                cut = m.family.cutoff
                out.append(Metric(m.output_name, m, None if cut is None else dict(m.params).get(cut.name)))
        else:
            name, func = as_metric(spec)
            out.append(Metric(name, func, None))
    names = [m.name for m in out]
    if not out:
        raise InputError("formal properties: give at least one metric")
    if len(set(names)) != len(names):
        raise InputError(f"formal properties: two metrics share a name ({names})")
    return out


def _effective(cutoff: int | None, longest: int) -> int | None:
    """A cutoff that no list of the batch reaches is no cutoff."""
    return None if cutoff is None or cutoff >= longest else int(cutoff)


def _in_blocks(comp: Comparison, bases: Cases, ctx: Context,
               place: Callable[[Cases], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The candidates of ``comp`` on ``bases`` as (left, right) case indices; ``place`` gives the index of each
    variant (looks it up in the enumeration, or appends it to the random pool). Built a block of base cases at a
    time, so that the variants and candidate masks of every base never exist at once."""
    left, right = [], []
    rows = max(BLOCK_CELLS // bases.depth ** 2, 256)  # a candidate mask holds up to depth² cells per base case
    for start in range(0, len(bases), rows):
        pairs = comp.build(bases.take(slice(start, start + rows)), ctx)
        base = pairs.base + start
        left.append(base if pairs.left is None else place(pairs.left))
        right.append(base if pairs.right is None else place(pairs.right))
    empty = np.zeros(0, dtype=np.int64)
    return (np.concatenate(left), np.concatenate(right)) if left else (empty, empty)


def _append(parts: list[Cases], variants: Cases) -> np.ndarray:
    """Indices of ``variants`` appended to the random pool's ``parts`` (the base cases are its first part)."""
    start = sum(len(p) for p in parts)
    parts.append(variants)
    return np.arange(start, start + len(variants))


class Space:
    """The cases and comparisons of one space (built once, scored for every metric)."""

    def __init__(self, name: str, c: int, length: int, sizes: SearchSizes, cutoffs: set[int | None]):
        from meta_eval.core.params import rng

        self.name, self.c, self.length, self.sizes = name, c, length, sizes
        self.enum = Enumeration(c, length, length + sizes.unretrieved)
        self.interval = interval_cases(c, length)
        lengths = range(length + 1, sizes.random_length + 1)
        per_length = math.ceil(sizes.random_cases / len(lengths))
        self.room = sizes.random_length + 1
        bases = random_bases(c, lengths, per_length, sizes.unretrieved, rng([sizes.seed, c], "formal properties"),
                             self.room)
        parts: list[Cases] = [bases]
        self.exhaustive_pairs: dict[tuple[str, int | None], tuple[np.ndarray, np.ndarray]] = {}
        self.random_pairs: dict[tuple[str, int | None], tuple[np.ndarray, np.ndarray]] = {}
        for number, comp in enumerate(COMPARISONS.values()):
            for cutoff in (cutoffs if comp.uses_cutoff else {None}):
                exh, rnd = _effective(cutoff, length), _effective(cutoff, sizes.random_length)
                if (comp.key, exh) not in self.exhaustive_pairs:
                    self.exhaustive_pairs[comp.key, exh] = _in_blocks(comp, self.enum.cases,
                                                                      Context(exh, length, None), self.enum.index)
                if (comp.key, rnd) not in self.random_pairs:
                    draw = rng([sizes.seed, c, number, rnd or 0], "formal properties")
                    self.random_pairs[comp.key, rnd] = _in_blocks(comp, bases, Context(rnd, self.room, draw),
                                                                  lambda variants: _append(parts, variants))
        ideal = ideal_cases(np.unique(bases.counts, axis=0))
        start = sum(len(p) for p in parts)
        parts.append(ideal)
        self.pool = Cases.concat(parts, c)
        radix = int(self.pool.counts.max(initial=0)) + 1
        code = self.pool.counts @ radix ** np.arange(c + 1)  # one integer per qrels composition
        self.ideal = np.isin(code, code[start:])  # cases whose qrels' ideal list is in the pool
        self.growth, _ = growth_cases(c, sizes.growth_length)
        self.thresholds = threshold_cases(c, sizes.threshold_depth)

    def describe(self) -> str:
        return self.sizes.describe(self.name)

    def judge(self, metric: Metric) -> list[Verdict]:
        """Every property of ``metric`` on this space."""
        scored = probes.Scored(self.enum.cases, metric.score(self.enum.cases), self.pool, metric.score(self.pool),
                               self.ideal, self.interval, metric.score(self.interval), self.growth,
                               metric.score(self.growth), self.thresholds, metric.score(self.thresholds),
                               self.length)
        outcomes = {}
        for key, (_, func) in PROPERTIES.items():
            if key in COMPARISONS:
                outcomes[key] = self._compare(COMPARISONS[key], metric, scored)
            elif key == "realisable":
                outcomes[key] = probes.realisable(scored, outcomes["bounded"].unbounded_above)
            elif key == "bounded":
                outcomes[key] = self._bounded(metric, scored)
            else:
                outcomes[key] = func(scored)
        return [Verdict(metric.name, key, self.name, o.status, o.checked, o.skipped,
                        tuple(Case(cases.ranking(i), tuple(int(k) for k in cases.counts[i]), float(v))
                              for cases, i, v in o.evidence), o.claim) for key, o in outcomes.items()]

    def _bounded(self, metric: Metric, scored: probes.Scored) -> probes.Outcome:
        """Boundedness; growth seen up to ``growth_length`` is looked at again up to :data:`LONGEST_GROWTH`
        documents before it is called unbounded: a bounded metric that saturates slowly (RBP with p = 0.9999,
        1 - p^n, still doubling at n = 4096) grew like an unbounded one over the shorter probe."""
        from dataclasses import replace

        outcome = probes.bounded(scored)
        if outcome.status != VIOLATED or not outcome.claim.startswith("unbounded") or \
                self.sizes.growth_length >= LONGEST_GROWTH:
            return outcome
        longer, _ = growth_cases(self.c, LONGEST_GROWTH)
        return probes.bounded(replace(scored, growth=longer, v_growth=metric.score(longer)))

    def _compare(self, comp: Comparison, metric: Metric, s: probes.Scored) -> probes.Outcome:
        exh_cut = _effective(metric.cutoff, self.length) if comp.uses_cutoff else None
        rnd_cut = _effective(metric.cutoff, self.sizes.random_length) if comp.uses_cutoff else None
        batches = [(s.exhaustive, s.v_exhaustive, *self.exhaustive_pairs[comp.key, exh_cut]),
                   (s.pool, s.v_pool, *self.random_pairs[comp.key, rnd_cut])]
        checked = skipped = 0
        for cases, values, left, right in batches:  # exhaustive first: its cases are the smaller ones
            defined, ok = holds(values[left], values[right], comp.relation)
            checked += int(defined.sum())
            skipped += int((~defined).sum())
            bad = np.nonzero(defined & ~ok)[0]
            if len(bad):
                size = np.maximum(cases.lengths[left[bad]], cases.lengths[right[bad]])
                judged = np.maximum(cases.judged[left[bad]], cases.judged[right[bad]])
                k = bad[np.lexsort((bad, judged, size))[0]]
                evidence = [(cases, int(left[k]), values[left[k]]), (cases, int(right[k]), values[right[k]])]
                return probes.Outcome(VIOLATED, checked, skipped, evidence, comp.broken)
        return probes.Outcome(HELD if checked else UNDEFINED, checked, skipped,
                              claim="" if checked else "no comparison with defined values")


def formal_properties(metrics, sizes: SearchSizes | None = None, *, progress: bool = False,
                      **size_overrides) -> FormalProperties:
    """Decide every formal property of every metric by exhaustive enumeration of small cases and a seeded random
    search beyond them.

    Parameters
    ----------
    metrics : str, Measure, callable, or an iterable of them
        Measure names as :func:`meta_eval.measures.resolve` reads them (``AP``, ``nDCG@10``, ``RBP(p=0.5)``,
        ``my_metric.py:score``), Measure objects, or functions of :class:`~meta_eval.model.rankings.Rankings`.
    sizes : SearchSizes, optional
        The search sizes (default :class:`SearchSizes`); ``size_overrides`` replace single fields
        (``formal_properties("AP", length=5, seed=1)``).
    progress : bool
        Show progress over the metrics (:func:`meta_eval.core.progress.progress`).

    Returns
    -------
    FormalProperties
        A verdict per metric, property and space (binary, graded): held (no counterexample in the space searched,
        :meth:`SearchSizes.describe`), violated (with the smallest counterexample found) or undefined.

    Notes
    -----
    The properties and their exact tests are listed in :mod:`meta_eval.statistics.metric_properties.formal`. Each space's cases are
    built once; each metric is scored on each batch of cases in one call, and every comparison is an index pair
    into those values.

    Examples
    --------
    >>> res = formal_properties(["AP", "P@10"], random_cases=200)
    >>> res.status("AP", "localised"), res.status("P@10", "realisable")
    ('violated', 'violated')
    >>> str(res.verdict("AP", "localised").evidence[0])
    '[1] q=0/1 -> 1'
    """
    from dataclasses import fields, replace

    from meta_eval.core.params import did_you_mean
    from meta_eval.core.progress import progress as progress_display

    if sizes is not None and not isinstance(sizes, SearchSizes):
        raise InputError(f"formal properties: sizes must be a SearchSizes, got {type(sizes).__name__}")
    names = [f.name for f in fields(SearchSizes)]
    for key in size_overrides:
        if key not in names:
            close = did_you_mean(key, names)
            raise InputError(f"formal properties: no search size {key!r}" + (f" (did you mean {close}?)" if close
                                                                             else "") + f"; sizes: {', '.join(names)}")
    sizes = replace(sizes or SearchSizes(), **size_overrides)
    chosen = metrics_of(metrics)
    cutoffs = {m.cutoff for m in chosen}
    spaces = [Space("binary", 1, sizes.binary_length, sizes, cutoffs),
              Space("graded", sizes.grades, sizes.length, sizes, cutoffs)]
    verdicts = [v for m in progress_display(chosen, desc="formal properties", unit="metric", enabled=progress)
                for space in spaces for v in space.judge(m)]
    return FormalProperties([m.name for m in chosen], list(PROPERTIES), verdicts, sizes)


__all__ = ["CONSTRAINTS", "MOFFAT", "PROPERTIES", "Metric", "Space", "formal_properties", "metrics_of"]
