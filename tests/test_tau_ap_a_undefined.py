"""tau_AP-a is undefined (NaN, counted like tau_b's NaN) when its reference ranking is constant (issue 15)."""

from __future__ import annotations

import numpy as np

from meta_eval.statistics.correlation.rank import kendall_tau_b, tau_ap, tau_ap_a
from meta_eval.statistics.correlation.systems import correlate_systems


def test_constant_reference_is_undefined():
    assert np.isnan(tau_ap_a([1, 1, 1], [2, 2, 2]))  # two constant rankings: was -1
    assert np.isnan(tau_ap_a([1, 1, 1], [1, 2, 3]))  # a constant reference ranks nothing
    assert np.isnan(kendall_tau_b([1, 1, 1], [2, 2, 2]))  # the convention it now shares
    # a constant ranking under evaluation against a real reference: the expectation over tie-breakings is 0
    assert tau_ap_a([1, 2, 3, 4], [5, 5, 5, 5]) == 0.0
    # unchanged where defined: tau_AP without ties, and batched rows keep their own values
    assert np.isclose(tau_ap_a([1, 2, 3, 4], [1, 3, 2, 4]), tau_ap([1, 2, 3, 4], [1, 3, 2, 4]), rtol=0, atol=1e-15)
    out = tau_ap_a(np.array([[1.0, 1, 1], [1, 2, 3]]), np.array([[2.0, 2, 2], [3, 2, 1]]))
    assert np.isnan(out[0]) and out[1] == -1.0


def test_system_correlation_counts_constant_rankings_as_undefined():
    constant = np.ones((4, 6))  # every system scores the same: its ranking is constant
    varying = np.arange(24, dtype=float).reshape(4, 6)
    result = correlate_systems({"A": constant, "B": varying}, n_resamples=20, seed=1)
    rows = result.table.set_index("coefficient")
    assert np.isnan(rows.loc["tau_ap_a(y|x)", "value"])  # x = A, the constant reference
    assert rows.loc["tau_ap_a(y|x)", "n_undefined"] == 20
    assert np.isnan(rows.loc["kendall_tau_b", "value"]) and rows.loc["kendall_tau_b", "n_undefined"] == 20
    assert not (np.asarray(rows.loc["tau_ap_a(y|x)", ["ci_low", "ci_high"]], dtype=float) == -1).any()
