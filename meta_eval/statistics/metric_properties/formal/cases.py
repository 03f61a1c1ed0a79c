"""The cases a formal property is checked on: ranked lists with the qrels of their topic, enumerated or drawn.

A *case* is a ranked list of judged documents (grades 0..c, top first) and its topic's qrels, given as the number
of judged documents of each grade, ``counts = (n_0, ..., n_c)``. Every document of the list is among them; the rest
are judged documents the list did not retrieve. Unjudged documents do not occur (they are the subject of the
incomplete-judgments analysis, not of a metric's formal properties).

- :class:`Cases`: a batch of cases, scored by a measure in one vectorised call (:meth:`Cases.rankings`).
- :class:`Enumeration`: every list of up to ``length`` documents over grades 0..c with every qrels composition of
  up to ``judged`` documents that contains it (the exhaustive space), with the lookup from a list and qrels back
  to its case, so that a property's comparisons are index pairs into one scored batch.
- :func:`random_bases`: seeded random lists longer than the exhaustive ones, with random unretrieved documents.
- :func:`ideal_cases`, :func:`growth_cases`, :func:`threshold_cases`, :func:`interval_cases`: the probes of the
  properties that are not comparisons of two cases.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.model.rankings import PAD, Rankings

#: Most (list, qrels) cells an exhaustive space may hold (its lookup table is a dense int32 array of that size).
MAX_CELLS = 20_000_000


@dataclass
class Cases:
    """A batch of cases.

    Parameters
    ----------
    grades : numpy.ndarray
        ``(N, D)`` grades 0..c in rank order, :data:`~meta_eval.model.rankings.PAD` past each list.
    lengths : numpy.ndarray
        ``(N,)`` list lengths.
    counts : numpy.ndarray
        ``(N, c + 1)`` judged documents of each grade of the case's topic.
    """

    grades: np.ndarray
    lengths: np.ndarray
    counts: np.ndarray

    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def max_grade(self) -> int:
        return self.counts.shape[1] - 1

    @property
    def depth(self) -> int:
        return self.grades.shape[1]

    @cached_property
    def hist(self) -> np.ndarray:
        """``(N, c + 1)`` documents of each grade in each list."""
        c = self.max_grade
        return (self.grades[:, :, None] == np.arange(c + 1)).sum(1)

    @property
    def judged(self) -> np.ndarray:
        return self.counts.sum(1)

    @property
    def relevant(self) -> np.ndarray:
        """R: judged documents of grade >= 1."""
        return self.counts[:, 1:].sum(1)

    @property
    def unretrieved(self) -> np.ndarray:
        """``(N, c + 1)`` judged documents of each grade the list did not retrieve."""
        return self.counts - self.hist

    def rankings(self) -> Rankings:
        """The cases as :class:`~meta_eval.model.rankings.Rankings` (one list per case, relevant: grade >= 1)."""
        return Rankings(self.grades, self.lengths, self.counts)

    def take(self, index: np.ndarray) -> "Cases":
        return Cases(self.grades[index], self.lengths[index], self.counts[index])

    def ranking(self, i: int) -> tuple[int, ...]:
        return tuple(int(g) for g in self.grades[i, : self.lengths[i]])

    @classmethod
    def concat(cls, parts: list["Cases"], max_grade: int) -> "Cases":
        """One batch of several (padded to the deepest)."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return cls(np.full((0, 1), PAD, np.int16), np.zeros(0, np.int64), np.zeros((0, max_grade + 1), np.int64))
        depth = max(p.depth for p in parts)
        grades = np.concatenate([np.pad(p.grades, ((0, 0), (0, depth - p.depth)), constant_values=PAD)
                                 for p in parts])
        return cls(grades, np.concatenate([p.lengths for p in parts]), np.concatenate([p.counts for p in parts]))


