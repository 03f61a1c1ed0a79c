"""Precision-recall and ROC curves as tidy DataFrames, vectorised over :class:`~meta_eval.model.rankings.Rankings`.

Every function accepts rankings of any leading shape (``(L,)`` plain lists, ``(S, T)`` systems × topics, ...) and
returns one row per (list, point). The leading axes become index columns: ``list`` for one axis, ``system`` and
``topic`` for two, ``dim0, dim1, ...`` otherwise; pass ``index={"system": names, "topic": ids}`` to label them
(e.g. with ``collection.systems`` and ``collection.topics``).

Definitions
-----------
Binary (Manning, Raghavan & Schütze, *Introduction to IR*, §8.4): at rank k, precision C(k)/k and recall C(k)/R;
the interpolated precision at recall level r is p_interp(r) = max_{k: recall(k) >= r} precision(k) (Eq. 8.42
there), and the 11-point curve samples it at r = 0, 0.1, ..., 1 (0 when the level is never reached). ROC: true
positive rate C(k)/R against false positive rate (k − C(k))/N⁻ (§8.4), closed with a straight line to (1, 1) for
the documents below the list.

Graded (Robertson, Kanoulas & Yilmaz, SIGIR 2010, §3.2): with G(i) = Σ_{j<=i} g_j the probability that a document
of grade i is relevant to a random user,
graded recall@n = Σ_{m<=n} G(i_m) / Σ_i R_i G(i),
graded precision@n = (1/n) Σ_{m<=n} G(min(i_n, i_m)) / G(i_n) at each "pivot" rank n with i_n > 0,
and GAP = Σ_pivots graded precision@n × recall step G(i_n) / Σ_i R_i G(i).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from meta_eval.core.errors import InputError
from meta_eval.measures.binary import interpolated_precision_curve
from meta_eval.measures.graded import threshold_probabilities
from meta_eval.model.rankings import Rankings

__all__ = [
    "ELEVEN_LEVELS", "eleven_point_curve", "graded_pr_curve", "graded_pr_points", "interpolated_precision_at",
    "pr_curve", "roc_auc", "roc_curve",
]

ELEVEN_LEVELS = tuple(np.round(np.arange(11) / 10, 1))


# --------------------------------------------------------------------------------------------- tidy helpers


def _index_names(shape: tuple[int, ...], index: Mapping[str, Sequence] | None) -> list[tuple[str, np.ndarray]]:
    if index is not None:
        if len(index) != len(shape):
            raise InputError(f"index names {list(index)} do not match the rankings' leading shape {shape}")
        out = []
        for (name, labels), size in zip(index.items(), shape):
            labels = np.asarray(labels, dtype=object)
            if labels.shape != (size,):
                raise InputError(f"index {name!r} has {labels.size} labels, expected {size}")
            out.append((name, labels))
        return out
    names = ["list"] if len(shape) == 1 else ["system", "topic"] if len(shape) == 2 else [
        f"dim{i}" for i in range(len(shape))]
    return [(name, np.arange(size)) for name, size in zip(names, shape)]


def _tidy(shape, index, mask: np.ndarray, columns: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """Rows where ``mask`` (leading shape + one point axis) is true; columns broadcast to the mask's shape."""
    where = np.nonzero(mask)
    data = {name: labels[where[axis]] for axis, (name, labels) in enumerate(_index_names(shape, index))}
    for name, values in columns.items():
        data[name] = np.broadcast_to(values, mask.shape)[where]
    return pd.DataFrame(data)


def _binary_arrays(r: Rankings):
    valid = r.valid()
    cum = r.cum_relevant().astype(np.float64)
    R = r.num_rel().astype(np.float64)[..., None]
    recall = np.divide(cum, R, out=np.zeros_like(cum), where=R > 0)
    precision = cum / r.ranks
    return valid, cum, recall, precision


# --------------------------------------------------------------------------------------------- binary curves


