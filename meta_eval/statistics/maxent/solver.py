"""The fast batched maximum-entropy solver (Aslam, Yilmaz & Pavlu, SIGIR 2005; graded: Robertson et al., SIGIR 2010).

For each list l (length n, grades 0..c) find the product distribution P[l] (rows p_n over grades) that

    maximises   H(P) = - sum_n sum_j p_n(j) ln p_n(j)
    subject to  sum_n p_n(j) = r_j          for j = 1..c   (retrieved counts by default; the qrels counts optionally)
                E[M](P)      = v            (the list's observed metric value)

Stationarity gives p_n = softmax_j(lambda_j + mu * dE[M]/dp_n(j)) with lambda_0 = 0 (methods.md Sec. 1.2, 2.3).

* Linear metrics (dE/dp fixed): the convex dual ``sum_n logsumexp_j(lambda_j + mu A_nj) - lambda.r - mu v`` is
  minimised by damped Newton on the c + 1 multipliers, batched over lists (one (c+1)x(c+1) system per list).
* Other metrics (pairwise, cascade, prefix-state, user forms): sequential linearisation. At the current P the metric
  is replaced by its tangent E(P) + grad E(P).(Q - P), the linear problem is solved exactly as above (warm-started),
  and the fixed point of this map -- a KKT point of the original (non-convex) problem -- is accelerated by Anderson
  mixing on the logits near convergence. The iteration starts half-way between the actual list and the count-only
  distribution (where the linearisation is accurate; nearer the count-only one for a value close to an attainable
  extreme), and a list that fails is solved again with a fixed step cap and, at an extreme, from the other start;
  when a linearised target is out of reach it is approached in steps, and where the tangent misjudges the value
  (near an attainable extreme, where the metric saturates) the value is matched exactly along the tangent direction
  (see :func:`_solve_nonlinear`, :func:`meta_eval.statistics.maxent.linear.match_value`).
* A value at the attainable maximum or minimum (e.g. AP of a list with all its relevant documents on top) makes the
  solution degenerate (probabilities 0 or 1, infinite multipliers). Such lists are solved half the tolerance inside
  the range: the solution is continuous in the value, so this is the optimal face's distribution up to
  probabilities of the order of the tolerance, with the metric constraint met within the tolerance. Where several
  faces reach the extreme (Success@k at 1) the problem is not convex and the face found may not be the optimal one;
  such lists are marked (``MEMResult.on_face``).

The per-list work of an iteration -- the forms' values and gradients, the softmax, the logit step, the Anderson
step and the inner Newton solves -- runs in compiled loops (:mod:`meta_eval.statistics.maxent._form_kernels`,
:mod:`meta_eval.statistics.maxent._iteration`, :mod:`meta_eval.statistics.maxent._newton`); the iteration's logic stays here, in numpy.

Every list gets diagnostics: the largest constraint residual, the stationarity residual, iterations and a status
(0 ok, 1 not converged, 2 value outside the attainable range, 3 metric undefined). Rows that do not converge are
flagged, never silently wrong, and are left out of study means (``n_failed``). A value outside the attainable
range is flagged or raised (``errors="raise"``); the range is that of the best and worst orderings, exact for
metrics that never decrease when a higher grade moves up.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meta_eval.core.errors import InfeasibleError, InputError
from meta_eval.statistics.maxent.batch import ListBatch, onehot
from meta_eval.statistics.maxent.expectations import ExpectationForm, restrict
from meta_eval.statistics.maxent.linear import (STALL_TOL, STEP_CAP, Problem, match_value, newton_dual, problem, solve_direction,
                                  subproblem)
from meta_eval.statistics.maxent.result import (INFEASIBLE, NOT_CONVERGED, OK, UNDEFINED, MEMResult, count_targets,
                                  entropy)

_STAT_TOL = 1e-7  # stationarity: max change of the centred logits of the active entries in a linearisation step
_ANDERSON_START = 1e-2  # Anderson mixing once the logits change by less than this in a step
# loosest tolerance of an inner (linearised) solve, far from the fixed point (1e-3 of the last step's largest
# probability change, down to tol / 100): 1e-4 rather than 1e-6 saves a tenth of the Newton steps, the same outer
# iterations (the next linearisation changes the problem anyway; the last steps are solved to tol / 100)
_INNER_TOL_MAX = 1e-4
_STALLED_STEPS = 25  # consecutive failed linearisation steps after which a list is given up (flagged)
_EDGE_ITER = (12, 48)  # iterations towards the face before (and after a failed) reading its support
_START_MIX, _START_MIX_NEAR = 0.5, 0.9  # weight of the count-only distribution in the linearisation's start
_NEAR_EXTREME = 1e-4  # a value this close to an attainable extreme (relative to the range) starts nearer it


def _attainable(form: ExpectationForm, batch: ListBatch, r: np.ndarray):
    """Metric values of the best (grades descending) and worst (ascending) deterministic lists with counts r.

    For metrics that never decrease when a higher grade moves up (all built-ins) these bound the attainable range
    over deterministic lists; exact for linear metrics (the extremes of a linear function over the transportation
    polytope are attained at such vertices when the coefficients are monotone in rank and grade).
    """
    L, N, K = batch.n_lists, batch.depth, batch.n_grades
    ri = np.rint(r).astype(np.int64)
    pos = np.arange(N)[None, :]
    best = np.zeros((L, N), dtype=np.int64)
    worst = np.zeros((L, N), dtype=np.int64)
    top = np.zeros(L, dtype=np.int64)
    for j in range(K - 1, 0, -1):
        best += j * ((pos >= top[:, None]) & (pos < (top + ri[:, j])[:, None]))
        top = top + ri[:, j]
    n = batch.lengths
    bottom = n.copy()
    for j in range(K - 1, 0, -1):
        worst += j * ((pos < bottom[:, None]) & (pos >= (bottom - ri[:, j])[:, None]))
        bottom = bottom - ri[:, j]
    hi = form.value(onehot(best, n, K))
    lo = form.value(onehot(worst, n, K))
    return np.minimum(lo, hi), np.maximum(lo, hi)


# ------------------------------------------------------------------------------------------------------------
# The solver
# ------------------------------------------------------------------------------------------------------------

def _centre(th, allowed):
    return np.where(allowed, th - _rowmean(th, allowed), 0.0)


def _solve_chunk(batch: ListBatch, form: ExpectationForm, v: np.ndarray, r: np.ndarray, *, tol: float,
                 max_iter: int, memory: int, actual_feasible: bool = False):
    L, K = batch.n_lists, batch.n_grades
    n = batch.lengths.astype(float)
    status = np.zeros(L, dtype=np.int8)
    bad_counts = (np.abs(r.sum(1) - n) > 1e-9) | np.any(r < -1e-9, axis=1)
    point = batch.onehot()  # the actual lists as point masses
    actual = form.value(point)
    # undefined: no value, or a form that is undefined for the list (e.g. AP's 1/R with R = 0, which the core
    # library scores 0 by trec_eval's convention)
    undefined = ~np.isfinite(v) | ~np.isfinite(actual)
    lo, hi = _attainable(form, batch, np.maximum(r, 0))
    if actual_feasible:  # the actual list meets the count constraints: its value is attainable whatever the metric
        lo, hi = np.fmin(lo, actual), np.fmax(hi, actual)
    span = np.maximum(hi - lo, 1.0)
    infeasible = bad_counts | (v > hi + 1e-9 * span) | (v < lo - 1e-9 * span)
    infeasible &= ~undefined
    status[undefined] = UNDEFINED
    status[infeasible] = INFEASIBLE
    good = status == OK
    vv = np.where(good, np.clip(v, lo, hi), 0.0)
    rr = np.where(good[:, None], r, np.maximum(r, 0))
    prob = problem(batch, rr)

    # start: the count-only maximum entropy p_n(j) = r_j / n  (lambda_j = log r_j / r_0, mu = 0)
    y = np.zeros((L, K + 1))
    lr = np.log(np.where(rr > 0, rr, 1.0))
    y[:, :K] = lr - lr[:, :1] * (rr[:, :1] > 0)
    y = np.where(prob.frozen, 0.0, y)
    P0 = np.where(prob.allowed, (rr / np.maximum(n, 1)[:, None])[:, None, :], 0.0)
    stat = np.zeros(L)
    # A value at the attainable maximum (or minimum) puts the solution on a face of the polytope, with infinite
    # multipliers. It is solved half the tolerance inside instead: the solution is continuous in the value, so
    # this is the face's maximum-entropy distribution up to probabilities of order the tolerance, and the metric
    # constraint still holds within tol. A range narrower than that carries no information: the count-only
    # distribution is the solution.
    inside = 0.5 * tol
    flat = good & (hi - lo <= 2 * inside)
    edge = good & ~flat & ((vv >= hi - inside) | (vv <= lo + inside))
    vv = np.where(good & ~flat, np.clip(vv, lo + inside, hi - inside), vv)
    if form.linear:
        d = np.array(form.grad(P0))
        P, y, it, done = solve_direction(d, prob, vv, y, tol, max_iter, grow_cap=True)
        _on_face(form, P, prob, edge, v, tol, done, stat)
    else:
        # start between the actual list and the count-only distribution (both satisfy the counts); a value close to
        # an attainable extreme (but not at it) starts nearer the count-only one, whose tangent is less saturated
        # (ERR near its maximum: on 500 TREC-COVID lists 1 failure instead of 5, 3 % fewer iterations); a value at
        # the extreme starts half-way, nearer the face the actual list is on (Success@10 at 1: 63 failures of 3,374
        # from the nearer start)
        near = np.minimum(hi - vv, vv - lo) <= _NEAR_EXTREME * np.maximum(hi - lo, 1e-300)
        mixes = np.where(near & ~edge, _START_MIX_NEAR, _START_MIX)
        # lists at an extreme: a few steps towards the face, then the face itself (below), then more steps if
        # its support could not be read off yet
        limit = np.where(edge, min(max_iter, _EDGE_ITER[0]), max_iter) * (good & ~flat)  # nothing to solve else
        y_start = y.copy()
        # a list that fails is tried again: with a fixed step cap (the growing one can overshoot on small lists at
        # an extreme), then, at an extreme, from the other start (it rescued 37 of the 41 Success@10 lists at 1 that
        # failed on TREC-COVID; elsewhere a second start rescued 1 of 10 ERR lists for 60 % more of ERR's time)
        other = np.where(mixes == _START_MIX, _START_MIX_NEAR, _START_MIX)
        attempts = [(mixes, False, limit > 0), (other, True, edge)]
        point = point * prob.allowed  # the actual lists on the entries the counts allow
        P, y, it, done, stat = _nonlinear_pass(form, prob, vv, y, P0, _start(point, prob, P0, mixes), tol, limit,
                                               memory, lo, hi, edge, v)
        for mix, grow_cap, which in attempts:
            todo = which & (limit > 0) & ~done
            if not todo.any():
                continue
            Pa, ya, ita, da, sa = _nonlinear_pass(form, prob, vv, y_start, P0, _start(point, prob, P0, mix), tol,
                                                  limit * todo, memory, lo, hi, edge & todo, v, grow_cap=grow_cap)
            take = todo & da
            P[take], y[take], done[take], stat[take] = Pa[take], ya[take], True, sa[take]
            it[todo] += ita[todo]
    P[flat], y[flat, K], done[flat] = P0[flat], 0.0, True
    achieved = form.value(P)
    res = np.maximum(np.abs(_rank_sum(P) - rr).max(1), np.abs(achieved - v))
    status[good & ~done] = NOT_CONVERGED
    return dict(P=P, achieved=achieved, entropy=entropy(P), max_residual=np.where(good, res, np.nan),
                stationarity=np.where(good, stat, np.nan), multipliers=y, n_iter=it, status=status,
                on_face=edge & done & (not form.linear))


def _start(point: np.ndarray, prob: Problem, P0, mix) -> np.ndarray:
    """The linearisation's start: each list's actual grades (one-hot, on the allowed entries) mixed with weight
    ``mix`` of the count-only P0."""
    eps = mix[:, None, None]
    start = (1 - eps) * point
    start += eps * P0
    start /= np.maximum(_grade_sum(start), 1e-300)[..., None]
    start *= prob.rowmask[..., None]
    return start


def _nonlinear_pass(form, prob: Problem, vv, y, P0, start, tol, limit, memory, lo, hi, edge, v, grow_cap=True):
    """:func:`_solve_nonlinear` on the lists with ``limit`` > 0; lists at an extreme (``edge``) then read their face,
    and those whose face could not be read yet take more steps from where they stopped and try again."""
    L = len(limit)
    P, y, it, done, stat = _solve_nonlinear(form, prob, vv, y, P0, start, tol, limit, memory, lo=lo, hi=hi,
                                            grow_cap=grow_cap)
    held: dict = {}
    face_ok = _on_face(form, P, prob, edge, v, tol, done, stat, first=True, held=held)
    again = np.flatnonzero(edge & ~face_ok & ~done)
    if again.size:
        Pa, ya, ita, da, sa = _solve_nonlinear(restrict(form, again), subproblem(prob, again), vv[again],
                                               y[again], P0[again], P[again] * (1 - 1e-9) + 1e-9 * P0[again],
                                               tol, _EDGE_ITER[1], memory, lo=lo[again], hi=hi[again],
                                               grow_cap=grow_cap)
        P[again], y[again], it[again], done[again], stat[again] = Pa, ya, it[again] + ita, da, sa
        _on_face(form, P, prob, edge & np.isin(np.arange(L), again), v, tol, done, stat)
        for i in (int(i) for i in again if not done[i] and int(i) in held):  # no face after the extra steps
            P[i], done[i], stat[i] = held[i], True, 0.0
    return P, y, it, done, stat


def _on_face(form, P, prob: Problem, edge, v, tol, done, stat, first: bool = False,
             held: dict | None = None) -> np.ndarray:
    """Replace the iterate of every list at an extreme by the face's maximum-entropy distribution when it can be
    read off (in place); returns which lists were solved so.

    For a non-linear metric, an iterate that converged is kept when the face read off has less entropy (by over
    1e-6): both meet the constraints within the tolerance, and a support read off too coarse (a metric whose value
    is flat in floating point near its maximum: ERR, whose extreme is reached once the top ranks hold the top
    grade) fixes more ranks than the value needs (a demo list: 42.4 nats on the face read off, 66.8 at the converged
    iterate). On the ``first`` reading, before the iteration has had its extra steps, a face with less entropy
    than the iterate is not taken either: the iterate is still far from the face, whose support read off it is
    too small (a demo ERR list at its maximum: 80.5 nats read off after 12 steps, 107.0 after more), and the list
    takes the extra steps first; such a face is kept in ``held`` (list -> distribution), to be taken if the extra
    steps find none. A linear metric's face is its exact solution (a convex problem), always taken."""
    solved = np.zeros(len(v), dtype=bool)
    at_edge = np.flatnonzero(edge)
    if at_edge.size:
        Pf, okf = _face_solution(restrict(form, at_edge), P[at_edge], subproblem(prob, at_edge),
                                 v[at_edge], tol)
        if not form.linear:
            higher = entropy(Pf) >= entropy(P[at_edge]) - 1e-6
            if held is not None:
                held.update((int(i), Pf[k]) for k, i in enumerate(at_edge) if okf[k] and not higher[k])
            okf &= (~done[at_edge] & (not first)) | higher
        P[at_edge[okf]], done[at_edge[okf]], stat[at_edge[okf]] = Pf[okf], True, 0.0
        solved[at_edge[okf]] = True
    return solved


