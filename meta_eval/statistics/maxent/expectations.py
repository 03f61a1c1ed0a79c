"""Exact expected values of IR metrics under a product (probability-at-rank) distribution, with gradients.

A distribution over lists of length N with grades 0..c is an array ``P`` of shape (L, N, K), K = c + 1, where
``P[l, n, j]`` is the probability that the document at rank n+1 of list l has grade j (rows sum to 1 inside a list
and are 0 past its end). Ranks are independent (Aslam, Yilmaz & Pavlu, SIGIR 2005). Every metric used by MEM
declares its expectation once, as one of three forms:

``LinearForm``      E[M] = sum_{n,j} A[n,j] p_n(j)                       (P@k, R-prec, DCG/nDCG, RBP)
``PairwiseForm``    E[M] = sum_{n,j} A[n,j] p_n(j)
                          + sum_q sum_n W[q,n] (U_q . p_n) sum_{m<n} (V_q . p_m)   (AP, GAP, Q-measure, Kishida v_G)
``CascadeForm``     E[M] = sum_n w_n (a . p_n) prod_{m<n} (1 - b . p_m)     (RR, ERR, nERR; a general smooth form)

The pairwise form is the first-order-plus-pairwise form of methods.md Sec. 1.2/2.3 with b_mn(j, k) =
sum_q W[q, n] V_q(j) U_q(k) for m < n: it holds because E[x_m x_n] = E[x_m] E[x_n] for m != n under
independence, while the m = n terms (x^2 = x for indicators) go into A. A user metric gets MEM by returning one
of these forms (or any object with ``value(P)``, ``grad(P)`` and ``linear``) from a builder registered with
:func:`register_expectation`.

The forms are declared by measure family, in the measures' own vocabulary: :func:`declared_form` looks a
:class:`~meta_eval.measures.registry.Measure` (from the one resolver, :mod:`meta_eval.measures.resolver`) up by its
family's name and builds the form from the measure's own parameter values (``k`` for the cutoff, ``gain``,
``discount`` ... as the family declares them), with the relevance threshold ``rel_level``.
"""

from __future__ import annotations

import inspect
import dataclasses
from dataclasses import dataclass, replace
from functools import partial
from typing import Callable, Protocol

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.measures.graded import _err_stop_probability, discounts, err, ideal_dcg, threshold_probabilities
from meta_eval.measures.registry import FamilyBuilders, Measure, gain_table
from meta_eval.measures.resolver import resolve_one
from meta_eval.model.rankings import Rankings
from meta_eval.statistics.maxent.batch import ListBatch


class ExpectationForm(Protocol):
    """What MEM needs from a metric: its exact expectation and gradient over (L, N, K) distributions."""

    linear: bool

    def value(self, P: np.ndarray) -> np.ndarray:  # (L,)
        ...

    def grad(self, P: np.ndarray) -> np.ndarray:  # (L, N, K)
        ...


@dataclass(frozen=True)
class LinearForm:
    """E[M] = sum_{n,j} coef[l, n, j] P[l, n, j]."""

    coef: np.ndarray
    linear: bool = True

    def value(self, P: np.ndarray) -> np.ndarray:
        return np.einsum("lnk,lnk->l", self.coef[:, : P.shape[1]], P)

    def grad(self, P: np.ndarray) -> np.ndarray:
        return np.broadcast_to(self.coef[:, : P.shape[1]], P.shape)


def _contiguous(form, names) -> None:
    """Give a frozen form C-contiguous float64 copies of its arrays (the compiled kernels take one layout)."""
    for name in names:
        object.__setattr__(form, name, np.ascontiguousarray(getattr(form, name), dtype=np.float64))


def _rows(form, L: int) -> np.ndarray:
    return np.arange(L, dtype=np.int64) if form.rows is None else form.rows


def _compiled(kernel, arrays: tuple, rows: np.ndarray, P: np.ndarray, want_grad: bool):
    """(value (L,), gradient (L, N, K) or an empty array) of a form by its compiled kernel."""
    P = np.ascontiguousarray(P, dtype=np.float64)
    value = np.empty(P.shape[0])
    grad = np.empty(P.shape if want_grad else (0, 0, 0))
    kernel(*arrays, rows, P, want_grad, value, grad)
    return value, grad


