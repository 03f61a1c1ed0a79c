"""The linear maximum-entropy problem, shared by the solver and the sampled fallback.

For each list, maximise the entropy of P subject to the count constraints sum_n p_n(j) = r_j and one linear
constraint sum_{n,j} d_nj p_nj = t (methods.md Sec. 1.2): the solution is p_n = softmax(lambda + mu d_n), the
multipliers the minimiser of the convex dual, found by damped Newton (:mod:`meta_eval.statistics.maxent._newton`). A metric's
value is matched along a direction d (:func:`match_value`) by searching mu with the counts held by lambda.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meta_eval.statistics.maxent.batch import ListBatch
from meta_eval.statistics.maxent.expectations import restrict

STEP_CAP = 50.0  # initial largest change of a (scaled) multiplier in one Newton step (adapted per list)
STALL_TOL = 1e-9  # gradient accepted when the line search can no longer decrease the dual (round-off floor)
# largest scaled metric multiplier tried when matching a value: a value within the tolerance (1e-10) of an extreme
# needs one of order 1/gap (ERR 7e-11 below its maximum: 4e10; the cap of 1e9 before left 13 TREC-COVID lists
# unsolved); beyond 1e13 the logits lose every digit a probability could see
MU_MAX = 1e13


def newton_dual(d, allowed, rowmask, r, t, y, frozen, tol, max_iter, grow_cap=False):
    """Minimise the dual for every list. Returns q (lists, ranks, grades), y, iterations, converged flags.

    ``d`` is assumed scaled to O(1); residual tolerances are absolute in the scaled units. ``y`` is updated in
    place. Damped Newton per list (:func:`meta_eval.statistics.maxent._newton.newton_lists`): the largest multiplier change is
    capped (with ``grow_cap`` the cap doubles after each full capped step, for values near an extreme whose
    multipliers grow geometrically) and the backtracking line search accepts a step that does not increase the
    dual beyond its round-off level, so converged lists do not spend halvings on rounding noise.
    """
    from meta_eval.statistics.maxent._newton import newton_lists

    L = d.shape[0]
    tol = np.ascontiguousarray(np.broadcast_to(np.asarray(tol, dtype=float), (L,)))
    d = np.ascontiguousarray(np.where(allowed, d, 0.0), dtype=float)
    yc = np.ascontiguousarray(y, dtype=float)
    # one dtype and layout per argument: the kernel is compiled (and cached) for exactly one signature
    q, iters, done = newton_lists(d, np.ascontiguousarray(allowed, dtype=bool),
                                  np.ascontiguousarray(rowmask, dtype=bool), np.ascontiguousarray(r, dtype=float),
                                  np.ascontiguousarray(np.broadcast_to(t, (L,)), dtype=float), yc,
                                  np.ascontiguousarray(frozen, dtype=bool), tol, int(max_iter), bool(grow_cap),
                                  float(STEP_CAP), float(STALL_TOL))
    y[...] = yc
    return q, y, iters, done


@dataclass
class Problem:
    """The count constraints of a batch of lists: which entries may hold probability, the targets, and the
    multipliers held at 0."""

    rowmask: np.ndarray  # (L, N)
    allowed: np.ndarray  # (L, N, K) rank inside the list and grade with a positive count target
    r: np.ndarray  # (L, K)
    frozen: np.ndarray  # (L, K+1) variables fixed at 0 (lambda_0, lambda of absent grades)


def problem(batch: ListBatch, r: np.ndarray) -> Problem:
    """The count constraints of ``batch`` with expected counts ``r`` (L, K): a grade with no count is not allowed."""
    L, K = batch.n_lists, batch.n_grades
    rowmask = batch.mask
    active = r > 0.5
    allowed = rowmask[..., None] & active[:, None, :]
    frozen = np.zeros((L, K + 1), dtype=bool)
    frozen[:, 0] = True
    frozen[:, :K] |= ~active
    return Problem(rowmask, allowed, r, frozen)


def normalise(d: np.ndarray, allowed: np.ndarray):
    """Shift/scale d per list to [0, 1] over allowed entries; returns d', lo, span (span 0 -> constant)."""
    from meta_eval.statistics.maxent._iteration import extent, rescale

    d = np.ascontiguousarray(d, dtype=float)
    allowed = np.ascontiguousarray(allowed, dtype=bool)
    big, top = extent(d, allowed)
    lo = np.where(np.isfinite(big), big, 0.0)
    span = np.where(np.isfinite(top), top - lo, 0.0)
    rel = span > 1e-14 * np.maximum(np.abs(lo), np.abs(top + 0.0 * lo)).clip(min=1e-300)
    return rescale(d, allowed, lo, np.where(rel, span, 1.0)), lo, np.where(rel, span, 0.0)


def solve_direction(d, prob: Problem, t, y0, tol, max_iter, grow_cap=False):
    """Max entropy subject to counts and sum d.q = t; returns q, y (mu in units of d), iterations, converged."""
    L, N, K = d.shape
    n = prob.rowmask.sum(1)
    dn, lo, span = normalise(d, prob.allowed)
    tn = np.where(span > 0, (t - lo * n) / np.where(span > 0, span, 1.0), 0.0)
    frozen = prob.frozen.copy()
    frozen[:, K] |= span == 0
    y = np.where(frozen, 0.0, y0)
    y[:, K] = np.where(span > 0, y0[:, K] * span, 0.0)
    q, y, it, done = newton_dual(dn, prob.allowed, prob.rowmask, prob.r, tn, y, frozen, tol, max_iter, grow_cap)
    y[:, K] = np.where(span > 0, y[:, K] / np.where(span > 0, span, 1.0), 0.0)
    return q, y, it, done


