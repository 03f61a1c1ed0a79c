"""Variation of relevance judgments (Kishida 2005, §3.3, Eq. 18–25 and appendix Eq. 45–49; Table 2).

Model (Eq. 18): v_ha = μ_h + e_ha, the metric of topic h under the a-th repetition of the judgments. With
σ_h² = V_m(v_ha | h), σ_μ² the population variance of μ_h and σ_d² = E_p(L⁻¹ Σ_h σ_h²) (Eq. 25), the variance
of a topic score over topics *and* judgments decomposes as σ_μ² + σ_d² (Eq. 24, 45). Estimates from an (A × L)
table of scores: μ̂_h and σ̂_h² are the mean and variance over repetitions a, σ̂_μ² the variance of μ̂_h over
topics, σ̂_d² = L⁻¹ Σ_h σ̂_h², and V̂_p(v_ha | S) the variance over topics for a fixed repetition a; the report's
point is that σ̂_μ² + σ̂_d² ≈ M⁻¹ Σ_a V̂_p(v_ha | S).

Variances use the unbiased (n − 1) divisor, as the report's Eq. 14.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from typing import Sequence

import numpy as np
import pandas as pd

from meta_eval.core.errors import InputError
from meta_eval.statistics.metric_properties.metric_input import MetricLike, as_metric
from meta_eval.model.rankings import Rankings
from meta_eval.core.params import rng as rng_from_seed

__all__ = [
    "JudgmentVariation", "PopulationVariation", "decompose_judgment_variation", "judgment_variation_from_qrels",
    "population_judgment_variation", "simulate_judgment_variation",
]


@dataclass
class JudgmentVariation:
    """Kishida's Table 2 quantities (arrays of the leading shape of the scores).

    Attributes
    ----------
    mu_h, sigma2_h : numpy.ndarray
        ``(..., L)`` per-topic mean and variance over the A repetitions of the judgments.
    mu : μ̂ = L⁻¹ Σ_h μ̂_h.
    sigma2_mu : σ̂_μ², the variance of μ̂_h over topics.
    sigma2_d : σ̂_d² = L⁻¹ Σ_h σ̂_h² (Eq. 25).
    total : σ̂_μ² + σ̂_d².
    mean_vp : A⁻¹ Σ_a V̂_p(v_ha | S), the variance over topics at a fixed repetition, averaged over repetitions.
    relative_gap : total / mean_vp − 1 (the identity says ≈ 0).
    labels : dict, optional
        Names of the leading axes (e.g. ``{"system": [...]}``) and the topics.
    """

    mu_h: np.ndarray
    sigma2_h: np.ndarray
    mu: np.ndarray
    sigma2_mu: np.ndarray
    sigma2_d: np.ndarray
    total: np.ndarray
    mean_vp: np.ndarray
    relative_gap: np.ndarray
    n_repetitions: int
    n_topics: int
    labels: dict | None = None

    def table(self) -> pd.DataFrame:
        """The five rows of Kishida's Table 2 (one column per leading index, flattened)."""
        rows = {"mu": self.mu, "sigma2_mu": self.sigma2_mu, "sigma2_d": self.sigma2_d,
                "sigma2_mu + sigma2_d": self.total, "mean V_p": self.mean_vp}
        return pd.DataFrame({k: np.ravel(v) for k, v in rows.items()}).T