def _face_solution(form, P, prob: Problem, v, tol, cuts=(1e-4, 1e-3, 1e-2, 5e-2, 0.1, 0.2)):
    """Maximum entropy on the optimal face, for values at an attainable extreme whose iteration did not settle.

    The face's support is read off an iterate close to it: entries with probability below ``cut`` are taken to
    vanish, and the count-only maximum-entropy distribution on the remaining support is computed. It is accepted
    only if it reproduces the value within ``tol`` (every list in the support is then optimal), trying the cuts
    from the finest up, so a wrong guess leaves the list flagged, never wrong.
    """
    L, N, K = P.shape
    frozen = prob.frozen.copy()
    frozen[:, K] = True
    best = np.zeros_like(P)
    found = np.zeros(L, dtype=bool)
    for cut in cuts:
        support = prob.allowed & (P > cut)
        ok = np.all(support.any(2) | ~prob.rowmask, axis=1) & np.all(support.any(1) | (prob.r <= 0.5), axis=1)
        q, _, _, conv = newton_dual(np.zeros((L, N, K)), support, prob.rowmask, prob.r, np.zeros(L),
                                       np.zeros((L, K + 1)), frozen, 1e-11, 100)
        ok &= conv & np.isfinite(q).all(axis=(1, 2)) & (np.abs(q.sum(1) - prob.r).max(1) <= 1e-9)
        ok &= np.abs(np.where(ok, form.value(np.nan_to_num(q)), np.inf) - v) <= tol
        new = ok & ~found
        best[new] = q[new]
        found |= ok
        if found.all():
            break
    return best, found


