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
over ragged lists: in numpy every step costs some thirty passes over (lists x grades x ranks) temporaries, here it
is two loops per list (about 4x faster on TREC-COVID lists): the dual and its distribution (bound by its two
calls of exp per rank), then the gradient and Hessian (sums over blocks of ranks, compensated across blocks). It is
checked against a plain numpy version of the same iteration in the tests (tests/test_mem_newton_kernel.py).
"""

from __future__ import annotations

import numpy as np
from numba import njit

ARMIJO = 1e-4  # sufficient decrease of the line search
HALVINGS = 30  # backtracking steps before a Newton direction is given up
ROUNDOFF = 1e-13  # relative round-off level of the dual, per term
RUNAWAY_GROWTH, RUNAWAY_STEPS = 1.5, 6  # a step outgrowing its cap this fast, this many times in a row: stop
BLOCK = 32  # ranks summed plainly before a compensated addition (gradient and Hessian)


@njit(cache=True, error_model="numpy")
def _add(total, comp, x):
    """Neumaier's compensated summation step: the gradient is tested against tolerances (1e-12 on counts of
    hundreds of documents) at the round-off level of a plain running sum."""
    t = total + x
    if abs(total) >= abs(x):
        comp += (total - t) + x
    else:
        comp += (x - t) + total
    return t, comp


@njit(cache=True, error_model="numpy")
def _dual(d, allowed, rowmask, r, t, y, q):
    """q (ranks x grades) at y, and the dual value f(y)."""
    N, K = d.shape
    f = 0.0
    c = 0.0
    prod = 1.0
    for n in range(N):
        if not rowmask[n]:
            for k in range(K):
                q[n, k] = 0.0
            continue
        m = -np.inf
        top = -1
        for k in range(K):
            if allowed[n, k]:
                th = y[k] + y[K] * d[n, k]
                q[n, k] = th
                if th > m:
                    m = th
                    top = k
        if m == -np.inf:  # no allowed grade at this rank: contributes nothing
            for k in range(K):
                q[n, k] = 0.0
            continue
        s = 0.0
        for k in range(K):
            if allowed[n, k]:
                e = 1.0 if k == top else np.exp(q[n, k] - m)  # exp(0) = 1 exactly: one exp fewer per rank
                q[n, k] = e
                s += e
            else:
                q[n, k] = 0.0
        for k in range(K):
            q[n, k] /= s
        # sum_n log s_n as the log of their product (1 <= s_n <= K), flushed before it can overflow: one log per
        # 600-odd ranks instead of one per rank
        f, c = _add(f, c, m)
        prod *= s
        if prod > 1e280:
            f, c = _add(f, c, np.log(prod))
            prod = 1.0
    f, c = _add(f, c, np.log(prod))
    for k in range(1, K):
        f, c = _add(f, c, -y[k] * r[k])
    f, c = _add(f, c, -y[K] * t)
    return f + c


@njit(cache=True, error_model="numpy")
def _grad_hess(d, q, r, t, frozen, g, H, mn):
    """Gradient g and Hessian H of the dual at the distribution q (frozen variables: unit rows, zero gradient).

    Sums over ranks, one grade (pair) at a time over blocks of BLOCK ranks: plain sums inside a block (independent
    accumulators the processor overlaps), Neumaier-compensated across blocks, so the gradient keeps the accuracy
    its 1e-12 tolerances need (counts of hundreds of documents) at a third of the time of compensating every
    rank. Ranks past a list's end and grades not allowed hold q = 0 and d = 0 and add nothing. ``mn`` (ranks) is
    work space: each rank's expected metric weight sum_k q_nk d_nk."""
    N, K = d.shape
    for n in range(N):
        s = 0.0
        for k in range(K):
            s += q[n, k] * d[n, k]
        mn[n] = s
    g[:] = 0.0
    H[:, :] = 0.0
    gc = np.zeros(K + 1)
    Hc = np.zeros((K + 1, K + 1))
    for lo in range(0, N, BLOCK):
        hi = min(lo + BLOCK, N)
        s = 0.0
        for n in range(lo, hi):
            s += mn[n]
        g[K], gc[K] = _add(g[K], gc[K], s)
        sKK = 0.0
        for a in range(K):
            sa = 0.0
            saK = 0.0
            for n in range(lo, hi):
                qa = q[n, a]
                dev = d[n, a] - mn[n]
                sa += qa
                saK += qa * dev
                sKK += qa * dev * dev
            g[a], gc[a] = _add(g[a], gc[a], sa)
            H[a, K], Hc[a, K] = _add(H[a, K], Hc[a, K], saK)
            for b in range(a, K):  # -sum_n q_a q_b (the diagonal's sum_n q_a is added below)
                sab = 0.0
                for n in range(lo, hi):
                    sab += q[n, a] * q[n, b]
                H[a, b], Hc[a, b] = _add(H[a, b], Hc[a, b], -sab)
        H[K, K], Hc[K, K] = _add(H[K, K], Hc[K, K], sKK)
    for a in range(K + 1):
        for b in range(a, K + 1):
            H[a, b] += Hc[a, b]
    for k in range(K):
        H[k, k] += g[k] + gc[k]
        g[k], gc[k] = _add(g[k], gc[k], -r[k])
        g[k] += gc[k]
        for b in range(k + 1, K + 1):
            H[b, k] = H[k, b]
    g[K], gc[K] = _add(g[K], gc[K], -t)
    g[K] += gc[K]
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
def _newton_step(H, g):
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
    step = np.zeros(K1)
    solve_small(A, b, step)
    for a in range(K1):
        if not np.isfinite(step[a]):
            step[a] = 0.0
    return step


