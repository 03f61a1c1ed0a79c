"""The properties that are not a comparison of two cases: boundedness, completeness and realisability (Moffat
2013), Amigó et al.'s two thresholds, and Ferrante et al.'s interval scale. Each takes one metric's values on one
space's batches (:class:`Scored`) and returns an :class:`Outcome`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from meta_eval.statistics.metric_properties.formal.cases import Cases
from meta_eval.statistics.metric_properties.formal.comparisons import RTOL
from meta_eval.statistics.metric_properties.formal.result import HELD, UNDEFINED, VIOLATED

#: Boundedness: the value is taken to grow without bound when the increment over the last doubling of the list is
#: at least this share of the increment over the doubling before (growth no slower than logarithmic).
GROWTH_RATIO = 0.95
#: Interval scale: gaps between consecutive values are equal within this share of the range of the values.
SPACING_RTOL = 1e-9


@dataclass
class Scored:
    """One metric's values on one space's batches (each ``v_*`` aligned with its cases)."""

    exhaustive: Cases
    v_exhaustive: np.ndarray
    pool: Cases
    v_pool: np.ndarray
    ideal: np.ndarray  # bool per pool case: its qrels' ideal list is in the pool
    interval: Cases
    v_interval: np.ndarray
    growth: Cases
    v_growth: np.ndarray
    thresholds: Cases
    v_thresholds: np.ndarray
    length: int  # the exhaustive lists' longest length
    batches: list = field(init=False)

    def __post_init__(self) -> None:
        self.batches = [(self.exhaustive, self.v_exhaustive), (self.pool, self.v_pool),
                        (self.interval, self.v_interval), (self.thresholds, self.v_thresholds),
                        (self.growth, self.v_growth)]


@dataclass
class Outcome:
    """A property's outcome on one space: status, cases checked and skipped (NaN), evidence and its claim."""

    status: str
    checked: int
    skipped: int = 0
    evidence: list = field(default_factory=list)  # (cases, index, value)
    claim: str = ""
    unbounded_above: bool = False


def _smallest(cases: Cases, index: np.ndarray) -> int:
    """The smallest of the given cases: shortest list, then fewest judged documents, then first."""
    order = np.lexsort((index, cases.judged[index], cases.lengths[index]))
    return int(index[order[0]])


def bounded(s: Scored) -> Outcome:
    """Boundedness (Moffat 2013, property 1): "the set of scores attainable by the metric is bounded".

    Test: (a) every value of every case searched is finite or NaN (an infinite value violates it); (b) the growth
    probe: the best list (n documents of the top grade, qrels exactly those) and the worst (n judged non-relevant
    documents retrieved, n top-grade documents not) for n = 1, 2, 4, ..., ``growth_length``. The metric is taken
    to be unbounded when, along either probe, the value moves in one direction over the last two doublings and the
    last move is at least :data:`GROWTH_RATIO` of the one before (a bounded monotone sequence has increments that
    shrink to 0; growth like log n, or faster, does not). No finite search proves boundedness: "held" means no
    infinite value and no such growth.
    """
    checked = 0
    for cases, values in s.batches:
        infinite = np.nonzero(np.isinf(values))[0]
        checked += int(np.isfinite(values).sum())
        if len(infinite):
            i = _smallest(cases, infinite)
            return Outcome(VIOLATED, checked, evidence=[(cases, i, values[i])], claim="an infinite value")
    k = len(s.v_growth) // 2
    for side in (np.arange(k), np.arange(k, 2 * k)):
        m = s.v_growth[side]
        if len(m) < 3 or not np.isfinite(m[-3:]).all():
            continue
        last, before = m[-1] - m[-2], m[-2] - m[-3]
        tol = RTOL * np.abs(m[-3:]).max()
        for sign, word in ((1, "above"), (-1, "below")):
            if sign * last > tol and sign * before > tol and sign * last >= GROWTH_RATIO * sign * before:
                return Outcome(VIOLATED, checked, evidence=[(s.growth, int(i), s.v_growth[i]) for i in side[-3:]],
                               claim=f"unbounded {word}: the value keeps moving as the list doubles",
                               unbounded_above=sign > 0)
    if not np.isfinite(s.v_growth).any():
        return Outcome(UNDEFINED, checked, claim="no finite value on the growth probe")
    return Outcome(HELD, checked)


