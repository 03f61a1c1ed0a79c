"""trec_eval's measures beyond the classic set (infAP, G, binG, Rndcg, ndcg_rel, utility, relative_P, set_map,
set_relative_P, num_nonrel_judged_ret, unj, rbp_resid, the -c num_rel summary) and ir_measures' Judged@k.

References: plain Python transcriptions of trec_eval 10's per-topic loops (``m_*.c``: one list at a time, the
same branches), hand-worked examples, ir_measures for Judged@k. trec_eval's own suite and pytrec_eval are compared
in ``test_trec_eval_suite.py`` and ``test_pytrec_eval.py``.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meta_eval as me
from meta_eval.model.rankings import JUDGED_NEG, UNJUDGED

# ----------------------------------------------------------------------------------------------- references


def _gains(counts, gain_map):
    """trec_eval's setup_gains: (level, gain, count) for the topic's levels, sorted by gain (ascending)."""
    levels = {g: (float(g), c) for g, c in enumerate(counts)}
    for g, value in (gain_map or {}).items():
        levels[g] = (value, counts[g] if g < len(counts) else 0)
    return sorted(((g, v, c) for g, (v, c) in levels.items()), key=lambda x: x[1])


def _gain_of(grade, gains):
    return next((v for g, v, _ in gains if g == grade), 0.0)


def ref_infap(grades, counts, level=1):
    rel = non = unj = 0
    total = 0.0
    for j, g in enumerate(grades):
        if g == UNJUDGED:
            continue
        if g == JUDGED_NEG:
            unj += 1
            continue
        if 0 <= g < level:
            non += 1
            continue
        rel += 1
        if j == 0:
            total += 1.0
        else:
            total += 1.0 / (j + 1) + (j / (j + 1)) * ((rel - 1 + non + unj) / j) * (
                (rel - 1 + 1e-5) / (rel - 1 + non + 2e-5))
    R = sum(counts[level:])
    return total / R if R else total


def ref_g(grades, counts, gain_map=None):
    gains = _gains(counts, gain_map)
    cur = len(gains) - 1
    ideal = gains[cur][1] if cur >= 0 else 0.0
    at_level = 0
    result_g = sum_res = sum_ideal = sum_cost = 0.0
    i = 0
    while i < len(grades) and ideal > 0:
        rg = _gain_of(grades[i], gains)
        sum_res += rg
        at_level += 1
        while cur >= 0 and at_level > gains[cur][2]:
            at_level, cur = 1, cur - 1
            ideal = gains[cur][1] if cur >= 0 else 0.0
        if ideal > 0:
            sum_ideal += ideal
        sum_cost += max(ideal, 1.0)
        if rg != 0:
            result_g += rg / math.log2(2 + sum_cost - sum_res)
        i += 1
    while i < len(grades):
        rg = _gain_of(grades[i], gains)
        sum_res += rg
        sum_cost += 1.0
        if rg != 0:
            result_g += rg / math.log2(2 + sum_cost - sum_res)
        i += 1
    while ideal > 0:
        at_level += 1
        while cur >= 0 and at_level > gains[cur][2]:
            at_level, cur = 1, cur - 1
            ideal = gains[cur][1] if cur >= 0 else 0.0
        if ideal > 0:
            sum_ideal += ideal
    return result_g / sum_ideal if sum_ideal > 0 else 0.0


def ref_rndcg(grades, counts, gain_map=None, level=1):
    gains = _gains(counts, gain_map)
    if sum(counts[level:]) == 0:
        return 0.0
    cur = len(gains) - 1
    ideal = gains[cur][1] if cur >= 0 else 0.0
    old, at_level, points, total = ideal, 0, 0, 0.0
    dcg = idcg = 0.0
    i = 0
    while i < len(grades) and ideal > 0:
        rg = _gain_of(grades[i], gains)
        at_level += 1
        while cur >= 0 and at_level > gains[cur][2]:
            at_level, cur = 1, cur - 1
            ideal = gains[cur][1] if cur >= 0 else 0.0
        if old != ideal:
            if idcg > 0:
                total, points = total + dcg / idcg, points + 1
            old = ideal
        if rg != 0:
            dcg += rg / math.log2(i + 2)
        if ideal > 0:
            idcg += ideal / math.log2(i + 2)
        i += 1
    if i < len(grades):
        while i < len(grades):
            rg = _gain_of(grades[i], gains)
            if rg != 0:
                dcg += rg / math.log2(i + 2)
            i += 1
        if idcg > 0:
            total, points = total + dcg / idcg, points + 1
    while ideal > 0:
        at_level += 1
        while cur >= 0 and at_level > gains[cur][2]:
            at_level, cur = 1, cur - 1
            ideal = gains[cur][1] if cur >= 0 else 0.0
        if old != ideal:
            if idcg > 0:
                total, points = total + dcg / idcg, points + 1
            old = ideal
        if ideal > 0:
            idcg += ideal / math.log2(i + 2)
        i += 1
    return total / points if points else 0.0  # trec_eval divides 0 by 0 here (prints nan); meta-eval says 0


def ref_ndcg_rel(grades, counts, gain_map=None):
    gains = _gains(counts, gain_map)
    cur = len(gains) - 1
    ideal = gains[cur][1] if cur >= 0 else 0.0
    at_level = n_rel = n_rel_ret = 0
    dcg = idcg = total = 0.0
    i = 0
    while i < len(grades) and ideal > 0:
        rg = _gain_of(grades[i], gains)
        if rg != 0:
            dcg += rg / math.log2(i + 2)
        at_level += 1
        while cur >= 0 and at_level > gains[cur][2]:
            at_level, cur = 1, cur - 1
            ideal = gains[cur][1] if cur >= 0 else 0.0
        if ideal > 0:
            n_rel += 1
            idcg += ideal / math.log2(i + 2)
        if rg > 0:
            total, n_rel_ret = total + dcg / idcg, n_rel_ret + 1
        i += 1
    while i < len(grades):
        rg = _gain_of(grades[i], gains)
        if rg != 0:
            dcg += rg / math.log2(i + 2)
        if rg > 0:
            total, n_rel_ret = total + dcg / idcg, n_rel_ret + 1
        i += 1
    while ideal > 0:
        at_level += 1
        while cur >= 0 and at_level > gains[cur][2]:
            at_level, cur = 1, cur - 1
            ideal = gains[cur][1] if cur >= 0 else 0.0
        if ideal > 0:
            n_rel += 1
            idcg += ideal / math.log2(i + 2)
        i += 1
    if idcg > 0:
        total += (n_rel - n_rel_ret) * dcg / idcg
    return total / n_rel if total > 0 else 0.0


def ref_bing(grades, counts, level=1):
    rel, total = 0, 0.0
    for i, g in enumerate(grades):
        if g >= level:
            rel += 1
            total += 1 / math.log2(3 + i - rel)
    return total / sum(counts[level:]) if rel else 0.0


def ref_unj(grades, k):
    return sum(g in (UNJUDGED, JUDGED_NEG) for g in grades[:k]) / k


def ref_rbp_resid(grades, p=0.9):
    unj, total, cur = 0, 0.0, 1.0
    for g in grades:
        if g < 0:
            unj += 1
            total += cur
        cur *= p
    return cur + (1 - p) * total if unj else 0.0


# ----------------------------------------------------------------------------------------------- random lists


@st.composite
def judged_lists(draw):
    """Lists with unjudged (-1) and pooled-unjudged (-2) documents, consistent per-topic grade counts."""
    top = draw(st.integers(1, 4))
    n_lists = draw(st.integers(1, 4))
    lists, counts = [], []
    for _ in range(n_lists):
        grades = draw(st.lists(st.integers(-2, top), min_size=1, max_size=12))
        extra = draw(st.lists(st.integers(0, 3), min_size=top + 1, max_size=top + 1))  # judged, not retrieved
        c = [sum(1 for g in grades if g == v) + e for v, e in enumerate(extra)]
        lists.append(grades)
        counts.append(c)
    gain_map = draw(st.one_of(st.none(), st.dictionaries(st.integers(0, top), st.sampled_from([0.0, 1.0, 3.0, 9.0]),
                                                          min_size=1, max_size=2)))
    return lists, counts, gain_map


def _score(name, lists, counts, level=1):
    return me.score_lists(name, lists, counts=counts, rel_level=level)


def _trimmed(counts):
    """The topic's levels as trec_eval sees them: up to its highest grade with a judgment."""
    top = max((g for g, c in enumerate(counts) if c), default=0)
    return counts[: top + 1]