@dataclass(frozen=True)
class PairwiseForm:
    """E[M] = sum A.p + sum_q sum_n W[q,n] (U_q . p_n) sum_{m<n} (V_q . p_m).

    Shapes: A (L, N, K); W (L, Q, N); U, V (L, Q, K). Value and gradient cost O(L N K Q) by prefix sums
    (:func:`meta_eval.statistics.maxent._form_kernels.pairwise`):

        dE/dp_n(j) = A[n,j] + sum_q [ W[q,n] U_q(j) sum_{m<n} V_q.p_m + V_q(j) sum_{k>n} W[q,k] U_q.p_k ].

    ``rows`` (set by :meth:`take`) says which lists of the arrays the form stands for (None: all of them).
    """

    A: np.ndarray
    W: np.ndarray
    U: np.ndarray
    V: np.ndarray
    linear: bool = False
    rows: np.ndarray | None = None

    def __post_init__(self):
        _contiguous(self, ("A", "W", "U", "V"))

    def take(self, index) -> "PairwiseForm":
        return replace(self, rows=_rows(self, self.A.shape[0])[index])

    def value_and_grad(self, P: np.ndarray, want_grad: bool = True):
        from meta_eval.statistics.maxent._form_kernels import pairwise

        return _compiled(pairwise, (self.A, self.W, self.U, self.V), _rows(self, self.A.shape[0]), P, want_grad)

    def value(self, P: np.ndarray) -> np.ndarray:
        return self.value_and_grad(P, False)[0]

    def grad(self, P: np.ndarray) -> np.ndarray:
        return self.value_and_grad(P)[1]


@dataclass(frozen=True)
class CascadeForm:
    """E[M] = sum_n w[l,n] (a_l . p_n) prod_{m<n} (1 - b_l . p_m)   (0 <= b . p <= 1).

    Under independence E[x_n prod_{m<n}(1 - y_m)] = E[x_n] prod E[1 - y_m]; RR (a = b = relevance indicator,
    w = 1/n) and ERR (a = b = (2^j - 1)/2^c, w = 1/n; Chapelle et al. 2009) have this form. The gradient uses the
    backward recursion F_n = w_{n+1} a.p_{n+1} + (1 - b.p_{n+1}) F_{n+1} (:func:`meta_eval.statistics.maxent._form_kernels.cascade`).
    """

    w: np.ndarray  # (L, N)
    a: np.ndarray  # (L, K)
    b: np.ndarray  # (L, K)
    linear: bool = False
    rows: np.ndarray | None = None

    def __post_init__(self):
        _contiguous(self, ("w", "a", "b"))

    def take(self, index) -> "CascadeForm":
        return replace(self, rows=_rows(self, self.w.shape[0])[index])

    def value_and_grad(self, P: np.ndarray, want_grad: bool = True):
        from meta_eval.statistics.maxent._form_kernels import cascade

        return _compiled(cascade, (self.w, self.a, self.b), _rows(self, self.w.shape[0]), P, want_grad)

    def value(self, P: np.ndarray) -> np.ndarray:
        return self.value_and_grad(P, False)[0]

    def grad(self, P: np.ndarray) -> np.ndarray:
        return self.value_and_grad(P)[1]


def restrict(form, index):
    """The form for some of its lists (forms hold per-list arrays on their leading axis): its own ``take`` (a view for
    the built-in forms), else a dataclass form with every per-list array indexed."""
    if hasattr(form, "take"):
        return form.take(index)
    if dataclasses.is_dataclass(form):
        kw = {}
        for fld in dataclasses.fields(form):
            val = getattr(form, fld.name)
            kw[fld.name] = val[index] if isinstance(val, np.ndarray) and val.ndim >= 1 else val
        return type(form)(**kw)
    raise InputError("a user expectation form must be a dataclass of per-list arrays or define take(index)")


# ----------------------------------------------------------------------------------------------------------
# The declared forms, by measure family
# ----------------------------------------------------------------------------------------------------------

Builder = Callable[..., ExpectationForm]
#: the declared expected-value forms by measure family
_FORMS = FamilyBuilders()


