"""A collection: the qrels and many runs, read once into dense arrays (systems × topics × depth).

Ordering of each ranked list (``ties``):

``"trec_eval"`` (default)
    score descending, ties broken by docid in *descending* byte order (trec_eval's ``comp_sim_docno``:
    ``strcmp(docno_b, docno_a)``); the rank column is ignored.
``"docid_asc"``
    score descending, ties by docid ascending (trectools' default on load, some ir_measures providers).
``"input"``
    the order of lines in the file (cwl-eval, NTCIREVAL); scores ignored.
``"rank"``
    the rank column ascending, ties by docid descending.

``score_precision="float32"`` rounds scores to 32-bit floats before ordering, which reproduces the extra ties of
trec_eval <= 9.0.8 and pytrec_eval.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Callable, Literal, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from meta_eval import io
from meta_eval.errors import InputError
from meta_eval.rankings import JUDGED_NEG, PAD, UNJUDGED, Rankings

TiePolicy = Literal["trec_eval", "docid_asc", "input", "rank"]
TIE_POLICIES = ("trec_eval", "docid_asc", "input", "rank")


@dataclass(eq=False)
class Block:
    """Topics of similar depth, stored densely.

    Attributes
    ----------
    topics : numpy.ndarray
        (Tb,) indices of the block's topics in :attr:`Collection.topics` (ascending).
    rankings : Rankings
        ``grades`` (S, Tb, Db) int8, ``n_ret`` (S, Tb), ``counts`` (Tb, G + 1).
    docs : numpy.ndarray
        (S, Tb, Db) int32 code of the document at each rank (an index into :attr:`Collection.doc_names`), -1 past
        the end of a list.
    """

    topics: np.ndarray
    rankings: Rankings
    docs: np.ndarray


@dataclass(frozen=True)
class Judgments:
    """The qrels as arrays, one entry per judgment, sorted by (topic, document).

    ``topic`` indexes :attr:`Collection.topics`, ``doc`` :attr:`Collection.doc_names`; ``grade`` is the integer
    grade as written (negative grades kept).
    """

    topic: np.ndarray
    doc: np.ndarray
    grade: np.ndarray

    def __len__(self) -> int:
        return len(self.grade)


@dataclass(eq=False)
class Collection:
    """Runs and qrels as dense arrays, one block per group of topics of similar depth.

    Memory follows what was retrieved: the topics are grouped by the length of their longest list (powers of
    two), and each group is a dense (systems × topics × depth) block, so one long list or many topics no run
    retrieved for do not inflate the others. Measures are computed block by block (:meth:`map_blocks`).

    Attributes
    ----------
    systems : list of str
        Run names (S).
    topics : list of str
        Topic ids from the qrels (T), in trec_eval's order (byte order of the id).
    blocks : list of Block
        The ranked lists, by groups of topics.
    n_ret : numpy.ndarray
        (S, T) documents retrieved per list (after ``depth`` and ``unjudged="remove"``).
    present : numpy.ndarray
        (S, T) bool: the run retrieved something for the topic.
    counts : numpy.ndarray
        (T, G + 1) judged documents per topic and grade 0..G (negative grades not counted).
    judgments : Judgments
        The qrels as arrays (topic index, document code, grade).
    doc_names : pyarrow.Array
        Document id of each document code.
    rel_level : int
        Binary relevance threshold (relevant = grade >= rel_level).
    missing : {"zero", "skip"}
        How topics absent from a run are averaged: scored 0 (trec_eval ``-c``) or left out.
    options : dict
        The options the collection was built with (for manifests and reproducibility).
    """

    systems: list[str]
    topics: list[str]
    blocks: list[Block]
    n_ret: np.ndarray
    present: np.ndarray
    counts: np.ndarray
    judgments: Judgments
    doc_names: pa.Array
    rel_level: int = 1
    missing: str = "zero"
    options: dict = field(default_factory=dict)

    # ------------------------------------------------------------------------------------------ shape

    @property
    def depth(self) -> int:
        """The longest list's length (at least 1)."""
        return max((b.rankings.depth for b in self.blocks), default=1)

    @property
    def shape(self) -> tuple[int, int, int]:
        """(systems, topics, longest list)."""
        return len(self.systems), len(self.topics), self.depth

    @property
    def max_grade(self) -> int:
        """The highest grade of the qrels (G)."""
        return self.counts.shape[1] - 1

    # ------------------------------------------------------------------------------------------ scoring

    def map_blocks(self, func: Callable[[Rankings], np.ndarray]) -> np.ndarray:
        """Apply a vectorised function of :class:`Rankings` to every block: the (S, T) float64 result."""
        out = np.zeros((len(self.systems), len(self.topics)))
        for block in self.blocks:
            r = block.rankings
            out[:, block.topics] = np.broadcast_to(np.asarray(func(r), dtype=np.float64), r.shape)
        return out

    # ------------------------------------------------------------------------------------------ dense views

    @cached_property
    def rankings(self) -> Rankings:
        """All lists as one dense :class:`Rankings` (S, T, longest list). Convenient for small collections; the
        memory is S × T × the longest list, so large collections should work block by block."""
        S, T, D = self.shape
        grades = np.full((S, T, D), PAD, dtype=np.int8)
        for block in self.blocks:
            grades[:, block.topics, : block.rankings.depth] = block.rankings.grades
        return Rankings(grades, self.n_ret, self.counts, rel_level=self.rel_level)

    @property
    def grades(self) -> np.ndarray:
        """Dense grade array (S, T, D); see :mod:`meta_eval.rankings` for the codes."""
        return self.rankings.grades

    @property
    def unjudged(self) -> np.ndarray:
        """(S, T, D) bool: the retrieved document is not in the qrels."""
        return self.grades == UNJUDGED

    # ------------------------------------------------------------------------------------------ derived collections

    def subset(self, systems: Sequence[str] | None = None, topics: Sequence[str] | None = None) -> "Collection":
        """A collection restricted to some systems and/or topics, in the order given (same options)."""
        s_idx = _indices(self.systems, systems, "system")
        t_idx = _indices(self.topics, topics, "topic")
        new_index = np.full(len(self.topics), -1, dtype=np.int64)
        new_index[t_idx] = np.arange(len(t_idx))
        blocks = []
        for block in self.blocks:
            local = np.flatnonzero(new_index[block.topics] >= 0)
            if local.size == 0:
                continue
            pick = np.ix_(s_idx, local)
            r = block.rankings
            rankings = Rankings(r.grades[pick], r.n_ret[pick], r.counts[local], rel_level=r.rel_level)
            blocks.append(Block(new_index[block.topics[local]], rankings, block.docs[pick]))
        keep = new_index[self.judgments.topic] >= 0
        j = self.judgments
        judgments = _sorted_judgments(new_index[j.topic[keep]], j.doc[keep], j.grade[keep])
        return replace(self, systems=[self.systems[i] for i in s_idx], topics=[self.topics[i] for i in t_idx],
                       blocks=blocks, n_ret=self.n_ret[np.ix_(s_idx, t_idx)],
                       present=self.present[np.ix_(s_idx, t_idx)], counts=self.counts[t_idx], judgments=judgments,
                       options=dict(self.options))

    def with_judgments(self, keep: np.ndarray) -> "Collection":
        """The same runs judged by a subset of the qrels: judgments where ``keep`` is False are dropped.

        Retrieved documents whose judgment is dropped become unjudged (removed from the lists when the collection
        was built with ``unjudged="remove"``), and the per-topic grade counts are recomputed. Used to study
        incomplete judgments and pool reusability.

        Parameters
        ----------
        keep : numpy.ndarray
            bool, one entry per row of :attr:`judgments`.
        """
        keep = np.asarray(keep, dtype=bool)
        j = self.judgments
        if keep.shape != (len(j),):
            raise InputError(f"keep must have one entry per judgment ({len(j)}); got shape {keep.shape}")
        judgments = Judgments(j.topic[keep], j.doc[keep], j.grade[keep])
        counts = _grade_counts(judgments.topic, judgments.grade, len(self.topics), self.max_grade)
        lookup = _GradeLookup(judgments, len(self.doc_names))
        blocks = []
        for block in self.blocks:
            topic = np.broadcast_to(block.topics[None, :, None], block.docs.shape)
            grades = np.where(block.docs >= 0, lookup(topic, block.docs), PAD).astype(np.int8)
            rankings = Rankings(grades, block.rankings.n_ret, counts[block.topics], rel_level=self.rel_level)
            blocks.append(Block(block.topics, rankings, block.docs))
        out = replace(self, blocks=blocks, counts=counts, judgments=judgments, options=dict(self.options))
        return out.condensed() if self.options.get("unjudged") == "remove" else out

    def condensed(self) -> "Collection":
        """Condensed lists: unjudged documents and negative judgments removed (Sakai 2007; trec_eval ``-J``)."""
        blocks, n_ret = [], self.n_ret.copy()
        for block in self.blocks:
            g = block.rankings.grades
            judged = g >= 0
            pos = np.cumsum(judged, axis=-1) - 1
            s, t, d = np.nonzero(judged)
            grades = np.full(g.shape, PAD, dtype=np.int8)
            docs = np.full(g.shape, -1, dtype=np.int32)
            grades[s, t, pos[s, t, d]] = g[s, t, d]
            docs[s, t, pos[s, t, d]] = block.docs[s, t, d]
            kept = judged.sum(-1)
            n_ret[:, block.topics] = kept
            r = block.rankings
            blocks.append(Block(block.topics, Rankings(grades, kept, r.counts, rel_level=r.rel_level), docs))
        return replace(self, blocks=blocks, n_ret=n_ret, options={**self.options, "unjudged": "remove"})

    def __repr__(self) -> str:
        s, t, d = self.shape
        return f"Collection({s} systems × {t} topics × depth {d}, grades 0..{self.max_grade})"


