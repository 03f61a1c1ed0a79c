"""Graded measures: GAP, nDCG/DCG/CG, Q-measure, ERR/nERR, RBP, NCP.

Notation as in :mod:`meta_eval.measures.binary`; i_r is the grade at rank r (unjudged and padding count as 0),
g(·) a gain function, R_j the number of judged documents of grade j, c the highest grade of the qrels.
"""

from __future__ import annotations

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.measures.binary import K, _div, _upto, average_precision, precision_at_relevant
from meta_eval.measures.registry import (GAIN_DOMAIN, Param, check_distribution, check_gain, gain_table, parse_bool,
                                         parse_floats, parse_gain, register)
from meta_eval.inputs.tables import MAX_GRADE
from meta_eval.model.rankings import Rankings

GAIN = Param("gain", "linear", parse_gain, "linear (g), exp (2^g - 1) or a map like 1:3,2:9", check=check_gain,
             domain=GAIN_DOMAIN)


def _check_nonnegative_gain(gain) -> "str | None":
    problem = check_gain(gain)
    if problem is None and isinstance(gain, dict) and any(v < 0 for v in gain.values()):
        return "has a negative gain (this measure turns gains into probabilities)"
    return problem


# Measures that turn gains into probabilities (ERR's stop probability, graded RBP's relevance) need gains >= 0.
PROBABILITY_GAIN = Param("gain", "linear", parse_gain, check=_check_nonnegative_gain,
                         domain=GAIN_DOMAIN.replace("gains in [-1e100, 1e100]", "gains in [0, 1e100]"))


# --------------------------------------------------------------------------------------------- GAP


def threshold_probabilities(g: tuple[float, ...] | None, max_grade: int) -> np.ndarray:
    """The GAP user model's g_1..g_c: probability that the user's relevance threshold is grade j.

    ``None`` means uniform over grades 1..c. A vector shorter than c is an error; one longer than c may only put
    zero mass on the missing grades. The values must be non-negative and sum to 1.
    """
    if max_grade < 1:
        return np.zeros(0)
    if g is None:
        return np.full(max_grade, 1.0 / max_grade)
    g_arr = np.asarray(g, dtype=np.float64)
    if np.any(g_arr < 0) or not np.isclose(g_arr.sum(), 1.0, atol=1e-9):
        raise InputError(f"GAP threshold probabilities must be >= 0 and sum to 1, got g={tuple(g)}")
    if len(g_arr) < max_grade or np.any(g_arr[max_grade:] != 0):
        raise InputError(f"GAP needs one threshold probability per grade 1..{max_grade}, got g={tuple(g)}")
    return g_arr[:max_grade]


@register("GAP", params=(Param("g", None, parse_floats, "threshold probabilities g_1..g_c", within="[0, 1]",
                                check=check_distribution,
                                domain="probabilities g_1..g_c: numbers in [0, 1] summing to 1"),),
          cutoff=K)
def graded_average_precision(r: Rankings, g: tuple[float, ...] | None = None, k: int | None = None) -> np.ndarray:
    """Graded average precision (Robertson, Kanoulas & Yilmaz, SIGIR 2010, §2.2):

    GAP = Σ_n (1/n) Σ_{m<=n} δ_{m,n} / Σ_{i=1..c} R_i Σ_{j=1..i} g_j,   δ_{m,n} = Σ_{j=1..min(i_m,i_n)} g_j
    (0 unless i_m, i_n > 0).

    Computed through the identity Σ_{j<=min(a,b)} g_j = Σ_j g_j [a >= j][b >= j], which makes the numerator
    Σ_j g_j Σ_n I_j(n) C_j(n)/n: a g-weighted sum of the AP numerators at every threshold j. With g putting all mass
    on grade t, GAP = AP at threshold t. ``GAP@k`` sums over ranks <= k with the same denominator.
    """
    gvec = threshold_probabilities(g, r.max_grade)
    upto = _upto(r, k)
    num = np.zeros(r.shape)
    den = np.zeros(r.shape)
    for j, weight in enumerate(gvec, start=1):
        if weight == 0:
            continue
        rel = r.relevant(j)
        num = num + weight * (np.where(rel & upto, r.cum_relevant(j) / r.ranks, 0.0)).sum(-1)
        den = den + weight * r.num_rel(j)
    return _div(num, den)


# --------------------------------------------------------------------------------------------- DCG family


