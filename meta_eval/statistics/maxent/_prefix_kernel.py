"""The compiled forward/backward programme of the prefix-state form (:mod:`meta_eval.statistics.maxent.prefix_state`, eq. (2)).

For list l with automaton g and n documents, with Abar_i = sum_j P[l, i, j] A_i[j]:

    f_0 = alpha_g,  f_{i+1}^T = f_i^T Abar_i;     b_n = beta_n,  b_i = Abar_i b_{i+1};
    E = f_n . b_n,  dE/dP[l, i, j] - dE/dP[l, i, 0] = f_i^T (A_i[j] - A_i[0]) b_{i+1}.

The gradient is returned relative to grade 0 at each rank: each row of P sums to 1, so only these differences
move E (and the maximum-entropy solution), and subtracting the matrices before the products keeps them exact where
they are tiny beside the value carried through (a survival probability of 1e-12 next to a running sum of 1: the
difference of two such products would be rounding noise).

A loop over lists and ranks with r x r products (r: the automaton's dimension, at most a few): numba, because the
work is a sequential recurrence over ranks that numpy can only express as one small matrix product per rank.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, error_model="numpy")
def value_grad(alpha, mats, tails, group, lengths, P, want_grad, value, grad):
    """E[M] of every list into ``value`` (L,) and, with ``want_grad``, dE/dP relative to grade 0 into ``grad``
    (L, N, K; 0 past each list's end). alpha (G, r), mats (G, N, K, r, r), tails (G, N + 1, r), group and lengths (L,), P (L, N, K)."""
    L, N, K = P.shape
    r = alpha.shape[1]
    F = np.empty((N + 1, r))
    Abar = np.empty((r, r))
    b = np.empty(r)
    nb = np.empty(r)
    for l in range(L):
        g = group[l]
        n = lengths[l]
        for a in range(r):
            F[0, a] = alpha[g, a]
        for i in range(n):
            for a in range(r):
                for c in range(r):
                    t = 0.0
                    for k in range(K):
                        t += P[l, i, k] * mats[g, i, k, a, c]
                    Abar[a, c] = t
            for c in range(r):
                s = 0.0
                for a in range(r):
                    s += F[i, a] * Abar[a, c]
                F[i + 1, c] = s
        v = 0.0
        for a in range(r):
            v += F[n, a] * tails[g, n, a]
        value[l] = v
        if not want_grad:
            continue
        for a in range(r):
            b[a] = tails[g, n, a]
        for i in range(n - 1, -1, -1):
            for k in range(K):
                s = 0.0
                for a in range(r):
                    fa = F[i, a]
                    if fa == 0.0:
                        continue
                    t = 0.0
                    for c in range(r):
                        t += (mats[g, i, k, a, c] - mats[g, i, 0, a, c]) * b[c]
                    s += fa * t
                grad[l, i, k] = s
            for a in range(r):
                t = 0.0
                for c in range(r):
                    m = 0.0
                    for k in range(K):
                        m += P[l, i, k] * mats[g, i, k, a, c]
                    t += m * b[c]
                nb[a] = t
            for a in range(r):
                b[a] = nb[a]
        for i in range(n, N):
            for k in range(K):
                grad[l, i, k] = 0.0
