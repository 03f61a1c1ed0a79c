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

import math
import numbers
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from typing import TYPE_CHECKING, Callable, Iterator, Literal, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from meta_eval.inputs import trec as io
from meta_eval.inputs.arrow_numpy import byte_order, from_numpy, string_hashes, strings, to_numpy
from meta_eval.core.errors import ConflictError, InputError, PluginError
from meta_eval.core.memory_budget import configured_bytes
from meta_eval.core.parallel import usable_cores
from meta_eval.model.rankings import JUDGED_NEG, PAD, UNJUDGED, Rankings

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

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
        (S, Tb, Db) int32 code of the document at each rank (an index into :attr:`Collection.doc_names`; the last
        code for a document the qrels do not judge), -1 past the end of a list.
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
        Document id of each document code: the documents of the qrels, then one empty name whose code stands for
        every retrieved document the qrels do not judge (no analysis needs their identity: their grade is
        "unjudged" whatever subset of the qrels is used, and keeping them would make memory follow the text of the
        runs rather than their lists).
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
        """Apply a vectorised function of :class:`Rankings` to every list: the (S, T) float64 result."""
        return self.map_lists([func])[0]

    #: Cells (systems × topics × depth) of one piece of :meth:`map_lists`: small enough for the temporaries of a
    #: measure (a few float64 arrays of this size) to stay in the CPU cache.
    PIECE_CELLS = 1 << 18

    def map_lists(self, funcs: Sequence[Callable[[Rankings], np.ndarray]], *, threads: int | None = None
                  ) -> list[np.ndarray]:
        """Apply several vectorised functions of :class:`Rankings` (each list's value a function of that list): one
        (S, T) float64 array per function.

        The lists are taken in pieces (a block's topics × a few systems, about :attr:`PIECE_CELLS` cells): every
        function runs on a piece before the next piece, so the arrays they share (relevance masks, cumulative
        counts: the :class:`Rankings` cache) are computed once per piece and stay in the CPU cache, and nothing of
        the size of the collection is allocated. Pieces run on ``threads`` threads (default: every usable core; numpy
        releases the GIL); the result does not depend on their number.
        """

        check_input_kind(funcs, "rankings")
        S, T = len(self.systems), len(self.topics)
        out = [np.zeros((S, T)) for _ in funcs]
        pieces = []
        for block in self.blocks:
            r = block.rankings
            step = max(1, self.PIECE_CELLS // max(r.grades[0].size, 1))
            pieces += [(block, slice(lo, min(lo + step, S))) for lo in range(0, S, step)]

        def run(piece) -> None:
            block, rows = piece
            r = block.rankings
            sub = Rankings(r.grades[rows], r.n_ret[rows], r.counts, rel_level=r.rel_level)
            for values, func in zip(out, funcs):
                try:
                    result = func(sub)
                except PluginError as exc:  # name the run and topic of the list it failed on
                    if exc.index is None:
                        raise
                    system, topic = exc.index
                    raise exc.at(f"run {self.systems[rows.start + system]}, topic "
                                 f"{self.topics[block.topics[topic]]}") from None
                values[rows, block.topics] = np.broadcast_to(np.asarray(result, dtype=np.float64), sub.shape)

        threads = min(len(pieces), threads or usable_cores())
        if threads <= 1:
            for piece in pieces:
                run(piece)
        else:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(run, pieces))
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
        """Dense grade array (S, T, D); see :mod:`meta_eval.model.rankings` for the codes."""
        return self.rankings.grades

    @property
    def unjudged(self) -> np.ndarray:
        """(S, T, D) bool: the retrieved document is not in the qrels."""
        return self.grades == UNJUDGED

    # ------------------------------------------------------------------------------------------ derived collections

    def subset(self, systems: Sequence[str] | None = None, topics: Sequence[str] | None = None) -> "Collection":
        """A collection restricted to some systems and/or topics (same options), in its own order whatever the
        order they are named in: a seeded resampling of the topics then gives the same numbers for the same
        selection."""
        s_idx = np.sort(_indices(self.systems, systems, "system"))
        t_idx = np.sort(_indices(self.topics, topics, "topic"))
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


class ListsView:
    """A collection built over an inner :class:`Collection` of ranked lists (``self.lists``): judgment groups,
    preference judgments. It takes its runs, missing-topic policy and options from the inner one, and gives what
    :mod:`meta_eval.measures.scoring` needs (``systems``, ``topics``, ``present``, ``missing``, ``map_lists``)."""

    lists: Collection

    @property
    def systems(self) -> list[str]:
        return self.lists.systems

    @property
    def missing(self) -> str:
        return self.lists.missing

    @property
    def options(self) -> dict:
        return self.lists.options


_KIND_HINT = {"preferences": "preference judgments (trec_eval -R prefs or qrels_prefs; "
                              "meta_eval.model.preferences.load_preferences)",
              "rankings": "graded judgments (qrels)"}


def check_input_kind(funcs: Sequence[Callable], kind: str) -> None:
    """Refuse measures that need another kind of judgments than a collection holds (a preference measure of a
    qrels collection, AP of preference judgments), naming the measure and what it needs."""
    for func in funcs:
        family = getattr(func, "family", None)
        needs = getattr(family, "input", "rankings")
        if needs != kind:
            raise InputError(f"measure {func.output_name} needs {_KIND_HINT[needs]}; these runs are judged by "
                             f"{_KIND_HINT[kind]}")


