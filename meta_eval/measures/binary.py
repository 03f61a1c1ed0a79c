"""Binary measures: relevant means grade >= ``rel_level`` (trec_eval ``-l``).

Notation: r = 1..D ranks, I(r) relevance of the document at rank r, C(r) = Σ_{k<=r} I(k), R = number of judged
relevant documents of the topic (qrels), n = number retrieved. Every function is vectorised over all lists and
matches trec_eval (v10) where trec_eval has the measure; a topic with R = 0 scores 0 where R is a denominator.
"""

from __future__ import annotations

import math

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.measures.registry import Param, parse_floats, register
from meta_eval.model.rankings import Rankings

K = Param("k", None, int, "rank cutoff", within="[1, inf)")


def cutoff(default: int) -> Param:
    """A rank cutoff ``@k`` (an integer >= 1) with a default."""
    return Param("k", default, int, "rank cutoff", within="[1, inf)")


def _div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den == 0."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den != 0)


def _upto(r: Rankings, k: int | None) -> np.ndarray:
    """Boolean (..., D) mask of ranks <= k (all ranks when k is None)."""
    if k is None:
        return np.ones(r.depth, dtype=bool)
    return r.ranks <= k


def precision_at_relevant(r: Rankings) -> np.ndarray:
    """I(r) C(r) / r: the precision at each relevant rank, 0 elsewhere."""
    return r.cached("prec_at_rel", lambda: np.where(r.relevant(), r.cum_relevant() / r.ranks, 0.0))


def relevant_ranks(r: Rankings) -> tuple[np.ndarray, np.ndarray]:
    """Where the relevant documents are: (list index into the flattened leading shape, 0-based rank), in list then
    rank order (cached). Measures that add a term per relevant document evaluate it there only."""

    def build():
        flat = r.relevant().reshape(-1, r.depth)
        lists, ranks = np.nonzero(flat)
        return lists, ranks

    return r.cached("relevant_ranks", build)


def sum_at_relevant(r: Rankings, terms: np.ndarray) -> np.ndarray:
    """Σ per list of one term per relevant document (in :func:`relevant_ranks` order), added rank after rank as
    trec_eval adds them."""
    lists, _ = relevant_ranks(r)
    n_lists = int(np.prod(r.shape, dtype=np.int64))
    return np.bincount(lists, weights=terms, minlength=n_lists).reshape(r.shape)


def at_relevant(r: Rankings, values: np.ndarray) -> np.ndarray:
    """``values`` (..., D) at the relevant documents (in :func:`relevant_ranks` order)."""
    lists, ranks = relevant_ranks(r)
    return values.reshape(-1, values.shape[-1])[lists, ranks]


def judged_nonrelevant_above(r: Rankings) -> np.ndarray:
    """(..., D) judged non-relevant documents at or above each rank (cached; bpref, infAP)."""
    return r.cached("cum_judged_nonrel", lambda: np.cumsum(judged_nonrelevant(r), axis=-1, dtype=np.int32))


@register("NumRet", aliases=("num_ret",), aggregate="sum", integer=True)
def num_ret(r: Rankings) -> np.ndarray:
    """Number of documents retrieved, n (trec_eval ``num_ret``)."""
    return r.n_ret.astype(np.float64)


def _num_rel_summary(values: np.ndarray, measure, collection) -> np.ndarray:
    """Sum of R over topics; with ``summary=trec_eval`` under ``missing="zero"`` (trec_eval ``-c``), every judgment
    with a grade > 0 in the qrels, as ``te_calc_avg_num_rel`` counts it."""
    if dict(measure.params).get("summary") == "trec_eval" and collection is not None and collection.missing == "zero":
        return np.full(values.shape[:-1], float(collection.counts[:, 1:].sum()))
    return np.nansum(values, axis=-1)


@register("NumRel", aggregate=_num_rel_summary, integer=True, qrels_only=True, params=(
    Param("summary", "sum", str, "summary over topics under missing=zero: the sum of R, or trec_eval's (every "
          "judgment with grade > 0 in the qrels, whatever the relevance level)", choices=("sum", "trec_eval")),))
