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
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Protocol

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.core.params import format_value
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


# ----------------------------------------------------------------------------------------------------------
# Measure names and the registry
# ----------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class MeasureSpec:
    """A parsed measure name: ``base(key=value,...)@cutoff``."""

    base: str
    params: dict
    cutoff: int | None

    @property
    def name(self) -> str:
        inner = ",".join(f"{k}={_fmt(v)}" for k, v in self.params.items())
        return self.base + (f"({inner})" if inner else "") + (f"@{self.cutoff}" if self.cutoff else "")


def _fmt(v) -> str:
    return format_value(v)  # exact: a name never rounds a parameter


# Core families whose expected-value form is registered under another base name.
_CORE_BASE = {"Recall": "recall", "GenAP": "vG"}


def _value(text: str):
    """A parameter value: int, float, text, or a tuple for comma-separated values (``g=0.5,0.5``)."""
    if "," in text:
        return tuple(_value(part) for part in text.split(","))
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def parse_measure(name: str) -> MeasureSpec:
    """Parse ``"GAP(g=0.5,0.5)"``, ``"nDCG(gain=exp)@10"``, ``"P@10"``, ``"AP(rel=2)"``, ``"P_10"`` ... .

    The grammar and the trec_eval spellings are the core registry's (:func:`meta_eval.measures.registry.split_name`,
    :func:`meta_eval.measures.trec_names.from_trec_name`), and a name the core knows is canonicalised through it
    (``map`` -> ``AP``, ``vG`` -> ``GenAP``); parameter values stay MEM-level (``rel`` selects the threshold).
    """
    from meta_eval.measures.registry import family, split_name
    from meta_eval.measures.trec_names import from_trec_name

    trec = from_trec_name(name.strip())
    if trec is not None:
        fam, values = trec.family, dict(trec.params)
        params = {p.name: values[p.name] for p in fam.params if values[p.name] != p.default}
        cutoff = values.get(fam.cutoff.name) if fam.cutoff else None
        return MeasureSpec(_CORE_BASE.get(fam.name, fam.name), params, cutoff)
    base, pairs, cut_text = split_name(name)
    try:
        base = family(base).name
    except InputError:
        pass  # a metric only MEM knows (declared with register_expectation)
    cutoff = _value(cut_text) if cut_text is not None else None
    if cutoff is not None and not isinstance(cutoff, int):
        raise InputError(f"measure {name!r}: the cutoff must be an integer rank, got {cut_text!r}")
    return MeasureSpec(_CORE_BASE.get(base, base), {k: _value(v) for k, v in pairs}, cutoff)


Builder = Callable[..., ExpectationForm]
_REGISTRY: dict[str, Builder] = {}


def register_expectation(base: str) -> Callable[[Builder], Builder]:
    """Register the expected-value form of a metric, so that MEM (and prediction) work for it.

    The builder is called as ``builder(batch, cutoff=None, **params)`` with a :class:`ListBatch` and returns an
    :class:`ExpectationForm` (usually a :class:`LinearForm`, :class:`PairwiseForm` or :class:`CascadeForm`). A
    form of one's own must be a dataclass whose array fields have the lists on their first axis (or define
    ``take(index)`` returning the form for some lists), with ``value``, ``grad`` and ``linear`` as in the protocol;
    a linear form is solved exactly by the dual Newton method, any other by sequential linearisation.

    Examples
    --------
    >>> @register_expectation("Hits")
    ... def _hits(batch, cutoff=None, rel=1):
    ...     k = cutoff or batch.depth
    ...     ranks = np.arange(batch.depth) < k
    ...     coef = ranks[None, :, None] * (np.arange(batch.n_grades) >= rel)[None, None, :]
    ...     return LinearForm(np.broadcast_to(coef, (batch.n_lists, batch.depth, batch.n_grades)).astype(float))
    """

    def deco(builder: Builder) -> Builder:
        _REGISTRY[base] = builder
        _fill_slot(base, builder)
        return builder

    return deco


#: Core parameter values MEM's builders spell otherwise (the core's vocabulary is the one users write).
_MEM_SPELLING = {("discount", "log2"): "log"}


