"""Scoring a collection under many subsets of its qrels at once (the engine behind incomplete judgments and pool
reusability).

A *mask* keeps some rows of ``collection.judgments``; a dropped judgment makes the document unjudged for every
run that retrieved it (the same as :meth:`Collection.with_judgments`, which the tests use as the reference). The
engine builds, block by block, :class:`~meta_eval.model.rankings.Rankings` whose leading shape is (combos, systems,
topics): ``which[k, s]`` names the mask that judges system s in combo k (combo = one resampled qrels for every
system, or, for leave-one-out, each system's own qrels). Combos are processed in chunks that hold at most
``budget`` ranked positions, so memory stays bounded while a chunk is one vectorised call per measure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from meta_eval.model.collection import Collection
from meta_eval.core.errors import InputError
from meta_eval.measures import Measure
from meta_eval.model.rankings import PAD, UNJUDGED, Rankings

FORMS = ("standard", "condensed")
#: Ranked positions (systems x topics x depth) of one part of a block: blocks are cut along the systems so that
#: the float64 temporaries of a measure stay small (below glibc's mmap threshold, they reuse freed memory instead
#: of faulting fresh pages in for every array).
PART = 2**20
#: Ranked positions (combos x part) scored in one vectorised call.
BUDGET = 2**21
_UNJUDGED_IDX, _PAD_IDX = -1, -2


def resolve_measures(measures: Iterable[str | Measure]) -> list[Measure]:
    """Measures from names, plug-in specs (``module:function``) or Measure objects, in order, without repeats
    (:func:`meta_eval.measures.resolve`)."""
    from meta_eval.measures.resolver import resolve

    out = resolve(measures)
    if not out:
        raise InputError("no measures given")
    return out


def check_forms(forms: Sequence[str], collection: Collection) -> list[str]:
    forms = [forms] if isinstance(forms, str) else list(dict.fromkeys(forms))
    bad = [f for f in forms if f not in FORMS]
    if bad or not forms:
        raise InputError(f"forms must be some of {FORMS}; got {bad or forms}")
    if "standard" in forms and collection.options.get("unjudged") == "remove":
        raise InputError("the standard form needs the unjudged documents: load the collection with "
                         "unjudged='nonrel' (the condensed form is computed from it)")
    return forms


@dataclass(eq=False)
class _Block:
    """One block of the collection, with the positions that hold a judged document listed in rank order."""

    systems: slice  # the part's systems
    topics: np.ndarray  # (Tb,) topic indices
    grades: np.ndarray  # (S, Tb, D) grade codes under the full qrels
    n_ret: np.ndarray  # (S, Tb)
    jidx: np.ndarray  # (S, Tb, D) judgment row of the document at each rank; -1 unjudged, -2 past the list

    def __post_init__(self):
        n_top, depth = self.grades.shape[1:]
        flat = self.jidx.reshape(-1)
        self.judged = np.flatnonzero(flat >= 0)  # flat positions holding a judged document
        self.judged_row = flat[self.judged].astype(np.int64)
        self.judged_sys = self.judged // (n_top * depth)
        # what a condensed list keeps: judged documents with a non-negative grade, in rank order
        cond = np.flatnonzero(self.grades.reshape(-1) >= 0)
        self.cond_row = flat[cond].astype(np.int64)
        self.cond_sys = cond // (n_top * depth)
        self.cond_list = cond // depth  # (system, topic) list of each position
        self.cond_grade = self.grades.reshape(-1)[cond]
        starts = np.flatnonzero(np.r_[True, self.cond_list[1:] != self.cond_list[:-1]]) if cond.size else cond
        self.cond_before = np.repeat(starts, np.diff(np.r_[starts, cond.size]))  # index of the list's first entry

    def standard(self, kept: np.ndarray) -> np.ndarray:
        """(k, S, Tb, D) grades when the judged positions ``kept`` (k, judged) keep their judgment."""
        k = kept.shape[0]
        out = np.repeat(self.grades[None], k, axis=0)
        kk, i = np.nonzero(~kept)
        out.reshape(k, -1)[kk, self.judged[i]] = UNJUDGED
        return out

    def condensed(self, kept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(k, S, Tb, D') condensed grades and (k, S, Tb) lengths when the positions of ``cond_row`` are kept
        where ``kept`` (k, positions) is True (Sakai 2007; the rule of :meth:`Collection.condensed`)."""
        k = kept.shape[0]
        n_sys, n_top, _ = self.grades.shape
        running = np.cumsum(kept, axis=1)
        before = np.where(self.cond_before > 0, running[:, np.maximum(self.cond_before - 1, 0)], 0)
        position = running - before - 1  # rank of each kept position within its condensed list
        kk, i = np.nonzero(kept)
        n_lists = n_sys * n_top
        lengths = np.bincount(kk * n_lists + self.cond_list[i], minlength=k * n_lists).reshape(k, n_lists)
        width = max(int(lengths.max(initial=0)), 1)
        out = np.full((k, n_sys * n_top, width), PAD, dtype=self.grades.dtype)
        out[kk, self.cond_list[i], position[kk, i]] = self.cond_grade[i]
        return out.reshape(k, n_sys, n_top, width), lengths.reshape(k, n_sys, n_top)