def num_rel(r: Rankings, summary: str = "sum") -> np.ndarray:
    """Number of judged relevant documents R (trec_eval ``num_rel``); summed over topics.

    trec_eval's ``-c`` summary is not that sum: it counts every judgment with a grade > 0 in the qrels, ignoring
    ``-l`` (``m_num_rel.c``, ``te_calc_avg_num_rel``). ``summary=trec_eval`` (the ``num_rel`` alias) reproduces it;
    the per-topic values are R either way.
    """
    return r.num_rel().astype(np.float64)


@register("NumNonrelJudgedRet", aliases=("num_nonrel_judged_ret",), aggregate="sum", integer=True)
def num_nonrel_judged_ret(r: Rankings) -> np.ndarray:
    """Judged non-relevant documents retrieved: grade >= 0 and below the relevance level (trec_eval
    ``num_nonrel_judged_ret``)."""
    return (judged_nonrelevant(r) & r.valid()).sum(-1).astype(np.float64)


def judged_nonrelevant(r: Rankings) -> np.ndarray:
    """Boolean (..., D): a judged document (grade >= 0) below the relevance level."""
    return r.cached("judged_nonrel", lambda: (r.grades >= 0) & (r.grades < r.rel_level))


@register("NumRelRet", aliases=("num_rel_ret",), aggregate="sum", integer=True)
def num_rel_ret(r: Rankings) -> np.ndarray:
    """Relevant documents retrieved, C(n) (trec_eval ``num_rel_ret``)."""
    return r.num_rel_ret().astype(np.float64)


@register("P", cutoff=cutoff(10), aliases=("precision",))
def precision(r: Rankings, k: int) -> np.ndarray:
    """Precision at k: C(k) / k; the denominator is k even when fewer than k documents were retrieved (trec_eval)."""
    return r.count_at(r.cum_relevant(), k) / float(k)


@register("Recall", cutoff=cutoff(1000))
def recall(r: Rankings, k: int) -> np.ndarray:
    """Recall at k: C(k) / R (trec_eval ``recall_k``)."""
    return _div(r.count_at(r.cum_relevant(), k), r.num_rel())


@register("Success", cutoff=cutoff(10))
def success(r: Rankings, k: int) -> np.ndarray:
    """1 if a relevant document is in the top k, else 0 (trec_eval ``success_k``)."""
    return (r.count_at(r.cum_relevant(), k) > 0).astype(np.float64)


@register("AP", cutoff=K, aliases=("MAP",))
def average_precision(r: Rankings, k: int | None = None) -> np.ndarray:
    """Average precision: AP = (1/R) Σ_r I(r) C(r)/r (Kishida 2005 Eq. 5; trec_eval ``map``).

    ``AP@k`` sums over ranks r <= k and still divides by R (trec_eval ``map_cut_k``). The sum is taken rank after
    rank, as trec_eval adds (one running sum serves every cutoff).
    """
    running = r.cached("cum_prec_at_rel", lambda: np.cumsum(precision_at_relevant(r), axis=-1))
    return _div(r.count_at(running, r.depth if k is None else k), r.num_rel())


@register("YAAP", empty_list=True)
def yet_another_ap(r: Rankings) -> np.ndarray:
    """Yet another average precision (Robertson, "On smoothing average precision", ECIR 2012; trec_eval
    ``yaap``): log((1 + S) / (1 + R − S)), S = Σ_r I(r) C(r)/r the unnormalised sum of AP. Monotonic with AP on one
    topic but unbounded, so that averages over topics weigh extreme values less. A topic a run lacks takes the value
    of an empty list, log(1 / (1 + R)), as trec_eval ``-c`` gives it."""
    total = precision_at_relevant(r).sum(-1)
    return np.log((1.0 + total) / (1.0 + r.num_rel() - total))


@register("GM_AP", aliases=("gm_map",), aggregate="gmean")
def gm_average_precision(r: Rankings) -> np.ndarray:
    """Per-topic AP, averaged geometrically: exp(mean log max(AP, 1e-5)) (trec_eval ``gm_map``)."""
    return average_precision(r)