@njit(cache=True, error_model="numpy")
def solve_small(A, b, out):
    """out = A^-1 b for a small system by Gaussian elimination with partial pivoting (A and b are overwritten); an
    unknown whose pivot is 0 (a singular system) is left at 0."""
    K1 = b.size
    for col in range(K1):
        piv = col
        for row in range(col + 1, K1):
            if abs(A[row, col]) > abs(A[piv, col]):
                piv = row
        if piv != col:
            for k in range(K1):
                A[col, k], A[piv, k] = A[piv, k], A[col, k]
            b[col], b[piv] = b[piv], b[col]
        if A[col, col] == 0.0:
            continue
        for row in range(col + 1, K1):
            factor = A[row, col] / A[col, col]
            if factor != 0.0:
                for k in range(col, K1):
                    A[row, k] -= factor * A[col, k]
                b[row] -= factor * b[col]
    for a in range(K1 - 1, -1, -1):
        out[a] = 0.0
        if A[a, a] == 0.0:
            continue
        acc = b[a]
        for k in range(a + 1, K1):
            acc -= A[a, k] * out[k]
        out[a] = acc / A[a, a]


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
    g = np.empty(K + 1)
    H = np.empty((K + 1, K + 1))
    qt = np.empty((N, K))
    mn = np.empty(N)
    yt = np.empty(K + 1)
    for l in range(L):
        dl, al, rm, rl, tl, fl = d[l], allowed[l], rowmask[l], r[l], t[l], frozen[l]
        yl = y[l]
        ql = q[l]
        rows = 0
        for n in range(N):
            rows += rm[n]
        noise = ROUNDOFF * (rows + 1.0)
        cap = step_cap
        ratio = 0.0  # the last capped Newton step's length over its cap
        runaway = 0  # capped steps in a row whose length outgrew the (doubling) cap by over 1.5x
        f = _dual(dl, al, rm, rl, tl, yl, ql)
        stopped = False
        for _ in range(max_iter):
            _grad_hess(dl, ql, rl, tl, fl, g, H, mn)
            if _max_abs(g) <= tol[l]:
                done[l] = True
                stopped = True
                break
            step = _newton_step(H, g)
            big = _max_abs(step)
            capped = big > cap
            if big == 0.0:  # no direction at all (the Hessian is singular along the gradient): nothing will move
                done[l] = _max_abs(g) <= max(tol[l], stall_tol)
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
            iters[l] += 1
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
                    yt[a] = yl[a] + alpha * step[a]
                ft = _dual(dl, al, rm, rl, tl, yt, qt)
                roundoff = noise * (1.0 + abs(f))
                if ft <= f + ARMIJO * alpha * slope or ft <= f + roundoff:
                    # a shortened step that lowers the dual by no more than its round-off made no measurable
                    # progress (a near-singular direction, e.g. a linearised target out of reach): the next
                    # steps would repeat it, each after some 30 halvings, so the list stops here
                    stalled = alpha < 1.0 and f - ft <= roundoff
                    for a in range(K + 1):
                        yl[a] = yt[a]
                    for n in range(N):
                        for k in range(K):
                            ql[n, k] = qt[n, k]
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
                if stalled:
                    _grad_hess(dl, ql, rl, tl, fl, g, H, mn)
                done[l] = _max_abs(g) <= max(tol[l], stall_tol)
                stopped = True
                break
        if not stopped:
            _grad_hess(dl, ql, rl, tl, fl, g, H, mn)
            done[l] = _max_abs(g) <= tol[l]
    return q, iters, done


def warm_up() -> None:
    """Compile (or load from numba's cache) :func:`newton_lists` for the one signature the solver uses.

    A study calls this in a thread at its start: most of the compilation runs in LLVM without the GIL, so it
    overlaps the first stages, and the worker processes of the informativeness stage then load the cached code
    instead of each compiling it.
    """
    L, N, K = 1, 2, 2
    newton_lists(np.zeros((L, N, K)), np.ones((L, N, K), dtype=np.bool_), np.ones((L, N), dtype=np.bool_),
                 np.ones((L, K)), np.zeros(L), np.zeros((L, K + 1)), np.zeros((L, K + 1), dtype=np.bool_),
                 np.ones(L), 1, False, 1.0, 1.0)
