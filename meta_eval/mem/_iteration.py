"""Compiled pieces of the solver's sequential linearisation (:func:`meta_eval.mem.solver._solve_nonlinear`).

Each step of the iteration maps the centred logits of every live list to a distribution, solves the linearised
problem (:mod:`meta_eval.mem._newton`), and moves the logits by a plain or Anderson step. In numpy each of these is
a handful of passes over (lists x ranks x grades) temporaries; here one loop per list, the same arithmetic (a rank's
largest logit gives exp(0) = 1 without calling exp).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from meta_eval.mem._newton import solve_small


@njit(cache=True, error_model="numpy")
def softmax_rows(th, allowed, rowmask):
    """Row-wise softmax over grades of (lists, ranks, grades) logits on the allowed entries (0 elsewhere and past
    each list's end)."""
    L, N, K = th.shape
    p = np.zeros((L, N, K))
    for l in range(L):
        for n in range(N):
            if not rowmask[l, n]:
                continue
            m = -np.inf
            top = -1
            for k in range(K):
                if allowed[l, n, k] and th[l, n, k] > m:
                    m = th[l, n, k]
                    top = k
            if m == -np.inf:
                continue
            s = 0.0
            for k in range(K):
                if allowed[l, n, k]:
                    e = 1.0 if k == top else np.exp(th[l, n, k] - m)  # exp(0) = 1 exactly
                    p[l, n, k] = e
                    s += e
            for k in range(K):
                p[l, n, k] /= s
    return p


ACTIVE = 50.0  # logits more than this below their rank's largest hold probabilities below e^-50 of it: inactive


@njit(cache=True, error_model="numpy")
def _active_gap(a, b, allowed, width):
    """max_k |a'_k - b'_k| over the allowed grades of one rank, z'_k = max(z_k - max z, -width) centred: the change
    of the logits b -> a on the entries whose probability is within e^-width of the rank's largest (relative to
    the largest first, so a saturated entry is exactly -width however large the logits)."""
    K = a.size
    ma = -np.inf
    mb = -np.inf
    c = 0
    for k in range(K):
        if allowed[k]:
            c += 1
            ma = max(ma, a[k])
            mb = max(mb, b[k])
    sa = 0.0
    sb = 0.0
    for k in range(K):
        if allowed[k]:
            sa += max(a[k] - ma, -width)
            sb += max(b[k] - mb, -width)
    shift = (sa - sb) / max(c, 1)
    big = 0.0
    for k in range(K):
        if allowed[k]:
            v = max(a[k] - ma, -width) - max(b[k] - mb, -width) - shift
            if abs(v) > big or v != v:
                big = abs(v) if v == v else np.inf
    return big


@njit(cache=True, error_model="numpy")
def logit_step(y, d, allowed, th):
    """f = centre(lambda + mu d) - th on the allowed entries (0 elsewhere), with the centring over each rank's
    allowed grades; max |f| per list; and the stationarity residual per list: the same change over the active
    entries only (:func:`_active_gap`, width :data:`ACTIVE`). y (L, K + 1) = (lambda, mu); d, allowed, th
    (L, N, K).

    Near an attainable extreme the metric multiplier reaches 1e10 and the logits of the entries it excludes
    1e10 and more, where a change of the multiplier in its last digits (the value pins it no better) moves them by
    units: max |f| then never falls below its tolerance although no probability moves (ERR near its maximum:
    0.4-1.1 % of lists failed so). The stationarity residual leaves out these entries, whose probabilities are
    below e^-50 of their rank's largest."""
    L, N, K = d.shape
    f = np.zeros((L, N * K))
    fn = np.zeros(L)
    stat = np.zeros(L)
    tau = np.empty(K)
    for l in range(L):
        big = 0.0
        worst = 0.0
        for n in range(N):
            s = 0.0
            c = 0
            for k in range(K):
                tau[k] = y[l, k] + y[l, K] * d[l, n, k]
                if allowed[l, n, k]:
                    s += tau[k]
                    c += 1
            if c == 0:
                continue
            mean = s / c
            for k in range(K):
                if allowed[l, n, k]:
                    v = tau[k] - mean - th[l, n, k]
                    f[l, n * K + k] = v
                    a = abs(v)
                    if a > big or v != v:
                        big = a if v == v else np.inf
            a = _active_gap(tau, th[l, n], allowed[l, n], ACTIVE)
            if a > worst or a != a:
                worst = a if a == a else np.inf
        fn[l] = big
        stat[l] = worst
    return f, fn, stat


@njit(cache=True, error_model="numpy")
def anderson(X, F, rows, order, nh, x, f, beta):
    """One Anderson (type II) step per list: X, F (lists, m, D) ring buffers of iterates and residuals read in the
    time ``order`` (oldest first) at ``rows``, of which the last ``nh`` are valid; x, f (A, D) the current iterate
    and residual; mixing ``beta`` (A,). Least squares on the residual differences with a ridge of 1e-10 of the
    Gram matrix's trace."""
    A_, D = x.shape
    m = order.size
    out = np.empty((A_, D))
    G = np.empty((m - 1, m - 1))
    b = np.empty(m - 1)
    gam = np.empty(m - 1)
    for a in range(A_):
        r = rows[a]
        lo = max(m - nh[a] - 1, 0)  # the valid differences (between time slots i and i + 1): i >= lo
        for i in range(m - 1):
            for j in range(m - 1):
                G[i, j] = 0.0
            b[i] = 0.0
        for i in range(lo, m - 1):
            oi0, oi1 = order[i], order[i + 1]
            for j in range(i, m - 1):
                oj0, oj1 = order[j], order[j + 1]
                s = 0.0
                for e in range(D):
                    s += (F[r, oi1, e] - F[r, oi0, e]) * (F[r, oj1, e] - F[r, oj0, e])
                G[i, j] = s
                G[j, i] = s
            s = 0.0
            for e in range(D):
                s += (F[r, oi1, e] - F[r, oi0, e]) * f[a, e]
            b[i] = s
        tr = 0.0
        for i in range(m - 1):
            tr += G[i, i]
        reg = 1e-10 * tr + 1e-300
        for i in range(m - 1):
            G[i, i] += reg + (1.0 if i < lo else 0.0)
        solve_small(G, b, gam)
        for e in range(D):
            v = x[a, e] + beta[a] * f[a, e]
            for i in range(lo, m - 1):
                o0, o1 = order[i], order[i + 1]
                v -= ((X[r, o1, e] - X[r, o0, e]) + beta[a] * (F[r, o1, e] - F[r, o0, e])) * gam[i]
            out[a, e] = v
    return out


@njit(cache=True, error_model="numpy")
def extent(d, allowed):
    """Smallest and largest entry of each list's d (L, N, K) over its allowed entries (inf and -inf if none)."""
    L, N, K = d.shape
    lo = np.full(L, np.inf)
    hi = np.full(L, -np.inf)
    for l in range(L):
        for n in range(N):
            for k in range(K):
                if allowed[l, n, k]:
                    v = d[l, n, k]
                    if v < lo[l]:
                        lo[l] = v
                    if v > hi[l]:
                        hi[l] = v
    return lo, hi


@njit(cache=True, error_model="numpy")
def rescale(d, allowed, lo, scale):
    """(d - lo) / scale per list on the allowed entries, 0 elsewhere."""
    L, N, K = d.shape
    out = np.zeros((L, N, K))
    for l in range(L):
        for n in range(N):
            for k in range(K):
                if allowed[l, n, k]:
                    out[l, n, k] = (d[l, n, k] - lo[l]) / scale[l]
    return out


@njit(cache=True, error_model="numpy")
def step_change(q, p, r):
    """Per list: the largest probability change max |q - p| and the largest count residual max_j |sum_n q_nj - r_j|
    of a step from p to q (L, N, K); r (L, K)."""
    L, N, K = q.shape
    dq = np.zeros(L)
    res = np.zeros(L)
    col = np.empty(K)
    for l in range(L):
        big = 0.0
        col[:] = 0.0
        for n in range(N):
            for k in range(K):
                a = abs(q[l, n, k] - p[l, n, k])
                if a > big or a != a:
                    big = a if a == a else np.inf
                col[k] += q[l, n, k]
        dq[l] = big
        worst = 0.0
        for k in range(K):
            a = abs(col[k] - r[l, k])
            if a > worst or a != a:
                worst = a if a == a else np.inf
        res[l] = worst
    return dq, res