@settings(max_examples=150, deadline=None)
@given(judged_lists(), st.integers(1, 3))
def test_trec_eval_loops(data, level):
    lists, counts, gain_map = data
    spec = "" if gain_map is None else "(gain=" + ",".join(f"{g}:{v:g}" for g, v in gain_map.items()) + ")"
    for name, ref in (("G", ref_g), ("Rndcg", None), ("nDCG_rel", ref_ndcg_rel)):
        got = _score(name + spec, lists, counts, level)
        for i, (grades, c) in enumerate(zip(lists, counts)):
            want = ref_rndcg(grades, _trimmed(c), gain_map, level) if ref is None else ref(grades, _trimmed(c),
                                                                                         gain_map)
            assert got[i] == pytest.approx(want, abs=1e-12), (name + spec, grades, c)
    for name, ref in (("infAP", ref_infap), ("binG", ref_bing)):
        got = _score(name, lists, counts, level)
        for i, (grades, c) in enumerate(zip(lists, counts)):
            assert got[i] == pytest.approx(ref(grades, c, level), abs=1e-12), (name, grades, c)
    for k in (1, 3, 20):
        got = _score(f"unj_{k}", lists, counts, level)
        assert got == pytest.approx([ref_unj(g, k) for g in lists], abs=0)
    got = _score("rbp_resid", lists, counts, level)
    assert got == pytest.approx([ref_rbp_resid(g) for g in lists], abs=1e-15)


