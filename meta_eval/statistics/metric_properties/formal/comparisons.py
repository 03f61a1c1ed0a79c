"""The properties stated as comparisons of two cases: each builds, from a batch of base cases, the variants the
property compares (a longer list, a swap, a replaced document ...), and says how their values must relate.

Every builder takes the base cases and a :class:`Context` and returns :class:`Pairs`: for each candidate the base
case it came from and the two cases compared (``None`` standing for the base itself). With ``rng=None`` it returns
every candidate (the exhaustive search, where each variant is again a case of the enumeration); with a generator,
one random candidate per base case (the random search, where the variants are new cases). A property holds when
``value(left) R value(right)`` for every candidate, R its :attr:`~Comparison.relation`: ``gt`` (strictly
greater), ``ge`` (never smaller) or ``eq`` (equal), as :func:`holds` decides them.

"The top k" of a metric with a cutoff k (``P@10``, ``nDCG@10``) are its first k ranks, as Moffat evaluates a metric
at depth k; for a metric without one, the whole list (the documents outside it are those not retrieved).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from meta_eval.statistics.metric_properties.formal.cases import Cases

#: Rounding allowed by "never smaller" and "equal": values within RTOL × the larger magnitude are equal.
RTOL = 1e-12


@dataclass(frozen=True)
class Context:
    """How a builder runs: the metric's cutoff (None: the whole list), the longest list a variant may have, and
    ``rng`` (None: every candidate; a generator: one random candidate per base case)."""

    cutoff: int | None
    room: int
    rng: np.random.Generator | None


@dataclass
class Pairs:
    """Candidates of a comparison: ``base`` indexes the base cases; ``left``/``right`` are the compared cases
    (``None``: the base case)."""

    base: np.ndarray
    left: Cases | None
    right: Cases | None


@dataclass(frozen=True)
class Comparison:
    """A property stated as a comparison (its docstring is the builder's)."""

    key: str
    relation: str
    uses_cutoff: bool
    build: Callable[[Cases, Context], Pairs]
    broken: str  # what a counterexample shows, in words

    @property
    def doc(self) -> str:
        return self.build.__doc__ or ""


def holds(left: np.ndarray, right: np.ndarray, relation: str) -> tuple[np.ndarray, np.ndarray]:
    """(defined, held) per comparison: both values finite, and ``left R right``.

    ``ge`` and ``eq`` allow rounding (:data:`RTOL`); ``gt`` asks for any increase of the computed value, however
    small: a metric that does not respond computes the same value bit for bit, while one whose response is tiny
    (the deep ranks of ERR or of RBP with a small p) still moves the last bits. A response below double precision
    (about 1e-16 of the value) is no response: the verdict is what float64 arithmetic can tell.
    """
    defined = np.isfinite(left) & np.isfinite(right)
    with np.errstate(invalid="ignore"):
        tol = RTOL * np.maximum(np.abs(left), np.abs(right))
        diff = left - right
        ok = {"gt": diff > 0, "ge": diff >= -tol, "eq": np.abs(diff) <= tol}[relation]
    return defined, defined & ok


def _pick(mask: np.ndarray, rng: np.random.Generator | None) -> tuple[np.ndarray, np.ndarray]:
    """(base, candidate) of every True cell of ``mask`` (B, K), or of one random True cell per row."""
    if rng is None:
        return np.nonzero(mask)
    keys = np.where(mask, rng.random(mask.shape), -1.0)
    has = mask.any(1)
    return np.nonzero(has)[0], keys.argmax(1)[has]


def _set(cases: Cases, base: np.ndarray, rank: np.ndarray, grade: np.ndarray, counts: np.ndarray | None = None,
         lengths: np.ndarray | None = None) -> Cases:
    """Copies of the base cases with the document at ``rank`` given ``grade`` (and new counts or lengths)."""
    grades = cases.grades[base].copy()
    grades[np.arange(len(base)), rank] = grade
    return Cases(grades, cases.lengths[base] if lengths is None else lengths,
                 cases.counts[base] if counts is None else counts)


def _swap(cases: Cases, base: np.ndarray, i: np.ndarray, j: np.ndarray) -> Cases:
    """Copies of the base cases with the documents at ranks i and j exchanged."""
    grades = cases.grades[base].copy()
    rows = np.arange(len(base))
    grades[rows, i], grades[rows, j] = cases.grades[base, j], cases.grades[base, i]
    return Cases(grades, cases.lengths[base], cases.counts[base])


def _top(cases: Cases, cutoff: int | None) -> np.ndarray:
    """Ranks in "the top k" of each list: min(length, k)."""
    return cases.lengths if cutoff is None else np.minimum(cases.lengths, cutoff)


def _append(cases: Cases, ctx: Context, grades: np.ndarray, keep: np.ndarray | None = None) -> Pairs:
    """Each base list (of those kept) extended by one judged, unretrieved document of one of ``grades``."""
    x, n, free = cases.grades, cases.lengths, cases.unretrieved
    mask = (n < min(ctx.room, x.shape[1]))[:, None] & (free[:, grades] >= 1)
    if keep is not None:
        mask &= keep[:, None]
    base, k = _pick(mask, ctx.rng)
    return Pairs(base, _set(cases, base, n[base], grades[k], lengths=n[base] + 1), None)


def monotone(cases: Cases, ctx: Context) -> Pairs:
    """Monotonicity (Moffat 2013, property 2): "if a ranking of length k is extended so that k + 1 elements are
    included, the score never decreases."

    Test: for every list shorter than the space allows and every grade of which the qrels hold a document the list
    did not retrieve, the list with that document appended (qrels unchanged) scores at least as much: left = the
    extended list, right = the list, ``ge``.
    """
    return _append(cases, ctx, np.arange(cases.max_grade + 1))


def confidence(cases: Cases, ctx: Context) -> Pairs:
    """Confidence (Amigó, Gonzalo & Verdejo 2013, ranking constraint 5): adding noise at the bottom of a ranking
    lowers its quality.

    Test: for every list holding a relevant document (a list scoring nothing has nothing to lose) and an
    unretrieved judged non-relevant document (grade 0), appending that document strictly lowers the score: left =
    the list, right = the list with the non-relevant document appended, ``gt``.
    """
    pairs = _append(cases, ctx, np.array([0]), keep=(cases.grades >= 1).any(1))
    return Pairs(pairs.base, None, pairs.left)


def convergent(cases: Cases, ctx: Context) -> Pairs:
    """Convergence (Moffat 2013, property 3): "if a document within the top k is swapped with a more relevant one
    currently outside the top k, the score strictly increases."

    Test: for every rank i in the top k and every more relevant document outside it — a judged document the list
    did not retrieve, or one at a rank past the cutoff k — putting it at rank i (the replaced document leaves the
    top k; the qrels are unchanged) strictly raises the score: left = the changed list, right = the list, ``gt``.
    """
    x, n, free = cases.grades, cases.lengths, cases.unretrieved
    c, depth = cases.max_grade, x.shape[1]
    top = _top(cases, ctx.cutoff)
    ranks = np.arange(depth)
    in_top = ranks[None, :] < top[:, None]
    grades = np.arange(c + 1)
    outside = in_top[:, :, None] & (grades[None, None, :] > x[:, :, None]) & (free[:, None, :] >= 1)  # (B, D, c+1)
    tail = (ranks[None, :] >= top[:, None]) & (ranks[None, :] < n[:, None])
    swap = in_top[:, :, None] & tail[:, None, :] & (x[:, None, :] > x[:, :, None])  # (B, D, D)
    mask = np.concatenate([outside.reshape(len(n), -1), swap.reshape(len(n), -1)], axis=1)
    base, k = _pick(mask, ctx.rng)
    first = k < depth * (c + 1)
    i_new, g_new = np.divmod(k[first], c + 1)
    i_swap, j_swap = np.divmod(k[~first] - depth * (c + 1), depth)
    replaced = _set(cases, base[first], i_new, g_new)
    swapped = _swap(cases, base[~first], i_swap, j_swap)
    order = np.argsort(np.concatenate([np.nonzero(first)[0], np.nonzero(~first)[0]]), kind="stable")
    both = Cases.concat([replaced, swapped], c)
    return Pairs(base, both.take(order), None)


def top_weighted(cases: Cases, ctx: Context) -> Pairs:
    """Top-weightedness (Moffat 2013, property 4): "if a document within the top k is swapped with a more relevant
    one lower in the top k, the score strictly increases."

    Test: for every pair of ranks i < j in the top k whose document at j is more relevant than the one at i,
    exchanging them strictly raises the score: left = the swapped list, right = the list, ``gt``.
    """
    x = cases.grades
    i, j = np.triu_indices(x.shape[1], 1)
    top = _top(cases, ctx.cutoff)
    mask = (j[None, :] < top[:, None]) & (x[:, j] > x[:, i])
    base, k = _pick(mask, ctx.rng)
    return Pairs(base, _swap(cases, base, i[k], j[k]), None)


def priority(cases: Cases, ctx: Context) -> Pairs:
    """Priority (Amigó, Gonzalo & Verdejo 2013, ranking constraint 1): swapping two contiguous documents in
    concordance with their relevance increases the score.

    Test: for every pair of adjacent ranks i, i + 1 (anywhere in the list, a cutoff notwithstanding) whose lower
    document is more relevant, exchanging them strictly raises the score: left = the swapped list, right = the
    list, ``gt``.
    """
    x = cases.grades
    i = np.arange(x.shape[1] - 1)
    mask = x[:, i + 1] > x[:, i]  # PAD (< 0) past the list is never more relevant
    base, k = _pick(mask, ctx.rng)
    return Pairs(base, _swap(cases, base, i[k], i[k] + 1), None)


def deepness(cases: Cases, ctx: Context) -> Pairs:
    """Deepness (Amigó, Gonzalo & Verdejo 2013, ranking constraint 2): correctly swapping contiguous documents has
    more effect in the early positions of the ranking.

    Test: for every two disjoint pairs of adjacent ranks (i, i + 1) and (j, j + 1), i + 1 < j, holding the same
    two grades in the wrong order (the lower document more relevant), fixing the earlier pair scores strictly more
    than fixing the later one: left = the list fixed at i, right = the list fixed at j, ``gt``.
    """
    x = cases.grades
    i, j = np.triu_indices(x.shape[1] - 1, 1)
    keep = j > i + 1
    i, j = i[keep], j[keep]
    mask = (x[:, i] == x[:, j]) & (x[:, i + 1] == x[:, j + 1]) & (x[:, i + 1] > x[:, i]) & (x[:, i] >= 0)
    base, k = _pick(mask, ctx.rng)
    return Pairs(base, _swap(cases, base, i[k], i[k] + 1), _swap(cases, base, j[k], j[k] + 1))


def top_heavy(cases: Cases, ctx: Context) -> Pairs:
    """Top-heaviness (Kishida 2005, §2.2, Eq. 11): the increase Δv(j) when the non-relevant document at rank j
    turns relevant, R held fixed, exceeds Δv(j + 1) when ranks j and j + 1 both hold non-relevant documents.

    Test: for every two adjacent ranks j, j + 1 in the top k holding non-relevant documents (grade 0) and every
    grade g >= 1 of which the qrels hold an unretrieved document, that document placed at rank j scores strictly
    more than placed at rank j + 1 (qrels unchanged): left = the document at j, right = at j + 1, ``gt``. The
    discrete form of :func:`meta_eval.statistics.metric_properties.sensitivity.metric_increment`. Past a cutoff k every rank is
    worth nothing, so only the top k is tested, as for :func:`top_weighted`.
    """
    x, free = cases.grades, cases.unretrieved
    c, depth = cases.max_grade, x.shape[1]
    j = np.arange(depth - 1)
    zeros = (x[:, j] == 0) & (x[:, j + 1] == 0) & (j[None, :] + 1 < _top(cases, ctx.cutoff)[:, None])  # (B, D-1)
    mask = zeros[:, :, None] & (free[:, None, 1:] >= 1)  # (B, D-1, c)
    base, k = _pick(mask.reshape(len(x), -1), ctx.rng)
    rank, g = np.divmod(k, c)
    return Pairs(base, _set(cases, base, rank, g + 1), _set(cases, base, rank + 1, g + 1))


def new_relevant(cases: Cases, ctx: Context) -> Pairs:
    """A newly found relevant document (Kishida 2005, §2.3, Eq. 15–17): when a retrieved document judged
    non-relevant is found relevant, R grows by one; AP can then fall (Eq. 17: Δ ≈ 1/j − v/(R + 1)).

    Test (the property: the score never falls): for every rank j holding a non-relevant document (grade 0) and
    every grade g >= 1, judging it g instead (the qrels lose a grade-0 document and gain a grade-g one) does not
    lower the score: left = after, right = before, ``ge``.
    """
    x = cases.grades
    c, depth = cases.max_grade, x.shape[1]
    mask = (x == 0)[:, :, None] & np.ones(c, dtype=bool)  # (B, D, c)
    base, k = _pick(mask.reshape(len(x), -1), ctx.rng)
    rank, g = np.divmod(k, c)
    counts = cases.counts[base].copy()
    rows = np.arange(len(base))
    counts[rows, 0] -= 1
    counts[rows, g + 1] += 1
    return Pairs(base, _set(cases, base, rank, g + 1, counts=counts), None)


def localised(cases: Cases, ctx: Context) -> Pairs:
    """Localisation (Moffat 2013, property 5): "a score at depth k can be computed based solely on knowledge of the
    documents that appear in the top k."

    Test: every case scores the same as its *bare* form — the same top k, every document past the cutoff made
    non-relevant, and qrels holding exactly the listed documents (no unretrieved judged document) — so any two
    cases with the same top k score alike: left = the bare form, right = the case, ``eq``. A case already bare is
    not compared.
    """
    x, n = cases.grades, cases.lengths
    top = _top(cases, ctx.cutoff)
    ranks = np.arange(x.shape[1])
    bare_grades = np.where((ranks[None, :] >= top[:, None]) & (ranks[None, :] < n[:, None]), 0, x)
    bare = Cases(bare_grades.astype(np.int16), n, cases.counts)
    bare.counts = bare.hist
    differs = (bare.counts != cases.counts).any(1) | (bare.grades != x).any(1)
    base = np.nonzero(differs)[0]  # one candidate per case: the same in both searches
    return Pairs(base, bare.take(base), None)


#: The comparison properties, by key.
COMPARISONS: dict[str, Comparison] = {c.key: c for c in (
    Comparison("monotone", "ge", False, monotone, "extending the list lowers the score"),
    Comparison("convergent", "gt", True, convergent,
               "bringing a more relevant document into the top k does not raise the score"),
    Comparison("top-weighted", "gt", True, top_weighted,
               "moving a more relevant document up within the top k does not raise the score"),
    Comparison("localised", "eq", True, localised,
               "two cases with the same top k score differently"),
    Comparison("priority", "gt", False, priority,
               "moving a more relevant document up one rank does not raise the score"),
    Comparison("deepness", "gt", False, deepness,
               "fixing a wrongly ordered pair early gains no more than fixing the same pair later"),
    Comparison("confidence", "gt", False, confidence,
               "appending a non-relevant document to a list holding a relevant one does not lower the score"),
    Comparison("top-heavy", "gt", True, top_heavy,
               "a relevant document gains no more at a rank than one rank lower"),
    Comparison("new relevant", "ge", False, new_relevant,
               "a document newly judged relevant lowers the score"),
)}
