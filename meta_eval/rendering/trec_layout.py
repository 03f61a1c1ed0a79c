"""trec_eval's printed layout, byte for byte: per-topic lines, ``runid``, ``num_q``, summaries, z-scores; the one
writer of both ``meta-eval trec-eval`` (:func:`report`) and ``evaluate -f trec`` (:func:`format_scores`).

The layout of trec_eval 10 (``meas_print_single.c``, ``meas_print_final.c``, ``m_runid.c``, ``m_num_q.c``,
``m_relstring.c``, ``convert_zscores.c``):

* a line is ``%-22s\\t%s\\t%6.4f`` (name, topic, value), counts ``%ld``;
* with ``-q``, per topic in the qrels' order, every value of every measure in trec_eval's print order
  (:data:`meta_eval.core.trec_eval_names.TREC_MEASURES`); ``gm_map`` and ``gm_bpref`` are printed as summaries only,
  ``relstring`` per topic only (``'0110-'``: grade digits, ``>`` above 9, ``-`` not judged, ``.`` judged
  negative);
* then (unless ``-n``) ``runid  all  <tag of the run's last line>``, ``num_q  all  <topics>`` and each value's
  summary over the topics (mean, sum for counts, geometric mean for ``gm_*``);
* with ``-Z file``, every value v of a topic is replaced by (v − mean) / sd from the file (0 where sd = 0 and
  v = mean; −1000000 where the topic, the measure or a usable sd is missing), names get a ``Z`` prefix and counts
  print as ``%6.4f``; the summaries are taken over the z-scores (``num_q`` stays the number of topics; ``num_rel``
  under ``-c`` stays trec_eval's count of relevant judgments).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.measures.scoring import MIN_GEO_MEAN, SUMMARY_TOPIC, Scores, aggregate, sequential_sum
from meta_eval.model.rankings import JUDGED_NEG, UNJUDGED

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from meta_eval.inputs.trec import ZScoresTable
    from meta_eval.measures import Measure
    from meta_eval.measures.trec_names import Selected

MISSING_ZSCORE = -1000000.0  # trec_eval's MISSING_ZSCORE_VALUE


@dataclass(frozen=True)
class Numbers:
    """Every run's numbers as the report prints them: per measure output name, the (S, T) per-topic values
    (z-scores with ``-Z``; NaN where a topic was not evaluated) and the (S,) summaries."""

    values: dict[str, np.ndarray]
    summaries: dict[str, np.ndarray]
    z: bool = False


def numbers(selection: Sequence[Selected], values: dict[str, np.ndarray], topics: Sequence[str], *,
            collection=None, zscores: ZScoresTable | None = None) -> Numbers:
    """The per-topic values (standardised with ``-Z``) and the summaries of every run, for :func:`report`.

    Parameters
    ----------
    selection : the measures asked for (:func:`meta_eval.measures.trec_names.trec_eval_selection`)
    values : per measure output name, the (S, T) per-topic values
    topics : the topics (byte order), one per column
    collection : what the summaries of some measures need (``num_rel`` under ``-c``)
    zscores : the ``-Z`` file's table, if any
    """
    if zscores is not None:
        values = _to_zscores(selection, values, topics, zscores)
    summaries = {m.output_name: _summary(values[m.output_name], m, collection, zscores is not None)
                 for chosen in selection for m in chosen.values}
    return Numbers(values, summaries, zscores is not None)


def report(selection: Sequence[Selected], numbers: Numbers, s: int, topics: Sequence[str], runid: str, *,
           per_topic: bool, summary: bool, relstring: list[str] | None = None, upto: int | None = None) -> str:
    """The text trec_eval prints for run ``s``: with ``per_topic`` (``-q``) each topic's lines, with ``summary``
    (not ``-n``) the summary lines; ``upto`` prints only the first ``upto`` topics and no summary (trec_eval
    stopped at a topic it could not evaluate)."""
    prefix = "Z" if numbers.z else ""
    lines: list[str] = []
    shown = len(topics) if upto is None else upto
    if per_topic:
        values = {name: v[s] for name, v in numbers.values.items()}
        lines += _topic_lines(selection, values, relstring, topics[:shown], prefix)
    if summary and upto is None:
        lines += _summary_lines(selection, numbers, s, runid, len(topics), prefix)
    return "".join(lines)


def _topic_lines(selection, values, relstring, topics, prefix: str) -> list[str]:
    """Every topic's lines: ``name<TAB>topic<TAB>%6.4f`` (``%d`` for counts, ``'%s'`` for relstring) for every
    (topic, value) (:func:`topic_lines`)."""
    heads, formats, columns = [], [], []
    for chosen in selection:
        m = chosen.measure
        if m.kind == "relstring":
            heads.append(f"{_relstring_name(chosen):<22s}\t")
            formats.append("'%s'\n")
            columns.append(relstring[:len(topics)])
            continue
        if not m.per_topic or m.family is None:
            continue
        for measure in chosen.values:
            heads.append(f"{prefix}{measure.output_name:<22s}\t")
            formats.append("%d\n" if measure.family.integer and not prefix else "%6.4f\n")
            columns.append(values[measure.output_name][:len(topics)])
    return [topic_lines(heads, formats, topics, columns)] if heads and len(topics) else []


def topic_lines(heads: Sequence[str], formats: Sequence[str], topics: Sequence[str], columns: Sequence,
                shown: np.ndarray | None = None) -> str:
    """The per-topic lines of one run: for each topic, for each column, ``head + topic + TAB`` and the column's
    value at that topic printed with the column's ``%`` format.

    One ``%`` of a template made once for all runs (the same lines for every run) with the values in (topic,
    column) order: C's formatting of the whole report rather than a Python call per line. ``shown`` ((topics,
    columns) bool), if given, leaves out the cells where it is False (topics a run was not evaluated on)."""
    table = np.empty((len(topics), len(heads)), dtype=object)
    for c, column in enumerate(columns):
        table[:, c] = column
    key = (tuple(heads), tuple(formats), tuple(topics))
    if shown is None or shown.all():
        return _template(*key) % tuple(table.ravel().tolist())
    return "".join(_cells(*key)[shown].tolist()) % tuple(table[shown].tolist())


@functools.lru_cache(maxsize=4)
def _template(heads: tuple[str, ...], formats: tuple[str, ...], topics: tuple[str, ...]) -> str:
    """``name<TAB>topic<TAB>%6.4f\n`` ... for every (topic, column): the same for every run, so made once (a ``%``
    in a name or topic id doubled)."""
    return "".join(_cells(heads, formats, topics).ravel().tolist())


@functools.lru_cache(maxsize=4)
def _cells(heads: tuple[str, ...], formats: tuple[str, ...], topics: tuple[str, ...]) -> np.ndarray:
    """The template of each (topic, column) line, as a (topics, columns) object array."""
    cells = np.empty((len(topics), len(heads)), dtype=object)
    for t, topic in enumerate(topics):
        cells[t] = [f"{head}{topic}\t".replace("%", "%%") + fmt for head, fmt in zip(heads, formats)]
    return cells


def _summary_lines(selection, numbers: Numbers, s: int, runid: str, n_topics: int, prefix: str) -> list[str]:
    out = []
    for chosen in selection:
        m = chosen.measure
        if m.kind == "runid":
            out.append(f"{'runid':<22s}\tall\t{runid}\n")
        elif m.kind == "num_q":
            out.append(f"{prefix}{'num_q':<22s}\tall\t" + (f"{n_topics:6.4f}" if numbers.z else f"{n_topics}") + "\n")
        elif m.family is not None:
            for measure in chosen.values:
                value = numbers.summaries[measure.output_name][s]
                text = _texts(np.array([value]), measure.family.integer and not numbers.z)[0]
                out.append(f"{prefix}{measure.output_name:<22s}\tall\t{text}")
    return out


def format_scores(results: Scores, measures: Sequence[Measure], per_topic_rows: bool = True) -> str:
    """``evaluate -f trec``: every run's block in trec_eval's layout, measures in the given order (the measures of
    ``results`` that are named); see :func:`format_trec`.

    Raises
    ------
    InputError
        Per-topic rows are asked for and a topic is named ``all``.
    """
    by_name = dict(zip(results.names, zip(results.values, results.summary)))
    picked = [(m, *by_name[m.output_name]) for m in measures]
    evaluated = np.zeros((len(results.systems), len(results.topics)), dtype=bool)
    for _, values, _ in picked:
        evaluated |= ~np.isnan(values)
    if per_topic_rows and SUMMARY_TOPIC in results.topics:
        raise InputError(f"a topic is named {SUMMARY_TOPIC!r}, which trec_eval's layout prints for the summary over "
                         "topics: its per-topic lines could not be told apart; rename the topic or use a tidy format "
                         "(csv, tsv, json, parquet), whose 'summary' column keeps them apart")
    order = sorted(range(len(results.topics)), key=lambda t: str(results.topics[t]).encode())
    topics = [str(results.topics[t]) for t in order]
    # counts rounded to the nearest integer, other values to 4 decimals ("%.4f" is trec_eval's "%6.4f" for every
    # finite value, and prints a NaN or infinite value, which trec_eval never prints, without padding)
    per_topic = [(m, np.rint(values[:, order]) if m.family.integer else values[:, order])
                 for m, values, _ in picked if m.family.aggregate != "gmean"]
    heads = [f"{m.output_name:<22s}\t" for m, _ in per_topic]
    formats = ["%d\n" if m.family.integer else "%.4f\n" for m, _ in per_topic]
    out = []
    for s, run in enumerate(results.systems):
        if per_topic_rows and per_topic and topics:
            columns = [values[s] for _, values in per_topic]
            shown = ~np.isnan(np.stack(columns, axis=1))
            out.append(topic_lines(heads, formats, topics, columns, shown))
        out.append(f"{'runid':<22s}\t{SUMMARY_TOPIC}\t{run}\n")
        if evaluated[s].any():
            out.append(f"{'num_q':<22s}\t{SUMMARY_TOPIC}\t{int(evaluated[s].sum())}\n")
        out += [f"{m.output_name:<22s}\t{SUMMARY_TOPIC}\t"
                + (f"{int(round(summary[s]))}\n" if m.family.integer else f"{summary[s]:.4f}\n")
                for m, _, summary in picked]
    return "".join(out)


def _summary(values: np.ndarray, measure: Measure, collection, z: bool) -> np.ndarray:
    """(S,) summaries over topics; of z-scores, a geometric mean is exp of the mean z (trec_eval converts the log
    values it sums)."""
    if z and measure.family.aggregate == "gmean":
        return np.exp(sequential_sum(values) / values.shape[-1])
    return aggregate(values, measure, collection)


def _texts(values: np.ndarray, integer: bool) -> list[str]:
    """``%ld`` of the truncated value for counts, else ``%6.4f``."""
    if integer:
        return [f"{int(v)}\n" for v in values.tolist()]
    return [f"{v:6.4f}\n" for v in values.tolist()]


def _relstring_name(chosen: Selected) -> str:
    return "relstring" if chosen.params is None else f"relstring_{chosen.params}"


# --------------------------------------------------------------------------------------------- z-scores


def _to_zscores(selection, values: dict[str, np.ndarray], topics: Sequence[str],
                zscores: ZScoresTable) -> dict[str, np.ndarray]:
    """Every per-topic value standardised against the file's (mean, sd) of its (topic, measure name), with
    trec_eval's rules for what the file lacks (:mod:`meta_eval.statistics.standardise` does the division)."""
    from meta_eval.statistics.standardise import Standardisation

    reference = {(t, m): (mean, sd) for t, m, mean, sd in zip(zscores.topic, zscores.measure, zscores.mean,
                                                              zscores.sd)}
    known_topics = set(zscores.topic)
    out = {}
    for chosen in selection:
        for measure in chosen.values:
            name = measure.output_name
            x = values[name]
            if measure.family.aggregate == "gmean":  # trec_eval holds log(max(v, 1e-5)) per topic for gm_*
                x = np.log(np.maximum(x, MIN_GEO_MEAN))
            pairs = [reference.get((topic, name), (np.nan, np.nan)) for topic in topics]
            mean = np.array([p[0] for p in pairs])
            sd = np.array([p[1] for p in pairs])
            z = Standardisation("z", mean, sd)(x)
            usable = ~np.isnan(mean) & ((sd != 0) | (x == mean))
            known = np.array([topic in known_topics for topic in topics], dtype=bool)
            out[name] = np.where(usable & known, z, MISSING_ZSCORE)  # (S, T)
    return out