def padded(grades: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``grades`` with :data:`PAD` at and past each list's length (int16)."""
    ranks = np.arange(grades.shape[1])
    return np.where(ranks < lengths[:, None], grades, PAD).astype(np.int16)


def compositions(c: int, judged: int) -> np.ndarray:
    """Every qrels composition ``(n_0, ..., n_c)`` of at most ``judged`` documents, ordered by total then
    lexicographically: ``(Q, c + 1)``."""
    grid = np.indices((judged + 1,) * (c + 1)).reshape(c + 1, -1).T
    grid = grid[grid.sum(1) <= judged]
    order = np.lexsort((*grid.T[::-1], grid.sum(1)))
    return grid[order].astype(np.int64)


def all_lists(c: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """Every list of 0..``length`` documents over grades 0..c, by length then lexicographically: grades
    ``(L, length)`` (PAD past each list) and lengths ``(L,)``. List ``code`` of length n is at
    ``offset(n) + code``, where ``code`` reads the grades as a base-(c + 1) number."""
    blocks, lengths = [], []
    for n in range(length + 1):  # length + 1 blocks of (c + 1)^n lists each, built as whole arrays
        codes = np.arange((c + 1) ** n)
        digits = (codes[:, None] // (c + 1) ** np.arange(n - 1, -1, -1)) % (c + 1)
        block = np.full(((c + 1) ** n, max(length, 1)), PAD, dtype=np.int16)
        block[:, :n] = digits
        blocks.append(block)
        lengths.append(np.full((c + 1) ** n, n))
    return np.concatenate(blocks), np.concatenate(lengths).astype(np.int64)


class Enumeration:
    """The exhaustive space: every list of up to ``length`` documents over grades 0..c, with every qrels
    composition of up to ``judged`` judged documents that contains the list.

    ``cases`` holds them by list (length, then lexicographic) and, within a list, by qrels (total, then
    lexicographic), so the first case a property fails on is the smallest. :meth:`index` finds the case of any
    list and qrels of the space.
    """

    def __init__(self, c: int, length: int, judged: int):
        self.c, self.length, self.judged = c, length, judged
        self.comps = compositions(c, judged)
        n_lists = sum((c + 1) ** n for n in range(length + 1))
        if n_lists * len(self.comps) > MAX_CELLS:
            raise InputError(f"an exhaustive space of lists of up to {length} documents over grades 0..{c} with up "
                             f"to {judged} judged documents holds {n_lists * len(self.comps):,} (list, qrels) cells, "
                             f"more than {MAX_CELLS:,}: lower the length, the grades or the unretrieved documents")
        grades, lengths = all_lists(c, length)
        self._offsets = np.concatenate([[0], np.cumsum([(c + 1) ** n for n in range(length + 1)])])
        self._comp_ids = np.full((judged + 1,) * (c + 1), -1, dtype=np.int64)
        self._comp_ids[tuple(self.comps.T)] = np.arange(len(self.comps))
        hist = (grades[:, :, None] == np.arange(c + 1)).sum(1)
        valid = (hist[:, None, :] <= self.comps[None, :, :]).all(-1)  # (L, Q): the qrels hold the list
        lst, comp = np.nonzero(valid)
        self._cell = np.full(valid.shape, -1, dtype=np.int32)
        self._cell[lst, comp] = np.arange(len(lst))
        self.cases = Cases(grades[lst], lengths[lst], self.comps[comp])

    def list_ids(self, grades: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """The index of each list in the enumeration (grades past each length are ignored)."""
        c, width = self.c, grades.shape[1]
        ranks = np.arange(width)
        power = (c + 1) ** np.clip(lengths[:, None] - 1 - ranks, 0, None)
        digits = np.where(ranks < lengths[:, None], grades, 0).astype(np.int64)
        return self._offsets[lengths] + (digits * power).sum(1)

    def index(self, cases: Cases) -> np.ndarray:
        """The case index of each (list, qrels) of ``cases``; InputError if one lies outside the space."""
        if len(cases) == 0:
            return np.zeros(0, dtype=np.int64)
        inside = (cases.lengths <= self.length) & (cases.counts.sum(1) <= self.judged)
        if not inside.all():
            raise InputError("a case outside the exhaustive space was looked up")  # a bug in a property's variants
        lists = self.list_ids(cases.grades[:, : self.length] if cases.depth >= self.length else
                              np.pad(cases.grades, ((0, 0), (0, self.length - cases.depth)), constant_values=PAD),
                              cases.lengths)
        comps = self._comp_ids[tuple(cases.counts.T)]
        found = self._cell[lists, comps].astype(np.int64)
        if (comps < 0).any() or (found < 0).any():
            raise InputError("a variant's qrels do not hold its list")  # a bug in a property's variants
        return found


def random_bases(c: int, lengths: range, per_length: int, unretrieved: int, rng: np.random.Generator,
                 depth: int) -> Cases:
    """``per_length`` random lists of each length (grades uniform on 0..c), each with 0..``unretrieved`` random
    unretrieved judged documents of each grade; padded to ``depth``."""
    n = np.repeat(np.asarray(list(lengths), dtype=np.int64), per_length)
    grades = padded(rng.integers(0, c + 1, size=(len(n), depth)), n)
    extra = rng.integers(0, unretrieved + 1, size=(len(n), c + 1))
    hist = (grades[:, :, None] == np.arange(c + 1)).sum(1)
    return Cases(grades, n, hist + extra)


def ideal_cases(counts: np.ndarray) -> Cases:
    """For each qrels composition, its ideal list: every relevant judged document, highest grade first."""
    c = counts.shape[1] - 1
    relevant = counts[:, 1:].sum(1)
    width = max(int(relevant.max(initial=0)), 1)
    from_top = np.cumsum(counts[:, :0:-1], axis=1)  # documents of grade >= c, >= c-1, ..., >= 1
    ranks = np.arange(width)
    grade = c - (ranks[None, :, None] >= from_top[:, None, :]).sum(-1)
    return Cases(padded(grade, relevant), relevant.astype(np.int64), counts.copy())


def growth_cases(c: int, longest: int) -> tuple[Cases, np.ndarray]:
    """The boundedness probe: for n = 1, 2, 4, ..., ``longest``, the best list (n documents of grade c, the qrels
    exactly those) and the worst (n judged non-relevant documents retrieved, n documents of grade c not).

    Returns the cases (best lists first) and the lengths n."""
    sizes = 2 ** np.arange(int(np.log2(longest)) + 1)
    k = len(sizes)
    grades = np.full((2 * k, int(sizes[-1])), PAD, dtype=np.int16)
    ranks = np.arange(grades.shape[1])
    inside = ranks[None, :] < sizes[:, None]
    grades[:k][inside] = c
    grades[k:][inside] = 0
    counts = np.zeros((2 * k, c + 1), dtype=np.int64)
    counts[:k, c] = sizes
    counts[k:, 0] = sizes
    counts[k:, c] = sizes
    return Cases(grades, np.concatenate([sizes, sizes]).astype(np.int64), counts), sizes


def threshold_cases(c: int, deepest: int) -> Cases:
    """Amigó et al.'s threshold probes for n = 1..``deepest``: the list of one document of grade c (rows 0..n-1)
    and the list of n non-relevant documents followed by n of grade c (rows n..2n-1); both with the qrels n
    non-relevant and n grade-c documents."""
    n = np.arange(1, deepest + 1)
    ranks = np.arange(2 * deepest)
    top = np.where(ranks[None, :] < 1, c, PAD)
    top = np.broadcast_to(top, (deepest, 2 * deepest))
    deep = np.where(ranks[None, :] < n[:, None], 0, np.where(ranks[None, :] < 2 * n[:, None], c, PAD))
    counts = np.zeros((deepest, c + 1), dtype=np.int64)
    counts[:, 0] = n
    counts[:, c] = n
    return Cases(np.concatenate([top, deep]).astype(np.int16), np.concatenate([np.ones(deepest), 2 * n]).astype(
        np.int64), np.concatenate([counts, counts]))


def interval_cases(c: int, length: int) -> Cases:
    """For the interval-scale test: every list of exactly n = 1..``length`` documents over grades 0..c, each with
    the qrels n documents of every grade (so that every such list is possible)."""
    grades, lengths = all_lists(c, length)
    keep = lengths > 0
    grades, lengths = grades[keep], lengths[keep]
    return Cases(grades, lengths, np.repeat(lengths[:, None], c + 1, axis=1))