def selected_names(wanted, kind: str) -> list[str] | None:
    """A selection of systems or topics as a list of names (any sequence, a numpy array too; ids as text: topic
    401 is "401"); None selects all. An empty selection is refused: it selects nothing (a collection cut to it
    scored NaN means, silently)."""
    if wanted is None:
        return None
    wanted = [str(w) for w in (wanted.tolist() if hasattr(wanted, "tolist") else wanted)]
    if not wanted:
        raise InputError(f"an empty selection of {kind}s: name at least one (None selects all)")
    return wanted


def _indices(names: list[str], wanted: Sequence[str] | None, kind: str) -> np.ndarray:
    """Positions of the ``wanted`` names (:func:`selected_names`), each named once."""
    from meta_eval.core.params import unique

    wanted = selected_names(wanted, kind)
    if wanted is None:
        return np.arange(len(names))
    unique(wanted, f"{kind}s", "selection of")
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
    disjoint: bool = False,
) -> Collection:
    """Read qrels and runs into a :class:`Collection`.

    The runs are streamed: files are read and parsed a few at a time (one per usable core), and each run is then
    ordered, checked and cut to ``depth`` on its own; only its ordered document codes are kept, never the text of
    all runs at once. :func:`load_collection_pieces` gives the collection in pieces within a memory budget.

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
    disjoint : bool
        Keep a run that has no topic in common with the qrels (every topic missing: scored 0 under
        ``missing="zero"``, as trec_eval ``-c`` scores it) instead of refusing it.

    Raises
    ------
    InputError
        Malformed files (file and line named), a docid twice for one topic in a run or in the qrels, a run with no
        topic in common with the qrels, bad options.
    """
    (collection,) = load_collection_pieces(qrels, runs, memory=None, depth=depth, rel_level=rel_level,
                                           missing=missing, unjudged=unjudged, ties=ties,
                                           score_precision=score_precision, progress=progress, disjoint=disjoint)
    names = io.unique_names(collection.systems, collection.options["runs"])
    return replace(collection, systems=names) if names != collection.systems else collection


#: Bytes a retrieved document costs while its piece of a collection is held (:func:`load_collection_pieces`): its
#: prepared list entry (document and grade codes, 5 bytes) and its cell of the dense blocks (5 bytes, and so many
#: for the padding of lists shorter than the longest of their block).
BYTES_PER_DOCUMENT = 5
BYTES_PER_CELL = 5
#: Bytes per (run, topic) of a piece: lengths (8), present (1), and a few summary values per measure (8 each).
BYTES_PER_LIST = 64