def _fill_slot(base: str, builder: Builder) -> None:
    """Attach the builder to the core family of ``base`` as its ``expectation`` slot
    (:mod:`meta_eval.measures.registry`), so that a core measure reaches its form with the core's parameter names
    and values; a base only MEM knows (or a plug-in's) keeps its entry here alone."""
    from meta_eval.measures.registry import family, register_slot

    core = {v: k for k, v in _CORE_BASE.items()}.get(base, base)
    try:
        fam = family(core)
    except InputError:
        return
    if fam.source or fam.name.lower() != core.lower():
        return
    register_slot(fam.name, "expectation", _slot(fam, builder))


def _slot(fam, builder: Builder):
    """``slot(rel_level=1, **core parameters) -> (index, batch) -> form``, or None for parameters the builder does
    not take (MEM then derives or samples a form)."""
    import inspect

    from meta_eval.measures.registry import _same

    accepted = inspect.signature(builder).parameters
    cut = fam.cutoff.name if fam.cutoff is not None else None

    def slot(rel_level: int = 1, **params):
        kwargs = {}
        for p in fam.params:
            value = params.get(p.name, p.default)
            if _same(value, p.default):
                continue
            if p.name not in accepted:
                return None
            kwargs[p.name] = _MEM_SPELLING.get((p.name, value), value) if isinstance(value, str) else value
        if "rel" in accepted and rel_level != 1:
            kwargs["rel"] = rel_level
        spec = MeasureSpec(_CORE_BASE.get(fam.name, fam.name), kwargs, params.get(cut) if cut else None)
        return lambda index, batch: _build(spec, batch, spec.name)

    return slot


def registered_measures() -> list[str]:
    """Base names with a declared expected-value form."""
    return sorted(_REGISTRY)


def expectation(measure: str, batch: ListBatch) -> ExpectationForm:
    """The declared expected-value form of ``measure`` for every list of ``batch``.

    Only metrics with a declared form (:func:`register_expectation`); :func:`meta_eval.statistics.maxent.forms.metric_form`
    gives a form for any metric (declared, derived by probing, or sampled).
    """
    spec = parse_measure(measure)
    if spec.base not in _REGISTRY:
        raise InputError(f"no expected-value form for measure {measure!r}; known: {', '.join(registered_measures())}")
    return _build(spec, batch, measure)


def _build(spec: "MeasureSpec", batch: ListBatch, text: str) -> ExpectationForm:
    try:
        return _REGISTRY[spec.base](batch, cutoff=spec.cutoff, **spec.params)
    except TypeError as exc:
        raise InputError(f"measure {text!r}: bad parameters ({exc})") from None


def declared_builder(measure: str, rel_level: int = 1):
    """A function ``(index, batch) -> form`` building the declared form of ``measure`` for a batch, or None when
    no form is declared under its name. ``rel_level`` is passed as ``rel`` to builders that take one (unless the
    name sets it)."""
    import inspect

    spec = parse_measure(measure)
    if spec.base not in _REGISTRY:
        return None
    takes_rel = "rel" in inspect.signature(_REGISTRY[spec.base]).parameters
    if takes_rel and "rel" not in spec.params and rel_level != 1:
        spec = MeasureSpec(spec.base, {**spec.params, "rel": rel_level}, spec.cutoff)
    return lambda index, batch: _build(spec, batch, measure)


def observed(measure: str | ExpectationForm, batch: ListBatch) -> np.ndarray:
    """The metric's value on the actual lists: its expectation under the point mass on each list."""
    form = expectation(measure, batch) if isinstance(measure, str) else measure
    return form.value(batch.onehot())


# ----------------------------------------------------------------------------------------------------------
# Built-in metrics (conventions as in methods.md Sec. 5 and the core metric library)
# ----------------------------------------------------------------------------------------------------------

def _rel(batch: ListBatch, rel: int) -> np.ndarray:
    if not 1 <= rel < batch.n_grades:
        raise InputError(f"rel must lie in 1..{batch.n_grades - 1}; got {rel}")
    return (np.arange(batch.n_grades) >= rel).astype(float)


def _R(batch: ListBatch, rel: int) -> np.ndarray:
    """Number of judged relevant documents (grade >= rel), as float with 0 -> nan (metric undefined)."""
    R = batch.counts[:, rel:].sum(1).astype(float)
    return np.where(R > 0, R, np.nan)


