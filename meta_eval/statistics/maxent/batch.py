"""A batch of ranked lists for the maximum-entropy method: grades per rank, lengths and per-grade qrels counts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meta_eval.core.errors import InputError


@dataclass(frozen=True)
class ListBatch:
    """L ranked lists over grades 0..c, padded to a common depth N.

    Parameters
    ----------
    grades : numpy.ndarray
        int array (L, N): the judged grade at each rank (0..c; unjudged and judged-negative documents count as 0);
        entries at ranks ``>= lengths[l]`` are ignored (conventionally 0).
    lengths : numpy.ndarray
        int array (L,): number of retrieved documents n_l <= N.
    counts : numpy.ndarray
        int array (L, c+1): number of judged documents of each grade for the list's topic (R_0..R_c of the GAP
        paper); only R_1..R_c are used by the metrics.
    """

    grades: np.ndarray
    lengths: np.ndarray
    counts: np.ndarray

    def __post_init__(self) -> None:
        g = np.asarray(self.grades)
        n = np.asarray(self.lengths)
        c = np.asarray(self.counts)
        if g.ndim != 2:
            raise InputError(f"grades must be a 2-d array (lists, ranks); got shape {g.shape}")
        if n.shape != (g.shape[0],):
            raise InputError(f"lengths must have shape ({g.shape[0]},); got {n.shape}")
        if c.ndim != 2 or c.shape[0] != g.shape[0] or c.shape[1] < 2:
            raise InputError(f"counts must have shape ({g.shape[0]}, c+1) with c >= 1; got {c.shape}")
        if np.any(n < 0) or np.any(n > g.shape[1]):
            raise InputError(f"lengths must lie in 0..{g.shape[1]}; got min {n.min()} max {n.max()}")
        valid = np.arange(g.shape[1])[None, :] < n[:, None]
        gv = np.where(valid, g, 0)
        if gv.size and (gv.min() < 0 or gv.max() >= c.shape[1]):
            raise InputError(f"grades must lie in 0..{c.shape[1] - 1} within each list; got {gv.min()}..{gv.max()}")
        if np.any(c < 0):
            raise InputError("counts must be non-negative")
        object.__setattr__(self, "grades", gv.astype(np.int64))
        object.__setattr__(self, "lengths", n.astype(np.int64))
        object.__setattr__(self, "counts", c.astype(np.int64))

    @property
    def n_lists(self) -> int:
        return self.grades.shape[0]

    @property
    def depth(self) -> int:
        return self.grades.shape[1]

    @property
    def n_grades(self) -> int:
        """K = c + 1."""
        return self.counts.shape[1]

    @property
    def mask(self) -> np.ndarray:
        """bool (L, N): True at ranks inside each list."""
        return np.arange(self.depth)[None, :] < self.lengths[:, None]

    def onehot(self) -> np.ndarray:
        """The actual lists as point-mass distributions, float (L, N, K), zero beyond each list's end."""
        return onehot(self.grades, self.lengths, self.n_grades)

    def retrieved_counts(self) -> np.ndarray:
        """int (L, K): number of retrieved documents of each grade (counted grade by grade: the one-hot array would
        take L × N × K floats)."""
        inside = self.mask
        return np.stack([np.count_nonzero((self.grades == k) & inside, axis=1) for k in range(self.n_grades)],
                        axis=1).astype(np.int64)

    def subset(self, index) -> "ListBatch":
        """The lists at ``index`` (any numpy index), trimmed to their longest length."""
        lengths = self.lengths[index]
        depth = int(lengths.max()) if lengths.size else 0
        return ListBatch(self.grades[index][:, :depth], lengths, self.counts[index])

    def binarise(self, rel_level: int = 1) -> "ListBatch":
        """Collapse grades to 0/1 with relevant = grade >= rel_level (for the binary MEM of Aslam et al.)."""
        if not 1 <= rel_level < self.n_grades:
            raise InputError(f"rel_level must lie in 1..{self.n_grades - 1}; got {rel_level}")
        counts = np.stack([self.counts[:, :rel_level].sum(1), self.counts[:, rel_level:].sum(1)], axis=1)
        return ListBatch((self.grades >= rel_level).astype(np.int64), self.lengths, counts)

    @classmethod
    def from_lists(cls, grade_lists, counts=None, n_grades: int | None = None) -> "ListBatch":
        """Build from Python lists of grades.

        When ``counts`` is None the qrels are assumed to hold exactly the documents of each list.
        """
        lists = [np.asarray(g, dtype=np.int64).ravel() for g in grade_lists]
        if not lists:
            raise InputError("from_lists needs at least one list")
        depth = max((len(g) for g in lists), default=0)
        grades = np.zeros((len(lists), max(depth, 1)), dtype=np.int64)
        for i, g in enumerate(lists):
            grades[i, : len(g)] = g
        lengths = np.array([len(g) for g in lists])
        if counts is None:
            top = max([int(g.max()) for g in lists if len(g)] + [0])
            k = max(n_grades or 0, top + 1, 2)
            counts = np.array([np.bincount(g, minlength=k)[:k] for g in lists])
        counts = np.atleast_2d(np.asarray(counts))
        if counts.shape[0] == 1 and len(lists) > 1:
            counts = np.repeat(counts, len(lists), axis=0)
        return cls(grades, lengths, counts)

    @classmethod
    def from_rankings(cls, rankings) -> "ListBatch":
        """Build from a core ``meta_eval.Rankings`` (any leading shape is flattened to lists).

        Unjudged (-1) and judged-negative (-2) documents count as grade 0; padding (-3) ends the list.
        """
        grades = np.asarray(rankings.grades)
        depth = grades.shape[-1]
        grades = grades.reshape(-1, depth)
        lead = np.shape(rankings.grades)[:-1]
        counts = np.asarray(rankings.counts)
        counts = np.broadcast_to(counts, (*lead, counts.shape[-1])).reshape(-1, counts.shape[-1])
        lengths = np.broadcast_to(np.asarray(rankings.n_ret), lead).reshape(-1)
        return cls(np.where(grades >= 0, grades, 0), lengths, counts)


def onehot(grades: np.ndarray, lengths: np.ndarray, n_grades: int) -> np.ndarray:
    """Lists of grades (L, N; grades in 0..n_grades-1 within each list's length) as point-mass distributions, float
    (L, N, K), zero beyond each list's end: a 1 set at each rank inside a list (one pass over the ranks, not three
    over the grades too)."""
    L, N = grades.shape
    out = np.zeros((L, N, n_grades))
    inside = (np.arange(N)[None, :] < np.asarray(lengths)[:, None]).ravel()
    flat = np.arange(L * N, dtype=np.int64) * n_grades + np.asarray(grades, dtype=np.int64).ravel()
    out.reshape(-1)[flat[inside]] = 1.0
    return out