def default_memory() -> int:
    """The default budget of :func:`load_collection_pieces`: a quarter of the machine's memory, at most 2 GiB, and
    at most what ``META_EVAL_MEMORY`` sets (:func:`~meta_eval.core.memory_budget.configured_bytes`)."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # pragma: no cover - no sysconf
        total = 8 << 30
    return int(min(total // 4, 2 << 30, configured_bytes() or total))


def load_collection_pieces(
    qrels: io.PathLike | pd.DataFrame,
    runs: Sequence[io.PathLike | pd.DataFrame] | io.PathLike | pd.DataFrame,
    *,
    memory: int | None,
    depth: int | None = None,
    rel_level: int = 1,
    missing: Literal["zero", "skip"] = "zero",
    unjudged: Literal["nonrel", "remove"] = "nonrel",
    ties: TiePolicy = "trec_eval",
    score_precision: Literal["float64", "float32"] = "float64",
    progress: bool = False,
    disjoint: bool = False,
) -> Iterator[Collection]:
    """:func:`load_collection` in pieces: collections of consecutive runs (in the order of the files) with the
    same qrels and topics, each holding at most ``memory`` bytes of ranked lists, for a collection larger than
    memory whose lists are needed one run at a time (scores: :func:`meta_eval.measures.scoring.score_pieces`).

    A piece holds its runs' prepared lists and dense blocks (:data:`BYTES_PER_DOCUMENT` per retrieved document,
    :data:`BYTES_PER_CELL` per cell of the blocks, :data:`BYTES_PER_LIST` per (run, topic)); a run is added to the
    piece while the piece stays within ``memory`` (a single run larger than that is a piece of its own). Runs
    are read a few at a time (:func:`meta_eval.inputs.trec.iter_runs`), so besides the pieces memory holds the qrels and
    the runs being read. A piece's ``systems`` are its runs' tags as read (:func:`meta_eval.inputs.trec.unique_names`
    tells apart, over all pieces, two runs that share one).

    Parameters
    ----------
    memory : int or None
        Bytes of ranked lists per piece (None: no limit, one piece). Other parameters: :func:`load_collection`.

    Raises
    ------
    InputError
        As :func:`load_collection`; ``memory`` below 1.
    """
    _check_options(depth, rel_level, missing, unjudged, ties, score_precision)
    _stdin_once(qrels, runs)
    if memory is not None and memory < 1:
        raise InputError(f"memory must be a positive number of bytes, got {memory}")
    options = dict(rel_level=rel_level, missing=missing, unjudged=unjudged, depth=depth, ties=ties,
                   score_precision=score_precision)
    # The qrels are read in a thread while the first runs are decompressed and parsed (a run needs them only to
    # grade its lists, after parsing).
    with ThreadPoolExecutor(1) as pool:
        reading_qrels = pool.submit(lambda: _Qrels(io.read_qrels(qrels)))

        def prepare(table: io.RunTable) -> _RunLists:
            return _RunLists.from_table(table, qrels=reading_qrels.result(), depth=depth, ties=ties,
                                        score_precision=score_precision, remove_unjudged=(unjudged == "remove"),
                                        disjoint=disjoint)

        piece: list[_RunLists] = []
        size = None
        yielded = False
        try:
            # The reading threads parse (Arrow, without the GIL); the runs are prepared here, one after the other
            # (many small numpy calls: prepared in the reading threads, they took the GIL from each other).
            for table in io.iter_runs(runs, with_rank=(ties == "rank"), progress=progress):
                lists = prepare(table)
                size = size or _PieceSize(len(reading_qrels.result().topics))
                if memory is not None and piece and size.after(lists) > memory:
                    yield _assemble(reading_qrels.result(), piece, **options)
                    yielded, piece = True, []
                    size.clear()
                size.add(lists)
                piece.append(lists)
        except InputError:
            reading_qrels.result()  # a bad qrels file is reported first, as when it was read first
            raise
        if piece or not yielded:
            yield _assemble(reading_qrels.result(), piece, **options)


def _stdin_once(qrels, runs) -> None:
    """Standard input is read once: the qrels and a run cannot both be ``-`` (the run's lines were parsed as qrels
    lines, and the error blamed their format)."""
    named = runs if isinstance(runs, (list, tuple)) else [runs]
    if isinstance(qrels, (str, os.PathLike)) and str(qrels) == io.STDIN and \
            any(isinstance(r, (str, os.PathLike)) and str(r) == io.STDIN for r in named):
        raise InputError("standard input (-) is read once: give it as the qrels or as a run, not both")


class _PieceSize:
    """The bytes a piece of a collection holds (:func:`load_collection_pieces`), run by run."""

    def __init__(self, n_topics: int):
        self.depth = np.zeros(n_topics, dtype=np.int64)  # the longest list of each topic
        self.clear()

    def clear(self) -> None:
        self.depth[:] = 0
        self.runs = self.documents = 0

    def add(self, lists: _RunLists) -> None:
        np.maximum.at(self.depth, lists.topics, lists.lengths)
        self.runs += 1
        self.documents += int(lists.lengths.sum())

    def after(self, lists: _RunLists) -> int:
        """The bytes of the piece with ``lists`` added."""
        depth = self.depth.copy()
        np.maximum.at(depth, lists.topics, lists.lengths)
        runs = self.runs + 1
        return (BYTES_PER_DOCUMENT * (self.documents + int(lists.lengths.sum()))
                + BYTES_PER_CELL * runs * _block_cells(depth) + BYTES_PER_LIST * runs * len(depth))


def _block_cells(depth: np.ndarray) -> int:
    """Cells per run of the dense blocks (:func:`_blocks`) of topics whose longest lists are ``depth``."""
    bucket = _depth_bucket(depth)
    widths = np.zeros(int(bucket.max(initial=0)) + 1, dtype=np.int64)
    np.maximum.at(widths, bucket, np.maximum(depth, 1))
    return int(widths[bucket].sum())


def _depth_bucket(depth: np.ndarray) -> np.ndarray:
    """The block of topics whose longest list is ``depth``: powers of two."""
    return np.ceil(np.log2(np.maximum(depth, 1))).astype(np.int64)


def _whole(value) -> bool:
    """Whether ``value`` is a whole number (an int, a numpy integer, a float such as 2.0; not a bool, NaN or 1.5)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, numbers.Real)):
        return False
    return isinstance(value, numbers.Integral) or math.isfinite(value) and float(value).is_integer()


def _check_options(depth, rel_level, missing, unjudged, ties, score_precision) -> None:
    if depth is not None and not (_whole(depth) and depth >= 1):
        raise InputError(f"depth must be a positive integer (or None: every document), got {depth!r}")
    if not _whole(rel_level):
        raise InputError(f"rel_level must be an integer, got {rel_level!r}")
    if missing not in ("zero", "skip"):
        raise InputError(f"missing must be 'zero' or 'skip', got {missing!r}")
    if unjudged not in ("nonrel", "remove"):
        raise InputError(f"unjudged must be 'nonrel' or 'remove', got {unjudged!r}")
    if ties not in TIE_POLICIES:
        raise InputError(f"ties must be one of {TIE_POLICIES}, got {ties!r}")
    if score_precision not in ("float64", "float32"):
        raise InputError(f"score_precision must be 'float64' or 'float32', got {score_precision!r}")


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
    base = _Qrels(qrels)
    lists = [_RunLists.from_table(run, base, depth=depth, ties=ties, score_precision=score_precision,
                                  remove_unjudged=(unjudged == "remove")) for run in runs]
    return _assemble(base, lists, rel_level=rel_level, missing=missing, unjudged=unjudged, depth=depth, ties=ties,
                     score_precision=score_precision)