def discounts(ranks: np.ndarray, discount: str, base: float) -> np.ndarray:
    """Discount factor 1/d(r).

    ``log2``: d(r) = log2(r + 1) (Burges et al. 2005; trec_eval ``ndcg``).
    ``jk``: Järvelin & Kekäläinen (TOIS 2002; Kishida Eq. 30): d(r) = 1 for r < b, log_b(r) for r >= b.
    ``none``: d(r) = 1 (cumulated gain).
    """
    if discount == "log2":
        return 1.0 / np.log2(ranks + 1.0)
    if discount == "jk":
        if base <= 1:
            raise InputError(f"log base b must be > 1, got {base}")
        return 1.0 / np.where(ranks < base, 1.0, np.log(np.maximum(ranks, 1.0)) / np.log(base))
    if discount == "none":
        return np.ones_like(ranks)
    raise InputError(f"unknown discount {discount!r}; use log2, jk or none")


DISCOUNT = Param("discount", "log2", str, "log2: 1/log2(r+1); jk: J&K log base b", choices=("log2", "jk", "none"))
BASE = Param("base", 2.0, float, "log base b of the jk discount", within="(1, inf)")


def _dcg(r: Rankings, table: np.ndarray, k: int | None, discount: str, base: float) -> np.ndarray:
    """DCG@k of every list: a running sum over the ranks (trec_eval adds rank after rank), shared by every cutoff."""
    return r.count_at(_dcg_running(r, table, discount, base), r.depth if k is None else k)


def _dcg_running(r: Rankings, table: np.ndarray, discount: str, base: float) -> np.ndarray:
    """(..., D) DCG at every rank of every list (cached per gain table and discount)."""
    key = ("dcg_running", np.asarray(table, dtype=np.float64).tobytes(), discount, base)
    return r.cached(key, lambda: np.cumsum(_discounted(r.gains(table), r.ranks, discount, base), axis=-1))


def _ideal_running(r: Rankings, table: np.ndarray, discount: str, base: float) -> np.ndarray:
    """(..., Rmax) ideal DCG at every rank of the ideal list of every topic (cached)."""

    def build() -> np.ndarray:
        ideal = r.ideal_gains(table)
        ranks = np.arange(1, ideal.shape[-1] + 1, dtype=np.float64)
        return np.cumsum(_discounted(ideal, ranks, discount, base), axis=-1)

    return r.cached(("ideal_dcg_running", np.asarray(table, dtype=np.float64).tobytes(), discount, base), build)


def _discounted(gains: np.ndarray, ranks: np.ndarray, discount: str, base: float) -> np.ndarray:
    """g / d(r): with the log2 discount divided as trec_eval divides (g / log2(r + 1)), not multiplied by 1/d."""
    if discount == "log2":
        return gains / np.log2(ranks + 1.0)
    return gains * discounts(ranks, discount, base)


def _ideal_dcg(r: Rankings, table: np.ndarray, k: int | None, discount: str, base: float) -> np.ndarray:
    """Ideal DCG@k of every topic (running sum over the ideal list, shared by every cutoff)."""
    running = _ideal_running(r, table, discount, base)
    at = running.shape[-1] if k is None else min(int(k), running.shape[-1])
    return np.broadcast_to(running[..., at - 1] if at > 0 else np.zeros(running.shape[:-1]), r.shape)


@register("DCG", params=(GAIN, DISCOUNT, BASE), cutoff=K)
def dcg(r: Rankings, gain="linear", discount="log2", base=2.0, k=None) -> np.ndarray:
    """Discounted cumulated gain DCG@k = Σ_{r<=k} g(i_r) / d(r) (Järvelin & Kekäläinen 2002)."""
    return _dcg(r, gain_table(gain, r.max_grade), k, discount, base)


@register("IDCG", params=(GAIN, DISCOUNT, BASE), cutoff=K, qrels_only=True)
def ideal_dcg(r: Rankings, gain="linear", discount="log2", base=2.0, k=None) -> np.ndarray:
    """Ideal DCG: the DCG of the topic's judged documents of positive gain in decreasing order of gain, cut at k
    (trec_eval ``ideal_dcg``, the denominator of nDCG). Depends on the judgments alone."""
    return _ideal_dcg(r, gain_table(gain, r.max_grade), k, discount, base)


