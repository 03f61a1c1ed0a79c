"""The collection model: ordering policies, cutoffs, condensed lists, missing topics, DataFrame input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meta_eval as me

QRELS = pd.DataFrame({"topic": ["1"] * 4 + ["2"], "docid": ["A", "B", "AA", "d10", "x"], "grade": [1, 0, 2, -1, 1]})


def run_frame(rows):
    return pd.DataFrame(rows, columns=["run", "topic", "docid", "rank", "score"])


def test_trec_eval_tie_rule_docid_descending_and_rank_ignored():
    # A (relevant) and B (not) tie at 1.0: trec_eval puts B first (strcmp("B","A") > 0), so P@1 = 0, RR = 0.5.
    run = run_frame([("r", "1", "A", 1, 1.0), ("r", "1", "B", 2, 1.0)])
    col = me.load_collection(QRELS, [run])
    assert me.score(col, "P@1")[0, 0] == 0.0 and me.score(col, "RR")[0, 0] == 0.5
    swapped = run_frame([("r", "1", "A", 2, 1.0), ("r", "1", "B", 1, 1.0)])
    assert me.score(me.load_collection(QRELS, [swapped]), "RR")[0, 0] == 0.5


def test_byte_order_of_docids():
    # "AA" > "A" in byte order, so with equal scores AA (grade 2) comes before A (grade 1).
    run = run_frame([("r", "1", "A", 1, 5.0), ("r", "1", "AA", 2, 5.0)])
    col = me.load_collection(QRELS, [run])
    assert col.grades[0, 0, :2].tolist() == [2, 1]


@pytest.mark.parametrize("ties, expected", [
    ("trec_eval", [0, 1]), ("docid_asc", [1, 0]), ("input", [1, 0]), ("rank", [0, 1]),
])
def test_tie_policies(ties, expected):
    run = run_frame([("r", "1", "A", 2, 1.0), ("r", "1", "B", 1, 1.0)])
    col = me.load_collection(QRELS, [run], ties=ties)
    assert col.grades[0, 0, :2].tolist() == expected


def test_score_order_beats_input_order_and_float32_ties():
    run = run_frame([("r", "1", "A", 1, 1.00000001), ("r", "1", "B", 2, 1.00000002)])
    col64 = me.load_collection(QRELS, [run])
    assert col64.grades[0, 0, :2].tolist() == [0, 1]  # B has the higher double score
    col32 = me.load_collection(QRELS, [run], score_precision="float32")
    assert col32.grades[0, 0, :2].tolist() == [0, 1]  # tie in float32 -> docid descending: B first too
    run2 = run_frame([("r", "1", "B", 1, 1.00000001), ("r", "1", "A", 2, 1.00000002)])
    assert me.load_collection(QRELS, [run2]).grades[0, 0, :2].tolist() == [1, 0]
    assert me.load_collection(QRELS, [run2], score_precision="float32").grades[0, 0, :2].tolist() == [0, 1]


def test_unsorted_input_is_ordered_by_score():
    rng = np.random.default_rng(0)
    docs = [f"d{i}" for i in range(50)]
    qrels = pd.DataFrame({"topic": "1", "docid": docs, "grade": rng.integers(0, 3, 50)})
    scores = rng.permutation(50).astype(float)
    run = pd.DataFrame({"run": "r", "topic": "1", "docid": docs, "score": scores})
    col = me.load_collection(qrels, [run])
    expected = qrels.grade.to_numpy()[np.argsort(-scores)]
    assert col.grades[0, 0, :50].tolist() == expected.tolist()


def test_unjudged_negative_and_codes():
    run = run_frame([("r", "1", "d10", 1, 3.0), ("r", "1", "zz", 2, 2.0), ("r", "1", "AA", 3, 1.0)])
    col = me.load_collection(QRELS, [run])
    assert col.grades[0, 0, :3].tolist() == [me.JUDGED_NEG, me.UNJUDGED, 2]
    assert col.unjudged[0, 0, :3].tolist() == [False, True, False]
    assert col.counts[0].tolist() == [1, 1, 1]  # negative grades are not counted (trec_eval)
    condensed = me.load_collection(QRELS, [run], unjudged="remove")
    assert condensed.grades[0, 0, :1].tolist() == [2] and condensed.rankings.n_ret[0, 0] == 1
    assert me.score(condensed, "P@1")[0, 0] == 1.0


def test_depth_cutoff_applies_after_ordering():
    run = run_frame([("r", "1", "B", 1, 1.0), ("r", "1", "AA", 2, 3.0), ("r", "1", "A", 3, 2.0)])
    col = me.load_collection(QRELS, [run], depth=2)
    assert col.grades[0, 0].tolist()[:2] == [2, 1] and col.rankings.n_ret[0, 0] == 2


def test_missing_topics_zero_or_skipped():
    run = run_frame([("r", "1", "AA", 1, 1.0)])
    zero = me.load_collection(QRELS, [run])
    assert me.score(zero, "AP")[0].tolist() == [0.5, 0.0]
    assert me.evaluate(zero, "AP").query("topic == 'all'").value.item() == pytest.approx(0.25)
    skip = me.load_collection(QRELS, [run], missing="skip")
    assert np.isnan(me.score(skip, "AP")[0, 1])
    assert me.evaluate(skip, "AP").query("topic == 'all'").value.item() == pytest.approx(0.5)


def test_run_topics_absent_from_qrels_are_ignored():
    run = run_frame([("r", "1", "AA", 1, 1.0), ("r", "9", "x", 1, 1.0)])
    assert me.load_collection(QRELS, [run]).topics == ["1", "2"]


def test_dataframe_and_file_inputs_agree(tmp_path):
    base, _ = me.demo_paths()
    qrels = pd.read_csv(base, sep=r"\s+", header=None, names=["topic", "it", "docid", "grade"], dtype={"topic": str})
    runs_dir = base.parent / "runs"
    frames = [pd.read_csv(p, sep=r"\s+", header=None, names=["topic", "q0", "docid", "rank", "score", "run"],
                          dtype={"topic": str}) for p in sorted(runs_dir.iterdir())[:3]]
    from_files = me.load_collection(base, sorted(runs_dir.iterdir())[:3])
    from_frames = me.load_collection(qrels, frames)
    assert from_files.systems == from_frames.systems
    np.testing.assert_array_equal(from_files.grades, from_frames.grades)


def test_demo_collection_shape_and_features():
    col = me.demo_collection()
    s, t, d = col.grades.shape
    assert s >= 24 and t >= 15 and d >= 100 and col.rankings.max_grade == 2
    assert col.unjudged.sum() > 0 and (~col.present).sum() > 0
    ap = me.score(col, "AP").mean(1)
    assert ap[-1] > ap[0]  # systems of different quality


def test_subset_keeps_scores():
    col = me.demo_collection()
    sub = col.subset(systems=col.systems[:3], topics=col.topics[::2])
    np.testing.assert_array_equal(me.score(sub, "AP"), me.score(col, "AP")[:3, ::2])


def test_evaluate_tidy_frame_and_csv(tmp_path):
    col = me.demo_collection()
    df = me.evaluate(col, ["AP", "P_5"])
    assert list(df.columns) == ["run", "topic", "measure", "value", "summary"]
    assert set(df.measure) == {"AP", "P_5"} and (df.topic == "all").sum() == df.summary.sum() == 2 * len(col.systems)
    from meta_eval.inputs.trec import write_results

    write_results(df, tmp_path / "r.csv")
    back = pd.read_csv(tmp_path / "r.csv", dtype={"topic": str})
    assert len(back) == len(df)


def test_ties_follow_byte_order_for_any_docids():
    docs = ["b", "é", "Z", "a1", "a", "ß", "10", "9"]
    qrels = pd.DataFrame({"topic": "1", "docid": docs, "grade": range(len(docs))})
    run = pd.DataFrame({"run": "r", "topic": "1", "docid": docs, "score": 1.0})
    col = me.load_collection(qrels, [run])
    expected = [docs.index(d) for d in sorted(docs, key=lambda d: d.encode(), reverse=True)]
    assert col.grades[0, 0, : len(docs)].tolist() == expected


@settings(max_examples=60, deadline=None)
@given(pairs=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 40)), min_size=1, max_size=60),
       collide=st.booleans())
def test_duplicate_documents_found_whatever_the_keys(pairs, collide):
    """A (topic, document) pair listed twice is an error, and a list without one passes, whether the rows' keys are
    the docids' hashes or all collide (every row of a topic given one key: the docids themselves then decide)."""
    import pyarrow as pa

    from meta_eval.inputs.arrow_numpy import string_hashes
    from meta_eval.model.collection import _check_duplicates, pair_hashes
    from meta_eval.core.errors import InputError
    from meta_eval.inputs.trec import RunTable

    topic = np.array([t for t, _ in pairs], dtype=np.int64)
    docid = pa.array([f"d{d}" for _, d in pairs])
    run = RunTable("r", "no-such-file", pa.array([str(t) for t in topic]), docid, np.zeros(len(pairs)))
    keys = np.zeros(len(pairs), np.uint64) if collide else pair_hashes(topic, string_hashes(docid))
    if len(set(pairs)) == len(pairs):
        _check_duplicates(run, topic, keys, lambda rows: rows)
    else:
        with pytest.raises(InputError, match="appears twice") as error:
            _check_duplicates(run, topic, keys, lambda rows: rows)
        first = min(i for i, pair in enumerate(pairs) if pair in pairs[:i])  # the first line repeating a document
        t, d = pairs[first]
        assert f"'d{d}' appears twice for topic '{t}'" in str(error.value)


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_documents_are_found_exactly_whatever_their_hashes(data):
    """Documents are looked up among the judgments, checked for repeats and ordered on ties by hashes of their
    docids, confirmed by the docids themselves: with hashes that collide (the docid's first letter only, or one
    value for all, which also sends the qrels to the exact index_in path), the collection is the same."""
    from unittest import mock

    import meta_eval.model.collection as collection_module

    topics = ["1", "2", "3"]
    judged = {t: data.draw(st.lists(st.sampled_from("0123"), min_size=0, max_size=4)) for t in topics}
    qrels = pd.DataFrame([(t, f"{'abcd'[i]}{x}", g) for t in topics for i, x in enumerate(judged[t])
                          for g in [data.draw(st.integers(-1, 2))]], columns=["topic", "docid", "grade"])
    if qrels.empty:
        qrels = pd.DataFrame({"topic": ["1"], "docid": ["a0"], "grade": [1]})
    rows = data.draw(st.lists(st.tuples(st.sampled_from(topics), st.sampled_from("abcde"), st.sampled_from("0123"),
                                        st.integers(0, 3)), min_size=1, max_size=25, unique_by=lambda r: r[:3]))
    run = pd.DataFrame([(t, f"{a}{x}", float(score)) for t, a, x, score in rows], columns=["topic", "docid", "score"])
    strong = me.load_collection(qrels, [run], disjoint=True)

    def first_letter(values):
        return np.array([ord(v[0]) for v in (values.to_pylist() if hasattr(values, "to_pylist") else values)],
                        dtype=np.uint64)

    for weak in (first_letter, lambda values: np.zeros(len(values), dtype=np.uint64)):
        with mock.patch.object(collection_module, "string_hashes", weak):
            again = me.load_collection(qrels, [run], disjoint=True)
        np.testing.assert_array_equal(again.grades, strong.grades)
        np.testing.assert_array_equal(again.n_ret, strong.n_ret)
        np.testing.assert_array_equal(again.present, strong.present)
        for a, b in zip(again.blocks, strong.blocks):
            np.testing.assert_array_equal(a.docs, b.docs)


