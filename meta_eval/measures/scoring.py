"""Scoring a collection: per-topic arrays, topic summaries, tidy results and trec_eval's printed layout.

Tidy results have one row per (run, topic, measure) and one summary row per (run, measure) (the mean over topics,
or the geometric mean or sum the measure declares). Summary rows carry ``summary=True`` and, as in trec_eval's
output, the topic ``"all"``; the flag, not the topic name, tells them apart, so a topic named ``all`` is kept
apart from the summary (the trec_eval layout, which cannot tell them apart, refuses to print both).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from meta_eval.model.collection import Collection
from meta_eval.measures.registry import Measure
from meta_eval.measures.resolver import resolve, resolve_one  # noqa: F401 - resolve is also meta_eval.resolve
from meta_eval.model.rankings import Rankings

if TYPE_CHECKING:  # pragma: no cover - pandas is imported where frames are made
    import pandas as pd

MIN_GEO_MEAN = 1e-5  # trec_eval's floor for geometric means
SUMMARY_TOPIC = "all"  # the topic printed on summary rows, as trec_eval prints it


def per_topic(collection: Collection, measure: str | Measure) -> np.ndarray:
    """(S, T) per-topic values; topics a run did not retrieve for are 0 (``missing="zero"``, trec_eval ``-c``)
    or NaN (``"skip"``, trec_eval without ``-c``: the topic is not evaluated). Under ``-c``, measures of the qrels
    alone (``num_rel``) keep their value for such topics, as in trec_eval."""
    m = resolve_one(measure) if isinstance(measure, str) else measure
    return _missing_topics(collection, m, collection.map_blocks(m))


def per_topic_many(collection: Collection, measures: Sequence[Measure]) -> list[np.ndarray]:
    """:func:`per_topic` of several measures at once: they run piece by piece over the lists, sharing the arrays
    they have in common, on every core (:meth:`Collection.map_lists`)."""
    values = collection.map_lists(measures)
    return [_missing_topics(collection, m, v) for m, v in zip(measures, values)]


def _missing_topics(collection: Collection, m: Measure, values: np.ndarray) -> np.ndarray:
    if collection.missing == "skip":
        return np.where(collection.present, values, np.nan)
    if m.family.qrels_only or m.family.empty_list:
        return values
    return np.where(collection.present, values, 0.0)


def score(collection: Collection, measures):
    """Per-topic scores: an (S, T) array for one measure name, or a dict name -> (S, T) for several.

    Examples
    --------
    >>> import meta_eval as me
    >>> ap = me.score(me.demo_collection(), "AP")
    >>> ap.shape[0] == len(me.demo_collection().systems)
    True
    """
    if isinstance(measures, (str, Measure)) and len(resolve(measures)) == 1:
        return per_topic(collection, resolve(measures)[0])
    resolved = resolve(measures)
    return {m.output_name: values for m, values in zip(resolved, per_topic_many(collection, resolved))}


def aggregate(values: np.ndarray, measure: Measure, collection: Collection | None = None) -> np.ndarray:
    """Summary over topics (axis -1) the way the measure declares: arithmetic mean, geometric mean (trec_eval gm_*:
    exp mean log max(v, 1e-5)), sum, or the family's own summary function ``f(values, measure, collection)``
    (which may use the collection, e.g. trec_eval's ``num_rel`` under ``-c``). NaN (skipped topics) are left
    out. Values are added one topic after the other, in topic order, as trec_eval adds them, so that a printed
    summary agrees with trec_eval's to the last digit (a pairwise sum can differ in the last bit)."""
    how = measure.family.aggregate
    if callable(how):
        return how(values, measure, collection)
    if how == "sum":
        return sequential_sum(values)
    if how == "gmean":
        with np.errstate(all="ignore"):
            return np.exp(arithmetic_mean(np.log(np.maximum(values, MIN_GEO_MEAN))))
    return arithmetic_mean(values)


def arithmetic_mean(values: np.ndarray) -> np.ndarray:
    """Mean over the last axis, NaN left out, added in order (:func:`sequential_sum`)."""
    with np.errstate(all="ignore"):
        return sequential_sum(values) / np.sum(~np.isnan(values), axis=-1)


def sequential_sum(values: np.ndarray) -> np.ndarray:
    """Σ over the last axis, NaN left out, added in order (C's loop; numpy's sum is pairwise)."""
    values = np.asarray(values, dtype=np.float64)
    values = np.where(np.isnan(values), 0.0, values)
    if values.shape[-1] == 0:
        return np.zeros(values.shape[:-1])
    return np.cumsum(values, axis=-1)[..., -1]


@dataclass(frozen=True)
class Scores:
    """Every run's value of several measures, per topic and over topics: the arrays behind :func:`evaluate`'s table.

    Attributes
    ----------
    systems, topics : list of str
        Run and topic names, in the collection's order.
    measures : list of Measure
    values : list of numpy.ndarray
        Per measure, (S, T) per-topic values; NaN where a run skipped the topic (``missing="skip"``).
    summary : list of numpy.ndarray
        Per measure, (S,) values over topics (:func:`aggregate`).
    """

    systems: list[str]
    topics: list[str]
    measures: list[Measure]
    values: list[np.ndarray]
    summary: list[np.ndarray]

    @property
    def names(self) -> list[str]:
        return [m.output_name for m in self.measures]

    def frame(self, per_topic_rows: bool = True) -> pd.DataFrame:
        """Tidy rows: ``run, topic, measure, value, summary`` (see :func:`evaluate`)."""
        import pandas as pd

        systems = np.asarray(self.systems, dtype=object)
        topics = np.asarray(self.topics, dtype=object)
        frames = []
        for name, values, summary in zip(self.names, self.values, self.summary):
            if per_topic_rows:
                s_idx, t_idx = np.nonzero(~np.isnan(values))
                frames.append(pd.DataFrame({"run": systems[s_idx], "topic": topics[t_idx], "measure": name,
                                            "value": values[s_idx, t_idx], "summary": False}))
            frames.append(pd.DataFrame({"run": systems, "topic": SUMMARY_TOPIC, "measure": name, "value": summary,
                                        "summary": True}))
        return pd.concat(frames, ignore_index=True)

    @classmethod
    def from_frame(cls, results: pd.DataFrame, measures: Sequence[Measure]) -> "Scores":
        """The arrays of tidy rows (as :meth:`frame` or :func:`evaluate` make them); absent rows are NaN."""
        is_summary = _summary_mask(results)
        systems = list(dict.fromkeys(results["run"]))
        topics = list(dict.fromkeys(results["topic"][~is_summary]))
        s_of = {name: i for i, name in enumerate(systems)}
        t_of = {name: i for i, name in enumerate(topics)}
        values, summary = [], []
        for m in measures:
            rows = results[results["measure"] == m.output_name]
            per_topic_values = np.full((len(systems), len(topics)), np.nan)
            summary_values = np.full(len(systems), np.nan)
            topic_rows, summary_rows = rows[~is_summary[rows.index]], rows[is_summary[rows.index]]
            per_topic_values[topic_rows["run"].map(s_of).to_numpy(int), topic_rows["topic"].map(t_of).to_numpy(int)] \
                = topic_rows["value"].to_numpy(float)
            summary_values[summary_rows["run"].map(s_of).to_numpy(int)] = summary_rows["value"].to_numpy(float)
            values.append(per_topic_values)
            summary.append(summary_values)
        return cls(systems, topics, list(measures), values, summary)


def scores(collection: Collection, measures, *, progress: bool = False) -> Scores:
    """Per-topic and summary values of every measure (:class:`Scores`). The measures are computed together, piece
    by piece of the lists (:func:`per_topic_many`), so the arrays they share (relevance masks, cumulative counts)
    are made once per piece; with ``progress``, in four groups (at least eight measures each) that the display
    counts."""
    from meta_eval.core.progress import progress as progress_display

    resolved = resolve(measures)
    group = max(8, -(-len(resolved) // 4)) if progress else max(len(resolved), 1)
    values: list[np.ndarray] = []
    with progress_display(total=len(resolved), desc="measures", unit="measure", enabled=progress) as bar:
        for lo in range(0, len(resolved), group):
            values += per_topic_many(collection, resolved[lo:lo + group])
            bar.update(min(group, len(resolved) - lo))
    summary = [aggregate(v, m, collection) for m, v in zip(resolved, values)]
    return Scores(list(collection.systems), list(collection.topics), resolved, values, summary)


def score_pieces(pieces: Iterable[Collection], measures, *, progress: bool = False) -> Scores:
    """:func:`scores` of a collection given in pieces of runs (:func:`meta_eval.model.collection.load_collection_pieces`),
    each scored and dropped before the next is made: memory holds one piece and the systems × topics values.

    Every value is a function of one run's lists and the qrels, so the values are those of the whole collection;
    runs that share a tag are told apart by their file name (:func:`meta_eval.inputs.trec.unique_names`) as when the
    collection is read whole."""
    from meta_eval.inputs.trec import unique_names

    resolved = resolve(measures)
    parts, names, sources = [], [], []
    for piece in pieces:
        parts.append(scores(piece, resolved, progress=progress))
        names += piece.systems
        sources += piece.options["runs"]
    if len(parts) == 1:
        return replace(parts[0], systems=unique_names(names, sources))
    values = [np.concatenate([part.values[i] for part in parts]) for i in range(len(resolved))]
    summary = [np.concatenate([part.summary[i] for part in parts]) for i in range(len(resolved))]
    return Scores(unique_names(names, sources), parts[0].topics, resolved, values, summary)


def evaluate(
    collection: Collection,
    measures,
    *,
    per_topic_rows: bool = True,
    progress: bool = False,
) -> pd.DataFrame:
    """Tidy results: one row per (run, topic, measure) and a summary row per (run, measure).

    Columns: ``run, topic, measure, value, summary``; summary rows have ``summary=True`` and ``topic == "all"``
    (trec_eval's name; the flag keeps them apart from a topic named ``all``). Topics a run skipped under
    ``missing="skip"`` have no row.
    """
    return scores(collection, measures, progress=progress).frame(per_topic_rows)


def score_lists(measure: str | Measure, grade_lists, counts=None, rel_level: int = 1) -> np.ndarray:
    """Score plain grade lists (hand-made examples): ``score_lists("AP", [[1, 0, 1]], counts=[[5, 2]])``."""
    m = resolve_one(measure) if isinstance(measure, str) else measure
    return m(Rankings.from_lists(grade_lists, counts, rel_level=rel_level))


def _summary_mask(results: pd.DataFrame) -> pd.Series:
    """Which rows are summaries: the ``summary`` column, or (for frames written before it existed) topic "all"."""
    if "summary" in results.columns:
        return results["summary"].astype(bool)
    return results.topic == SUMMARY_TOPIC