def test_hand_worked_examples():
    # ranks: rel(2) nonpool nonrel pooled-unjudged rel(1); qrels: grades 0..2 with counts 1, 2, 1 (R = 3)
    grades, counts = [[2, UNJUDGED, 0, JUDGED_NEG, 1]], [[1, 2, 1]]
    s = lambda name: float(_score(name, grades, counts)[0])  # noqa: E731
    # infAP: rank 1 -> 1; rank 5 (j=4, a=1, n=1, u=1): 1/5 + (4/5)(3/4)((1+e)/(2+2e)) = 0.2 + 0.6 * 0.5
    assert s("infAP") == pytest.approx((1 + 0.2 + 0.6 * (1 + 1e-5) / (2 + 2e-5)) / 3, abs=1e-15)
    assert s("binG") == pytest.approx((1 / math.log2(2) + 1 / math.log2(2 + 3)) / 3)
    assert s("RelP@2") == 1 / 2 and s("RelP@5") == 2 / 3  # C(k) / min(k, R)
    assert s("SetRelP") == 2 / 3 and s("SetAP") == pytest.approx(2 * 2 / (5 * 3))
    assert s("NumNonrelJudgedRet") == 1
    assert s("Utility") == 2 - 3 and s("utility_2,-1,0,0") == 4 - 3
    assert s("Utility(a=1,b=0,c=0,d=1,N=100)") == 2 + (100 + 2 - 5 - 3)
    assert s("Judged@2") == 1 / 2 and s("Judged") == 4 / 5 and s("unj_2") == 1 / 2 and s("unj_10") == 2 / 10
    # G: gains 2, 0, 0, 0, 1; ideal 2, 1, 1; cost 2, 3, 4, 5, 6; cg 2, 2, 2, 2, 3
    assert s("G") == pytest.approx((2 / math.log2(2 + 2 - 2) + 1 / math.log2(2 + 6 - 3)) / 4)


def test_rbp_resid_alias_has_trec_eval_semantics():
    judged = [[1, 0, 2]]
    assert _score("rbp_resid", judged, [[5, 3, 2]])[0] == 0.0  # trec_eval 10 prints 0: nothing unjudged
    assert _score("RBP_resid(p=0.9)", judged, [[5, 3, 2]])[0] == pytest.approx(0.9**3)  # textbook: p^n remains
    assert _score("rbp_resid", [[1, UNJUDGED, 2]], [[5, 3, 2]])[0] == pytest.approx(0.9**3 + 0.1 * 0.9)


def test_num_rel_summary_under_c_and_l2_is_trec_evals():
    qrels = pd.DataFrame([("1", "a", 2), ("1", "b", 1), ("1", "c", 0), ("2", "d", 2), ("2", "e", 1), ("2", "f", 1),
                          ("3", "g", 3)], columns=["topic", "docid", "grade"])
    run = pd.DataFrame([("r", "1", "a", 2.0), ("r", "1", "c", 1.0)], columns=["run", "topic", "docid", "score"])
    complete = me.load_collection(qrels, [run], rel_level=2, missing="zero")  # trec_eval -c -l2
    df = me.evaluate(complete, ["num_rel", "NumRel"])
    assert df[~df.summary & (df.measure == "num_rel")].value.tolist() == [1, 1, 1]  # R at level 2, per topic
    assert df[df.summary].set_index("measure").value.to_dict() == {"num_rel": 6, "NumRel": 3}  # grade > 0: 6
    skipped = me.load_collection(qrels, [run], rel_level=2, missing="skip")  # trec_eval -l2: topic 1 only
    assert me.evaluate(skipped, "num_rel").query("summary").value.item() == 1


def test_judged_matches_ir_measures():
    ir_measures = pytest.importorskip("ir_measures")
    rng = np.random.default_rng(3)
    qrels, run = [], []
    for t in range(6):
        for d in range(15):
            if rng.random() < 0.6:
                qrels.append(ir_measures.Qrel(str(t), f"d{d}", int(rng.integers(-1, 3))))
            if rng.random() < 0.7:
                run.append(ir_measures.ScoredDoc(str(t), f"d{d}", float(rng.integers(0, 5))))
    measures = [ir_measures.parse_measure(f"Judged@{k}") for k in (1, 5, 10, 100)]
    peer = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)}
    q = pd.DataFrame({"topic": [x.query_id for x in qrels], "docid": [x.doc_id for x in qrels],
                      "grade": [x.relevance for x in qrels]})
    r = pd.DataFrame({"run": "r", "topic": [x.query_id for x in run], "docid": [x.doc_id for x in run],
                      "score": [x.score for x in run]})
    col = me.load_collection(q, [r], ties="docid_asc")  # ir_measures orders ties by docid ascending
    for k in (1, 5, 10, 100):
        ours = me.score(col, f"Judged@{k}")[0]
        for t, topic in enumerate(col.topics):
            if (topic, f"Judged@{k}") in peer:
                assert ours[t] == pytest.approx(peer[(topic, f"Judged@{k}")], abs=1e-15)