@register("RR", cutoff=K, aliases=("MRR", "recip_rank"))
def reciprocal_rank(r: Rankings, k: int | None = None) -> np.ndarray:
    """Reciprocal rank of the first relevant document, 0 if none (within the top k for ``RR@k``)."""
    rel = r.relevant() & _upto(r, k)
    first = np.argmax(rel, axis=-1)
    return np.where(rel.any(-1), 1.0 / (first + 1.0), 0.0)


@register("Rprec", aliases=("R-prec", "RPrec"))
def r_precision(r: Rankings) -> np.ndarray:
    """R-precision: C(R)/R, precision after R documents (Kishida 2005 Eq. 6; trec_eval ``Rprec``)."""
    R = r.num_rel()
    return _div(r.count_at(r.cum_relevant(), R), R)


@register("Rprec_mult", cutoff=Param("k", 1.0, float, "multiple of R", within="(0, inf)"))
def r_precision_mult(r: Rankings, k: float) -> np.ndarray:
    """Precision at rank ⌊k·R + 0.9⌋ (trec_eval ``Rprec_mult_k``, whose cutoff rounding this keeps)."""
    cut = np.floor(k * r.num_rel() + 0.9)  # kept in floats: a large k would overflow an integer cut
    return _div(r.count_at(r.cum_relevant(), np.minimum(cut, r.depth).astype(np.int64)), cut)


@register("bpref")
def bpref(r: Rankings) -> np.ndarray:
    """Binary preference (Buckley & Voorhees, SIGIR 2004), trec_eval's definition.

    bpref = (1/R) Σ_{relevant r} (1 − min(N(r), R) / min(N_total, R)), where N(r) counts *judged* non-relevant
    documents above r and N_total the judged non-relevant documents of the topic; unjudged documents are skipped.
    """
    return r.cached("bpref", lambda: _bpref(r))


def _bpref(r: Rankings) -> np.ndarray:
    lists, _ = relevant_ranks(r)
    nonrel_above = at_relevant(r, judged_nonrelevant_above(r))  # at a relevant rank: the ones above it
    R = r.num_rel().reshape(-1)[lists]
    n_nonrel = np.broadcast_to(r.counts[..., : r.rel_level].sum(-1), r.shape).reshape(-1)[lists]
    penalty = _div(np.minimum(nonrel_above, R), np.minimum(n_nonrel, R))
    return _div(sum_at_relevant(r, np.where(nonrel_above > 0, 1.0 - penalty, 1.0)), r.num_rel())


@register("GM_bpref", aliases=("gm_bpref",), aggregate="gmean")
def gm_bpref(r: Rankings) -> np.ndarray:
    """Per-topic bpref, averaged geometrically: exp(mean log max(bpref, 1e-5)) (trec_eval ``gm_bpref``)."""
    return bpref(r)


@register("binG")
def binary_g(r: Rankings) -> np.ndarray:
    """Binary G (trec_eval ``binG``, Buckley 2008): (1/R) Σ_{relevant r} 1 / log2(2 + r − C(r)), r − C(r) the
    documents above r that are not relevant; 0 if no relevant document was retrieved."""
    _, ranks = relevant_ranks(r)
    non_above = (ranks + 1.0) - at_relevant(r, r.cum_relevant())
    return _div(sum_at_relevant(r, 1.0 / np.log2(2.0 + non_above)), r.num_rel())


@register("RelP", cutoff=cutoff(10), aliases=("relative_P",))
def relative_precision(r: Rankings, k: int) -> np.ndarray:
    """Relative precision at k: C(k) / min(k, R), precision up to R and recall beyond (trec_eval ``relative_P``);
    0 if R = 0."""
    return _div(r.count_at(r.cum_relevant(), k), np.minimum(k, r.num_rel()))


@register("SetP", aliases=("set_P",))
def set_precision(r: Rankings) -> np.ndarray:
    """Set precision C(n)/n over the whole retrieved set (trec_eval ``set_P``)."""
    return _div(r.num_rel_ret(), r.n_ret)


@register("SetR", aliases=("set_recall",))
def set_recall(r: Rankings) -> np.ndarray:
    """Set recall C(n)/R (trec_eval ``set_recall``)."""
    return _div(r.num_rel_ret(), r.num_rel())


