"""GAP paper (Robertson, Kanoulas & Yilmaz 2010) §3 properties and Robertson (2008) NCP."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meta_eval as me
from meta_eval.statistics.metric_properties import (check_ideal_maximum, check_reduces_to_ap, check_swap_monotonicity,
                                  gap_monte_carlo, graded_pr_area, ncp)

lists3 = st.lists(st.integers(0, 3), min_size=1, max_size=12)


def _counts(grades, extra):
    return (np.bincount(grades, minlength=4) + np.asarray(extra)).tolist()


@settings(max_examples=60, deadline=None)
@given(lists3, st.lists(st.integers(0, 2), min_size=4, max_size=4))
def test_reduces_to_ap(grades, extra):
    r = me.Rankings.from_lists([grades], [_counts(grades, extra)])
    assert np.all(check_reduces_to_ap(r) < 1e-12)


@settings(max_examples=60, deadline=None)
@given(lists3, st.lists(st.integers(0, 2), min_size=4, max_size=4),
       st.lists(st.floats(0.05, 1.0), min_size=3, max_size=3))
def test_swap_monotonicity_and_ideal_maximum(grades, extra, weights):
    g = tuple(np.asarray(weights) / np.sum(weights))
    counts = _counts(grades, extra)
    deltas = check_swap_monotonicity(grades, counts, g)
    assert np.all(deltas < 0)  # every g_j > 0: strictly lower
    r = me.Rankings.from_lists([grades], [counts])
    gap, ideal = check_ideal_maximum(r, g)
    assert gap[0] <= ideal[0] + 1e-12
    if sum(counts[1:]) > 0:
        assert ideal[0] == pytest.approx(1.0)


def test_swap_with_zero_mass_does_not_change_gap():
    # g = (1, 0): grades 1 and 2 look the same to every user, so swapping them changes nothing
    deltas = check_swap_monotonicity([2, 1, 0], [1, 1, 1], (1.0, 0.0))
    # pairs (1,2): [1,2,0] same AP; (1,3): [0,1,2] AP = (1/2 + 2/3)/2; (2,3): [2,0,1] AP = (1 + 2/3)/2; base 1
    assert deltas.tolist() == pytest.approx([0.0, (1 / 2 + 2 / 3) / 2 - 1, (1 + 2 / 3) / 2 - 1])


@pytest.mark.parametrize("grades,counts,g,seed", [
    ([3, 0, 2, 1, 0, 2, 0, 0, 1, 0], [6, 3, 3, 2], (0.2, 0.3, 0.5), 1),
    ([1, 2, 0, 0, 2, 1, 0, 1], [4, 4, 3], (0.5, 0.5), 2),
    ([0, 2, 1, 0], [1, 3, 2], (0.9, 0.1), 3),
])
def test_probabilistic_interpretation_monte_carlo(grades, counts, g, seed):
    mc = gap_monte_carlo(grades, counts, g, n_samples=100_000, seed=seed)
    assert mc.within_3se, mc
    assert mc.exact == pytest.approx(me.make_measure("GAP", g=g)(me.Rankings.from_lists([grades], [counts]))[0])


def test_prior_user_sampling_is_not_gap():
    """Drawing the threshold from g alone estimates Σ g_t AP_t, which differs from GAP when the R_t differ."""
    # R_1 = 4, R_2 = 1: GAP = 0.7533, Σ g_t AP_t = 0.8458
    mc = gap_monte_carlo([2, 0, 0, 1, 1, 1], [3, 3, 1], (0.5, 0.5), n_samples=100_000, seed=4, user="prior")
    assert abs(mc.mean - mc.prior_mean) <= 3 * mc.se
    assert abs(mc.mean - mc.exact) > 10 * mc.se


def test_monte_carlo_bad_input():
    with pytest.raises(me.InputError):
        gap_monte_carlo([0, 0], [2, 0], n_samples=100)
    with pytest.raises(me.InputError):
        gap_monte_carlo([1], [0, 1], user="other")


def test_graded_pr_area_by_hand():
    # binary RNR, R = 2: AP = (1 + 2/3)/2; trapezoid from (0, 1): 0.5 * 1 + 0.5 * (1 + 2/3)/2
    area = graded_pr_area(me.Rankings.from_lists([[1, 0, 1]]))
    assert area.gap[0] == pytest.approx((1 + 2 / 3) / 2)
    assert area.area[0] == pytest.approx(0.5 + 0.5 * (1 + 2 / 3) / 2)
    assert area.difference[0] == pytest.approx(area.gap[0] - area.area[0])


def test_graded_pr_area_vectorised_matches_gap():
    col = me.demo_collection()
    area = graded_pr_area(col.rankings, (0.5, 0.5))
    assert area.gap == pytest.approx(me.score(col, "GAP(g=0.5,0.5)"), abs=1e-12)
    assert area.gap.shape == col.rankings.shape


# ----------------------------------------------------------------------------------------- NCP (Robertson 2008)


def test_ncp_special_cases_by_hand():
    r = me.Rankings.from_lists([[1, 0, 1, 0, 0, 1, 0, 0, 0, 1]], [[6, 4]])
    ap = (1 + 2 / 3 + 3 / 6 + 4 / 10) / 4
    assert ncp(r, lambda R: [1 / R] * R)[0] == pytest.approx(ap)
    assert ncp(r, [1.0])[0] == pytest.approx(1.0)
    assert ncp(r, [0.5, 0.25, 0.125, 0.125])[0] == pytest.approx(0.5 + 0.25 * 2 / 3 + 0.125 / 2 + 0.125 * 0.4)
    # an unretrieved relevant document contributes precision 0
    r2 = me.Rankings.from_lists([[0, 1]], [[1, 2]])
    assert ncp(r2, [0.5, 0.5])[0] == pytest.approx(0.25)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 1), min_size=1, max_size=20), st.integers(0, 3))
def test_ncp_uniform_is_ap_and_first_is_rr(grades, extra):
    counts = [[len(grades), sum(grades) + extra]]
    r = me.Rankings.from_lists([grades], counts)
    if sum(grades) + extra == 0:
        return
    assert ncp(r, lambda R: [1 / R] * R)[0] == pytest.approx(me.get_measure("AP")(r)[0], abs=1e-12)
    assert ncp(r, [1.0])[0] == pytest.approx(me.get_measure("RR")(r)[0], abs=1e-12)


def test_ncp_bad_distributions():
    r = me.Rankings.from_lists([[1, 0, 1]], [[1, 2]])
    with pytest.raises(me.InputError):
        ncp(r, [0.5, 0.2])
    with pytest.raises(me.InputError):
        ncp(r, [0.5, 0.25, 0.25])  # mass on a third relevant document, R = 2
    with pytest.raises(me.InputError):
        ncp(r, lambda R: [1.0] * R)
