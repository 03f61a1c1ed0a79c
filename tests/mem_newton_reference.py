"""Plain numpy versions of the solver's dual Newton iteration and Anderson step: the references the compiled kernels
(:mod:`meta_eval.statistics.maxent._newton`, :mod:`meta_eval.statistics.maxent._iteration`) are checked against. Batched over lists in a
(lists, grades, ranks) layout."""

import numpy as np

from meta_eval.statistics.maxent._newton import RUNAWAY_GROWTH, RUNAWAY_STEPS
from meta_eval.statistics.maxent.linear import STALL_TOL, STEP_CAP

_NEG = -np.inf


def _softmax_kn(th: np.ndarray, rowmask: np.ndarray):
    """Softmax over the grades of (lists, grades, ranks) logits, and each rank's log-sum-exp (0 past the end)."""
    m = th.max(axis=1)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(th - m[:, None, :])
    s = e.sum(axis=1)
    s = np.where(s > 0, s, 1.0)
    q = e * (rowmask / s)[:, None, :]
    return q, np.where(rowmask, np.log(s) + m, 0.0)


def _dual_parts(y, d, allowed, rowmask, r, t):
    """q and the dual objective sum_n logsumexp(theta_n) - lambda.r - mu t, in the (lists, grades, ranks) layout."""
    K = d.shape[1]
    th = np.where(allowed, y[:, :K, None] + y[:, K, None, None] * d, _NEG)
    q, lse = _softmax_kn(th, rowmask)
    f = lse.sum(1) - np.einsum("lk,lk->l", y[:, 1:K], r[:, 1:]) - y[:, K] * t
    return q, f


def _grad_hess(q, d, r, t, frozen):
    """Gradient and Hessian of the dual in (lambda, mu), (lists, grades, ranks) layout (d is 0 where q is)."""
    L, K, N = q.shape
    g = np.empty((L, K + 1))
    qsum = q.sum(2)
    g[:, :K] = qsum - r
    mvec = (q * d).sum(1)  # (L, N): E_q[d] at each rank
    g[:, K] = mvec.sum(1) - t
    H = np.empty((L, K + 1, K + 1))
    H[:, :K, :K] = -np.matmul(q, q.transpose(0, 2, 1))
    idx = np.arange(K)
    H[:, idx, idx] += qsum
    dev = d - mvec[:, None, :]
    qdev = q * dev
    H[:, :K, K] = qdev.sum(2)
    H[:, K, :K] = H[:, :K, K]
    H[:, K, K] = (qdev * dev).sum((1, 2))
    g = np.where(frozen, 0.0, g)
    H = np.where(frozen[:, :, None] | frozen[:, None, :], 0.0, H)
    H[:, np.arange(K + 1), np.arange(K + 1)] += frozen
    return g, H