def register_expectation(family: str) -> Callable[[Builder], Builder]:
    """Declare the expected-value form of a measure family, so that MEM (and prediction) use it.

    ``family`` is the family's name (case-insensitive): a built-in's, one registered with ``meta_eval.register``,
    or a plug-in's (``grbp`` for ``my_metric.py:grbp``). The builder is called as ``builder(batch, **params)``
    with a :class:`ListBatch` and the measure's parameters that it takes, by their declared names (``k`` for a
    cutoff), plus ``rel_level`` (the relevance threshold) if it takes one; a measure with any other parameter away
    from its default has no declared form (:meth:`~meta_eval.measures.registry.Measure.arguments_for`: MEM then
    derives or samples one). It returns an :class:`ExpectationForm` (usually a :class:`LinearForm`,
    :class:`PairwiseForm` or :class:`CascadeForm`). A form of one's own must be a dataclass whose array fields
    have the lists on their first axis (or define ``take(index)`` returning the form for some lists), with
    ``value``, ``grad`` and ``linear`` as in the protocol; a linear form is solved exactly by the dual Newton
    method, any other by sequential linearisation. MEM verifies a declared form against the measure before it
    uses it (:func:`meta_eval.statistics.maxent.forms.metric_form`).

    Examples
    --------
    >>> import meta_eval as me
    >>> @me.register("HitsForm", cutoff=me.Param("k", 10, int, "rank cutoff", within="[1, inf)"))
    ... def hits(r, k):
    ...     return r.count_at(r.cum_relevant(), k).astype(float)
    >>> @register_expectation("HitsForm")
    ... def _hits(batch, k=10, rel_level=1):
    ...     coef = (np.arange(batch.depth) < k)[None, :, None] * (np.arange(batch.n_grades) >= rel_level)[None, None]
    ...     return LinearForm(np.broadcast_to(coef, (batch.n_lists, batch.depth, batch.n_grades)).astype(float))
    >>> observed("HitsForm@2", ListBatch.from_lists([[1, 0, 1]])).tolist()
    [1.0]
    """

    return _FORMS.register(family)


def registered_measures() -> list[str]:
    """The families with a declared expected-value form."""
    return _FORMS.names()


def declared_form(measure: Measure, rel_level: int = 1) -> Callable[[ListBatch], ExpectationForm] | None:
    """``build(batch) -> form``: the declared expected-value form of ``measure`` at relevance threshold
    ``rel_level``, bound to the measure's parameters; None when its family declares none or the form does not
    cover these parameters (:func:`register_expectation`). Cheap: nothing is built until it is called."""
    found = _FORMS.bound(measure)
    if found is None:
        return None
    builder, arguments = found
    if "rel_level" in inspect.signature(builder).parameters:
        arguments["rel_level"] = rel_level
    return partial(_build, builder, arguments, measure.output_name)


def _build(builder: Builder, arguments: dict, name: str, batch: ListBatch) -> ExpectationForm:
    try:
        return builder(batch, **arguments)
    except TypeError as exc:  # a user's builder that does not take what it declares
        raise InputError(f"measure {name!r}: bad parameters for its expected-value form ({exc})") from None


def expectation(measure: "str | Measure", batch: ListBatch, rel_level: int = 1) -> ExpectationForm:
    """The declared expected-value form of ``measure`` (a measure or its specification, as :func:`resolve_one`
    reads it) for every list of ``batch``.

    Only measures with a declared form (:func:`register_expectation`);
    :func:`meta_eval.statistics.maxent.forms.metric_form` gives a form for any metric (declared, derived by probing,
    or sampled).

    Raises
    ------
    InputError
        An unknown measure, or one without a declared form.
    """
    measure = resolve_one(measure)
    build = declared_form(measure, rel_level)
    if build is None:
        raise InputError(f"no expected-value form is declared for measure {measure.output_name!r}; declared for: "
                         f"{', '.join(registered_measures())} (at their parameters the forms cover)")
    return build(batch)


def observed(measure: "str | Measure | ExpectationForm", batch: ListBatch, rel_level: int = 1) -> np.ndarray:
    """The metric's value on the actual lists: its expectation under the point mass on each list."""
    form = measure if hasattr(measure, "value") else expectation(measure, batch, rel_level)
    return form.value(batch.onehot())


# ----------------------------------------------------------------------------------------------------------
# Built-in families (conventions as in methods.md Sec. 5; parameters as the measures declare them)
# ----------------------------------------------------------------------------------------------------------

