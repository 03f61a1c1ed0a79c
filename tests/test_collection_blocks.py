"""Issue 15: memory follows what was retrieved — topics stored in dense blocks of similar depth.

Scores computed block by block equal the scores of the one dense array; derived collections (subset, re-judged,
condensed) equal collections rebuilt from the filtered files.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import meta_eval as me
from meta_eval.model.collection import build_collection
from meta_eval.inputs.trec import read_qrels, read_runs

MEASURES = ["AP", "GAP", "nDCG", "nDCG@10", "P@5", "RR", "bpref", "ERR", "Q", "Rprec", "NumRet", "NumRel",
            "infAP" if "infap" in {f.name.lower() for f in me.families()} else "Recall@100"]


def _uneven(seed=0, n_topics=40, n_runs=4):
    """A collection whose topics have very different list lengths (1 .. 700), some topics unretrieved."""
    rng = np.random.default_rng(seed)
    qrels, runs = [], []
    for t in range(n_topics):
        pool = int(rng.integers(1, 60))
        for d in range(pool):
            qrels.append((f"q{t}", f"d{d}", int(rng.integers(-1, 3))))
        for s in range(n_runs):
            if t % 7 == 3:
                continue  # nobody retrieves this topic
            n = 700 if (t == 5 and s == 1) else int(rng.integers(1, 40))
            docs = rng.permutation(max(n, 80))[:n]
            runs += [(f"r{s}", f"q{t}", f"d{d}", float(rng.integers(0, 9))) for d in docs]
    return (pd.DataFrame(qrels, columns=["topic", "docid", "grade"]),
            pd.DataFrame(runs, columns=["run", "topic", "docid", "score"]))


def test_blocks_group_topics_by_depth_and_scores_equal_the_dense_array():
    qrels, runs = _uneven()
    col = me.load_collection(qrels, [runs])
    assert len(col.blocks) > 2
    assert sorted(np.concatenate([b.topics for b in col.blocks]).tolist()) == list(range(len(col.topics)))
    cells = sum(b.rankings.grades.size for b in col.blocks)
    assert cells < col.grades.size / 4  # the long list does not inflate the other topics
    dense = col.rankings
    for name in MEASURES:
        m = me.get_measure(name)
        expected = np.broadcast_to(m(dense), dense.shape)
        if not m.family.qrels_only:
            expected = np.where(col.present, expected, 0.0)
        np.testing.assert_allclose(me.score(col, name), expected, rtol=0, atol=1e-15, err_msg=name)


def test_many_qrels_topics_and_one_small_run_stay_small():
    """The issue's case in small: a 20,000-topic qrels and one run of 10 topics, one of them 5,000 documents."""
    n_topics = 20_000
    qrels = pd.DataFrame({"topic": [f"t{i}" for i in range(n_topics)], "docid": "d0", "grade": 1})
    rows = [("r", f"t{t}", f"d{d}", float(-d)) for t in range(10) for d in range(5000 if t == 3 else 10)]
    col = me.load_collection(qrels, [pd.DataFrame(rows, columns=["run", "topic", "docid", "score"])])
    cells = sum(b.rankings.grades.size for b in col.blocks)
    assert cells < 30_000  # dense storage would hold 20,000 × 5,000 cells
    ap = me.score(col, "AP")
    assert ap.shape == (1, n_topics) and ap.sum() == 10.0  # d0 at rank 1 of the ten lists
    assert me.evaluate(col, "AP").query("topic == 'all'").value.item() == pytest.approx(10 / n_topics)


def test_subset_equals_rebuilt_collection():
    qrels, runs = _uneven(1)
    col = me.load_collection(qrels, [runs])
    systems, topics = ["r2", "r0"], [col.topics[i] for i in (7, 3, 30, 5)]
    sub = col.subset(systems, topics)  # in the collection's order, whatever the order named
    assert sub.systems == ["r0", "r2"] and sub.topics == [col.topics[i] for i in (3, 5, 7, 30)]
    for name in MEASURES:
        np.testing.assert_array_equal(me.score(sub, name), me.score(col, name)[np.ix_([0, 2], [3, 5, 7, 30])])


@pytest.mark.parametrize("unjudged", ["nonrel", "remove"])
def test_with_judgments_equals_a_collection_built_from_the_kept_qrels(unjudged):
    qrels, runs = _uneven(2)
    col = me.load_collection(qrels, [runs], unjudged=unjudged)
    rng = np.random.default_rng(0)
    keep = rng.random(len(col.judgments)) < 0.6
    rejudged = col.with_judgments(keep)
    j = col.judgments
    kept = pd.DataFrame({"topic": np.asarray(col.topics)[j.topic[keep]],
                         "docid": col.doc_names.take(j.doc[keep]).to_pylist(), "grade": j.grade[keep]})
    # a topic that loses every judgment leaves the qrels, so it is compared on the topics that remain
    reference = build_collection(read_qrels(kept), read_runs([runs]), unjudged=unjudged)
    t_idx = [col.topics.index(t) for t in reference.topics]
    for name in MEASURES:
        np.testing.assert_allclose(me.score(rejudged, name)[:, t_idx], me.score(reference, name), atol=1e-15,
                                   err_msg=name)


def test_condensed_equals_unjudged_remove():
    qrels, runs = _uneven(3)
    full = me.load_collection(qrels, [runs])
    removed = me.load_collection(qrels, [runs], unjudged="remove")
    condensed = full.condensed()
    np.testing.assert_array_equal(condensed.n_ret, removed.n_ret)
    for name in MEASURES:
        np.testing.assert_allclose(me.score(condensed, name), me.score(removed, name), atol=1e-15, err_msg=name)


def test_with_judgments_checks_its_mask():
    col = me.demo_collection()
    with pytest.raises(me.InputError, match="one entry per judgment"):
        col.with_judgments(np.ones(3, dtype=bool))
