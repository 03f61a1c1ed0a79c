"""The compiled kernel of the solver: damped Newton on the dual of the linear maximum-entropy problem, per list.

For one list with feature d (ranks x grades), count targets r and metric target t, the dual in y = (lambda, mu) is

    f(y) = sum_n logsumexp_j(lambda_j + mu d_nj) - sum_{j>=1} lambda_j r_j - mu t        (lambda_0 = 0)

(methods.md Sec. 1.2). Its gradient is (sum_n q_nj - r_j, sum_nj q_nj d_nj - t) and its Hessian the covariance of
(e_j, d_nj) under q, summed over ranks, with q_n = softmax(lambda + mu d_n). Each Newton step solves the (c+2)-sized
system, caps the largest multiplier change and backtracks (Armijo, or acceptance at the dual's round-off level); a
backtracked step that lowers the dual by no more than its round-off ends the list's iterations (on ERR near its
maximum this halved the solver's time, the lists whose linearised target is out of reach no longer spending 40
steps of 30 halvings each on no progress), and so do a Newton step that outgrows its doubling cap six times in a
row (the dual falls without bound: the target is out of reach) and a step of zero (a Hessian singular in floating
point along the gradient). A list stopped so is converged only if its gradient is within tolerance.

Written by hand with numba because no library solves thousands of tiny, independent, warm-started dual problems
over ragged lists. Each trial point costs one pass over the list (:func:`dual_pass`) giving the distribution, the
dual and its gradient and Hessian together, in a grade-major layout (grades x ranks) so that every loop runs over
contiguous ranks and the compiler turns it into vector instructions: the exps by :func:`meta_eval.statistics.maxent._vector.exp_neg`
(the C library's exp, called one element at a time, took two thirds of a pass), the sums in lanes, plain over blocks
of ranks and compensated across blocks (the gradient is tested against tolerances of 1e-12 on counts of hundreds of
documents), the dual's sum of each rank's largest logit with every addition compensated (1e10 per rank near an
extreme, against the multipliers' terms). :func:`linearised_lists` sets up and solves the linearised problems of
one step of the solver's sequential linearisation for its live lists. Checked against a plain numpy version of the
same iteration in the tests (tests/test_mem_newton_kernel.py).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from meta_eval.statistics.maxent._vector import (add, exp_shifted, lane_dot, lane_moments, lane_sum, lane_sum_accurate,
                                   solve_small, sum_logs)

ARMIJO = 1e-4  # sufficient decrease of the line search
HALVINGS = 30  # backtracking steps before a Newton direction is given up
ROUNDOFF = 1e-13  # relative round-off level of the dual, per term
RUNAWAY_GROWTH, RUNAWAY_STEPS = 1.5, 6  # a step outgrowing its cap this fast, this many times in a row: stop


@njit(cache=True, error_model="numpy")
def dual_pass(dK, mask, n, r, t, y, frozen, Q, g, H, T, M, S, W, bits):
    """One pass over a list's n ranks at multipliers y: the distribution Q, the dual value f(y) (returned) and its
    gradient g and Hessian H (frozen variables: unit rows, zero gradient).

    Grade-major: dK, mask, Q (grades x ranks) hold the scaled direction, the allowed entries and the distribution
    row by row, so every loop runs over contiguous ranks (vector instructions, :mod:`meta_eval.statistics.maxent._vector`). A
    rank's logits are shifted by their largest before exp; sum_n log s_n is one log per block of ranks. T (grades x
    ranks), M, S, W (ranks) and bits (ranks, int64) are scratch.
    """
    K = dK.shape[0]
    mu = y[K]
    for i in range(n):
        M[i] = -np.inf
    for k in range(K):
        yk = y[k]
        for i in range(n):
            th = yk + mu * dK[k, i] if mask[k, i] else -np.inf
            T[k, i] = th
            M[i] = max(M[i], th)
    for i in range(n):
        M[i] = M[i] if M[i] > -np.inf else 0.0  # a rank with no allowed grade: q = 0, adds nothing
        S[i] = 0.0
    for k in range(K):
        exp_shifted(T[k], M, Q[k], S, bits, n)
    for i in range(n):
        W[i] = 0.0
        T[0, i] = 1.0 / S[i] if S[i] > 0.0 else 0.0
        S[i] = S[i] if S[i] > 0.0 else 1.0
    for k in range(K):
        for i in range(n):
            q = Q[k, i] * T[0, i]
            Q[k, i] = q
            W[i] += q * dK[k, i]  # E_q[d] at each rank
    f, c = add(lane_sum_accurate(M, n), 0.0, sum_logs(S, n))
    for k in range(1, K):
        f, c = add(f, c, -y[k] * r[k])
    f, c = add(f, c, -y[K] * t)
    _grad_hess_gm(dK, Q, W, n, r, t, frozen, g, H)
    return f + c


def grad_hess(d, q, r, t, frozen, g, H):
    """Gradient g and Hessian H of the dual at a given distribution q (ranks x grades): the sums of
    :func:`dual_pass` (for tests)."""
    N, K = d.shape
    Q = np.ascontiguousarray(q.T)
    dK = np.ascontiguousarray(d.T)
    W = np.ascontiguousarray((q * d).sum(1))
    _grad_hess_gm(dK, Q, W, N, r, float(t), frozen, g, H)


@njit(cache=True, error_model="numpy")
def _grad_hess_gm(dK, Q, W, n, r, t, frozen, g, H):
    """Gradient (sum_n q_nj - r_j, sum q d - t) and Hessian (the covariance of (e_j, d_nj) under q, summed over
    ranks) of the dual from the grade-major q (``Q``), d (``dK``) and E_q[d] per rank (``W``); frozen variables get
    a zero gradient and a unit row of the Hessian."""
    K = dK.shape[0]
    gK, cK = add(lane_sum(W, n), 0.0, -t)
    g[K] = gK + cK
    H[K, K] = 0.0
    for a in range(K):
        tot, m1, m2, sq = lane_moments(Q[a], dK[a], W, n)
        ga, ca = add(tot, 0.0, -r[a])
        g[a] = ga + ca
        H[a, K] = m1
        H[K, K] += m2
        H[a, a] = tot - sq
        for b in range(a + 1, K):
            H[a, b] = -lane_dot(Q[a], Q[b], n)
    for a in range(K + 1):
        for b in range(a + 1, K + 1):
            H[b, a] = H[a, b]
    for a in range(K + 1):
        if frozen[a]:
            g[a] = 0.0
            for b in range(K + 1):
                H[a, b] = 0.0
                H[b, a] = 0.0
    for a in range(K + 1):
        if frozen[a]:
            H[a, a] = 1.0


@njit(cache=True, error_model="numpy")
def _max_abs(g):
    out = 0.0
    for v in g:
        if abs(v) > out or v != v:
            out = abs(v) if v == v else np.inf
    return out


@njit(cache=True, error_model="numpy")
def _newton_step(H, g, step):
    """-H^-1 g with a ridge of 1e-13 of each variable's own curvature, by Gaussian elimination with partial
    pivoting (a (c+2)-sized system; hand-written rather than numba's LAPACK binding, which adds seconds of
    compilation). The ridge is per variable because near an attainable extreme the metric multiplier's curvature
    is some 1e-18 of the count multipliers': a ridge scaled to the largest would swamp it and stall mu. A direction
    with a zero pivot (a singular system) and non-finite entries get no step."""
    K1 = g.size
    scale = 1e-300
    for a in range(K1):
        scale = max(scale, abs(H[a, a]))
    A = H.copy()
    b = -g.copy()
    for a in range(K1):
        A[a, a] += 1e-13 * max(abs(H[a, a]), 1e-300 * scale)
    solve_small(A, b, step)
    for a in range(K1):
        if not np.isfinite(step[a]):
            step[a] = 0.0


@njit(cache=True, error_model="numpy")
def newton_one(dK, mask, n, r, t, y, frozen, tol, max_iter, grow_cap, step_cap, stall_tol, Q, QB, T, V, bits,
               work):
    """Minimise one list's dual from y (updated in place): damped Newton (module docstring). dK, mask (grades x
    ranks) the scaled direction and the allowed entries, n the ranks; the distribution at the final y goes to Q
    (grades x ranks). Returns (Newton steps taken, converged).

    Scratch: QB (grades x ranks: the trial point's distribution), T (grades x ranks), V (3 x ranks), bits (ranks,
    int64) and work ((2 K + 6) x (K + 1): gradients and Hessians of the current and the trial point, the step).
    Each step costs one pass (:func:`dual_pass`) per trial point: the gradient and Hessian of an accepted point
    come with it."""
    K = dK.shape[0]
    g = work[0]
    gt = work[1]
    step = work[2]
    yt = work[3]
    H = work[4:K + 5]
    Ht = work[K + 5:2 * K + 6]
    M, S, W = V[0], V[1], V[2]
    noise = ROUNDOFF * (n + 1.0)
    cap = step_cap
    ratio = 0.0  # the last capped Newton step's length over its cap
    runaway = 0  # capped steps in a row whose length outgrew the (doubling) cap by over 1.5x
    cur, trial = Q, QB  # the distributions at y and at the trial point (swapped when a step is accepted)
    swapped = False
    f = dual_pass(dK, mask, n, r, t, y, frozen, cur, g, H, T, M, S, W, bits)
    iters = 0
    done = False
    stopped = False
    for _ in range(max_iter):
        if _max_abs(g) <= tol:
            done = True
            stopped = True
            break
        _newton_step(H, g, step)
        big = _max_abs(step)
        capped = big > cap
        if big == 0.0:  # no direction at all (the Hessian is singular along the gradient): nothing will move
            done = _max_abs(g) <= max(tol, stall_tol)
            stopped = True
            break
        if grow_cap:
            # a Newton step that outgrows its doubling cap step after step means the dual falls without bound
            # along it (the linearised target is out of reach): the list stops, not converged, instead of
            # spending its 40 steps on a multiplier diverging geometrically
            runaway = runaway + 1 if capped and big / cap > RUNAWAY_GROWTH * ratio else 0
            ratio = big / cap if capped else 0.0
            if runaway >= RUNAWAY_STEPS:
                stopped = True  # not converged: the gradient was just found above tol
                break
        iters += 1
        if capped:
            shrink = cap / big
            for a in range(K + 1):
                step[a] *= shrink
        slope = 0.0
        for a in range(K + 1):
            slope += g[a] * step[a]
        alpha = 1.0
        accepted = False
        stalled = False
        for _h in range(HALVINGS):
            for a in range(K + 1):
                yt[a] = y[a] + alpha * step[a]
            ft = dual_pass(dK, mask, n, r, t, yt, frozen, trial, gt, Ht, T, M, S, W, bits)
            roundoff = noise * (1.0 + abs(f))
            if ft <= f + ARMIJO * alpha * slope or ft <= f + roundoff:
                # a shortened step that lowers the dual by no more than its round-off made no measurable
                # progress (a near-singular direction, e.g. a linearised target out of reach): the next
                # steps would repeat it, each after some 30 halvings, so the list stops here
                stalled = alpha < 1.0 and f - ft <= roundoff
                for a in range(K + 1):
                    y[a] = yt[a]
                    g[a] = gt[a]
                    for b in range(K + 1):
                        H[a, b] = Ht[a, b]
                cur, trial = trial, cur
                swapped = not swapped
                f = ft
                accepted = True
                break
            alpha *= 0.5
        full_step = accepted and alpha == 1.0
        if grow_cap:
            if capped and full_step:
                cap *= 2.0
            elif not full_step:
                cap = max(step_cap, 0.5 * cap)
        if not accepted or stalled:  # the dual is at its round-off floor (or stuck): stop iterating on this list
            done = _max_abs(g) <= max(tol, stall_tol)
            stopped = True
            break
    if not stopped:
        done = _max_abs(g) <= tol
    if swapped:
        for k in range(K):
            for i in range(n):
                Q[k, i] = cur[k, i]
    return iters, done


@njit(cache=True, error_model="numpy")
def newton_lists(d, allowed, rowmask, r, t, y, frozen, tol, max_iter, grow_cap, step_cap, stall_tol):
    """Minimise the dual for every list (module docstring); ``y`` (lists x (grades+1)) is updated in place.

    Parameters
    ----------
    d : (L, N, K) float64, scaled to O(1), 0 on entries that are not allowed
    allowed : (L, N, K) bool;  rowmask : (L, N) bool;  r : (L, K);  t : (L,);  frozen : (L, K+1) bool
    tol : (L,) absolute gradient tolerance;  max_iter : Newton steps
    grow_cap : double the step cap after each full capped step (a value near an extreme needs multipliers growing
        geometrically), halve it on backtracking;  step_cap : initial cap;  stall_tol : gradient accepted when the
        line search can no longer decrease the dual (round-off floor)

    Returns
    -------
    q : (L, N, K) distributions;  iters : (L,) steps taken;  done : (L,) converged flags
    """
    L, N, K = d.shape
    q = np.zeros((L, N, K))
    iters = np.zeros(L, dtype=np.int64)
    done = np.zeros(L, dtype=np.bool_)
    dK = np.empty((K, N))
    mask = np.empty((K, N), dtype=np.bool_)
    Q = np.empty((K, N))
    QB = np.empty((K, N))
    T = np.empty((K, N))
    V = np.empty((3, N))
    bits = np.empty(N, dtype=np.int64)
    work = np.zeros((2 * K + 6, K + 1))
    for l in range(L):
        n = 0
        for i in range(N):
            if rowmask[l, i]:
                n = i + 1
        for k in range(K):
            for i in range(n):
                allow = allowed[l, i, k] and rowmask[l, i]
                mask[k, i] = allow
                dK[k, i] = d[l, i, k] if allow else 0.0
        iters[l], done[l] = newton_one(dK, mask, n, r[l], t[l], y[l], frozen[l], tol[l], max_iter, grow_cap,
                                       step_cap, stall_tol, Q, QB, T, V, bits, work)
        for i in range(n):
            for k in range(K):
                q[l, i, k] = Q[k, i]
    return q, iters, done


@njit(cache=True, error_model="numpy")
def _extent(x, allowed, n):
    """Smallest and largest x[:n] where allowed (inf and -inf if none): four running extremes, each entry either
    itself or the neutral value, so the loop has no branch."""
    a0 = a1 = a2 = a3 = np.inf
    b0 = b1 = b2 = b3 = -np.inf
    full = n - n % 4
    for i in range(0, full, 4):
        a0 = min(a0, x[i] if allowed[i] else np.inf)
        a1 = min(a1, x[i + 1] if allowed[i + 1] else np.inf)
        a2 = min(a2, x[i + 2] if allowed[i + 2] else np.inf)
        a3 = min(a3, x[i + 3] if allowed[i + 3] else np.inf)
        b0 = max(b0, x[i] if allowed[i] else -np.inf)
        b1 = max(b1, x[i + 1] if allowed[i + 1] else -np.inf)
        b2 = max(b2, x[i + 2] if allowed[i + 2] else -np.inf)
        b3 = max(b3, x[i + 3] if allowed[i + 3] else -np.inf)
    for i in range(full, n):
        a0 = min(a0, x[i] if allowed[i] else np.inf)
        b0 = max(b0, x[i] if allowed[i] else -np.inf)
    return min(min(a0, a1), min(a2, a3)), max(max(b0, b1), max(b2, b3))


@njit(cache=True, error_model="numpy")
def linearised_lists(d, p, Ep, v, bt, live, allowed, rowmask, r, frozen, Y, tol, max_iter, grow_cap, step_cap,
                     stall_tol):
    """The linearised problems of one step of the solver's sequential linearisation, for the lists ``live``.

    For live list i (``live[i]`` indexes the full-size arrays allowed, rowmask, r, frozen, Y, v, bt; d, p, Ep and
    the outputs are compact; allowed is False past each list's end, where rowmask is, and p is 0 where allowed is):
    maximum entropy subject to the counts and d.q = t, t = d.p + bt (v - E(p)), by
    :func:`newton_one` from the multipliers Y. d is shifted and scaled to [0, 1] over the allowed entries first
    (the metric multiplier then works in units of d's span; a d constant to 1e-14 of its size carries no
    information, and its multiplier stays 0). tol (compact) is the gradient tolerance in those units.

    Returns q (compact lists x ranks x grades), y (compact, mu in units of d), iterations and converged flags, and
    for the step that follows (:func:`meta_eval.statistics.maxent._iteration.advance_lists`) q and the scaled d grade-major
    (lists x grades x ranks) with d's span (the metric multiplier in scaled units is mu * span).
    """
    A, N, K = d.shape
    q = np.empty((A, N, K))  # each list's ranks past its end are zeroed below (not the whole arrays first)
    QK = np.empty((A, K, N))
    DK = np.empty((A, K, N))
    spans = np.zeros(A)
    yout = np.zeros((A, K + 1))
    iters = np.zeros(A, dtype=np.int64)
    done = np.zeros(A, dtype=np.bool_)
    mask = np.empty((K, N), dtype=np.bool_)
    QB = np.empty((K, N))
    T = np.empty((K, N))
    V = np.empty((3, N))
    bits = np.empty(N, dtype=np.int64)
    work = np.zeros((2 * K + 6, K + 1))
    fz = np.empty(K + 1, dtype=np.bool_)
    y = np.empty(K + 1)
    for i in range(A):
        l = live[i]
        n = 0
        for j in range(N):
            n += rowmask[l, j]
        lo, hi = _extent(d[i].reshape(N * K), allowed[l].reshape(N * K), n * K)
        t = lane_dot(d[i].reshape(N * K), p[i].reshape(N * K), n * K) + bt[l] * (v[l] - Ep[i])  # p is 0 off allowed
        lo = lo if lo < np.inf else 0.0
        span = hi - lo if hi > -np.inf else 0.0
        if not span > 1e-14 * max(max(abs(lo), abs(hi)), 1e-300):
            span = 0.0
        spans[i] = span
        inv = 1.0 / span if span > 0.0 else 1.0
        dK = DK[i]
        for k in range(K):
            for j in range(n):
                allow = allowed[l, j, k]
                mask[k, j] = allow
                dK[k, j] = (d[i, j, k] - lo) * inv if allow else 0.0
        tn = (t - lo * n) / span if span > 0.0 else 0.0
        for a in range(K + 1):
            fz[a] = frozen[l, a]
            y[a] = 0.0 if fz[a] else Y[l, a]
        fz[K] = fz[K] or span == 0.0
        y[K] = Y[l, K] * span if span > 0.0 else 0.0
        Q = QK[i]
        iters[i], done[i] = newton_one(dK, mask, n, r[l], tn, y, fz, tol[i], max_iter, grow_cap, step_cap,
                                       stall_tol, Q, QB, T, V, bits, work)
        for a in range(K + 1):
            yout[i, a] = y[a]
        yout[i, K] = y[K] / span if span > 0.0 else 0.0
        for j in range(n):
            for k in range(K):
                q[i, j, k] = Q[k, j]
        for j in range(n, N):
            for k in range(K):
                q[i, j, k] = 0.0
        for k in range(K):
            for j in range(n, N):
                QK[i, k, j] = 0.0
                dK[k, j] = 0.0
    return q, yout, iters, done, QK, DK, spans