def _rel(batch: ListBatch, rel_level: int) -> np.ndarray:
    if not 1 <= rel_level < batch.n_grades:
        raise InputError(f"rel_level must lie in 1..{batch.n_grades - 1}; got {rel_level}")
    return (np.arange(batch.n_grades) >= rel_level).astype(float)


def _R(batch: ListBatch, rel_level: int) -> np.ndarray:
    """Number of judged relevant documents (grade >= rel_level), as float with 0 -> nan (metric undefined)."""
    R = batch.counts[:, rel_level:].sum(1).astype(float)
    return np.where(R > 0, R, np.nan)


def _ranks(batch: ListBatch) -> np.ndarray:
    return np.arange(1, batch.depth + 1, dtype=float)


def _upto(batch: ListBatch, k) -> np.ndarray:
    """1 at the ranks <= k (every rank when k is None), 0 below."""
    return np.ones(batch.depth) if k is None else (_ranks(batch) <= k).astype(float)


def _per_list(batch: ListBatch, coef: np.ndarray) -> np.ndarray:
    """A coefficient array shared by every list, as one (L, N, K) array."""
    return np.broadcast_to(coef, (batch.n_lists, batch.depth, batch.n_grades)).copy()


def _qrels_only(batch: ListBatch) -> Rankings:
    """One empty list per list of the batch, with its qrels counts: what a measure of the ideal list reads."""
    return Rankings(np.zeros((batch.n_lists, 1), dtype=np.int8), np.zeros(batch.n_lists, dtype=np.int64),
                    batch.counts)


def _ideal_gains(batch: ListBatch, gain: np.ndarray, depth: int) -> np.ndarray:
    """(L, depth) gains of the ideal list (all judged relevant documents, highest grade first), 0-padded."""
    K = batch.n_grades
    pos = np.arange(depth)[None, :]
    out = np.zeros((batch.n_lists, depth))
    # the ideal list holds R_c docs of grade c, then R_{c-1} of grade c-1, ...
    start = np.zeros(batch.n_lists, dtype=np.int64)
    for j in range(K - 1, 0, -1):
        end = start + batch.counts[:, j]
        out += gain[j] * ((pos >= start[:, None]) & (pos < end[:, None]))
        start = end
    return out


@register_expectation("P")
def _precision(batch, k=10, rel_level=1):
    """P@k = (1/k) sum_{n<=k} I_n."""
    return LinearForm(_per_list(batch, _upto(batch, k)[None, :, None] * _rel(batch, rel_level)[None, None, :] / k))


@register_expectation("Recall")
def _recall(batch, k=1000, rel_level=1):
    """Recall@k = (1/R) sum_{n<=k} I_n."""
    coef = _upto(batch, k)[None, :, None] * _rel(batch, rel_level)[None, None, :]
    return LinearForm(_per_list(batch, coef) / _R(batch, rel_level)[:, None, None])


@register_expectation("Rprec")
def _rprec(batch, rel_level=1):
    """R-prec = (1/R) sum_{n<=R} I_n (R from the qrels)."""
    R = _R(batch, rel_level)
    coef = (_ranks(batch)[None, :] <= R[:, None])[..., None] * _rel(batch, rel_level)[None, None, :]
    return LinearForm(coef / R[:, None, None])


@register_expectation("RBP")
def _rbp(batch, p=0.8, k=None, rel_level=1):
    """RBP = (1 - p) sum_{n<=k} I_n p^(n-1) (binary, Moffat & Zobel 2008)."""
    w = (1 - p) * p ** (_ranks(batch) - 1) * _upto(batch, k)
    return LinearForm(_per_list(batch, w[None, :, None] * _rel(batch, rel_level)[None, None, :]))


def _dcg_coef(batch: ListBatch, gain, discount: str, base: float, k) -> np.ndarray:
    """(1, N, K): gain(j) / d(n) at the ranks n <= k, with the core's gain table and discount."""
    gains = gain_table(gain, batch.n_grades - 1)[: batch.n_grades]
    return (discounts(_ranks(batch), discount, base) * _upto(batch, k))[None, :, None] * gains[None, None, :]


