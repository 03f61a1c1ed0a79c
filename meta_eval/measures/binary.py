"""Binary measures: relevant means grade >= ``rel_level`` (trec_eval ``-l``).

Notation: r = 1..D ranks, I(r) relevance of the document at rank r, C(r) = Σ_{k<=r} I(k), R = number of judged
relevant documents of the topic (qrels), n = number retrieved. Every function is vectorised over all lists and
matches trec_eval (v10) where trec_eval has the measure; a topic with R = 0 scores 0 where R is a denominator.
"""

from __future__ import annotations

import numpy as np

from meta_eval.measures.registry import Param, parse_floats, register
from meta_eval.rankings import Rankings

K = Param("k", None, int, "rank cutoff")


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


@register("NumRet", aliases=("num_ret",), aggregate="sum", integer=True)
def num_ret(r: Rankings) -> np.ndarray:
    """Number of documents retrieved, n (trec_eval ``num_ret``)."""
    return r.n_ret.astype(np.float64)


@register("NumRel", aliases=("num_rel",), aggregate="sum", integer=True, qrels_only=True)
def num_rel(r: Rankings) -> np.ndarray:
    """Number of judged relevant documents R (trec_eval ``num_rel``)."""
    return r.num_rel().astype(np.float64)


@register("NumRelRet", aliases=("num_rel_ret",), aggregate="sum", integer=True)
def num_rel_ret(r: Rankings) -> np.ndarray:
    """Relevant documents retrieved, C(n) (trec_eval ``num_rel_ret``)."""
    return r.num_rel_ret().astype(np.float64)


@register("P", cutoff=Param("k", 10, int, "rank cutoff"), aliases=("precision",))
def precision(r: Rankings, k: int) -> np.ndarray:
    """Precision at k: C(k) / k; the denominator is k even when fewer than k documents were retrieved (trec_eval)."""
    return r.count_at(r.cum_relevant(), k) / float(k)


@register("Recall", cutoff=Param("k", 1000, int, "rank cutoff"))
def recall(r: Rankings, k: int) -> np.ndarray:
    """Recall at k: C(k) / R (trec_eval ``recall_k``)."""
    return _div(r.count_at(r.cum_relevant(), k), r.num_rel())


@register("Success", cutoff=Param("k", 10, int, "rank cutoff"))
def success(r: Rankings, k: int) -> np.ndarray:
    """1 if a relevant document is in the top k, else 0 (trec_eval ``success_k``)."""
    return (r.count_at(r.cum_relevant(), k) > 0).astype(np.float64)


@register("AP", cutoff=K, aliases=("MAP",))
def average_precision(r: Rankings, k: int | None = None) -> np.ndarray:
    """Average precision: AP = (1/R) Σ_r I(r) C(r)/r (Kishida 2005 Eq. 5; trec_eval ``map``).

    ``AP@k`` sums over ranks r <= k and still divides by R (trec_eval ``map_cut_k``).
    """
    return _div((precision_at_relevant(r) * _upto(r, k)).sum(-1), r.num_rel())


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


@register("Rprec_mult", cutoff=Param("k", 1.0, float, "multiple of R"))
def r_precision_mult(r: Rankings, k: float) -> np.ndarray:
    """Precision at rank ⌊k·R + 0.9⌋ (trec_eval ``Rprec_mult_k``, whose cutoff rounding this keeps)."""
    cut = np.floor(k * r.num_rel() + 0.9).astype(np.int64)
    return _div(r.count_at(r.cum_relevant(), cut), cut)


