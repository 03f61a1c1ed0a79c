"""What a maximum-entropy solve returns: the distributions with their diagnostics and status, and the version of
the solver that made them (part of every cached result's key, :mod:`meta_eval.statistics.maxent.cache`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.statistics.maxent.batch import ListBatch

SOLVER_VERSION = "3"

OK, NOT_CONVERGED, INFEASIBLE, UNDEFINED = 0, 1, 2, 3
STATUS = {OK: "ok", NOT_CONVERGED: "not converged", INFEASIBLE: "value outside attainable range",
          UNDEFINED: "metric undefined (e.g. no relevant documents)"}


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
    stationarity : (L,) max |theta - (lambda + mu grad E)| (centred per rank) over the active entries, those whose
        probability is within e^-50 of their rank's largest (0 for exact linear solutions)
    multipliers : (L, K+1) lambda_0 (= 0) .. lambda_c and mu (metric multiplier, in metric units)
    n_iter : (L,) iterations used
    status : (L,) int code, see :data:`STATUS`
    counts : (L, K) the expected-count targets r_j
    method : where the metric's expected-value form came from: "declared", "derived", "sampled" or "given"
        (:mod:`meta_eval.statistics.maxent.forms`)
    form_residual : largest relative |form - metric| found when the form was verified (NaN when sampled)
    approx_error : (L,) estimated error of the achieved expected value for sampled forms (NaN for exact ones)
    on_face : (L,) bool, lists whose value is at an attainable extreme of a non-linear metric, solved on the face of
        the lists reaching it that the iteration approached. Where one face holds every such list (AP, ERR, RR at
        their maximum) it is the maximum-entropy solution; where several do (Success@k at 1 with several relevant
        documents in the top k) the problem is not convex and the face found may not have the largest entropy.
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
    method: str = "given"
    form_residual: float = 0.0
    approx_error: np.ndarray | None = None
    on_face: np.ndarray | None = None
    info: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.approx_error is None:
            self.approx_error = np.full(len(self.lengths), np.nan)
        if self.on_face is None:
            self.on_face = np.zeros(len(self.lengths), dtype=bool)

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
