"""Reference MEM solvers, one list at a time, for testing and benchmarking the fast batched solver.

* :func:`reference_linear` -- linear metrics: the convex program ``max sum entr(p)`` with linear equality
  constraints, solved by cvxpy (exponential cones; Clarabel by default).
* :func:`reference_nonlinear` -- pairwise and cascade metrics (a non-convex equality constraint): scipy's
  ``trust-constr`` interior-point/SQP method with analytic gradients; the Hessian of the metric is exact for
  pairwise forms (their gradient is affine in p) and quasi-Newton otherwise.

Both take one list (a :class:`ListBatch` of size 1) and return the distribution and its entropy. They are slow by
design (general-purpose solvers); the batched solver in :mod:`meta_eval.statistics.maxent.solver` must agree with them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.statistics.maxent.batch import ListBatch
from meta_eval.statistics.maxent.expectations import ExpectationForm, PairwiseForm, expectation, observed
from meta_eval.statistics.maxent.result import count_targets, entropy


@dataclass
class ReferenceResult:
    """One list's reference solution: P (N, K), entropy, achieved metric value, solver status text."""

    P: np.ndarray
    entropy: float
    achieved: float
    status: str


def _setup(batch: ListBatch, measure, value, counts):
    if batch.n_lists != 1:
        raise InputError(f"reference solvers take one list; got {batch.n_lists}")
    batch = batch.subset(np.array([0]))
    form = expectation(measure, batch) if isinstance(measure, str) else measure
    v = float(observed(form, batch)[0]) if value is None else float(value)
    r = count_targets(batch, counts)[0]
    n = int(batch.lengths[0])
    active = np.flatnonzero(r > 0.5)
    return batch, form, v, r, n, active


def _full(x, n, K, active):
    P = np.zeros((1, n, K))
    P[0][:, active] = x.reshape(n, active.size)
    return P


def reference_linear(batch: ListBatch, measure: str | ExpectationForm, value: float | None = None, *,
                     counts: str = "retrieved", solver: str = "CLARABEL") -> ReferenceResult:
    """Maximum entropy under a linear metric constraint by cvxpy (exponential-cone program)."""
    import cvxpy as cp

    batch, form, v, r, n, active = _setup(batch, measure, value, counts)
    if not form.linear:
        raise InputError("reference_linear needs a linear metric; use reference_nonlinear")
    K = batch.n_grades
    A = np.asarray(form.grad(np.zeros((1, n, K))))[0][:, active]
    if active.size == 1:
        x = np.ones(n)
    else:
        p = cp.Variable((n, active.size), nonneg=True)
        cons = [cp.sum(p, axis=1) == 1, cp.sum(cp.multiply(A, p)) == v]
        cons += [cp.sum(p[:, i]) == r[j] for i, j in enumerate(active) if j > 0]
        prob = cp.Problem(cp.Maximize(cp.sum(cp.entr(p))), cons)
        kw = dict(tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11, max_iter=500) if solver == "CLARABEL" else {}
        prob.solve(solver=solver, **kw)
        x = np.clip(np.asarray(p.value), 0.0, 1.0)
        if p.value is None:
            return ReferenceResult(np.full((n, K), np.nan), np.nan, np.nan, str(prob.status))
    P = _full(x, n, K, active)
    resid = max(np.abs(P[0].sum(1) - 1).max(), np.abs(P[0].sum(0)[1:] - r[1:]).max(), abs(form.value(P)[0] - v))
    status = "optimal" if resid <= 1e-7 else f"inaccurate (constraint residual {resid:.1e})"
    return ReferenceResult(P[0], float(entropy(P)[0]), float(form.value(P)[0]), status)


def reference_nonlinear(batch: ListBatch, measure: str | ExpectationForm, value: float | None = None, *,
                        counts: str = "retrieved", maxiter: int = 3000) -> ReferenceResult:
    """Maximum entropy under a non-linear metric constraint by scipy ``trust-constr`` (local, from p_n = r/n)."""
    from scipy import optimize, sparse
    from scipy.sparse.linalg import LinearOperator

    batch, form, v, r, n, active = _setup(batch, measure, value, counts)
    K = batch.n_grades
    a = active.size
    if a == 1:
        P = _full(np.ones(n), n, K, active)
        return ReferenceResult(P[0], 0.0, float(form.value(P)[0]), "determined")
    x0 = np.tile(r[active] / n, n)
    rows = sparse.kron(sparse.eye(n), np.ones((1, a)))
    cols = sparse.kron(np.ones((1, n)), sparse.eye(a)).tocsr()[[i for i, j in enumerate(active) if j > 0]]
    Alin = sparse.vstack([rows, cols]).tocsr()
    blin = np.concatenate([np.ones(n), r[active][active > 0]])
    lin = optimize.LinearConstraint(Alin, blin, blin)

    def metric(x):
        return float(form.value(_full(x, n, K, active))[0])

    def metric_grad(x):
        return np.asarray(form.grad(_full(x, n, K, active)))[0][:, active].ravel()

    if isinstance(form, PairwiseForm):
        g0 = metric_grad(np.zeros(n * a))

        def metric_hess(x, lam):
            return LinearOperator((n * a, n * a), matvec=lambda u: lam[0] * (metric_grad(np.ravel(u)) - g0))
    else:
        metric_hess = optimize.BFGS()
    nonlin = optimize.NonlinearConstraint(metric, v, v, jac=lambda x: sparse.csr_matrix(metric_grad(x)[None, :]),
                                          hess=metric_hess)

    def f(x):
        xs = np.maximum(x, 1e-300)
        return float(np.sum(xs * np.log(xs))), np.log(xs) + 1.0

    res = optimize.minimize(
        f, x0, jac=True, hess=lambda x: sparse.diags(1.0 / np.maximum(x, 1e-12)), method="trust-constr",
        constraints=[lin, nonlin], bounds=optimize.Bounds(0.0, 1.0),
        options=dict(sparse_jacobian=True, gtol=1e-12, xtol=1e-14, barrier_tol=1e-12, maxiter=maxiter))
    P = _full(np.clip(res.x, 0.0, 1.0), n, K, active)
    return ReferenceResult(P[0], float(entropy(P)[0]), float(form.value(P)[0]), str(res.message))


def reference_solve(batch: ListBatch, measure: str | ExpectationForm, value: float | None = None, *,
                    counts: str = "retrieved") -> ReferenceResult:
    """Dispatch to :func:`reference_linear` or :func:`reference_nonlinear` by the metric's form."""
    form = expectation(measure, batch) if isinstance(measure, str) else measure
    if form.linear:
        return reference_linear(batch, form, value, counts=counts)
    return reference_nonlinear(batch, form, value, counts=counts)
