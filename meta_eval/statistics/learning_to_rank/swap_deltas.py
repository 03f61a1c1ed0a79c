"""Swap deltas: the change ΔM(a, b) of a metric when the documents at ranks a and b of a list trade places.

LambdaRank / LambdaMART scale each pair's RankNet gradient by |ΔM| (Burges et al. 2006; Wu et al. 2010). Closed
forms, all pairs of a block of lists at once (``(B, n, n)`` arrays, O(n²) per list):

- nDCG (any gain, discount, cutoff k): ΔDCG(a, b) = (g(i_a) − g(i_b)) (d(b) − d(a)), d = 0 past k, divided by the
  ideal DCG (Burges et al. 2006).
- AP at relevance level L: with rel_p = [i_p >= L], C_p the relevant documents at ranks <= p and
  S_p = Σ_{q<=p} rel_q / q, the numerator N = Σ_p rel_p C_p / p changes, for a < b, by
      C_b/b − C_a/a − (S_b − S_a)                 if rel_a = 1, rel_b = 0 (a relevant document moves down),
      (C_a + 1)/a − C_b/b + (S_{b−1} − S_a)       if rel_a = 0, rel_b = 1 (a relevant document moves up),
  and ΔAP = ΔN / R (Yue & Burges 2007 give the same count argument).
- GAP: its numerator is Σ_j g_j N_j, the g-weighted AP numerators at every threshold j (see
  :func:`meta_eval.measures.graded.graded_average_precision`), so ΔGAP = Σ_j g_j ΔN_j / Σ_j g_j R_{>=j}.

The closed forms are declared by measure family (:func:`register_swap_delta`) and built from the measure's own
parameter values (:func:`closed_form`). Any other metric meta-eval can score (registered or plug-in) takes the
general path: every swapped list of a query is scored as one batched :class:`~meta_eval.model.rankings.Rankings`,
in chunks that bound memory.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from meta_eval.measures.graded import _ideal_dcg, discounts, threshold_probabilities
from meta_eval.measures.registry import FamilyBuilders, Measure, gain_table
from meta_eval.measures.resolver import resolve_one
from meta_eval.model.rankings import Rankings

__all__ = ["closed_form", "general_pair_deltas", "general_swap_deltas", "pair_deltas", "register_swap_delta",
           "swap_deltas"]

#: Grade cells (rows × depth) of one batch of swapped lists on the general path.
GENERAL_CELLS = 4_000_000


def swap_deltas(measure, grades: np.ndarray, counts: np.ndarray, rel_level: int = 1) -> np.ndarray:
    """ΔM(a, b) = M(list with ranks a and b swapped) − M(list), for every pair of ranks of every list.

    Parameters
    ----------
    measure : str or Measure
        Any measure meta-eval can score. nDCG, AP and GAP (without cutoff for AP and GAP) use closed forms, the
        rest the general path.
    grades : ndarray (B, n)
        Grades in rank order, :data:`~meta_eval.model.rankings.PAD` past each list's end.
    counts : ndarray (B, G + 1)
        Documents per grade of each list's query.
    rel_level : int
        Binary relevance threshold.

    Returns
    -------
    ndarray (B, n, n)
        Symmetric, zero on the diagonal and wherever a rank is padding.
    """
    upper = pair_deltas(measure, grades, counts, rel_level)
    return upper + upper.transpose(0, 2, 1)


def pair_deltas(measure, grades: np.ndarray, counts: np.ndarray, rel_level: int = 1,
                top: int | None = None) -> np.ndarray:
    """ΔM(a, b) for the pairs a < b with a < ``top`` (LambdaMART's truncation level), as ``(B, top, n)``.

    Entry ``[i, a, b]`` is ΔM of swapping ranks a and b (0-based) of list i when a < b and both hold a document;
    every other entry is 0. Only ``top`` rows are computed: the cost is O(top · n) per list.
    """
    measure = resolve_one(measure)
    grades = np.asarray(grades)
    n = grades.shape[-1]
    top = n if top is None else max(0, min(int(top), n))
    form = closed_form(measure)
    if form is not None:
        out = form(grades, np.asarray(counts), rel_level, top)
    else:
        out = general_pair_deltas(measure, grades, counts, rel_level, top)
    valid = grades >= 0
    a, b = np.arange(top)[:, None], np.arange(n)[None, :]
    return np.where(valid[:, :top, None] & valid[:, None, :] & (a < b), out, 0.0)


#: ``delta(grades, counts, rel_level, top) -> (B, top, n)``: ΔM(a, b) for a < top, a < b (:func:`pair_deltas`)
Delta = Callable[[np.ndarray, np.ndarray, int, int], np.ndarray]
#: the closed-form deltas by measure family: builders of a :data:`Delta` from the measure's parameters
_DELTAS = FamilyBuilders()


def register_swap_delta(family: str) -> Callable[[Callable[..., Delta]], Callable[..., Delta]]:
    """Declare the closed-form swap delta of a measure family (:class:`~meta_eval.measures.registry.FamilyBuilders`),
    so that LambdaMART uses it instead of scoring every swapped list.

    The builder takes the measure's parameters that it covers, by their declared names (``k`` for a cutoff), and
    returns ``delta(grades, counts, rel_level, top)``; a measure with any other parameter away from its default
    takes the general path (:meth:`~meta_eval.measures.registry.Measure.arguments_for`).
    """
    return _DELTAS.register(family)


def closed_form(measure: Measure) -> Delta | None:
    """The closed-form delta function of ``measure`` (its family's, built from its parameters), or None when it takes
    the general path."""
    found = _DELTAS.bound(measure)
    return None if found is None else found[0](**found[1])


@register_swap_delta("nDCG")
def _ndcg(gain="linear", discount="log2", base=2.0, k=None) -> Delta:
    return lambda g, c, level, top: _ndcg_deltas(g, c, gain, discount, base, k, top)


@register_swap_delta("AP")
def _ap() -> Delta:  # no cutoff: AP@k takes the general path
    return lambda g, c, level, top: _ap_deltas(g, c, level, top)


@register_swap_delta("GAP")
def _gap(g=None) -> Delta:  # no cutoff: GAP@k takes the general path
    return lambda grades, c, level, top: _gap_deltas(grades, c, g, top)


def _ndcg_deltas(grades, counts, gain, discount, base, k, top) -> np.ndarray:
    r = Rankings(grades, (grades >= 0).sum(-1), counts)
    table = gain_table(gain, r.max_grade)
    g = r.gains(table)
    d = discounts(r.ranks, discount, base)
    if k is not None:
        d = d * (r.ranks <= k)
    ideal = _ideal_dcg(r, table, k, discount, base)
    delta = (g[:, :top, None] - g[:, None, :]) * (d[None, None, :] - d[None, :top, None])
    return np.divide(delta, ideal[:, None, None], out=np.zeros_like(delta), where=ideal[:, None, None] > 0)


def _ap_numerator_deltas(grades: np.ndarray, level: int, top: int) -> np.ndarray:
    """ΔN(a, b) of the AP numerator N = Σ_p rel_p C_p / p at threshold ``level``, for a < top, a < b."""
    rel = (grades >= level).astype(np.float64)
    n = grades.shape[-1]
    ranks = np.arange(1, n + 1, dtype=np.float64)
    C = np.cumsum(rel, axis=-1)
    S = np.cumsum(rel / ranks, axis=-1)
    Ca, Cb = C[:, :top, None], C[:, None, :]
    Sa, Sb = S[:, :top, None], S[:, None, :]
    ra, rb = rel[:, :top, None], rel[:, None, :]
    a, b = ranks[:top, None], ranks[None, :]
    down = Cb / b - Ca / a - (Sb - Sa)  # rel_a = 1, rel_b = 0
    up = (Ca + 1.0) / a - Cb / b + (Sb - rb / b - Sa)  # rel_a = 0, rel_b = 1
    return np.where(ra > rb, down, np.where(ra < rb, up, 0.0))


def _ap_deltas(grades, counts, level, top) -> np.ndarray:
    R = counts[:, max(level, 0):].sum(-1).astype(np.float64)
    num = _ap_numerator_deltas(grades, level, top)
    return np.divide(num, R[:, None, None], out=np.zeros_like(num), where=R[:, None, None] > 0)


def _gap_deltas(grades, counts, g, top) -> np.ndarray:
    gvec = threshold_probabilities(g, counts.shape[-1] - 1)
    num = np.zeros((grades.shape[0], top, grades.shape[-1]))
    den = np.zeros(grades.shape[0])
    for j, weight in enumerate(gvec, start=1):
        if weight == 0:
            continue
        num += weight * _ap_numerator_deltas(grades, j, top)
        den += weight * counts[:, j:].sum(-1)
    return np.divide(num, den[:, None, None], out=np.zeros_like(num), where=den[:, None, None] > 0)


def general_swap_deltas(measure, grades: np.ndarray, counts: np.ndarray, rel_level: int = 1) -> np.ndarray:
    """Symmetric ``(B, n, n)`` ΔM by brute force for any measure: the reference the closed forms are tested against."""
    upper = general_pair_deltas(measure, grades, counts, rel_level)
    return upper + upper.transpose(0, 2, 1)


def general_pair_deltas(measure, grades: np.ndarray, counts: np.ndarray, rel_level: int = 1,
                        top: int | None = None, cells: int = GENERAL_CELLS) -> np.ndarray:
    """ΔM(a, b), a < b, a < ``top``, by scoring every swapped list as one batched :class:`Rankings`, in chunks of
    at most ``cells`` grades. Works for any measure meta-eval can score, registered or plug-in."""
    measure = resolve_one(measure)
    grades = np.asarray(grades)
    n_lists, n = grades.shape
    top = n if top is None else max(0, min(int(top), n))
    n_ret = (grades >= 0).sum(-1)
    counts = np.broadcast_to(np.asarray(counts), (n_lists, np.shape(counts)[-1]))
    base = measure(Rankings(grades, n_ret, counts, rel_level))
    ia, ib = np.triu_indices(n, k=1)
    keep = ia < top
    ia, ib = ia[keep], ib[keep]
    out = np.zeros((n_lists, top, n))
    n_pairs = len(ia)
    if n_pairs == 0:
        return out
    rows_per_chunk = max(1, cells // max(n, 1))
    total = n_lists * n_pairs
    for start in range(0, total, rows_per_chunk):
        flat = np.arange(start, min(total, start + rows_per_chunk))
        q, p = np.divmod(flat, n_pairs)
        a, b = ia[p], ib[p]
        swapped = grades[q].copy()
        rows = np.arange(len(flat))
        swapped[rows, a], swapped[rows, b] = grades[q, b], grades[q, a]
        out[q, a, b] = measure(Rankings(swapped, n_ret[q], counts[q], rel_level)) - base[q]
    valid = grades >= 0
    return out * (valid[:, :top, None] & valid[:, None, :])
