"""The ranked-grades representation every metric is a function of.

A :class:`Rankings` holds, for any leading shape (systems × topics for a collection, or one axis of plain lists),
the grade of the document at each rank, the list lengths and the per-topic qrels counts by grade. Metrics are
vectorised functions ``Rankings -> ndarray`` of the leading shape. Derived arrays that several metrics share
(relevance masks, cumulative counts, ideal lists) are computed once and cached.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Sequence

import numpy as np

from meta_eval.core.errors import InputError

UNJUDGED = -1
"""Grade code of a retrieved document absent from the qrels (trec_eval's RELVALUE_NONPOOL)."""
JUDGED_NEG = -2
"""Grade code of a document with a negative qrels grade: not relevant for every measure; like trec_eval
(RELVALUE_UNJUDGED) it is not counted as a judged non-relevant document by bpref and is removed by -J."""
PAD = -3
"""Grade code past the end of a list."""


@dataclass(eq=False)
class Rankings:
    """Grades of ranked documents, with the qrels counts needed to normalise metrics.

    Parameters
    ----------
    grades : numpy.ndarray
        Integer array ``(..., D)``: at each rank the judged grade (>= 0) or one of the codes
        :data:`UNJUDGED`, :data:`JUDGED_NEG`, :data:`PAD`.
    n_ret : numpy.ndarray
        ``(...)`` number of retrieved documents in each list.
    counts : numpy.ndarray
        ``(..., G + 1)`` (broadcastable to the leading shape) number of judged documents of each grade 0..G for the
        topic: the ``R_i`` of the GAP paper, trec_eval's ``rel_levels``.
    rel_level : int
        Binary relevance threshold: relevant means grade >= ``rel_level`` (trec_eval ``-l``; default 1).
    """

    grades: np.ndarray
    n_ret: np.ndarray
    counts: np.ndarray
    rel_level: int = 1
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.grades.ndim < 1:
            raise InputError("grades must have a rank axis")
        if self.rel_level < 0:
            raise InputError(f"rel_level must be >= 0, got {self.rel_level}")

    # ----------------------------------------------------------------------------------------- construction

    @classmethod
    def from_lists(
        cls,
        grade_lists: Sequence[Sequence[int]] | np.ndarray,
        counts: Sequence[Sequence[int]] | np.ndarray | None = None,
        rel_level: int = 1,
    ) -> "Rankings":
        """Build from plain lists of grades (one list per row; -1 marks an unjudged document).

        Parameters
        ----------
        grade_lists : sequence of sequences of int
            Grades in rank order. Lists may differ in length.
        counts : array-like, optional
            ``(L, G + 1)`` or ``(G + 1,)`` judged documents per grade. Default: exactly the judged documents in each
            list (every relevant document was retrieved).
        rel_level : int
            Binary relevance threshold.

        Examples
        --------
        >>> r = Rankings.from_lists([[3, 2, 0, 0, 0]], counts=[[0, 1, 1, 1]])
        >>> r.n_ret
        array([5])
        """
        lists = [np.asarray(g, dtype=np.int64).ravel() for g in grade_lists]
        depth = max((len(g) for g in lists), default=0)
        grades = np.full((len(lists), max(depth, 1)), PAD, dtype=np.int16)
        for i, g in enumerate(lists):
            grades[i, : len(g)] = g
        n_ret = np.array([len(g) for g in lists], dtype=np.int64)
        if counts is None:
            top = max(int(grades.max(initial=0)), 0)
            counts = np.stack([np.bincount(g[g >= 0], minlength=top + 1) for g in lists]) if lists else np.zeros((0, 1))
        counts = np.asarray(counts, dtype=np.int64)
        if counts.ndim == 1:
            counts = np.broadcast_to(counts, (len(lists), counts.shape[0]))
        if counts.shape[-1] <= max(int(grades.max(initial=0)), 0):
            raise InputError(f"counts cover grades 0..{counts.shape[-1] - 1}, but a list holds grade {grades.max()}")
        return cls(grades=grades, n_ret=n_ret, counts=counts, rel_level=rel_level)

    # ----------------------------------------------------------------------------------------- shape

    @property
    def shape(self) -> tuple[int, ...]:
        """Leading shape (one metric value per list)."""
        return self.grades.shape[:-1]

    @property
    def depth(self) -> int:
        """D, the padded list length."""
        return self.grades.shape[-1]

    @property
    def max_grade(self) -> int:
        """c, the highest grade the qrels can hold (``counts.shape[-1] - 1``)."""
        return self.counts.shape[-1] - 1

    def cached(self, key, compute):
        """Memoise a derived array shared by several metrics."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    # ----------------------------------------------------------------------------------------- derived arrays

    @cached_property
    def ranks(self) -> np.ndarray:
        """1..D as float64."""
        return np.arange(1, self.depth + 1, dtype=np.float64)

    def relevant(self, level: int | None = None) -> np.ndarray:
        """Boolean ``(..., D)``: grade >= ``level`` (default ``rel_level``)."""
        level = self.rel_level if level is None else level
        return self.cached(("rel", level), lambda: self.grades >= level)

    def cum_relevant(self, level: int | None = None) -> np.ndarray:
        """Relevant documents at or above each rank, ``(..., D)`` int32."""
        level = self.rel_level if level is None else level
        return self.cached(("cumrel", level), lambda: np.cumsum(self.relevant(level), axis=-1, dtype=np.int32))

    def num_rel(self, level: int | None = None) -> np.ndarray:
        """R: judged documents with grade >= ``level`` in the qrels, broadcast to the leading shape."""
        level = self.rel_level if level is None else level
        return self.cached(
            ("R", level), lambda: np.broadcast_to(self.counts[..., max(level, 0):].sum(-1), self.shape).astype(np.int64)
        )

    def num_rel_ret(self, level: int | None = None) -> np.ndarray:
        """Relevant documents retrieved."""
        return self.cum_relevant(level)[..., -1]

    def count_at(self, cum: np.ndarray, k: np.ndarray | int) -> np.ndarray:
        """Value of a cumulative array at rank ``k`` (1-based, per list or scalar); 0 at k = 0, held past D."""
        if np.ndim(k) == 0:  # one rank for every list (P@10): a column of the array
            k = int(k)
            return cum[..., min(k, self.depth) - 1].copy() if k > 0 else np.zeros(self.shape, dtype=cum.dtype)
        k = np.broadcast_to(np.asarray(k, dtype=np.int64), self.shape)
        idx = np.clip(k, 1, self.depth) - 1
        value = np.take_along_axis(cum, idx[..., None], axis=-1)[..., 0]
        return np.where(k > 0, value, 0)

    def valid(self) -> np.ndarray:
        """Boolean ``(..., D)``: the rank holds a retrieved document."""
        return self.cached("valid", lambda: self.grades != PAD)

    def gains(self, table: np.ndarray) -> np.ndarray:
        """Gain of each ranked document from a per-grade table (index = grade 0..G); codes < 0 gain 0. Cached per
        table (several measures share one gain table) and read-only."""
        table = np.asarray(table, dtype=np.float64)

        def build() -> np.ndarray:
            grades = self.grades
            if grades.min(initial=0) >= PAD and grades.max(initial=0) < len(table):
                # one gather: the negative codes (UNJUDGED, JUDGED_NEG, PAD) index the zeros appended at the end
                out = np.concatenate([table, np.zeros(-PAD)])[grades]
            else:
                safe = np.clip(grades, 0, len(table) - 1)
                out = np.where(grades >= 0, table[safe], 0.0)
            out.setflags(write=False)
            return out

        return self.cached(("gains", table.tobytes()), build)

    def ideal_grades(self) -> np.ndarray:
        """Ideal list of every topic: judged grades >= 1 sorted descending, ``(..., Rmax)`` padded with 0.

        Built from ``counts`` (all judged documents of the topic), so it does not depend on the run length.
        """

        def build() -> np.ndarray:
            counts = self.counts[..., 1:]
            per_topic = counts.sum(-1)
            width = max(int(per_topic.max(initial=0)), 1)
            # The ideal list is grade g repeated counts[g] times, highest grade first: position i holds the highest
            # grade whose cumulative count (from the top grade down) exceeds i.
            cum_from_top = np.cumsum(counts[..., ::-1], axis=-1)  # (..., G)
            pos = np.arange(width)
            level_from_top = (pos[..., None] >= cum_from_top[..., None, :]).sum(-1)  # (..., width)
            grade = self.max_grade - level_from_top
            return np.where(pos < per_topic[..., None], grade, 0).astype(np.int64)

        return self.cached("ideal", build)

    def ideal_gains(self, table: np.ndarray) -> np.ndarray:
        """Ideal gain vector: all judged documents' positive gains sorted descending, ``(..., Rmax)``."""
        table = np.asarray(table, dtype=np.float64)
        key = ("ideal_gains", table.tobytes())

        def build() -> np.ndarray:
            counts = self.counts
            per_grade_gain = table[: counts.shape[-1]]
            if len(per_grade_gain) < counts.shape[-1]:
                per_grade_gain = np.concatenate([per_grade_gain, np.zeros(counts.shape[-1] - len(per_grade_gain))])
            order = np.argsort(-per_grade_gain, kind="stable")  # grades by decreasing gain
            positive = per_grade_gain[order] > 0
            sorted_counts = np.where(positive, counts[..., order], 0)
            width = max(int(sorted_counts.sum(-1).max(initial=0)), 1)
            cum = np.cumsum(sorted_counts, axis=-1)
            pos = np.arange(width)
            slot = (pos[..., None] >= cum[..., None, :]).sum(-1)  # index into order, == len when past the end
            gains_sorted = np.concatenate([per_grade_gain[order] * positive, [0.0]])
            return gains_sorted[slot]

        return self.cached(key, build)
