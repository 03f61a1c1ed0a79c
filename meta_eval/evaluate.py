"""Scoring a collection: per-topic arrays, topic summaries, tidy results and trec_eval's printed layout.

Tidy results have one row per (run, topic, measure) and one summary row per (run, measure) (the mean over topics,
or the geometric mean or sum the measure declares). Summary rows carry ``summary=True`` and, as in trec_eval's
output, the topic ``"all"``; the flag, not the topic name, tells them apart, so a topic named ``all`` is kept
apart from the summary (the trec_eval layout, which cannot tell them apart, refuses to print both).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from meta_eval.collection import Collection
from meta_eval.errors import InputError
from meta_eval.measures import Measure, get_measure
from meta_eval.measures.trec_names import expand_trec_spec
from meta_eval.rankings import Rankings

if TYPE_CHECKING:  # pragma: no cover - pandas is imported where frames are made
    import pandas as pd

MIN_GEO_MEAN = 1e-5  # trec_eval's floor for geometric means


def resolve(measures: str | Measure | Iterable[str | Measure]) -> list[Measure]:
    """Measure objects from names, trec_eval ``-m`` specs (``P.5,10``, ``all_trec``), plug-ins (``module:function``,
    ``file.py:function``, see :func:`meta_eval.plugins.load_metric`) or Measures."""
    from meta_eval.plugins import load_metric

    if isinstance(measures, (str, Measure)):
        measures = [measures]
    out: list[Measure] = []
    for spec in measures:
        if isinstance(spec, Measure):
            out.append(spec)
            continue
        names = expand_trec_spec(spec.strip())
        if names != [spec.strip()]:  # a trec_eval -m spec
            out.extend(get_measure(name) for name in names)
        else:
            out.extend(load_metric(spec.strip()))
    return out


SUMMARY_TOPIC = "all"  # the topic printed on summary rows, as trec_eval prints it


def per_topic(collection: Collection, measure: str | Measure) -> np.ndarray:
    """(S, T) per-topic values; topics a run did not retrieve for are 0 (``missing="zero"``, trec_eval ``-c``)
    or NaN (``"skip"``, trec_eval without ``-c``: the topic is not evaluated). Under ``-c``, measures of the qrels
    alone (``num_rel``) keep their value for such topics, as in trec_eval."""
    m = get_measure(measure) if isinstance(measure, str) else measure
    return _missing_topics(collection, m, collection.map_blocks(m))


def per_topic_many(collection: Collection, measures: Sequence[Measure]) -> list[np.ndarray]:
    """:func:`per_topic` of several measures at once: they run piece by piece over the lists, sharing the arrays
    they have in common, on every core (:meth:`Collection.map_lists`)."""
    values = collection.map_lists(measures)
    return [_missing_topics(collection, m, v) for m, v in zip(measures, values)]


def _missing_topics(collection: Collection, m: Measure, values: np.ndarray) -> np.ndarray:
    if collection.missing == "skip":
        return np.where(collection.present, values, np.nan)
    if m.family.qrels_only:
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
    out."""
    how = measure.family.aggregate
    if callable(how):
        return how(values, measure, collection)
    if how == "sum":
        return np.nansum(values, axis=-1)
    if how == "gmean":
        return np.exp(np.nanmean(np.log(np.maximum(values, MIN_GEO_MEAN)), axis=-1))
    with np.errstate(all="ignore"):
        return np.nanmean(values, axis=-1)


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
    import pandas as pd

    from meta_eval.progress import progress as progress_display

    frames = []
    resolved = resolve(measures)
    systems = np.asarray(collection.systems, dtype=object)
    topics = np.asarray(collection.topics, dtype=object)
    # Measures in groups (a group shares its pieces of the lists: see per_topic_many); progress counts measures.
    group = 8
    with progress_display(total=len(resolved), desc="measures", unit="measure", enabled=progress) as bar:
        computed = []
        for lo in range(0, len(resolved), group):
            computed += per_topic_many(collection, resolved[lo:lo + group])
            bar.update(min(group, len(resolved) - lo))
    for m, values in zip(resolved, computed):
        if per_topic_rows:
            s_idx, t_idx = np.nonzero(~np.isnan(values))
            frames.append(pd.DataFrame({
                "run": systems[s_idx], "topic": topics[t_idx], "measure": m.output_name, "value": values[s_idx, t_idx],
                "summary": False,
            }))
        frames.append(pd.DataFrame({
            "run": systems, "topic": SUMMARY_TOPIC, "measure": m.output_name, "value": aggregate(values, m, collection),
            "summary": True,
        }))
    return pd.concat(frames, ignore_index=True)


