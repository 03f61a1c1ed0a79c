"""Swap deltas of nDCG, AP and GAP: closed forms against brute-force recomputation (the metric of the swapped list
minus the metric of the list, scored by meta-eval's own measures), on random lists with ties, all-equal labels,
padding and relevant documents that were not ranked."""

from __future__ import annotations

import numpy as np
import pytest

from meta_eval import Rankings, get_measure
from meta_eval.statistics.learning_to_rank.swap_deltas import closed_form, general_pair_deltas, general_swap_deltas, pair_deltas, swap_deltas
from meta_eval.model.rankings import PAD

CLOSED = ["nDCG", "nDCG(gain=exp)", "nDCG@5", "nDCG(gain=exp,discount=jk,base=3)@7", "AP", "GAP",
          "GAP(g=0.5,0.5)", "GAP(g=0.2,0.8)", "GAP(g=0,1)"]


def random_lists(seed: int, n_lists: int = 8, n: int = 9, max_grade: int = 2):
    rng = np.random.default_rng(seed)
    grades = rng.integers(0, max_grade + 1, (n_lists, n)).astype(np.int16)
    grades[0] = 1  # all labels equal: every delta is 0
    grades[1] = 0  # no relevant document
    grades[2, 7:] = PAD  # a shorter list
    grades[3, 4:] = PAD
    counts = np.stack([np.bincount(g[g >= 0], minlength=max_grade + 1) for g in grades])
    counts[-1, 1:] += 1  # relevant documents the list does not hold
    return grades, counts


def brute_force(measure, grades, counts, rel_level=1):
    """Plain reference: one list at a time, swap two ranks, score both lists, subtract."""
    m = get_measure(measure)
    n_lists, n = grades.shape
    out = np.zeros((n_lists, n, n))
    for i in range(n_lists):
        g = grades[i][grades[i] >= 0]
        base = m(Rankings.from_lists([g], counts=[counts[i]], rel_level=rel_level))[0]
        for a in range(len(g)):
            for b in range(len(g)):
                if a != b:
                    s = g.copy()
                    s[a], s[b] = s[b], s[a]
                    out[i, a, b] = m(Rankings.from_lists([s], counts=[counts[i]], rel_level=rel_level))[0] - base
    return out


@pytest.mark.parametrize("measure", CLOSED)
@pytest.mark.parametrize("seed", [0, 1])
def test_closed_forms_equal_brute_force(measure, seed):
    assert closed_form(get_measure(measure)) is not None
    grades, counts = random_lists(seed)
    np.testing.assert_allclose(swap_deltas(measure, grades, counts), brute_force(measure, grades, counts),
                               atol=1e-12)


def test_ap_at_higher_relevance_level():
    grades, counts = random_lists(3, max_grade=3)
    np.testing.assert_allclose(swap_deltas("AP", grades, counts, rel_level=2),
                               brute_force("AP", grades, counts, rel_level=2), atol=1e-12)


def test_all_equal_labels_give_zero():
    grades, counts = random_lists(0)
    assert np.all(swap_deltas("GAP", grades[:2], counts[:2]) == 0)


@pytest.mark.parametrize("measure", ["nDCG@5", "GAP", "AP"])
def test_general_path_equals_closed_forms(measure):
    grades, counts = random_lists(5)
    np.testing.assert_allclose(general_swap_deltas(measure, grades, counts), swap_deltas(measure, grades, counts),
                               atol=1e-12)


@pytest.mark.parametrize("measure", ["P@5", "RR", "ERR", "AP@5", "Q"])
def test_general_path_for_any_metric_equals_brute_force(measure):
    assert closed_form(get_measure(measure)) is None
    grades, counts = random_lists(7, n_lists=5, n=8)
    np.testing.assert_allclose(swap_deltas(measure, grades, counts), brute_force(measure, grades, counts),
                               atol=1e-12)


def test_general_path_chunks_and_truncation():
    grades, counts = random_lists(9, n_lists=4, n=10)
    whole = general_pair_deltas("RR", grades, counts, top=3)
    chunked = general_pair_deltas("RR", grades, counts, top=3, cells=25)  # a few lists per chunk
    np.testing.assert_allclose(chunked, whole)
    full = general_pair_deltas("RR", grades, counts)
    np.testing.assert_allclose(whole, full[:, :3])
    np.testing.assert_allclose(pair_deltas("GAP", grades, counts, top=3), pair_deltas("GAP", grades, counts)[:, :3])