def decompose_judgment_variation(scores, ddof: int = 1) -> JudgmentVariation:
    """Decompose scores ``(..., A, L)`` (A repetitions of the judgments × L topics) as Kishida Eq. 18–25.

    Examples
    --------
    >>> v = decompose_judgment_variation([[0.2, 0.4], [0.4, 0.6]])
    >>> round(float(v.mu), 12), round(float(v.sigma2_d), 12)
    (0.4, 0.02)
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim < 2:
        raise InputError(f"scores must be (..., repetitions, topics), got shape {s.shape}")
    A, L = s.shape[-2:]
    if A <= ddof or L <= ddof:
        raise InputError(f"need more than {ddof} repetitions and topics, got {A} repetitions × {L} topics")
    if np.isnan(s).any():
        raise InputError("scores contain NaN")
    mu_h = s.mean(-2)
    sigma2_h = s.var(-2, ddof=ddof)
    mu = mu_h.mean(-1)
    sigma2_mu = mu_h.var(-1, ddof=ddof)
    sigma2_d = sigma2_h.mean(-1)
    mean_vp = s.var(-1, ddof=ddof).mean(-1)
    total = sigma2_mu + sigma2_d
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = total / mean_vp - 1.0
    return JudgmentVariation(mu_h, sigma2_h, mu, sigma2_mu, sigma2_d, total, mean_vp, gap, A, L)


def _simulate_scores(func, theta: float, L: int, N: int, M: int, rng: np.random.Generator):
    # (1) π_hi = θ if a uniform digit 0..9 is < 5, else 1 − θ
    pi = np.where(rng.integers(0, 10, size=(L, N)) < 5, theta, 1.0 - theta)
    # (2-a) relevant when a uniform number exceeds π_hi (the report's wording, kept literally)
    relevant = rng.random((M, L, N)) > pi
    n_rel = relevant.sum(-1)
    counts = np.stack([N - n_rel, n_rel], axis=-1)
    r = Rankings(grades=relevant.astype(np.int16), n_ret=np.full((M, L), N), counts=counts)
    return np.asarray(func(r), dtype=np.float64), pi


def simulate_judgment_variation(
    theta: float,
    n_topics: int = 50,
    n_docs: int = 10,
    repetitions: int = 1000,
    metric: MetricLike = "AP",
    seed: int | None = 0,
    replicates: int = 1,
    progress: bool = False,
) -> JudgmentVariation:
    """Kishida's §3.3 simulation: L topics, N ranked documents, M repetitions of the judgments.

    Each document gets a relevance probability π_hi = θ or 1 − θ with probability 1/2 (a uniform digit 0..9 below
    5 gives θ); in each repetition it is judged relevant when a uniform number exceeds π_hi; the metric is computed
    on the list of the N documents in order with R = the number judged relevant (AP = 0 when none is).

    Parameters
    ----------
    theta : float
        θ in [0, 1] (the report runs 0.9 and 0.5).
    replicates : int
        Independent repetitions of the whole simulation (new π and new judgments); the result's arrays then have a
        leading axis of that length (used to measure the Monte-Carlo spread of each Table 2 entry).
    seed : int, optional
        Seed of numpy's default generator (reproducible).
    """
    if not 0.0 <= theta <= 1.0:
        raise InputError(f"theta must be in [0, 1], got {theta}")
    if min(n_topics, n_docs, repetitions, replicates) < 1 or min(n_topics, repetitions) < 2:
        raise InputError("need n_topics >= 2, repetitions >= 2, n_docs >= 1 and replicates >= 1")
    _, func = as_metric(metric)
    rng = rng_from_seed(seed, "judgment variation")
    from meta_eval.core.progress import progress as progress_bar

    iterator = progress_bar(range(replicates), desc=f"simulation θ={theta}", unit="replicate", enabled=progress)
    scores = np.stack([_simulate_scores(func, theta, n_topics, n_docs, repetitions, rng)[0] for _ in iterator])
    result = decompose_judgment_variation(scores if replicates > 1 else scores[0])
    return result


@dataclass
class PopulationVariation:
    """Exact population values of the simulation model: μ, σ_μ², σ_d² and σ_μ² + σ_d² (the expectation of
    every Table 2 row, up to the O(1/M) bias of σ̂_μ²)."""

    mu: float
    sigma2_mu: float
    sigma2_d: float
    total: float


def population_judgment_variation(theta: float, n_docs: int = 10, metric: MetricLike = "AP") -> PopulationVariation:
    """Exact μ, σ_μ² and σ_d² of the §3.3 model by enumerating the 2^N judgment outcomes and 2^N π patterns.

    An independent reference for :func:`simulate_judgment_variation` (feasible for N <= 12).
    """
    if not 0.0 <= theta <= 1.0:
        raise InputError(f"theta must be in [0, 1], got {theta}")
    if not 1 <= n_docs <= 12:
        raise InputError(f"exact enumeration needs 1 <= n_docs <= 12, got {n_docs}")
    _, func = as_metric(metric)
    outcomes = np.array(list(product((0, 1), repeat=n_docs)), dtype=np.int16)  # (2^N, N)
    n_rel = outcomes.sum(-1)
    r = Rankings(grades=outcomes, n_ret=np.full(len(outcomes), n_docs), counts=np.stack([n_docs - n_rel, n_rel], -1))
    values = np.asarray(func(r), dtype=np.float64)
    patterns = outcomes.astype(bool)  # True: π = θ
    p_rel = np.where(patterns, 1.0 - theta, theta)  # P(judged relevant) = P(u > π) = 1 − π
    # P(outcome | pattern) = Π_i p^x (1 − p)^(1 − x)
    prob = np.prod(np.where(outcomes[None, :, :] == 1, p_rel[:, None, :], 1.0 - p_rel[:, None, :]), axis=-1)
    mu_h = prob @ values
    sigma2_h = prob @ values**2 - mu_h**2
    mu = float(mu_h.mean())
    s_mu = float(mu_h.var())
    s_d = float(sigma2_h.mean())
    return PopulationVariation(mu, s_mu, s_d, s_mu + s_d)


def judgment_variation_from_qrels(
    qrels: Sequence,
    runs,
    metric: MetricLike = "AP",
    **load_options,
) -> JudgmentVariation:
    """The same decomposition from real repeated judgments: several qrels (assessors) for the same topics.

    Parameters
    ----------
    qrels : sequence of paths or DataFrames
        A >= 2 qrels, one per repetition of the judgments.
    runs : paths, directories, globs or DataFrames
        The runs to score (as :func:`meta_eval.load_collection`).
    metric : str, Measure or callable
        Any registered measure.
    **load_options
        Passed to :func:`meta_eval.load_collection` (``depth``, ``rel_level``, ...).

    Returns
    -------
    JudgmentVariation
        Arrays with a leading ``system`` axis; ``labels`` holds the systems and the topics used (those present in
        every qrels).
    """
    from meta_eval.model.collection import load_collection

    if isinstance(qrels, (str, pd.DataFrame)) or len(qrels) < 2:
        raise InputError("judgment_variation_from_qrels needs a sequence of at least two qrels")
    _, func = as_metric(metric)
    collections = [load_collection(q, runs, **load_options) for q in qrels]
    topics = sorted(set.intersection(*(set(c.topics) for c in collections)), key=str)
    systems = collections[0].systems
    if not topics:
        raise InputError("the qrels have no topic in common")
    if any(c.systems != systems for c in collections):
        raise InputError("the runs differ between the qrels (expected the same systems for every qrels)")
    stacked = []
    for c in collections:
        values = np.broadcast_to(func(c.rankings), c.rankings.shape)
        where = [c.topics.index(t) for t in topics]
        stacked.append(values[:, where])
    scores = np.stack(stacked, axis=1)  # (S, A, L)
    result = decompose_judgment_variation(scores)
    result.labels = {"system": list(systems), "topic": list(topics)}
    return result