def _indices(names: list[str], wanted: Sequence[str] | None, kind: str) -> np.ndarray:
    if wanted is None:
        return np.arange(len(names))
    lookup = {name: i for i, name in enumerate(names)}
    unknown = [w for w in wanted if w not in lookup]
    if unknown:
        raise InputError(f"unknown {kind}(s) {unknown[:5]}; known: {names[:10]}{' ...' if len(names) > 10 else ''}")
    return np.array([lookup[w] for w in wanted], dtype=np.int64)


# --------------------------------------------------------------------------------------------- loading


def load_collection(
    qrels: io.PathLike | pd.DataFrame,
    runs: Sequence[io.PathLike | pd.DataFrame] | io.PathLike | pd.DataFrame,
    *,
    depth: int | None = None,
    rel_level: int = 1,
    missing: Literal["zero", "skip"] = "zero",
    unjudged: Literal["nonrel", "remove"] = "nonrel",
    ties: TiePolicy = "trec_eval",
    score_precision: Literal["float64", "float32"] = "float64",
    progress: bool = False,
) -> Collection:
    """Read qrels and runs into a :class:`Collection`.

    Parameters
    ----------
    qrels : path or DataFrame
        TREC qrels (``topic iteration docid grade``). Its topics define the topic set.
    runs : paths, directories, globs or DataFrames
        TREC runs (``topic Q0 docid rank score tag``), plain or gzip.
    depth : int, optional
        Keep only the top ``depth`` documents of each list after ordering (trec_eval ``-M``).
    rel_level : int
        Binary relevance threshold: relevant = grade >= rel_level (trec_eval ``-l``, default 1).
    missing : {"zero", "skip"}
        Topics of the qrels that a run does not retrieve for score 0 (trec_eval ``-c``, default) or are left out
        of that run's mean.
    unjudged : {"nonrel", "remove"}
        Retrieved documents without a judgment count as not relevant (default) or are removed before scoring
        (condensed lists, trec_eval ``-J``; documents with negative grades are removed too, as in trec_eval).
    ties : {"trec_eval", "docid_asc", "input", "rank"}
        Ordering policy (module docstring).
    score_precision : {"float64", "float32"}
        Round scores to 32-bit floats first to reproduce trec_eval 9.x / pytrec_eval ties.
    progress : bool
        Show a progress bar while reading run files.

    Raises
    ------
    InputError
        Malformed files (file and line named), a docid twice for one topic in a run or in the qrels, a run with no
        topic in common with the qrels, bad options.
    """
    _check_options(depth, rel_level, missing, unjudged, ties, score_precision)
    qrels_table = io.read_qrels(qrels)
    run_tables = io.read_runs(runs, with_rank=(ties == "rank"), progress=progress)
    if not run_tables:
        raise InputError("no runs given")
    return build_collection(
        qrels_table,
        run_tables,
        depth=depth,
        rel_level=rel_level,
        missing=missing,
        unjudged=unjudged,
        ties=ties,
        score_precision=score_precision,
    )