def complete(s: Scored) -> Outcome:
    """Completeness (Moffat 2013, property 6): "a score can be calculated even if the query has no relevant
    documents."

    Test: every case searched whose qrels hold no relevant document (R = 0) has a finite value. meta-eval's AP,
    nDCG and GAP follow trec_eval and score 0 when R = 0, so they pass; a metric that divides by R without that
    convention (Moffat's reading of AP) does not.
    """
    checked = 0
    for cases, values in ((s.exhaustive, s.v_exhaustive), (s.pool, s.v_pool)):
        none = cases.relevant == 0
        checked += int(none.sum())
        bad = np.nonzero(none & ~np.isfinite(values))[0]
        if len(bad):
            i = _smallest(cases, bad)
            return Outcome(VIOLATED, checked, evidence=[(cases, i, values[i])],
                           claim="no value for a topic without relevant documents")
    return Outcome(HELD, checked)


def _group_best(cases: Cases, values: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per distinct qrels among the kept cases: its best value and the case attaining it."""
    idx = np.nonzero(keep & np.isfinite(values))[0]
    if not len(idx):
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    _, group = np.unique(cases.counts[idx], axis=0, return_inverse=True)
    group = group.ravel()
    order = np.lexsort((-values[idx], group))  # by group, best first
    starts = np.concatenate([[0], np.nonzero(np.diff(group[order]))[0] + 1])
    best_case = idx[order[starts]]
    return values[best_case], best_case


def realisable(s: Scored, unbounded_above: bool) -> Outcome:
    """Realisability (Moffat 2013, property 7): "provided that the collection has at least one relevant document,
    it is possible for the score at depth k to be maximal."

    Test: the maximum M is the largest value of every case searched (the exhaustive and random cases, the ideal
    list of every random qrels, the probes). For every qrels with at least one relevant document whose ideal list
    is among the cases (the exhaustive qrels with R <= the longest list; the random qrels), some list scores M
    (to rounding). Undefined when the metric is unbounded above (there is no maximum).
    """
    if unbounded_above:
        return Outcome(UNDEFINED, 0, claim="unbounded above: there is no maximum to reach")
    finite = [(cases, values, np.nonzero(np.isfinite(values))[0]) for cases, values in s.batches]
    if not any(len(f) for _, _, f in finite):
        return Outcome(UNDEFINED, 0, claim="no finite value")
    top = max(float(values[f].max()) for _, values, f in finite if len(f))
    tol = RTOL * max(abs(top), 1.0)
    reach = [(cases, f[values[f] >= top - tol]) for cases, values, f in finite]
    at_top = min(((c, _smallest(c, i)) for c, i in reach if len(i)), key=lambda ci: (ci[0].lengths[ci[1]],
                                                                                       ci[0].judged[ci[1]]))
    checked = 0
    for cases, values, keep in ((s.exhaustive, s.v_exhaustive,
                                 (s.exhaustive.relevant >= 1) & (s.exhaustive.relevant <= s.length)),
                                (s.pool, s.v_pool, s.ideal)):
        best, best_case = _group_best(cases, values, keep)
        checked += len(best)
        short = np.nonzero(best < top - tol)[0]
        if len(short):
            i = _smallest(cases, best_case[short])
            return Outcome(VIOLATED, checked, evidence=[(cases, i, values[i]), (*at_top, top)],
                           claim="the best list for these qrels falls short of the maximum")
    return Outcome(HELD, checked)


def _probe(s: Scored) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Amigó et al.'s probe: (single top document, deep list) values for n = 1..T, where both are finite, and
    (deep − top) beyond rounding: +1 the deep list wins, −1 the single document wins, 0 a tie."""
    k = len(s.v_thresholds) // 2
    top, deep = s.v_thresholds[:k], s.v_thresholds[k:]
    defined = np.isfinite(top) & np.isfinite(deep)
    tol = RTOL * np.maximum(np.abs(top), np.abs(deep))
    with np.errstate(invalid="ignore"):
        sign = np.where(deep - top > tol, 1, np.where(top - deep > tol, -1, 0))
    return top, deep, defined, sign


def _evidence(s: Scored, n: int) -> list:
    k = len(s.v_thresholds) // 2
    return [(s.thresholds, n, s.v_thresholds[n]), (s.thresholds, k + n, s.v_thresholds[k + n])]


def deepness_threshold(s: Scored) -> Outcome:
    """Deepness threshold (Amigó, Gonzalo & Verdejo 2013, ranking constraint 3): "there exists a value n large
    enough such that retrieving only one relevant document at the top of the ranking is better than retrieving n
    relevant documents after n non-relevant documents" — for every n from some point on: deep documents are
    eventually worth less than one at the top.

    Test: for n = 1..T (T = ``threshold_depth``), with the qrels n non-relevant and n top-grade documents, the list
    holding one top-grade document scores strictly more than the list of n non-relevant then n top-grade documents
    for every n from some n0 on, and n0 <= T / 2 (the relation has settled over the upper half of the probe).
    Held: n0 is the witness; violated: the deepest probe where it fails is shown.
    """
    top, deep, defined, sign = _probe(s)
    if not defined.any():
        return Outcome(UNDEFINED, 0, claim="no finite value on the probe")
    k = len(top)
    wins = (sign == -1) | ~defined
    settled = np.flip(np.cumprod(np.flip(wins))).astype(bool)  # the single document wins at n and every n after it
    checked, skipped = int(defined.sum()), int((~defined).sum())
    if settled[(k - 1) // 2]:
        n0 = int(np.argmax(settled))
        return Outcome(HELD, checked, skipped, _evidence(s, n0), "the single document wins from this n on")
    n = int(np.nonzero(~wins)[0][-1])
    return Outcome(VIOLATED, checked, skipped, _evidence(s, n),
                   "the deep list still scores at least as much at the deepest such probe")


def closeness_threshold(s: Scored) -> Outcome:
    """Closeness threshold (Amigó, Gonzalo & Verdejo 2013, ranking constraint 4): "there exists a value m small
    enough such that retrieving one relevant document in the first position is worse than m relevant documents
    after m non-relevant documents."

    Test: on the probe of :func:`deepness_threshold`, the list of n non-relevant then n top-grade documents scores
    strictly more than the single top-grade document for some n = 1..T; held: the smallest such n (the witness);
    violated: the n where the deep list comes closest is shown.
    """
    top, deep, defined, sign = _probe(s)
    if not defined.any():
        return Outcome(UNDEFINED, 0, claim="no finite value on the probe")
    checked, skipped = int(defined.sum()), int((~defined).sum())
    wins = np.nonzero(defined & (sign == 1))[0]
    if len(wins):
        return Outcome(HELD, checked, skipped, _evidence(s, int(wins[0])), "the deep list wins first at this n")
    closest = int(np.nanargmax(np.where(defined, deep - top, np.nan)))
    return Outcome(VIOLATED, checked, skipped, _evidence(s, closest),
                   "the deep list never wins; it comes closest at this n")


def interval(s: Scored) -> Outcome:
    """Interval scale (Ferrante, Ferro & Pontarollo 2019; Ferrante, Ferro & Fuhr 2021): on the rankings of a fixed
    length n, a measure is an interval scale of the order it induces iff the values it takes are equally spaced.

    Test: for each n = 1..``length`` (the exhaustive length), every list of exactly n documents over grades 0..c,
    scored with the qrels n documents of every grade (so every such list is possible): the distinct values (equal
    within :data:`SPACING_RTOL` of their range), sorted, have equal gaps (to the same tolerance). Violated: the
    smallest n with two consecutive unequal gaps, shown by three lists with consecutive values. Undefined when no n
    gives three distinct values.
    """
    cases, values = s.interval, s.v_interval
    checked, skipped = 0, int((~np.isfinite(values)).sum())
    for n in range(1, s.length + 1):  # one length at a time: a handful of lengths, each a vectorised array
        idx = np.nonzero((cases.lengths == n) & np.isfinite(values))[0]
        v = values[idx]
        order = np.argsort(v, kind="stable")
        span = v[order[-1]] - v[order[0]] if len(v) else 0.0
        tol = SPACING_RTOL * span
        distinct = np.concatenate([[True], np.diff(v[order]) > tol]) if len(v) else np.zeros(0, bool)
        first = idx[order[distinct]]  # the first list attaining each distinct value, values ascending
        if len(first) < 3:
            continue
        checked += 1
        gaps = np.diff(values[first])
        unequal = np.nonzero(np.abs(np.diff(gaps)) > tol)[0]
        if len(unequal):
            j = int(unequal[0])
            return Outcome(VIOLATED, checked, skipped, [(cases, int(i), values[i]) for i in first[j: j + 3]],
                           "three consecutive values of the lists of one length are not equally spaced")
    if checked == 0:
        return Outcome(UNDEFINED, 0, skipped, claim="fewer than three distinct values at every length")
    return Outcome(HELD, checked, skipped)
