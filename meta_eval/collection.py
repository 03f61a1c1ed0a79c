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

from dataclasses import dataclass, field
from typing import Literal, Sequence

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
class Collection:
    """Runs and qrels as dense arrays.

    Attributes
    ----------
    systems : list of str
        Run names (S).
    topics : list of str
        Topic ids from the qrels (T), in trec_eval's order (byte order of the id).
    rankings : Rankings
        ``grades`` (S, T, D) int8/int16, ``n_ret`` (S, T), ``counts`` (T, G + 1).
    present : numpy.ndarray
        (S, T) bool: the run retrieved something for the topic.
    missing : {"zero", "skip"}
        How topics absent from a run are averaged: scored 0 (trec_eval ``-c``) or left out.
    options : dict
        The options the collection was built with (for manifests and reproducibility).
    """

    systems: list[str]
    topics: list[str]
    rankings: Rankings
    present: np.ndarray
    missing: str = "zero"
    options: dict = field(default_factory=dict)

    @property
    def grades(self) -> np.ndarray:
        """Dense grade array (S, T, D); see :mod:`meta_eval.rankings` for the codes."""
        return self.rankings.grades

    @property
    def counts(self) -> np.ndarray:
        """Judged documents per topic and grade, (T, G + 1)."""
        return self.rankings.counts

    @property
    def unjudged(self) -> np.ndarray:
        """(S, T, D) bool: the retrieved document is not in the qrels."""
        return self.rankings.grades == UNJUDGED

    def subset(self, systems: Sequence[str] | None = None, topics: Sequence[str] | None = None) -> "Collection":
        """A collection restricted to some systems and/or topics (same options)."""
        s_idx = _indices(self.systems, systems, "system")
        t_idx = _indices(self.topics, topics, "topic")
        r = self.rankings
        rankings = Rankings(
            grades=r.grades[np.ix_(s_idx, t_idx)],
            n_ret=r.n_ret[np.ix_(s_idx, t_idx)],
            counts=r.counts[t_idx],
            rel_level=r.rel_level,
        )
        return Collection(
            systems=[self.systems[i] for i in s_idx],
            topics=[self.topics[i] for i in t_idx],
            rankings=rankings,
            present=self.present[np.ix_(s_idx, t_idx)],
            missing=self.missing,
            options=dict(self.options),
        )

    def __repr__(self) -> str:
        s, t, d = self.grades.shape
        return f"Collection({s} systems × {t} topics × depth {d}, grades 0..{self.rankings.max_grade})"


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
    """Assemble parsed tables into dense arrays (see :func:`load_collection` for the options)."""
    _check_options(depth, rel_level, missing, unjudged, ties, score_precision)
    vocab = _Vocabulary(qrels, runs)
    topics, topic_index = vocab.qrels_topics()
    q_key, q_grade = vocab.qrels_keys(topic_index)
    counts = _grade_counts(topic_index[vocab.q_topic], qrels.grade, len(topics))

    rows = vocab.run_rows(topic_index)
    _check_run_topics(runs, rows, topics)
    _check_run_duplicates(runs, rows, vocab)

    grade = _lookup_grades(rows, len(topics), vocab.n_docs, q_key, q_grade)
    score = rows.score.astype(np.float32).astype(np.float64) if score_precision == "float32" else rows.score
    group = rows.system * len(topics) + rows.topic
    order = _order(group, score, vocab.doc_order[rows.doc], rows.position, rows.rank, ties)
    group, grade = group[order], grade[order]
    pos = _position_in_group(group)
    if depth is not None:
        keep = pos < depth
        group, grade, pos = group[keep], grade[keep], pos[keep]
    if unjudged == "remove":
        keep = grade >= 0
        group, grade = group[keep], grade[keep]
        pos = _position_in_group(group)

    n_sys, n_top = len(runs), len(topics)
    dense_depth = int(pos.max()) + 1 if len(pos) else 1
    dtype = np.int8 if counts.shape[1] <= 127 else np.int16
    grades = np.full((n_sys * n_top, dense_depth), PAD, dtype=dtype)
    grades[group, pos] = grade
    n_ret = np.bincount(group, minlength=n_sys * n_top).reshape(n_sys, n_top)
    present = np.bincount(rows.system * n_top + rows.topic, minlength=n_sys * n_top).reshape(n_sys, n_top) > 0
    rankings = Rankings(grades.reshape(n_sys, n_top, dense_depth), n_ret, counts, rel_level=int(rel_level))
    options = dict(
        depth=depth, rel_level=int(rel_level), missing=missing, unjudged=unjudged, ties=ties,
        score_precision=score_precision, qrels=qrels.source, runs=[r.source for r in runs],
    )
    return Collection([r.name for r in runs], topics, rankings, present, missing=missing, options=options)


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
        doc_codes, dictionary = _encode([qrels.docid] + [r.docid for r in runs])
        self.docs = dictionary.to_pylist()
        topic_codes, topic_dictionary = _encode([qrels.topic] + [r.topic for r in runs])
        self.topic_names = topic_dictionary.to_pylist()
        self.n_docs = len(self.docs)
        self.q_doc, self.run_doc = doc_codes[:n_q], doc_codes[n_q:]
        self.q_topic, self.run_topic = topic_codes[:n_q], topic_codes[n_q:]
        # Rank of every docid in byte order (Arrow compares strings as bytes, as trec_eval's strcmp does).
        order = pc.sort_indices(dictionary.cast(pa.binary())).to_numpy()
        self.doc_order = np.empty(self.n_docs, dtype=np.int64)
        self.doc_order[order] = np.arange(self.n_docs)

    def qrels_topics(self) -> tuple[list[str], np.ndarray]:
        """Topic ids of the qrels in byte order, and a map global topic code -> topic index (-1: not in qrels)."""
        codes = np.unique(self.q_topic)
        names = [self.topic_names[c] for c in codes]
        order = sorted(range(len(names)), key=lambda i: names[i].encode())
        index = np.full(len(self.topic_names), -1, dtype=np.int64)
        index[codes[order]] = np.arange(len(order))
        return [names[i] for i in order], index

    def qrels_keys(self, topic_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sorted (topic, doc) keys of the qrels and their grades; duplicates are an error."""
        key = topic_index[self.q_topic] * self.n_docs + self.q_doc
        order = np.argsort(key, kind="stable")
        key, grade = key[order], self.qrels.grade[order]
        dup = np.flatnonzero(key[1:] == key[:-1])
        if len(dup):
            first = order[dup[0] + 1]
            topic, doc = self.topic_names[self.q_topic[first]], self.docs[self.q_doc[first]]
            line = io.line_of_pair(self.qrels.source, topic, doc)
            raise InputError(f"document {doc!r} is judged twice for topic {topic!r}", self.qrels.source, line)
        return key, grade

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


def _grade_counts(topic: np.ndarray, grade: np.ndarray, n_topics: int) -> np.ndarray:
    """Judged documents per topic and grade >= 0 (negative grades are not counted, as in trec_eval)."""
    top = max(int(grade.max(initial=0)), 0)
    ok = grade >= 0
    flat = np.bincount(topic[ok] * (top + 1) + grade[ok], minlength=n_topics * (top + 1))
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
        doc = vocab.docs[rows.doc[i]]
        topic = run.topic[int(rows.position[i])].as_py()
        line = io.line_of_pair(run.source, topic, doc)
        raise InputError(f"document {doc!r} appears twice for topic {topic!r} in run {run.name!r}", run.source, line)


_DENSE_LOOKUP_LIMIT = 64_000_000  # topics × docids cells for which a dense int8 lookup table is used


def _lookup_grades(rows: _Rows, n_topics: int, n_docs: int, q_key: np.ndarray, q_grade: np.ndarray) -> np.ndarray:
    """Grade of every retrieved document: its qrels grade, UNJUDGED if absent, JUDGED_NEG if negative.

    A dense topics × docids table makes this one gather when it is small enough; otherwise a binary search."""
    key = rows.topic * n_docs + rows.doc
    coded = np.where(q_grade < 0, JUDGED_NEG, q_grade).astype(np.int16)
    if n_topics * n_docs <= _DENSE_LOOKUP_LIMIT:
        table = np.full(n_topics * n_docs, UNJUDGED, dtype=np.int16)
        table[q_key] = coded
        return table[key]
    pos = np.minimum(np.searchsorted(q_key, key), max(len(q_key) - 1, 0))
    found = (q_key[pos] == key) if len(q_key) else np.zeros(len(key), bool)
    return np.where(found, coded[pos] if len(q_key) else 0, UNJUDGED).astype(np.int16)


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
    scores, are sorted (with ``lexsort``); everything else stays in place.
    """
    n = len(group)
    perm = np.arange(n)
    changes = np.count_nonzero(group[1:] != group[:-1]) + 1 if n else 0
    if n and changes != np.count_nonzero(np.bincount(group)):  # some group's rows are not contiguous
        perm = np.argsort(group, kind="stable")
    g, p = group[perm], primary[perm]
    same = g[1:] == g[:-1]
    unsorted = same & (p[1:] > p[:-1])
    if unsorted.any():
        bad_groups = np.unique(g[1:][unsorted])
        sub = np.flatnonzero(np.isin(g, bad_groups))
        perm[sub] = perm[sub][np.lexsort((secondary[perm[sub]], -primary[perm[sub]], g[sub]))]
        g, p = group[perm], primary[perm]
        same = g[1:] == g[:-1]
    tie = same & (p[1:] == p[:-1])
    if tie.any():
        in_block = np.zeros(n, dtype=bool)
        in_block[1:] |= tie
        in_block[:-1] |= tie
        block = np.cumsum(np.concatenate([[True], ~tie]))
        sub = np.flatnonzero(in_block)
        perm[sub] = perm[sub][np.lexsort((secondary[perm[sub]], block[sub]))]
    return perm


def _position_in_group(group: np.ndarray) -> np.ndarray:
    """0-based position of each row within its (contiguous) group."""
    n = len(group)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    start = np.flatnonzero(np.concatenate([[True], group[1:] != group[:-1]]))
    lengths = np.diff(np.concatenate([start, [n]]))
    return np.arange(n) - np.repeat(start, lengths)