@register("SetRelP", aliases=("set_relative_P",))
def set_relative_precision(r: Rankings) -> np.ndarray:
    """Relative set precision C(n) / min(n, R) (trec_eval ``set_relative_P``); 0 if n or R is 0."""
    return _div(r.num_rel_ret(), np.minimum(r.n_ret, r.num_rel()))


@register("SetAP", aliases=("set_map",))
def set_average_precision(r: Rankings) -> np.ndarray:
    """Unranked set AP: C(n)² / (n R), set precision times set recall (trec_eval ``set_map``)."""
    relret = r.num_rel_ret().astype(np.float64)
    return _div(relret * relret, r.n_ret * r.num_rel().astype(np.float64))


def _coefficient(name: str, default: float, doc: str) -> Param:
    return Param(name, default, float, doc, within="[-1e100, 1e100]")


@register("Utility", params=(
    _coefficient("a", 1.0, "worth of a relevant document retrieved"),
    _coefficient("b", -1.0, "worth of a non-relevant document retrieved"),
    _coefficient("c", 0.0, "worth of a relevant document not retrieved"),
    _coefficient("d", 0.0, "worth of a non-relevant document not retrieved"),
    Param("N", 0, int, "collection size for the d term (trec_eval -N, default 0)", within="[0, inf)"),
))
def utility(r: Rankings, a: float = 1.0, b: float = -1.0, c: float = 0.0, d: float = 0.0, N: int = 0) -> np.ndarray:
    """Set utility (trec_eval ``utility``): a·C(n) + b·(n − C(n)) + c·(R − C(n)) + d·(N − n − R + C(n)),
    a weighted sum of the contingency table of retrieved × relevant; averaged over topics, as trec_eval does."""
    relret = r.num_rel_ret().astype(np.float64)
    ret = r.n_ret.astype(np.float64)
    R = r.num_rel().astype(np.float64)
    return a * relret + b * (ret - relret) + c * (R - relret) + d * (N + relret - ret - R)


@register("SetF", params=(Param("beta", 1.0, float, "weight of recall", within="[0, inf)"),
                          Param("beta2", None, float, "β² given directly (trec_eval's set_F.x weighs with x = β²); "
                                "overrides beta", within="[0, inf)")), aliases=("set_F",))
def set_f(r: Rankings, beta: float, beta2: float | None = None) -> np.ndarray:
    """Set F-measure (1 + β²)·P·R / (β²·P + R) of set precision and recall (van Rijsbergen 1979).

    trec_eval's ``set_F.x`` computes (x + 1)·P·R / (x·P + R): its parameter x is β², not β (``set_F.0.5`` is
    F with β = √0.5). The alias ``set_F_x`` binds ``beta2=x`` and evaluates trec_eval's expression as written; 0
    when no relevant document was retrieved."""
    p, rec = set_precision(r), set_recall(r)
    if beta2 is not None:
        x = float(beta2)
        with np.errstate(all="ignore"):
            value = (x + 1.0) * p * rec / (x * p + rec)
        return np.where(r.num_rel_ret() > 0, value, 0.0)
    b2 = float(beta) * float(beta)  # F = P·R / (w·P + (1 − w)·R), w = β²/(1 + β²): no overflow for large β
    w = 1.0 if math.isinf(b2) else b2 / (1.0 + b2)
    return _div(p * rec, w * p + (1.0 - w) * rec)


def interpolated_precision_curve(r: Rankings) -> np.ndarray:
    """Interpolated precision at each rank: max_{r' >= r, r' <= n} C(r')/r' (Manning et al. §8.4)."""

    def build() -> np.ndarray:
        prec = np.where(r.valid(), r.cum_relevant() / r.ranks, 0.0)
        return np.maximum.accumulate(prec[..., ::-1], axis=-1)[..., ::-1]

    return r.cached("iprec_curve", build)


RECALL_CUT = Param(
    "cut", "round", str,
    "relevant documents needed for recall r: round(rR) (trec_eval 10), ceil(rR) (recall >= r exactly, Manning "
    "et al.) or floor(rR + 0.9) (trec_eval <= 9.0.8, pytrec_eval)",
    choices=("round", "ceil", "v9"),
)