def subproblem(prob: Problem, idx) -> Problem:
    """The constraints of the lists ``idx``."""
    return Problem(prob.rowmask[idx], prob.allowed[idx], prob.r[idx], prob.frozen[idx])


def match_value(form, d, prob: Problem, v, y0, lo, hi, tol, inner_iter, evaluations=60):
    """The multiplier mu of direction d at which q(mu), the count-constrained maximum-entropy distribution with
    logits lambda + mu d, has metric value E[M](q) = v; returns q, y (mu in units of d) and a success flag.

    A root of h(mu) = log gap(E(q(mu))) - log gap(v), gap the distance to the nearer attainable extreme (``lo``
    or ``hi``): where the metric saturates, E approaches the extreme exponentially in mu, so h is nearly linear in
    mu. The root is bracketed by doubling steps from the current mu, then found by regula falsi with the Illinois
    rule. For each mu the count multipliers lambda come from Newton's method on the (convex) dual with mu fixed.
    """
    L, N, K = d.shape
    tol = np.broadcast_to(np.asarray(tol, dtype=float), (L,))  # one tolerance, or one per list
    dn, dlo, span = normalise(d, prob.allowed)
    frozen = prob.frozen.copy()
    frozen[:, K] = True
    near_top = (hi - v) <= (v - lo)
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = np.log(np.where(near_top, hi - v, v - lo))
        ref = np.where(np.isfinite(ref), ref, 0.0)

    def h(E, idx):
        top, lo_, hi_ = near_top[idx], lo[idx], hi[idx]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            gap = np.maximum(np.where(top, hi_ - E, E - lo_), 1e-300)
            out = np.where(top, ref[idx] - np.log(gap), np.log(gap) - ref[idx])
            return np.where(np.isfinite(lo_) & np.isfinite(hi_), out, E - v[idx])

    def at(idx, mu, y):
        yy = y.copy()
        yy[:, K] = mu
        q, yy, _, ok = newton_dual(dn[idx], prob.allowed[idx], prob.rowmask[idx], prob.r[idx],
                                   np.zeros(idx.size), yy, frozen[idx], 1e-12, inner_iter)
        return q, yy, ok, restrict(form, idx).value(q)

    everyone = np.arange(L)
    ya = np.where(frozen, 0.0, y0)
    mu_a = np.where(span > 0, y0[:, K] * span, 0.0)
    q, ya, ok, E = at(everyone, mu_a, ya)
    h_a = h(E, everyone)
    Q, Y, found = q.copy(), ya.copy(), ok & (np.abs(E - v) <= tol)
    # bracket: step away from mu_a in the direction that brings E towards v, doubling the step
    step = np.where(h_a < 0, 1.0, -1.0) * np.maximum(1.0, np.abs(mu_a))
    mu_b, h_b, y_b = mu_a.copy(), h_a.copy(), ya.copy()
    live = np.flatnonzero(ok & ~found)
    for _ in range(40):
        live = live[np.abs(mu_a[live] + step[live]) <= MU_MAX]  # beyond: exp overflows, no root to find
        if live.size == 0:
            break
        mu_b[live] = mu_a[live] + step[live]
        q, yb, okb, Eb = at(live, mu_b[live], y_b[live])
        h_b[live], y_b[live] = h(Eb, live), yb
        hit = okb & (np.abs(Eb - v[live]) <= tol[live])
        Q[live[hit]], Y[live[hit]], found[live[hit]] = q[hit], yb[hit], True
        same = okb & ~hit & (np.sign(h_b[live]) == np.sign(h_a[live]))
        moved = live[same]
        mu_a[moved], h_a[moved], ya[moved] = mu_b[moved], h_b[moved], y_b[moved]
        step[moved] *= 2.0
        live = moved
    bracket = ~found & (np.sign(h_a) != np.sign(h_b)) & np.isfinite(h_a) & np.isfinite(h_b)
    live = np.flatnonzero(bracket)
    for _ in range(evaluations):
        if live.size == 0:
            break
        a, b = mu_a[live], mu_b[live]
        mu_c = (a * h_b[live] - b * h_a[live]) / (h_b[live] - h_a[live])
        q, yc, okc, Ec = at(live, mu_c, y_b[live])
        h_c = h(Ec, live)
        hit = okc & (np.abs(Ec - v[live]) <= tol[live])
        Q[live[hit]], Y[live[hit]], found[live[hit]] = q[hit], yc[hit], True
        flip = np.sign(h_c) != np.sign(h_b[live])
        lv = live
        mu_a[lv] = np.where(flip, mu_b[lv], mu_a[lv])
        h_a[lv] = np.where(flip, h_b[lv], 0.5 * h_a[lv])  # Illinois: halve the stale end's value
        mu_b[lv], h_b[lv], y_b[lv] = mu_c, h_c, yc
        live = live[okc & ~hit]
    Y[:, K] = np.where(span > 0, Y[:, K] / np.where(span > 0, span, 1.0), 0.0)
    return Q, Y, found