def _check_options(depth, rel_level, missing, unjudged, ties, score_precision) -> None:
    if depth is not None and depth < 1:
        raise InputError(f"depth must be a positive integer, got {depth}")
    if missing not in ("zero", "skip"):
        raise InputError(f"missing must be 'zero' or 'skip', got {missing!r}")
    if unjudged not in ("nonrel", "remove"):
        raise InputError(f"unjudged must be 'nonrel' or 'remove', got {unjudged!r}")
    if ties not in TIE_POLICIES:
        raise InputError(f"ties must be one of {TIE_POLICIES}, got {ties!r}")
    if score_precision not in ("float64", "float32"):
        raise InputError(f"score_precision must be 'float64' or 'float32', got {score_precision!r}")
    if int(rel_level) != rel_level:
        raise InputError(f"rel_level must be an integer, got {rel_level!r}")


def build_collection(
    qrels: io.QrelsTable,
    runs: list[io.RunTable],
    *,
    depth: int | None = None,
    rel_level: int = 1,
    missing: str = "zero",
    unjudged: str = "nonrel",
    ties: str = "trec_eval",
    score_precision: str = "float64",
) -> Collection:
    """Assemble parsed tables into dense blocks (see :func:`load_collection` for the options)."""
    _check_options(depth, rel_level, missing, unjudged, ties, score_precision)
    vocab = _Vocabulary(qrels, runs)
    topics, topic_index = vocab.qrels_topics()
    judgments = vocab.judgments(topic_index, topics)
    counts = _grade_counts(judgments.topic, judgments.grade, len(topics))

    rows = vocab.run_rows(topic_index)
    _check_run_topics(runs, rows, topics)
    _check_run_duplicates(runs, rows, vocab)

    n_sys, n_top = len(runs), len(topics)
    score = rows.score.astype(np.float32).astype(np.float64) if score_precision == "float32" else rows.score
    group = rows.system * n_top + rows.topic
    present = np.bincount(group, minlength=n_sys * n_top).reshape(n_sys, n_top) > 0
    order = _order(group, score, vocab.doc_order[rows.doc], rows.position, rows.rank, ties)
    group, doc = group[order], rows.doc[order].astype(np.int32)
    del rows, score, order
    grade = _GradeLookup(judgments, vocab.n_docs)(group % n_top, doc)
    pos = _position_in_group(group)
    keep = np.ones(len(group), dtype=bool)
    if depth is not None:
        keep &= pos < depth
    if unjudged == "remove":
        keep &= grade >= 0
    if not keep.all():
        group, doc, grade = group[keep], doc[keep], grade[keep]
        pos = _position_in_group(group)
    n_ret = np.bincount(group, minlength=n_sys * n_top).reshape(n_sys, n_top)
    blocks = _blocks(group, pos, grade, doc, n_ret, counts, int(rel_level))
    options = dict(
        depth=depth, rel_level=int(rel_level), missing=missing, unjudged=unjudged, ties=ties,
        score_precision=score_precision, qrels=qrels.source, runs=[r.source for r in runs],
    )
    return Collection([r.name for r in runs], topics, blocks, n_ret, present, counts, judgments, vocab.dictionary,
                      rel_level=int(rel_level), missing=missing, options=options)


