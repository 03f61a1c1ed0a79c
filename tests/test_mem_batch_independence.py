"""Issue 15: a list's informativeness result does not depend on the other lists of its batch.

Regression: rows of failed lists (NaN, e.g. a topic with no relevant document) reached a search shared by the whole
batch in the recall-change protocol, ending in an IndexError or in wrong RMS errors for lists marked "ok".
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meta_eval.statistics import maxent as mem
from meta_eval.statistics.maxent.batch import ListBatch
from meta_eval.statistics.maxent.pr_inference import Lists


def _lists(grade_lists, counts):
    batch = ListBatch.from_lists(grade_lists, counts=counts)
    n = batch.n_lists
    return Lists(batch, np.array([f"r{i}" for i in range(n)], dtype=object), np.array(["t"] * n, dtype=object))


def test_issue_minimal_case():
    """qrels t0: a 0; t1: d0 2. The R = 0 list fails (undefined); t1's RMS is 0 in the batch as alone."""
    both = mem.informativeness(_lists([[0], [2]], [[1, 0, 0], [0, 0, 1]]), ["AP"])
    alone = mem.informativeness(_lists([[2]], [[0, 0, 1]]), ["AP"])
    rows = both.lists[both.lists.run == "r1"].rms_error.to_numpy()
    np.testing.assert_allclose(rows, alone.lists.rms_error.to_numpy(), atol=1e-12)
    assert (both.lists[both.lists.run == "r0"].status == 3).all()


@st.composite
def batches(draw):
    n_lists = draw(st.integers(2, 6))
    grade_lists, counts = [], []
    for _ in range(n_lists):
        n = draw(st.integers(1, 12))
        grades = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
        extra = draw(st.lists(st.integers(0, 3), min_size=3, max_size=3))
        c = np.bincount(grades, minlength=3) + np.array(extra)
        if draw(st.booleans()):
            c[1:] = 0  # no relevant document judged: the metric is undefined, the list fails
            grades = [0] * n
        grade_lists.append(grades)
        counts.append(c.tolist())
    return grade_lists, counts


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=batches(), metric=st.sampled_from(["AP", "GAP(g=0.5,0.5)", "nDCG", "RR"]),
       protocol=st.sampled_from(["recall-changes", "11pt"]))
def test_each_list_gets_the_result_it_gets_alone(data, metric, protocol):
    grade_lists, counts = data
    batch = mem.informativeness(_lists(grade_lists, counts), [metric], protocol=protocol).lists
    for i, (g, c) in enumerate(zip(grade_lists, counts)):
        alone = mem.informativeness(_lists([g], [c]), [metric], protocol=protocol).lists
        mine = batch[batch.run == f"r{i}"]
        np.testing.assert_array_equal(mine.status.to_numpy(), alone.status.to_numpy())
        np.testing.assert_allclose(mine.rms_error.to_numpy(), alone.rms_error.to_numpy(), atol=1e-9,
                                   equal_nan=True)
