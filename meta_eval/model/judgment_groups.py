"""Judgment groups: several users' relevance judgments of the same topics, and measures averaged over them.

trec_eval's ``qrels_jg`` format (``topic group docid grade``) gives each topic one set of qrels per judgment group
(a user, or one user at one time); its ``*_avgjg`` measures score a run against each group's qrels and average over
the topic's groups (``m_map_avgjg.c``, ``m_P_avgjg.c``, ``m_Rprec_mult_avgjg.c``). Here every measure can be
averaged so: the collection holds one ranked list per (topic, group), built by the ordinary loader from the run
repeated for each of the topic's groups, and a measure's per-topic value is the mean of its values over the
topic's groups (``map_avgjg`` is AP so averaged; plain qrels are one group per topic).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from meta_eval.inputs import trec as io
from meta_eval.inputs.arrow_numpy import to_numpy
from meta_eval.model.collection import Collection, ListsView, build_collection

_SEPARATOR = "\t"  # joins topic and group in the inner collection's topic ids (no id holds whitespace)


@dataclass(eq=False)
class JudgmentGroupCollection(ListsView):
    """Runs judged by several judgment groups per topic: what :func:`meta_eval.measures.scoring` needs of a collection,
    every measure averaged over each topic's groups.

    Attributes
    ----------
    lists : Collection
        One list per (topic, group): its topics are ``topic<TAB>group`` in byte order.
    topics : list of str
        The topics (byte order).
    parent : numpy.ndarray
        (T_groups,) index in :attr:`topics` of each of ``lists``' topics.
    """

    lists: Collection
    topics: list[str]
    parent: np.ndarray

    @property
    def counts(self) -> np.ndarray:
        """Judged documents per (topic, group) and grade."""
        return self.lists.counts

    @property
    def groups(self) -> np.ndarray:
        """(T,) judgment groups of each topic."""
        return np.bincount(self.parent, minlength=len(self.topics))

    @property
    def present(self) -> np.ndarray:
        """(S, T): the run retrieved something for the topic."""
        present = np.zeros((len(self.systems), len(self.topics)), dtype=bool)
        present[:, self.parent] = self.lists.present
        return present

    def map_lists(self, funcs: Sequence[Callable], *, threads: int | None = None) -> list[np.ndarray]:
        """Every function over every (run, topic, group) list, averaged over each topic's groups: one (S, T)
        array per function. The mean adds the groups in byte order and divides by their number, as trec_eval."""
        return [self.average(values) for values in self.lists.map_lists(funcs, threads=threads)]

    def average(self, values: np.ndarray) -> np.ndarray:
        """(S, T_groups) -> (S, T): the mean over each topic's groups."""
        total = np.zeros((values.shape[0], len(self.topics)))
        for g in range(values.shape[1]):  # in order: the same additions as trec_eval's loop over groups
            total[:, self.parent[g]] += values[:, g]
        groups = self.groups
        return np.where(groups > 1, total / np.maximum(groups, 1), total)


def load_judgment_groups(qrels: io.PathLike | io.QrelsTable, runs, *, depth: int | None = None, rel_level: int = 1,
                         missing: str = "zero", unjudged: str = "nonrel", ties: str = "trec_eval"
                         ) -> JudgmentGroupCollection:
    """Read qrels with judgment groups (``topic group docid grade``, trec_eval ``-R qrels_jg``) and runs.

    Parameters
    ----------
    qrels : path or QrelsTable
        A qrels_jg file, or a table with ``group`` (:func:`meta_eval.inputs.trec.read_qrels_jg`).
    runs : paths, directories, globs or in-memory runs
    depth, rel_level, missing, unjudged, ties
        As :func:`meta_eval.load_collection`.

    Examples
    --------
    >>> import meta_eval as me  # doctest: +SKIP
    >>> groups = me.load_judgment_groups("qrels.jg", ["run1"])  # doctest: +SKIP
    >>> me.evaluate(groups, ["map_avgjg", "P_avgjg.5,10"])  # doctest: +SKIP
    """
    table = qrels if isinstance(qrels, io.QrelsTable) and qrels.group is not None else io.read_qrels_jg(qrels)
    inner = pc.binary_join_element_wise(_strings(table.topic), _strings(table.group), _SEPARATOR)
    pairs = sorted(set(inner.to_pylist()), key=str.encode)
    topics = sorted({pair.split(_SEPARATOR, 1)[0] for pair in pairs}, key=str.encode)
    index = {topic: i for i, topic in enumerate(topics)}
    parent = np.array([index[pair.split(_SEPARATOR, 1)[0]] for pair in pairs], dtype=np.int64)
    grouped = io.QrelsTable(table.source, inner, table.docid, table.grade)
    run_tables = [_per_group(run, topics, pairs, parent) for run in io.read_runs(runs, with_rank=(ties == "rank"))]
    lists = build_collection(grouped, run_tables, depth=depth, rel_level=rel_level, missing=missing,
                             unjudged=unjudged, ties=ties)
    return JudgmentGroupCollection(lists, topics, parent)


def _strings(values: pa.Array) -> pa.Array:
    return values.cast(pa.string()) if values.type != pa.string() else values


def _per_group(run: io.RunTable, topics: list[str], pairs: list[str], parent: np.ndarray) -> io.RunTable:
    """The run's lines repeated for each group of their topic, the topic renamed ``topic<TAB>group`` (lines of
    topics without judgments are dropped, as the loader would)."""
    code = to_numpy(pc.index_in(_strings(run.topic), value_set=pa.array(topics, pa.string())), null=-1)
    code = code.astype(np.int64)
    n_groups = np.bincount(parent, minlength=len(topics))
    first = np.concatenate([[0], np.cumsum(n_groups)[:-1]])
    rows = np.flatnonzero(code >= 0)
    repeat = n_groups[code[rows]]
    line = np.repeat(rows, repeat)
    offset = np.arange(len(line)) - np.repeat(np.cumsum(repeat) - repeat, repeat)
    group = first[code[line]] + offset
    names = pa.array(pairs, pa.string()).take(pa.array(group))
    take = pa.array(line)
    rank = None if run.rank is None else run.rank[line]
    return io.RunTable(run.name, run.source, names, run.docid.take(take), run.score[line], rank)