def score_lists(measure: str | Measure, grade_lists, counts=None, rel_level: int = 1) -> np.ndarray:
    """Score plain grade lists (hand-made examples): ``score_lists("AP", [[1, 0, 1]], counts=[[5, 2]])``."""
    m = get_measure(measure) if isinstance(measure, str) else measure
    return m(Rankings.from_lists(grade_lists, counts, rel_level=rel_level))


def format_trec(results: pd.DataFrame, measures: Sequence[Measure], per_topic_rows: bool = True) -> str:
    """Print results in trec_eval's layout (``measure<TAB>topic<TAB>value``, 4 decimals, ``all`` last).

    One block per run, measures in the given order, as ``trec_eval -q`` prints them; counts without decimals;
    geometric means (``gm_map``, ``gm_bpref``) only as summaries, as trec_eval prints them.

    Raises
    ------
    InputError
        Per-topic rows are asked for and a topic is named ``all``: trec_eval's layout could not tell it from the
        summary lines.
    """
    lines = []
    integer = {m.output_name: m.family.integer for m in measures}
    order = {m.output_name: i for i, m in enumerate(measures)}
    summary_only = {m.output_name for m in measures if m.family.aggregate == "gmean"}
    is_summary = _summary_mask(results)
    if per_topic_rows and (results.topic[~is_summary] == SUMMARY_TOPIC).any():
        raise InputError(f"a topic is named {SUMMARY_TOPIC!r}, which trec_eval's layout prints for the summary over "
                         "topics: its per-topic lines could not be told apart; rename the topic or use a tidy format "
                         "(csv, tsv, json, parquet), whose 'summary' column keeps them apart")
    for run, block in results.assign(_summary=is_summary).groupby("run", sort=False):
        topic_rows = block[~block._summary & ~block.measure.isin(summary_only)].copy() if per_topic_rows \
            else block.iloc[:0].copy()
        summary = block[block._summary]
        topic_rows["_m"] = topic_rows.measure.map(order)
        topic_rows["_t"] = topic_rows.topic.map(lambda t: str(t).encode())
        for row in topic_rows.sort_values(["_t", "_m"], kind="stable").itertuples():
            lines.append(_trec_line(row.measure, row.topic, row.value, integer[row.measure]))
        lines.append(_trec_line("runid", SUMMARY_TOPIC, run, False))
        topics = block.topic[~block._summary]
        if len(topics):
            lines.append(_trec_line("num_q", SUMMARY_TOPIC, topics.nunique(), False))
        for row in summary.sort_values("measure", key=lambda s: s.map(order), kind="stable").itertuples():
            lines.append(_trec_line(row.measure, SUMMARY_TOPIC, row.value, integer[row.measure]))
    return "\n".join(lines) + "\n"


def _summary_mask(results: pd.DataFrame) -> pd.Series:
    """Which rows are summaries: the ``summary`` column, or (for frames written before it existed) topic "all"."""
    if "summary" in results.columns:
        return results["summary"].astype(bool)
    return results.topic == SUMMARY_TOPIC


def _trec_line(measure: str, topic: str, value, integer: bool) -> str:
    if isinstance(value, (str, int, np.integer)):
        text = str(value)
    elif integer:
        text = f"{int(round(value))}"
    else:
        text = f"{value:.4f}"
    return f"{measure:<22s}\t{topic}\t{text}"