def _ranks(batch: ListBatch) -> np.ndarray:
    return np.arange(1, batch.depth + 1, dtype=float)


def _gain(kind: str, K: int) -> np.ndarray:
    j = np.arange(K, dtype=float)
    if kind in ("exp", "exponential"):
        return 2.0**j - 1.0
    if kind in ("lin", "linear"):
        return j
    raise InputError(f"gain must be 'exp' or 'lin'; got {kind!r}")


def _discount(kind: str, N: int) -> np.ndarray:
    n = np.arange(1, N + 1, dtype=float)
    if kind == "log":
        return 1.0 / np.log2(n + 1.0)
    if kind in ("lin", "linear"):
        return 1.0 / n
    raise InputError(f"discount must be 'log' or 'lin'; got {kind!r}")


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
def _precision(batch, cutoff=None, rel=1):
    """P@k = (1/k) sum_{n<=k} I_n."""
    if cutoff is None:
        raise InputError("P needs a cutoff, e.g. P@10")
    coef = (_ranks(batch) <= cutoff)[None, :, None] * _rel(batch, rel)[None, None, :] / cutoff
    return LinearForm(np.broadcast_to(coef, (batch.n_lists, batch.depth, batch.n_grades)).copy())


@register_expectation("recall")
def _recall(batch, cutoff=None, rel=1):
    """recall@k = (1/R) sum_{n<=k} I_n."""
    k = cutoff or batch.depth
    coef = (_ranks(batch) <= k)[None, :, None] * _rel(batch, rel)[None, None, :] / _R(batch, rel)[:, None, None]
    return LinearForm(np.broadcast_to(coef, (batch.n_lists, batch.depth, batch.n_grades)).copy())


@register_expectation("Rprec")
def _rprec(batch, cutoff=None, rel=1):
    """R-prec = (1/R) sum_{n<=R} I_n (R from the qrels)."""
    R = _R(batch, rel)
    coef = (_ranks(batch)[None, :] <= R[:, None])[..., None] * _rel(batch, rel)[None, None, :] / R[:, None, None]
    return LinearForm(coef)


@register_expectation("RBP")
def _rbp(batch, cutoff=None, p=0.8, rel=1):
    """RBP = (1 - p) sum_n I_n p^(n-1) (binary, Moffat & Zobel 2008)."""
    if not 0 < p < 1:
        raise InputError(f"RBP persistence p must lie in (0, 1); got {p}")
    w = (1 - p) * p ** (_ranks(batch) - 1)
    if cutoff:
        w = w * (_ranks(batch) <= cutoff)
    coef = w[None, :, None] * _rel(batch, rel)[None, None, :]
    return LinearForm(np.broadcast_to(coef, (batch.n_lists, batch.depth, batch.n_grades)).copy())


def _dcg_coef(batch, cutoff, gain, discount):
    g = _gain(gain, batch.n_grades)
    d = _discount(discount, batch.depth)
    if cutoff:
        d = d * (_ranks(batch) <= cutoff)
    return d[None, :, None] * g[None, None, :], g


@register_expectation("DCG")
def _dcg(batch, cutoff=None, gain="lin", discount="log"):
    """DCG@k = sum_{n<=k} gain(G_n) d(n); gain lin (grade, trec_eval) or exp (2^g - 1); d(n) = 1/log2(n+1)."""
    coef, _ = _dcg_coef(batch, cutoff, gain, discount)
    return LinearForm(np.broadcast_to(coef, (batch.n_lists, batch.depth, batch.n_grades)).copy())


@register_expectation("nDCG")
def _ndcg(batch, cutoff=None, gain="lin", discount="log"):
    """nDCG@k = DCG@k / IDCG@k, the ideal list holding all judged relevant documents (trec_eval ``ndcg``).

    Default gain is linear (the grade, as trec_eval); ``nDCG(gain=exp)`` is Burges et al.'s 2^g - 1.
    """
    coef, g = _dcg_coef(batch, cutoff, gain, discount)
    R = int(batch.counts[:, 1:].sum(1).max(initial=0))
    depth = max(R, 1)
    ideal = _ideal_gains(batch, g, depth)
    d = _discount(discount, depth)
    if cutoff:
        d = d * (np.arange(1, depth + 1) <= cutoff)
    idcg = ideal @ d
    idcg = np.where(idcg > 0, idcg, np.nan)
    return LinearForm(coef / idcg[:, None, None])