def _blocks(group, pos, grade, doc, n_ret, counts, rel_level) -> list[Block]:
    """Group topics by the length of their longest list (powers of two) and fill one dense array per group."""
    n_sys, n_top = n_ret.shape
    topic_depth = n_ret.max(axis=0, initial=0)
    bucket = np.ceil(np.log2(np.maximum(topic_depth, 1))).astype(np.int64)
    local = np.empty(n_top, dtype=np.int64)
    row_topic = group % n_top
    row_bucket = bucket[row_topic]
    blocks = []
    for b in np.unique(bucket):
        topics = np.flatnonzero(bucket == b)
        local[topics] = np.arange(len(topics))
        width = max(int(topic_depth[topics].max(initial=0)), 1)
        sel = slice(None) if len(topics) == n_top else np.flatnonzero(row_bucket == b)
        s, t, p = group[sel] // n_top, local[row_topic[sel]], pos[sel]
        grades = np.full((n_sys, len(topics), width), PAD, dtype=np.int8)
        docs = np.full((n_sys, len(topics), width), -1, dtype=np.int32)
        grades[s, t, p] = grade[sel]
        docs[s, t, p] = doc[sel]
        rankings = Rankings(grades, n_ret[:, topics], counts[topics], rel_level=rel_level)
        blocks.append(Block(topics, rankings, docs))
    return blocks