def _solve_nonlinear(form, prob: Problem, v, y, P0, start, tol, max_iter, memory, inner_iter=40,
                     damp_after=40, lo=None, hi=None, match=True, grow_cap=True):
    """Sequential linearisation with safeguarded Anderson acceleration on the (centred) logits.

    Iteration k linearises E at p_k and solves the linear MEM with target d.p_k + b_k (v - E(p_k)), b_k in (0, 1]:
    when that subproblem fails (target outside what the linearisation can reach) b_k is halved and p_k kept; on
    success b_k doubles back towards 1. Any fixed point satisfies E(p) = v and stationarity whatever b_k.
    Anderson mixing is used only near the fixed point and dropped whenever the residual grows.

    With ``match``, a step whose linear subproblem misses the metric value (or fails) is replaced by the
    maximum-entropy distribution along the same direction d whose *metric* value is exactly v
    (:func:`meta_eval.statistics.maxent.linear.match_value`); the outer iteration then only has to settle the direction
    d = grad E(p). This matters near an attainable extreme, where the tangent overestimates every gain (e.g. ERR:
    surer top ranks lower the value of the deeper ones) and plain steps creep towards the target. ``lo``/``hi``
    are the attainable range.

    Each step: the form's value and gradient at the live lists' distributions (one call), their linearised problems
    (:func:`meta_eval.statistics.maxent._newton.linearised_lists`), the form's value at the solutions, the value matched where
    needed, and the logits moved (:func:`meta_eval.statistics.maxent._iteration.advance_lists`); the state stays in full-size
    arrays the compiled loops index by the live lists.
    """
    from meta_eval.statistics.maxent._iteration import advance_lists
    from meta_eval.statistics.maxent._newton import linearised_lists

    L, N, K = P0.shape
    lo = np.full(L, -np.inf) if lo is None else lo
    hi = np.full(L, np.inf) if hi is None else hi
    allowed = np.ascontiguousarray(prob.allowed)
    rowmask = np.ascontiguousarray(prob.rowmask)
    frozen = np.ascontiguousarray(prob.frozen)
    r = np.ascontiguousarray(prob.r, dtype=float)
    lengths = rowmask.sum(1).astype(np.int64)
    active = _rank_sum(allowed, np.int64) > 0  # the allowed entries: these grades at the list's ranks
    D = N * K
    with np.errstate(divide="ignore"):
        logits = _centre(np.where(allowed, np.log(np.where(allowed, start, 1.0)), 0.0), allowed)
    x = np.ascontiguousarray(logits.transpose(0, 2, 1))  # grade-major, as the compiled step works
    # Anderson's history: the last memory - 1 differences of iterates and residuals, their Gram matrix, the last
    # iterate and residual (:func:`meta_eval.statistics.maxent._iteration.advance_lists`)
    dX = np.zeros((L, memory - 1, D))
    dF = np.zeros((L, memory - 1, D))
    Gd = np.zeros((L, memory - 1, memory - 1))
    xprev = np.zeros((L, D))
    fprev = np.zeros((L, D))
    nh = np.zeros(L, dtype=np.int64)
    bt = np.ones(L)
    last_n = np.full(L, np.inf)
    last_dq = np.full(L, np.inf)  # largest probability change of the last step
    stalls = np.zeros(L, dtype=np.int64)  # consecutive failed steps
    it = np.zeros(L, dtype=np.int64)
    done = np.zeros(L, dtype=bool)
    stat = np.full(L, np.inf)
    P = np.ascontiguousarray(start, dtype=float).copy()
    Y = np.ascontiguousarray(y, dtype=float).copy()
    mix = np.ones(L)
    limit = np.ascontiguousarray(np.broadcast_to(np.asarray(max_iter), (L,)), dtype=np.int64)
    matching = np.broadcast_to(np.asarray(match, dtype=bool), (L,))
    v = np.ascontiguousarray(v, dtype=float)
    live = np.flatnonzero(limit > 0)
    p = np.ascontiguousarray(P[live])  # the start itself: softmax(centre(log start)) on the allowed entries
    pK = np.ascontiguousarray(p.transpose(0, 2, 1))
    for k in range(int(limit.max(initial=0))):
        sub = restrict(form, live)
        Ep, d = _value_and_grad(sub, p)
        d = np.ascontiguousarray(d, dtype=float)
        # inexact inner solves while far from the fixed point (the next linearisation changes d anyway)
        inner_tol = np.clip(1e-3 * last_dq[live], tol * 1e-2, _INNER_TOL_MAX)
        # growing step cap: near an extreme the multiplier mu must reach 1/gap (1e9 for ERR 1e-9 below its max)
        q, yl, _, ok, QK, DK, spans = linearised_lists(d, p, np.ascontiguousarray(Ep, dtype=float), v, bt, live,
                                                       allowed, rowmask, r, frozen, Y, inner_tol, int(inner_iter),
                                                       bool(grow_cap), float(STEP_CAP), float(STALL_TOL))
        Eq = sub.value(q)
        # the tangent misjudges the value (near an attainable extreme): match it along d exactly
        fix = np.flatnonzero(((~ok & (it[live] >= 1)) | ((np.abs(Eq - v[live]) > tol) & (it[live] >= 8)))
                             & matching[live])
        if fix.size:
            qm, ym, okm = match_value(restrict(sub, fix), d[fix], subproblem(prob, live[fix]), v[live][fix],
                                      np.where(ok[fix, None], yl[fix], Y[live][fix]), lo[live][fix],
                                      hi[live][fix], tol, inner_iter)
            take = fix[okm]
            q[take], yl[take], ok[take] = qm[okm], ym[okm], True
            QK[take] = q[take].transpose(0, 2, 1)
            Eq[take] = restrict(sub, take).value(q[take])
        keep, p, pK = advance_lists(k, live, q, QK, DK, spans, yl, ok, np.ascontiguousarray(Eq, dtype=float), pK, v,
                                    float(tol), r, active, lengths, x, dX, dF, Gd, xprev, fprev, nh, bt, last_n,
                                    last_dq, stalls, it, done, stat, P, Y, mix, limit, int(damp_after),
                                    float(_STAT_TOL), float(_ANDERSON_START), int(_STALLED_STEPS))
        live = live[keep]
        if live.size == 0:
            break
    return P, Y, it, done, stat


