"""Inferred and actual precision-recall curves, and the error between them (Aslam et al. 2005; GAP paper Sec. 4.1).

From a probability-at-rank distribution, the binary curve at relevance threshold l uses S_n(l) = P(G_n >= l):
the expected number of relevant documents in the top n is C_n = sum_{m<=n} S_m(l), so the inferred precision and
recall at rank n are C_n / n and C_n / R (R = judged documents with grade >= l). The actual curve uses the 0/1
indicators of the list.

Two error protocols (RMS of precision differences):

``"recall-changes"`` (default, the GAP paper's "points where recall changes")
    at each actual relevant document i = 1..k (rank n_i, actual precision i / n_i) the inferred curve is read at the
    same recall i / R: the fractional rank x_i where the piecewise-linear C (C_0 = 0) reaches i, giving precision
    i / x_i. With ``align="rank"`` the inferred precision is read at the same rank instead: C_{n_i} / n_i.
    Recall levels the inferred curve never reaches (only possible with qrels-count constraints) get precision 0.
``"11pt"``
    TREC interpolated precision at recall 0, 0.1, ..., 1 (max precision at any rank with recall >= r, 0 if r is
    never reached), for both curves (methods.md Sec. 1.3).

Lists with no relevant document retrieved have no recall-change points: their error is NaN.
"""

from __future__ import annotations

import numpy as np

from meta_eval.core.errors import InputError

RECALL_LEVELS = np.linspace(0.0, 1.0, 11)


def expected_precision_recall(S: np.ndarray, R: np.ndarray, lengths: np.ndarray | None = None):
    """Inferred precision and recall at each rank: C_n / n and C_n / R with C_n = sum_{m<=n} S_m.

    Parameters
    ----------
    S : (L, N) probability that the document at each rank is relevant (at the chosen threshold)
    R : (L,) number of judged relevant documents
    lengths : (L,), optional; precision is NaN past each list's end

    Returns
    -------
    precision, recall : (L, N) arrays
    """
    S = np.asarray(S, dtype=float)
    C = np.cumsum(S, axis=1)
    n = np.arange(1, S.shape[1] + 1)
    prec = C / n
    with np.errstate(invalid="ignore", divide="ignore"):  # R = 0: recall undefined (NaN/inf), as documented
        rec = C / np.asarray(R, dtype=float)[:, None]
    if lengths is not None:
        out = np.arange(S.shape[1])[None, :] >= np.asarray(lengths)[:, None]
        prec = np.where(out, np.nan, prec)
        rec = np.where(out, np.nan, rec)
    return prec, rec


_TOL = 1e-9  # a cumulative count within this of a target reaches it (the solver holds counts to 1e-9)


