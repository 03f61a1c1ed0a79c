"""The expected-value form of *any* metric, for the maximum-entropy method.

MEM needs E[M](P) and its gradient under a product (probability-at-rank) distribution P. Three sources, tried in
this order for a metric meta-eval can score (a registered measure, ``module:function``, ``file.py:function``, a
``@per_list`` function):

``declared``
    an exact form registered with :func:`~meta_eval.statistics.maxent.expectations.register_expectation` (the built-ins: P@k,
    recall, R-prec, DCG/nDCG, RBP, AP, GAP, Q, v_G, RR, ERR). It is *verified* against the metric itself on the
    actual lists and on random lists before it is used.
``derived``
    identified by probing. For a fixed list length n and grade counts, many metrics are polynomials of degree
    <= 2 in the per-rank grade indicators x_{i,j} = [G_i = j] (j >= 1; grade 0 is the reference):

        M(x) = c + sum_{i,j} a_{ij} x_{ij} + sum_{m<i} sum_{j,k} b_i(j, k) x_{mj} x_{ik}

    with the interaction depending on the later rank i only ("prefix" interactions: P@k, DCG/nDCG, RBP, AP, GAP,
    Q-measure, most user metrics). Under independent ranks E[x_{mj} x_{ik}] = p_m(j) p_i(k) for m != i, so E[M] is
    the same polynomial evaluated at P: a :class:`LinearForm` or :class:`PairwiseForm` with channel (j, k) for
    every pair of positive grades. The coefficients come from 1 + n c + (n - 1) c^2 probe lists (the empty list,
    one document of grade j at rank i, grade j at rank 1 with grade k at rank i), per distinct (length, counts);
    the identified polynomial is then checked on random lists and on the actual lists, and trusted only if it
    reproduces the metric to ``tol`` (the residual is reported).
``prefix-state``
    identified by probing too: a metric computed by a small state carried down the ranking -- a first-hit cascade
    (RR at any grade, Success@k, "1/rank of the first top-grade document"), a stopping model (ERR), capped counts,
    and the degree-2 polynomials above -- is a weighted automaton with rank-dependent transitions, whose
    expectation under independent ranks is a forward/backward dynamic programme over the state
    (:mod:`meta_eval.statistics.maxent.prefix_state`). The automaton is found rank by rank from the metric's values on probe
    lists, verified on random lists and the actual lists like a derived form, and used only if it reproduces the
    metric to ``tol``.
``sampled``
    the last resort, for anything else (ratios of random quantities, interpolated precision, states that grow with
    the list): E[M] and its gradient are estimated from lists sampled from P (:mod:`meta_eval.statistics.maxent.sampled`);
    results are flagged approximate with an estimated error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.statistics.maxent.batch import ListBatch
from meta_eval.statistics.maxent.expectations import ExpectationForm, LinearForm, PairwiseForm, declared_form
from meta_eval.statistics.maxent.groups import GroupTable, groups_in_words
from meta_eval.statistics.maxent.verify import form_residual, score_batch, verification_batch

VERIFY_TOL = 1e-9  # relative to the metric's scale
METHODS = ("declared", "derived", "prefix-state", "sampled")  # the sources of a form, in the order they are tried
_PROBE_CELLS = 20_000_000  # probe lists × length evaluated in one call of the metric


@dataclass
class MetricForm:
    """A metric's expected-value form for every list of a batch.

    Attributes
    ----------
    name : str
        The metric as named by the user (output name).
    method : {"declared", "derived", "prefix-state", "sampled", "given"}
        Where the form comes from (module docstring).
    measure : meta_eval.Measure or None
        The metric itself (None for a form declared for a name the core registry does not know).
    rel_level : int
        Binary relevance threshold the metric is scored with (relevant = grade >= rel_level).
    residual : float
        Largest |form - metric| found when verifying (0 for a form given directly, NaN for sampled).
    exact : bool
        False for the sampled fallback.
    detail : str
        The form in words (e.g. the automaton's dimension and groups), for reports.
    """

    name: str
    method: str
    measure: object | None
    rel_level: int
    residual: float
    exact: bool = True
    _build: object = field(default=None, repr=False)
    detail: str = ""

    @property
    def picklable(self) -> bool:
        """Whether the form can go to worker processes as it is (forms found by probing, the sampled fallback)."""
        return self.method in ("derived", "prefix-state", "sampled") and self.measure is not None

    def form(self, index: np.ndarray, batch: ListBatch) -> ExpectationForm:
        """The form for the lists ``index`` of the batch the form was made for (``batch`` holds those lists)."""
        return self._build(index, batch)

    def observed(self, batch: ListBatch) -> np.ndarray:
        """The metric's value on the actual lists (the metric itself when known, else the form's point mass)."""
        if self.measure is not None:
            return score_batch(self.measure, batch, self.rel_level)
        return self._build(np.arange(batch.n_lists), batch).value(batch.onehot())


# ----------------------------------------------------------------------------------------------------------
# Resolution
# ----------------------------------------------------------------------------------------------------------

def metric_form(metric, batch: ListBatch, *, rel_level: int = 1, sampled: bool = True,
                tol: float = VERIFY_TOL, seed: int = 0, method: str | None = None,
                verified: float | None = None) -> MetricForm:
    """The expected-value form of ``metric`` for the lists of ``batch``: declared, derived or sampled.

    Parameters
    ----------
    metric : str, Measure or ExpectationForm
        A measure name (canonical or trec_eval spelling, with ``rel=L`` to set the relevance threshold),
        ``module:function``, ``file.py:function``, a :class:`~meta_eval.measures.Measure`, or a form built for
        this batch.
    batch : ListBatch
        The lists (forms depend on each list's length and grade counts).
    rel_level : int
        Relevance threshold of binary metrics (overridden by ``rel=L`` in the name).
    sampled : bool
        Allow the sampled (approximate) fallback; otherwise a metric with neither a declared nor a derivable form
        is an error.
    tol : float
        Verification tolerance, relative to the metric's scale.
    seed : int
        Seed of the random verification lists (and of the sampled fallback).
    method : {"declared", "derived", "prefix-state", "sampled"}, optional
        Use this source only (e.g. to compare the sampled fallback with an exact form); default: the first that
        works, in that order.
    verified : float, optional
        The residual the caller found when it verified the declared form on the lists these come from: the
        declared form is used without verifying it again (the solver verifies once, on all the lists, and its
        workers build the form for their chunks).

    Raises
    ------
    InputError
        Unknown metric, bad parameters, or no form when ``sampled=False``.
    """
    if not isinstance(metric, (str,)) and hasattr(metric, "value") and hasattr(metric, "grad"):
        return MetricForm(type(metric).__name__, "given", None, rel_level, 0.0, _build=_given(metric))
    if method not in METHODS + (None,):
        raise InputError(f"method must be one of {', '.join(map(repr, METHODS))}; got {method!r}")
    name = metric if isinstance(metric, str) else metric.output_name
    measure, rel_level, declared = _resolve(metric, rel_level)
    if measure is not None and isinstance(metric, str) and measure.family.source:
        name = measure.output_name  # a plug-in (file.py:function, module:function) is named by its function
    if method == "sampled":
        return _sampled(name, measure, rel_level, seed)
    if method in ("derived", "prefix-state"):
        declared = None
    if declared is not None:
        if verified is not None and verified <= tol:
            return MetricForm(name, "declared", measure, rel_level, verified, _build=declared)
        probe = verification_batch(batch, seed)
        try:
            residual = form_residual(declared(np.arange(probe.n_lists), probe), measure, probe, rel_level)
        except InputError:  # parameters the declared builder does not support
            residual = np.inf
        if residual <= tol:
            return MetricForm(name, "declared", measure, rel_level, residual, _build=declared)
        if method == "declared":
            raise InputError(f"the declared form of {name!r} does not reproduce the metric (residual {residual:.3g})")
    elif method == "declared":
        raise InputError(f"no expected-value form is declared for {name!r}")
    derived = derive_form(measure, batch, rel_level=rel_level, tol=tol, seed=seed) if method != "prefix-state" \
        else None
    if derived is not None:
        derived.name = name
        return derived
    state = _prefix_state(name, measure, batch, rel_level, tol, seed) if method != "derived" else None
    if state is not None:
        return state
    if not sampled or method in ("derived", "prefix-state"):
        raise InputError(f"metric {name!r} has no exact expected-value form (it is neither a polynomial of degree "
                         "<= 2 in the grade indicators nor computed by a small state down the ranking)"
                         + ("" if method else " and sampling is disabled"))
    return _sampled(name, measure, rel_level, seed)


def _prefix_state(name, measure, batch: ListBatch, rel_level: int, tol: float, seed: int) -> MetricForm | None:
    from meta_eval.statistics.maxent.prefix_state import prefix_state_form

    found = prefix_state_form(measure, batch, rel_level=rel_level, tol=tol, seed=seed)
    if found is None:
        return None
    return MetricForm(name, "prefix-state", measure, rel_level, found.residual, _build=found.automaton,
                      detail=found.description)


def _sampled(name, measure, rel_level: int, seed: int) -> MetricForm:
    from meta_eval.statistics.maxent.sampled import sampled_form

    if measure is None:
        raise InputError(f"the sampled form needs a metric meta-eval can score; {name!r} is only declared for MEM")
    return MetricForm(name, "sampled", measure, rel_level, np.nan, exact=False,
                      _build=sampled_form(measure, rel_level, seed))


def _given(form):
    from meta_eval.statistics.maxent.expectations import restrict

    return lambda index, batch: restrict(form, index)


def _resolve(metric, rel_level: int):
    """(Measure, relevance threshold, declared builder or None) for a metric specification (the one resolver's)."""
    from meta_eval.measures.resolver import resolve_one

    measure = resolve_one(metric)
    return measure, rel_level, _declared_for(measure, rel_level)


def _declared_for(measure, rel_level: int):
    """The declared form of a measure as ``(index, batch) -> form`` (:func:`declared_form`: by its family, from its
    own parameters), or None if MEM has none for it."""
    build = declared_form(measure, rel_level)
    return None if build is None else (lambda index, batch: build(batch))


# ----------------------------------------------------------------------------------------------------------
# Derivation by probing
# ----------------------------------------------------------------------------------------------------------

@dataclass
class _Derived:
    """Per group of lists (:mod:`meta_eval.statistics.maxent.groups`): the constant c, first-order a (n, K) and interactions
    B (n, K-1, K-1), n the length the group was probed at (a shorter list reads only its first ranks)."""

    table: GroupTable
    const: list
    first: list
    inter: list  # None for a linear group

    def build(self, index: np.ndarray, batch: ListBatch) -> ExpectationForm:
        L, N, K = batch.n_lists, batch.depth, batch.n_grades
        groups = self.table.lookup(batch)
        A = np.zeros((L, N, K))
        for g in np.unique(groups):
            n = min(len(self.first[g]), N)
            A[groups == g, :n] = self.first[g][None, :n, :]
        # the constant is spread over the ranks of each list (each row of P sums to 1 inside the list)
        const = np.array(self.const, dtype=float)[groups] if L else np.zeros(0)
        A += (const / np.maximum(batch.lengths, 1))[:, None, None] * batch.mask[..., None]
        pairwise = [g for g in np.unique(groups) if self.inter[g] is not None]
        if not pairwise:
            return LinearForm(A)
        c = K - 1
        W = np.zeros((L, c * c, N))
        for g in pairwise:
            n = min(len(self.first[g]), N)
            W[groups == g, :, :n] = self.inter[g][:n].reshape(n, c * c).T[None]
        q = np.arange(c * c)
        U = np.zeros((c * c, K))
        V = np.zeros((c * c, K))
        U[q, 1 + q % c] = 1.0  # grade k at the later rank
        V[q, 1 + q // c] = 1.0  # grade j at an earlier rank
        return PairwiseForm(A, W, np.broadcast_to(U, (L, c * c, K)), np.broadcast_to(V, (L, c * c, K)))


def derive_form(measure, batch: ListBatch, *, rel_level: int = 1, tol: float = VERIFY_TOL,
                seed: int = 0) -> MetricForm | None:
    """Identify the degree-2 polynomial of ``measure`` for every group of lists of ``batch`` (one per qrels counts,
    or one in all, when the metric allows: :mod:`meta_eval.statistics.maxent.groups`) by probing, and verify it; None if the
    metric is not such a polynomial (module docstring)."""
    from meta_eval.statistics.maxent.groups import groups_for

    if measure is None:
        return None
    table = groups_for(measure, batch, rel_level, tol, seed)
    const, first, inter = [], [], []
    for n, counts in zip(table.lengths, table.counts):
        c0, a, B = _probe(measure, int(n), counts, rel_level)
        const.append(c0)
        first.append(a)
        scale = max(1.0, abs(c0), float(np.abs(a).max(initial=0.0)))
        inter.append(None if np.abs(B).max(initial=0.0) <= tol * scale else B)
    derived = _Derived(table, const, first, inter)
    probe = verification_batch(batch, seed, max_groups=None)
    residual = form_residual(derived.build(np.arange(probe.n_lists), probe), measure, probe, rel_level)
    if not residual <= tol:
        return None
    return MetricForm(getattr(measure, "output_name", str(measure)), "derived", measure, rel_level, residual,
                      _build=derived.build, detail=f"degree-2 polynomial, {groups_in_words(table)}")


def _probe(measure, n: int, counts: np.ndarray, rel_level: int):
    """c = M(empty), a[i, j] = M(j at i) - c, B[i, j, k] = M(j at 0, k at i) - c - a[0, j] - a[i, k]."""
    K = len(counts)
    c = K - 1
    if n == 0:
        return 0.0, np.zeros((0, K)), np.zeros((0, c, c))
    grades = [np.zeros((1, n), dtype=np.int8)]
    singles = np.zeros((n * c, n), dtype=np.int8)
    singles[np.arange(n * c), np.repeat(np.arange(n), c)] = np.tile(np.arange(1, K), n)
    grades.append(singles)
    if n > 1:
        pairs = np.zeros(((n - 1) * c * c, n), dtype=np.int8)
        i = np.repeat(np.arange(1, n), c * c)
        jk = np.tile(np.arange(c * c), n - 1)
        pairs[np.arange(len(i)), 0] = 1 + jk // c
        pairs[np.arange(len(i)), i] = 1 + jk % c
        grades.append(pairs)
    values = _score_probes(measure, np.concatenate(grades), counts, rel_level)
    c0 = values[0]
    a = np.zeros((n, K))
    a[:, 1:] = (values[1 : 1 + n * c] - c0).reshape(n, c)
    B = np.zeros((n, c, c))
    if n > 1:
        v = values[1 + n * c :].reshape(n - 1, c, c)
        B[1:] = v - c0 - a[0, 1:][None, :, None] - a[1:, 1:][:, None, :]
    return float(c0), a, B


def _score_probes(measure, grades: np.ndarray, counts: np.ndarray, rel_level: int) -> np.ndarray:
    from meta_eval.model.rankings import Rankings

    P, n = grades.shape
    step = max(1, _PROBE_CELLS // max(n, 1))
    out = np.empty(P)
    for lo in range(0, P, step):
        g = grades[lo : lo + step]
        r = Rankings(g, np.full(len(g), n), np.broadcast_to(counts, (len(g), len(counts))), rel_level=rel_level)
        out[lo : lo + step] = np.broadcast_to(np.asarray(measure(r), dtype=np.float64), (len(g),))
    return out
