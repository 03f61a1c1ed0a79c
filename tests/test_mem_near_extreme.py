"""MEM near an attainable extreme: ERR lists within 1e-6 to 1e-12 of their maximum, solved and checked against the
KKT conditions with ERR's gradient written out here; the stationarity residual, which leaves out the entries of
negligible probability, against a plain numpy version."""

from __future__ import annotations

import numpy as np
import pytest

from meta_eval.statistics.maxent._iteration import ACTIVE, logit_step
from meta_eval.statistics.maxent.batch import ListBatch
from meta_eval.statistics.maxent.expectations import expectation
from meta_eval.statistics.maxent.result import OK
from meta_eval.statistics.maxent.solver import _attainable, solve_mem

TOL = 1e-10  # the solver's default metric tolerance


def _near_maximum(heads, counts, seed):
    """Lists of 1,000 documents starting with ``heads`` (mostly top-grade documents: ERR within 1e-6 to 1e-12 of
    its maximum), the rest of the grade counts shuffled behind them."""
    rng = np.random.default_rng(seed)
    counts = np.asarray(counts)
    lists = []
    for head in heads:
        left = counts - np.bincount(head, minlength=len(counts))
        lists.append(np.r_[head, rng.permutation(np.repeat(np.arange(len(counts)), left))])
    return ListBatch.from_lists(lists, counts=[counts] * len(lists))


def _err_gradient(P, stop):
    """dE/dp_n(j) of E[ERR] = sum_n (1/n) x_n prod_{m<n} (1 - x_m), x_n = stop . p_n (Chapelle et al. 2009):
    stop_j [surv_n / n - sum_{k>n} (1/k) x_k surv_k / (1 - x_n)]."""
    x = P @ stop
    w = 1.0 / np.arange(1, len(x) + 1)
    surv = np.concatenate([[1.0], np.cumprod(1.0 - x)[:-1]])
    later = np.concatenate([np.cumsum((w * x * surv)[::-1])[::-1][1:], [0.0]])
    return (surv * w - later / (1.0 - x))[:, None] * stop[None, :]