def pr_curve(rankings: Rankings, index: Mapping[str, Sequence] | None = None) -> pd.DataFrame:
    """Binary precision-recall curve at every retrieved rank, with the interpolated precision.

    Returns
    -------
    pandas.DataFrame
        Index columns, then ``rank``, ``relevant`` (bool), ``recall`` C(k)/R, ``precision`` C(k)/k and
        ``interpolated`` max_{k' >= k} precision(k') (the thin line of Manning et al., Fig. 8.2).

    Examples
    --------
    >>> import meta_eval as me
    >>> pr_curve(me.Rankings.from_lists([[1, 0, 1]])).precision.round(3).tolist()
    [1.0, 0.5, 0.667]
    """
    valid, _, recall, precision = _binary_arrays(rankings)
    return _tidy(rankings.shape, index, valid, {
        "rank": rankings.ranks.astype(np.int64), "relevant": rankings.relevant(), "recall": recall,
        "precision": precision, "interpolated": interpolated_precision_curve(rankings),
    })


def interpolated_precision_at(rankings: Rankings, levels: Sequence[float] = ELEVEN_LEVELS) -> np.ndarray:
    """Interpolated precision p_interp(r) = max over ranks with recall >= r of the precision (Manning et al. Eq. 8.42).

    Returns an array ``(..., len(levels))``; 0 where the recall level is never reached (or R = 0). This is also
    trec_eval's ``iprec_at_recall`` (a level r needs ⌈r·R⌉ relevant documents).
    """
    levels_arr = np.asarray(levels, dtype=np.float64)
    if levels_arr.ndim != 1 or np.any((levels_arr < 0) | (levels_arr > 1)):
        raise InputError(f"recall levels must be a list of numbers in [0, 1], got {levels!r}")
    valid, cum, _, precision = _binary_arrays(rankings)
    R = rankings.num_rel().astype(np.float64)
    # recall(k) >= r  <=>  C(k) >= r·R (compared on counts, with a tolerance for the binary fraction r·R)
    need = levels_arr * R[..., None] - 1e-9  # (..., V)
    reached = (cum[..., None, :] >= need[..., None]) & valid[..., None, :] & (R[..., None, None] > 0)
    return np.where(reached, precision[..., None, :], 0.0).max(-1, initial=0.0)


def eleven_point_curve(
    rankings: Rankings, levels: Sequence[float] = ELEVEN_LEVELS, index: Mapping[str, Sequence] | None = None
) -> pd.DataFrame:
    """The 11-point interpolated precision table (Manning et al. §8.4, Table 8.1): columns index, ``recall``,
    ``precision``. Average ``precision`` over a list to get its 11-point interpolated average precision."""
    values = interpolated_precision_at(rankings, levels)
    mask = np.ones(values.shape, dtype=bool)
    return _tidy(rankings.shape, index, mask, {"recall": np.asarray(levels, dtype=np.float64), "precision": values})


def _roc_arrays(r: Rankings, n_nonrel):
    valid, cum, _, _ = _binary_arrays(r)
    R = r.num_rel().astype(np.float64)
    nonrel_seen = np.cumsum(valid & ~r.relevant(), axis=-1).astype(np.float64)
    if n_nonrel is None:
        neg = nonrel_seen[..., -1]
    else:
        neg = np.broadcast_to(np.asarray(n_nonrel, dtype=np.float64), r.shape)
        if np.any(neg < nonrel_seen[..., -1]):
            raise InputError("n_nonrel is smaller than the number of non-relevant documents retrieved")
    tpr = np.divide(cum, R[..., None], out=np.zeros_like(cum), where=R[..., None] > 0)
    fpr = np.divide(nonrel_seen, neg[..., None], out=np.zeros_like(cum), where=neg[..., None] > 0)
    # points: (0, 0) at rank 0, one per retrieved rank, then (1, 1) for the rest of the collection
    zeros = np.zeros(r.shape + (1,))
    ones = np.ones(r.shape + (1,))
    last_idx = np.maximum(r.n_ret - 1, 0)[..., None]
    fpr_last = np.where(r.n_ret[..., None] > 0, np.take_along_axis(fpr, last_idx, -1), 0.0)
    tpr_last = np.where(r.n_ret[..., None] > 0, np.take_along_axis(tpr, last_idx, -1), 0.0)
    # beyond the list every rank repeats the last point, so the closure segment starts there
    fpr = np.where(valid, fpr, fpr_last)
    tpr = np.where(valid, tpr, tpr_last)
    return np.concatenate([zeros, fpr, ones], -1), np.concatenate([zeros, tpr, ones], -1)


