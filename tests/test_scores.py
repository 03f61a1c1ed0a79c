"""Scores, the arrays behind evaluate's tidy rows: the two views agree, and trec_eval's layout is the same printed
from either (the command line prints from the arrays, the API from frames)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import meta_eval as me
from meta_eval.measures.scoring import Scores, resolve, scores
from meta_eval.rendering.trec_layout import format_trec

MEASURES = ["AP", "nDCG@10", "gm_map", "num_rel", "P@5"]


@pytest.fixture(scope="module", params=["zero", "skip"])
def collection(request):
    qrels = pd.DataFrame({"topic": ["1", "1", "2", "2", "10"], "docid": ["a", "b", "a", "c", "d"],
                          "grade": [1, 0, 2, 1, 1]})
    runs = pd.DataFrame({"run": ["x", "x", "x", "y", "y"], "topic": ["1", "2", "10", "2", "2"],
                         "docid": ["a", "c", "e", "a", "b"], "score": [1.0, 2.0, 0.5, 1.0, 1.0]})
    return me.load_collection(qrels, [runs], missing=request.param)


def test_frame_round_trips_through_the_arrays(collection):
    result = scores(collection, MEASURES)
    again = Scores.from_frame(result.frame(), resolve(MEASURES))
    assert again.systems == result.systems and again.topics == result.topics
    for a, b in zip(result.values + result.summary, again.values + again.summary):
        np.testing.assert_array_equal(a, b)


def test_skipped_topics_have_no_rows(collection):
    frame = scores(collection, MEASURES).frame()
    rows = frame[(frame.run == "y") & ~frame.summary & (frame.measure == "AP")]
    expected = {"1", "2", "10"} if collection.missing == "zero" else {"2"}
    assert set(rows.topic) == expected


@pytest.mark.parametrize("per_topic_rows", [True, False])
def test_trec_layout_is_the_same_from_arrays_and_frames(collection, per_topic_rows):
    measures = resolve(MEASURES)
    result = scores(collection, measures)
    from_arrays = format_trec(result, measures, per_topic_rows=per_topic_rows)
    from_frame = format_trec(me.evaluate(collection, measures), measures, per_topic_rows=per_topic_rows)
    assert from_arrays == from_frame
    lines = from_arrays.splitlines()
    if per_topic_rows:  # topics in byte order ("10" before "2"), measures in the given order, gm_map summary only
        x_topics = [line.split("\t")[1] for line in lines if line.startswith("AP ")][:3]
        assert x_topics == ["1", "10", "2"]
        assert not any(line.startswith("gm_map") and "\tall\t" not in line for line in lines)
    assert sum(line.startswith("runid") for line in lines) == 2


def _trec_lines(results, measures, per_topic_rows):
    """trec_eval's layout printed line by line (a plain reference for the template printer): per run, each
    topic's lines in byte order of the topic ids, then runid, num_q and the summaries; counts without decimals,
    geometric means as summaries only."""
    by_name = dict(zip(results.names, zip(results.values, results.summary)))
    evaluated = np.zeros((len(results.systems), len(results.topics)), dtype=bool)
    for m in measures:
        evaluated |= ~np.isnan(by_name[m.output_name][0])

    def line(name, topic, value, integer):
        text = value if isinstance(value, str) else f"{int(round(value))}" if integer else f"{value:.4f}"
        return f"{name:<22s}\t{topic}\t{text}\n"

    out = []
    for s, run in enumerate(results.systems):
        if per_topic_rows:
            for t in sorted(range(len(results.topics)), key=lambda t: results.topics[t].encode()):
                for m in measures:
                    value = by_name[m.output_name][0][s, t]
                    if m.family.aggregate != "gmean" and not np.isnan(value):
                        out.append(line(m.output_name, results.topics[t], value, m.family.integer))
        out.append(line("runid", "all", run, False))
        if evaluated[s].any():
            out.append(line("num_q", "all", str(int(evaluated[s].sum())), False))
        out += [line(m.output_name, "all", by_name[m.output_name][1][s], m.family.integer) for m in measures]
    return "".join(out)


@pytest.mark.parametrize("missing", ["zero", "skip"])
@pytest.mark.parametrize("per_topic_rows", [True, False])
def test_trec_layout_matches_a_line_by_line_printer(missing, per_topic_rows):
    """The template printer (one % per run) prints what a line-by-line printer prints, for every trec_eval measure
    (counts, geometric means), topics some runs skip (missing="skip"), NaN and infinite values and a '%' in a
    topic id."""
    qrels = pd.DataFrame({"topic": ["1", "1", "2", "2", "10", "a%d"], "docid": ["a", "b", "a", "c", "d", "a"],
                          "grade": [1, 0, 2, 1, 1, 1]})
    runs = pd.DataFrame({"run": ["x", "x", "x", "x", "y", "y"], "topic": ["1", "2", "10", "a%d", "2", "2"],
                         "docid": ["a", "c", "e", "a", "a", "b"], "score": [1.0, 2.0, 0.5, 1.0, 1.0, 1.0]})
    collection = me.load_collection(qrels, [runs], missing=missing)
    measures = resolve(["all_trec"])
    result = scores(collection, measures)
    result.values[3][0, 1] = np.nan  # a value a measure could not give
    result.values[5][0, 0], result.summary[5][0] = np.inf, np.nan  # (never from a built-in measure)
    assert format_trec(result, measures, per_topic_rows) == _trec_lines(result, measures, per_topic_rows)
