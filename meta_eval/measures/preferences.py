"""Preference measures (trec_eval's ``prefs_*``, Buckley): how many of the users' preferences a ranking fulfils.

Each function receives a :class:`meta_eval.model.preferences.PreferenceLists` (one topic, every run) and returns one
value per run. For a preference A > B of a judgment group (JG):

* fulfilled, both retrieved: A ranked above B; possible, both retrieved: both retrieved (``_ret`` measures);
* implied: exactly one retrieved, fulfilled when it is A (``_imp`` measures add these);
* neither retrieved: possible, never fulfilled (the plain measures add these).

``simp`` counts every preference alike; ``avgjg`` averages the ratio over JGs (each user alike); ``pair`` averages
over document pairs the share of JGs whose preference on the pair the ranking follows. Summaries are means over
topics, but the ``prefs_num_*`` counts, which are sums. Semantics and arithmetic are trec_eval 10's
(``m_prefs_*.c``), including its quirks where noted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from meta_eval.measures.registry import register

if TYPE_CHECKING:  # pragma: no cover - the model (Arrow) is imported where preference judgments are read
    from meta_eval.model.preferences import PreferenceLists


def _total(lists: PreferenceLists, *keys: str) -> np.ndarray:
    """Σ over the topic's groups of the named counts."""
    total = np.zeros(lists.shape, dtype=np.int64)
    for g in range(len(lists.topic.groups)):
        counts = lists.counts(g)
        for key in keys:
            total = total + counts[key]
    return total


FULFILLED = {"all": ("ful_ret", "ful_imp"), "ret": ("ful_ret",), "imp": ("ful_ret", "ful_imp")}
POSSIBLE = {"all": ("poss_ret", "poss_imp", "notoccur"), "ret": ("poss_ret",), "imp": ("poss_ret", "poss_imp")}


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den != 0)


@register("prefs_num_prefs_poss", aggregate="sum", integer=True, qrels_only=True, input="preferences")
def num_prefs_possible(lists: PreferenceLists) -> np.ndarray:
    """Preferences of all judgment groups, retrieved or not; summed over topics (trec_eval
    ``prefs_num_prefs_poss``)."""
    return _total(lists, *POSSIBLE["all"]).astype(np.float64)


@register("prefs_num_prefs_ful", aggregate="sum", integer=True, input="preferences")
def num_prefs_fulfilled(lists: PreferenceLists) -> np.ndarray:
    """Preferences fulfilled, implied ones included; summed over topics (trec_eval ``prefs_num_prefs_ful``)."""
    return _total(lists, *FULFILLED["all"]).astype(np.float64)


@register("prefs_num_prefs_ful_ret", aggregate="sum", integer=True, input="preferences")
def num_prefs_fulfilled_retrieved(lists: PreferenceLists) -> np.ndarray:
    """Preferences fulfilled among retrieved documents; summed over topics (trec_eval
    ``prefs_num_prefs_ful_ret``)."""
    return _total(lists, *FULFILLED["ret"]).astype(np.float64)


def _simple(lists: PreferenceLists, which: str) -> np.ndarray:
    """fulfilled / possible over every preference of the topic; 0 without a possible one."""
    return _ratio(_total(lists, *FULFILLED[which]), _total(lists, *POSSIBLE[which]))


def _per_group(lists: PreferenceLists, which: str) -> np.ndarray:
    """Mean over the topic's JGs of fulfilled / possible (a JG without a possible preference adds 0); 0 unless
    the sum is positive."""
    total = np.zeros(lists.shape)
    for g in range(len(lists.topic.groups)):
        counts = lists.counts(g)
        ful = sum(counts[key] for key in FULFILLED[which])
        poss = sum(counts[key] for key in POSSIBLE[which])
        total = total + _ratio(ful, poss)
    return np.where(total > 0, total / max(len(lists.topic.groups), 1), 0.0)