@register_expectation("DCG")
def _dcg(batch, gain="linear", discount="log2", base=2.0, k=None):
    """DCG@k = sum_{n<=k} gain(G_n) / d(n), gains and discounts as the core measure (:func:`dcg`)."""
    return LinearForm(_per_list(batch, _dcg_coef(batch, gain, discount, base, k)))


@register_expectation("nDCG")
def _ndcg(batch, gain="linear", discount="log2", base=2.0, k=None):
    """nDCG@k = DCG@k / IDCG@k, the ideal list holding all judged documents of positive gain (trec_eval ``ndcg``),
    its DCG computed by the core measure (:func:`ideal_dcg`): undefined (NaN) when it is 0."""
    idcg = np.asarray(ideal_dcg(_qrels_only(batch), gain=gain, discount=discount, base=base, k=k), dtype=float)
    idcg = np.where(idcg > 0, idcg, np.nan)
    return LinearForm(_dcg_coef(batch, gain, discount, base, k) / idcg[:, None, None])


def _gap_form(batch: ListBatch, g: np.ndarray) -> PairwiseForm:
    K = batch.n_grades
    gamma = np.concatenate([[0.0], np.cumsum(g)])  # gamma_j = sum_{l<=j} g_l
    Z = batch.counts.astype(float) @ gamma
    Z = np.where(Z > 0, Z, np.nan)
    inv_n = 1.0 / _ranks(batch)
    # channels l = 1..c with g_l != 0 (AP has one): W = g_l / (Z n), U = V = [j >= l]
    levels = np.flatnonzero(g != 0) + 1
    ind = (np.arange(K)[None, :] >= levels[:, None]).astype(float)  # (channels, K)
    W = g[None, levels - 1, None] * inv_n[None, None, :] / Z[:, None, None]
    A = (inv_n[None, :, None] * gamma[None, None, :]) / Z[:, None, None]
    U = np.broadcast_to(ind, (batch.n_lists, levels.size, K))
    A = np.broadcast_to(A, (batch.n_lists, batch.depth, K))
    return PairwiseForm(A, W, U, U)


@register_expectation("GAP")
def _gap(batch, g=None):
    """GAP (Robertson, Kanoulas & Yilmaz, SIGIR 2010, Sec. 2.2): sum_n (1/n) sum_{m<=n} gamma_min(G_m,G_n) / Z.

    gamma_j = sum_{l<=j} g_l, Z = sum_i R_i gamma_i. E[GAP] = (1/Z) sum_n (1/n) sum_l g_l S_n(l) (1 + sum_{m<n}
    S_m(l)) with S_n(l) = P(G_n >= l) (methods.md Sec. 2.3). Default g uniform over grades 1..c, read by the core
    measure (:func:`threshold_probabilities`). No cutoff: GAP@k has no declared form.
    """
    return _gap_form(batch, threshold_probabilities(g, batch.n_grades - 1))


@register_expectation("AP")
def _ap(batch, rel_level=1):
    """AP = (1/R) sum_n I_n C_n / n; E[AP] = (1/R) sum_n (p_n/n)(1 + sum_{m<n} p_m) (methods.md Sec. 1.2): GAP
    with g on grade ``rel_level``. No cutoff: AP@k has no declared form."""
    _rel(batch, rel_level)
    g = np.zeros(batch.n_grades - 1)
    g[rel_level - 1] = 1.0
    return _gap_form(batch, g)


@register_expectation("Q")
def _q(batch, beta=1.0, rel_level=1):
    """Q-measure (Sakai): Q = (1/R) sum_n I_n (C(n) + beta cg(n)) / (n + beta cg*(n)), linear gains (grade).

    cg* is the ideal cumulative gain (held at cg*(R) beyond R). Pairwise with W(n) = 1/(R (n + beta cg*(n))),
    U = I, V = I + beta gain; the diagonal A = W(n) I (1 + beta gain).
    """
    K = batch.n_grades
    gain = gain_table("linear", K - 1)
    ideal = _ideal_gains(batch, gain, batch.depth)
    cgstar = np.cumsum(ideal, axis=1)
    R = _R(batch, rel_level)
    I = _rel(batch, rel_level)
    Wn = 1.0 / (R[:, None] * (_ranks(batch)[None, :] + beta * cgstar))
    V = I + beta * gain
    A = Wn[:, :, None] * (I * (1.0 + beta * gain))[None, None, :]
    L = batch.n_lists
    return PairwiseForm(A, Wn[:, None, :], np.broadcast_to(I, (L, 1, K)), np.broadcast_to(V, (L, 1, K)))