def _gap_form(batch: ListBatch, g: np.ndarray) -> PairwiseForm:
    K = batch.n_grades
    gamma = np.concatenate([[0.0], np.cumsum(g)])  # gamma_j = sum_{l<=j} g_l
    Z = batch.counts.astype(float) @ gamma
    Z = np.where(Z > 0, Z, np.nan)
    inv_n = 1.0 / _ranks(batch)
    # channels l = 1..c: W = g_l / (Z n), U = V = [j >= l]
    ind = (np.arange(K)[None, :] >= np.arange(1, K)[:, None]).astype(float)  # (c, K)
    W = g[None, :, None] * inv_n[None, None, :] / Z[:, None, None]
    A = (inv_n[None, :, None] * gamma[None, None, :]) / Z[:, None, None]
    U = np.broadcast_to(ind, (batch.n_lists, K - 1, K))
    A = np.broadcast_to(A, (batch.n_lists, batch.depth, K))
    return PairwiseForm(A, W, U, U)


@register_expectation("GAP")
def _gap(batch, cutoff=None, g=None):
    """GAP (Robertson, Kanoulas & Yilmaz, SIGIR 2010, Sec. 2.2): sum_n (1/n) sum_{m<=n} gamma_min(G_m,G_n) / Z.

    gamma_j = sum_{l<=j} g_l, Z = sum_i R_i gamma_i. E[GAP] = (1/Z) sum_n (1/n) sum_l g_l S_n(l) (1 + sum_{m<n}
    S_m(l)) with S_n(l) = P(G_n >= l) (methods.md Sec. 2.3). Default g uniform over grades 1..c.
    """
    c = batch.n_grades - 1
    g = np.full(c, 1.0 / c) if g is None else np.atleast_1d(np.asarray(g, dtype=float))
    if g.shape != (c,) or np.any(g < 0) or not np.isclose(g.sum(), 1.0):
        raise InputError(f"GAP needs g = (g_1..g_{c}) >= 0 summing to 1 for {c} positive grades; got {tuple(g)}")
    if cutoff:
        raise InputError("GAP@k is not supported by MEM")
    return _gap_form(batch, g)


@register_expectation("AP")
def _ap(batch, cutoff=None, rel=1):
    """AP = (1/R) sum_n I_n C_n / n; E[AP] = (1/R) sum_n (p_n/n)(1 + sum_{m<n} p_m) (methods.md Sec. 1.2)."""
    if cutoff:
        raise InputError("AP@k is not supported by MEM")
    _rel(batch, rel)
    g = np.zeros(batch.n_grades - 1)
    g[rel - 1] = 1.0
    return _gap_form(batch, g)


@register_expectation("Q")
def _q(batch, cutoff=None, beta=1.0, rel=1):
    """Q-measure (Sakai): Q = (1/R) sum_n I_n (C(n) + beta cg(n)) / (n + beta cg*(n)), linear gains (grade).

    cg* is the ideal cumulative gain (held at cg*(R) beyond R). Pairwise with W(n) = 1/(R (n + beta cg*(n))),
    U = I, V = I + beta gain; the diagonal A = W(n) I (1 + beta gain).
    """
    K = batch.n_grades
    gain = _gain("lin", K)
    ideal = _ideal_gains(batch, gain, batch.depth)
    cgstar = np.cumsum(ideal, axis=1)
    R = _R(batch, rel)
    I = _rel(batch, rel)
    Wn = 1.0 / (R[:, None] * (_ranks(batch)[None, :] + beta * cgstar))
    V = I + beta * gain
    A = Wn[:, :, None] * (I * (1.0 + beta * gain))[None, None, :]
    L = batch.n_lists
    return PairwiseForm(A, Wn[:, None, :], np.broadcast_to(I, (L, 1, K)), np.broadcast_to(V, (L, 1, K)))