def _first_reaching(C: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per row, the first index m (0-based) with C[m] >= target - tol (C non-decreasing); N if none.

    Counted row by row (m = #{n : C[n] < target - tol}), so a row never affects another; rows with NaN (failed
    lists) come out as N. For a few targets per row (the 11 recall levels)."""
    C = np.nan_to_num(np.asarray(C, dtype=float), nan=-np.inf)
    return (C[:, :, None] < np.asarray(targets, dtype=float)[:, None, :] - _TOL).sum(axis=1)


def _first_reaching_counts(C: np.ndarray, top: int) -> np.ndarray:
    """(L, top + 1) table F[l, i] = first index m with C[l, m] >= i - tol, for every integer i = 0..top.

    Exact and O(L N): since i is an integer, C[n] < i - tol  <=>  floor(C[n] + tol) <= i - 1, so F[l, i] is the
    cumulative histogram of floor(C + tol) at i - 1. Rows with NaN (failed lists) never reach any i >= 1."""
    L, N = C.shape
    b = np.floor(np.nan_to_num(C, nan=-1.0) + _TOL)
    b = np.clip(b, -1, top).astype(np.int64) + 1  # shift: -1 (NaN) -> bucket 0, never reaching i >= 1
    hist = np.bincount((np.arange(L)[:, None] * (top + 2) + b).ravel(), minlength=L * (top + 2))
    cum = np.cumsum(hist.reshape(L, top + 2), axis=1)  # cum[l, j] = #{n : floor(C + tol) <= j - 1}
    out = np.zeros((L, top + 1), dtype=np.int64)
    out[:, 1:] = cum[:, 1 : top + 1]
    return out


def rms_recall_changes(S: np.ndarray, rel: np.ndarray, lengths: np.ndarray, R: np.ndarray,
                       align: str = "recall") -> np.ndarray:
    """RMS error between inferred and actual precision at the actual recall-change points (see module doc).

    Parameters
    ----------
    S : (L, N) inferred P(relevant) per rank
    rel : (L, N) bool, actual relevance of the documents in the list
    lengths : (L,) list lengths
    R : (L,) judged relevant documents (used only for the recall axis; the points are the same for any R)
    align : "recall" (default) or "rank"

    Returns
    -------
    (L,) RMS errors (NaN for lists without relevant documents)
    """
    if align not in ("recall", "rank"):
        raise InputError(f"align must be 'recall' or 'rank'; got {align!r}")
    S = np.asarray(S, dtype=float)
    L, N = S.shape
    inside = np.arange(N)[None, :] < np.asarray(lengths)[:, None]
    rel = np.asarray(rel, dtype=bool) & inside
    S = np.where(inside, S, 0.0)
    Cact = np.cumsum(rel, axis=1)
    ranks = np.arange(1, N + 1)[None, :]
    actual = np.where(rel, Cact / ranks, np.nan)  # precision at each relevant document
    C = np.cumsum(S, axis=1)
    if align == "rank":
        inferred = C / ranks
    else:
        # fractional rank where C reaches i (i = actual count at that relevant document)
        i = np.where(rel, Cact, 0)
        table = _first_reaching_counts(C, int(i.max(initial=0)))
        m = np.take_along_axis(table, i, axis=1)  # 0-based index where C[m] >= i
        i = i.astype(float)
        reach = m < N
        mc = np.minimum(m, N - 1)
        Cm = np.take_along_axis(C, mc, axis=1)
        Cprev = np.where(mc > 0, np.take_along_axis(C, np.maximum(mc - 1, 0), axis=1), 0.0)
        frac = np.where(Cm > Cprev, (i - Cprev) / np.where(Cm > Cprev, Cm - Cprev, 1.0), 1.0)
        x = mc + np.clip(frac, 0.0, 1.0)  # = (m) + frac, 1-based fractional rank
        inferred = np.where(reach & (x > 0), i / np.where(x > 0, x, 1.0), 0.0)
    err = np.where(rel, (inferred - actual) ** 2, 0.0)
    k = rel.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(k > 0, np.sqrt(err.sum(1) / np.maximum(k, 1)), np.nan)


def interpolated_precision(prec: np.ndarray, rec: np.ndarray, levels=RECALL_LEVELS) -> np.ndarray:
    """TREC interpolated precision: at each recall level r, max precision over ranks with recall >= r (0 if none).

    ``prec``/``rec`` are (L, N) with NaN past each list's end; returns (L, len(levels)).
    """
    prec = np.where(np.isnan(prec), 0.0, prec)
    rec = np.where(np.isnan(rec), -np.inf, rec)
    rec = np.maximum.accumulate(np.where(np.isfinite(rec), rec, -1.0), axis=1)
    suffix = np.maximum.accumulate(prec[:, ::-1], axis=1)[:, ::-1]
    L, N = prec.shape
    lv = np.broadcast_to(np.asarray(levels, dtype=float), (L, len(levels)))
    m = _first_reaching(rec, lv)
    return np.where(m < N, np.take_along_axis(suffix, np.minimum(m, N - 1), axis=1), 0.0)


def rms_11pt(S: np.ndarray, rel: np.ndarray, lengths: np.ndarray, R: np.ndarray) -> np.ndarray:
    """RMS error over the 11 standard recall levels between interpolated inferred and actual curves."""
    inside = np.arange(np.shape(S)[1])[None, :] < np.asarray(lengths)[:, None]
    rel = np.asarray(rel, dtype=bool) & inside
    p_inf, r_inf = expected_precision_recall(np.where(inside, S, 0.0), R, lengths)
    p_act, r_act = expected_precision_recall(rel.astype(float), R, lengths)
    e = interpolated_precision(p_inf, r_inf) - interpolated_precision(p_act, r_act)
    out = np.sqrt(np.mean(e**2, axis=1))
    return np.where(rel.sum(1) > 0, out, np.nan)


def pr_error(S: np.ndarray, rel: np.ndarray, lengths: np.ndarray, R: np.ndarray,
             protocol: str = "recall-changes", align: str = "recall") -> np.ndarray:
    """RMS error between inferred and actual PR curves by ``protocol`` ("recall-changes" or "11pt").

    Lists whose inferred distribution is not finite inside the list (failed MEM solutions) get NaN; every list is
    computed independently of the others in the batch."""
    S = np.asarray(S, dtype=float)
    inside = np.arange(S.shape[1])[None, :] < np.asarray(lengths)[:, None]
    failed = np.any(inside & ~np.isfinite(S), axis=1)
    S = np.where(failed[:, None], 0.0, S)
    if protocol == "recall-changes":
        out = rms_recall_changes(S, rel, lengths, R, align=align)
    elif protocol == "11pt":
        out = rms_11pt(S, rel, lengths, R)
    else:
        raise InputError(f"protocol must be 'recall-changes' or '11pt'; got {protocol!r}")
    return np.where(failed, np.nan, out)