# --------------------------------------------------------------------------------------------- relstring


def relstrings(collection, length: int) -> list[list[str]]:
    """trec_eval's ``relstring``: per run and topic, the first ``length`` documents' relevance as characters
    (the grade, ``>`` above 9, ``-`` not in the qrels, ``.`` judged with a negative grade)."""
    lut = np.array(["<"] * 256, dtype="<U1")
    for grade in range(10):
        lut[grade] = str(grade)
    lut[10:128] = ">"
    lut[UNJUDGED % 256], lut[JUDGED_NEG % 256] = "-", "."
    S, T = len(collection.systems), len(collection.topics)
    out = [[""] * T for _ in range(S)]
    length = max(int(length), 0)
    for block in collection.blocks:
        grades = block.rankings.grades[..., :length]
        chars = lut[grades.astype(np.int64) % 256]
        n = np.minimum(block.rankings.n_ret, length)
        for s in range(S):
            for j, t in enumerate(block.topics):
                out[s][t] = "".join(chars[s, j, : n[s, j]])
    return out


def format_trec(results: Scores | pd.DataFrame, measures: Sequence[Measure], per_topic_rows: bool = True) -> str:
    """Print results in trec_eval's layout (``measure<TAB>topic<TAB>value``, 4 decimals, ``all`` last).

    One block per run, measures in the given order, as ``trec_eval -q`` prints them: per-topic lines in the byte
    order of the topic names, then ``runid``, ``num_q`` (the topics the run was evaluated on) and the summaries;
    counts without decimals; geometric means (``gm_map``, ``gm_bpref``) only as summaries, as trec_eval prints
    them. ``results`` is a :class:`Scores` or the tidy rows of :func:`evaluate`.

    Raises
    ------
    InputError
        Per-topic rows are asked for and a topic is named ``all``: trec_eval's layout could not tell it from the
        summary lines.
    """
    if not isinstance(results, Scores):
        results = Scores.from_frame(results, measures)
    return format_scores(results, measures, per_topic_rows)