def _pairs(lists: PreferenceLists, which: str) -> np.ndarray:
    """Mean over document pairs of the share of JGs whose preference on the pair the ranking follows (the
    document ranked first preferred); pairs of unretrieved documents count (with share 0) in ``all`` only."""
    topic = lists.topic
    total = np.zeros(lists.shape)
    n_pairs = np.zeros(lists.shape)
    for rows, ru, rv, njr in lists.pair_ranks(topic.u, topic.v):
        first_u = ru < rv
        share = np.where(first_u, topic.n_uv, topic.n_vu) / (topic.n_uv + topic.n_vu)
        ret_first, ret_both = np.minimum(ru, rv) < njr, np.maximum(ru, rv) < njr
        counted = {"all": ret_first, "imp": ret_first, "ret": ret_both}[which]
        total[rows] = np.where(counted, share, 0.0).sum(-1)
        n_pairs[rows] = counted.sum(-1) if which != "all" else len(topic.u)
    return _ratio(total, n_pairs)


_KINDS = {
    "simp": (_simple, "Preferences fulfilled / preferences possible, a preference of two JGs counted twice"),
    "avgjg": (_per_group, "Fulfilled / possible within each judgment group, averaged over the topic's groups: each "
                          "user weighs alike"),
    "pair": (_pairs, "Mean over document pairs of the share of judgment groups whose preference the ranking follows"),
}
_SCOPES = {"": ("all", "; a preference neither document of which is retrieved fails"),
           "_ret": ("ret", ", over pairs of retrieved documents only"),
           "_imp": ("imp", ", over pairs with at least one retrieved document")}


def _declare(kind: str, suffix: str) -> None:
    """Register trec_eval's ``prefs_<kind><suffix>``: one of the ratios over one scope of pairs."""
    compute, what = _KINDS[kind]
    which, scope = _SCOPES[suffix]
    name = f"prefs_{kind}{suffix}"

    def measure(lists: PreferenceLists) -> np.ndarray:
        return compute(lists, which)

    measure.__name__ = measure.__qualname__ = name
    measure.__doc__ = f"{what}{scope} (trec_eval ``{name}``)."
    register(name, input="preferences")(measure)


for _kind in ("simp", "pair", "avgjg"):
    for _suffix in _SCOPES:
        _declare(_kind, _suffix)


# --------------------------------------------------------------------------------------------- Rnonrel


@register("prefs_avgjg_Rnonrel", input="preferences")
def prefs_avgjg_rnonrel(lists: PreferenceLists) -> np.ndarray:
    """``prefs_avgjg`` with each group's non-relevant documents (level 0) brought to R, its relevant ones
    (trec_eval ``prefs_avgjg_Rnonrel``, akin to bpref): with N <= R non-relevant documents, R(R − N) fulfilled
    preferences are added for the retrieved relevant ones; with more, only the first R non-relevant documents in
    rank order are kept and the preferences counted again.

    As in trec_eval 10, the recount compares the whole lowest class (not only the relevant classes) with the R
    documents kept from it, itself included; a 0/0 ratio of a group makes the topic's value 0."""
    return _rnonrel(lists, retrieved_only=False)


@register("prefs_avgjg_Rnonrel_ret", input="preferences")
def prefs_avgjg_rnonrel_ret(lists: PreferenceLists) -> np.ndarray:
    """``prefs_avgjg_Rnonrel`` over retrieved documents: R and N count the retrieved relevant and non-relevant
    documents, and only pairs of retrieved documents count (trec_eval ``prefs_avgjg_Rnonrel_ret``; as there, the
    possible preferences added are (R − N) times the group's relevant documents, retrieved or not)."""
    return _rnonrel(lists, retrieved_only=True)


