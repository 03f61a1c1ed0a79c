"""Compiled value and gradient of the pairwise and cascade expectation forms (:mod:`meta_eval.statistics.maxent.expectations`).

Both forms are prefix recurrences over ranks (a running sum for the pairwise form, a running survival product for
the cascade), evaluated for many lists at every step of the solver. Per list, everything but the recurrences runs
in loops over the ranks for one grade (or channel) at a time, which the compiler turns into vector instructions:
the per-rank inner products with the grade weights, the sums making the value (four running sums, compensated over
blocks: :func:`meta_eval.statistics.maxent._vector.lane_dot`) and the gradient's entries; only the running sum or product and
its reverse are one step per rank. ``rows`` selects the lists of the form's arrays that the rows of ``P`` belong
to, so a form restricted to some lists is a view, not a copy. Checked against finite differences, Monte Carlo and
brute-force enumeration in the tests.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from meta_eval.statistics.maxent._vector import add, lane_dot


@njit(cache=True, error_model="numpy")
def _weighted(P, l, coef, out):
    """out[n] = sum_k coef[k] P[l, n, k] (grades with a zero weight skipped)."""
    N, K = P.shape[1], P.shape[2]
    for n in range(N):
        out[n] = 0.0
    for k in range(K):
        c = coef[k]
        if c != 0.0:
            for n in range(N):
                out[n] += c * P[l, n, k]


@njit(cache=True, error_model="numpy")
def _dot3(x, y, z, n):
    """sum x y z over [:n] in four running sums, compensated over blocks of 32."""
    tot = 0.0
    comp = 0.0
    full = n - n % 32
    for lo in range(0, full, 32):
        a0 = a1 = a2 = a3 = 0.0
        for i in range(lo, lo + 32, 4):
            a0 += x[i] * y[i] * z[i]
            a1 += x[i + 1] * y[i + 1] * z[i + 1]
            a2 += x[i + 2] * y[i + 2] * z[i + 2]
            a3 += x[i + 3] * y[i + 3] * z[i + 3]
        tot, comp = add(tot, comp, (a0 + a1) + (a2 + a3))
    s = 0.0
    for i in range(full, n):
        s += x[i] * y[i] * z[i]
    tot, comp = add(tot, comp, s)
    return tot + comp


@njit(cache=True, error_model="numpy")
def pairwise(A, W, U, V, rows, P, want_grad, value, grad):
    """E = sum_{n,j} A[n,j] p_n(j) + sum_q sum_n W[q,n] (U_q . p_n) S_q(n),  S_q(n) = sum_{m<n} V_q . p_m;

    dE/dp_n(j) = A[n,j] + sum_q [W[q,n] U_q(j) S_q(n) + V_q(j) T_q(n)],  T_q(n) = sum_{k>n} W[q,k] U_q . p_k.
    A (L0, N0, K), W (L0, Q, N0), U and V (L0, Q, K); rows (L,) into them; P (L, N, K) with N <= N0. A channel
    whose U and V are equal (AP, GAP) weighs the ranks once; the first channel's gradient pass adds A as it goes
    (the same sums, in the same order, as copying A first), and a grade outside a channel (U_q(j) = V_q(j) = 0:
    GAP's channel l for the grades below l) gets no pass of it (its terms are 0, the metric's weights finite).
    """
    L, N, K = P.shape
    Q = W.shape[1]
    u = np.empty((Q, N))
    v = np.empty(N)
    S = np.empty((Q, N))
    T = np.empty(N)
    for l in range(L):
        s = rows[l]
        total = lane_dot(A[s, :N].reshape(N * K), P[l].reshape(N * K), N * K)
        for q in range(Q):
            _weighted(P, l, U[s, q], u[q])
            same = True
            for k in range(K):
                same = same and U[s, q, k] == V[s, q, k]
            vq = u[q]
            if not same:
                _weighted(P, l, V[s, q], v)
                vq = v
            Sq = S[q]
            acc = 0.0
            for n in range(N):  # the running sum: one step per rank
                Sq[n] = acc
                acc += vq[n]
            total += _dot3(W[s, q], u[q], Sq, N)
        value[l] = total
        if not want_grad:
            continue
        if Q == 0:
            for n in range(N):
                for k in range(K):
                    grad[l, n, k] = A[s, n, k]
        for q in range(Q):
            Wq = W[s, q]
            uq = u[q]
            acc = 0.0
            for n in range(N - 1, -1, -1):  # its reverse
                T[n] = acc
                acc += Wq[n] * uq[n]
            Sq = S[q]
            for k in range(K):
                cu = U[s, q, k]
                cv = V[s, q, k]
                if q == 0 and cu == 0.0 and cv == 0.0:
                    for n in range(N):
                        grad[l, n, k] = A[s, n, k]
                elif q == 0:
                    for n in range(N):
                        grad[l, n, k] = A[s, n, k] + (Wq[n] * cu * Sq[n] + cv * T[n])
                elif cu != 0.0 or cv != 0.0:  # a grade outside the channel: nothing to add
                    for n in range(N):
                        grad[l, n, k] += Wq[n] * cu * Sq[n] + cv * T[n]


@njit(cache=True, error_model="numpy")
def cascade(w, a, b, rows, P, want_grad, value, grad):
    """E = sum_n w_n x_n surv_n, x_n = a . p_n, y_n = b . p_n, surv_n = prod_{m<n} (1 - y_m);

    dE/dp_n(j) = surv_n w_n a_j - surv_n F_n b_j with the backward recursion F_n = w_{n+1} x_{n+1} + (1 - y_{n+1})
    F_{n+1} (exact also where some y_m = 1). w (L0, N0), a and b (L0, K); rows (L,); P (L, N, K), N <= N0.
    """
    L, N, K = P.shape
    x = np.empty(N)
    y = np.empty(N)
    surv = np.empty(N)
    F = np.empty(N)
    for l in range(L):
        s = rows[l]
        _weighted(P, l, a[s], x)
        _weighted(P, l, b[s], y)
        alive = 1.0
        for n in range(N):  # the survival product: one step per rank
            surv[n] = alive
            alive *= 1.0 - y[n]
        value[l] = _dot3(w[s], x, surv, N)
        if not want_grad:
            continue
        acc = 0.0
        for n in range(N - 1, -1, -1):  # its reverse
            F[n] = acc
            acc = w[s, n] * x[n] + (1.0 - y[n]) * acc
        for k in range(K):
            ak = a[s, k]
            bk = b[s, k]
            for n in range(N):
                grad[l, n, k] = surv[n] * (w[s, n] * ak - F[n] * bk)