# --------------------------------------------------------------------------------------------- helpers


@dataclass
class _Rows:
    """All run lines whose topic is in the qrels, concatenated over runs (file order within a run)."""

    system: np.ndarray
    topic: np.ndarray
    doc: np.ndarray
    score: np.ndarray
    rank: np.ndarray | None
    position: np.ndarray  # line index within its run (0-based, over all lines of the run)


class _Vocabulary:
    """Integer codes for topics and docids shared by the qrels and every run (one hash pass in Arrow)."""

    def __init__(self, qrels: io.QrelsTable, runs: list[io.RunTable]):
        self.qrels, self.runs = qrels, runs
        n_q = len(qrels.grade)
        doc_codes, self.dictionary = _encode([qrels.docid] + [r.docid for r in runs])
        topic_codes, topic_dictionary = _encode([qrels.topic] + [r.topic for r in runs])
        self.topic_names = topic_dictionary.to_pylist()
        self.n_docs = len(self.dictionary)
        self.q_doc, self.run_doc = doc_codes[:n_q], doc_codes[n_q:]
        self.q_topic, self.run_topic = topic_codes[:n_q], topic_codes[n_q:]
        # Rank of every docid in byte order (Arrow compares strings as bytes, as trec_eval's strcmp does).
        order = pc.sort_indices(self.dictionary.cast(pa.binary())).to_numpy()
        self.doc_order = np.empty(self.n_docs, dtype=np.int64)
        self.doc_order[order] = np.arange(self.n_docs)

    def doc_name(self, code: int) -> str:
        return self.dictionary[int(code)].as_py()

    def qrels_topics(self) -> tuple[list[str], np.ndarray]:
        """Topic ids of the qrels in byte order, and a map global topic code -> topic index (-1: not in qrels)."""
        codes = np.unique(self.q_topic)
        names = [self.topic_names[c] for c in codes]
        order = sorted(range(len(names)), key=lambda i: names[i].encode())
        index = np.full(len(self.topic_names), -1, dtype=np.int64)
        index[codes[order]] = np.arange(len(order))
        return [names[i] for i in order], index

    def judgments(self, topic_index: np.ndarray, topics: list[str]) -> Judgments:
        """The qrels sorted by (topic, doc); a document judged twice for a topic is an error."""
        out = _sorted_judgments(topic_index[self.q_topic], self.q_doc, self.qrels.grade)
        dup = np.flatnonzero((out.topic[1:] == out.topic[:-1]) & (out.doc[1:] == out.doc[:-1]))
        if len(dup):
            topic = topics[out.topic[dup[0]]]
            doc = self.doc_name(out.doc[dup[0]])
            line = io.line_of_pair(self.qrels.source, topic, doc)
            raise InputError(f"document {doc!r} is judged twice for topic {topic!r}", self.qrels.source, line)
        return out

    def run_rows(self, topic_index: np.ndarray) -> _Rows:
        sizes = [len(r.score) for r in self.runs]
        starts = np.cumsum([0] + sizes[:-1])
        system = np.repeat(np.arange(len(self.runs), dtype=np.int64), sizes)
        position = np.arange(sum(sizes)) - np.repeat(starts, sizes)
        topic = topic_index[self.run_topic]
        score = np.concatenate([r.score for r in self.runs])
        rank = np.concatenate([r.rank for r in self.runs]) if self.runs[0].rank is not None else None
        keep = topic >= 0  # run topics absent from the qrels are ignored, as in trec_eval
        if keep.all():
            return _Rows(system, topic, self.run_doc, score, rank, position)
        return _Rows(system[keep], topic[keep], self.run_doc[keep], score[keep],
                     None if rank is None else rank[keep], position[keep])