def _rnonrel(lists: PreferenceLists, retrieved_only: bool) -> np.ndarray:
    total = np.zeros(lists.shape)
    for g, group in enumerate(lists.topic.groups):
        c = lists.counts(g)
        R, N = (c["rel_ret"], c["nonrel_ret"]) if retrieved_only else (c["rel"], c["nonrel"])
        which = "ret" if retrieved_only else "all"
        ful = sum(c[key] for key in FULFILLED[which]) + c["rel_ret"] * (R - N)
        poss = sum(c[key] for key in POSSIBLE[which]) + c["rel"] * (R - N)
        recount = R < N
        if recount.any():
            r_ful, r_poss = _recount(lists, group, R, retrieved_only)
            ful, poss = np.where(recount, r_ful, ful), np.where(recount, r_poss, poss)
        with np.errstate(divide="ignore", invalid="ignore"):
            total = total + ful / poss.astype(np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(total > 0, total / max(len(lists.topic.groups), 1), 0.0)


def _recount(lists: PreferenceLists, group, keep: np.ndarray, retrieved_only: bool) -> tuple[np.ndarray, np.ndarray]:
    """trec_eval's ``recalculate``: (fulfilled, possible) per run with the group's non-relevant documents cut to
    the first ``keep`` in rank order."""
    if group.is_classes:
        return _recount_classes(lists, group, keep, retrieved_only)
    return _recount_relation(lists, group, retrieved_only)


def _recount_classes(lists: PreferenceLists, group, keep: np.ndarray, retrieved_only: bool):
    """Classes: pairs between the classes above the lowest, then every document of every class (the lowest one
    too, as trec_eval loops) against the first ``keep`` documents of the lowest class. A pair is fulfilled when
    the first document is retrieved and ranked above the second (``retrieved_only``: both retrieved)."""
    S = len(lists.n_ret)
    ful, poss = np.zeros(S, dtype=np.int64), np.zeros(S, dtype=np.int64)
    upper = group.classes[:-1]
    lowest = group.classes[-1]
    everyone = np.concatenate(group.classes)
    for s in range(S):
        rank, njr = lists.rank[s], lists.n_ret[s]
        for i, first in enumerate(upper):
            for second in upper[i + 1:]:
                f, p = _class_pairs(rank[first], rank[second], njr, retrieved_only)
                ful[s] += f
                poss[s] += p
        kept = np.sort(rank[lowest])[: int(keep[s])]
        if retrieved_only:
            kept = kept[kept < njr]
        f, p = _class_pairs(rank[everyone], kept, njr, retrieved_only)
        ful[s] += f
        poss[s] += p
    return ful, poss


def _class_pairs(first: np.ndarray, second: np.ndarray, njr: int, retrieved_only: bool) -> tuple[int, int]:
    """(fulfilled, pairs) of every document of ``first`` against every one of ``second`` (internal ranks)."""
    if retrieved_only:
        first = first[first < njr]
        second = second[second < njr]
    ordered = np.sort(second)
    above = len(ordered) - np.searchsorted(ordered, first, side="right")  # second documents ranked below each first
    fulfilled = np.where(first < njr, above, 0).sum() if not retrieved_only else above.sum()
    return int(fulfilled), len(first) * len(second)


def _recount_relation(lists: PreferenceLists, group, retrieved_only: bool):
    """Several sub-groups: the non-relevant documents from the (R+1)-th in rank order on are left out (R the
    group's relevant documents, retrieved or not; ``retrieved_only`` looks for it among the retrieved ranks),
    then the areas of trec_eval's preference array are counted again."""
    S = len(lists.n_ret)
    nonrel = np.flatnonzero(group.level == 0)
    R = int(np.count_nonzero(group.rel))
    ful, poss = np.zeros(S, dtype=np.int64), np.zeros(S, dtype=np.int64)
    for s in range(S):
        rank, njr = lists.rank[s], int(lists.n_ret[s])
        ranks = np.sort(rank[nonrel])
        limit = njr if retrieved_only else len(rank)
        ranks = ranks[ranks < limit]
        cut = ranks[R] if len(ranks) > R else limit
        out = np.zeros(len(rank), dtype=bool)
        out[nonrel] = rank[nonrel] >= cut
        keep = ~out[group.a] & ~out[group.b]
        ra, rb = rank[group.a][keep], rank[group.b][keep]
        ret_a, ret_b = ra < njr, rb < njr
        if retrieved_only:
            both = ret_a & ret_b
            f = int(np.count_nonzero(both & (ra < rb)))
            ful[s], poss[s] = f, int(np.count_nonzero(both))
        else:
            f = int(np.count_nonzero(ret_a & ((ra < rb) | ~ret_b)))
            ful[s], poss[s] = f, len(ra)
    return ful, poss