# three grades: the first non-top-grade document at rank 9 .. 17 (the cap on the matched multiplier, 1e9, left the
# lists within 1e-10 of the maximum unsolved); four grades: heads of synthetic lists that failed before (the
# stationarity test then read the logits of entries of probability e^-1e9, which only carry rounding noise)
CASES = {
    "grades 0-2": ([np.r_[np.full(k, 2), 0] for k in (8, 10, 12, 13, 14, 15, 16)], [941, 17, 42]),
    "grades 0-3": ([np.array(h) for h in ([3, 3, 3, 3, 3, 3, 0, 3, 2, 3, 3, 2, 0, 0, 3],
                                          [3, 3, 3, 3, 3, 3, 0, 3, 3, 3, 3, 0, 3, 3, 3],
                                          [3, 3, 3, 3, 3, 3, 1, 3, 3, 3, 3, 3, 3, 2, 0],
                                          [3, 3, 3, 3, 3, 3, 3, 3, 0, 3, 3, 3, 3, 3, 1],
                                          [3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 3, 3, 1, 3, 2])], [800, 90, 65, 45]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_err_near_its_maximum_converges_to_a_kkt_point(case):
    heads, counts = CASES[case]
    batch = _near_maximum(heads, counts, seed=0)
    res = solve_mem(batch, "ERR")
    lo, hi = _attainable(expectation("ERR", batch), batch, batch.retrieved_counts().astype(float))
    gap = hi - res.target
    assert gap.min() < 1e-9 and gap.max() > 1e-8  # the cases span the hard range
    assert (res.status == OK).all()
    K = batch.n_grades
    stop = (2.0 ** np.arange(K) - 1) / 2.0 ** (K - 1)
    for i in range(batch.n_lists):
        P = res.P[i]
        np.testing.assert_allclose(P.sum(0), counts, atol=1e-9)
        assert abs((P @ stop) @ (_stop_weights(P, stop)) - res.target[i]) <= TOL
        if res.on_face[i]:  # within half the tolerance of the maximum: solved on its face (no finite multipliers)
            continue
        lam, mu = res.multipliers[i, :K], res.multipliers[i, K]
        theta = lam[None, :] + mu * _err_gradient(P, stop)
        q = np.exp(theta - theta.max(1, keepdims=True))
        np.testing.assert_allclose(P, q / q.sum(1, keepdims=True), atol=1e-7)


def _stop_weights(P, stop):
    """(1/n) prod_{m<n} (1 - x_m): E[ERR] = x . these weights."""
    x = P @ stop
    return np.concatenate([[1.0], np.cumprod(1.0 - x)[:-1]]) / np.arange(1, len(x) + 1)


def _plain_logit_step(y, d, allowed, th):
    """The definitions of :func:`logit_step`, one rank at a time in numpy."""
    L, N, K = d.shape
    f = np.zeros((L, N, K))
    fn, stat = np.zeros(L), np.zeros(L)
    for l in range(L):
        for n in range(N):
            a = allowed[l, n]
            if not a.any():
                continue
            tau = y[l, :K][a] + y[l, K] * d[l, n][a]
            f[l, n, a] = tau - tau.mean() - th[l, n][a]
            rel_tau = np.maximum(tau - tau.max(), -ACTIVE)
            rel_th = np.maximum(th[l, n][a] - th[l, n][a].max(), -ACTIVE)
            diff = (rel_tau - rel_tau.mean()) - (rel_th - rel_th.mean())
            stat[l] = max(stat[l], np.abs(diff).max())
        fn[l] = np.abs(f[l]).max()
    return f.reshape(L, N * K), fn, stat


def test_the_stationarity_residual_leaves_out_entries_of_negligible_probability():
    rng = np.random.default_rng(3)
    L, N, K = 4, 30, 3
    d = rng.random((L, N, K))
    allowed = rng.random((L, N, K)) < 0.9
    allowed[0, :5] = False  # a few ranks with nothing allowed
    y = rng.normal(size=(L, K + 1))
    y[1, K] = 4e10  # a metric multiplier near an extreme: most logits far below their rank's largest
    tau = y[:, None, :K] + y[:, K, None, None] * d
    th = tau - np.where(allowed, tau, 0).sum(2, keepdims=True) / np.maximum(allowed.sum(2, keepdims=True), 1)
    th = th + rng.normal(scale=1e-9, size=th.shape)  # converged up to 1e-9 ...
    th[1] += np.where(tau[1] < tau[1].max(1, keepdims=True) - ACTIVE, rng.normal(scale=3.0, size=(N, K)), 0.0)
    th = np.where(allowed, th, 0.0)  # ... but for noise of order 1 on the inactive entries of list 1
    f, fn, stat = logit_step(y, d, allowed, th)
    ref_f, ref_fn, ref_stat = _plain_logit_step(y, d, allowed, th)
    np.testing.assert_allclose(f, ref_f, rtol=1e-12, atol=1e-4 * np.abs(tau).max())
    np.testing.assert_allclose(fn, ref_fn, rtol=1e-9)
    np.testing.assert_allclose(stat, ref_stat, rtol=1e-6, atol=1e-8)
    assert fn[1] > 1.0 and stat.max() < 1e-8


def test_err_at_its_maximum_has_at_least_the_entropy_of_any_feasible_top_block():
    """Demo list sys31/409 (ERR 3e-12 below its maximum): every distribution with the top m ranks of the top grade
    and the other documents spread evenly below them whose ERR is within the tolerance is feasible, so the
    maximum-entropy solution has at least the entropy of the best of them (m = 14: 66.66 nats). A face read off
    too coarse an iterate fixed all 21 top-grade documents (42.40 nats) before."""
    import meta_eval as me
    from meta_eval.statistics.maxent import lists_from_collection

    lists = lists_from_collection(me.demo_collection())
    i = [k for k, (run, topic) in enumerate(zip(lists.runs, lists.topics)) if (run, str(topic)) == ("sys31", "409")]
    batch = lists.batch.subset(np.array(i))
    res = solve_mem(batch, "ERR")
    assert res.status[0] == OK
    n, counts = batch.lengths[0], batch.retrieved_counts()[0].astype(float)
    K = batch.n_grades
    stop = (2.0 ** np.arange(K) - 1) / 2.0 ** (K - 1)
    best = -np.inf
    for m in range(1, int(counts[-1]) + 1):
        rest = (counts - np.eye(K)[-1] * m) / (n - m)
        P = np.vstack([np.tile(np.eye(K)[-1], (m, 1)), np.tile(rest, (n - m, 1))])
        if abs((P @ stop) @ _stop_weights(P, stop) - res.target[0]) <= TOL:
            best = max(best, -(n - m) * np.sum(rest[rest > 0] * np.log(rest[rest > 0])))
    assert np.isfinite(best) and res.entropy[0] >= best - 1e-6


def test_a_face_read_too_early_is_not_taken_when_the_iterate_has_more_entropy(monkeypatch):
    """A demo ERR list at its maximum (sys32, topic 415): the face read off the iterate after the first edge steps
    holds 80.5 nats, the iterate 106.8; the solver must take the extra steps rather than that face. Reference: the
    same list solved with many more steps towards the face before it is read (the face is then read off an iterate
    close to it)."""
    import meta_eval as me
    import meta_eval.statistics.maxent.solver as solver
    from meta_eval.statistics.maxent import lists_from_collection

    lists = lists_from_collection(me.demo_collection())
    runs, topics = np.asarray(lists.runs).astype(str), np.asarray(lists.topics).astype(str)
    batch = lists.subset(np.flatnonzero((runs == "sys32") & (topics == "415"))).batch
    default = solve_mem(batch, "ERR", jobs=1)
    monkeypatch.setattr(solver, "_EDGE_ITER", (200, 200))
    patient = solve_mem(batch, "ERR", jobs=1)
    assert default.status[0] == OK == patient.status[0] and default.on_face[0]
    assert default.entropy[0] >= patient.entropy[0] * (1 - 1e-2), (default.entropy, patient.entropy)