@register_expectation("GenAP")
def _vg(batch, rel_level=1):
    """Kishida's generalised AP v_G = (1/Z) sum_n (I(x_n)/n) sum_{k<=n} x_k (Kishida 2005, Eq. 42), x = grade.

    Z = sum_i I(y_i) (1/i) sum_{k<=i} y_k over the ideal list y (every judged document of grade >= 1), I at the
    relevance threshold as in the numerator. Pairwise with W = 1/(Z n), U = I, V = gain.
    """
    K = batch.n_grades
    gain = gain_table("linear", K - 1)
    R = int(batch.counts[:, 1:].sum(1).max(initial=0))
    ideal = _ideal_gains(batch, gain, max(R, 1))
    i = np.arange(1, ideal.shape[1] + 1)
    Z = np.sum((ideal >= rel_level) * np.cumsum(ideal, axis=1) / i, axis=1)
    Z = np.where(Z > 0, Z, np.nan)
    I = _rel(batch, rel_level)
    Wn = 1.0 / (Z[:, None] * _ranks(batch)[None, :])
    A = Wn[:, :, None] * (I * gain)[None, None, :]
    L = batch.n_lists
    return PairwiseForm(A, Wn[:, None, :], np.broadcast_to(I, (L, 1, K)), np.broadcast_to(gain, (L, 1, K)))


@register_expectation("RR")
def _rr(batch, k=None, rel_level=1):
    """RR = 1/(rank of the first relevant); E[RR] = sum_{n<=k} (1/n) p_n prod_{m<n} (1 - p_m)."""
    w = np.broadcast_to(_upto(batch, k) / _ranks(batch), (batch.n_lists, batch.depth))
    I = np.broadcast_to(_rel(batch, rel_level), (batch.n_lists, batch.n_grades))
    return CascadeForm(np.ascontiguousarray(w), I, I)


@register_expectation("ERR")
def _err(batch, stop="exp", max_grade=None, gain="linear", k=None):
    """ERR (Chapelle et al. 2009): E[ERR] = sum_{n<=k} (1/n) R(p_n) prod_{m<n} (1 - R(p_m)) with the stop probability
    per grade R_j of the core measure (``stop=exp``: (2^j - 1) / 2^gmax, gmax the top grade; ``stop=linear``:
    gain / (gmax + 1)), computed by the core's own function so the two cannot drift apart."""
    K = batch.n_grades
    one = Rankings(np.arange(K, dtype=np.int8)[None, :], np.array([K]), np.ones((1, K), dtype=np.int64))
    Rj = np.asarray(_err_stop_probability(one, gain, stop, max_grade), dtype=float)[0]
    if np.any(Rj < 0) or np.any(Rj > 1):
        raise InputError(f"ERR stop probabilities must lie in [0, 1]; got {Rj.tolist()}")
    w = np.broadcast_to(_upto(batch, k) / _ranks(batch), (batch.n_lists, batch.depth))
    Rj = np.broadcast_to(Rj, (batch.n_lists, K))
    return CascadeForm(np.ascontiguousarray(w), Rj, Rj)


@register_expectation("nERR")
def _nerr(batch, stop="exp", max_grade=None, gain="linear", k=None):
    """nERR = ERR / ERR of the ideal list (NTCIREVAL nERR@l): ERR's cascade with every weight divided by the ideal
    list's ERR, a constant per topic computed by the core measure (undefined, NaN, when the topic has no relevant
    document: the core scores 0)."""
    form = _err(batch, stop=stop, max_grade=max_grade, gain=gain, k=k)
    ideal_grades = _qrels_only(batch).ideal_grades()
    ideal = Rankings(ideal_grades, (ideal_grades > 0).sum(-1), batch.counts)
    best = np.asarray(err(ideal, stop=stop, max_grade=max_grade, gain=gain, k=k), dtype=float)
    best = np.where(best > 0, best, np.nan)
    return CascadeForm(form.w / best[:, None], form.a, form.b)