@register("bpref")
def bpref(r: Rankings) -> np.ndarray:
    """Binary preference (Buckley & Voorhees, SIGIR 2004), trec_eval's definition.

    bpref = (1/R) Σ_{relevant r} (1 − min(N(r), R) / min(N_total, R)), where N(r) counts *judged* non-relevant
    documents above r and N_total the judged non-relevant documents of the topic; unjudged documents are skipped.
    """
    judged_nonrel = (r.grades >= 0) & (r.grades < r.rel_level)
    nonrel_above = np.cumsum(judged_nonrel, axis=-1, dtype=np.int32)
    R = r.num_rel()[..., None]
    n_nonrel = np.broadcast_to(r.counts[..., : r.rel_level].sum(-1), r.shape)[..., None]
    penalty = _div(np.minimum(nonrel_above, R), np.minimum(n_nonrel, R))
    per_rank = np.where(r.relevant(), np.where(nonrel_above > 0, 1.0 - penalty, 1.0), 0.0)
    return _div(per_rank.sum(-1), r.num_rel())


@register("SetP", aliases=("set_P",))
def set_precision(r: Rankings) -> np.ndarray:
    """Set precision C(n)/n over the whole retrieved set (trec_eval ``set_P``)."""
    return _div(r.num_rel_ret(), r.n_ret)


@register("SetR", aliases=("set_recall",))
def set_recall(r: Rankings) -> np.ndarray:
    """Set recall C(n)/R (trec_eval ``set_recall``)."""
    return _div(r.num_rel_ret(), r.num_rel())


@register("SetF", params=(Param("beta", 1.0, float, "weight of recall"),), aliases=("set_F",))
def set_f(r: Rankings, beta: float) -> np.ndarray:
    """Set F-measure (1 + β²)·P·R / (β²·P + R) of set precision and recall (trec_eval ``set_F``)."""
    p, rec = set_precision(r), set_recall(r)
    return _div((1 + beta**2) * p * rec, beta**2 * p + rec)


def interpolated_precision_curve(r: Rankings) -> np.ndarray:
    """Interpolated precision at each rank: max_{r' >= r, r' <= n} C(r')/r' (Manning et al. §8.4)."""

    def build() -> np.ndarray:
        prec = np.where(r.valid(), r.cum_relevant() / r.ranks, 0.0)
        return np.maximum.accumulate(prec[..., ::-1], axis=-1)[..., ::-1]

    return r.cached("iprec_curve", build)


RECALL_CUT = Param(
    "cut", "round", lambda s: {"round": "round", "ceil": "ceil", "v9": "v9"}[s],
    "relevant documents needed for recall r: round(rR) (trec_eval 10), ceil(rR) (recall >= r exactly, Manning "
    "et al.) or floor(rR + 0.9) (trec_eval <= 9.0.8, pytrec_eval)",
)


def _needed(level: float, R: np.ndarray, cut: str) -> np.ndarray:
    """Number of relevant documents that reach recall ``level``, under each tool's rounding."""
    x = level * R
    if cut == "ceil":
        return np.ceil(x - 1e-9).astype(np.int64)
    if cut == "v9":
        return np.floor(x + 0.9).astype(np.int64)
    return np.floor(x + 0.5).astype(np.int64)  # C's lround for non-negative values


def _iprec_at(r: Rankings, level: float, cut: str = "round") -> np.ndarray:
    """Interpolated precision at a recall level: at the rank of the n-th relevant document (n = the documents
    needed for that recall, ``cut``; rank 1 for n = 0), the maximum precision at or below it; 0 if fewer than n
    relevant documents were retrieved. ``cut="round"`` is trec_eval 10's rule (which its test suite checks)."""
    need = _needed(level, r.num_rel(), cut)
    cum = r.cum_relevant()
    reached = need <= r.num_rel_ret()
    at = np.argmax(cum >= np.maximum(need, 1)[..., None], axis=-1)  # rank index of the need-th relevant doc
    at = np.where(need > 0, at, 0)
    value = np.take_along_axis(interpolated_precision_curve(r), at[..., None], axis=-1)[..., 0]
    return np.where(reached & (r.n_ret > 0), value, 0.0)


@register("IPrec", params=(RECALL_CUT,), cutoff=Param("k", 0.0, float, "recall level"),
          aliases=("iprec_at_recall",))
