"""Properties of GAP (Robertson, Kanoulas & Yilmaz, SIGIR 2010, §3) as checks and demonstrations.

- GAP reduces to AP when all users share one threshold t (g = e_t): :func:`check_reduces_to_ap`.
- Swapping a document with a lower-ranked one of smaller grade lowers GAP (never raises it): :func:`check_swap_
  monotonicity`; hence GAP is maximal (1 when every relevant document is ranked) at the ideal ordering:
  :func:`check_ideal_maximum`.
- Probabilistic interpretation (§3.1.2): GAP is the expected outcome of "pick a document relevant to a user at
  random (pivot, rank n); pick a document at or above n at random (rank m); output 1 if it is relevant to the same
  user": :func:`gap_monte_carlo` simulates it.
- GAP approximates the area under the graded precision-recall curve (§3.2): :func:`graded_pr_area`.

A note on step 1 of the experiment: the paper's probability of picking d_n, p_{d_n} = G(i_n) / Σ_i R_i G(i) with
G(i) = Σ_{j<=i} g_j, is that of drawing a (user, document) pair uniformly among the pairs where the document is
relevant to the user, i.e. the user's threshold t with probability ∝ g_t R_t (R_t the documents of grade >= t),
then a document uniformly among the R_t relevant ones — equivalently, draw t from g and a document of the topic
and start again until the document is relevant to that user. ``user="joint"`` (default) does this and its mean is
GAP. Drawing t from g and then a relevant pivot without that rejection (``user="prior"``) gives Σ_t g_t AP_t, which
differs from GAP unless the R_t are equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from meta_eval.measures.curves import graded_pr_points
from meta_eval.core.errors import InputError
from meta_eval.measures import make_measure
from meta_eval.measures.graded import threshold_probabilities
from meta_eval.model.rankings import Rankings
from meta_eval.core.params import rng as rng_from_seed

__all__ = [
    "GapMonteCarlo", "PRArea", "check_ideal_maximum", "check_reduces_to_ap", "check_swap_monotonicity",
    "gap_monte_carlo", "graded_pr_area",
]


def _gap(g):
    return make_measure("GAP", g=None if g is None else tuple(float(x) for x in g))


@dataclass
class GapMonteCarlo:
    """Monte-Carlo estimate of the §3.1.2 random experiment against the exact GAP.

    Attributes: ``mean`` and ``se`` (standard error) of the simulated outcome, ``exact`` (GAP), ``z`` =
    (mean − exact)/se, ``n_samples``, ``user`` (sampling of step 1), ``prior_mean`` = Σ_t g_t AP_t (the mean of
    the ``prior`` variant).
    """

    mean: float
    se: float
    exact: float
    z: float
    n_samples: int
    user: str
    prior_mean: float

    @property
    def within_3se(self) -> bool:
        return abs(self.mean - self.exact) <= 3 * self.se


def gap_monte_carlo(
    grades: Sequence[int],
    counts: Sequence[int],
    g: Sequence[float] | None = None,
    n_samples: int = 200_000,
    seed: int | None = 0,
    user: str = "joint",
) -> GapMonteCarlo:
    """Simulate GAP's random experiment for one ranked list.

    Parameters
    ----------
    grades : sequence of int
        Grades of the ranked documents (top first).
    counts : sequence of int
        Judged documents per grade 0..c for the topic (relevant documents not in the list are pivots whose
        outcome is 0, as AP counts an unretrieved relevant document with precision 0).
    g : sequence of float, optional
        Threshold probabilities g_1..g_c (default uniform).
    user : {"joint", "prior"}
        How step 1 draws the (user, pivot) pair; see the module notes.
    """
    if user not in ("joint", "prior"):
        raise InputError(f"user must be 'joint' or 'prior', got {user!r}")
    if n_samples < 2:
        raise InputError(f"n_samples must be >= 2, got {n_samples}")
    r = Rankings.from_lists([grades], [counts])
    grades_arr = np.clip(r.grades[0, : r.n_ret[0]], 0, None).astype(np.int64)
    c = r.max_grade
    gvec = threshold_probabilities(None if g is None else tuple(g), c)
    R_t = np.array([r.counts[0, t:].sum() for t in range(1, c + 1)], dtype=np.float64)
    if R_t.sum() == 0 or (gvec * R_t).sum() == 0:
        raise InputError("the topic has no document relevant to any user (no pivot to draw)")
    p_user = gvec * R_t if user == "joint" else np.where(R_t > 0, gvec, 0.0)
    p_user = p_user / p_user.sum()
    rng = rng_from_seed(seed, "GAP simulation")
    t = rng.choice(np.arange(1, c + 1), size=n_samples, p=p_user)  # user threshold
    # pivot: uniform among the R_t documents of grade >= t; the first C_t(n) of them are the retrieved ones
    k = np.floor(rng.random(n_samples) * R_t[t - 1]).astype(np.int64)  # 0-based index among the relevant
    cum = np.cumsum(grades_arr[None, :] >= np.arange(1, c + 1)[:, None], axis=1)  # (c, n): C_t(rank)
    retrieved_t = cum[:, -1] if len(grades_arr) else np.zeros(c, dtype=np.int64)
    retrieved = k < retrieved_t[t - 1]
    # rank (1-based) of the (k+1)-th retrieved document of grade >= t
    pivot_rank = _pivot_ranks(cum, t, k, retrieved)
    m = np.floor(rng.random(n_samples) * np.maximum(pivot_rank, 1)).astype(np.int64)  # 0-based rank at or above
    padded = np.concatenate([grades_arr, [0]])  # index 0 is safe when the list is empty
    outcome = (retrieved & (padded[m] >= t)).astype(np.float64)
    mean = float(outcome.mean())
    se = float(outcome.std(ddof=1) / np.sqrt(n_samples))
    exact = float(_gap(gvec)(r)[0])
    aps = np.array([make_measure("AP")(Rankings.from_lists([grades], [counts], rel_level=tt))[0]
                    for tt in range(1, c + 1)])
    prior_w = np.where(R_t > 0, gvec, 0.0)
    prior_mean = float((prior_w / prior_w.sum() * aps).sum())
    z = (mean - exact) / se if se > 0 else (0.0 if mean == exact else np.inf)
    return GapMonteCarlo(mean, se, exact, float(z), n_samples, user, prior_mean)


def _pivot_ranks(cum: np.ndarray, t: np.ndarray, k: np.ndarray, retrieved: np.ndarray) -> np.ndarray:
    """1-based rank of the (k+1)-th retrieved document of grade >= t (0 when the pivot is not retrieved)."""
    out = np.zeros(len(t), dtype=np.int64)
    for level in np.unique(t):
        sel = (t == level) & retrieved
        out[sel] = np.searchsorted(cum[level - 1], k[sel] + 1, side="left") + 1
    return out


@dataclass
class PRArea:
    """GAP against the area under the graded precision-recall curve (arrays of the rankings' leading shape).

    ``gap``: Σ graded precision × recall step (the GAP paper's alternative definition; equals the GAP measure);
    ``area``: trapezoidal area under the non-interpolated graded PR curve, from recall 0 (flat to the first pivot's
    precision) to the last pivot; ``difference`` = gap − area.
    """

    gap: np.ndarray
    area: np.ndarray
    difference: np.ndarray


def graded_pr_area(rankings: Rankings, g: Sequence[float] | None = None) -> PRArea:
    """GAP as a Riemann sum of the graded PR curve vs. its trapezoidal area (GAP paper §3.2).

    With binary grades this compares AP with the area under the binary PR curve.
    """
    pts = graded_pr_points(rankings, g)
    pivot, prec, step = pts["pivot"], np.nan_to_num(pts["precision"]), pts["step"]
    gap = (prec * step).sum(-1)
    idx = np.where(pivot, np.arange(rankings.depth), -1)
    last = np.maximum.accumulate(idx, axis=-1)  # last pivot at or before each rank
    prev = np.concatenate([np.full(last.shape[:-1] + (1,), -1), last[..., :-1]], axis=-1)  # strictly before
    prev_prec = np.where(prev >= 0, np.take_along_axis(prec, np.maximum(prev, 0), -1), prec)
    area = (np.where(pivot, (prec + prev_prec) / 2.0, 0.0) * step).sum(-1)
    return PRArea(gap, area, gap - area)


def check_reduces_to_ap(rankings: Rankings) -> np.ndarray:
    """max over lists of |GAP(g = e_t) − AP at threshold t|, for every threshold t = 1..c: ``(c,)`` (all ~0)."""
    c = rankings.max_grade
    out = np.zeros(c)
    for t in range(1, c + 1):
        e = np.zeros(c)
        e[t - 1] = 1.0
        ap = make_measure("AP")(Rankings(rankings.grades, rankings.n_ret, rankings.counts, rel_level=t))
        out[t - 1] = float(np.max(np.abs(_gap(e)(rankings) - ap), initial=0.0))
    return out


def check_ideal_maximum(rankings: Rankings, g: Sequence[float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(GAP of each list, GAP of its topic's ideal ordering): the second is >= the first, and 1 for topics with a
    relevant document."""
    ideal = rankings.ideal_grades()
    n_ideal = np.broadcast_to((ideal > 0).sum(-1), ideal.shape[:-1])
    ideal_r = Rankings(ideal, n_ideal, rankings.counts, rankings.rel_level)
    m = _gap(g)
    return m(rankings), np.broadcast_to(m(ideal_r), rankings.shape)


def check_swap_monotonicity(grades: Sequence[int], counts: Sequence[int],
                            g: Sequence[float] | None = None) -> np.ndarray:
    """GAP(after) − GAP(before) for every swap of a document with a lower-ranked one of smaller grade (all <= 0;
    < 0 when g puts mass on a grade in (smaller, larger]). Returns the deltas of every such pair of ranks."""
    base = np.asarray(grades, dtype=np.int64)
    a, b = np.triu_indices(len(base), k=1)
    keep = base[a] > np.maximum(base[b], 0)
    a, b = a[keep], b[keep]
    swapped = np.repeat(base[None, :], len(a), axis=0)
    rows = np.arange(len(a))
    swapped[rows, a], swapped[rows, b] = base[b], base[a]
    m = _gap(g)
    before = m(Rankings.from_lists([base], [counts]))[0]
    after = m(Rankings.from_lists(swapped, np.asarray(counts))) if len(a) else np.zeros(0)
    return after - before