def _needed(level: float, R: np.ndarray, cut: str) -> np.ndarray:
    """Number of relevant documents that reach recall ``level``, under each tool's rounding."""
    x = level * R
    if cut == "ceil":
        return np.ceil(x - 1e-9).astype(np.int64)
    if cut == "v9":
        return np.floor(x + 0.9).astype(np.int64)
    return np.floor(x + 0.5).astype(np.int64)  # C's lround for non-negative values


def relevant_positions(r: Rankings) -> np.ndarray:
    """(..., m) rank index (0-based) of the 1st, 2nd, ... relevant document retrieved in each list, m the most
    any list retrieved (0 past a list's own); one pass, shared by every recall level."""

    def build() -> np.ndarray:
        rel = r.relevant()
        cum = r.cum_relevant()
        width = max(int(cum[..., -1].max(initial=0)), 1)
        out = np.zeros(r.shape + (width,), dtype=np.int64)
        *lead, d = np.nonzero(rel)
        out[(*lead, cum[rel] - 1)] = d
        return out

    return r.cached("relevant_positions", build)


def _iprec_at(r: Rankings, level: float, cut: str = "round") -> np.ndarray:
    """Interpolated precision at a recall level: at the rank of the n-th relevant document (n = the documents
    needed for that recall, ``cut``; the first relevant one for n = 0), the maximum precision at or below it; 0 if
    fewer than n relevant documents were retrieved. ``cut="round"`` is trec_eval 10's rule (which its test suite
    checks). The maximum is taken over the relevant documents from the n-th on (precision only falls between
    them), from one compact array of their precisions shared by every level."""
    need = _needed(level, r.num_rel(), cut).reshape(-1)
    precision, start, found = _precision_at_relevant_ranks(r)
    reached = np.flatnonzero((need <= found) & (found > 0) & (r.n_ret.reshape(-1) > 0))
    out = np.zeros(found.shape)
    if len(reached):
        first = start[reached] + np.maximum(need[reached], 1) - 1
        bounds = np.stack([first, start[reached] + found[reached]], axis=1).reshape(-1)
        out[reached] = np.maximum.reduceat(precision, bounds)[::2]  # max over [first, end of the list's ones)
    return out.reshape(r.shape)