def _value_and_grad(form, P):
    """E[M](P) and a writable copy-free gradient (one pass for the forms that compute both together)."""
    if hasattr(form, "value_and_grad"):
        return form.value_and_grad(P)
    return form.value(P), np.array(form.grad(P))


def _rowmean(x, allowed):
    cnt = _grade_sum(allowed, np.int64)
    return (_grade_sum(np.where(allowed, x, 0.0)) / np.maximum(cnt, 1))[..., None]


def _grade_sum(x, dtype=None):
    """x (L, N, K) summed over grades, (L, N): the grades' slices added in order, the same sums as ``x.sum(2)``
    without numpy's slow reduction over a short last axis (a tenth of the time)."""
    out = x[..., 0].astype(dtype if dtype is not None else x.dtype)
    for k in range(1, x.shape[2]):
        out += x[..., k]
    return out


def _rank_sum(x, dtype=None):
    """x (L, N, K) summed over ranks, (L, K): the ranks added in order, as ``x.sum(1)``, in a quarter of its time."""
    return np.einsum("lnk->lk", x, dtype=dtype)


def warm_up() -> None:
    """Compile (or load from numba's cache) the solver's kernels -- the dual Newton solves, the linearisation's
    steps, the forms' values and gradients -- for the signatures the solver uses, by solving a tiny problem with a
    pairwise, a cascade and a linear form.

    A study calls this in a thread at its start: most of the compilation runs in LLVM without the GIL, so it
    overlaps the first stages, and the worker processes of the informativeness stage then load the cached code
    instead of each compiling it.
    """
    batch = ListBatch.from_lists([[2, 0, 1, 0, 1, 0], [1, 0, 0, 2, 0, 0]], counts=[[3, 2, 1]])
    for measure in ("AP", "ERR", "nDCG"):
        solve_mem(batch, measure)


