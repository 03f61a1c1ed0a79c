"""Which lists can share a form found by probing, and scoring probe lists.

A form found by probing (:func:`meta_eval.statistics.maxent.forms.derive_form`, :mod:`meta_eval.statistics.maxent.prefix_state`) depends on a
list's length and qrels counts. Probing costs about N^2 per group for lists of N documents, so lists share a group
when the metric allows it, checked on verification lists (a sample of the actual lists and random ones of every
length and counts) before it is used:

``all``
    the metric ignores zero-grade documents appended to a list and the qrels counts (RR, ERR, P@k, DCG, most
    cascades): one group, probed at the longest list's length;
``counts``
    it ignores appended zero grades only (AP, nDCG, anything normalised by R): one group per qrels counts (per
    topic), probed at the longest length of the topic's lists;
``length+counts``
    anything else (a metric that divides by the list's length): one group per length and counts.

A list of length n in a group probed at length N > n is read as itself followed by N - n zero grades, which is
what the first two properties guarantee.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meta_eval.statistics.maxent.batch import ListBatch

_PROBE_CELLS = 8_000_000  # probe lists x length scored in one call of the metric
_PAD_GRADE = -3  # meta_eval.model.rankings.PAD
GROUPINGS = ("all", "counts", "length+counts")


def score(measure, grades: np.ndarray, lengths: np.ndarray, counts: np.ndarray, rel_level: int) -> np.ndarray:
    """The metric on lists given as grades (padding past each list's length is ignored), in slices of bounded size."""
    from meta_eval.model.rankings import Rankings

    P, N = grades.shape
    out = np.empty(P)
    step = max(1, _PROBE_CELLS // max(N, 1))
    inside = np.arange(N)[None, :] < np.asarray(lengths)[:, None]
    g_all = np.where(inside, grades, _PAD_GRADE).astype(np.int8)
    counts = np.broadcast_to(counts, (P, np.shape(counts)[-1]))
    for lo in range(0, P, step):
        sl = slice(lo, lo + step)
        r = Rankings(g_all[sl], np.asarray(lengths)[sl], counts[sl], rel_level=rel_level)
        out[sl] = np.broadcast_to(np.asarray(measure(r), dtype=np.float64), (len(g_all[sl]),))
    return out


def group_keys(batch: ListBatch, by: str) -> np.ndarray:
    """(L, d) int: the key of each list's group under ``by`` (module docstring)."""
    if by == "all":
        return np.zeros((batch.n_lists, 0), dtype=np.int64)
    if by == "counts":
        return batch.counts.astype(np.int64)
    return np.column_stack([batch.lengths, batch.counts]).astype(np.int64)


def grouping(measure, batch: ListBatch, rel_level: int, tol: float, seed: int) -> str:
    """How lists may share a probed form: "all", "counts" or "length+counts" (module docstring)."""
    from meta_eval.statistics.maxent.verify import verification_batch

    probe = verification_batch(batch, seed)
    base = score(measure, probe.grades, probe.lengths, probe.counts, rel_level)
    scale = max(1.0, float(np.nanmax(np.abs(base), initial=0.0)))
    full = np.full(probe.n_lists, probe.depth)
    padded = score(measure, probe.grades, full, probe.counts, rel_level)
    if not _same(base, padded, tol * scale):
        return "length+counts"
    others = probe.counts[np.random.default_rng(seed).permutation(probe.n_lists)]
    if not np.array_equal(others, probe.counts):
        swapped = score(measure, probe.grades, full, others, rel_level)
        if not _same(base, swapped, tol * scale):
            return "counts"
    return "all"


def _same(a: np.ndarray, b: np.ndarray, tol: float) -> bool:
    both = np.isfinite(a) & np.isfinite(b)
    return bool(np.array_equal(np.isfinite(a), np.isfinite(b)) and np.all(np.abs(a[both] - b[both]) <= tol))


@dataclass(frozen=True)
class GroupTable:
    """The groups of a batch: ``by``, their keys (G, d), each list's group (L,), the length each group is probed at
    (the longest of its lists) and its qrels counts (G, K)."""

    by: str
    keys: np.ndarray
    group: np.ndarray
    lengths: np.ndarray
    counts: np.ndarray

    @classmethod
    def keyed(cls, by: str, keys: np.ndarray) -> "GroupTable":
        """A table that only looks lists up (the groups of a form kept without the batch it was found for)."""
        empty = np.zeros(0, dtype=np.int64)
        return cls(by, keys, empty, empty, empty)

    def lookup(self, batch: ListBatch) -> np.ndarray:
        """The group of every list of ``batch`` (KeyError for a list of a group not in the table)."""
        if self.by == "all":
            return np.zeros(batch.n_lists, dtype=np.int64)
        table = {tuple(k): g for g, k in enumerate(self.keys.tolist())}
        return np.array([table[tuple(k)] for k in group_keys(batch, self.by).tolist()], dtype=np.int64)


def groups_for(measure, batch: ListBatch, rel_level: int, tol: float, seed: int, by: str | None = None) -> GroupTable:
    """The groups of ``batch`` for ``measure`` (``by`` found by :func:`grouping` unless given)."""
    by = grouping(measure, batch, rel_level, tol, seed) if by is None else by
    keys, group = np.unique(group_keys(batch, by), axis=0, return_inverse=True)
    group = group.reshape(-1).astype(np.int64)
    lengths = np.zeros(len(keys), dtype=np.int64)
    np.maximum.at(lengths, group, batch.lengths)
    first = np.zeros(len(keys), dtype=np.int64)
    first[group[::-1]] = np.arange(batch.n_lists)[::-1]
    return GroupTable(by, keys, group, lengths, batch.counts[first].astype(np.int64))


def groups_in_words(table: GroupTable) -> str:
    """How many forms a table asks for, in words, for reports."""
    n = len(table.keys)
    return {"all": "one for every list", "counts": f"{n} (one per qrels counts)",
            "length+counts": f"{n} (one per length and qrels counts)"}[table.by]
