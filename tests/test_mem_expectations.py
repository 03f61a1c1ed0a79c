"""Expected values under product distributions: Monte Carlo, the core metric library, gradients, the registry."""

from __future__ import annotations

import numpy as np
import pytest

import meta_eval as me
from meta_eval.core.errors import InputError
from meta_eval.statistics.maxent.batch import ListBatch
from meta_eval.statistics.maxent.expectations import (LinearForm, expectation, observed, parse_measure, register_expectation,
                                        registered_measures)

# (MEM name, core name, rel_level for the core call)
MEASURES = [
    ("AP", "AP", 1), ("AP(rel=2)", "AP", 2), ("GAP(g=0.5,0.5)", "GAP(g=0.5,0.5)", 1),
    ("GAP(g=0.2,0.8)", "GAP(g=0.2,0.8)", 1), ("nDCG", "nDCG", 1), ("nDCG(gain=exp)", "nDCG(gain=exp)", 1),
    ("nDCG@5", "nDCG@5", 1), ("P@5", "P@5", 1), ("Rprec", "Rprec", 1), ("RR", "RR", 1), ("ERR", "ERR", 1),
    ("Q(beta=1)", "Q(beta=1)", 1), ("vG", "vG", 1), ("RBP(p=0.8)", "RBP(p=0.8)", 1), ("recall@5", "recall@5", 1),
    ("nERR", "nERR", 1), ("nERR@5", "nERR@5", 1), ("nERR(stop=linear)", "nERR(stop=linear)", 1),
]
COUNTS = np.array([20, 6, 4])


def _random_P(rng, N, K):
    P = rng.dirichlet(np.full(K, 0.7), size=N)
    return P[None]


@pytest.fixture(scope="module")
def samples():
    rng = np.random.default_rng(7)
    N, K, B = 10, 3, 60_000
    P = _random_P(rng, N, K)
    u = rng.random((B, N, 1))
    lists = (u > np.cumsum(P[0], axis=1)[None]).sum(2)  # inverse-CDF draw of each rank's grade
    return P, lists


@pytest.mark.parametrize("mem_name, core_name, rel", MEASURES)
def test_expectation_matches_monte_carlo(samples, mem_name, core_name, rel):
    """E[M](P) from the closed form agrees with the mean of the core metric over lists drawn from P (3 SE)."""
    P, lists = samples
    N = P.shape[1]
    batch = ListBatch(np.zeros((1, N), dtype=np.int64), np.array([N]), COUNTS[None])
    exact = expectation(mem_name, batch).value(P)[0]
    values = me.score_lists(core_name, lists, counts=np.broadcast_to(COUNTS, (len(lists), 3)), rel_level=rel)
    se = values.std(ddof=1) / np.sqrt(len(values))
    assert abs(values.mean() - exact) <= 3 * se + 1e-12, (values.mean(), exact, se)