def solve_mem(batch: ListBatch, measure, values: np.ndarray | None = None, *,
              counts: str = "retrieved", tol: float = 1e-10, max_iter: int = 300, memory: int = 6,
              chunk_size: int = 128, errors: str = "flag", progress: bool = False, rel_level: int = 1,
              seed: int = 0, jobs: int | None = 1, scheduler: str | None = None) -> MEMResult:
    """Solve the maximum-entropy problem for every list of ``batch`` under ``measure``.

    Parameters
    ----------
    batch : ListBatch
        The lists (grades, lengths, qrels counts).
    measure : str, Measure, MetricForm or ExpectationForm
        Any metric meta-eval can score -- a name (``"AP"``, ``"GAP(g=0.5,0.5)"``, ``"nDCG(gain=exp)@10"``,
        ``"map"``), ``module:function``, ``file.py:function``, a :class:`~meta_eval.measures.Measure` -- whose
        expected-value form is declared, derived by probing or sampled (:func:`meta_eval.statistics.maxent.forms.metric_form`);
        or a form built for this batch.
    values : array (L,), optional
        The metric values to impose; default the observed values of the actual lists.
    counts : {"retrieved", "qrels"}
        Expected number of documents of each grade: as retrieved by the run (default; always feasible for the
        observed value) or the qrels totals R_j (requires sum_j R_j <= n).
    tol : float
        Absolute tolerance on the metric constraint (counts are held to 1e-9).
    max_iter : int
        Newton iterations (linear metrics) or linearisation steps (others).
    memory : int
        Anderson history length.
    chunk_size : int
        At most this many lists solved together (sorted by length so each chunk is padded only to its own longest
        list); chunks are the tasks run in parallel. The lists are split evenly, into at least four chunks when
        there are 64 or more, so that a small batch still keeps two to four workers busy (the split depends on
        the number of lists only, never on the workers).
    errors : {"flag", "raise"}
        For a value outside the attainable range: flag the row (status 2, NaN distribution) or raise
        :class:`InfeasibleError`.
    progress : bool
        Show progress over chunks.
    rel_level : int
        Relevance threshold of binary metrics (relevant = grade >= rel_level).
    seed : int
        Seed of the verification lists and of the sampled fallback.
    jobs, scheduler
        Workers for the chunks (:func:`meta_eval.core.parallel.parallel_map`: processes, or a Dask cluster); the result
        does not depend on them. A named metric with a declared form is rebuilt by each worker; one without
        (derived, prefix-state or sampled) is probed once, here, and its verified form goes to the workers. A metric
        given as an object rather than a name (whose workers could not rebuild it) is solved in this process.

    Returns
    -------
    MEMResult
    """
    from meta_eval.core.parallel import parallel_map

    plan = _plan(batch, measure, values, counts=counts, tol=tol, max_iter=max_iter, memory=memory,
                 chunk_size=chunk_size, errors=errors, rel_level=rel_level, seed=seed)
    # longest lists first (the costliest chunks), so no worker is left alone with a long chunk at the end
    # (progress counts the lists' total length, so the time left is not extrapolated from the costliest chunks)
    parts = parallel_map(_solve_chunk_task, plan.chunks[::-1], common=plan.common, jobs=jobs if plan.by_name else 1,
                         scheduler=scheduler if plan.by_name else None, desc=f"MEM {plan.label}", unit="chunk",
                         progress=progress, weights=[batch.lengths[c].sum() for c in plan.chunks[::-1]])[::-1]
    return _assemble(plan, parts)


