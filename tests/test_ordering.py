"""Issue 15: the order of lines in a run file never changes a score (except under ``ties="input"``).

Regression: topics not in byte order in the file, with some topics' lines not sorted by score, used to interleave
topic blocks when the unsorted topics were re-sorted, putting documents at the wrong rank.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import meta_eval as me

QRELS = "9 0 a 1\n9 0 b 0\n9 0 e 0\n10 0 c 1\n10 0 d 0\n11 0 f 1\n11 0 g 0\n"
RUN = "9 Q0 b 1 1.0 r\n9 Q0 e 2 1.5 r\n9 Q0 a 3 2.0 r\n10 Q0 c 1 2.0 r\n10 Q0 d 2 1.0 r\n11 Q0 g 1 1.0 r\n11 Q0 f 2 2.0 r\n"


def _write(tmp_path, qrels: str, runs: dict[str, str]):
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "qrels.txt").write_text(qrels)
    paths = []
    for name, text in runs.items():
        path = tmp_path / name
        path.write_text(text)
        paths.append(path)
    return tmp_path / "qrels.txt", paths


def test_issue_minimal_case_matches_trec_eval(tmp_path):
    """The issue's case: trec_eval and pytrec_eval give map 1.0 and P_5 0.2 for every topic."""
    qrels, runs = _write(tmp_path, QRELS, {"run": RUN})
    col = me.load_collection(qrels, runs)
    assert col.topics == ["10", "11", "9"]
    np.testing.assert_array_equal(me.score(col, "AP"), [[1.0, 1.0, 1.0]])
    np.testing.assert_allclose(me.score(col, "P@5"), [[0.2, 0.2, 0.2]])


def test_realistic_case_one_swapped_pair_in_two_topics(tmp_path):
    """50 topics in numeric order, score-sorted except one swapped pair in topics 9 and 15 (topic 15 longer)."""
    qrels, lines = [], []
    for t in range(1, 51):
        n = 30 if t == 15 else 20
        docs = [f"t{t}d{i}" for i in range(n)]
        qrels += [f"{t} 0 {d} {1 if i < 2 else 0}" for i, d in enumerate(docs)]
        rows = [(d, float(n - i)) for i, d in enumerate(docs)]
        if t in (9, 15):
            rows[3], rows[4] = rows[4], rows[3]
        lines += [f"{t} Q0 {d} {i + 1} {s} r" for i, (d, s) in enumerate(rows)]
    q, runs = _write(tmp_path, "\n".join(qrels) + "\n", {"run": "\n".join(lines) + "\n"})
    col = me.load_collection(q, runs)
    np.testing.assert_allclose(me.score(col, "P@10")[0], 0.2)
    np.testing.assert_allclose(me.score(col, "AP")[0], 1.0)


TIES = ("trec_eval", "docid_asc", "rank")


def _all_measures() -> list[me.Measure]:
    out = []
    for fam in me.families():
        if fam.input != "rankings":  # preference measures are ordered by their own collection (test_preferences)
            continue
        try:
            out.append(me.get_measure(fam.name))
        except me.InputError:
            continue
    return out


@st.composite
def shuffled_collections(draw):
    """Qrels and 1-3 runs as TREC text; each run written twice: topics and lines in canonical order, and shuffled."""
    n_topics = draw(st.integers(2, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    qrels, runs = [], []
    for t in range(1, n_topics + 1):
        pool = int(rng.integers(1, 15))
        for d in range(pool):
            if rng.random() < 0.8 or d == 0:
                qrels.append(f"{t} 0 t{t}d{d} {int(rng.integers(0, 3))}")
    for s in range(int(rng.integers(1, 4))):
        blocks = []
        for t in range(1, n_topics + 1):
            if rng.random() < 0.2 and t > 1:
                continue
            n = int(rng.integers(1, 16))
            docs = rng.permutation(20)[:n]
            scores = rng.integers(0, 5, n) / 2  # many ties
            ranks = rng.permutation(n) + 1
            blocks.append([f"{t} Q0 t{t}d{d} {r} {sc} run{s}" for d, r, sc in zip(docs, ranks, scores)])
        canonical = "\n".join(line for block in blocks for line in block) + "\n"
        order = rng.permutation(len(blocks))
        shuffled = "\n".join(line for b in order for line in rng.permutation(blocks[b]).tolist()) + "\n"
        runs.append((canonical, shuffled))
    return "\n".join(qrels) + "\n", runs


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(data=shuffled_collections())
def test_line_and_topic_order_never_change_a_score(tmp_path, data):
    qrels, runs = data
    measures = _all_measures()
    canonical = _write(tmp_path / "a", qrels, {f"run{i}": c for i, (c, _) in enumerate(runs)})
    shuffled = _write(tmp_path / "b", qrels, {f"run{i}": s for i, (_, s) in enumerate(runs)})
    for ties in TIES:
        a = me.load_collection(*canonical, ties=ties)
        b = me.load_collection(*shuffled, ties=ties)
        np.testing.assert_array_equal(a.grades, b.grades, err_msg=ties)
        sa, sb = me.score(a, measures), me.score(b, measures)
        for name in sa:
            np.testing.assert_array_equal(sa[name], sb[name], err_msg=f"{name} ties={ties}")


pytrec_eval = pytest.importorskip("pytrec_eval")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(data=shuffled_collections())
def test_shuffled_files_match_pytrec_eval(tmp_path, data):
    """Differential fuzz against trec_eval's C code on files with topics in random order and unsorted lines."""
    qrels, runs = data
    q_path, paths = _write(tmp_path, qrels, {f"run{i}": s for i, (_, s) in enumerate(runs)})
    col = me.load_collection(q_path, paths, score_precision="float32")
    q = {}
    for line in qrels.splitlines():
        t, _, d, g = line.split()
        q.setdefault(t, {})[d] = int(g)
    evaluator = pytrec_eval.RelevanceEvaluator(q, {"map", "P_5", "recip_rank", "ndcg", "bpref"})
    pairs = {"map": "AP", "P_5": "P@5", "recip_rank": "RR", "ndcg": "nDCG", "bpref": "bpref"}
    ours = me.score(col, list(pairs.values()))
    for s, (_, text) in enumerate(runs):
        r = {}
        for line in text.splitlines():
            t, _, d, _, sc, _ = line.split()
            r.setdefault(t, {})[d] = float(sc)
        for topic, values in evaluator.evaluate(r).items():
            for peer, name in pairs.items():
                assert ours[name][s, col.topics.index(topic)] == pytest.approx(values[peer], abs=1e-12), (name, topic)


def test_input_policy_follows_the_file_order(tmp_path):
    qrels, runs = _write(tmp_path, QRELS, {"run": RUN})
    col = me.load_collection(qrels, runs, ties="input")
    assert col.grades[0, col.topics.index("9"), :3].tolist() == [0, 0, 1]


def test_dataframe_runs_with_topics_out_of_order():
    qrels = pd.DataFrame([line.split() for line in QRELS.splitlines()], columns=["topic", "it", "docid", "grade"])
    run = pd.DataFrame([line.split() for line in RUN.splitlines()],
                       columns=["topic", "q0", "docid", "rank", "score", "run"])
    col = me.load_collection(qrels.astype({"grade": int}), [run])
    np.testing.assert_array_equal(me.score(col, "AP"), [[1.0, 1.0, 1.0]])
