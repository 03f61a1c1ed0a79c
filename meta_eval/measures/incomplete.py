"""Measures for incomplete judgments: inferred AP, and how much of a ranking is judged.

Two kinds of missing judgment, as in trec_eval: a retrieved document absent from the qrels (not in the pool,
:data:`~meta_eval.model.rankings.UNJUDGED`, trec_eval's ``RELVALUE_NONPOOL``) and one the qrels list with a negative grade
(in the pool but not judged, e.g. a sampled pool; :data:`~meta_eval.model.rankings.JUDGED_NEG`, ``RELVALUE_UNJUDGED``).
"""

from __future__ import annotations

import numpy as np

from meta_eval.measures.binary import (K, _div, at_relevant, cutoff, judged_nonrelevant_above, relevant_ranks,
                                      sum_at_relevant)
from meta_eval.measures.registry import register
from meta_eval.model.rankings import JUDGED_NEG, UNJUDGED, Rankings

INFAP_EPSILON = 1e-5  # trec_eval's INFAP_EPSILON


@register("infAP")
def inferred_ap(r: Rankings) -> np.ndarray:
    """Inferred AP (Yilmaz & Aslam, CIKM 2006), trec_eval's ``infAP``.

    infAP = (1/R) Σ_{judged relevant at rank j+1} [1/(j+1) + (j/(j+1)) · ((a+n+u)/j) · ((a+ε)/(a+n+2ε))] (the term is
    1 at rank 1), with a, n, u the relevant, judged non-relevant and pooled-but-unjudged (negative grade) documents
    above it, ε = 1e-5. Documents outside the pool (absent from the qrels) count as ranks but are otherwise
    skipped; with complete judgments infAP = AP.
    """
    _, ranks = relevant_ranks(r)  # terms only where a relevant document is
    a = at_relevant(r, r.cum_relevant()) - 1.0  # relevant above
    n = at_relevant(r, judged_nonrelevant_above(r)).astype(np.float64)
    u = at_relevant(r, np.cumsum(r.grades == JUDGED_NEG, axis=-1, dtype=np.int32)).astype(np.float64)
    j = ranks.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        later = 1.0 / (j + 1.0) + (j / (j + 1.0)) * ((a + n + u) / j) * ((a + INFAP_EPSILON)
                                                                          / (a + n + 2 * INFAP_EPSILON))
    return _div(sum_at_relevant(r, np.where(j == 0, 1.0, later)), r.num_rel())


@register("Judged", cutoff=K)
def judged(r: Rankings, k: int | None = None) -> np.ndarray:
    """Judgment rate at k (ir_measures' ``Judged@k``, from OpenNIR): the fraction of the top min(k, n) documents
    that appear in the qrels (with any grade, negative included); the whole list without a cutoff."""
    known = (r.grades != UNJUDGED) & r.valid()
    top = r.n_ret if k is None else np.minimum(r.n_ret, k)
    return _div(r.count_at(np.cumsum(known, axis=-1), top), top)


@register("Unjudged", cutoff=cutoff(10), aliases=("unj",))
def unjudged(r: Rankings, k: int) -> np.ndarray:
    """Unjudged at k (trec_eval 10's ``unj_k``): documents in the top k that are not in the qrels or have a
    negative grade, divided by k (ranks past the end of a shorter list count as judged)."""
    running = r.cached("unjudged_running",
                       lambda: np.cumsum((r.grades == UNJUDGED) | (r.grades == JUDGED_NEG), axis=-1, dtype=np.int32))
    return r.count_at(running, k) / float(k)
