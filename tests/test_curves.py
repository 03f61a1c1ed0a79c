"""Curves (meta_eval.measures.curves) against hand-worked examples, trec_eval and brute force."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meta_eval as me
from meta_eval.measures import curves

S1 = [1, 0, 1, 0, 0, 0, 0, 0, 1, 1]  # Manning et al. §8.4 exercise, System 1 (R = 4)
S2 = [0, 1, 0, 0, 1, 1, 1, 0, 0, 0]


def _two():
    return me.Rankings.from_lists([S1, S2], [[6, 4], [6, 4]])


def test_pr_curve_by_hand():
    df = curves.pr_curve(_two(), index={"system": ["S1", "S2"]})
    s1 = df[df.system == "S1"]
    assert s1["rank"].tolist() == list(range(1, 11))
    assert s1.precision.tolist() == pytest.approx([1, 1 / 2, 2 / 3, 2 / 4, 2 / 5, 2 / 6, 2 / 7, 2 / 8, 3 / 9, 4 / 10])
    assert s1.recall.tolist() == pytest.approx([.25, .25, .5, .5, .5, .5, .5, .5, .75, 1])
    # interpolated: max precision at this rank or below
    assert s1.interpolated.tolist() == pytest.approx([1, 2 / 3, 2 / 3, 1 / 2] + [0.4] * 6)


def test_eleven_point_by_hand_and_trec_eval():
    values = curves.interpolated_precision_at(_two())
    assert values[0] == pytest.approx([1, 1, 1, 2 / 3, 2 / 3, 2 / 3, .4, .4, .4, .4, .4])
    assert values[1] == pytest.approx([4 / 7] * 11)
    pytrec_eval = pytest.importorskip("pytrec_eval")
    for grades in (S1, S2):
        qrel = {"q": {f"d{i}": g for i, g in enumerate(grades)}}
        run = {"q": {f"d{i}": float(100 - i) for i in range(len(grades))}}
        res = pytrec_eval.RelevanceEvaluator(qrel, {"iprec_at_recall"}).evaluate(run)["q"]
        ours = curves.interpolated_precision_at(me.Rankings.from_lists([grades], [[6, 4]]))[0]
        want = [res[f"iprec_at_recall_{k / 10:.2f}"] for k in range(11)]
        assert ours == pytest.approx(want, abs=1e-12)


def test_eleven_point_curve_frame():
    df = curves.eleven_point_curve(_two())
    assert list(df.columns) == ["list", "recall", "precision"] and len(df) == 22


def test_roc_and_auc_by_hand():
    auc = curves.roc_auc(_two())
    # pairs (relevant above non-relevant) / (4 * 6): S1 = 6 + 5, S2 = 5 + 3 + 3 + 3
    assert auc == pytest.approx([11 / 24, 14 / 24])
    roc = curves.roc_curve(_two())
    first = roc[roc.list == 0]
    assert (first.fpr.iloc[0], first.tpr.iloc[0]) == (0, 0)
    assert (first.fpr.iloc[-1], first.tpr.iloc[-1]) == (1, 1)
    assert np.all(np.diff(first.fpr) >= 0) and np.all(np.diff(first.tpr) >= 0)


def test_auc_is_mann_whitney_on_complete_rankings():
    rng = np.random.default_rng(5)
    for _ in range(20):
        g = rng.integers(0, 2, 30)
        if g.sum() in (0, 30):
            continue
        r = me.Rankings.from_lists([g])
        pos, neg = np.nonzero(g)[0], np.nonzero(g == 0)[0]
        pairs = (pos[:, None] < neg[None, :]).mean()
        assert curves.roc_auc(r)[0] == pytest.approx(pairs)


def test_roc_with_collection_size():
    # 2 relevant (both retrieved), 3 retrieved non-relevant, 10 non-relevant in the collection
    r = me.Rankings.from_lists([[1, 0, 1, 0, 0]], [[10, 2]])
    df = curves.roc_curve(r, n_nonrel=10)
    assert df.fpr.iloc[-2] == pytest.approx(0.3)
    with pytest.raises(me.InputError):
        curves.roc_curve(r, n_nonrel=1)


def test_vectorised_over_systems_and_topics():
    col = me.demo_collection()
    r = col.rankings
    df = curves.pr_curve(r, index={"system": col.systems, "topic": col.topics})
    assert set(df.columns) >= {"system", "topic", "rank", "recall", "precision"}
    assert len(df) == int(r.n_ret.sum())
    eleven = curves.interpolated_precision_at(r)
    assert eleven.shape == r.shape + (11,)
    assert np.all(np.diff(eleven, axis=-1) <= 1e-12)  # interpolated precision never increases with recall
    assert curves.roc_auc(r).shape == r.shape


def test_graded_pr_sums_to_gap_and_reduces_to_binary():
    rng = np.random.default_rng(11)
    grades = rng.integers(0, 4, (40, 12))
    counts = np.stack([np.bincount(g, minlength=4) for g in grades]) + rng.integers(0, 3, (40, 4))
    r = me.Rankings.from_lists(grades.tolist(), counts)
    for g in [(0.2, 0.3, 0.5), (1.0, 0.0, 0.0), None]:
        pts = curves.graded_pr_points(r, g)
        gap = np.nansum(pts["precision"] * pts["step"], -1)
        want = (me.make_measure("GAP", g=g)(r))
        assert gap == pytest.approx(want, abs=1e-12)
    # binary grades: graded precision/recall are the binary ones at relevant ranks
    b = me.Rankings.from_lists([S1], [[6, 4]])
    g_curve = curves.graded_pr_curve(b)
    pr = curves.pr_curve(b)
    pr = pr[pr.relevant]
    assert g_curve.precision.tolist() == pytest.approx(pr.precision.tolist())
    assert g_curve.recall.tolist() == pytest.approx(pr.recall.tolist())


def test_graded_precision_brute_force():
    grades, counts, g = [2, 0, 1, 2, 1], [3, 2, 2], (0.4, 0.6)
    G = [0, 0.4, 1.0]
    df = curves.graded_pr_curve(me.Rankings.from_lists([grades], [counts]), g=g)
    for row in df.itertuples():
        n, i_n = row.rank, grades[row.rank - 1]
        want = sum(G[min(i_n, grades[m])] for m in range(n) if grades[m] > 0) / (n * G[i_n])
        assert row.precision == pytest.approx(want)
        assert row.recall == pytest.approx(sum(G[x] for x in grades[:n]) / (2 * 0.4 + 2 * 1.0))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 1), min_size=1, max_size=25), st.integers(0, 5))
def test_interpolated_precision_definition(grades, extra):
    """p_interp(r) = max over ranks with recall >= r (brute force)."""
    R = sum(grades) + extra
    r = me.Rankings.from_lists([grades], [[len(grades), R]])
    got = curves.interpolated_precision_at(r, (0.0, 0.25, 0.5, 0.75, 1.0))[0]
    cum = np.cumsum(grades)
    for level, value in zip((0.0, 0.25, 0.5, 0.75, 1.0), got):
        ok = [cum[k] / (k + 1) for k in range(len(grades)) if R > 0 and cum[k] / R >= level - 1e-12]
        assert value == pytest.approx(max(ok, default=0.0))


def test_bad_input():
    with pytest.raises(me.InputError):
        curves.interpolated_precision_at(_two(), (0.5, 1.5))
    with pytest.raises(me.InputError):
        curves.pr_curve(_two(), index={"system": ["only one"]})


def test_core_iprec_agrees_with_interpolated_precision():
    """The textbook rule (recall >= r exactly) is IPrec(cut=ceil); trec_eval 10 rounds r·R instead."""
    r = me.Rankings.from_lists([S1], [[6, 4]])
    core = [me.get_measure(f"IPrec(cut=ceil)@{k / 10}")(r)[0] for k in range(11)]
    assert core == pytest.approx(curves.interpolated_precision_at(r)[0].tolist())
    rounded = [me.get_measure(f"IPrec@{k / 10}")(r)[0] for k in range(11)]
    assert rounded[3] == 1.0 and core[3] == pytest.approx(2 / 3)  # 0.3·4 = 1.2: round -> 1st relevant, ceil -> 2nd