@register("CG", params=(GAIN,), cutoff=K)
def cumulated_gain(r: Rankings, gain="linear", k=None) -> np.ndarray:
    """Cumulated gain CG@k = Σ_{r<=k} g(i_r) (Kishida Eq. 29)."""
    return (r.gains(gain_table(gain, r.max_grade)) * _upto(r, k)).sum(-1)


@register("nDCG", params=(GAIN, DISCOUNT, BASE), cutoff=K, aliases=("ndcg",))
def ndcg(r: Rankings, gain="linear", discount="log2", base=2.0, k=None) -> np.ndarray:
    """Normalised DCG: DCG@k / ideal DCG@k (Järvelin & Kekäläinen 2002).

    Defaults are trec_eval's ``ndcg``: linear gain (the grade), discount 1/log2(r+1), ideal list = all judged
    documents of the topic with positive gain sorted by gain (independent of the run length and of ``-M``).
    ``nDCG@k`` truncates both the run and the ideal list at k (trec_eval ``ndcg_cut_k``). ``gain=exp`` gives the
    Burges et al. (2005) 2^g − 1 gain; ``discount=jk`` the original log-base-b discount. Custom gain maps use the
    correct ideal order (trec_eval sorts fractional gains with an integer comparator, a known bug we do not copy).
    """
    table = gain_table(gain, r.max_grade)
    return _div(_dcg(r, table, k, discount, base), _ideal_dcg(r, table, k, discount, base))


def _padded(values: np.ndarray, width: int) -> np.ndarray:
    """(..., w) -> (..., width): cut or padded with zeros."""
    if values.shape[-1] >= width:
        return values[..., :width]
    return np.concatenate([values, np.zeros(values.shape[:-1] + (width - values.shape[-1],))], axis=-1)


def _at(cum: np.ndarray, k: np.ndarray) -> np.ndarray:
    """cum[..., k − 1] per list (k >= 1, held at the last value beyond the end); 0 where k = 0."""
    k = np.asarray(k, dtype=np.int64)
    idx = np.clip(k, 1, cum.shape[-1]) - 1
    value = np.take_along_axis(cum, np.broadcast_to(idx, cum.shape[:-1])[..., None], axis=-1)[..., 0]
    return np.where(k > 0, value, 0.0)


class _TrecDCG:
    """The run's and the ideal list's cumulative DCG (gain / log2(r + 1)) shared by Rndcg and nDCG_rel."""

    def __init__(self, r: Rankings, table: np.ndarray):
        self.table = table
        self.gains = r.gains(self.table)
        self.run = _dcg_running(r, table, "log2", 2.0)  # shared with nDCG
        cum = _ideal_running(r, table, "log2", 2.0)
        self.ideal_rows = cum  # per topic (counts' leading shape) x ideal rank
        self.ideal = np.broadcast_to(cum, r.shape + cum.shape[-1:])
        self.n_pos = np.broadcast_to((r.ideal_gains(table) > 0).sum(-1), r.shape)  # judged docs of positive gain

    @classmethod
    def of(cls, r: Rankings, gain) -> "_TrecDCG":
        """The shared sums for a gain (one object per gain table and list piece)."""
        table = gain_table(gain, r.max_grade)
        return r.cached(("trec_dcg", table.tobytes()), lambda: cls(r, table))

    def ndcg_at(self, k: np.ndarray, n_ret: np.ndarray) -> np.ndarray:
        """DCG@k / ideal DCG@k, both lists cut at k (the run held at its end)."""
        return _div(_at(self.run, np.minimum(k, n_ret)), _at(self.ideal, np.minimum(k, self.n_pos)))


