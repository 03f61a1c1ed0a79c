"""Inferred vs actual PR curves and their RMS error (hand-worked examples)."""

from __future__ import annotations

import numpy as np
import pytest

from meta_eval.core.errors import InputError
from meta_eval.statistics.maxent.curves import (expected_precision_recall, interpolated_precision, pr_error, rms_11pt,
                                  rms_recall_changes)


def test_actual_curve_has_zero_error():
    rel = np.array([[1, 0, 1, 0, 0, 1], [0, 0, 0, 1, 1, 0]], dtype=bool)
    S = rel.astype(float)
    lengths = np.array([6, 5])
    R = np.array([4, 3])
    for align in ("recall", "rank"):
        np.testing.assert_allclose(rms_recall_changes(S, rel, lengths, R, align=align), 0.0, atol=1e-15)
    np.testing.assert_allclose(rms_11pt(S, rel, lengths, R), 0.0, atol=1e-15)


def test_recall_changes_by_hand():
    """List R N R N, inferred S = (0.9, 0.1, 0.5, 0.5) (C = 0.9, 1.0, 1.5, 2.0).

    Actual precision at the two relevant documents (ranks 1 and 3): 1/1 and 2/3.
    Same recall: C reaches 1 at rank 2 (precision 1/2) and 2 at rank 4 (2/4).
    Same rank: C_1/1 = 0.9, C_3/3 = 0.5.
    """
    rel = np.array([[1, 0, 1, 0]], dtype=bool)
    S = np.array([[0.9, 0.1, 0.5, 0.5]])
    by_recall = np.sqrt(((1 - 0.5) ** 2 + (2 / 3 - 0.5) ** 2) / 2)
    by_rank = np.sqrt(((1 - 0.9) ** 2 + (2 / 3 - 0.5) ** 2) / 2)
    assert rms_recall_changes(S, rel, np.array([4]), np.array([2]))[0] == pytest.approx(by_recall, rel=1e-14)
    assert rms_recall_changes(S, rel, np.array([4]), np.array([2]), align="rank")[0] == pytest.approx(by_rank)


def test_recall_alignment_interpolates_fractional_ranks():
    """Actual list R N R: precision 1 and 2/3 at recall 1/2 and 2/2. Inferred S = (0.8, 0.4, 0.8), C = 0.8, 1.2, 2.0:
    C reaches 1 at fractional rank 1 + 0.2/0.4 = 1.5 (precision 1/1.5) and 2 at rank 3 (precision 2/3)."""
    rel = np.array([[1, 0, 1]], dtype=bool)
    S = np.array([[0.8, 0.4, 0.8]])
    want = np.sqrt(((1 - 1 / 1.5) ** 2 + (2 / 3 - 2 / 3) ** 2) / 2)
    assert rms_recall_changes(S, rel, np.array([3]), np.array([2]))[0] == pytest.approx(want, rel=1e-12)


def test_unreached_recall_gets_precision_zero():
    rel = np.array([[1, 1, 0]], dtype=bool)
    S = np.array([[0.5, 0.5, 0.5]])  # C_3 = 1.5 < 2
    want = np.sqrt(((1 - 1 / 2) ** 2 + (1 - 0.0) ** 2) / 2)
    assert rms_recall_changes(S, rel, np.array([3]), np.array([2]))[0] == pytest.approx(want)


def test_no_relevant_document_gives_nan_and_padding_is_ignored():
    rel = np.array([[0, 0, 1, 1]], dtype=bool)  # the relevant documents lie past the list end (length 2)
    assert np.isnan(rms_recall_changes(np.full((1, 4), 0.3), rel, np.array([2]), np.array([2]))[0])
    assert np.isnan(rms_11pt(np.full((1, 4), 0.3), rel, np.array([2]), np.array([2]))[0])


def test_interpolated_precision_trec_rule():
    """IIR Sec. 8.4 rule: precision at recall r = max precision at any rank with recall >= r, 0 if unreached.

    List R N R N N with R = 4: (rec, prec) = (.25, 1), (.25, .5), (.5, .667), (.5, .5), (.5, .4)."""
    prec, rec = expected_precision_recall(np.array([[1.0, 0, 1, 0, 0]]), np.array([4]))
    got = interpolated_precision(prec, rec)[0]
    want = [1, 1, 1, 2 / 3, 2 / 3, 2 / 3, 0, 0, 0, 0, 0]
    np.testing.assert_allclose(got, want)


def test_pr_error_dispatch_and_bad_protocol():
    rel = np.array([[1, 0, 1, 0]], dtype=bool)
    S = np.full((1, 4), 0.5)
    a = pr_error(S, rel, np.array([4]), np.array([2]), protocol="11pt")
    assert a[0] == pytest.approx(rms_11pt(S, rel, np.array([4]), np.array([2]))[0])
    with pytest.raises(InputError):
        pr_error(S, rel, np.array([4]), np.array([2]), protocol="bogus")
    with pytest.raises(InputError):
        rms_recall_changes(S, rel, np.array([4]), np.array([2]), align="bogus")
