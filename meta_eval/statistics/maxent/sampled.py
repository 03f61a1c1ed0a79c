"""The sampled fallback of MEM: expected values and gradients estimated from lists drawn from P.

For a metric with no exact expected-value form (not a polynomial of degree <= 2 in the grade indicators, and no
declared form), E[M](P) under the product distribution P is estimated by Monte Carlo, and its gradient by the
score-function identity (Williams 1992) with a baseline:

    dE/dp_n(j) = E[M | G_n = j] = E[M] + Cov(M, [G_n = j]) / p_n(j),

estimated from the same sample (the per-rank constant E[M] does not affect the maximum-entropy solution, whose
logits are defined up to a constant per rank). The maximum-entropy problem is then solved by stochastic sequential
linearisation: at the current P the metric is replaced by its estimated tangent, the linear problem is solved
exactly (as for exact forms), the tangent is averaged over iterations and the sample size grows, so the iteration
settles at a point whose estimated E[M] matches the target within its Monte Carlo error. Lists whose final
estimate still misses the target by more than 3 standard errors are matched along the last direction (a root of
the estimate on one fixed sample, common random numbers, as the exact solver matches values near an extreme) and
estimated afresh. Every result is flagged approximate, with the estimated error of its expected metric value
(|estimate - target| + 2 s.e. from a fresh, larger sample, + 3 |value| / samples for outcomes no draw showed).

Draws are seeded per list (from the seed and the list's index in the batch), so results are reproducible and do
not depend on how lists are chunked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meta_eval.statistics.maxent.batch import ListBatch

N_START, N_MAX, N_FINAL = 256, 4096, 16384  # samples per list: first iteration, cap, final estimate
N_MATCH = 4096  # samples per list behind the final value matching
_VALUE_STEP, _GRAD_STEP = 1_000_000, 1_000_001  # random streams of value() and grad(), apart from the iterations'

OUTER = 24  # linearisation steps


@dataclass
class SampledForm:
    """Monte Carlo expectation of a metric for some lists of a batch (not an exact form: ``exact`` is False)."""

    measure: object
    rel_level: int
    counts: np.ndarray  # (L, K)
    lengths: np.ndarray  # (L,)
    streams: np.ndarray  # (L,) global list index, for per-list random streams
    seed: int
    linear: bool = False
    exact: bool = False
    n_value: int = N_FINAL  # samples per list behind value() (always the same ones: common random numbers)

    def sample(self, P: np.ndarray, n_samples: int, step: int = 0):
        """Draw ``n_samples`` lists per list from P: grades (L, S, N) and metric values (L, S)."""
        L, N, K = P.shape
        u = np.stack([np.random.default_rng([self.seed, int(i), step]).random((n_samples, N)) for i in self.streams])
        cdf = np.cumsum(P, axis=2)[:, None, :, : K - 1]  # (L, 1, N, K-1)
        grades = (u[..., None] > cdf).sum(-1).astype(np.int8)  # inverse CDF per rank
        return grades, self._score(grades)

    def _score(self, grades: np.ndarray) -> np.ndarray:
        from meta_eval.model.rankings import PAD, Rankings

        L, S, N = grades.shape
        inside = np.arange(N)[None, None, :] < self.lengths[:, None, None]
        g = np.where(inside, grades, PAD).reshape(L * S, N)
        r = Rankings(g, np.repeat(self.lengths, S), np.repeat(self.counts, S, axis=0), rel_level=self.rel_level)
        return np.broadcast_to(np.asarray(self.measure(r), dtype=np.float64), (L * S,)).reshape(L, S)

    def estimate(self, P: np.ndarray, n_samples: int, step: int = 0):
        """(mean, standard error, gradient estimate) of E[M] under P."""
        grades, values = self.sample(P, n_samples, step)
        mean = values.mean(1)
        se = values.std(1, ddof=1) / np.sqrt(n_samples)
        K = P.shape[2]
        centred = values - mean[:, None]
        onehot = grades[..., None] == np.arange(K)  # (L, S, N, K)
        cov = np.einsum("ls,lsnk->lnk", centred, onehot) / n_samples
        with np.errstate(divide="ignore", invalid="ignore"):
            grad = np.where(P > 1e-12, cov / P, 0.0) + mean[:, None, None]
        return mean, se, grad

    def value(self, P: np.ndarray) -> np.ndarray:
        return self.estimate(P, self.n_value, step=_VALUE_STEP)[0]

    def grad(self, P: np.ndarray) -> np.ndarray:
        return self.estimate(P, N_START, step=_GRAD_STEP)[2]

    def take(self, index) -> "SampledForm":
        return SampledForm(self.measure, self.rel_level, self.counts[index], self.lengths[index],
                           self.streams[index], self.seed, n_value=self.n_value)


@dataclass(frozen=True)
class SampledBuilder:
    """Builder ``(index, batch) -> SampledForm`` for the lists ``index`` (global indices) of a batch (picklable,
    so a form resolved once can go to worker processes)."""

    measure: object
    rel_level: int
    seed: int

    def __call__(self, index, batch: ListBatch) -> SampledForm:
        return SampledForm(self.measure, self.rel_level, batch.counts, batch.lengths, np.asarray(index), self.seed)


def sampled_form(measure, rel_level: int, seed: int) -> SampledBuilder:
    """Builder ``(index, batch) -> SampledForm`` for the lists ``index`` (global indices) of a batch."""
    return SampledBuilder(measure, rel_level, seed)


def _match(form: SampledForm, g, prob, v, y, P, se, tol, idx):
    """For the lists ``idx``: the distribution along direction g (the counts held by the multipliers lambda) whose
    estimated metric value is v within half its standard error, found on one sample of ``N_MATCH`` lists per list
    (common random numbers: the estimate is then a fixed function of the distribution, and the root can be
    bracketed); lists where no such point is found keep their distribution."""
    from meta_eval.statistics.maxent.linear import match_value, subproblem

    L = len(idx)
    crn = SampledForm(form.measure, form.rel_level, form.counts[idx], form.lengths[idx], form.streams[idx],
                      form.seed, n_value=N_MATCH)
    q, yq, ok = match_value(crn, g[idx], subproblem(prob, idx), v[idx], y[idx], np.full(L, -np.inf), np.full(L, np.inf),
                             np.maximum(0.5 * se[idx], tol), 60)
    return np.where(ok[:, None, None], q, P[idx]), np.where(ok[:, None], yq, y[idx])


def solve_sampled(form: SampledForm, batch: ListBatch, v: np.ndarray, r: np.ndarray, *, tol: float,
                  inner_tol: float = 1e-9):
    """Maximum entropy with an estimated metric constraint (module docstring).

    Returns the solver's result dictionary with ``approx_error`` (L,): |E_hat[M] - v| + 2 s.e. at the solution.
    """
    from meta_eval.statistics.maxent.linear import problem, solve_direction
    from meta_eval.statistics.maxent.result import NOT_CONVERGED, OK, entropy

    L, K = batch.n_lists, batch.n_grades
    n = np.maximum(batch.lengths, 1).astype(float)
    prob = problem(batch, r)
    y = np.zeros((L, K + 1))
    P0 = np.where(prob.allowed, (r / n[:, None])[:, None, :], 0.0)
    P = 0.5 * batch.onehot() * prob.allowed + 0.5 * P0
    P = P / np.maximum(P.sum(2, keepdims=True), 1e-300) * prob.rowmask[..., None]
    g_avg = None
    for step in range(OUTER):
        size = min(N_START * 2 ** (step // 3), N_MAX)
        mean, se, g = form.estimate(P, size, step)
        g = np.where(prob.allowed, g, 0.0)
        g_avg = g if g_avg is None else 0.5 * g_avg + 0.5 * g
        correction = v - mean
        for _ in range(6):  # halve the value correction when the linear target is out of reach
            t = np.einsum("lnk,lnk->l", g_avg, P) + correction
            q, y_new, _, ok = solve_direction(g_avg, prob, t, y, inner_tol, 60)
            if ok.all():
                break
            correction = np.where(ok, correction, 0.5 * correction)
        P = np.where(ok[:, None, None], q, P)
        y = np.where(ok[:, None], y_new, y)
    mean, se, _ = form.estimate(P, N_FINAL, step=OUTER)
    miss = np.flatnonzero(np.abs(mean - v) > np.maximum(3.0 * se, tol))
    if miss.size:  # the last steps left the value off: match it along the last direction, then estimate afresh
        P[miss], y[miss] = _match(form, g_avg, prob, v, y, P, se, tol, miss)
        mean[miss], se[miss], _ = form.take(miss).estimate(P[miss], N_FINAL, step=OUTER + 1)
    # 2 s.e., and the rule of three for outcomes no draw showed (a distribution near a point mass has s.e. 0)
    error = np.abs(mean - v) + 2.0 * se + 3.0 * np.maximum(np.abs(mean), np.abs(v)) / N_FINAL
    status = np.where(np.abs(mean - v) <= np.maximum(3.0 * se, tol), OK, NOT_CONVERGED).astype(np.int8)
    residual = np.maximum(np.abs(P.sum(1) - r).max(1), np.abs(mean - v))
    return dict(P=P, achieved=mean, entropy=entropy(P), max_residual=residual, stationarity=np.full(L, np.nan),
                multipliers=y, n_iter=np.full(L, OUTER), status=status, approx_error=error)