class Rejudger:
    """Precomputed links from every ranked document to its judgment row, per block of a collection.

    Holds only the arrays it needs (not the collection), so that worker processes receive little.
    """

    def __init__(self, collection: Collection):
        j = collection.judgments
        n_docs = max(len(collection.doc_names), 1)
        self.n_systems, self.n_topics = len(collection.systems), len(collection.topics)
        self.max_grade = collection.max_grade
        self.rel_level = collection.rel_level
        self.present = collection.present
        self.missing = collection.missing
        self.n_judgments = len(j)
        self.topic = j.topic.astype(np.int64)
        self.grade = j.grade
        keys = self.topic * n_docs + j.doc  # sorted: judgments are ordered by (topic, document)
        self.blocks = []
        for block in collection.blocks:
            topic = np.broadcast_to(block.topics[None, :, None], block.docs.shape).astype(np.int64)
            key = topic * n_docs + np.maximum(block.docs, 0)
            pos = np.minimum(np.searchsorted(keys, key), max(len(keys) - 1, 0))
            found = (keys[pos] == key) if len(keys) else np.zeros(key.shape, dtype=bool)
            idx = np.where(found & (block.docs >= 0), pos, _UNJUDGED_IDX)
            jidx = np.where(block.docs < 0, _PAD_IDX, idx).astype(np.int32)
            r = block.rankings
            rows = max(1, PART // max(block.docs[0].size, 1))
            for s0 in range(0, self.n_systems, rows):
                part = slice(s0, min(s0 + rows, self.n_systems))
                self.blocks.append(_Block(part, block.topics, r.grades[part], r.n_ret[part], jidx[part]))

    def counts(self, keep: np.ndarray) -> np.ndarray:
        """(M, T, G + 1) kept judgments per mask, topic and grade 0..G (negative grades not counted)."""
        n_masks = keep.shape[0]
        n_top, width = self.n_topics, self.max_grade + 1
        m, row = np.nonzero(keep & (self.grade >= 0)[None, :])
        flat = (m * n_top + self.topic[row]) * width + self.grade[row]
        return np.bincount(flat, minlength=n_masks * n_top * width).reshape(n_masks, n_top, width)

    def first_rank(self) -> np.ndarray:
        """(J,) best (smallest, 1-based) rank at which any run retrieved each judged document; 0 if none did."""
        best = np.full(self.n_judgments, np.iinfo(np.int64).max)
        for block in self.blocks:
            s, t, d = np.nonzero(block.jidx >= 0)
            np.minimum.at(best, block.jidx[s, t, d], d + 1)
        return np.where(best == np.iinfo(np.int64).max, 0, best)

    def scores(
        self,
        measures: Sequence[Measure],
        keep: np.ndarray,
        which: np.ndarray,
        forms: Sequence[str] = ("standard",),
        *,
        reduce: Callable[[slice, dict], object] | None = None,
        jobs: int | None = 1,
        scheduler: str | None = None,
        progress: bool = False,
    ) -> Iterator:
        """Per-topic scores under the masks, chunk by chunk of combos, in order.

        Parameters
        ----------
        keep : bool array (M, J)
            Which judgments each mask keeps.
        which : int array (K, S)
            Mask judging system s in combo k.
        reduce : callable, optional
            ``reduce(combos, scores)`` run on each chunk (in the worker) so that only its result is kept.
        jobs : int
            Worker processes scoring chunks in parallel (results do not depend on it; None: every core).
        scheduler : str, optional
            A Dask cluster instead (``"local"`` or ``"tcp://HOST:PORT"``), see :mod:`meta_eval.core.parallel`.

        Yields
        ------
        ``(slice of combos, {(measure, form): (k, S, T) scores})``, or ``reduce``'s result for it
            Topics a run did not retrieve for follow the collection's ``missing`` rule, as :func:`per_topic`.
        """
        keep = np.asarray(keep, dtype=bool)
        which = np.asarray(which, dtype=np.int64)
        n_sys = self.n_systems
        if keep.ndim != 2 or keep.shape[1] != self.n_judgments:
            raise InputError(f"keep must have shape (masks, {self.n_judgments}); got {keep.shape}")
        if which.ndim != 2 or which.shape[1] != n_sys or (which.size and not 0 <= which.min() <= which.max()
                                                           < keep.shape[0]):
            raise InputError(f"which must be (combos, {n_sys}) mask indices below {keep.shape[0]}")
        if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or jobs < 1):
            raise InputError(f"jobs must be a positive integer; got {jobs!r}")
        counts = self.counts(keep)
        positions = max(b.grades.size for b in self.blocks)
        step = max(1, BUDGET // max(positions, 1))
        slices = [slice(a, min(a + step, which.shape[0])) for a in range(0, which.shape[0], step)]

        from meta_eval.core.parallel import parallel_map, resolve_jobs
        from meta_eval.core.progress import progress as show

        if (jobs == 1 and scheduler is None) or len(slices) == 1:
            results: Iterable = (self._reduced(measures, keep, counts, which, forms, sl, reduce) for sl in slices)
            yield from show(results, total=len(slices), desc="rejudged qrels", unit="chunk", enabled=progress)
            return
        # Processes, not threads: threads contend on the GIL between the many medium-sized numpy calls and ran
        # slower than one thread. Slices go out in contiguous groups, and the collection once per worker
        # (meta_eval.core.parallel: joblib memory-maps the large arrays, Dask scatters them). jobs=None is passed on, so
        # parallel_map times the first group here and starts workers only when the rest pays for them (the demo's
        # reduced qrels took 5.9 s on two workers against 3.9 s here).
        workers = resolve_jobs(jobs)
        bounds = np.linspace(0, len(slices), min(len(slices), workers * 4) + 1).astype(int)
        groups = [slices[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
        grouped = parallel_map(_run_group, groups, common=dict(rejudger=self, measures=measures, keep=keep,
                                                               counts=counts, which=which, forms=forms,
                                                               reduce=reduce),
                               jobs=jobs, scheduler=scheduler, desc="rejudged qrels", unit="group",
                               progress=progress)
        yield from (item for group in grouped for item in group)

    def all_scores(self, measures, keep, which, forms=("standard",)) -> dict[tuple[str, str], np.ndarray]:
        """:meth:`scores` of every combo at once: {(measure, form): (K, S, T)}."""
        parts = [out for _, out in self.scores(measures, keep, which, forms)]
        return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}

    def _reduced(self, measures, keep, counts, which, forms, sl: slice, reduce):
        out = self._score_chunk(measures, keep, counts, which[sl], forms)
        return (sl, out) if reduce is None else reduce(sl, out)

    def _score_chunk(self, measures, keep, counts, which, forms) -> dict[tuple[str, str], np.ndarray]:
        k = which.shape[0]
        out = {(m.output_name, f): np.zeros((k, self.n_systems, self.n_topics)) for m in measures for f in forms}
        for b in self.blocks:
            w = which[:, b.systems]
            block_counts = counts[w][:, :, b.topics]  # (k, S_part, Tb, G + 1)
            cell = (slice(None), b.systems, b.topics)
            for form in forms:
                if form == "standard":
                    grades = b.standard(keep[w[:, b.judged_sys], b.judged_row])
                    n_ret = np.broadcast_to(b.n_ret, grades.shape[:-1])
                else:
                    grades, n_ret = b.condensed(keep[w[:, b.cond_sys], b.cond_row])
                rk = Rankings(grades, n_ret, block_counts, rel_level=self.rel_level)
                prefixes: dict[int, Rankings] = {}
                for m in measures:
                    k = _prefix_cutoff(m)
                    if k is not None and k < rk.depth:  # the top k suffice (tests/test_properties.py)
                        if k not in prefixes:
                            prefixes[k] = Rankings(grades[..., :k], np.minimum(n_ret, k), block_counts,
                                                   rel_level=self.rel_level)
                        value = m(prefixes[k])
                    else:
                        value = m(rk)
                    out[(m.output_name, form)][cell] = np.broadcast_to(value, rk.shape)
        fill = np.nan if self.missing == "skip" else 0.0
        for m in measures:
            if not m.family.qrels_only:
                for f in forms:
                    out[(m.output_name, f)] = np.where(self.present, out[(m.output_name, f)], fill)
        return out


#: Families whose value at cutoff k depends on the top k documents only (a property test checks each), so that
#: they are computed on the first k ranks instead of the whole list.
PREFIX_FAMILIES = frozenset({"P", "nDCG", "AP", "Recall", "Q", "ERR", "RBP", "GAP"})


def _prefix_cutoff(measure: Measure) -> int | None:
    family = measure.family
    if family.name not in PREFIX_FAMILIES or family.cutoff is None:
        return None
    k = dict(measure.params).get(family.cutoff.name)
    return int(k) if k is not None else None


def _run_group(slices, *, rejudger: Rejudger, measures, keep, counts, which, forms, reduce) -> list:
    _keep_freed_memory()
    return [rejudger._reduced(measures, keep, counts, which, forms, sl, reduce) for sl in slices]


def _keep_freed_memory() -> None:
    """In a worker process (glibc only): keep freed memory for reuse instead of returning it to the system.

    A fresh worker has a small heap, so glibc trims every freed multi-megabyte temporary and the next one faults
    its pages in again: measured on TREC-COVID, ~50,000 page faults and a second of system time per re-scored
    qrels, none in a process whose heap is already large. Raising the trim and mmap thresholds removes them.
    """
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD
        libc.mallopt(-2, 1 << 28)  # M_TOP_PAD
        libc.mallopt(-3, 1 << 28)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):  # not glibc: nothing to tune
        pass