def _assemble(base: "_Qrels", lists: list["_RunLists"], *, rel_level, missing, unjudged, **options) -> Collection:
    """Fill the blocks from the prepared runs."""
    if not lists:
        raise InputError("no runs given")
    n_sys, n_top = len(lists), len(base.topics)
    counts = _grade_counts(base.judgments.topic, base.judgments.grade, n_top)
    n_ret = np.zeros((n_sys, n_top), dtype=np.int64)
    present = np.zeros((n_sys, n_top), dtype=bool)
    for s, run in enumerate(lists):
        n_ret[s, run.topics] = run.lengths
        present[s, run.present] = True
    doc_names = pa.concat_arrays([base.dictionary.cast(pa.string()), strings([""])])
    unjudged_code = len(doc_names) - 1
    blocks = _blocks(lists, n_ret, counts, int(rel_level), unjudged_code)
    options = dict(options, rel_level=int(rel_level), missing=missing, unjudged=unjudged,
                   qrels=base.source, runs=[run.source for run in lists])
    options = {key: options[key] for key in ("depth", "rel_level", "missing", "unjudged", "ties", "score_precision",
                                             "qrels", "runs")}
    return Collection([run.name for run in lists], base.topics, blocks, n_ret, present, counts, base.judgments,
                      doc_names, rel_level=int(rel_level), missing=missing, options=options)


def _blocks(lists: list["_RunLists"], n_ret: np.ndarray, counts: np.ndarray, rel_level: int,
            unjudged_code: int) -> list[Block]:
    """Group topics by the length of their longest list (powers of two) and fill one dense array per group, run by
    run."""
    n_sys, n_top = n_ret.shape
    topic_depth = n_ret.max(axis=0, initial=0)
    bucket = _depth_bucket(topic_depth)
    local = np.empty(n_top, dtype=np.int64)
    blocks = []
    for b in np.unique(bucket):
        topics = np.flatnonzero(bucket == b)
        local[topics] = np.arange(len(topics))
        width = max(int(topic_depth[topics].max(initial=0)), 1)
        grades = np.full((n_sys, len(topics), width), PAD, dtype=np.int8)
        docs = np.full((n_sys, len(topics), width), -1, dtype=np.int32)
        for s, run in enumerate(lists):
            topic, pos = run.rows()
            grade, doc = run.grade, run.doc
            if len(topics) != n_top:
                sel = np.flatnonzero(bucket[topic] == b)
                topic, pos, grade, doc = topic[sel], pos[sel], grade[sel], doc[sel]
            flat = (local[topic] + s * len(topics)) * width + pos  # one flat scatter: cheaper than (s, t, p) indexing
            grades.reshape(-1)[flat] = grade
            docs.reshape(-1)[flat] = np.where(doc >= 0, doc, unjudged_code)
        rankings = Rankings(grades, n_ret[:, topics], counts[topics], rel_level=rel_level)
        blocks.append(Block(topics, rankings, docs))
    return blocks


# --------------------------------------------------------------------------------------------- helpers


