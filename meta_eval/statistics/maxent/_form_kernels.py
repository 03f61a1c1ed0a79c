"""Compiled value and gradient of the pairwise and cascade expectation forms (:mod:`meta_eval.statistics.maxent.expectations`).

Both forms are prefix recurrences over ranks (a running sum for the pairwise form, a running survival product for
the cascade), evaluated for many lists at every step of the solver: one fused loop per list here, against some
twenty passes over (lists x ranks x grades) temporaries in numpy (einsum, cumulative sums). ``rows`` selects the
lists of the form's arrays that the rows of ``P`` belong to, so a form restricted to some lists is a view, not a
copy. Checked against finite differences, Monte Carlo and brute-force enumeration in the tests.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def pairwise(A, W, U, V, rows, P, want_grad, value, grad):
    """E = sum_{n,j} A[n,j] p_n(j) + sum_q sum_n W[q,n] (U_q . p_n) S_q(n),  S_q(n) = sum_{m<n} V_q . p_m;

    dE/dp_n(j) = A[n,j] + sum_q [W[q,n] U_q(j) S_q(n) + V_q(j) T_q(n)],  T_q(n) = sum_{k>n} W[q,k] U_q . p_k.
    A (L0, N0, K), W (L0, Q, N0), U and V (L0, Q, K); rows (L,) into them; P (L, N, K) with N <= N0.
    """
    L, N, K = P.shape
    Q = W.shape[1]
    u = np.empty((Q, N))
    S = np.empty((Q, N))
    acc = np.empty(Q)
    T = np.empty(Q)
    for l in range(L):
        s = rows[l]
        total = 0.0
        for q in range(Q):
            acc[q] = 0.0
        for n in range(N):
            for k in range(K):
                total += A[s, n, k] * P[l, n, k]
            for q in range(Q):
                uq = 0.0
                vq = 0.0
                for k in range(K):
                    uq += U[s, q, k] * P[l, n, k]
                    vq += V[s, q, k] * P[l, n, k]
                u[q, n] = uq
                S[q, n] = acc[q]
                total += W[s, q, n] * uq * acc[q]
                acc[q] += vq
        value[l] = total
        if not want_grad:
            continue
        for q in range(Q):
            T[q] = 0.0
        for n in range(N - 1, -1, -1):
            for k in range(K):
                g = A[s, n, k]
                for q in range(Q):
                    g += W[s, q, n] * U[s, q, k] * S[q, n] + V[s, q, k] * T[q]
                grad[l, n, k] = g
            for q in range(Q):
                T[q] += W[s, q, n] * u[q, n]


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
    for l in range(L):
        s = rows[l]
        total = 0.0
        alive = 1.0
        for n in range(N):
            xn = 0.0
            yn = 0.0
            for k in range(K):
                xn += a[s, k] * P[l, n, k]
                yn += b[s, k] * P[l, n, k]
            x[n] = xn
            y[n] = yn
            surv[n] = alive
            total += w[s, n] * xn * alive
            alive *= 1.0 - yn
        value[l] = total
        if not want_grad:
            continue
        F = 0.0
        for n in range(N - 1, -1, -1):
            if n < N - 1:
                F = w[s, n + 1] * x[n + 1] + (1.0 - y[n + 1]) * F
            for k in range(K):
                grad[l, n, k] = surv[n] * (w[s, n] * a[s, k] - F * b[s, k])