@register("G", params=(GAIN,))
def trec_g(r: Rankings, gain="linear") -> np.ndarray:
    """G (Buckley 2008; trec_eval ``G``): Σ_r g(i_r) / log2(2 + cost(r) − cg(r)) / Σ ideal gains, where cg(r) is the
    run's cumulated gain and cost(r) = Σ_{r'<=r} max(ideal gain at r', 1), the ideal list's cumulated gain with a
    minimum cost of 1 per rank. The ideal list holds the topic's judged documents of positive gain; 0 if it is
    empty. Custom gain maps order the ideal list by gain (trec_eval compares gains as integers, a bug not copied)."""
    table = gain_table(gain, r.max_grade)
    gains = r.gains(table).reshape(-1, r.depth)
    ideal = r.ideal_gains(table)
    cost = np.cumsum(np.maximum(_padded(ideal, r.depth), 1.0), axis=-1)  # per topic
    lists, rank = np.nonzero(gains)  # only the documents with a gain add a term
    value = gains[lists, rank]
    cg = _running_at(gains, lists, rank, value, exact=bool(np.all(table == np.round(table))))
    rows = np.broadcast_to(np.arange(cost[..., 0].size).reshape(cost.shape[:-1]), r.shape).reshape(-1)[lists]
    # 2 + cost − cg >= 2 in exact arithmetic (cg never passes the ideal's cumulated gain); the floor guards rounding
    terms = value / np.log2(np.maximum(2.0 + cost.reshape(-1, r.depth)[rows, rank] - cg, 2.0))
    total = np.bincount(lists, weights=terms, minlength=gains.shape[0]).reshape(r.shape)
    return _div(total, np.broadcast_to(ideal.sum(-1), r.shape))


def _running_at(values: np.ndarray, lists: np.ndarray, rank: np.ndarray, nonzero: np.ndarray, exact: bool
                ) -> np.ndarray:
    """Σ_{r' <= r} values of each list at the given (list, rank) entries (the nonzero ones, in order). With
    integer values, one running sum over the nonzero entries less each list's start (exact); else a running sum
    over every rank."""
    if not exact:
        return np.cumsum(values, axis=-1)[lists, rank]
    running = np.cumsum(nonzero)
    starts = np.flatnonzero(np.concatenate([[True], lists[1:] != lists[:-1]])) if len(lists) else lists
    before = np.repeat(np.concatenate([[0.0], running])[starts], np.diff(np.concatenate([starts, [len(lists)]])))
    return running - before


@register("Rndcg", params=(GAIN,))
def r_ndcg(r: Rankings, gain="linear") -> np.ndarray:
    """nDCG averaged at the R levels (trec_eval ``Rndcg``): the mean of nDCG@b over b = the cumulative number of
    judged documents at each distinct positive gain, highest first (the ends of the ideal list's gain levels),
    plus b = n when the list is at least two documents longer than the ideal one (trec_eval's loop skips that
    point for a list exactly one longer; kept). 0 if no document of the topic is relevant (grade >= ``rel_level``)
    or none has a positive gain."""
    dcg = _TrecDCG.of(r, gain)
    table = dcg.table
    counts = _padded(r.counts.astype(np.float64), len(table))
    total = np.zeros(r.shape)
    points = np.zeros(r.shape)
    reached = np.zeros(r.counts.shape[:-1])
    for value in np.unique(table[table > 0])[::-1]:
        count = (counts * (table == value)).sum(-1)
        reached = reached + count
        has = np.broadcast_to(count > 0, r.shape)
        total += np.where(has, dcg.ndcg_at(np.broadcast_to(reached, r.shape).astype(np.int64), r.n_ret), 0.0)
        points += has
    longer = r.n_ret > dcg.n_pos + 1  # trec_eval's loop adds this point only from two documents past the ideal
    total += np.where(longer & (dcg.n_pos > 0), dcg.ndcg_at(r.n_ret, r.n_ret), 0.0)
    points += longer & (dcg.n_pos > 0)
    return np.where(r.num_rel() > 0, _div(total, points), 0.0)


@register("nDCG_rel", params=(GAIN,))
def ndcg_rel(r: Rankings, gain="linear") -> np.ndarray:
    """nDCG averaged over the relevant documents (trec_eval ``ndcg_rel``): (1/R⁺) [Σ_{retrieved r, gain > 0}
    DCG@r / IDCG@min(r, R⁺) + (R⁺ − retrieved with gain > 0) · DCG@n / IDCG@R⁺], R⁺ the judged documents of
    positive gain (an unretrieved one counts the list's whole DCG against the whole ideal); 0 if that sum is not
    positive."""
    dcg = _TrecDCG.of(r, gain)
    lists, rank = np.nonzero(dcg.gains.reshape(-1, r.depth) > 0)  # documents of positive gain (none past the end)
    n_pos = dcg.n_pos.reshape(-1)[lists]
    held = np.minimum(rank + 1, n_pos)
    width = dcg.ideal_rows.shape[-1]  # the ideal sums are per topic: the row of each list's topic
    topic_of = np.arange(dcg.ideal_rows[..., 0].size).reshape(dcg.ideal_rows.shape[:-1])
    rows = np.broadcast_to(topic_of, r.shape).reshape(-1)[lists]
    ideal_at = np.where(held > 0, dcg.ideal_rows.reshape(-1, width)[rows, np.maximum(held - 1, 0)], 0.0)
    terms = _div(dcg.run.reshape(-1, r.depth)[lists, rank], ideal_at)
    at_rel = np.bincount(lists, weights=terms, minlength=int(np.prod(r.shape, dtype=np.int64))).reshape(r.shape)
    missing = dcg.n_pos - np.bincount(lists, minlength=at_rel.size).reshape(r.shape)
    total = at_rel + missing * _div(_at(dcg.run, r.n_ret), _at(dcg.ideal, dcg.n_pos))
    return np.where(total > 0, _div(total, dcg.n_pos), 0.0)