def _sorted_judgments(topic: np.ndarray, doc: np.ndarray, grade: np.ndarray) -> Judgments:
    order = np.lexsort((doc, topic))
    return Judgments(topic[order].astype(np.int32), doc[order].astype(np.int32), np.asarray(grade)[order])


class _GradeLookup:
    """Grade code of (topic, document) pairs: the qrels grade, UNJUDGED if absent, JUDGED_NEG if negative.

    A dense topics × documents table makes a lookup one gather when it is small enough; otherwise a binary search
    over the sorted judgment keys."""

    _DENSE_LIMIT = 64_000_000  # table cells (int8)

    def __init__(self, judgments: Judgments, n_docs: int):
        self.n_docs = n_docs
        self.key = judgments.topic.astype(np.int64) * n_docs + judgments.doc
        self.coded = np.where(judgments.grade < 0, JUDGED_NEG, judgments.grade).astype(np.int8)
        n_topics = int(judgments.topic.max(initial=-1)) + 1
        self.table = None
        if n_topics * n_docs <= self._DENSE_LIMIT:
            self.table = np.full(max(n_topics * n_docs, 1), UNJUDGED, dtype=np.int8)
            self.table[self.key] = self.coded

    def __call__(self, topic: np.ndarray, doc: np.ndarray) -> np.ndarray:
        key = np.asarray(topic, dtype=np.int64) * self.n_docs + np.maximum(doc, 0)
        if self.table is not None:
            inside = key < len(self.table)
            return np.where(inside, self.table[np.where(inside, key, 0)], UNJUDGED).astype(np.int8)
        if len(self.key) == 0:
            return np.full(key.shape, UNJUDGED, dtype=np.int8)
        pos = np.minimum(np.searchsorted(self.key, key), len(self.key) - 1)
        return np.where(self.key[pos] == key, self.coded[pos], UNJUDGED).astype(np.int8)


def _encode(arrays: list[pa.Array]) -> tuple[np.ndarray, pa.Array]:
    """Dictionary-encode several string arrays with one shared dictionary; codes of all arrays concatenated.

    Arrays that are already dictionary-encoded (run topics) contribute only their small dictionaries to the hash
    pass; their codes are then looked up through it."""
    plain = [a.dictionary if pa.types.is_dictionary(a.type) else a for a in arrays]
    chunked = pa.chunked_array([a.cast(pa.string()) for a in plain], type=pa.string())
    encoded = pc.dictionary_encode(chunked.combine_chunks())
    codes = encoded.indices.to_numpy().astype(np.int64)
    bounds = np.cumsum([0] + [len(a) for a in plain])
    parts = []
    for a, lo, hi in zip(arrays, bounds[:-1], bounds[1:]):
        part = codes[lo:hi]
        parts.append(part[a.indices.to_numpy()] if pa.types.is_dictionary(a.type) else part)
    return np.concatenate(parts) if parts else codes, encoded.dictionary


def _grade_counts(topic: np.ndarray, grade: np.ndarray, n_topics: int, top: int | None = None) -> np.ndarray:
    """Judged documents per topic and grade 0..top (default: the highest grade); negative grades are not counted,
    as in trec_eval."""
    top = max(int(grade.max(initial=0)), 0) if top is None else top
    ok = grade >= 0
    flat = np.bincount(topic[ok].astype(np.int64) * (top + 1) + grade[ok], minlength=n_topics * (top + 1))
    return flat.reshape(n_topics, top + 1).astype(np.int64)