def _precision_at_relevant_ranks(r: Rankings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """C(r)/r at every relevant document, list after list (a 0 appended), each list's start in it and its number
    of relevant documents retrieved (cached)."""

    def build():
        lists, ranks = relevant_ranks(r)
        found = np.bincount(lists, minlength=int(np.prod(r.shape, dtype=np.int64)))
        start = np.concatenate([[0], np.cumsum(found)[:-1]])
        precision = at_relevant(r, r.cum_relevant()) / (ranks + 1.0)
        return np.concatenate([precision, [0.0]]), start, found

    return r.cached("precision_at_relevant_ranks", build)


@register("IPrec", params=(RECALL_CUT,), cutoff=Param("k", 0.0, float, "recall level", within="[0, 1]"),
          aliases=("iprec_at_recall",))
def iprec_at_recall(r: Rankings, k: float, cut: str = "round") -> np.ndarray:
    """Interpolated precision at recall level k (trec_eval ``iprec_at_recall_k``; ``cut`` chooses how many
    relevant documents make recall k: trec_eval 10 rounds, the textbook definition needs recall >= k)."""
    return _iprec_at(r, k, cut)


ELEVEN_POINTS = tuple(np.round(np.arange(11) / 10, 1))


@register(
    "IPrec11",
    params=(Param("levels", ELEVEN_POINTS, parse_floats, "recall levels", within="[0, 1]"), RECALL_CUT),
    aliases=("11pt", "11pt_avg"),
)
def eleven_point(r: Rankings, levels: tuple[float, ...], cut: str = "round") -> np.ndarray:
    """11-point interpolated average precision: mean interpolated precision at recall 0, 0.1, ..., 1
    (Manning et al. §8.4; trec_eval ``11pt_avg``)."""
    return np.mean([_iprec_at(r, level, cut) for level in levels], axis=0)


def _collection_size(r: Rankings, N: int | None) -> np.ndarray:
    """N per list: the given collection size, or the list plus its unretrieved relevant documents.

    Raises
    ------
    InputError
        A given N smaller than some list plus its unretrieved relevant documents (they would not fit).
    """
    smallest = r.n_ret + (r.num_rel() - r.num_rel_ret())
    if N is None:
        return smallest
    if np.any(smallest > N):
        raise InputError(f"collection size N={N} is smaller than a ranked list plus its unretrieved relevant "
                         f"documents ({int(smallest.max())}); give N >= {int(smallest.max())}")
    return np.broadcast_to(np.int64(N), r.shape)


def _relevant_positions(r: Rankings, N: int | None, log: bool) -> np.ndarray:
    """Σ over relevant documents of rank (or log rank), the m unretrieved ones placed at ranks N−m+1..N.

    The tail is closed-form, Σ_{i=N-m+1..N} i = m(2N − m + 1)/2 and Σ log i = :func:`_log_falling` (N, m), so a
    large N costs nothing."""
    ranks = np.log(r.ranks) if log else r.ranks
    ret = np.where(r.relevant(), ranks, 0.0).sum(-1)
    m = r.num_rel() - r.num_rel_ret()
    if log:
        return ret + _log_falling(N, _collection_size(r, N), m)
    N_ = _collection_size(r, N).astype(np.float64)
    return ret + m * (2 * N_ - m + 1) / 2


def _log_falling(N: int | None, N_: np.ndarray, m: np.ndarray) -> np.ndarray:
    """log(N (N−1) ... (N−m+1)) = Σ_{j<m} log(N − j), per list.

    For a given (possibly huge) collection size N, as m·log N + Σ_{j<m} log1p(−j/N) from a cumulative table over j
    (no cancellation between two huge lnΓ values); for the default N (the list plus its unretrieved relevant
    documents, a small number) as lnΓ(N+1) − lnΓ(N−m+1)."""
    from scipy.special import gammaln

    if N is None:
        N_ = N_.astype(np.float64)
        return gammaln(N_ + 1) - gammaln(N_ - m + 1)
    top = int(m.max(initial=0))
    table = np.concatenate([[0.0], np.cumsum(np.log1p(-np.arange(top) / N))])
    return m * np.log(float(N)) + table[m]


N_PARAM = Param("N", None, int, "collection size (default: retrieved + unretrieved relevant)", within="[1, inf)")


@register("NRecall", params=(N_PARAM,))
def normalized_recall(r: Rankings, N: int | None) -> np.ndarray:
    """Normalised recall (Salton & Lesk; Kishida 2005 Eq. 7):
    z_r = 1 − (Σ_{relevant} rank − Σ_{i=1..R} i) / (R (N − R)).

    Relevant documents not retrieved are placed at the bottom ranks of a collection of N documents. The default N
    is the list length plus the unretrieved relevant documents (the smallest collection consistent with the run).
    """
    R = r.num_rel().astype(np.float64)
    N_ = _collection_size(r, N).astype(np.float64)
    actual = _relevant_positions(r, N, log=False)
    ideal = R * (R + 1) / 2
    return np.where(N_ > R, 1.0 - _div(actual - ideal, R * (N_ - R)), np.where(R > 0, 1.0, 0.0))


@register("NPrecision", params=(N_PARAM,))
def normalized_precision(r: Rankings, N: int | None) -> np.ndarray:
    """Normalised precision (Kishida 2005 Eq. 8): z_p = 1 − (Σ_{relevant} log rank − Σ_{i=1..R} log i) / log C(N, R),
    with the same placement of unretrieved relevant documents as :func:`normalized_recall`."""
    from scipy.special import gammaln

    R = r.num_rel()
    N_ = _collection_size(r, N)
    ideal = gammaln(R + 1.0)
    excess = _relevant_positions(r, N, log=True) - ideal
    log_binom = _log_falling(N, N_, R) - ideal
    return np.where(N_ > R, 1.0 - _div(excess, log_binom), np.where(R > 0, 1.0, 0.0))