def test_a_repeated_document_is_found_whatever_the_hashes():
    from unittest import mock

    import meta_eval.model.collection as collection_module
    from meta_eval.core.errors import InputError

    qrels = pd.DataFrame({"topic": ["1"], "docid": ["a"], "grade": [1]})
    run = pd.DataFrame({"topic": ["1", "1", "1", "2"], "docid": ["b", "c", "b", "b"], "score": [3.0, 2.0, 1.0, 1.0]})
    with mock.patch.object(collection_module, "string_hashes", lambda values: np.zeros(len(values), np.uint64)):
        with pytest.raises(InputError, match="'b' appears twice for topic '1'"):
            me.load_collection(qrels, [run])


@pytest.mark.parametrize("grouped", [True, False])
def test_long_runs_taken_a_few_topics_at_a_time_give_the_same_lists(monkeypatch, grouped):
    """A run is ordered, checked and graded in chunks of whole topics (CHUNK_ROWS rows): with chunks of a few rows
    the lists are those of one chunk, topics absent from the qrels and a run whose topics are not together (one
    chunk then) included."""
    from meta_eval.model.collection import _RunLists

    rng = np.random.default_rng(3)
    qrels = pd.DataFrame({"topic": [str(t) for t in range(6) for _ in range(5)],
                          "docid": [f"d{d}" for _ in range(6) for d in range(0, 10, 2)],
                          "grade": rng.integers(-1, 3, 30)})
    rows = [(str(t), f"d{d}", float(rng.integers(0, 4))) for t in range(8) for d in rng.permutation(12)[:9]]
    if not grouped:
        rows = [rows[i] for i in rng.permutation(len(rows))]
    run = pd.DataFrame(rows, columns=["topic", "docid", "score"])
    whole = me.load_collection(qrels, [run], depth=7)
    monkeypatch.setattr(_RunLists, "CHUNK_ROWS", 10)
    chunked = me.load_collection(qrels, [run], depth=7)
    np.testing.assert_array_equal(chunked.grades, whole.grades)
    np.testing.assert_array_equal(chunked.n_ret, whole.n_ret)
    np.testing.assert_array_equal(chunked.present, whole.present)
    for a, b in zip(chunked.blocks, whole.blocks):
        np.testing.assert_array_equal(a.docs, b.docs)


def test_chunks_hold_whole_topics():
    from meta_eval.model.collection import _chunks

    topic = np.repeat([4, 0, 7, 2, 9], [3, 5, 2, 6, 1])
    assert _chunks(topic, 100) == [(0, 17)]
    chunks = _chunks(topic, 4)
    assert chunks[0][0] == 0 and chunks[-1][1] == 17 and all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
    assert all(lo == 0 or topic[lo] != topic[lo - 1] for lo, _ in chunks)  # never inside a topic
    assert _chunks(np.array([1, 1, 2, 1]), 1) == [(0, 4)]  # topic 1 in two places: one chunk
