"""Compiled pieces of the solver's sequential linearisation (:func:`meta_eval.statistics.maxent.solver._solve_nonlinear`).

Each step of the iteration maps the centred logits of every live list to a distribution, solves the linearised
problem (:func:`meta_eval.statistics.maxent._newton.linearised_lists`), and moves the logits by a plain or Anderson step
(:func:`advance_lists`): one loop per list over full-size state arrays indexed by the live lists, so no step copies a
list's arrays in or out. The per-list pieces (softmax, logit step, step change, Anderson) are also exposed batched
(:func:`softmax_rows`, :func:`logit_step`, :func:`step_change`, :func:`anderson`) for the tests, which check them
against numpy.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from meta_eval.statistics.maxent._vector import exp_neg, exp_shifted, lane_dot, lane_sum, solve_small

ACTIVE = 50.0  # logits more than this below their rank's largest hold probabilities below e^-50 of it: inactive


# ------------------------------------------------------------------------------------------------------------
# One list (rank-major: ranks x grades)
# ------------------------------------------------------------------------------------------------------------

@njit(cache=True, error_model="numpy")
def _softmax_one(th, allowed, rowmask, p, bits):
    """p = row-wise softmax over grades of the logits th (ranks x grades) on the allowed entries (0 elsewhere and
    past the list's end); the exps in one vectorised call (:func:`meta_eval.statistics.maxent._vector.exp_neg`); bits (ranks *
    grades, int64) scratch."""
    N, K = th.shape
    for n in range(N):
        m = -np.inf
        if rowmask[n]:
            for k in range(K):
                if allowed[n, k]:
                    m = max(m, th[n, k])
        for k in range(K):
            p[n, k] = th[n, k] - m if (m > -np.inf and allowed[n, k]) else -np.inf
    flat = p.reshape(N * K)
    args = flat.copy()  # the exps read one array and write another: apart, the compiler vectorises them
    exp_neg(args, flat, bits)
    for n in range(N):
        s = 0.0
        for k in range(K):
            s += p[n, k]
        if s > 0.0:
            inv = 1.0 / s
            for k in range(K):
                p[n, k] *= inv


@njit(cache=True, error_model="numpy")
def _logit_step_one(y, d, allowed, th, f, tau):
    """f = centre(lambda + mu d) - th on the allowed entries (0 elsewhere), centred over each rank's allowed grades;
    returns max |f| and the stationarity residual: the same change over the active entries only, those whose
    probability is within e^-ACTIVE of their rank's largest, each rank's logits taken relative to their largest and
    raised to -ACTIVE (so a saturated entry is exactly -ACTIVE however large the logits) before centring.
    y (K + 1) = (lambda, mu); d, allowed, th (ranks x grades); f flat (ranks * grades); tau (grades) scratch.

    Near an attainable extreme the metric multiplier reaches 1e10 and the logits of the entries it excludes
    1e10 and more, where a change of the multiplier in its last digits (the value pins it no better) moves them by
    units: max |f| then never falls below its tolerance although no probability moves (ERR near its maximum:
    0.4-1.1 % of lists failed so). The stationarity residual leaves out these entries."""
    N, K = d.shape
    big = 0.0
    worst = 0.0
    mu = y[K]
    for n in range(N):
        s = 0.0
        c = 0
        ma = -np.inf
        mb = -np.inf
        for k in range(K):
            t = y[k] + mu * d[n, k]
            tau[k] = t
            if allowed[n, k]:
                s += t
                c += 1
                ma = max(ma, t)
                mb = max(mb, th[n, k])
        if c == 0:
            for k in range(K):
                f[n * K + k] = 0.0
            continue
        mean = s / c
        sa = 0.0
        sb = 0.0
        for k in range(K):
            if allowed[n, k]:
                v = tau[k] - mean - th[n, k]
                f[n * K + k] = v
                a = abs(v)
                if a > big or v != v:
                    big = a if v == v else np.inf
                sa += max(tau[k] - ma, -ACTIVE)
                sb += max(th[n, k] - mb, -ACTIVE)
            else:
                f[n * K + k] = 0.0
        shift = (sa - sb) / c
        for k in range(K):
            if allowed[n, k]:
                v = max(tau[k] - ma, -ACTIVE) - max(th[n, k] - mb, -ACTIVE) - shift
                a = abs(v)
                if a > worst or v != v:
                    worst = a if v == v else np.inf
    return big, worst


@njit(cache=True, error_model="numpy")
def _step_change_one(q, p, r, col):
    """The largest probability change max |q - p| and the largest count residual max_j |sum_n q_nj - r_j| of a step
    from p to q (ranks x grades); col (grades) scratch."""
    N, K = q.shape
    big = 0.0
    for k in range(K):
        col[k] = 0.0
    for n in range(N):
        for k in range(K):
            a = abs(q[n, k] - p[n, k])
            if a > big or a != a:
                big = a if a == a else np.inf
            col[k] += q[n, k]
    worst = 0.0
    for k in range(K):
        a = abs(col[k] - r[k])
        if a > worst or a != a:
            worst = a if a == a else np.inf
    return big, worst


@njit(cache=True, error_model="numpy")
def _anderson_one(X, F, order, nh, x, f, beta, out, G, b, gam, dF):
    """One Anderson (type II) step for one list: X, F (m, D) ring buffers of iterates and residuals read in the time
    ``order`` (oldest first), of which the last ``nh`` are valid; x, f (D) the current iterate and residual; mixing
    ``beta``. Least squares on the residual differences with a ridge of 1e-10 of the Gram matrix's trace; G, b, gam
    ((m-1) x (m-1), m-1, m-1) and dF ((m-1) x D: the differences) scratch. The step goes to ``out``. The dot
    products run in lanes (:func:`meta_eval.statistics.maxent._vector.lane_dot`), every loop over contiguous entries."""
    m = order.size
    D = x.size
    lo = max(m - nh - 1, 0)  # the valid differences (between time slots i and i + 1): i >= lo
    for i in range(m - 1):
        for j in range(m - 1):
            G[i, j] = 0.0
        b[i] = 0.0
    for i in range(lo, m - 1):
        o0, o1 = order[i], order[i + 1]
        for e in range(D):
            dF[i, e] = F[o1, e] - F[o0, e]
    for i in range(lo, m - 1):
        for j in range(i, m - 1):
            G[i, j] = lane_dot(dF[i], dF[j], D)
            G[j, i] = G[i, j]
        b[i] = lane_dot(dF[i], f, D)
    tr = 0.0
    for i in range(m - 1):
        tr += G[i, i]
    reg = 1e-10 * tr + 1e-300
    for i in range(m - 1):
        G[i, i] += reg + (1.0 if i < lo else 0.0)
    solve_small(G, b, gam)
    for e in range(D):
        out[e] = x[e] + beta * f[e]
    for i in range(lo, m - 1):
        o0, o1 = order[i], order[i + 1]
        c = gam[i]
        for e in range(D):
            out[e] -= ((X[o1, e] - X[o0, e]) + beta * dF[i, e]) * c


@njit(cache=True, error_model="numpy")
def _anderson_window(dX, dF, Gd, k, w, x, f, beta, out, G, b, gam):
    """One Anderson (type II) step from the last w differences of iterates and residuals, kept in the rings dX, dF
    ((m-1) x D, the difference ending at step s at s % (m-1)) with their Gram matrix Gd ((m-1) x (m-1)); the least
    squares and the step of :func:`_anderson_one` (the same numbers: each Gram entry is computed once, when the newer
    of its two differences arrives). G, b, gam scratch."""
    M1 = dX.shape[0]
    D = x.size
    for i in range(w):  # oldest first
        pi = (k - (w - 1 - i)) % M1
        for j in range(w):
            G[i, j] = Gd[pi, (k - (w - 1 - j)) % M1]
        b[i] = lane_dot(dF[pi], f, D)
    tr = 0.0
    for i in range(w):
        tr += G[i, i]
    reg = 1e-10 * tr + 1e-300
    for i in range(w):
        G[i, i] += reg
    solve_small(G[:w, :w], b[:w], gam[:w])
    for e in range(D):
        out[e] = x[e] + beta * f[e]
    for i in range(w):
        pi = (k - (w - 1 - i)) % M1
        c = gam[i]
        for e in range(D):
            out[e] -= (dX[pi, e] + beta * dF[pi, e]) * c


# ------------------------------------------------------------------------------------------------------------
# One step of every live list (grade-major: grades x ranks, every loop over contiguous ranks)
# ------------------------------------------------------------------------------------------------------------

@njit(cache=True, error_model="numpy")
def _logit_step_gm(lam, mu, dK, act, n, x, f, T, ma, mb, s, sa, sb):
    """:func:`_logit_step_one` grade-major for one list of n ranks whose allowed entries are the grades ``act`` at
    every rank: f = centre(lam + mu dK) - x (0 off the active grades), max |f| and the stationarity residual.
    dK, x, f, T (grades x ranks); ma, mb, s, sa, sb (ranks) scratch."""
    K = dK.shape[0]
    c = 0
    for k in range(K):
        c += act[k]
    for i in range(n):
        ma[i] = -np.inf
        mb[i] = -np.inf
        s[i] = 0.0
        sa[i] = 0.0
        sb[i] = 0.0
    for k in range(K):
        if not act[k]:
            continue
        lk = lam[k]
        for i in range(n):
            t = lk + mu * dK[k, i]
            T[k, i] = t
            s[i] += t
            ma[i] = max(ma[i], t)
            mb[i] = max(mb[i], x[k, i])
    inv = 1.0 / max(c, 1)
    b0 = b1 = b2 = b3 = 0.0
    w0 = w1 = w2 = w3 = 0.0
    nan = False
    for k in range(K):
        if not act[k]:
            for i in range(f.shape[1]):
                f[k, i] = 0.0
            continue
        for i in range(n):
            v = T[k, i] - s[i] * inv - x[k, i]
            f[k, i] = v
            sa[i] += max(T[k, i] - ma[i], -ACTIVE)
            sb[i] += max(x[k, i] - mb[i], -ACTIVE)
        full = n - n % 4
        for i in range(0, full, 4):
            b0 = max(b0, abs(f[k, i]))
            b1 = max(b1, abs(f[k, i + 1]))
            b2 = max(b2, abs(f[k, i + 2]))
            b3 = max(b3, abs(f[k, i + 3]))
        for i in range(full, n):
            b0 = max(b0, abs(f[k, i]))
        for i in range(n):
            nan = nan or f[k, i] != f[k, i]
        for i in range(n, f.shape[1]):
            f[k, i] = 0.0
    for k in range(K):
        if not act[k]:
            continue
        full = n - n % 4
        for i in range(0, full, 4):
            w0 = max(w0, abs(max(T[k, i] - ma[i], -ACTIVE) - max(x[k, i] - mb[i], -ACTIVE) - (sa[i] - sb[i]) * inv))
            w1 = max(w1, abs(max(T[k, i + 1] - ma[i + 1], -ACTIVE) - max(x[k, i + 1] - mb[i + 1], -ACTIVE)
                             - (sa[i + 1] - sb[i + 1]) * inv))
            w2 = max(w2, abs(max(T[k, i + 2] - ma[i + 2], -ACTIVE) - max(x[k, i + 2] - mb[i + 2], -ACTIVE)
                             - (sa[i + 2] - sb[i + 2]) * inv))
            w3 = max(w3, abs(max(T[k, i + 3] - ma[i + 3], -ACTIVE) - max(x[k, i + 3] - mb[i + 3], -ACTIVE)
                             - (sa[i + 3] - sb[i + 3]) * inv))
        for i in range(full, n):
            w0 = max(w0, abs(max(T[k, i] - ma[i], -ACTIVE) - max(x[k, i] - mb[i], -ACTIVE) - (sa[i] - sb[i]) * inv))
    if nan:
        return np.inf, np.inf
    return max(max(b0, b1), max(b2, b3)), max(max(w0, w1), max(w2, w3))


@njit(cache=True, error_model="numpy")
def _step_change_gm(QK, pK, r, n):
    """Grade-major :func:`_step_change_one`: max |q - p| and max_j |sum_n q_nj - r_j| over n ranks."""
    K = QK.shape[0]
    b0 = b1 = b2 = b3 = 0.0
    nan = False
    worst = 0.0
    full = n - n % 4
    for k in range(K):
        for i in range(0, full, 4):
            b0 = max(b0, abs(QK[k, i] - pK[k, i]))
            b1 = max(b1, abs(QK[k, i + 1] - pK[k, i + 1]))
            b2 = max(b2, abs(QK[k, i + 2] - pK[k, i + 2]))
            b3 = max(b3, abs(QK[k, i + 3] - pK[k, i + 3]))
        for i in range(full, n):
            b0 = max(b0, abs(QK[k, i] - pK[k, i]))
        for i in range(n):
            nan = nan or QK[k, i] != QK[k, i]
        a = abs(lane_sum(QK[k], n) - r[k])
        worst = a if (a > worst or a != a) else worst
    big = np.inf if nan else max(max(b0, b1), max(b2, b3))
    return big, (np.inf if worst != worst else worst)


@njit(cache=True, error_model="numpy")
def _softmax_gm(x, act, n, out, M, S, Z, bits):
    """Softmax over the active grades of the logits x (grades x ranks) at n ranks into out (0 elsewhere); M, S, Z
    (ranks) scratch (the exps read x and write out: apart, the compiler vectorises them)."""
    K = x.shape[0]
    for i in range(n):
        M[i] = -np.inf
        S[i] = 0.0
    for k in range(K):
        if act[k]:
            for i in range(n):
                M[i] = max(M[i], x[k, i])
    for k in range(K):
        if act[k]:
            exp_shifted(x[k], M, out[k], S, bits, n)
        else:
            for i in range(n):
                out[k, i] = 0.0
    for i in range(n):
        S[i] = 1.0 / S[i] if S[i] > 0.0 else 0.0
    for k in range(K):
        for i in range(n):
            out[k, i] *= S[i]


@njit(cache=True, error_model="numpy")
def advance_lists(k, live, q, QK, DK, spans, yl, ok, Eq, pK, v, tol, r, active, lengths, x, dX, dF, Gd, xprev, fprev,
                  nh, bt, last_n, last_dq, stalls, it, done, stat, P, Y, mix, limit, damp_after, stat_tol,
                  anderson_start, stalled_steps):
    """After the linearised solves of step ``k``: for each live list i (``live[i]`` indexes the full-size state; q
    (ranks x grades), QK and DK (the distribution and the scaled direction, grades x ranks), spans, yl, ok, Eq, pK
    are compact) record the step, test convergence, and move the logits x by a plain, damped or Anderson step
    (:func:`meta_eval.statistics.maxent.solver._solve_nonlinear`, whose loop this is). Returns which live lists go on and the
    distributions of their new logits, rank-major and grade-major (compact, in the order of the lists that go on):
    q itself after a plain step (x then holds q's logits), p after a failed one (x did not move), softmax(x)
    otherwise.

    State, per list (full size, grade-major): x (L, K, N) centred logits; dX, dF (L, m-1, K N) rings of the last
    differences of iterates and residuals (the difference ending at step s at s % (m-1)), Gd (L, m-1, m-1) their
    Gram matrix, xprev, fprev (L, K N) the last iterate and residual; nh the valid history length; bt the damping of the value correction; last_n, last_dq the last
    logit and probability changes; stalls (failed steps in a row), it, done, stat, P (rank-major), Y, mix (1, or 0.5
    once damped). ``active`` (L, K) and ``lengths`` (L,): the allowed entries are the active grades at the first
    ``lengths`` ranks (the count constraints' pattern)."""
    A, N, K = q.shape
    D = K * N
    M1 = dX.shape[1]
    m = M1 + 1  # the history length: m iterates, m - 1 differences
    f = np.empty((K, N))
    xn = np.empty(D)
    T = np.empty((K, N))
    vec = np.empty((5, N))
    G = np.empty((M1, M1))
    b = np.empty(M1)
    gam = np.empty(M1)
    bits = np.empty(N, dtype=np.int64)
    lam = np.empty(K)
    pos = k % M1  # the ring position of this step's difference
    keep = np.zeros(A, dtype=np.bool_)
    kind = np.zeros(A, dtype=np.int64)  # the next distribution: 0 softmax(x), 1 q, 2 p
    for i in range(A):
        l = live[i]
        n = lengths[l]
        xl = x[l]
        for a in range(K):
            lam[a] = yl[i, a]
        fn, fstat = _logit_step_gm(lam, yl[i, K] * spans[i], DK[i], active[l], n, xl, f, T, vec[0], vec[1], vec[2],
                                   vec[3], vec[4])
        good = ok[i] and fn < np.inf
        for a in range(K + 1):
            good = good and np.isfinite(yl[i, a])
        it[l] += 1
        if good:
            for j in range(N):
                for kk in range(K):
                    P[l, j, kk] = q[i, j, kk]
            for a in range(K + 1):
                Y[l, a] = yl[i, a]
            stat[l] = fstat
        full = good and bt[l] == 1.0
        dq, count_residual = _step_change_gm(QK[i], pK[i], r[l], n)
        conv = (full and abs(Eq[i] - v[l]) <= tol and (fstat <= stat_tol or dq <= 1e-11)
                and count_residual <= 1e-9)
        if conv:
            done[l] = True
        bt[l] = min(1.0, 2.0 * bt[l]) if good else 0.5 * bt[l]
        grew = fn > 1.5 * last_n[l]
        xf = xl.reshape(D)
        ff = f.reshape(D)
        if not good:  # a failed step moves nothing: its residual counts as 0
            for e in range(D):
                ff[e] = 0.0
        for e in range(D):
            dX[l, pos, e] = xf[e] - xprev[l, e]
            dF[l, pos, e] = ff[e] - fprev[l, e]
            xprev[l, e] = xf[e]
            fprev[l, e] = ff[e]
        if good:
            last_n[l] = fn
            last_dq[l] = dq
        near = full and not grew and fn < anderson_start  # Anderson only near the fixed point
        # lists still running after damp_after steps (oscillating plain steps): damped steps, Anderson allowed
        slow = it[l] > damp_after
        mix[l] = 0.5 if slow else 1.0
        near = near or (full and not grew and slow)
        nhl = min(nh[l] + 1, m) if near else 0
        w = min(nhl, M1)  # the differences Anderson uses: this step's and the w - 1 before (all made near the
        for j in range(w):  # fixed point), their Gram entries with this step's difference computed now, once
            pj = (k - j) % M1
            Gd[l, pos, pj] = lane_dot(dF[l, pos], dF[l, pj], D)
            Gd[l, pj, pos] = Gd[l, pos, pj]
        if nhl >= 2:
            _anderson_window(dX[l], dF[l], Gd[l], k, w, xf, ff, mix[l], xn, G, b, gam)
            for e in range(D):
                xf[e] = xn[e] if np.isfinite(xn[e]) else xf[e] + mix[l] * ff[e]
        else:
            for e in range(D):
                xf[e] = xf[e] + mix[l] * ff[e]
            kind[i] = 1 if (good and mix[l] == 1.0) else (2 if not good else 0)
        nh[l] = nhl
        stalls[l] = 0 if good else stalls[l] + 1
        # lists that are done, out of iterations, or whose steps have all failed for a while stop (flagged)
        keep[i] = not conv and it[l] < limit[l] and stalls[l] < stalled_steps
    kept = 0
    for i in range(A):
        kept += keep[i]
    out = np.empty((kept, N, K))  # the ranks past each list's end are zeroed below
    outK = np.empty((kept, K, N))
    j = 0
    for i in range(A):
        if not keep[i]:
            continue
        l = live[i]
        n = lengths[l]
        if kind[i] == 1:
            outK[j] = QK[i]
            out[j] = q[i]
        else:
            if kind[i] == 2:
                outK[j] = pK[i]
            else:
                _softmax_gm(x[l], active[l], n, outK[j], vec[0], vec[1], vec[2], bits)
            for kk in range(K):
                for jj in range(n, N):
                    outK[j, kk, jj] = 0.0
            for jj in range(n):
                for kk in range(K):
                    out[j, jj, kk] = outK[j, kk, jj]
            for jj in range(n, N):
                for kk in range(K):
                    out[j, jj, kk] = 0.0
        j += 1
    return keep, out, outK


# ------------------------------------------------------------------------------------------------------------
# Batched versions (tests)
# ------------------------------------------------------------------------------------------------------------

@njit(cache=True, error_model="numpy")
def softmax_rows(th, allowed, rowmask):
    """Row-wise softmax over grades of (lists, ranks, grades) logits on the allowed entries (0 elsewhere and past
    each list's end)."""
    L, N, K = th.shape
    p = np.zeros((L, N, K))
    bits = np.empty(N * K, dtype=np.int64)
    for l in range(L):
        _softmax_one(th[l], allowed[l], rowmask[l], p[l], bits)
    return p


@njit(cache=True, error_model="numpy")
def logit_step(y, d, allowed, th):
    """:func:`_logit_step_one` for every list: f (L, N * K), max |f| and the stationarity residual (L,)."""
    L, N, K = d.shape
    f = np.zeros((L, N * K))
    fn = np.zeros(L)
    stat = np.zeros(L)
    tau = np.empty(K)
    for l in range(L):
        fn[l], stat[l] = _logit_step_one(y[l], d[l], allowed[l], th[l], f[l], tau)
    return f, fn, stat


@njit(cache=True, error_model="numpy")
def anderson(X, F, rows, order, nh, x, f, beta):
    """:func:`_anderson_one` for the lists ``rows`` of X, F (lists, m, D); x, f (A, D), nh and beta (A,)."""
    A_, D = x.shape
    m = order.size
    out = np.empty((A_, D))
    G = np.empty((m - 1, m - 1))
    b = np.empty(m - 1)
    gam = np.empty(m - 1)
    dF = np.empty((m - 1, D))
    for a in range(A_):
        _anderson_one(X[rows[a]], F[rows[a]], order, nh[a], x[a], f[a], beta[a], out[a], G, b, gam, dF)
    return out


@njit(cache=True, error_model="numpy")
def step_change(q, p, r):
    """:func:`_step_change_one` for every list (L, N, K); r (L, K)."""
    L, N, K = q.shape
    dq = np.zeros(L)
    res = np.zeros(L)
    col = np.empty(K)
    for l in range(L):
        dq[l], res[l] = _step_change_one(q[l], p[l], r[l], col)
    return dq, res


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