def _check_run_topics(runs: list[io.RunTable], rows: _Rows, topics: list[str]) -> None:
    has = np.bincount(rows.system, minlength=len(runs)) > 0
    if not has.all():
        bad = runs[int(np.flatnonzero(~has)[0])]
        raise InputError(
            f"run {bad.name!r} has no topic in common with the qrels (qrels topics: {topics[:8]}"
            f"{' ...' if len(topics) > 8 else ''})",
            bad.source,
        )


def _check_run_duplicates(runs: list[io.RunTable], rows: _Rows, vocab: _Vocabulary) -> None:
    key = (rows.system * (len(vocab.topic_names) + 1) + rows.topic) * vocab.n_docs + rows.doc
    ordered = np.sort(key)  # a plain sort is much cheaper than argsort; locate the culprit only on failure
    if not (ordered[1:] == ordered[:-1]).any():
        return
    order = np.argsort(key, kind="stable")
    dup = np.flatnonzero(key[order][1:] == key[order][:-1])
    if len(dup):
        i = order[dup[0] + 1]
        run = runs[rows.system[i]]
        doc = vocab.doc_name(rows.doc[i])
        topic = run.topic[int(rows.position[i])].as_py()
        line = io.line_of_pair(run.source, topic, doc)
        raise InputError(f"document {doc!r} appears twice for topic {topic!r} in run {run.name!r}", run.source, line)


def _order(group, score, doc_order, position, rank, ties: str) -> np.ndarray:
    """Permutation ordering the rows by group, then by the tie policy."""
    if ties == "input":
        return np.lexsort((position, group))
    if ties == "rank":
        return _sort_rows(group, -rank, -doc_order)
    secondary = -doc_order if ties == "trec_eval" else doc_order
    return _sort_rows(group, score, secondary)


def _sort_rows(group: np.ndarray, primary: np.ndarray, secondary: np.ndarray) -> np.ndarray:
    """Make each group contiguous (groups themselves may come in any order), then order rows within a group by
    (primary descending, secondary ascending).

    Written by hand because numpy's ``lexsort`` over millions of rows costs seconds, while TREC runs are nearly
    always already grouped by topic and sorted by score: only groups that violate that order, and blocks of tied
    scores, are sorted (with ``lexsort``); everything else stays in place. Rows are sorted by their contiguous
    *block* (its position in the file), never by group id, so a group keeps its place among the others.
    """
    n = len(group)
    perm = np.arange(n)
    if n == 0:
        return perm
    boundary = group[1:] != group[:-1]
    if np.count_nonzero(boundary) + 1 != np.count_nonzero(np.bincount(group)):  # a group's rows are not contiguous
        perm = np.argsort(group, kind="stable")
        g = group[perm]
        boundary = g[1:] != g[:-1]
    block = np.concatenate([[0], np.cumsum(boundary)])  # contiguous block id, increasing along the rows
    same = ~boundary
    p = primary[perm]
    unsorted = same & (p[1:] > p[:-1])
    if unsorted.any():
        sub = np.flatnonzero(np.isin(block, np.unique(block[1:][unsorted])))
        rows = perm[sub]
        perm[sub] = rows[np.lexsort((secondary[rows], -primary[rows], block[sub]))]
        p = primary[perm]
    tie = same & (p[1:] == p[:-1])
    if tie.any():
        in_block = np.zeros(n, dtype=bool)
        in_block[1:] |= tie
        in_block[:-1] |= tie
        tie_block = np.cumsum(np.concatenate([[True], ~tie]))
        sub = np.flatnonzero(in_block)
        perm[sub] = perm[sub][np.lexsort((secondary[perm[sub]], tie_block[sub]))]
    return perm


def _position_in_group(group: np.ndarray) -> np.ndarray:
    """0-based position of each row within its (contiguous) group."""
    n = len(group)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    start = np.flatnonzero(np.concatenate([[True], group[1:] != group[:-1]]))
    lengths = np.diff(np.concatenate([start, [n]]))
    return np.arange(n) - np.repeat(start, lengths)