@pytest.mark.parametrize("mem_name, core_name, rel", MEASURES)
def test_point_mass_equals_core_metric(mem_name, core_name, rel):
    """On a deterministic list the expectation is the metric itself, as computed by the core library."""
    rng = np.random.default_rng(3)
    lists = [rng.integers(0, 3, size=n) for n in (1, 4, 9, 15, 15)]
    counts = np.array([[10, 7, 3], [2, 1, 1], [9, 6, 5], [4, 8, 6], [30, 9, 9]])
    batch = ListBatch.from_lists(lists, counts=counts)
    ours = observed(mem_name, batch)
    core = np.array([me.score_lists(core_name, [g], counts=c[None], rel_level=rel)[0] for g, c in zip(lists, counts)])
    np.testing.assert_allclose(ours, core, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", [m for m, _, _ in MEASURES])
def test_gradient_matches_finite_differences(name):
    rng = np.random.default_rng(11)
    N, K = 8, 3
    P = np.concatenate([_random_P(rng, N, K) for _ in range(2)])
    batch = ListBatch(np.zeros((2, N), dtype=np.int64), np.array([N, N]), np.array([[9, 5, 4], [3, 4, 2]]))
    form = expectation(name, batch)
    g = form.grad(P)
    h = 1e-6
    num = np.zeros_like(P)
    for n in range(N):
        for k in range(K):
            E = np.zeros_like(P)
            E[:, n, k] = h
            num[:, n, k] = (form.value(P + E) - form.value(P - E)) / (2 * h)
    np.testing.assert_allclose(g, num, atol=1e-7)


def test_gap_reduces_to_ap_at_each_threshold():
    """GAP with g = e_l is AP at threshold l, also in expectation (GAP paper Sec. 3)."""
    rng = np.random.default_rng(5)
    P = np.concatenate([_random_P(rng, 12, 3) for _ in range(3)])
    batch = ListBatch(np.zeros((3, 12), dtype=np.int64), np.full(3, 12), np.array([[5, 4, 3], [1, 1, 1], [8, 2, 6]]))
    for g, rel in (((1, 0), 1), ((0, 1), 2)):
        a = expectation(f"GAP(g={g[0]},{g[1]})", batch).value(P)
        b = expectation(f"AP(rel={rel})", batch).value(P)
        np.testing.assert_allclose(a, b, rtol=1e-13)


def test_gap_is_weighted_mean_of_thresholded_aps_in_expectation():
    """methods.md Sec. 2.2 identity GAP = sum_l w_l AP^(l), w_l = g_l R^(l) / sum g R, holds for E[.] too."""
    rng = np.random.default_rng(9)
    P = _random_P(rng, 15, 3)
    counts = np.array([[7, 5, 4]])
    batch = ListBatch(np.zeros((1, 15), dtype=np.int64), np.array([15]), counts)
    g = np.array([0.3, 0.7])
    Rl = np.array([counts[0, 1:].sum(), counts[0, 2]])
    w = g * Rl / (g * Rl).sum()
    lhs = expectation("GAP(g=0.3,0.7)", batch).value(P)[0]
    rhs = w[0] * expectation("AP(rel=1)", batch).value(P)[0] + w[1] * expectation("AP(rel=2)", batch).value(P)[0]
    assert lhs == pytest.approx(rhs, rel=1e-13)


def test_parse_measure_names():
    s = parse_measure("GAP(g=0.5,0.5)")
    assert s.base == "GAP" and s.params == {"g": (0.5, 0.5)} and s.cutoff is None
    s = parse_measure("nDCG(gain=exp)@10")
    assert s.base == "nDCG" and s.params == {"gain": "exp"} and s.cutoff == 10
    assert parse_measure("P_10") == parse_measure("P@10")
    assert parse_measure("map").base == "AP"
    with pytest.raises(InputError):
        parse_measure("GAP(0.5)")


def test_unknown_measure_and_bad_parameters_are_input_errors():
    batch = ListBatch.from_lists([[1, 0, 2]])
    with pytest.raises(InputError, match="no expected-value form"):
        expectation("bpref", batch)
    with pytest.raises(InputError, match="summing to 1"):
        expectation("GAP(g=0.5,0.6)", batch)
    with pytest.raises(InputError, match="bad parameters"):
        expectation("AP(foo=1)", batch)
    with pytest.raises(InputError):
        expectation("P", batch)  # needs a cutoff


def test_user_metric_declares_its_form_once():
    """A user metric registered with a linear form gets expectations (and MEM, see test_mem_solver)."""

    @register_expectation("TestHits")
    def _hits(batch, cutoff=None, rel=1):
        k = cutoff or batch.depth
        coef = (np.arange(batch.depth) < k)[None, :, None] * (np.arange(batch.n_grades) >= rel)[None, None, :]
        return LinearForm(np.broadcast_to(coef, (batch.n_lists, batch.depth, batch.n_grades)).astype(float))

    assert "TestHits" in registered_measures()
    batch = ListBatch.from_lists([[1, 0, 2, 1], [0, 0, 1, 0]], counts=[[3, 3, 2]])
    np.testing.assert_array_equal(observed("TestHits@3", batch), [2, 1])


@pytest.mark.parametrize("name", ["RR", "ERR"])
def test_cascade_gradient_when_a_rank_is_surely_relevant(name):
    """A rank with P(relevant) = 1 zeroes the survival product: the gradient takes the recursive path."""
    rng = np.random.default_rng(2)
    N, K = 7, 3
    P = np.concatenate([_random_P(rng, N, K) for _ in range(2)])
    P[0, 2] = [0.0, 1.0, 0.0] if name == "RR" else [0.0, 0.0, 1.0]
    batch = ListBatch(np.zeros((2, N), dtype=np.int64), np.array([N, N]), np.array([[9, 5, 4], [3, 4, 2]]))
    form = expectation(name, batch)
    if name == "ERR":  # ERR's top grade stops the user with probability 3/4 only; force y = 1 by hand
        form = type(form)(form.w, np.ones_like(form.a), np.array([[0.0, 0.0, 1.0]] * 2))
    # E is linear in each single entry, so a one-sided difference (staying inside [0, 1]) is exact up to rounding
    h = 1e-6
    num = np.zeros_like(P)
    for n in range(N):
        for k in range(K):
            E = np.zeros_like(P)
            E[:, n, k] = np.where(P[:, n, k] < 0.5, h, -h)
            num[:, n, k] = (form.value(P + E) - form.value(P)) / E[:, n, k]
    np.testing.assert_allclose(form.grad(P), num, atol=1e-7)
