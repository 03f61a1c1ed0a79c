"""The fast batched maximum-entropy solver (Aslam, Yilmaz & Pavlu, SIGIR 2005; graded: Robertson et al., SIGIR 2010).

For each list l (length n, grades 0..c) find the product distribution P[l] (rows p_n over grades) that

    maximises   H(P) = - sum_n sum_j p_n(j) ln p_n(j)
    subject to  sum_n p_n(j) = r_j          for j = 1..c   (retrieved counts by default; the qrels counts optionally)
                E[M](P)      = v            (the list's observed metric value)

Stationarity gives p_n = softmax_j(lambda_j + mu * dE[M]/dp_n(j)) with lambda_0 = 0 (methods.md Sec. 1.2, 2.3).

* Linear metrics (dE/dp fixed): the convex dual ``sum_n logsumexp_j(lambda_j + mu A_nj) - lambda.r - mu v`` is
  minimised by damped Newton on the c + 1 multipliers, batched over lists (one (c+1)x(c+1) system per list).
* Other metrics (pairwise, cascade, user forms): sequential linearisation. At the current P the metric is replaced
  by its tangent E(P) + grad E(P).(Q - P), the linear problem is solved exactly as above (warm-started), and the
  fixed point of this map -- a KKT point of the original problem -- is accelerated by Anderson mixing on the
  logits. For convex E (AP, GAP) and values above the count-only maximum-entropy value this is the convex-concave
  procedure.

Every list gets diagnostics: the largest constraint residual, the stationarity residual, iterations and a status.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from meta_eval.errors import InfeasibleError, InputError
from meta_eval.mem.batch import ListBatch
from meta_eval.mem.expectations import ExpectationForm, expectation, observed

OK, NOT_CONVERGED, INFEASIBLE, UNDEFINED = 0, 1, 2, 3
STATUS = {OK: "ok", NOT_CONVERGED: "not converged", INFEASIBLE: "value outside attainable range",
          UNDEFINED: "metric undefined (e.g. no relevant documents)"}
_NEG = -np.inf


@dataclass
class MEMResult:
    """Maximum-entropy distributions for a batch of lists, with per-list diagnostics.

    Attributes
    ----------
    P : (L, N, K) probability of each grade at each rank (0 past each list's end; NaN rows for failed lists)
    lengths : (L,) list lengths
    measure : the constrained metric
    target : (L,) the metric value imposed (observed value unless given)
    achieved : (L,) E[M](P)
    entropy : (L,) -sum p ln p
    max_residual : (L,) largest absolute violation over the count and metric constraints
    stationarity : (L,) max |theta - (lambda + mu grad E)| over active entries (0 for exact linear solutions)
    multipliers : (L, K+1) lambda_0 (= 0) .. lambda_c and mu (metric multiplier, in metric units)
    n_iter : (L,) iterations used
    status : (L,) int code, see :data:`STATUS`
    counts : (L, K) the expected-count targets r_j
    """

    P: np.ndarray
    lengths: np.ndarray
    measure: str
    target: np.ndarray
    achieved: np.ndarray
    entropy: np.ndarray
    max_residual: np.ndarray
    stationarity: np.ndarray
    multipliers: np.ndarray
    n_iter: np.ndarray
    status: np.ndarray
    counts: np.ndarray
    info: dict = field(default_factory=dict)

    @property
    def converged(self) -> np.ndarray:
        return self.status == OK

    def survival(self, level: int) -> np.ndarray:
        """(L, N): probability that the document at each rank has grade >= level."""
        return self.P[:, :, level:].sum(axis=2)


def entropy(P: np.ndarray) -> np.ndarray:
    """-sum_{n,j} p ln p per list (0 ln 0 = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(P > 0, P * np.log(np.where(P > 0, P, 1.0)), 0.0)
    return -t.sum(axis=(1, 2))


def count_targets(batch: ListBatch, counts: str = "retrieved") -> np.ndarray:
    """(L, K) expected counts r_j: grades retrieved by the run (default) or the qrels totals capped by nothing.

    With ``counts="qrels"`` r_j = R_j for j >= 1 and r_0 = n - sum R_j; lists where that is negative are infeasible.
    """
    if counts == "retrieved":
        return batch.retrieved_counts().astype(float)
    if counts == "qrels":
        r = batch.counts.astype(float).copy()
        r[:, 0] = batch.lengths - r[:, 1:].sum(1)
        return r
    raise InputError(f"counts must be 'retrieved' or 'qrels'; got {counts!r}")


# ------------------------------------------------------------------------------------------------------------
# Linear maximum entropy by Newton on the dual (batched)
# ------------------------------------------------------------------------------------------------------------

def _logits(y: np.ndarray, d: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    K = d.shape[2]
    th = y[:, None, :K] + y[:, K, None, None] * d
    return np.where(allowed, th, _NEG)


def _softmax(th: np.ndarray, rowmask: np.ndarray):
    m = np.max(th, axis=2, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(th - m)
    s = e.sum(axis=2, keepdims=True)
    s = np.where(s > 0, s, 1.0)
    q = e / s
    lse = (np.log(s) + m)[..., 0]
    return q * rowmask[..., None], np.where(rowmask, lse, 0.0)


def _dual_parts(y, d, allowed, rowmask, r, t):
    th = _logits(y, d, allowed)
    q, lse = _softmax(th, rowmask)
    K = d.shape[2]
    f = lse.sum(1) - np.einsum("lk,lk->l", y[:, 1:K], r[:, 1:]) - y[:, K] * t
    return q, f


def _grad_hess(q, d, r, t, frozen):
    L, N, K = q.shape
    g = np.empty((L, K + 1))
    g[:, :K] = q.sum(1) - r
    dq = np.where(q > 0, d, 0.0)
    mvec = np.einsum("lnk,lnk->ln", q, dq)
    g[:, K] = mvec.sum(1) - t
    H = np.empty((L, K + 1, K + 1))
    H[:, :K, :K] = -np.einsum("lni,lnj->lij", q, q)
    idx = np.arange(K)
    H[:, idx, idx] += q.sum(1)
    dev = dq - mvec[..., None]
    H[:, :K, K] = np.einsum("lnk,lnk->lk", q, dev)
    H[:, K, :K] = H[:, :K, K]
    H[:, K, K] = np.einsum("lnk,lnk->l", q, dev * dev)
    g = np.where(frozen, 0.0, g)
    H = np.where(frozen[:, :, None] | frozen[:, None, :], 0.0, H)
    H[:, np.arange(K + 1), np.arange(K + 1)] += frozen
    return g, H


def _newton_linear(d, allowed, rowmask, r, t, y, frozen, tol, max_iter):
    """Minimise the dual for every list. Returns q, y, iterations, converged flags.

    ``d`` is assumed scaled to O(1); residual tolerances are absolute in the scaled units.
    """
    L, N, K = d.shape
    iters = np.zeros(L, dtype=np.int64)
    done = np.zeros(L, dtype=bool)
    q, f = _dual_parts(y, d, allowed, rowmask, r, t)
    live = np.arange(L)
    for it in range(max_iter):
        g, H = _grad_hess(q[live], d[live], r[live], t[live], frozen[live])
        ok = np.max(np.abs(g), axis=1) <= tol
        done[live[ok]] = True
        live = live[~ok]
        if live.size == 0:
            break
        g, H = g[~ok], H[~ok]
        iters[live] += 1
        scale = np.maximum(np.abs(np.diagonal(H, axis1=1, axis2=2)).max(1), 1e-300)
        Hreg = H + (1e-13 * scale)[:, None, None] * np.eye(K + 1)
        try:
            step = -np.linalg.solve(Hreg, g[..., None])[..., 0]
        except np.linalg.LinAlgError:
            step = -np.stack([np.linalg.lstsq(h, gg, rcond=None)[0] for h, gg in zip(Hreg, g)])
        step = np.where(np.isfinite(step), step, 0.0)
        # damped: cap the multiplier change, then backtrack on the (convex) dual
        big = np.abs(step).max(1)
        step *= np.minimum(1.0, 50.0 / np.maximum(big, 1e-300))[:, None]
        slope = np.einsum("lk,lk->l", g, step)
        alpha = np.ones(live.size)
        f0 = f[live]
        pending = np.arange(live.size)
        ynew = y[live].copy()
        qnew = np.empty((live.size, N, K))
        fnew = np.empty(live.size)
        for _ in range(60):
            lv = live[pending]
            yt = y[lv] + alpha[pending, None] * step[pending]
            qt, ft = _dual_parts(yt, d[lv], allowed[lv], rowmask[lv], r[lv], t[lv])
            acc = (ft <= f0[pending] + 1e-4 * alpha[pending] * slope[pending]) | (alpha[pending] < 1e-12)
            acc |= ft <= f0[pending] + 1e-12 * np.abs(f0[pending])  # round-off level
            idx = pending[acc]
            ynew[idx], qnew[idx], fnew[idx] = yt[acc], qt[acc], ft[acc]
            pending = pending[~acc]
            if pending.size == 0:
                break
            alpha[pending] *= 0.5
        if pending.size:  # no decrease found: keep the old point
            ynew[pending], fnew[pending] = y[live[pending]], f0[pending]
            qnew[pending] = q[live[pending]]
        y[live], q[live], f[live] = ynew, qnew, fnew
    else:
        g, _ = _grad_hess(q[live], d[live], r[live], t[live], frozen[live])
        done[live[np.max(np.abs(g), axis=1) <= tol]] = True
    return q, y, iters, done


# ------------------------------------------------------------------------------------------------------------
# Setup shared by all forms
# ------------------------------------------------------------------------------------------------------------

@dataclass
class _Problem:
    rowmask: np.ndarray  # (L, N)
    allowed: np.ndarray  # (L, N, K) rank inside the list and grade with a positive count target
    r: np.ndarray  # (L, K)
    frozen: np.ndarray  # (L, K+1) variables fixed at 0 (lambda_0, lambda of absent grades)


def _problem(batch: ListBatch, r: np.ndarray) -> _Problem:
    L, N, K = batch.n_lists, batch.depth, batch.n_grades
    rowmask = batch.mask
    active = r > 0.5
    allowed = rowmask[..., None] & active[:, None, :]
    frozen = np.zeros((L, K + 1), dtype=bool)
    frozen[:, 0] = True
    frozen[:, :K] |= ~active
    return _Problem(rowmask, allowed, r, frozen)


def _normalise(d: np.ndarray, allowed: np.ndarray):
    """Shift/scale d per list to [0, 1] over allowed entries; returns d', lo, span (span 0 -> constant)."""
    big = np.where(allowed, d, np.inf).min(axis=(1, 2))
    top = np.where(allowed, d, -np.inf).max(axis=(1, 2))
    lo = np.where(np.isfinite(big), big, 0.0)
    span = np.where(np.isfinite(top), top - lo, 0.0)
    rel = span > 1e-14 * np.maximum(np.abs(lo), np.abs(top + 0.0 * lo)).clip(min=1e-300)
    s = np.where(rel, span, 1.0)
    dn = np.where(allowed, (d - lo[:, None, None]) / s[:, None, None], 0.0)
    return dn, lo, np.where(rel, span, 0.0)


def _solve_linear_direction(d, prob: _Problem, t, y0, tol, max_iter):
    """Max entropy subject to counts and sum d.q = t; returns q, y (mu in units of d), iterations, converged."""
    L, N, K = d.shape
    n = prob.rowmask.sum(1)
    dn, lo, span = _normalise(d, prob.allowed)
    tn = np.where(span > 0, (t - lo * n) / np.where(span > 0, span, 1.0), 0.0)
    frozen = prob.frozen.copy()
    frozen[:, K] |= span == 0
    y = np.where(frozen, 0.0, y0)
    y[:, K] = np.where(span > 0, y0[:, K] * span, 0.0)
    q, y, it, done = _newton_linear(dn, prob.allowed, prob.rowmask, prob.r, tn, y, frozen, tol, max_iter)
    y[:, K] = np.where(span > 0, y[:, K] / np.where(span > 0, span, 1.0), 0.0)
    # a constant direction: the metric is fixed by the counts (no information); that is the solver's business only
    return q, y, it, done


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
    hi = form.value(ListBatch(best, n, batch.counts).onehot())
    lo = form.value(ListBatch(worst, n, batch.counts).onehot())
    return np.minimum(lo, hi), np.maximum(lo, hi)


# ------------------------------------------------------------------------------------------------------------
# The solver
# ------------------------------------------------------------------------------------------------------------

def _anderson(X, F, x, f, m):
    """One Anderson (type II) step per list. X, F: (L, h, D) histories of iterates and residuals."""
    if X.shape[1] < 2:
        return x + f
    dX = np.diff(X, axis=1)
    dF = np.diff(F, axis=1)
    G = np.einsum("lid,ljd->lij", dF, dF)
    b = np.einsum("lid,ld->li", dF, f)
    reg = 1e-10 * np.trace(G, axis1=1, axis2=2)[:, None, None] + 1e-300
    gam = np.linalg.solve(G + reg * np.eye(G.shape[1]), b[..., None])[..., 0]
    return x + f - np.einsum("lid,li->ld", dX + dF, gam)


def _solve_chunk(batch: ListBatch, form: ExpectationForm, v: np.ndarray, r: np.ndarray, *, tol: float,
                 max_iter: int, memory: int):
    L, N, K = batch.n_lists, batch.depth, batch.n_grades
    prob = _problem(batch, r)
    n = batch.lengths.astype(float)
    status = np.zeros(L, dtype=np.int8)
    # feasibility of the counts themselves
    bad_counts = (np.abs(r.sum(1) - n) > 1e-9) | np.any(r < -1e-9, axis=1)
    undefined = ~np.isfinite(v)
    lo, hi = _attainable(form, batch, r)
    span = np.maximum(hi - lo, 1.0)
    infeasible = bad_counts | (v > hi + 1e-9 * span) | (v < lo - 1e-9 * span)
    infeasible &= ~undefined
    status[undefined] = UNDEFINED
    status[infeasible] = INFEASIBLE
    good = status == OK
    vv = np.where(good, np.clip(v, lo, hi), 0.0)

    # start: count-only maximum entropy p_n(j) = r_j / n  (y = log r_j / r_0 up to gauge; mu = 0)
    y = np.zeros((L, K + 1))
    with np.errstate(divide="ignore"):
        lr = np.log(np.where(r > 0, r, 1.0))
    y[:, :K] = lr - lr[:, :1] * (r[:, :1] > 0)
    y = np.where(prob.frozen, 0.0, y)
    P0 = np.where(prob.allowed, (r / np.maximum(n, 1)[:, None])[:, None, :], 0.0)
    it = np.zeros(L, dtype=np.int64)
    stat = np.zeros(L)
    if form.linear:
        d = np.array(form.grad(P0))
        q, y, it, done = _solve_linear_direction(d, prob, vv, y, tol, max_iter)
        P = q
    else:
        P, y, it, done, stat = _solve_nonlinear(form, prob, vv, y, P0, tol, max_iter, memory)
    achieved = form.value(P)
    res_counts = np.abs(P.sum(1) - r).max(1)
    res = np.maximum(res_counts, np.abs(achieved - v))
    status[good & ~done] = NOT_CONVERGED
    ent = entropy(P)
    return dict(P=P, achieved=achieved, entropy=ent, max_residual=np.where(good, res, np.nan),
                stationarity=np.where(good, stat, np.nan), multipliers=y, n_iter=it, status=status)


def _solve_nonlinear(form, prob: _Problem, v, y, P0, tol, max_iter, memory):
    """Sequential linearisation + Anderson acceleration on the logits."""
    L, N, K = P0.shape
    allowed = prob.allowed
    # first linear step from the count-only start
    d = np.array(form.grad(P0))
    t = v - form.value(P0) + np.einsum("lnk,lnk->l", d, P0)
    q, y, _, _ = _solve_linear_direction(d, prob, t, y, tol, 200)
    theta = np.where(allowed, _logits(y, d, allowed), 0.0)
    D = N * K
    X = np.empty((L, 0, D))
    F = np.empty((L, 0, D))
    it = np.zeros(L, dtype=np.int64)
    done = np.zeros(L, dtype=bool)
    stat = np.full(L, np.inf)
    P = q.copy()
    Y = y.copy()
    live = np.arange(L)
    for k in range(max_iter):
        th = theta[live]
        p, _ = _softmax(np.where(allowed[live], th, _NEG), prob.rowmask[live])
        sub = _SubForm(form, live)
        d = np.array(sub.grad(p))
        e = sub.value(p)
        t = v[live] - e + np.einsum("lnk,lnk->l", d, p)
        q, yl, _, _ = _solve_linear_direction(d, _sub(prob, live), t, Y[live], tol * 1e-2, 100)
        th_new = np.where(allowed[live], _logits(yl, d, allowed[live]), 0.0)
        f = (th_new - th).reshape(live.size, D)
        # gauge: logits are defined up to a per-rank constant; compare after centring on grade entries
        P[live], Y[live] = q, yl
        it[live] += 1
        s = np.abs(np.where(allowed[live], th_new - th - _rowmean(th_new - th, allowed[live]), 0.0)).max(axis=(1, 2))
        stat[live] = s
        resid = np.abs(sub.value(q) - v[live])
        conv = (resid <= tol) & (s <= 1e-7) & (np.abs(q.sum(1) - prob.r[live]).max(1) <= 1e-9)
        done[live[conv]] = True
        keep = ~conv
        x = th.reshape(live.size, D)
        X = np.concatenate([X[keep], x[keep, None]], axis=1)[:, -memory:]
        F = np.concatenate([F[keep], f[keep, None]], axis=1)[:, -memory:]
        live = live[keep]
        if live.size == 0:
            break
        xn = _anderson(X, F, x[keep], f[keep], memory)
        xn = np.where(np.isfinite(xn), xn, (x[keep] + f[keep]))
        theta[live] = xn.reshape(live.size, N, K)
    return P, Y, it, done, stat


def _rowmean(x, allowed):
    cnt = allowed.sum(2, keepdims=True)
    return np.where(allowed, x, 0.0).sum(2, keepdims=True) / np.maximum(cnt, 1)


def _sub(prob: _Problem, idx) -> _Problem:
    return _Problem(prob.rowmask[idx], prob.allowed[idx], prob.r[idx], prob.frozen[idx])


class _SubForm:
    """A view of a form restricted to some lists (forms hold per-list arrays on their leading axis)."""

    def __init__(self, form, idx):
        self.form, self.idx = form, idx

    def _restricted(self):
        f = self.form
        import dataclasses

        if dataclasses.is_dataclass(f):
            kw = {}
            for fld in dataclasses.fields(f):
                val = getattr(f, fld.name)
                kw[fld.name] = val[self.idx] if isinstance(val, np.ndarray) and val.ndim >= 1 else val
            return type(f)(**kw)
        if hasattr(f, "take"):
            return f.take(self.idx)
        raise InputError("a user expectation form must be a dataclass of per-list arrays or define take(index)")

    def value(self, P):
        return self._restricted().value(P)

    def grad(self, P):
        return self._restricted().grad(P)


def solve_mem(batch: ListBatch, measure: str | ExpectationForm, values: np.ndarray | None = None, *,
              counts: str = "retrieved", tol: float = 1e-10, max_iter: int = 300, memory: int = 6,
              chunk_size: int = 256, errors: str = "flag", progress: bool = False) -> MEMResult:
    """Solve the maximum-entropy problem for every list of ``batch`` under ``measure``.

    Parameters
    ----------
    batch : ListBatch
        The lists (grades, lengths, qrels counts).
    measure : str or ExpectationForm
        A registered metric name (``"AP"``, ``"GAP(g=0.5,0.5)"``, ``"nDCG(gain=exp)"``, ``"P@10"``, ...) or a form
        built for this batch.
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
        Lists solved together (sorted by length so each chunk is padded only to its own longest list).
    errors : {"flag", "raise"}
        For a value outside the attainable range: flag the row (status 2, NaN distribution) or raise
        :class:`InfeasibleError`.
    progress : bool
        Show a tqdm progress bar over chunks.

    Returns
    -------
    MEMResult
    """
    if errors not in ("flag", "raise"):
        raise InputError(f"errors must be 'flag' or 'raise'; got {errors!r}")
    name = measure if isinstance(measure, str) else type(measure).__name__
    L, N, K = batch.n_lists, batch.depth, batch.n_grades
    if isinstance(measure, str):
        expectation(measure, batch.subset(slice(0, min(L, 1))))  # validate the name early
    v_all = None if values is None else np.asarray(values, dtype=float).reshape(-1)
    if v_all is not None and v_all.shape != (L,):
        raise InputError(f"values must have one entry per list ({L}); got {v_all.shape}")
    out = dict(P=np.zeros((L, N, K)), achieved=np.full(L, np.nan), entropy=np.full(L, np.nan),
               max_residual=np.full(L, np.nan), stationarity=np.full(L, np.nan),
               multipliers=np.full((L, K + 1), np.nan), n_iter=np.zeros(L, dtype=np.int64),
               status=np.zeros(L, dtype=np.int8))
    target = np.full(L, np.nan)
    r_all = count_targets(batch, counts)
    order = np.argsort(batch.lengths, kind="stable")
    chunks = [order[i:i + chunk_size] for i in range(0, L, chunk_size)]
    it = chunks
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(chunks, desc=f"MEM {name}", unit="chunk")
    for idx in it:
        sub = batch.subset(idx)
        if sub.depth == 0:
            sub = ListBatch(np.zeros((idx.size, 1), dtype=np.int64), sub.lengths, sub.counts)
        form = expectation(measure, sub) if isinstance(measure, str) else _SubForm(measure, idx)._restricted()
        v = observed(form, sub) if v_all is None else v_all[idx]
        target[idx] = v
        res = _solve_chunk(sub, form, v, r_all[idx], tol=tol, max_iter=max_iter, memory=memory)
        d = sub.depth
        for key, val in res.items():
            if key == "P":
                out["P"][idx, :d] = val
            else:
                out[key][idx] = val
    bad = out["status"] == INFEASIBLE
    if bad.any() and errors == "raise":
        i = int(np.flatnonzero(bad)[0])
        raise InfeasibleError(
            f"{int(bad.sum())} list(s) have a {name} value outside the attainable range for their grade counts "
            f"(first: list {i}, value {target[i]!r}, counts {r_all[i].tolist()})")
    out["P"][(out["status"] == INFEASIBLE) | (out["status"] == UNDEFINED)] = np.nan
    return MEMResult(lengths=batch.lengths.copy(), measure=name, target=target, counts=r_all, **out)