@register("ANDCG", params=(GAIN, Param("discount", "jk", str, "discount", choices=("log2", "jk", "none")), BASE),
          aliases=("vD", "v_D"))
def average_ndcg(r: Rankings, gain="linear", discount="jk", base=2.0) -> np.ndarray:
    """Average of nDCG over positions 1..n (Kishida 2005 Eq. 32): v_D = (1/n) Σ_{i=1..n} d(i) / d_I(i),
    with J&K discount (base 2) and linear gains by default; n is the length of each list."""
    table = gain_table(gain, r.max_grade)
    disc = discounts(r.ranks, discount, base)
    run_cum = np.cumsum(r.gains(table) * disc, axis=-1)
    ideal = r.ideal_gains(table)
    width = r.depth
    if ideal.shape[-1] < width:
        ideal = np.concatenate([ideal, np.zeros(ideal.shape[:-1] + (width - ideal.shape[-1],))], axis=-1)
    ideal_cum = np.cumsum(ideal[..., :width] * disc, axis=-1)
    ratio = _div(run_cum, ideal_cum) * r.valid()
    return _div(ratio.sum(-1), r.n_ret)


# --------------------------------------------------------------------------------------------- Q-measure


@register("Q", params=(Param("beta", 1.0, float, "weight of gain vs. rank", within="[0, inf)"), GAIN), cutoff=K,
          aliases=("vQ", "v_Q"))
def q_measure(r: Rankings, beta: float = 1.0, gain="linear", k: int | None = None) -> np.ndarray:
    """Q-measure (Sakai 2004; NTCIREVAL; Kishida Eq. 35 with β = 1 and gain = grade):

    Q = (1/R) Σ_r I(r) (C(r) + β·cg(r)) / (r + β·cg*(r)),

    cg the run's cumulated gain, cg* the ideal list's (held at its total beyond the ideal length).
    ``Q@k`` sums over r <= k and divides by min(k, R) (NTCIREVAL). β = 0 gives AP.
    """
    table = gain_table(gain, r.max_grade)
    cg = np.cumsum(r.gains(table), axis=-1)
    ideal = np.cumsum(r.ideal_gains(table), axis=-1)
    idx = np.minimum(np.arange(r.depth), ideal.shape[-1] - 1)
    cg_star = ideal[..., idx]
    if beta > 1:  # divided through by β, so that a large β cannot overflow
        blended = (r.cum_relevant() / beta + cg) / (r.ranks / beta + cg_star)
    else:
        blended = (r.cum_relevant() + beta * cg) / (r.ranks + beta * cg_star)
    total = (np.where(r.relevant() & _upto(r, k), blended, 0.0)).sum(-1)
    R = r.num_rel()
    return _div(total, R if k is None else np.minimum(R, k))


# --------------------------------------------------------------------------------------------- ERR, RBP


def _err_stop_probability(r: Rankings, gain, stop: str, max_grade: int | None) -> np.ndarray:
    """The stop probability R of each document, in [0, 1]. A ``max_grade`` below the qrels' highest grade is
    refused (a grade above it made R > 1: ERR = 3.4), and so is a gain map with ``stop=exp`` (which reads the
    grades themselves: the map was ignored, silently)."""
    if max_grade is not None and max_grade < r.max_grade:
        raise InputError(f"ERR: max_grade={max_grade} is below the qrels' highest grade {r.max_grade} (the "
                         f"properties analysis: its --grades; a stop probability would exceed 1); give max_grade >= "
                         f"{r.max_grade}, or leave it out")
    if stop == "exp" and not (isinstance(gain, str) and gain == "linear"):
        raise InputError("ERR: a gain map applies to stop=linear; stop=exp's probability is (2^g - 1) / 2^gmax "
                         "of the grade g itself")
    if stop == "exp":
        top = r.max_grade if max_grade is None else max_grade
        return r.gains(gain_table("exp", top)) / 2.0**top
    table = gain_table(gain, r.max_grade)
    top = table.max() if max_grade is None else gain_table(gain, max_grade)[: max_grade + 1].max()
    return r.gains(table) / (top + 1.0)  # top: the highest gain of grades 0..gmax (any gain map)


