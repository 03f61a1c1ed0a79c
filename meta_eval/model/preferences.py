"""Preference judgments: which document a user prefers to which, and the runs ranked against them.

trec_eval's preference formats (``-R prefs``, ``-R qrels_prefs``; Buckley's ``get_prefs.c``,
``form_prefs_counts.c``) describe, per topic, *judgment groups* (JG: one user's information need at one time) made
of *sub-groups* (JSG: documents ranked against each other by a relevance level; a higher level is preferred, 0
means not relevant). Within a JG preferences are consistent and transitive:

* a JG of one sub-group is a set of *equivalence classes* (the documents of one level), every document of a class
  preferred to every document of a lower class;
* a JG of several sub-groups is a preference relation (the sub-groups' preferences and their transitive closure);
  a contradiction inside a JG is an error.

Different JGs may contradict each other (users disagree); the measures (:mod:`meta_eval.measures.preferences`)
count, per JG, the preferences a run fulfils.

A run is ranked as trec_eval's preference code ranks it: score descending, ties by docid *ascending* (its
``form_prefs_counts.c``; the qrels measures break ties by docid descending), cut at ``depth`` (``-M``), and only
the judged documents (those of the preference file) kept. The judged documents of a topic get internal ranks: the
retrieved ones 0..n_ret-1 in rank order, the others n_ret.. in docid byte order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from meta_eval.inputs import trec as io
from meta_eval.inputs.arrow_numpy import to_numpy
from meta_eval.core.errors import ConflictError

from meta_eval.model.collection import ListsView

if TYPE_CHECKING:  # pragma: no cover
    from meta_eval.model.collection import Collection


@dataclass(frozen=True, eq=False)
class JudgmentGroup:
    """One judgment group of a topic, over the topic's judged documents (local indices 0..n-1, docid byte order).

    Attributes
    ----------
    name : str
    classes : tuple of numpy.ndarray
        One sub-group (equivalence classes): the documents of each level, levels decreasing. Empty for a group of
        several sub-groups.
    a, b : numpy.ndarray
        (P,) every preference of the group: document ``a[i]`` is preferred to ``b[i]``.
    level : numpy.ndarray
        (n,) each document's level in the group (the last sub-group's, in byte order), -1 if it has none.
    rel, nonrel : numpy.ndarray
        (n,) bool: relevant (level > 0) and not relevant documents of the group (equivalence classes: level <= 0;
        several sub-groups: level == 0, as trec_eval counts them).
    """

    name: str
    classes: tuple[np.ndarray, ...]
    a: np.ndarray
    b: np.ndarray
    level: np.ndarray
    rel: np.ndarray
    nonrel: np.ndarray

    @property
    def is_classes(self) -> bool:
        return bool(self.classes)


@dataclass(frozen=True, eq=False)
class TopicPreferences:
    """Every judgment group of one topic, and the preferences of all groups by document pair.

    Attributes
    ----------
    n : int
        Judged documents of the topic (in any group).
    groups : tuple of JudgmentGroup
        In byte order of their names.
    u, v : numpy.ndarray
        (Q,) document pairs (u < v) some group has a preference on.
    n_uv, n_vu : numpy.ndarray
        (Q,) groups preferring u to v, v to u.
    """

    n: int
    groups: tuple[JudgmentGroup, ...]
    u: np.ndarray
    v: np.ndarray
    n_uv: np.ndarray
    n_vu: np.ndarray


#: Pair-by-system cells compared at once (memory bound of the counting).
_CHUNK_CELLS = 1 << 22


@dataclass(eq=False)
class PreferenceLists:
    """What a preference measure receives: one topic's judged documents as every run ranks them.

    Attributes
    ----------
    topic : TopicPreferences
    rank : numpy.ndarray
        (S, n) internal rank of each judged document in each run (0..n_ret-1 retrieved, then unretrieved).
    n_ret : numpy.ndarray
        (S,) judged documents retrieved by each run.
    """

    topic: TopicPreferences
    rank: np.ndarray
    n_ret: np.ndarray
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.n_ret.shape

    def cached(self, key, compute):
        """Memoise an array several measures share."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def retrieved(self) -> np.ndarray:
        """(S, n) bool: the judged document was retrieved."""
        return self.cached("retrieved", lambda: self.rank < self.n_ret[:, None])

    def counts(self, g: int) -> dict[str, np.ndarray]:
        """Preference counts of group ``g`` per run (trec_eval's JG fields), each (S,) int64:

        ``ful_ret`` fulfilled, both retrieved; ``ful_imp`` fulfilled by implication (the preferred one retrieved,
        the other not); ``poss_ret``, ``poss_imp`` the same categories fulfilled or not; ``notoccur`` neither
        document retrieved; ``rel``, ``rel_ret``, ``nonrel``, ``nonrel_ret`` the group's relevant and non-relevant
        documents (all, retrieved)."""
        return self.cached(("counts", g), lambda: self._count(self.topic.groups[g]))

    def _count(self, group: JudgmentGroup) -> dict[str, np.ndarray]:
        S = len(self.n_ret)
        out = {key: np.zeros(S, dtype=np.int64) for key in ("ful_ret", "ful_imp", "poss_ret", "poss_imp", "notoccur")}
        for rows, ra, rb, njr in self.pair_ranks(group.a, group.b):
            ret_a, ret_b = ra < njr, rb < njr
            before = ra < rb
            out["ful_ret"][rows] = np.count_nonzero(before & ret_b, axis=1)
            out["ful_imp"][rows] = np.count_nonzero(before & ret_a & ~ret_b, axis=1)
            out["poss_ret"][rows] = np.count_nonzero(ret_a & ret_b, axis=1)
            out["poss_imp"][rows] = np.count_nonzero(ret_a != ret_b, axis=1)
            out["notoccur"][rows] = np.count_nonzero(~ret_a & ~ret_b, axis=1)
        retrieved = self.retrieved()
        out["rel"] = np.full(S, np.count_nonzero(group.rel), dtype=np.int64)
        out["nonrel"] = np.full(S, np.count_nonzero(group.nonrel), dtype=np.int64)
        out["rel_ret"] = np.count_nonzero(retrieved & group.rel, axis=1)
        out["nonrel_ret"] = np.count_nonzero(retrieved & group.nonrel, axis=1)
        return out

    def pair_ranks(self, a: np.ndarray, b: np.ndarray):
        """The internal ranks of pairs of documents, a chunk of runs at a time: ``(rows, rank[rows, a],
        rank[rows, b], n_ret[rows, None])`` (memory bounded by :data:`_CHUNK_CELLS`)."""
        step = max(1, _CHUNK_CELLS // max(len(a), 1))
        for lo in range(0, len(self.n_ret), step):
            rows = slice(lo, min(lo + step, len(self.n_ret)))
            rank = self.rank[rows]
            yield rows, rank[:, a], rank[:, b], self.n_ret[rows, None]


# --------------------------------------------------------------------------------------------- the judgments


def topic_preferences(table: io.PrefsTable) -> tuple[list[str], list[list[str]], list[TopicPreferences]]:
    """Every topic's judgment groups: (topics in byte order, each topic's judged docids in byte order, their
    :class:`TopicPreferences`).

    Raises
    ------
    InputError
        A document listed twice in one sub-group, a document relevant (level > 0) in one sub-group and not relevant
        (0) in another of the same group, or a contradiction inside a group (A > B and B > A, directly or through
        other documents); the message names the file, topic, group and the line where possible.
    """
    topic, group, sub, doc = (np.asarray(col.to_pylist(), dtype=object) for col in
                              (table.topic, table.group, table.subgroup, table.docid))
    keys = [np.array([x.encode() for x in col], dtype=object) for col in (topic, group, sub, doc)]
    order = sorted(range(len(topic)), key=lambda i: (keys[0][i], keys[1][i], keys[2][i], keys[3][i]))
    order = np.asarray(order, dtype=np.int64)
    topics, docids, prefs = [], [], []
    bounds = _runs_of(keys[0][order])
    for lo, hi in bounds:
        rows = order[lo:hi]
        names = sorted(set(doc[rows]), key=str.encode)
        local = {name: i for i, name in enumerate(names)}
        groups = [_group(table.source, topic[rows[0]], group[rows[g_lo]], sub[rows[g_lo:g_hi]],
                         np.array([local[d] for d in doc[rows[g_lo:g_hi]]], dtype=np.int64),
                         table.level[rows[g_lo:g_hi]], len(names), doc[rows[g_lo:g_hi]])
                  for g_lo, g_hi in _runs_of(keys[1][rows])]
        topics.append(topic[rows[0]])
        docids.append(names)
        prefs.append(_topic(len(names), groups))
    return topics, docids, prefs


def _runs_of(values: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) of each run of equal consecutive values."""
    out, lo = [], 0
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] != values[i - 1]:
            out.append((lo, i))
            lo = i
    return out


def _group(source: str, topic: str, name: str, subgroups: np.ndarray, docs: np.ndarray, levels: np.ndarray,
           n: int, docids: np.ndarray) -> JudgmentGroup:
    """One judgment group from its lines (sorted by sub-group): classes for one sub-group, else the closed
    preference relation."""
    where = f"topic {topic!r}, judgment group {name!r}"
    for s_lo, s_hi in _runs_of(subgroups):
        seen = docs[s_lo:s_hi]
        if len(np.unique(seen)) < len(seen):
            dup = docids[s_lo:s_hi][np.flatnonzero(np.bincount(seen, minlength=n)[seen] > 1)[0]]
            raise _error(f"{where}: document {dup!r} is listed twice in sub-group {subgroups[s_lo]!r}", source,
                         topic, name, dup)
    if len(_runs_of(subgroups)) == 1:
        return _classes_group(name, docs, levels, n)
    return _relation_group(source, topic, name, subgroups, docs, levels, n, docids)


def _classes_group(name: str, docs: np.ndarray, levels: np.ndarray, n: int) -> JudgmentGroup:
    """A group of one sub-group: equivalence classes by level (levels decreasing); every document of a class is
    preferred to every document of the lower classes."""
    values = np.unique(levels)[::-1]
    classes = tuple(docs[levels == value] for value in values)
    a_parts, b_parts = [], []
    for i, upper in enumerate(classes):
        lower = np.concatenate(classes[i + 1:]) if i + 1 < len(classes) else np.zeros(0, dtype=np.int64)
        a_parts.append(np.repeat(upper, len(lower)))
        b_parts.append(np.tile(lower, len(upper)))
    level = np.full(n, -1.0)
    level[docs] = levels
    member = np.zeros(n, dtype=bool)
    member[docs] = True
    return JudgmentGroup(name, classes, _concat(a_parts), _concat(b_parts), level, member & (level > 0),
                         member & (level <= 0))


def _relation_group(source: str, topic: str, name: str, subgroups: np.ndarray, docs: np.ndarray,
                    levels: np.ndarray, n: int, docids: np.ndarray) -> JudgmentGroup:
    """A group of several sub-groups: within each sub-group a higher level is preferred; the relation is closed
    transitively (Warshall) over the group's documents and must stay a strict order."""
    where = f"topic {topic!r}, judgment group {name!r}"
    members = np.unique(docs)
    index = np.searchsorted(members, docs)
    m = len(members)
    prefer = np.zeros((m, m), dtype=bool)
    level = np.full(n, -1.0)
    for s_lo, s_hi in _runs_of(subgroups):
        idx, lev = index[s_lo:s_hi], levels[s_lo:s_hi]
        prefer[np.ix_(idx, idx)] |= lev[:, None] > lev[None, :]
        for d, value, docid in zip(docs[s_lo:s_hi], lev, docids[s_lo:s_hi]):
            if (level[d] > 0 and value == 0) or (level[d] == 0 and value > 0):
                raise _error(f"{where}: document {docid!r} is relevant in one sub-group and not relevant (level 0) "
                             "in another", source, topic, name, docid)
        level[docs[s_lo:s_hi]] = lev
    for k in range(m):
        prefer |= prefer[:, k:k + 1] & prefer[k:k + 1, :]
    np.fill_diagonal(prefer, False)
    both = prefer & prefer.T
    if both.any():
        i, j = np.argwhere(both)[0]
        first = docids[np.flatnonzero(docs == members[i])[0]]
        second = docids[np.flatnonzero(docs == members[j])[0]]
        raise _error(f"{where}: the preferences contradict each other: {first!r} and {second!r} are each preferred "
                     "to the other (directly or through other documents)", source, topic, name, first)
    a, b = np.nonzero(prefer)
    return JudgmentGroup(name, (), members[a], members[b], level, level > 0, level == 0)


def _topic(n: int, groups: list[JudgmentGroup]) -> TopicPreferences:
    """The groups, and their preferences counted by unordered document pair."""
    a = _concat([g.a for g in groups])
    b = _concat([g.b for g in groups])
    low, high = np.minimum(a, b), np.maximum(a, b)
    key = low * max(n, 1) + high
    pairs, inverse = np.unique(key, return_inverse=True)
    forward = np.bincount(inverse, weights=(a < b), minlength=len(pairs)).astype(np.int64)
    total = np.bincount(inverse, minlength=len(pairs)).astype(np.int64)
    return TopicPreferences(n, tuple(groups), pairs // max(n, 1), pairs % max(n, 1), forward, total - forward)


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)


def _error(message: str, source: str, topic: str, group: str, docid: str) -> ConflictError:
    line = io.line_of_fields(source, {0: topic, 1: group, 3: docid}) or \
        io.line_of_fields(source, {0: topic, 1: group, 2: docid})
    return ConflictError(message, source, line)


# --------------------------------------------------------------------------------------------- the runs


@dataclass(eq=False)
class PreferenceCollection(ListsView):
    """Runs ranked against preference judgments: what :func:`meta_eval.measures.scoring` needs of a collection
    (``systems``, ``topics``, ``present``, ``missing``, :meth:`map_lists`) for the preference measures.

    Attributes
    ----------
    lists : Collection
        The runs' lists cut to the judged documents (the documents of the preference file), ordered by score
        with ties by docid ascending (trec_eval's preference order).
    preferences : list of TopicPreferences
        Per topic of ``lists.topics``.
    """

    lists: Collection
    preferences: list[TopicPreferences]
    _local: list[tuple[np.ndarray, np.ndarray]] = field(repr=False, default_factory=list)

    @property
    def topics(self) -> list[str]:
        return self.lists.topics

    @property
    def present(self) -> np.ndarray:
        return self.lists.present

    def map_lists(self, funcs: Sequence[Callable[[PreferenceLists], np.ndarray]], *, threads: int | None = None
                  ) -> list[np.ndarray]:
        """Apply preference measures to every (run, topic): one (S, T) float64 array per function (topic by
        topic; each function is vectorised over the runs)."""
        from meta_eval.model.collection import check_input_kind

        check_input_kind(funcs, "preferences")
        S, T = len(self.systems), len(self.topics)
        out = [np.zeros((S, T)) for _ in funcs]
        for t in range(T):
            lists = self.topic_lists(t)
            for values, func in zip(out, funcs):
                values[:, t] = np.broadcast_to(np.asarray(func(lists), dtype=np.float64), (S,))
        return out

    def topic_lists(self, t: int) -> PreferenceLists:
        """Topic ``t``'s judged documents as every run ranks them."""
        prefs = self.preferences[t]
        block, j = self._block_of(t)
        docs = block.docs[:, j, :]
        n_ret = block.rankings.n_ret[:, j].astype(np.int64)
        codes, local = self._local[t]
        rank = np.full((len(self.systems), prefs.n), -1, dtype=np.int64)
        s, p = np.nonzero(docs >= 0)
        rank[s, local[np.searchsorted(codes, docs[s, p])]] = p
        unretrieved = rank < 0
        rank = np.where(unretrieved, n_ret[:, None] + np.cumsum(unretrieved, axis=1) - 1, rank)
        return PreferenceLists(prefs, rank, n_ret)

    def _block_of(self, t: int):
        for block in self.lists.blocks:
            j = np.searchsorted(block.topics, t)
            if j < len(block.topics) and block.topics[j] == t:
                return block, int(j)
        raise AssertionError(f"topic {t} in no block")  # pragma: no cover - every topic has a block


def load_preferences(
    prefs: io.PathLike | io.PrefsTable,
    runs,
    *,
    fmt: str = "prefs",
    depth: int | None = None,
    missing: str = "zero",
    ties: str = "docid_asc",
    progress: bool = False,
) -> PreferenceCollection:
    """Read preference judgments and runs into a :class:`PreferenceCollection`.

    Parameters
    ----------
    prefs : path or PrefsTable
        trec_eval's ``prefs`` file (``topic group subgroup docid level``) or, with ``fmt="qrels_prefs"``, qrels
        read as preferences (``topic group docid level``).
    runs : paths, directories, globs or in-memory runs
        As :func:`meta_eval.load_collection`.
    depth : int, optional
        Keep the top ``depth`` documents of each list before the unjudged ones are dropped (trec_eval ``-M``).
    missing : {"zero", "skip"}
        Topics a run lacks score 0 (trec_eval ``-c``) or are left out of its mean.
    ties : str
        Ordering policy; trec_eval's preference measures break score ties by docid ascending (``docid_asc``).

    Raises
    ------
    InputError
        Malformed files (file and line named), contradictory preferences inside a judgment group, a document twice
        in a run's list.

    Examples
    --------
    >>> import meta_eval as me  # doctest: +SKIP
    >>> prefs = me.load_preferences("prefs.txt", ["run1", "run2"])  # doctest: +SKIP
    >>> me.evaluate(prefs, ["all_prefs"])  # doctest: +SKIP
    """
    from meta_eval.model.collection import load_collection

    table = prefs if isinstance(prefs, io.PrefsTable) else io.read_prefs(prefs, fmt=fmt)
    topics, docids, preferences = topic_preferences(table)
    judged = io.QrelsTable(table.source, pa.array([t for t, names in zip(topics, docids) for _ in names]),
                           pa.array([d for names in docids for d in names]),
                           np.ones(sum(len(names) for names in docids), dtype=np.int64))
    lists = load_collection(judged, runs, depth=depth, missing=missing, unjudged="remove", ties=ties,
                            progress=progress)
    order = {name: i for i, name in enumerate(topics)}
    preferences = [preferences[order[name]] for name in lists.topics]
    local = _local_codes(lists, [docids[order[name]] for name in lists.topics])
    return PreferenceCollection(lists, preferences, local)


def _local_codes(lists: Collection, docids: list[list[str]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per topic: the collection's codes of its judged documents (sorted) and each one's local index (its place
    in docid byte order)."""
    names = lists.doc_names
    lookup = pc.index_in(pa.array([d for topic in docids for d in topic], pa.string()), value_set=names)
    codes = to_numpy(lookup).astype(np.int64)
    out, lo = [], 0
    for topic in docids:
        mine = codes[lo:lo + len(topic)]
        order = np.argsort(mine, kind="stable")
        out.append((mine[order], order.astype(np.int64)))
        lo += len(topic)
    return out
