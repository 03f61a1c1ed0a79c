"""Kishida's multi-grade indicators (Kishida, NII Technical Report NII-2005-014E, §4).

x_k is the grade at rank k of the list (n documents), y_k the grade at rank k of the ideal list (all judged
relevant documents sorted by grade), I(x) = 1[x > 0] (here: grade >= rel_level). The nDCG average v_D is
:func:`meta_eval.measures.graded.average_ndcg` and v_Q is :func:`meta_eval.measures.graded.q_measure` (β = 1).
"""

from __future__ import annotations

import numpy as np

from meta_eval.measures.binary import _div
from meta_eval.measures.registry import register
from meta_eval.model.rankings import Rankings


def _x(r: Rankings) -> np.ndarray:
    """Grades of the list as float, 0 for unjudged and padding."""
    return r.cached("x", lambda: np.maximum(r.grades, 0).astype(np.float64))


def _y(r: Rankings, width: int | None = None) -> np.ndarray:
    """Ideal grades y_k, padded with zeros (or cut) to ``width`` ranks."""
    ideal = r.ideal_grades().astype(np.float64)
    if width is None:
        return ideal
    if ideal.shape[-1] < width:
        pad = np.zeros(ideal.shape[:-1] + (width - ideal.shape[-1],))
        ideal = np.concatenate([ideal, pad], axis=-1)
    return ideal[..., :width]


def _within_n(r: Rankings) -> np.ndarray:
    return r.valid()


@register("SR", aliases=("vS", "v_S"))
def sliding_ratio(r: Rankings) -> np.ndarray:
    """Sliding ratio over the whole list (Pollack 1968; Kishida Eq. 26): v_S = Σ_{k<=n} x_k / Σ_{k<=n} y_k."""
    y = _y(r, r.depth) * _within_n(r)
    return _div(_x(r).sum(-1), y.sum(-1))


@register("MSR", aliases=("vS'", "v_S'", "vS_prime"))
def modified_sliding_ratio(r: Rankings) -> np.ndarray:
    """Modified sliding ratio (Sagara; Kishida Eq. 27): v_S' = Σ_{k<=n} x_k / k  /  Σ_{k<=n} y_k / k."""
    y = _y(r, r.depth) * _within_n(r)
    return _div((_x(r) / r.ranks).sum(-1), (y / r.ranks).sum(-1))


@register("WAP", aliases=("vW", "v_W"))
def weighted_average_precision(r: Rankings) -> np.ndarray:
    """Weighted average precision (Kando et al.; Kishida Eq. 34):
    v_W = (1/R) Σ_{i<=n} I(x_i) Σ_{k<=i} x_k / Σ_{k<=i} y_k."""
    y_cum = np.cumsum(_y(r, r.depth), axis=-1)
    ratio = _div(np.cumsum(_x(r), axis=-1), y_cum)
    return _div(np.where(r.relevant(), ratio, 0.0).sum(-1), r.num_rel())


@register("GenAP", aliases=("vG", "v_G"))
def generalized_average_precision(r: Rankings) -> np.ndarray:
    """Kishida's generalised average precision (Eq. 42):
    v_G = Σ_{i<=n} (I(x_i)/i) Σ_{k<=i} x_k  /  Σ_{i<=N} (I(y_i)/i) Σ_{k<=i} y_k, the denominator over the whole
    ideal list. Binary grades give AP."""
    num = np.where(r.relevant(), np.cumsum(_x(r), axis=-1) / r.ranks, 0.0).sum(-1)
    y = _y(r)
    ranks = np.arange(1, y.shape[-1] + 1, dtype=np.float64)
    den = np.where(y >= max(r.rel_level, 1), np.cumsum(y, axis=-1) / ranks, 0.0).sum(-1)
    return _div(num, np.broadcast_to(den, r.shape))


@register("RHL", undefined="the list holds no relevant document (no relevance mass to take the median of)")
def ranked_half_life(r: Rankings) -> np.ndarray:
    """Ranked half-life (Borlund & Ingwersen 1998; Kishida §4.1.3): the median rank of the relevance mass of the
    list, as a median for grouped data with rank classes (r−1, r]: RHL = (r* − 1) + (T/2 − F(r* − 1)) / x_{r*},
    where T = Σ x_k, F the cumulative mass and r* the first rank with F(r*) >= T/2. NaN if the list holds no
    relevant document. Lower is better. Kishida's example (0.5, 1, 1, 0.5 at ranks 1, 3, 9, 14) gives 3.0."""
    x = _x(r)
    cum = np.cumsum(x, axis=-1)
    half = cum[..., -1:] / 2.0
    star = np.argmax(cum >= half, axis=-1)  # 0-based index of r*
    before = np.where(star > 0, np.take_along_axis(cum, np.maximum(star - 1, 0)[..., None], -1)[..., 0], 0.0)
    mass = np.take_along_axis(x, star[..., None], -1)[..., 0]
    value = star + _div(half[..., 0] - before, mass)
    return np.where(cum[..., -1] > 0, value, np.nan)


@register("GP")
def generalized_precision(r: Rankings) -> np.ndarray:
    """Generalised precision (Kekäläinen & Järvelin 2002; Kishida §4.1.4): gP = (1/n) Σ_{k<=n} x_k / c."""
    return _div(_x(r).sum(-1) / max(r.max_grade, 1), r.n_ret)


@register("GR")
def generalized_recall(r: Rankings) -> np.ndarray:
    """Generalised recall (Kekäläinen & Järvelin 2002): gR = Σ_{k<=n} x_k / Σ_{judged} grade."""
    total = (r.counts * np.arange(r.counts.shape[-1])).sum(-1)
    return _div(_x(r).sum(-1), np.broadcast_to(total, r.shape))