def roc_curve(
    rankings: Rankings, n_nonrel=None, index: Mapping[str, Sequence] | None = None
) -> pd.DataFrame:
    """ROC curve of each ranking (Manning et al. §8.4, Fig. 8.4): true positive rate (recall) C(k)/R against false
    positive rate (k − C(k))/N⁻.

    Parameters
    ----------
    n_nonrel : int or array, optional
        N⁻, the number of non-relevant documents in the collection (broadcast to the leading shape). Default: the
        non-relevant documents retrieved, so the curve reaches FPR = 1 at the end of the list.

    Returns
    -------
    pandas.DataFrame
        Index columns, ``rank`` (0 for the origin, n + 1 for the closing point (1, 1) that stands for the unranked
        rest of the collection in random order), ``fpr``, ``tpr``.
    """
    fpr, tpr = _roc_arrays(rankings, n_nonrel)
    n = rankings.n_ret[..., None]
    ranks = np.arange(rankings.depth + 2)
    mask = (ranks <= n) | (ranks == rankings.depth + 1)
    rank_col = np.where(ranks == rankings.depth + 1, n + 1, ranks)
    return _tidy(rankings.shape, index, mask, {"rank": rank_col, "fpr": fpr, "tpr": tpr})


def roc_auc(rankings: Rankings, n_nonrel=None) -> np.ndarray:
    """Area under the ROC curve of :func:`roc_curve` (trapezoidal rule), one value per list.

    For a ranking that holds every document of the collection this is the probability that a random relevant
    document is ranked above a random non-relevant one (the Mann-Whitney statistic).
    """
    fpr, tpr = _roc_arrays(rankings, n_nonrel)
    return np.trapezoid(tpr, fpr, axis=-1)


# --------------------------------------------------------------------------------------------- graded curves


def graded_pr_points(rankings: Rankings, g: Sequence[float] | None = None) -> dict[str, np.ndarray]:
    """Graded recall, precision and recall step at every rank, ``(..., D)`` arrays (GAP paper §3.2).

    Returns a dict with ``pivot`` (bool: grade > 0 and retrieved), ``recall`` (graded recall@n at every rank),
    ``precision`` (graded precision@n, NaN where n is not a pivot), ``step`` (recall step at pivots, else 0).
    ``(precision * step).sum(-1)`` (NaN as 0) is GAP.
    """
    r = rankings
    gvec = threshold_probabilities(None if g is None else tuple(g), r.max_grade)
    G = np.concatenate([[0.0], np.cumsum(gvec)])  # G[i] = Σ_{j<=i} g_j, G[0] = 0
    grades = np.clip(r.grades, 0, r.max_grade)  # codes < 0 (unjudged, padding) count as grade 0
    denom = (np.broadcast_to(r.counts, r.shape + (r.max_grade + 1,)) * G).sum(-1)[..., None]
    weight = G[grades]
    recall = np.divide(np.cumsum(weight, -1), denom, out=np.zeros(weight.shape), where=denom > 0)
    # Σ_m G(min(i_n, i_m)) = Σ_j g_j [i_n >= j] C_j(n)
    num = np.zeros(weight.shape)
    for j, gj in enumerate(gvec, start=1):
        if gj:
            num += gj * (grades >= j) * np.cumsum(grades >= j, -1)
    pivot = (grades > 0) & r.valid() & (weight > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(pivot, num / (r.ranks * weight), np.nan)
    step = np.divide(weight, denom, out=np.zeros(weight.shape), where=pivot & (denom > 0))
    return {"pivot": pivot, "recall": recall, "precision": precision, "step": step}


def graded_pr_curve(
    rankings: Rankings, g: Sequence[float] | None = None, index: Mapping[str, Sequence] | None = None
) -> pd.DataFrame:
    """Graded precision-recall curve (GAP paper §3.2): one row per pivot (a retrieved document of grade > 0).

    Parameters
    ----------
    g : sequence of float, optional
        Threshold probabilities g_1..g_c (sum 1); default uniform, as the ``GAP`` measure.

    Returns
    -------
    pandas.DataFrame
        Index columns, ``rank``, ``grade``, ``recall`` (graded recall@n), ``precision`` (graded precision@n),
        ``step`` (recall step). With binary grades this is the binary PR curve at the relevant ranks.
    """
    pts = graded_pr_points(rankings, g)
    return _tidy(rankings.shape, index, pts["pivot"], {
        "rank": rankings.ranks.astype(np.int64), "grade": rankings.grades.astype(np.int64),
        "recall": pts["recall"], "precision": pts["precision"], "step": pts["step"],
    })
