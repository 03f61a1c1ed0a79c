"""Invariants of the measures, checked with hypothesis on random graded rankings."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import meta_eval as me

MAX_GRADE = 3


@st.composite
def graded_lists(draw, min_size=1, max_size=25):
    """(grades of a ranked list, qrels counts per grade) with every retrieved judged doc counted in the qrels."""
    grades = draw(st.lists(st.integers(0, MAX_GRADE), min_size=min_size, max_size=max_size))
    extra = draw(st.lists(st.integers(0, 3), min_size=MAX_GRADE + 1, max_size=MAX_GRADE + 1))
    counts = np.bincount(grades, minlength=MAX_GRADE + 1) + np.array(extra)
    return grades, counts


def g_vectors():
    return st.lists(st.floats(0.0, 1.0), min_size=MAX_GRADE, max_size=MAX_GRADE).filter(
        lambda v: sum(v) > 1e-3).map(lambda v: tuple(np.asarray(v) / sum(v)))


def value(name_or_measure, grades, counts, rel_level=1):
    return float(me.score_lists(name_or_measure, [grades], [counts], rel_level=rel_level)[0])


@settings(max_examples=200, deadline=None)
@given(graded_lists(), st.integers(1, MAX_GRADE))
def test_gap_reduces_to_ap_when_g_is_one_hot(data, t):
    grades, counts = data
    g = tuple(1.0 if j == t else 0.0 for j in range(1, MAX_GRADE + 1))
    assert value(me.make_measure("GAP", g=g), grades, counts) == pytest.approx(value("AP", grades, counts, t), abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(graded_lists(), g_vectors())
def test_ideal_ordering_scores_one(data, g):
    grades, counts = data
    assume(counts[1:].sum() > 0)
    assume(sum(g[j - 1] * counts[j:].sum() for j in range(1, MAX_GRADE + 1)) > 0)  # GAP defined
    ideal = sorted([j for j in range(MAX_GRADE + 1) for _ in range(counts[j])], reverse=True)
    for measure in (me.make_measure("GAP", g=g), "AP", "nDCG", "nDCG(gain=exp)", "Q", "vG", "vS'"):
        assert value(measure, ideal, counts) == pytest.approx(1.0, abs=1e-12), measure
    assert value("nDCG@5", ideal, counts) == pytest.approx(1.0)


@settings(max_examples=300, deadline=None)
@given(graded_lists(min_size=2), g_vectors(), st.data())
def test_demoting_a_better_document_never_raises_gap(data, g, draw):
    grades, counts = data
    i = draw.draw(st.integers(0, len(grades) - 2))
    j = draw.draw(st.integers(i + 1, len(grades) - 1))
    assume(grades[i] > grades[j])
    swapped = list(grades)
    swapped[i], swapped[j] = swapped[j], swapped[i]
    gap = me.make_measure("GAP", g=g)
    assert value(gap, swapped, counts) <= value(gap, grades, counts) + 1e-12
    # with every g_j > 0 the decrease is strict (GAP paper §3)
    if min(g) > 1e-6:
        assert value(gap, swapped, counts) < value(gap, grades, counts)
    for other in ("AP", "nDCG", "ERR"):  # not Q: see test_q_measure_is_not_swap_monotone
        assert value(other, swapped, counts) <= value(other, grades, counts) + 1e-12, other


def test_q_measure_is_not_swap_monotone():
    """Q's blended ratio rewards a relevant document for the gain above it, so demoting one can raise Q.

    Grades 1 at rank 14 and 2 at rank 19 (R = 2, ideal 2, 1): Q = (2/17 + 5/22) / 2 = 0.1725; moving the grade-1
    document to rank 20 gives (3/22 + 5/23) / 2 = 0.1769 (hand-computed from Sakai's definition).
    """
    before = [0] * 20
    before[13], before[18] = 1, 2
    after = list(before)
    after[13], after[19] = 0, 1
    counts = [18, 1, 1]
    assert value("Q", before, counts) == pytest.approx((2 / 17 + 5 / 22) / 2)
    assert value("Q", after, counts) == pytest.approx((3 / 22 + 5 / 23) / 2)
    assert value("Q", after, counts) > value("Q", before, counts)


@settings(max_examples=200, deadline=None)
@given(graded_lists())
def test_ncp_uniform_is_ap_and_first_is_rr(data):
    grades, counts = data
    assert value("NCP", grades, counts) == pytest.approx(value("AP", grades, counts), abs=1e-12)
    assert value("NCP(stop=first)", grades, counts) == pytest.approx(value("RR", grades, counts), abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(graded_lists())
def test_measures_are_bounded(data):
    grades, counts = data
    for name in ("AP", "GAP", "nDCG", "nDCG@10", "Q", "ERR", "nERR", "RBP", "bpref", "P@5", "Rprec", "RR",
                 "vS'", "vD", "vW", "vG", "IPrec11", "NRecall", "NPrecision", "SetF"):
        v = value(name, grades, counts)
        assert -1e-12 <= v <= 1 + 1e-12, (name, v)


@settings(max_examples=100, deadline=None)
@given(graded_lists(), st.integers(1, 30))
def test_cutoff_measures_are_prefix_functions(data, k):
    """X@k depends only on the top k documents."""
    grades, counts = data
    prefix = grades[:k]
    for name in ("P", "nDCG", "AP", "Recall", "Q", "ERR", "RBP", "GAP"):
        m = me.get_measure(f"{name}@{k}")
        assert value(m, grades, counts) == pytest.approx(value(m, prefix, counts), abs=1e-12), name


@settings(max_examples=100, deadline=None)
@given(graded_lists())
def test_q_with_beta_zero_is_ap(data):
    grades, counts = data
    assert value("Q(beta=0)", grades, counts) == pytest.approx(value("AP", grades, counts), abs=1e-12)


def test_vectorised_equals_one_list_at_a_time():
    rng = np.random.default_rng(11)
    lists = [rng.integers(-1, 4, size=int(rng.integers(1, 40))).tolist() for _ in range(40)]
    counts = rng.integers(0, 6, size=(40, 4)) + 1
    for name in ("AP", "GAP", "nDCG@10", "bpref", "Q", "ERR", "vD", "RHL"):
        together = me.score_lists(name, lists, counts)
        alone = [me.score_lists(name, [lst], [c])[0] for lst, c in zip(lists, counts)]
        np.testing.assert_allclose(together, alone, atol=1e-12, err_msg=name)
