"""Robustness to incomplete judgments (Buckley & Voorhees, SIGIR 2004; Sakai, SIGIR 2007; Yilmaz & Aslam,
CIKM 2006): how well a metric ranks the systems when only part of the qrels is available.

For each fraction f of the judged documents and each of ``n_draws`` seeded draws, a reduced qrels is sampled per
topic; every run is re-scored with it (a dropped judgment makes the document unjudged for every run that retrieved
it) in the *standard* form (unjudged = not relevant) and the *condensed* form (unjudged documents removed from the
lists, Sakai 2007), and the ranking of the systems by mean score is compared with the ranking under the full qrels:
Kendall's τ_b and τ_AP(reduced | full). The full-qrels ranking is that of the same form by default (so the numbers
measure what the missing judgments change), or of the standard form (``reference="standard"``: how far a form
under reduced qrels is from the usual full evaluation). Discriminative power under each reduced qrels is the
proportion of system pairs a two-sided paired t-test tells apart at level α.

Sampling designs (the samples of a draw are nested: a smaller fraction keeps a subset of a larger one):

``"uniform"``
    per topic and grade (stratified, as Buckley & Voorhees keep the proportion of relevant documents), keep
    round(f n) of the n judgments of that grade, drawn uniformly, and at least one of every relevant grade present.
``"depth"``
    per topic, keep the round(f n) judgments (at least one) whose documents entered the pool first, i.e. with the
    smallest best rank over the runs (a shallower pool), ties broken at random; judged documents no run retrieved
    enter last.

Draw d of seed s uses ``numpy.random.default_rng([s, d])``, so a draw's qrels do not depend on how many draws,
fractions or worker processes there are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from meta_eval.model.collection import Collection
from meta_eval.core.errors import InputError
from meta_eval.measures import Measure
from meta_eval.statistics.rejudge import Rejudger, check_forms, resolve_measures
from meta_eval.statistics.stability import smallest_from_which_all_hold
from meta_eval.core.memory_budget import require
from meta_eval.core.params import check as check_params
from meta_eval.core.params import rng as rng_from_seed

SAMPLINGS = ("uniform", "depth")
DEFAULT_FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
COEFFICIENTS = ("kendall_tau_b", "tau_ap", "discpower")


# --------------------------------------------------------------------------------------------- sampling


def _check_fractions(fractions: Sequence[float]) -> np.ndarray:
    f = np.asarray(list(fractions), dtype=np.float64)
    if f.size == 0 or not np.all((f > 0) & (f <= 1)):
        raise InputError(f"fractions must lie in (0, 1]; got {f.tolist()}")
    return f


def _kept_counts(fractions: np.ndarray, sizes: np.ndarray, at_least_one: np.ndarray) -> np.ndarray:
    """(F, groups) judgments kept per group: round(f n) (halves up), at least one where asked and n > 0."""
    k = np.floor(fractions[:, None] * sizes[None, :] + 0.5).astype(np.int64)
    return np.where(at_least_one & (sizes > 0), np.maximum(k, 1), k)


def masks_bytes(n_judgments: int, n_draws: int, n_fractions: int, n_systems: int = 0, n_topics: int = 0,
                n_measures: int = 0) -> float:
    """Peak memory of :func:`judgment_masks`: random keys, sort keys, order, positions and ranks (8 bytes each per
    draw and judgment) and the boolean masks of every fraction; with the collection's size and the measures, of
    :func:`incomplete_judgments`, which also holds the masks flattened and both forms' re-scored (S, T) values per
    draw, fraction and measure (measured with tracemalloc on the demo collection: 0.43 MB per draw for AP at 9
    fractions, 0.47 MB for three measures; this estimate: 0.48 and 0.67 MB)."""
    per_draw = (48.0 + n_fractions) * n_judgments
    if n_measures:
        per_draw += (48.0 + n_fractions) * n_judgments + 16.0 * n_systems * n_topics * n_fractions * n_measures
    return per_draw * n_draws


def judgment_masks(
    collection: Collection,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    n_draws: int = 20,
    *,
    sampling: str = "uniform",
    seed: int = 0,
) -> np.ndarray:
    """Reduced qrels as boolean masks over ``collection.judgments``: shape (F, n_draws, J).

    See the module docstring for the designs. Vectorised over draws and fractions: one sort of random keys per
    draw ranks the judgments within their group, and each fraction keeps a prefix of every group.
    """
    fractions = _check_fractions(fractions)
    if isinstance(n_draws, bool) or not isinstance(n_draws, (int, np.integer)) or n_draws < 1:
        raise InputError(f"n_draws must be a positive integer; got {n_draws!r}")
    if sampling not in SAMPLINGS:
        raise InputError(f"sampling must be one of {SAMPLINGS}; got {sampling!r}")
    j = collection.judgments
    n_j = len(j)
    require(masks_bytes(n_j, n_draws, len(fractions)), f"{n_draws:,} draws of reduced qrels over {n_j:,} judgments",
            "--draws; in a study --judgment-draws")
    topic = j.topic.astype(np.int64)
    u = np.stack([rng_from_seed([seed, d], "reduced qrels").random(n_j) for d in range(n_draws)])  # (D, J)
    if sampling == "uniform":
        # Groups are (topic, grade); negative grades form their own group.
        grade = np.asarray(j.grade, dtype=np.int64)
        levels, grade_code = np.unique(grade, return_inverse=True)
        group = topic * len(levels) + grade_code
        n_groups = (int(topic.max(initial=-1)) + 1) * len(levels)
        relevant = np.tile(levels >= collection.rel_level, n_groups // max(len(levels), 1))
        order_key = group[None, :] + u  # random order within each group
    else:
        group = topic
        n_groups = int(topic.max(initial=-1)) + 1
        relevant = np.ones(n_groups, dtype=bool)
        first = Rejudger(collection).first_rank().astype(np.float64)
        depth = np.where(first > 0, first, collection.depth + 1.0)
        order_key = group[None, :] * (collection.depth + 2.0) + depth[None, :] + u  # shallow first, random ties
    sizes = np.bincount(group, minlength=n_groups)
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    order = np.argsort(order_key, axis=1, kind="stable")
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.arange(n_j)[None, :], axis=1)
    within = position - start[group][None, :]  # rank of each judgment within its group, per draw
    kept = _kept_counts(fractions, sizes, relevant)  # (F, groups)
    return within[None, :, :] < kept[:, None, group]


# --------------------------------------------------------------------------------------------- analysis


def significant_pairs(values: np.ndarray, alpha: float = 0.05) -> np.ndarray:
    """Proportion of system pairs a two-sided paired t-test separates at level ``alpha``, per leading index of an
    (..., S, T) array (vectorised over the leading axes).

    |t| = |mean d| / (sd d / √T) over the per-topic differences d = x_a − x_b, compared with t_{α/2}(T − 1). The
    sums over topics come from the Gram matrix of the system-centred scores (one matrix product instead of the
    P × T differences): with x̃_s = x_s − x̄_s, Σ_t (d_t − d̄)² = G_aa + G_bb − 2 G_ab, G = x̃ x̃ᵀ. A pair with
    constant differences follows :func:`meta_eval.statistics.significance.pairs.abs_studentised` (significant iff the mean is
    non-zero). Same decisions as ``scipy.stats.ttest_rel`` p < alpha (tested).
    """
    from scipy import stats

    from meta_eval.statistics.significance.pairs import abs_studentised

    x = np.asarray(values, dtype=np.float64)
    n_sys, n_top = x.shape[-2:]
    if n_top < 2:
        return np.full(x.shape[:-2], np.nan)
    ia, ib = np.triu_indices(n_sys, 1)
    means = x.mean(axis=-1)
    xc = x - means[..., None]
    # einsum's own loop, not BLAS: a threaded BLAS spends longer starting its threads than on this small product
    gram = np.einsum("...st,...ut->...su", xc, xc)
    diag = np.diagonal(gram, axis1=-2, axis2=-1)
    ss = np.maximum(diag[..., ia] + diag[..., ib] - 2.0 * gram[..., ia, ib], 0.0)
    magnitude = np.abs(x).max(axis=-1)
    scale = np.maximum(np.maximum(magnitude[..., ia], magnitude[..., ib]), 1e-300)
    t = abs_studentised(means[..., ia] - means[..., ib], ss / (n_top - 1), n_top, scale)
    return (t > stats.t.isf(alpha / 2, n_top - 1)).mean(axis=-1)


@dataclass(frozen=True, eq=False)
class IncompleteJudgments:
    """Result of :func:`incomplete_judgments`.

    Attributes
    ----------
    draws : DataFrame
        One row per (metric, form, fraction, draw): ``metric, form, sampling, fraction, draw, judged_fraction``
        (judgments kept / all), ``topics_without_relevant`` (topics that lost every relevant judgment),
        ``kendall_tau_b, tau_ap`` (against the full-qrels ranking), ``discpower`` (proportion of pairs significant).
    summary : DataFrame
        One row per (metric, form, fraction): means over draws and percentile intervals at ``confidence``
        (``kendall_tau_b, kendall_tau_b_low, kendall_tau_b_high``, the same for ``tau_ap`` and ``discpower``),
        ``discpower_full`` (the same form with the full qrels), ``judged_fraction``, ``draws``.
    alpha, confidence : float
    """

    draws: pd.DataFrame
    summary: pd.DataFrame
    alpha: float
    confidence: float

    def min_fraction(self, threshold: float = 0.9, coefficient: str = "kendall_tau_b") -> pd.DataFrame:
        """Per (metric, form): the smallest fraction f such that the mean coefficient is >= ``threshold`` at f and
        at every larger fraction studied (NaN when even the largest fraction falls short)."""
        (threshold,) = check_params("incomplete judgments", threshold=threshold)
        rows = []
        for (metric, form), grp in self.summary.groupby(["metric", "form"], sort=False):
            grp = grp.sort_values("fraction")
            f = smallest_from_which_all_hold(grp["fraction"].to_numpy(), (grp[coefficient] >= threshold).to_numpy())
            rows.append({"metric": metric, "form": form, "min_fraction": f})
        return pd.DataFrame(rows)


def incomplete_judgments(
    collection: Collection,
    measures: Sequence[str | Measure],
    *,
    fractions: Sequence[float] = DEFAULT_FRACTIONS,
    n_draws: int = 20,
    sampling: str = "uniform",
    forms: Sequence[str] = ("standard", "condensed"),
    alpha: float = 0.05,
    confidence: float = 0.95,
    reference: str = "same",
    standardise: str | None = None,
    seed: int = 0,
    jobs: int | None = 1,
    scheduler: str | None = None,
    progress: bool = False,
) -> IncompleteJudgments:
    """Agreement of each metric's system ranking under reduced qrels with its ranking under the full qrels.

    Parameters
    ----------
    collection : Collection
        Loaded with ``unjudged="nonrel"`` (the default) when the standard form is asked for.
    measures : sequence of str or Measure
        Metric names or plug-in specs.
    fractions : sequence of float
        Fractions of the judgments kept (default 0.1, ..., 0.9).
    n_draws : int
        Seeded draws per fraction (intervals over draws).
    sampling : {"uniform", "depth"}
        Sampling design (module docstring).
    forms : sequence of {"standard", "condensed"}
    alpha : float
        Level of the paired t-tests behind ``discpower``.
    confidence : float
        Level of the percentile intervals over draws.
    reference : {"same", "standard"}
        The full-qrels ranking each form is compared with: the same form's, or the standard form's.
    standardise : {None, "z", "cdf"}
        Rank systems by mean standardised score (per-topic z-scores over the systems, computed within each
        qrels; :mod:`meta_eval.statistics.standardise`) instead of the mean raw score.
    seed : int
    jobs : int
        Worker processes (the result does not depend on it; None: every core).
    scheduler : str, optional
        Run on a Dask cluster instead: ``"local"`` or ``"tcp://HOST:PORT"`` (:mod:`meta_eval.core.parallel`).
    progress : bool

    Returns
    -------
    IncompleteJudgments
    """
    from meta_eval.statistics.significance.pairs import check_alpha
    from meta_eval.statistics.standardise import check_method

    alpha = check_alpha(alpha)
    if not 0 < confidence < 1:
        raise InputError(f"confidence must lie in (0, 1); got {confidence!r}")
    check_method(standardise)
    if reference not in ("same", "standard"):
        raise InputError(f"reference must be 'same' or 'standard'; got {reference!r}")
    ms = resolve_measures(measures)
    forms = check_forms(forms, collection)
    fr = _check_fractions(fractions)
    (n_draws,) = check_params("incomplete judgments", n_draws=n_draws)
    require(masks_bytes(len(collection.judgments), n_draws, len(fr), len(collection.systems), len(collection.topics),
                        len(ms)), f"{n_draws:,} draws of reduced qrels over {len(collection.judgments):,} judgments",
            "--draws; in a study --judgment-draws")
    masks = judgment_masks(collection, fr, n_draws, sampling=sampling, seed=seed)
    keep = masks.reshape(-1, masks.shape[-1])
    n_sys = len(collection.systems)
    which = np.broadcast_to(np.arange(keep.shape[0])[:, None], (keep.shape[0], n_sys))
    rejudger = Rejudger(collection)

    everything = np.ones((1, rejudger.n_judgments), dtype=bool)
    ref_forms = list(dict.fromkeys([*forms, "standard"])) if reference == "standard" else forms
    full = rejudger.all_scores(ms, everything, np.zeros((1, n_sys), dtype=np.int64), ref_forms)
    complete = all(np.isfinite(v).all() for v in full.values())
    reducer = _Reducer(ms, forms, {}, alpha, standardise, complete)
    reducer.reference = {(m.output_name, f): reducer.means(full[(m.output_name, f if reference == "same"
                                                                  else "standard")], m) for m in ms for f in forms}
    parts = [row for rows in rejudger.scores(ms, keep, which, forms, reduce=reducer, jobs=jobs,
                                             scheduler=scheduler, progress=progress) for row in rows]
    draws = _draws_table(parts, collection, rejudger, keep, fr, int(n_draws), sampling)
    power = reducer.discpower([full[(m.output_name, f)] for m in ms for f in forms])
    full_power = dict(zip([(m.output_name, f) for m in ms for f in forms], power[:, 0]))
    return IncompleteJudgments(draws, _summary(draws, full_power, confidence), alpha, confidence)


@dataclass
class _Reducer:
    """Per chunk of reduced qrels: system means, τ_b and τ_AP against the reference means, t-test power."""

    measures: list[Measure]
    forms: list[str]
    reference: dict[tuple[str, str], np.ndarray]
    alpha: float
    standardise: str | None
    complete: bool

    def means(self, values: np.ndarray, m: Measure) -> np.ndarray:
        from meta_eval.measures.scoring import aggregate
        from meta_eval.statistics.standardise import fit_standardisation

        if self.standardise is None:
            return aggregate(values, m)
        return np.nanmean(fit_standardisation(values, self.standardise)(values), axis=-1)

    def discpower(self, arrays: list[np.ndarray]) -> np.ndarray:
        """(len(arrays), k) proportion of significant pairs, every (k, S, T) array in one vectorised call."""
        from meta_eval.statistics.standardise import fit_standardisation

        stack = np.stack(arrays)
        if not self.complete:  # NaN scores (missing="skip"): no paired test over a common topic set
            return np.full(stack.shape[:-2], np.nan)
        if self.standardise is not None:
            stack = fit_standardisation(stack, self.standardise)(stack)
        return significant_pairs(stack, self.alpha)

    def __call__(self, sl: slice, out: dict) -> list[dict]:
        from meta_eval.statistics.correlation.rank import kendall_tau_b, tau_ap

        keys = [(m, f) for m in self.measures for f in self.forms]
        power = self.discpower([out[(m.output_name, f)] for m, f in keys])
        rows = []
        for (m, form), p in zip(keys, power):
            means = self.means(out[(m.output_name, form)], m)
            refs = np.broadcast_to(self.reference[(m.output_name, form)], means.shape)
            rows.append({"metric": m.output_name, "form": form, "combo": np.arange(sl.start, sl.stop),
                         "kendall_tau_b": np.atleast_1d(kendall_tau_b(refs, means)),
                         "tau_ap": np.atleast_1d(tau_ap(refs, means)), "discpower": p})
        return rows


def _draws_table(parts: list[dict], collection: Collection, rejudger: Rejudger, keep: np.ndarray,
                 fractions: np.ndarray, n_draws: int, sampling: str) -> pd.DataFrame:
    counts = rejudger.counts(keep)  # (M, T, G + 1)
    full = rejudger.counts(np.ones((1, keep.shape[1]), dtype=bool))[0]
    rel = collection.rel_level
    lost = ((counts[:, :, rel:].sum(-1) == 0) & (full[None, :, rel:].sum(-1) > 0)).sum(-1)
    judged = keep.mean(axis=1) if keep.shape[1] else np.ones(keep.shape[0])
    frame = pd.concat([pd.DataFrame(p) for p in parts], ignore_index=True)
    combo = frame["combo"].to_numpy(dtype=np.int64)
    frame.insert(2, "sampling", sampling)
    frame.insert(3, "fraction", fractions[combo // n_draws])
    frame.insert(4, "draw", combo % n_draws)
    frame.insert(5, "judged_fraction", judged[combo])
    frame.insert(6, "topics_without_relevant", lost[combo])
    return frame.drop(columns="combo")


def _summary(draws: pd.DataFrame, full_power: dict[tuple[str, str], float], confidence: float) -> pd.DataFrame:
    tail = (1 - confidence) / 2
    keys = ["metric", "form", "sampling", "fraction"]
    grouped = draws.groupby(keys, sort=False)
    out = grouped[["judged_fraction", "topics_without_relevant"]].mean()
    for c in COEFFICIENTS:
        out[c] = grouped[c].mean()
        out[f"{c}_low"] = grouped[c].quantile(tail)
        out[f"{c}_high"] = grouped[c].quantile(1 - tail)
    out["draws"] = grouped.size()
    out = out.reset_index()
    power = [full_power[(m, f)] for m, f in zip(out["metric"], out["form"])]
    out.insert(out.columns.get_loc("discpower_high") + 1, "discpower_full", power)
    return out