def solve_mems(batch: ListBatch, measures, values=None, *, counts: str = "retrieved", tol: float = 1e-10,
               max_iter: int = 300, memory: int = 6, chunk_size: int = 128, errors: str = "flag",
               progress: bool = False, rel_level: int = 1, seed: int = 0, jobs: int | None = 1,
               scheduler: str | None = None) -> list[MEMResult]:
    """:func:`solve_mem` for several metrics at once: ``[solve_mem(batch, m, v, ...) for m, v in zip(measures,
    values)]`` (``values``: one array or None per metric; default the observed values), equal to it list for list.

    The chunks of every metric given by name go to the workers together, costliest first, so a cheap metric
    never leaves a worker idle while another metric's long chunks finish, and the workers start once; metrics
    given as objects (which workers could not rebuild) are solved in this process.
    """
    from meta_eval.core.parallel import parallel_map

    values = [None] * len(measures) if values is None else list(values)
    if len(values) != len(measures):
        raise InputError(f"values must give one array (or None) per metric ({len(measures)}); got {len(values)}")
    plans = [_plan(batch, m, v, counts=counts, tol=tol, max_iter=max_iter, memory=memory, chunk_size=chunk_size,
                   errors=errors, rel_level=rel_level, seed=seed) for m, v in zip(measures, values)]
    named = [k for k, plan in enumerate(plans) if plan.by_name]
    order = [(k, j) for k in named for j in range(len(plans[k].chunks))]
    # costliest chunks first (their lists' total length; ties keep their order)
    order.sort(key=lambda kj: -int(batch.lengths[plans[kj[0]].chunks[kj[1]]].sum()))
    shared = {key: value for key, value in plans[named[0]].common.items()
              if key not in ("measure", "values", "verified")} if named else {}
    common = dict(shared, measures={k: plans[k].common["measure"] for k in named},
                  metric_values={k: plans[k].common["values"] for k in named},
                  residuals={k: plans[k].common["verified"] for k in named})
    solved = parallel_map(_solve_measure_chunk_task, [(k, plans[k].chunks[j]) for k, j in order], common=common,
                          jobs=jobs, scheduler=scheduler, desc=f"MEM {len(named)} metric(s)", unit="chunk",
                          progress=progress, weights=[batch.lengths[plans[k].chunks[j]].sum() for k, j in order])
    parts = dict(zip(order, solved))
    return [_assemble(plan, [parts[k, j] if plan.by_name else _solve_chunk_task(idx, **plan.common)
                             for j, idx in enumerate(plan.chunks)]) for k, plan in enumerate(plans)]