ERR_PARAMS = (
    Param("stop", "exp", str, "exp: (2^g-1)/2^gmax (Chapelle et al.); linear: gain/(gmax+1) (NTCIREVAL)",
          choices=("exp", "linear")),
    Param("max_grade", None, int, "gmax; default: the highest grade of the qrels", within=f"[1, {MAX_GRADE}]"),
    PROBABILITY_GAIN,
)


@register("ERR", params=ERR_PARAMS, cutoff=K)
def err(r: Rankings, stop="exp", max_grade=None, gain="linear", k=None) -> np.ndarray:
    """Expected reciprocal rank (Chapelle et al., CIKM 2009): ERR = Σ_r (1/r) R_r Π_{k<r} (1 − R_k).

    Stop probability R_r: ``stop=exp`` (2^{i_r} − 1) / 2^{gmax} (gdeval fixes gmax = 4: pass ``max_grade=4``);
    ``stop=linear`` g(i_r) / (g_max + 1), NTCIREVAL's form. gmax defaults to the highest grade of the qrels.
    """
    p = _err_stop_probability(r, gain, stop, max_grade) * _upto(r, k)
    return _err_sum(p, r.ranks)


def _err_sum(p: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    survive = np.cumprod(1.0 - p, axis=-1)
    before = np.concatenate([np.ones(p.shape[:-1] + (1,)), survive[..., :-1]], axis=-1)
    return (p * before / ranks).sum(-1)


@register("nERR", params=ERR_PARAMS, cutoff=K)
def nerr(r: Rankings, stop="exp", max_grade=None, gain="linear", k=None) -> np.ndarray:
    """Normalised ERR: ERR@k / ERR@k of the ideal list (NTCIREVAL nERR@l)."""
    value = err(r, stop=stop, max_grade=max_grade, gain=gain, k=k)
    ideal_grades = r.ideal_grades()
    ideal = Rankings(ideal_grades, np.broadcast_to((ideal_grades > 0).sum(-1), ideal_grades.shape[:-1]),
                     r.counts, r.rel_level)
    best = err(ideal, stop=stop, max_grade=max_grade, gain=gain, k=k)
    return _div(value, np.broadcast_to(best, r.shape))


def _check_bool(value) -> "str | None":
    return None if isinstance(value, (bool, np.bool_)) else "is not true or false"


PERSISTENCE = Param("p", 0.8, float, "persistence", within="(0, 1)")
RBP_PARAMS = (
    PERSISTENCE,
    Param("graded", False, parse_bool, "graded: gain/max gain; else binary", check=_check_bool,
          domain="true or false"),
    PROBABILITY_GAIN,
    Param("max", "scale", str,
          "graded normaliser: the highest gain of the grade scale (NTCIREVAL) or of the topic's judged documents "
          "(trec_eval 10's rbp)", choices=("scale", "topic")),
)


def _rbp_relevance(r: Rankings, graded: bool, gain, max: str = "scale") -> np.ndarray:
    if not graded:
        return r.relevant().astype(np.float64)
    table = gain_table(gain, r.max_grade)
    if max == "topic":
        judged = r.counts > 0  # (..., G + 1): grades the topic's qrels hold
        top = np.where(judged, table[: r.counts.shape[-1]], 0.0).max(-1)
        top = np.broadcast_to(top, r.shape)[..., None]
        return np.divide(r.gains(table), top, out=np.zeros(r.grades.shape), where=top > 0)
    return r.gains(table) / np.maximum(table.max(), 1e-300)


def _powers(r: Rankings, p: float) -> np.ndarray:
    """p^(r-1) at ranks 1..D, each the previous times p (as trec_eval's loop multiplies), and p^D last: (D + 1,)."""
    return np.concatenate([[1.0], np.cumprod(np.full(r.depth, p))])


@register("RBP", params=RBP_PARAMS, cutoff=K)
def rbp(r: Rankings, p=0.8, graded=False, gain="linear", max="scale", k=None) -> np.ndarray:
    """Rank-biased precision (Moffat & Zobel, TOIS 2008): RBP = (1 − p) Σ_r rel_r p^{r−1}.

    Binary by default (rel_r = I(r)); ``graded=true`` uses rel_r = g(i_r) / g_max with g_max the highest gain of
    the scale (NTCIREVAL) or, with ``max=topic``, of the topic's judged documents (trec_eval 10's ``rbp``, which
    is ``RBP(p=0.9,graded=true,max=topic)`` and ignores ``-l``). The sum is taken rank after rank with p^{r−1} as
    repeated products, trec_eval's arithmetic to the last bit.
    """
    relevance = (_rbp_relevance(r, graded, gain, max) * _upto(r, k)).reshape(-1, r.depth)
    lists, rank = np.nonzero(relevance)  # the terms added, in rank order (bincount adds in order)
    terms = relevance[lists, rank] * _powers(r, p)[rank]
    return (1.0 - p) * np.bincount(lists, weights=terms, minlength=relevance.shape[0]).reshape(r.shape)


@register("RBP_resid", cutoff=K, params=(
    PERSISTENCE,
    Param("fully_judged", "tail", str, "residual of a list without unjudged documents: p^n for the ranks beyond "
          "its end (Moffat & Zobel), or 0 (trec_eval 10's rbp_resid)", choices=("tail", "zero")),
))
def rbp_residual(r: Rankings, p=0.8, fully_judged="tail", k=None) -> np.ndarray:
    """RBP residual (Moffat & Zobel 2008): the weight of unjudged ranks within the list plus p^n for the ranks
    beyond its end — how much RBP could still grow if every unknown document were relevant:
    p^n + (1 − p) Σ_{unjudged r <= n} p^{r−1}, in trec_eval's order of operations.

    trec_eval 10's ``rbp_resid`` prints 0 for a list without unjudged documents (it adds p^n only when it has
    seen an unjudged one): ``fully_judged=zero``, which its alias binds.
    """
    n = r.n_ret if k is None else np.minimum(r.n_ret, k)
    powers = _powers(r, p)
    unknown = (r.grades < 0) & r.valid() & _upto(r, k)
    lists, rank = np.nonzero(unknown.reshape(-1, r.depth))
    residual = powers[n] + (1.0 - p) * np.bincount(lists, weights=powers[rank],
                                                   minlength=unknown[..., 0].size).reshape(r.shape)
    if fully_judged == "zero":
        return np.where(unknown.any(-1), residual, 0.0)
    return residual


# --------------------------------------------------------------------------------------------- NCP


@register(
    "NCP",
    params=(
        Param("stop", "uniform", str, "stopping distribution over relevant docs",
              choices=("uniform", "first", "geometric")),
        Param("q", 0.5, float, "ratio of the geometric stopping distribution", within="(0, 1]"),
    ),
)
def ncp(r: Rankings, stop="uniform", q=0.5) -> np.ndarray:
    """Normalised cumulative precision (Robertson, SIGIR 2008): NCP = Σ_n p_s(n) · P@n.

    The user stops at a relevant document drawn from a stopping distribution p_s over the R relevant documents
    (the k-th relevant in rank order; unretrieved relevant documents contribute precision 0):
    ``uniform`` p_s = 1/R gives AP; ``first`` (all mass on the first relevant) gives RR;
    ``geometric`` p_s(k) ∝ q^{k−1}, k = 1..R, normalised over the R relevant documents.
    """
    if stop == "uniform":
        return average_precision(r)
    prec = precision_at_relevant(r)
    kth = np.where(r.relevant(), r.cum_relevant(), 0)  # which relevant document this is (1-based), 0 if none
    if stop == "first":
        weight = (kth == 1).astype(np.float64)
        return (prec * weight).sum(-1)
    R = r.num_rel().astype(np.float64)
    norm = _div(1.0 - q, 1.0 - q**R) if q != 1 else _div(1.0, R)
    weight = np.where(kth > 0, q ** np.maximum(kth - 1, 0), 0.0) * norm[..., None]
    return (prec * weight).sum(-1)