class _Qrels:
    """The qrels indexed: topic ids in byte order, documents coded in order of first appearance, judgments sorted by
    (topic, document); a document judged twice for a topic is an error.

    A run's documents are found among the judgments by a hash of (topic, docid) (:class:`_HashTable`, built once
    for all runs), and every judgment found is confirmed by comparing the docids themselves, so the lookup is
    exact. Should two judgments of a topic share a hash (about 2**-64 per pair), the docids are looked up by
    Arrow's ``index_in`` instead."""

    def __init__(self, table: io.QrelsTable):
        self.source = table.source
        topic = pc.dictionary_encode(_plain_strings(table.topic))
        names = topic.dictionary.to_pylist()
        order = sorted(range(len(names)), key=lambda i: names[i].encode())  # trec_eval's order: bytes (strcmp)
        rank = np.empty(len(names), dtype=np.int64)
        rank[order] = np.arange(len(order))
        self.topics = [names[i] for i in order]
        self._topic_values = strings(self.topics)
        self._topic_of = {name: i for i, name in enumerate(self.topics)}
        doc = pc.dictionary_encode(_plain_strings(table.docid))
        self.dictionary = doc.dictionary
        self.judgments = _sorted_judgments(rank[to_numpy(topic.indices)], to_numpy(doc.indices), table.grade)
        j = self.judgments
        dup = np.flatnonzero((j.topic[1:] == j.topic[:-1]) & (j.doc[1:] == j.doc[:-1]))
        if len(dup):
            name, docid = self.topics[j.topic[dup[0]]], self.dictionary[int(j.doc[dup[0]])].as_py()
            line = io.line_of_pair(self.source, name, docid)
            raise ConflictError(f"document {docid!r} is judged twice for topic {name!r}", self.source, line)
        self._lookup = _GradeLookup(self.judgments, len(self.dictionary))
        self._doc_or_none = np.append(j.doc, -1).astype(np.int32)  # index -1: no judgment
        self._grade_or_none = np.append(self._lookup.coded, UNJUDGED).astype(np.int8)
        self._table = _HashTable(j.topic, pair_hashes(j.topic, string_hashes(self.dictionary)[j.doc]),
                                 len(self.topics))

    def topic_index(self, values: pa.Array) -> np.ndarray:
        """Index of each topic id in :attr:`topics`, -1 for topics absent from the qrels."""
        found = pc.index_in(_plain_strings(values), value_set=self._topic_values)
        return to_numpy(found, null=-1).astype(np.int64)

    def topic_rows(self, values: pa.Array) -> np.ndarray:
        """:meth:`topic_index` of every row of a run's topic column, looking up only the first row of each stretch of
        equal topics (runs list a topic's documents together)."""
        if pa.types.is_dictionary(values.type):
            return self.topic_index(values.dictionary)[to_numpy(values.indices)]
        n = len(values)
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        changes = to_numpy(pc.indices_nonzero(pc.not_equal(values.slice(1), values.slice(0, n - 1))))
        starts = np.concatenate([[0], changes.astype(np.int64) + 1])
        heads = values.take(from_numpy(starts))
        codes = self.topic_index(heads) if len(heads) > 64 else \
            np.array([self._topic_of.get(name, -1) for name in heads.to_pylist()], dtype=np.int64)
        return np.repeat(codes, np.diff(np.append(starts, n)))

    def doc_index(self, values: pa.Array) -> np.ndarray:
        """Code of each docid among the qrels' documents, -1 for documents the qrels do not judge."""
        found = pc.index_in(_plain_strings(values), value_set=self.dictionary)
        return to_numpy(found, null=-1).astype(np.int64)

    def find(self, topic: np.ndarray, pairs: np.ndarray, docid: Callable[[np.ndarray], pa.Array]) -> np.ndarray:
        """The judgment (a row of :attr:`judgments`) of each (topic index, document), -1 where it has none.

        ``pairs`` are their :func:`pair_hashes`; ``docid(rows)`` gives the docids of some of them: those whose hash
        is found, to confirm it (or all of them, looked up by ``index_in``, after a collision among the
        judgments' hashes)."""
        if self._table.collision:
            return self._lookup.judgment(topic, self.doc_index(docid(np.arange(len(topic)))))
        found = self._table.find(topic, pairs)
        rows = np.flatnonzero(found >= 0)
        judgment = found[rows]
        # equal docids with equal pair hashes have equal topics (the topic's share of the hash is invertible)
        same = pc.equal(_plain_strings(docid(rows)), self.dictionary.take(from_numpy(self.judgments.doc[judgment])))
        found[rows[to_numpy(pc.indices_nonzero(pc.invert(same))).astype(np.int64)]] = -1  # another pair's hash
        return found

    def doc_and_grade(self, judgment: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The document code (int32) and grade code (int8) of judgments (rows of :attr:`judgments`); judgment -1
        (none) is document -1, UNJUDGED."""
        return self._doc_or_none[judgment], self._grade_or_none[judgment]


def pair_hashes(topic: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each (topic index, docid hash) pair: equal pairs, equal hashes."""
    out = topic.astype(np.uint64)
    out *= _TOPIC_MIX
    out ^= hashes
    return out


_TOPIC_MIX = np.uint64(0xD6E8FEB86659FD93)  # an odd constant (any odd one spreads the topics over the 64 bits)


class _HashTable:
    """The rows of (group, 64-bit key) pairs, found by key: an open-addressing table with one region of
    2**k >= 4 × (its keys) slots per group, slot = the region's start + the key's low bits.

    Each slot holds one key (the last written) and its row, side by side (one memory access per lookup). Keys whose
    slot another took (about an eighth) go to an overflow list, sorted, searched by the lookups that land on a slot
    marked as overflowing. The regions keep the lookups of one group (a run's documents of one topic, listed
    together) in a small, cached part of the table. Written by hand: numpy has no hash table, and a binary search
    over sorted keys costs 75 ns a lookup (a cache miss per level) against about 15 here.

    Attributes
    ----------
    collision : bool
        Two rows of a group share a key (the table cannot tell them apart).
    """

    _OVERFLOW = 1 << 62  # added to a slot's row when a key lost it

    def __init__(self, group: np.ndarray, keys: np.ndarray, n_groups: int):
        m = len(keys)
        self.regions = _Regions(np.bincount(group, minlength=n_groups), spread=4)
        slot = self.regions.slot(group, keys)
        row = np.full(self.regions.size, -1, dtype=np.int64)
        row[slot] = np.arange(m)  # the last key written to a slot keeps it
        kept = row[slot]
        lost = np.flatnonzero(kept != np.arange(m))
        row[slot[lost]] += self._OVERFLOW
        self.slots = np.zeros((len(row), 2), dtype=np.uint64)  # (key, row) per slot
        self.slots[slot, 0] = keys[kept]
        self.slots[:, 1] = row.view(np.uint64)
        order = np.argsort(keys[lost], kind="stable")
        self.lost, self.lost_keys = lost[order], keys[lost][order]
        # a group's equal keys share a slot: one keeps it, or both went to the overflow list
        self.collision = bool((keys[lost] == keys[kept[lost]]).any()
                              or (self.lost_keys[1:] == self.lost_keys[:-1]).any())

    def find(self, group: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """The row of each (group, key) (or of another group's pair with that key, found in the overflow list),
        -1 where there is none."""
        entry = np.take(self.slots, self.regions.slot(group, keys), axis=0)  # (n, 2): one memory access
        row = entry[:, 1].view(np.int64)
        found = np.where(entry[:, 0] == keys, row & (self._OVERFLOW - 1), -1)
        if len(self.lost):
            rest = np.flatnonzero(row >= self._OVERFLOW)
            rest = rest[found[rest] < 0]
            at = np.minimum(np.searchsorted(self.lost_keys, keys[rest]), len(self.lost) - 1)
            hit = self.lost_keys[at] == keys[rest]
            found[rest[hit]] = self.lost[at[hit]]
        return found


@dataclass
class _Regions:
    """Per group, a region of 2**k >= ``spread`` × its count slots (one slot for a group without any), one after
    the other."""

    base: np.ndarray
    mask: np.ndarray

    def __init__(self, counts: np.ndarray, spread: int):
        size = np.ones(len(counts), dtype=np.int64)
        wide = counts > 0
        size[wide] = np.left_shift(1, np.ceil(np.log2(spread * counts[wide])).astype(np.int64))
        self.base, self.mask = np.cumsum(size) - size, (size - 1).astype(np.uint64)

    @property
    def size(self) -> int:
        return int(self.base[-1] + self.mask[-1]) + 1 if len(self.base) else 1

    def slot(self, group: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """The slot of each (group, key): its group's first slot plus the key's low bits."""
        out = (keys & self.mask[group]).view(np.int64)
        out += self.base[group]
        return out


@dataclass(eq=False)
class _RunLists:
    """One run's ranked lists, ordered, cut to the depth and graded: the documents of each list in rank order.

    Built from a parsed run on its own, one run after the other by :func:`load_collection_pieces` (its text dropped
    at once). What is kept is what the blocks need, 5 bytes a document: its code (the qrels' code of a judged
    document, -1 for the others) and its grade code; the lists are ``lengths[i]`` documents of
    topic ``topics[i]``, one after the other."""

    name: str
    source: str
    topics: np.ndarray  # (L,) topic index of each list
    lengths: np.ndarray  # (L,) documents of each list
    doc: np.ndarray  # (n,) int32 document code, -1 for a document absent from the qrels
    grade: np.ndarray  # (n,) int8 grade code
    present: np.ndarray  # topics the run retrieved for (before the depth cut and the removal of unjudged documents)

    #: Rows ordered, checked and graded at once: a long run (MS MARCO's 7 M lines) is taken a few topics at a time,
    #: so that its temporary arrays stay small (reused by the allocator rather than mapped afresh, and cached).
    CHUNK_ROWS = 1 << 18

    @classmethod
    def from_table(cls, run: io.RunTable, qrels: _Qrels, *, depth: int | None, ties: str, score_precision: str,
                   remove_unjudged: bool, disjoint: bool = False) -> "_RunLists":
        """Order, check, cut and grade a run's lines. Documents are told apart by a hash of their docid
        (:func:`meta_eval.inputs.arrow_numpy.string_hashes`), and the docids themselves are compared wherever a hash
        decides: a repeated document, a judgment found, ties broken by docid."""
        topic = qrels.topic_rows(run.topic)
        score = run.score.astype(np.float32).astype(np.float64) if score_precision == "float32" else run.score
        line = None  # the line of each row (None: row i is line i)
        keep = topic >= 0  # run topics absent from the qrels are ignored, as in trec_eval
        if not keep.all():
            line = np.flatnonzero(keep)
            topic, score = topic[line], score[line]
        if len(topic) == 0 and not disjoint:
            raise InputError(f"run {run.name!r} has no topic in common with the qrels (qrels topics: "
                             f"{qrels.topics[:8]}{' ...' if len(qrels.topics) > 8 else ''})", run.source)
        parts = [_chunk_lists(run, qrels, topic[lo:hi], score[lo:hi], np.arange(lo, hi) if line is None
                              else line[lo:hi], depth=depth, ties=ties, remove_unjudged=remove_unjudged)
                 for lo, hi in _chunks(topic, cls.CHUNK_ROWS)]
        topics, lengths, doc, grade, present = (np.concatenate(column) for column in zip(*parts))
        return cls(run.name, run.source, topics, lengths, doc, grade, present)

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(topic, rank - 1) of every document."""
        topic = np.repeat(self.topics, self.lengths)
        start = np.repeat(np.cumsum(self.lengths) - self.lengths, self.lengths)
        return topic, np.arange(len(topic)) - start


def _chunk_lists(run: io.RunTable, qrels: _Qrels, topic: np.ndarray, score: np.ndarray, line: np.ndarray, *,
                 depth: int | None, ties: str, remove_unjudged: bool) -> tuple[np.ndarray, ...]:
    """:meth:`_RunLists.from_table` of some of a run's rows (whole topics): (topics, lengths, doc, grade, present)
    of the rows at ``line`` of the run, whose topic indices and scores are ``topic`` and ``score``."""
    stretch = not len(line) or line[-1] - line[0] == len(line) - 1  # lines lo..hi: a slice, not a copy
    docids = run.docid.slice(int(line[0]) if len(line) else 0, len(line)) if stretch else \
        run.docid.take(from_numpy(line))
    hashes = string_hashes(docids)
    rank = None if run.rank is None else run.rank[line]
    docid = partial(_take, docids)
    pairs = pair_hashes(topic, hashes)
    _check_duplicates(run, topic, pairs, lambda rows: line[rows])
    position = np.arange(len(topic)) if ties == "input" else None
    order = _order(topic, score, partial(_byte_order, docid), position, rank, ties)
    topic, pairs = topic[order], pairs[order]
    present = topic[_group_starts(topic)]  # the ordering made each topic's rows contiguous
    if depth is not None:
        cut = np.flatnonzero(_position_in_group(topic) < depth)
        if len(cut) < len(topic):
            topic, pairs, order = topic[cut], pairs[cut], order[cut]
    judgment = qrels.find(topic, pairs, lambda rows: docid(order[rows]))
    doc, grade = qrels.doc_and_grade(judgment)
    if remove_unjudged:
        kept = grade >= 0
        if not kept.all():
            topic, doc, grade = topic[kept], doc[kept], grade[kept]
    start = _group_starts(topic)
    lengths = np.diff(np.concatenate([start, [len(topic)]]))
    return topic[start].astype(np.int32), lengths.astype(np.int32), doc, grade, present


def _chunks(topic: np.ndarray, rows: int) -> list[tuple[int, int]]:
    """Row ranges of about ``rows`` rows holding whole topics, when each topic's rows are together (as runs list
    them); else the one range of every row."""
    n = len(topic)
    starts = _group_starts(topic)
    if n <= rows or len(np.unique(topic[starts])) < len(starts):
        return [(0, n)]
    cuts = starts[np.unique(np.searchsorted(starts, np.arange(rows, n, rows), side="right") - 1)]
    bounds = np.unique(np.concatenate([[0], cuts, [n]]))
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))


def _take(values: pa.Array, rows: np.ndarray) -> pa.Array:
    """The values of some rows."""
    return values.take(from_numpy(np.asarray(rows, dtype=np.int64)))


def _group_starts(group: np.ndarray) -> np.ndarray:
    """Indices where a run of equal values starts."""
    if len(group) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.concatenate([[True], group[1:] != group[:-1]]))


def _byte_order(docid: Callable[[np.ndarray], pa.Array], rows: np.ndarray) -> np.ndarray:
    """Rank of the docids of ``rows`` among themselves in byte order (trec_eval compares docids with strcmp); equal
    docids (of different topics) take distinct ranks."""
    rank = np.empty(len(rows), dtype=np.int64)
    rank[byte_order(docid(rows))] = np.arange(len(rows))
    return rank


def _plain_strings(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A string array (dictionary-encoded or chunked input decoded and combined)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return values.cast(pa.string()) if values.type != pa.string() else values


def _check_duplicates(run: io.RunTable, topic: np.ndarray, pairs: np.ndarray,
                      line: Callable[[np.ndarray], np.ndarray]) -> None:
    """A document listed twice for one topic of a run is an error naming the file and the line (the first line
    that repeats a document).

    Rows with distinct :func:`pair_hashes` hold distinct (topic, document) pairs; the docids of rows that share one
    are compared. Equal hashes are found as in :class:`_HashTable`, without its overflow list: each row is written
    to its hash's slot in its topic's region of a table of 4 slots per row; a row that lost its slot to an equal
    hash is a candidate, and so is every hash repeated among the rows that lost theirs (about an eighth of the
    rows, sorted)."""
    regions = _Regions(np.bincount(topic, minlength=int(topic.max(initial=-1)) + 1), spread=4)
    slot = regions.slot(topic, pairs)
    rows = np.arange(len(pairs), dtype=np.int32 if len(pairs) < 2**31 else np.int64)
    table = np.empty(regions.size, dtype=rows.dtype)
    table[slot] = rows
    kept = table[slot]
    lost = np.flatnonzero(kept != rows)
    if not len(lost):
        return
    twin = pairs[lost] == pairs[kept[lost]]
    rest = lost[~twin]
    ordered = np.sort(pairs[rest])
    again = ordered[1:][ordered[1:] == ordered[:-1]]
    candidates = np.unique(np.concatenate([lost[twin], kept[lost[twin]], rest[np.isin(pairs[rest], again)]]))
    if len(candidates):
        _first_repeat(run, topic, candidates, line)


def _first_repeat(run: io.RunTable, topic: np.ndarray, rows: np.ndarray,
                  line: Callable[[np.ndarray], np.ndarray]) -> None:
    """Raise for the first of ``rows`` (ascending) whose (topic, docid) an earlier one of them holds, if any."""
    docid = _plain_strings(run.docid.take(from_numpy(line(rows))))
    pair = pc.binary_join_element_wise(strings([str(t) for t in topic[rows].tolist()]), docid, "\t")
    codes = to_numpy(pc.dictionary_encode(pair).indices)
    seen = np.zeros(len(codes), dtype=bool)
    for i, code in enumerate(codes.tolist()):  # rows whose hashes met: a handful
        if seen[code]:
            row = int(line(rows[i:i + 1])[0])
            docid, name = run.docid[row].as_py(), run.topic[row].as_py()
            raise ConflictError(f"document {docid!r} appears twice for topic {name!r} in run {run.name!r}",
                                run.source, io.line_of_pair(run.source, name, docid))
        seen[code] = True


def _sorted_judgments(topic: np.ndarray, doc: np.ndarray, grade: np.ndarray) -> Judgments:
    order = np.lexsort((doc, topic))
    return Judgments(topic[order].astype(np.int32), doc[order].astype(np.int32), np.asarray(grade)[order])


class _GradeLookup:
    """Grade code of (topic, document) pairs: the qrels grade, UNJUDGED if absent, JUDGED_NEG if negative.

    A dense topics × documents table makes a lookup one gather when it is small enough (built at the first lookup:
    :meth:`judgment` needs none); otherwise a binary search over the sorted judgment keys."""

    _DENSE_LIMIT = 64_000_000  # table cells (int8)

    def __init__(self, judgments: Judgments, n_docs: int):
        self.n_docs = n_docs
        self.key = judgments.topic.astype(np.int64) * n_docs + judgments.doc
        self.coded = np.where(judgments.grade < 0, JUDGED_NEG, judgments.grade).astype(np.int8)
        self.n_topics = int(judgments.topic.max(initial=-1)) + 1

    @cached_property
    def table(self) -> np.ndarray | None:
        """The dense table of grade codes, None when it would exceed :data:`_DENSE_LIMIT` cells."""
        if self.n_topics * self.n_docs > self._DENSE_LIMIT:
            return None
        table = np.full(max(self.n_topics * self.n_docs, 1), UNJUDGED, dtype=np.int8)
        table[self.key] = self.coded
        return table

    def judgment(self, topic: np.ndarray, doc: np.ndarray) -> np.ndarray:
        """The row of the sorted judgments of each (topic, document code) pair, -1 where there is none (documents
        coded -1 have none)."""
        key = np.asarray(topic, dtype=np.int64) * self.n_docs + np.maximum(doc, 0)
        if len(self.key) == 0:
            return np.full(key.shape, -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.key, key), len(self.key) - 1)
        return np.where((self.key[pos] == key) & (doc >= 0), pos, -1)

    def __call__(self, topic: np.ndarray, doc: np.ndarray) -> np.ndarray:
        key = np.asarray(topic, dtype=np.int64) * self.n_docs + np.maximum(doc, 0)
        if self.table is not None:
            inside = key < len(self.table)
            return np.where(inside, self.table[np.where(inside, key, 0)], UNJUDGED).astype(np.int8)
        if len(self.key) == 0:
            return np.full(key.shape, UNJUDGED, dtype=np.int8)
        pos = np.minimum(np.searchsorted(self.key, key), len(self.key) - 1)
        return np.where(self.key[pos] == key, self.coded[pos], UNJUDGED).astype(np.int8)


def _grade_counts(topic: np.ndarray, grade: np.ndarray, n_topics: int, top: int | None = None) -> np.ndarray:
    """Judged documents per topic and grade 0..top (default: the highest grade); negative grades are not counted,
    as in trec_eval."""
    top = max(int(grade.max(initial=0)), 0) if top is None else top
    ok = grade >= 0
    flat = np.bincount(topic[ok].astype(np.int64) * (top + 1) + grade[ok], minlength=n_topics * (top + 1))
    return flat.reshape(n_topics, top + 1).astype(np.int64)


def _order(group, score, doc_key, position, rank, ties: str) -> np.ndarray:
    """Permutation ordering the rows by group, then by the tie policy. ``doc_key(rows)`` gives the byte order of
    the docids of some rows (ascending integers); it is only asked for rows whose order the score leaves open."""
    if ties == "input":
        return np.lexsort((position, group))
    if ties == "rank":
        return _sort_rows(group, -rank, lambda rows: -doc_key(rows))
    secondary = (lambda rows: -doc_key(rows)) if ties == "trec_eval" else doc_key
    return _sort_rows(group, score, secondary)


def _sort_rows(group: np.ndarray, primary: np.ndarray, secondary: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Make each group contiguous (groups themselves may come in any order), then order rows within a group by
    (primary descending, secondary ascending); ``secondary(rows)`` gives the secondary keys of some rows (computed
    only for the rows that need them: tied scores, badly ordered groups).

    Written by hand because numpy's ``lexsort`` over millions of rows costs seconds, while TREC runs are nearly
    always already grouped by topic and sorted by score: only groups that violate that order, and blocks of tied
    scores, are sorted (with ``lexsort``); everything else stays in place. Rows are sorted by their contiguous
    *block* (its position in the file), never by group id, so a group keeps its place among the others.
    """
    n = len(group)
    if n == 0:
        return np.arange(0)
    boundary = group[1:] != group[:-1]
    perm = None  # the permutation so far (None: the identity)
    if np.count_nonzero(boundary) + 1 != np.count_nonzero(np.bincount(group)):  # a group's rows are not contiguous
        perm = np.argsort(group, kind="stable")
        g = group[perm]
        boundary = g[1:] != g[:-1]
    same = ~boundary
    p = primary if perm is None else primary[perm]
    unsorted = p[1:] > p[:-1]
    unsorted &= same
    if unsorted.any():
        perm = np.arange(n) if perm is None else perm
        block = np.concatenate([[0], np.cumsum(boundary)])  # contiguous block id, increasing along the rows
        sub = np.flatnonzero(np.isin(block, np.unique(block[1:][unsorted])))
        rows = perm[sub]
        perm[sub] = rows[np.lexsort((secondary(rows), -primary[rows], block[sub]))]
        p = primary[perm]
    tie = p[1:] == p[:-1]
    tie &= same
    if tie.any():
        perm = np.arange(n) if perm is None else perm
        in_block = np.zeros(n, dtype=bool)
        in_block[1:] |= tie
        in_block[:-1] |= tie
        sub = np.flatnonzero(in_block)
        starts = np.ones(len(sub), dtype=bool)
        starts[1:] = ~tie[sub[1:] - 1]  # the row is not tied to the one before it
        rows = perm[sub]
        perm[sub] = rows[_within(np.cumsum(starts), secondary(rows))]
    return np.arange(n) if perm is None else perm


def _within(block: np.ndarray, key: np.ndarray) -> np.ndarray:
    """The permutation sorting rows by (block, key), both integers ascending: one sort of a combined key when it
    fits in 62 bits (``lexsort``'s two stable passes cost twice as much)."""
    key = key - key.min(initial=0)
    span = int(key.max(initial=0)) + 1
    if int(block.max(initial=0)) * span < 1 << 62:
        return np.argsort(block.astype(np.int64) * span + key, kind="stable")
    return np.lexsort((key, block))


def _position_in_group(group: np.ndarray) -> np.ndarray:
    """0-based position of each row within its (contiguous) group."""
    n = len(group)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    start = np.flatnonzero(np.concatenate([[True], group[1:] != group[:-1]]))
    lengths = np.diff(np.concatenate([start, [n]]))
    return np.arange(n) - np.repeat(start, lengths)