_CONTROLLER: list = []  # (modules imported when found, threadpoolctl controller): found again after new imports


def _one_blas_thread():
    """A context in which BLAS runs one thread (numpy's small products on a chunk's lists: threads would only
    cost). Finding the thread pools walks every loaded shared library (about 10 ms): the controller is kept, and
    found again only when modules were imported since."""
    import sys

    from threadpoolctl import ThreadpoolController

    if not _CONTROLLER or _CONTROLLER[0][0] != len(sys.modules):
        _CONTROLLER[:] = [(len(sys.modules), ThreadpoolController())]
    return _CONTROLLER[0][1].limit(limits=1, user_api="blas")


@dataclass
class _Plan:
    """What :func:`solve_mem` hands its workers: the chunks of lists and the arguments every chunk shares."""

    batch: ListBatch
    chunks: list
    common: dict
    by_name: bool  # the metric was named: its form (rebuilt from the name, or probed once here) can go to workers
    label: str
    errors: str


def _plan(batch: ListBatch, measure, values, *, counts, tol, max_iter, memory, chunk_size, errors, rel_level,
          seed) -> _Plan:
    """Check the arguments, build the form of a metric object (a name is rebuilt in the workers) and split the
    lists into chunks: evenly, sorted by length, at least four when there are 64 lists or more."""
    from meta_eval.statistics.maxent.forms import MetricForm, metric_form

    if errors not in ("flag", "raise"):
        raise InputError(f"errors must be 'flag' or 'raise'; got {errors!r}")
    L = batch.n_lists
    v_all = None if values is None else np.asarray(values, dtype=float).reshape(-1)
    if v_all is not None and v_all.shape != (L,):
        raise InputError(f"values must have one entry per list ({L}); got {v_all.shape}")
    by_name = isinstance(measure, str)  # workers rebuild a declared form from the name, for their own chunk
    verified = None
    if by_name:
        # a bad name fails here, not in a worker after other metrics' work; the form found and verified once, here, on every list: a declared one is rebuilt by the workers from
        # the name (without verifying it again for each chunk); a derived, prefix-state or sampled one (picklable)
        # goes to the workers instead of being probed again for each chunk
        with _one_blas_thread():
            found = metric_form(measure, batch, rel_level=rel_level, seed=seed)
        if found.method == "declared":
            verified = found.residual
        else:
            measure = found
    elif not isinstance(measure, MetricForm):
        with _one_blas_thread():
            measure = metric_form(measure, batch, rel_level=rel_level, seed=seed)
    r_all = count_targets(batch, counts)
    order = np.argsort(batch.lengths, kind="stable")
    n_chunks = max(-(-L // chunk_size), min(4, L // 16), 1)
    chunks = [c for c in np.array_split(order, n_chunks) if c.size]
    common = dict(batch=batch, measure=measure, values=v_all, r_all=r_all, counts=counts, tol=tol,
                  max_iter=max_iter, memory=memory, rel_level=rel_level, seed=seed, verified=verified)
    return _Plan(batch, chunks, common, by_name, measure if isinstance(measure, str) else measure.name, errors)


def _assemble(plan: _Plan, parts: list) -> MEMResult:
    """The per-list results of every chunk (in the order of ``plan.chunks``) as one :class:`MEMResult`."""
    batch = plan.batch
    L, N, K = batch.n_lists, batch.depth, batch.n_grades
    out = dict(P=np.zeros((L, N, K)), achieved=np.full(L, np.nan), entropy=np.full(L, np.nan),
               max_residual=np.full(L, np.nan), stationarity=np.full(L, np.nan),
               multipliers=np.full((L, K + 1), np.nan), n_iter=np.zeros(L, dtype=np.int64),
               status=np.zeros(L, dtype=np.int8), approx_error=np.full(L, np.nan), on_face=np.zeros(L, dtype=bool))
    target = np.full(L, np.nan)
    for idx, (res, v, _) in zip(plan.chunks, parts):
        target[idx] = v
        for key, val in res.items():
            if key == "P":
                out["P"][idx, : val.shape[1]] = val
            else:
                out[key][idx] = val
    sources = [p[2] for p in parts]  # (name, method, verification residual, detail) of each chunk's form
    name = sources[0][0] if sources else plan.label
    r_all = plan.common["r_all"]
    bad = out["status"] == INFEASIBLE
    if bad.any() and plan.errors == "raise":
        i = int(np.flatnonzero(bad)[0])
        raise InfeasibleError(
            f"{int(bad.sum())} list(s) have a {name} value outside the attainable range for their grade "
            f"counts (first: list {i}, value {float(target[i]):g}, expected grade counts "
            f"{[float(x) for x in r_all[i]]}); a value must lie between the metric of the worst and of the best "
            "ordering of the list's grades")
    out["P"][(out["status"] == INFEASIBLE) | (out["status"] == UNDEFINED)] = np.nan
    methods = sorted({m for _, m, _, _ in sources},
                     key=["given", "declared", "derived", "prefix-state", "sampled"].index)
    residual = max((r for _, _, r, _ in sources), default=0.0)
    details = sorted({d for _, _, _, d in sources if d})
    return MEMResult(lengths=batch.lengths.copy(), measure=name, target=target, counts=r_all,
                     method="+".join(methods) or "declared", form_residual=residual,
                     info={"form": "; ".join(details)} if details else {}, **out)


def _solve_measure_chunk_task(task, *, measures, metric_values, residuals, **common):
    """One chunk of one metric's lists (a task of :func:`solve_mems`)."""
    k, idx = task
    return _solve_chunk_task(idx, measure=measures[k], values=metric_values[k], verified=residuals[k], **common)


def _solve_chunk_task(idx, *, batch: ListBatch, measure, values, r_all, counts, tol, max_iter, memory,
                      rel_level, seed, verified=None):
    """One chunk of lists (a task of :func:`solve_mem`): the solver's per-list results and the imposed values.
    ``verified``: the residual of the declared form of a named metric, verified by the caller on all the lists."""
    from meta_eval.statistics.maxent.forms import MetricForm, metric_form
    from meta_eval.statistics.maxent.sampled import solve_sampled

    with _one_blas_thread():  # numpy's small products on these lists: BLAS threads would only cost
        sub = batch.subset(idx)
        if sub.depth == 0:
            sub = ListBatch(np.zeros((idx.size, 1), dtype=np.int64), sub.lengths, sub.counts)
        if isinstance(measure, MetricForm):
            source, form = measure, measure.form(idx, sub)
        else:
            source = metric_form(measure, sub, rel_level=rel_level, seed=seed, verified=verified)
            form = source.form(np.arange(idx.size), sub)
        v = source.observed(sub) if values is None else values[idx]
        if source.exact:
            res = _solve_chunk(sub, form, v, r_all[idx], tol=tol, max_iter=max_iter, memory=memory,
                               actual_feasible=counts == "retrieved" and values is None)
        else:
            res = solve_sampled(form, sub, v, r_all[idx], tol=tol)
    return res, v, (source.name, source.method, source.residual, source.detail)