def iprec_at_recall(r: Rankings, k: float, cut: str = "round") -> np.ndarray:
    """Interpolated precision at recall level k (trec_eval ``iprec_at_recall_k``; ``cut`` chooses how many
    relevant documents make recall k: trec_eval 10 rounds, the textbook definition needs recall >= k)."""
    return _iprec_at(r, k, cut)


ELEVEN_POINTS = tuple(np.round(np.arange(11) / 10, 1))


@register(
    "IPrec11",
    params=(Param("levels", ELEVEN_POINTS, parse_floats, "recall levels"), RECALL_CUT),
    aliases=("11pt", "11pt_avg"),
)
def eleven_point(r: Rankings, levels: tuple[float, ...], cut: str = "round") -> np.ndarray:
    """11-point interpolated average precision: mean interpolated precision at recall 0, 0.1, ..., 1
    (Manning et al. §8.4; trec_eval ``11pt_avg``)."""
    return np.mean([_iprec_at(r, level, cut) for level in levels], axis=0)


def _collection_size(r: Rankings, N: int | None) -> np.ndarray:
    missing = r.num_rel() - r.num_rel_ret()
    return r.n_ret + missing if N is None else np.broadcast_to(np.int64(N), r.shape)


def _relevant_positions(r: Rankings, N: int | None, transform) -> np.ndarray:
    """Σ over relevant documents of transform(rank), unretrieved ones placed at the last ranks N−m+1..N."""
    ret = (np.where(r.relevant(), transform(r.ranks), 0.0)).sum(-1)
    N_ = _collection_size(r, N).astype(np.float64)
    m = (r.num_rel() - r.num_rel_ret()).astype(np.float64)
    # Σ_{i=N-m+1..N} transform(i), vectorised with a cumulative table over 1..max N.
    top = int(max(N_.max(initial=1), 1))
    table = np.concatenate([[0.0], np.cumsum(transform(np.arange(1, top + 1, dtype=np.float64)))])
    tail = table[N_.astype(np.int64)] - table[(N_ - m).astype(np.int64)]
    return ret + tail


N_PARAM = Param("N", None, int, "collection size (default: retrieved + unretrieved relevant)")


@register("NRecall", params=(N_PARAM,))
def normalized_recall(r: Rankings, N: int | None) -> np.ndarray:
    """Normalised recall (Salton & Lesk; Kishida 2005 Eq. 7):
    z_r = 1 − (Σ_{relevant} rank − Σ_{i=1..R} i) / (R (N − R)).

    Relevant documents not retrieved are placed at the bottom ranks of a collection of N documents. The default N
    is the list length plus the unretrieved relevant documents (the smallest collection consistent with the run).
    """
    R = r.num_rel().astype(np.float64)
    N_ = _collection_size(r, N).astype(np.float64)
    actual = _relevant_positions(r, N, lambda x: x)
    ideal = R * (R + 1) / 2
    return np.where(N_ > R, 1.0 - _div(actual - ideal, R * (N_ - R)), np.where(R > 0, 1.0, 0.0))


@register("NPrecision", params=(N_PARAM,))
def normalized_precision(r: Rankings, N: int | None) -> np.ndarray:
    """Normalised precision (Kishida 2005 Eq. 8): z_p = 1 − (Σ_{relevant} log rank − Σ_{i=1..R} log i) / log C(N, R),
    with the same placement of unretrieved relevant documents as :func:`normalized_recall`."""
    from scipy.special import gammaln

    R = r.num_rel().astype(np.float64)
    N_ = _collection_size(r, N).astype(np.float64)
    actual = _relevant_positions(r, N, np.log)
    ideal = gammaln(R + 1)
    log_binom = gammaln(N_ + 1) - gammaln(R + 1) - gammaln(N_ - R + 1)
    return np.where(N_ > R, 1.0 - _div(actual - ideal, log_binom), np.where(R > 0, 1.0, 0.0))