@register_expectation("vG")
def _vg(batch, cutoff=None, rel=1):
    """Kishida's generalised AP v_G = (1/Z) sum_n (I(x_n)/n) sum_{k<=n} x_k (Kishida 2005, Eq. 42), x = grade.

    Z = sum_i I(y_i) (1/i) sum_{k<=i} y_k over the ideal list y. Pairwise with W = 1/(Z n), U = I, V = gain.
    """
    K = batch.n_grades
    gain = _gain("lin", K)
    R = int(batch.counts[:, 1:].sum(1).max(initial=0))
    ideal = _ideal_gains(batch, gain, max(R, 1))
    i = np.arange(1, ideal.shape[1] + 1)
    Z = np.sum((ideal > 0) * np.cumsum(ideal, axis=1) / i, axis=1)
    Z = np.where(Z > 0, Z, np.nan)
    I = _rel(batch, rel)
    Wn = 1.0 / (Z[:, None] * _ranks(batch)[None, :])
    A = Wn[:, :, None] * (I * gain)[None, None, :]
    L = batch.n_lists
    return PairwiseForm(A, Wn[:, None, :], np.broadcast_to(I, (L, 1, K)), np.broadcast_to(gain, (L, 1, K)))


@register_expectation("RR")
def _rr(batch, cutoff=None, rel=1):
    """RR = 1/(rank of the first relevant); E[RR] = sum_n (1/n) p_n prod_{m<n} (1 - p_m)."""
    w = np.broadcast_to(1.0 / _ranks(batch), (batch.n_lists, batch.depth))
    if cutoff:
        w = w * (_ranks(batch) <= cutoff)
    I = np.broadcast_to(_rel(batch, rel), (batch.n_lists, batch.n_grades))
    return CascadeForm(np.ascontiguousarray(w), I, I)


@register_expectation("ERR")
def _err(batch, cutoff=None, stop="exp", max_grade=None, gain="linear"):
    """ERR (Chapelle et al. 2009): E[ERR] = sum_n (1/n) R(p_n) prod_{m<n} (1 - R(p_m)) with the stop probability
    per grade R_j of the core measure (``stop=exp``: (2^j - 1) / 2^gmax, gmax the top grade; ``stop=linear``:
    gain / (gmax + 1)), computed by the core's own function so the two cannot drift apart."""
    from meta_eval.measures.graded import _err_stop_probability
    from meta_eval.model.rankings import Rankings

    K = batch.n_grades
    one = Rankings(np.arange(K, dtype=np.int8)[None, :], np.array([K]), np.ones((1, K), dtype=np.int64))
    Rj = np.asarray(_err_stop_probability(one, gain, stop, max_grade), dtype=float)[0]
    if np.any(Rj < 0) or np.any(Rj > 1):
        raise InputError(f"ERR stop probabilities must lie in [0, 1]; got {Rj.tolist()}")
    w = np.broadcast_to(1.0 / _ranks(batch), (batch.n_lists, batch.depth))
    if cutoff:
        w = w * (_ranks(batch) <= cutoff)
    Rj = np.broadcast_to(Rj, (batch.n_lists, K))
    return CascadeForm(np.ascontiguousarray(w), Rj, Rj)


@register_expectation("nERR")
def _nerr(batch, cutoff=None, stop="exp", max_grade=None, gain="linear"):
    """nERR = ERR / ERR of the ideal list (NTCIREVAL nERR@l): ERR's cascade with every weight divided by the ideal
    list's ERR, a constant per topic computed by the core measure (undefined, NaN, when the topic has no relevant
    document: the core scores 0)."""
    from meta_eval.measures.graded import err
    from meta_eval.model.rankings import Rankings

    form = _err(batch, cutoff=cutoff, stop=stop, max_grade=max_grade, gain=gain)
    r = Rankings(np.zeros((batch.n_lists, 1), dtype=np.int8), np.ones(batch.n_lists, dtype=np.int64), batch.counts)
    ideal_grades = r.ideal_grades()
    ideal = Rankings(ideal_grades, (ideal_grades > 0).sum(-1), batch.counts)
    best = np.asarray(err(ideal, stop=stop, max_grade=max_grade, gain=gain, k=cutoff), dtype=float)
    best = np.where(best > 0, best, np.nan)
    return CascadeForm(form.w / best[:, None], form.a, form.b)

