"""Expected values under product distributions: Monte Carlo, the core metric library, gradients, the declared forms
looked up by measure family in the measures' own vocabulary."""

from __future__ import annotations

import numpy as np
import pytest

import meta_eval as me
from meta_eval.core.errors import InputError
from meta_eval.statistics.maxent.batch import ListBatch
from meta_eval.measures.resolver import get_measure
from meta_eval.statistics.maxent.expectations import (LinearForm, declared_form, expectation, observed,
                                                      register_expectation, registered_measures)

# (measure, rel_level): one name for the core library and MEM
MEASURES = [
    ("AP", 1), ("AP", 2), ("GAP(g=0.5,0.5)", 1), ("GAP(g=0.2,0.8)", 1), ("nDCG", 1), ("nDCG(gain=exp)", 1),
    ("nDCG@5", 1), ("nDCG(discount=jk,base=3)@6", 1), ("nDCG(gain=1:3,2:9)", 1), ("DCG@4", 1), ("P@5", 1),
    ("Rprec", 1), ("Rprec", 2), ("RR", 1), ("RR@3", 2), ("ERR", 1), ("Q(beta=1)", 1), ("Q(beta=0.5)", 2),
    ("vG", 1), ("GenAP", 2), ("RBP(p=0.8)", 1), ("RBP(p=0.5)@4", 2), ("Recall@5", 1), ("nERR", 1), ("nERR@5", 1),
    ("nERR(stop=linear)", 1), ("map", 1), ("P_5", 1), ("ndcg_cut_5", 1),
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


@pytest.mark.parametrize("name, rel", MEASURES)
def test_expectation_matches_monte_carlo(samples, name, rel):
    """E[M](P) from the closed form agrees with the mean of the core metric over lists drawn from P (3 SE)."""
    P, lists = samples
    N = P.shape[1]
    batch = ListBatch(np.zeros((1, N), dtype=np.int64), np.array([N]), COUNTS[None])
    exact = expectation(name, batch, rel_level=rel).value(P)[0]
    values = me.score_lists(name, lists, counts=np.broadcast_to(COUNTS, (len(lists), 3)), rel_level=rel)
    se = values.std(ddof=1) / np.sqrt(len(values))
    assert abs(values.mean() - exact) <= 3 * se + 1e-12, (values.mean(), exact, se)


@pytest.mark.parametrize("name, rel", MEASURES)
def test_point_mass_equals_core_metric(name, rel):
    """On a deterministic list the expectation is the metric itself, as computed by the core library."""
    rng = np.random.default_rng(3)
    lists = [rng.integers(0, 3, size=n) for n in (1, 4, 9, 15, 15)]
    counts = np.array([[10, 7, 3], [2, 1, 1], [9, 6, 5], [4, 8, 6], [30, 9, 9]])
    batch = ListBatch.from_lists(lists, counts=counts)
    ours = observed(name, batch, rel_level=rel)
    core = np.array([me.score_lists(name, [g], counts=c[None], rel_level=rel)[0] for g, c in zip(lists, counts)])
    np.testing.assert_allclose(ours, core, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name, rel", MEASURES)
def test_gradient_matches_finite_differences(name, rel):
    rng = np.random.default_rng(11)
    N, K = 8, 3
    P = np.concatenate([_random_P(rng, N, K) for _ in range(2)])
    batch = ListBatch(np.zeros((2, N), dtype=np.int64), np.array([N, N]), np.array([[9, 5, 4], [3, 4, 2]]))
    form = expectation(name, batch, rel_level=rel)
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
        b = expectation("AP", batch, rel_level=rel).value(P)
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
    rhs = w[0] * expectation("AP", batch).value(P)[0] + w[1] * expectation("AP", batch, rel_level=2).value(P)[0]
    assert lhs == pytest.approx(rhs, rel=1e-13)


@pytest.mark.parametrize("spelling, same_as", [("P_10", "P@10"), ("map", "AP"), ("ndcg_cut_5", "nDCG@5"),
                                              ("vG", "GenAP"), ("recall_5", "Recall@5"), ("Recall", "Recall@1000")])
def test_a_form_is_found_by_the_measures_own_vocabulary(spelling, same_as):
    """A trec_eval spelling, an alias or a default cutoff reaches the form of the measure it names, built from that
    measure's parameters: the same values as the canonical name's."""
    batch = ListBatch.from_lists([[1, 0, 2, 1, 0, 0, 2], [0, 0, 1]], counts=[[9, 5, 4], [3, 2, 1]])
    np.testing.assert_array_equal(observed(spelling, batch), observed(same_as, batch))


@pytest.mark.parametrize("name", ["GAP@5", "AP@10", "RBP(graded=true)", "Q(gain=exp)", "bpref", "IPrec@0.5"])
def test_no_declared_form_where_the_form_does_not_cover_the_measure(name):
    """A family without a form, or a parameter away from its default that the form does not take: no declared form
    (MEM then derives, identifies or samples one)."""
    assert declared_form(get_measure(name)) is None
    assert declared_form(get_measure(name.split("@")[0].split("(")[0])) is not None or name in ("bpref", "IPrec@0.5")


def test_unknown_measure_and_bad_parameters_are_input_errors():
    batch = ListBatch.from_lists([[1, 0, 2]])
    with pytest.raises(InputError, match="no expected-value form"):
        expectation("bpref", batch)
    with pytest.raises(InputError, match="does not sum to 1"):
        expectation("GAP(g=0.5,0.6)", batch)
    with pytest.raises(InputError, match="no parameter 'foo'"):
        expectation("AP(foo=1)", batch)
    with pytest.raises(InputError, match="rel_level must lie in 1..2"):
        expectation("AP", batch, rel_level=3)
    with pytest.raises(InputError, match="AP has no parameter 'rel'"):
        expectation("AP(rel=2)", batch)  # the relevance threshold is rel_level, not a parameter of AP


def test_user_metric_declares_its_form_once():
    """A user metric registered with a linear form gets expectations (and MEM, see test_mem_solver), keyed by its
    family's name, built from its own parameters (its cutoff k) and the relevance threshold."""

    @me.register("TestHits", cutoff=me.Param("k", 10, int, "rank cutoff", within="[1, inf)"))
    def hits(r, k):
        """Relevant documents in the top k."""
        return r.count_at(r.cum_relevant(), k).astype(float)

    @register_expectation("testhits")  # family names are case-insensitive
    def _hits(batch, k=10, rel_level=1):
        coef = (np.arange(batch.depth) < k)[None, :, None] * (np.arange(batch.n_grades) >= rel_level)[None, None, :]
        return LinearForm(np.broadcast_to(coef, (batch.n_lists, batch.depth, batch.n_grades)).astype(float))

    assert "testhits" in registered_measures()
    lists, counts = [[1, 0, 2, 1], [0, 0, 1, 0]], [[3, 3, 2], [3, 3, 2]]
    batch = ListBatch.from_lists(lists, counts=counts)
    for rel in (1, 2):
        core = [me.score_lists("TestHits@3", [g], counts=[c], rel_level=rel)[0] for g, c in zip(lists, counts)]
        np.testing.assert_array_equal(observed("TestHits@3", batch, rel_level=rel), core)
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


@pytest.mark.parametrize("channels", [0, 1, 3])
def test_pairwise_kernel_matches_its_formula(channels):
    """The compiled pairwise form (value and gradient, on some of its lists) against its formula written plainly:
    channels whose U and V are equal (weighed once), differ, or leave out grades (their passes skipped), and a form
    with no channel at all (A alone)."""
    from meta_eval.statistics.maxent.expectations import PairwiseForm

    rng = np.random.default_rng(channels)
    L, N, K = 4, 9, 3
    A = rng.random((L, N, K))
    W = rng.random((L, channels, N))
    U = rng.random((L, channels, K)) * (rng.random((L, channels, K)) > 0.3)
    V = U.copy()
    if channels > 1:
        V[:, 1] = rng.random((L, K))  # a channel whose V is not its U
        U[:, 2, :2] = V[:, 2, :2] = 0.0  # a channel over the top grade only
    P = np.concatenate([_random_P(rng, N, K) for _ in range(L)])
    rows = np.array([2, 0, 3])
    form = PairwiseForm(A, W, U, V).take(rows)
    value, grad = form.value_and_grad(P[: rows.size])
    for i, s in enumerate(rows):
        p = P[i]
        u = p @ U[s].T  # (N, channels)
        v = p @ V[s].T
        before = np.cumsum(v, axis=0) - v  # sum over m < n
        after = np.cumsum((W[s].T * u)[::-1], axis=0)[::-1] - W[s].T * u  # sum over k > n of W u
        assert value[i] == pytest.approx(np.sum(A[s] * p) + np.sum(W[s].T * u * before), rel=1e-13)
        expected = A[s] + (W[s].T * before) @ U[s] + after @ V[s]
        np.testing.assert_allclose(grad[i], expected, rtol=1e-13, atol=1e-15)