def _newton_linear(d, allowed, rowmask, r, t, y, frozen, tol, max_iter, grow_cap=False):
    """Minimise the dual for every list. Returns q (lists, ranks, grades), y, iterations, converged flags.

    ``d`` is assumed scaled to O(1); residual tolerances are absolute in the scaled units. ``y`` is updated in
    place. The backtracking line search accepts a step that does not increase the dual beyond its round-off level
    (about 1e-13 of the sum of its terms), so converged lists do not spend halvings on rounding noise; a list
    whose step had to be shortened and then lowered the dual by no more than that stops.
    """
    L, N, K = d.shape
    tol = np.broadcast_to(np.asarray(tol, dtype=float), (L,))
    d = np.ascontiguousarray(np.moveaxis(np.where(allowed, d, 0.0), 2, 1))
    allowed = np.ascontiguousarray(np.moveaxis(allowed, 2, 1))
    noise = 1e-13 * (rowmask.sum(1) + 1.0)
    iters = np.zeros(L, dtype=np.int64)
    done = np.zeros(L, dtype=bool)
    cap = np.full(L, STEP_CAP)
    ratio = np.zeros(L)
    runaway = np.zeros(L, dtype=np.int64)
    q, f = _dual_parts(y, d, allowed, rowmask, r, t)
    live = np.arange(L)
    for it in range(max_iter):
        g, H = _grad_hess(q[live], d[live], r[live], t[live], frozen[live])
        ok = np.max(np.abs(g), axis=1) <= tol[live]
        done[live[ok]] = True
        live = live[~ok]
        if live.size == 0:
            break
        g, H = g[~ok], H[~ok]
        diag = np.abs(np.diagonal(H, axis1=1, axis2=2))
        scale = np.maximum(diag.max(1), 1e-300)
        # ridge relative to each variable's own curvature (the metric multiplier's can be 1e-18 of the counts')
        Hreg = H + 1e-13 * np.maximum(diag, 1e-300 * scale[:, None])[:, :, None] * np.eye(K + 1)
        try:
            step = -np.linalg.solve(Hreg, g[..., None])[..., 0]
        except np.linalg.LinAlgError:
            step = -np.stack([np.linalg.lstsq(h, gg, rcond=None)[0] for h, gg in zip(Hreg, g)])
        step = np.where(np.isfinite(step), step, 0.0)
        # damped: cap the multiplier change, then backtrack on the (convex) dual. With ``grow_cap`` the cap doubles
        # after each full capped step (a value near an extreme needs multipliers growing geometrically) and halves
        # on backtracking.
        big = np.abs(step).max(1)
        capped = big > cap[live]
        if (still := big == 0.0).any():  # no direction at all: stop those lists
            stuck = live[still]
            done[stuck] = np.max(np.abs(g[still]), axis=1) <= np.maximum(tol[stuck], STALL_TOL)
            keep = ~still
            live, g, H, step, big, capped = live[keep], g[keep], H[keep], step[keep], big[keep], capped[keep]
            if live.size == 0:
                break
        if grow_cap:  # a step outgrowing its doubling cap 6 times in a row: the dual is unbounded, stop (failed)
            grows = capped & (big / cap[live] > RUNAWAY_GROWTH * ratio[live])
            runaway[live] = np.where(grows, runaway[live] + 1, 0)
            ratio[live] = np.where(capped, big / cap[live], 0.0)
            keep = runaway[live] < RUNAWAY_STEPS
            live, g, H, step, big, capped = live[keep], g[keep], H[keep], step[keep], big[keep], capped[keep]
            if live.size == 0:
                break
        iters[live] += 1
        step *= np.minimum(1.0, cap[live] / np.maximum(big, 1e-300))[:, None]
        slope = np.einsum("lk,lk->l", g, step)
        alpha = np.ones(live.size)
        f0 = f[live]
        pending = np.arange(live.size)
        ynew = y[live].copy()
        qnew = np.empty((live.size, K, N))
        fnew = np.empty(live.size)
        for _ in range(30):
            lv = live[pending]
            yt = y[lv] + alpha[pending, None] * step[pending]
            qt, ft = _dual_parts(yt, d[lv], allowed[lv], rowmask[lv], r[lv], t[lv])
            acc = ft <= f0[pending] + 1e-4 * alpha[pending] * slope[pending]
            acc |= ft <= f0[pending] + noise[lv] * (1.0 + np.abs(f0[pending]))  # round-off level
            idx = pending[acc]
            ynew[idx], qnew[idx], fnew[idx] = yt[acc], qt[acc], ft[acc]
            pending = pending[~acc]
            if pending.size == 0:
                break
            alpha[pending] *= 0.5
        full_step = alpha == 1.0
        if grow_cap:
            cap[live] = np.where(capped & full_step, 2.0 * cap[live],
                                 np.where(full_step, cap[live], np.maximum(STEP_CAP, 0.5 * cap[live])))
        accepted = np.ones(live.size, dtype=bool)
        accepted[pending] = False
        if pending.size:  # no decrease along the Newton direction: keep the old point
            ynew[pending], fnew[pending] = y[live[pending]], f0[pending]
            qnew[pending] = q[live[pending]]
        y[live], q[live], f[live] = ynew, qnew, fnew
        # a shortened step that lowered the dual by no more than its round-off made no progress either
        crawled = accepted & (alpha < 1.0) & (f0 - fnew <= noise[live] * (1.0 + np.abs(f0)))
        if (stop := ~accepted | crawled).any():  # the dual is at its round-off floor (or stuck): stop those lists
            stalled = live[stop]
            g_stall, _ = _grad_hess(q[stalled], d[stalled], r[stalled], t[stalled], frozen[stalled])
            done[stalled] = np.max(np.abs(g_stall), axis=1) <= np.maximum(tol[stalled], STALL_TOL)
            live = np.setdiff1d(live, stalled, assume_unique=True)
            if live.size == 0:
                break
    else:
        g, _ = _grad_hess(q[live], d[live], r[live], t[live], frozen[live])
        done[live[np.max(np.abs(g), axis=1) <= tol[live]]] = True
    return np.ascontiguousarray(np.moveaxis(q, 1, 2)), y, iters, done


def anderson_reference(X, F, nh, x, f, beta):
    """One Anderson (type II) step per list in plain numpy (the iteration of
    :func:`meta_eval.statistics.maxent._iteration.anderson`): X, F (L, m, D) histories oldest first, the last ``nh[l]`` valid."""
    L, m, D = X.shape
    dX = np.diff(X, axis=1)
    dF = np.diff(F, axis=1)
    valid = (np.arange(1, m)[None, :] >= (m - nh)[:, None])
    dX = dX * valid[..., None]
    dF = dF * valid[..., None]
    G = np.einsum("lid,ljd->lij", dF, dF)
    b = np.einsum("lid,ld->li", dF, f)
    reg = 1e-10 * np.trace(G, axis1=1, axis2=2) + 1e-300
    G = G + reg[:, None, None] * np.eye(m - 1) + (~valid)[:, :, None] * np.eye(m - 1)
    gam = np.linalg.solve(G, b[..., None])[..., 0] * valid
    return x + beta[:, None] * f - np.einsum("lid,li->ld", dX + beta[:, None, None] * dF, gam)
