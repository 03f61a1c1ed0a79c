"""How often significance tests are wrong under each metric: the Type I error, power and Type III (wrong-sign)
rates of paired tests between two systems, and the family-wise error and false discovery rates of
multiple-comparison procedures over every pair of a family of systems — each against the number of topics, by
resampling the collection's own per-topic scores (Urbano, Lima & Hanjalic, SIGIR 2019; Ihemelandu & Ekstrand,
SIGIR 2023; Otero, Parapar & Barreiro, arXiv 2501.03930, 2025).

Design
------
Null pairs (``null``)
    A trial takes a pair of systems (a, b) of the collection, uniformly among the pairs that differ on some topic
    under every metric, and n topics drawn with replacement: an i.i.d. sample of the collection's topics, whose
    empirical distribution is the population (Urbano et al. simulate new topics from copulas and margins fitted to
    a collection instead; the empirical distribution needs no model to be chosen). Drawing with replacement is
    what makes the null hold exactly at every n; without it the sample at n = T would be the collection itself.
    The per-topic differences z_t = x_at - x_bt are made null in one of two ways:

    ``exchange`` (default)
        on each drawn topic the two systems' scores are swapped with probability 1/2 (z_t takes a random sign).
        The differences keep the metric's own magnitudes, ties and zeros, and every test's null hypothesis holds
        exactly (a symmetric distribution has mean 0 and median 0): the null of the randomisation test, applied to
        the population rather than the sample.
    ``shift``
        z_t - z̄ with z̄ the pair's mean difference over all T topics (system b raised by z̄: the null of Sakai's
        bootstrap, on the population). The mean difference is exactly 0 and the shape, skew included, is the
        pair's own; the sign and Wilcoxon tests' hypotheses (median 0, symmetry) may then be false, so their
        rejection rate measures how often they call systems of equal mean score different — Urbano et al.'s
        definition of a Type I error. A topic on which the two systems tie becomes -z̄: ties are broken.

Effects (power, Type III)
    δ is added to every drawn difference: ``effects`` in units of the pair's null standard deviation σ_ab
    (``unit="sd"``, Cohen's d_z: under normal differences the t-test's power is the noncentral t's, reported as
    ``theory``), or in the metric's own units (``unit="score"``). An additive δ moves every topic, tied ones
    included, which favours the sign and Wilcoxon tests on metrics with many ties. Power: the share of trials
    called significant; Type III: the share called significant with a negative mean difference (the direction a
    paper reports, whatever the test).

Families (FWER, FDR)
    A trial takes m = ``family_size`` systems of the collection at random and n topics; the systems are made equal
    (``exchange``: their scores permuted at random on each topic; ``shift``: each system centred on its mean over
    all T topics) and, in the planted configuration, the second half of the family is raised by ``family_effect``
    (in ``sd`` units, times the median σ_ab of the collection's pairs). Every pair of the family is tested, and the
    p-values corrected over its m(m-1)/2 pairs (``none``, ``bonferroni``, ``holm``, ``bh``: Benjamini-Hochberg), or
    the family tested with the randomised Tukey HSD (``tukey``: topic-blocked permutations of the m systems,
    Carterette 2012, Sakai 2012). FWER: the share of trials in which a true null is rejected (complete null: every
    pair; planted: the pairs within a half); FDR: the mean over trials of V / max(R, 1), V true nulls rejected out
    of R rejections (a false null rejected in the wrong direction is not counted in V); power: the mean share of
    the false nulls rejected in the right direction.

Tests (each pair's p-value as R gives it, and as scipy reproduces it)
    ``ttest``: R ``t.test(x, y, paired=TRUE)``, ``scipy.stats.ttest_rel(x, y)``; a zero-variance sample follows the
    s.d. = 0 rule of :func:`~meta_eval.statistics.significance.pairs.abs_studentised`. ``wilcoxon``: R ``wilcox.test(x, y,
    paired=TRUE, exact=FALSE, correct=TRUE)``, ``scipy.stats.wilcoxon(x, y, correction=True, method="approx")``:
    zeros dropped, the normal approximation with the tie and continuity corrections (drawn with replacement, a
    sample nearly always has ties, where R uses it too). ``sign``: R ``binom.test(n+, n+ + n-)``,
    ``scipy.stats.binomtest(n+, n+ + n-)``: exact, ties dropped. ``bootstrap``: Sakai's (2006) paired studentised
    bootstrap (:func:`~meta_eval.statistics.significance.paired_bootstrap`). ``randomisation``: the paired sign-flip test
    (:func:`~meta_eval.statistics.significance.randomisation_test`; exact when 2^n <= B). A pair is significant when p < α.

Resampling
    Every trial draws its own bootstrap replicates and sign vectors (the pairs of a family share their trial's, as
    in an experiment); the Tukey permutations are shared by the trials of a batch (:data:`TRIAL_BATCH`), a
    dependence the intervals ignore. Each size and part has its own generator, seeded by (seed, n, part): the
    numbers depend only on the seed and the budget, not on the workers.

Intervals
    Wilson score intervals for the rates (counts over independent trials); for FDR and family power, means over
    trials of values in [0, 1], the same formula with the mean as the proportion (conservative: such values vary at
    most as much as Bernoulli variables of the same mean).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from meta_eval.statistics.significance.pairs import TIE_RTOL, abs_studentised, check_alpha, check_resamples, check_scores, \
    pair_indices
from meta_eval.statistics.significance.classical import sign_test_pvalues
from meta_eval.core.errors import InputError
from meta_eval.statistics.error_rate_design import (CORRECTION_LABELS, CORRECTIONS, DEFAULT_EFFECTS,  # noqa: F401
                                                    DEFAULT_FAMILY_TESTS, NULLS, TEST_LABELS, TESTS, UNITS)

__all__ = ["CORRECTIONS", "DEFAULT_EFFECTS", "NULLS", "SignificanceErrors", "TESTS", "default_sizes",
           "significance_error_rates", "wilson_interval", "work_bytes"]

#: Trials drawn together (fixed: the numbers depend only on the seed and the budget, not on memory settings).
TRIAL_BATCH = 25
#: Elements of the largest work array (trials x rows x replicates) computed at once.
WORK_ELEMENTS = 2**22
_SIZE_GRID = (5, 10, 20, 30, 50, 100, 200, 500, 1000)


@dataclass(frozen=True, eq=False)
class SignificanceErrors:
    """The error rates (result of :func:`significance_error_rates`).

    Attributes
    ----------
    pairs : DataFrame
        One row per (metric, test, topics, effect): ``trials``, ``significant``; ``rate`` (Type I error at effect
        0, power above) with its Wilson interval ``rate_low``, ``rate_high``; ``wrong_sign`` and ``type3`` (its
        share of trials, with ``type3_low``, ``type3_high``; NaN at effect 0); ``theory``: the paired t-test's
        power under normal differences (noncentral t; α at effect 0; NaN in score units).
    families : DataFrame
        One row per (metric, procedure, topics, effect): ``test``, ``correction``, ``trials``, ``pairs`` (per
        family), ``true_nulls``; ``fwer``, ``fdr``, ``power`` with their intervals (``*_low``, ``*_high``).
        Effect 0 is the complete null (power NaN); a planted effect leaves the pairs within each half null.
    """

    pairs: pd.DataFrame
    families: pd.DataFrame
    alpha: float
    null: str
    unit: str
    n_trials: int
    family_trials: int
    family_size: int
    family_effect: float
    n_resamples: int
    confidence: float
    seed: int | None

    def type1(self) -> pd.DataFrame:
        """Type I error rates: the pairs' rows at effect 0."""
        return self.pairs[self.pairs["effect"] == 0].drop(columns=["wrong_sign", "type3", "type3_low", "type3_high"])

    def power(self) -> pd.DataFrame:
        """Power and Type III rates: the pairs' rows with an effect."""
        return self.pairs[self.pairs["effect"] > 0]


def default_sizes(n_topics: int) -> list[int]:
    """Topic-set sizes to study: 5, 10, 20, 30, 50, 100, ... below T, then T itself; at most six (the largest)."""
    return ([n for n in _SIZE_GRID if n < n_topics] + [n_topics])[-6:]


def wilson_interval(count, trials, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a binomial proportion (vectorised):

        centre = (p̂ + z²/2n) / (1 + z²/n),   half = z / (1 + z²/n) · sqrt(p̂(1 - p̂)/n + z²/4n²)

    with p̂ = count / n and z the normal quantile of (1 + confidence) / 2 (Wilson 1927). Written here because
    scipy's (``binomtest(...).proportion_ci(method="wilson")``) takes one count at a time and statsmodels'
    ``proportion_confint`` is not a dependency; the tests check it against both."""
    count = np.asarray(count, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    z = stats.norm.ppf(0.5 + confidence / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = count / n
        denom = 1 + z * z / n
        centre = (p + z * z / (2 * n)) / denom
        half = z / denom * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)


def significance_error_rates(
    scores: np.ndarray | Mapping[str, np.ndarray],
    systems: Sequence[str] | None = None,
    *,
    tests: Sequence[str] = TESTS,
    alpha: float = 0.05,
    sizes: Sequence[int] | None = None,
    effects: Sequence[float] = DEFAULT_EFFECTS,
    unit: str = "sd",
    null: str = "exchange",
    n_trials: int = 1000,
    n_resamples: int = 1000,
    family_size: int = 10,
    family_trials: int = 400,
    family_effect: float = 0.5,
    family_tests: Sequence[str] = DEFAULT_FAMILY_TESTS,
    corrections: Sequence[str] = CORRECTIONS,
    confidence: float = 0.95,
    seed: int | None = 0,
    jobs: int | None = 1,
    scheduler: str | None = None,
    progress: bool = False,
) -> SignificanceErrors:
    """Type I, power and Type III rates of paired tests, and FWER and FDR of multiple-comparison procedures, under
    each metric, against the number of topics (module docstring: the design).

    Parameters
    ----------
    scores : ndarray (S, T) or mapping metric -> ndarray (S, T)
        Per-topic scores; every metric has the same systems and topics. A bare array is named ``metric``.
    systems : sequence of str, optional
        The S system names.
    tests : sequence of str
        Tests of the pairs: any of ``ttest``, ``wilcoxon``, ``sign``, ``bootstrap``, ``randomisation``.
    alpha : float
        Significance level: a pair is significant when p < alpha.
    sizes : sequence of int, optional
        Numbers of topics n drawn per trial (default :func:`default_sizes`); at least 2; above T, the collection's
        topics are drawn more than once on average.
    effects : sequence of float
        Effect sizes of the power and Type III rates (positive), in ``unit``.
    unit : {'sd', 'score'}
        Effects in standard deviations of the pair's null differences (d_z), or in the metric's units.
    null : {'exchange', 'shift'}
        How a pair (or a family) is made null.
    n_trials : int
        Trials per size for the pairs (each a pair and a topic sample).
    n_resamples : int
        B of the bootstrap, the randomisation test and the randomised Tukey HSD.
    family_size : int
        Systems per family (0: no family rates); at most S.
    family_trials : int
        Families per size.
    family_effect : float
        The planted effect of the families' second half, in ``unit``.
    family_tests : sequence of str
        Tests whose p-values the corrections adjust.
    corrections : sequence of str
        ``none``, ``bonferroni``, ``holm``, ``bh``, ``tukey`` (the randomised Tukey HSD, a test of its own).
    confidence : float
        Level of the intervals.
    seed : int or None
        One seed for every draw.
    jobs, scheduler, progress
        Run the sizes in parallel (:func:`meta_eval.core.parallel.parallel_map`); the numbers do not change.

    Returns
    -------
    SignificanceErrors

    Raises
    ------
    InputError
        Scores that are not finite (S, T) arrays of at least two systems and topics, no pair of systems that
        differ, or a parameter outside its domain (named with its allowed values).
    """
    from meta_eval.core.memory_budget import require
    from meta_eval.core.parallel import parallel_map
    from meta_eval.core.params import check

    data, names = _check_scores(scores, systems)
    alpha = check_alpha(alpha)
    (confidence,) = check("error rates", confidence=confidence)
    if seed is not None:
        check("error rates", seed=seed)
    n_trials, family_trials = _count(n_trials, "n_trials"), _count(family_trials, "family_trials")
    n_resamples = check_resamples(n_resamples, "n_resamples")
    tests = _choices(tests, TESTS, "tests")
    family_tests = _choices(family_tests, TESTS, "family_tests")
    corrections = _choices(corrections, CORRECTIONS, "corrections")
    null, unit = _choice(null, NULLS, "null"), _choice(unit, UNITS, "unit")
    effects = _effects(effects)
    family_effect = _effects([family_effect], "family_effect")[0]
    n_metrics, n_sys, n_top = data.shape
    sizes = _sizes(sizes, n_top)
    if isinstance(family_size, bool) or not isinstance(family_size, (int, np.integer)) or family_size < 0 or \
            family_size == 1:
        raise InputError(f"family_size must be 0 (no families) or an integer of at least 2; got {family_size!r}")
    family_size = min(int(family_size), n_sys)

    require(work_bytes(max(sizes), n_resamples, n_metrics, len(effects) + 1, family_size),
            f"error rates with B = {n_resamples:,} over {max(sizes)} topics", "n_resamples (--resamples/-B) or sizes")
    pool_a, pool_b, shift, sigma = _null_pairs(data, null, names)
    common = dict(data=data, alpha=alpha, null=null, n_resamples=n_resamples, seed=seed)
    pair_common = dict(common, pool=(pool_a, pool_b), shift=shift, sigma=sigma, tests=tests,
                       effects=np.concatenate([[0.0], effects]), unit=unit, n_trials=n_trials)
    family_common = dict(common, scale=np.median(sigma, axis=1) if unit == "sd" else np.ones(n_metrics),
                         family_size=family_size, tests=family_tests, corrections=corrections,
                         effects=np.array([0.0, family_effect]), n_trials=family_trials)
    tasks = [("pairs", n) for n in sizes] + ([("families", n) for n in sizes] if family_size >= 2 else [])
    weights = [n * (n_trials * (len(effects) + 1) if part == "pairs" else
                    family_trials * family_size * family_size) for part, n in tasks]
    results = parallel_map(_task, tasks, common=dict(pairs=pair_common, families=family_common), jobs=jobs,
                           scheduler=scheduler, desc="error rates", unit="size", progress=progress, weights=weights)
    by_task = dict(zip(tasks, results))
    pairs = _pairs_frame(names, sizes, tests, effects, unit, by_task, n_trials, alpha, confidence)
    families = _families_frame(names, sizes if family_size >= 2 else [], family_tests, corrections, family_effect,
                               family_size, by_task, family_trials, confidence)
    return SignificanceErrors(pairs, families, alpha, null, unit, n_trials, family_trials, family_size,
                              family_effect, n_resamples, confidence, seed)


def work_bytes(n: int, n_resamples: int, n_metrics: int, n_effects: int, family_size: int) -> float:
    """Peak memory of one batch of trials at n topics (float: products of user sizes may overflow integers): the
    bootstrap design (int32 indices, their int64 positions, the float64 counts), the sign vectors, the replicate
    statistics of at most :data:`WORK_ELEMENTS` (a few arrays of them), the families' scores and the Tukey HSD's
    sparse averaging matrix (a float64 and an int32 per entry)."""
    pairs = family_size * (family_size - 1) // 2
    design = TRIAL_BATCH * float(n) * n_resamples * (4 + 8 + 8 + 8)
    statistics = 6 * 8.0 * min(float(WORK_ELEMENTS), TRIAL_BATCH * float(max(n_metrics * n_effects, pairs))
                                * n_resamples)
    families = 6 * 8.0 * TRIAL_BATCH * n * n_metrics * max(pairs, family_size)
    return design + statistics + families + 12.0 * n_resamples * family_size * n


# --------------------------------------------------------------------------------------------- checks


def _check_scores(scores, systems) -> tuple[np.ndarray, list[str]]:
    """The scores as one (metrics, S, T) array and the metric names."""
    by_metric = dict(scores) if isinstance(scores, Mapping) else {"metric": scores}
    if not by_metric:
        raise InputError("no metric scores given")
    arrays, shape = [], None
    for name, values in by_metric.items():
        x, _ = check_scores(values, systems)
        if shape is not None and x.shape != shape:
            raise InputError(f"metric {name!r} has scores of shape {x.shape}; the others have {shape}")
        shape = x.shape
        arrays.append(x)
    return np.stack(arrays), [str(k) for k in by_metric]


def _count(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(f"{name} must be a positive integer; got {value!r}")
    return int(value)


def _choice(value, allowed: Sequence[str], name: str) -> str:
    if value not in allowed:
        raise InputError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def _choices(values, allowed: Sequence[str], name: str) -> tuple[str, ...]:
    chosen = (values,) if isinstance(values, str) else tuple(values)
    unknown = [v for v in chosen if v not in allowed]
    if unknown or not chosen:
        raise InputError(f"{name} must be some of {', '.join(allowed)}; got {list(chosen)}")
    return tuple(dict.fromkeys(chosen))


def _effects(values, name: str = "effects") -> np.ndarray:
    try:
        x = np.asarray(values, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise InputError(f"{name} must be positive numbers; got {values!r}") from None
    if not x.size or not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise InputError(f"{name} must be positive finite numbers; got {list(np.atleast_1d(values))}")
    return np.unique(x)


def _sizes(sizes, n_topics: int) -> list[int]:
    if sizes is None:
        return default_sizes(n_topics)
    chosen = [sizes] if isinstance(sizes, (int, np.integer)) else list(sizes)
    if not chosen or any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2 for n in chosen):
        raise InputError(f"sizes must be integers of at least 2 (topics per trial); got {chosen}")
    return sorted({int(n) for n in chosen})


def _null_pairs(data: np.ndarray, null: str, names: Sequence[str] = ("metric",)
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pairs a trial may take (those that differ on some topic under every metric), and per metric and pair
    the shift that centres the differences (``shift``; zeros for ``exchange``) and the null population's s.d.

    ``exchange``: the population {±z_t} has mean 0 and variance mean(z²); ``shift``: {z_t - z̄} has variance
    mean((z - z̄)²) (divisor T: the variance of a draw from the T topics)."""
    a, b = pair_indices(data.shape[1])
    diffs = data[:, a] - data[:, b]  # (metrics, pairs, topics)
    mean = diffs.mean(axis=2)
    sd = np.sqrt((diffs * diffs).mean(axis=2)) if null == "exchange" else diffs.std(axis=2)
    scale = np.abs(diffs).max(axis=2)
    differs = sd > 1e-9 * scale  # a pair tied on every topic (up to rounding) cannot be made to differ
    flat = np.flatnonzero(~differs.any(axis=1))
    if flat.size:
        raise InputError(f"under metric {names[flat[0]]!r} no pair of systems differs on any topic: there is nothing "
                         "to test")
    live = differs.all(axis=0)
    if not live.any():
        raise InputError("no pair of systems differs on some topic under every metric: there is nothing to test")
    shift = mean[:, live] if null == "shift" else np.zeros((data.shape[0], int(live.sum())))
    return a[live], b[live], shift, sd[:, live]


# --------------------------------------------------------------------------------------------- tasks


def _task(task: tuple[str, int], *, pairs: dict, families: dict) -> dict[str, np.ndarray]:
    """One size of one part (a task of :func:`significance_error_rates`)."""
    part, n = task
    return _pair_counts(n, **pairs) if part == "pairs" else _family_counts(n, **families)


def _generator(seed: int | None, n: int, part: int) -> np.random.Generator:
    from meta_eval.core.params import rng

    return rng(None if seed is None else [seed, n, part], "error rates")


def _pair_counts(n: int, *, data, alpha, null, n_resamples, seed, pool, shift, sigma, tests, effects, unit,
                 n_trials) -> dict[str, np.ndarray]:
    """Per metric, test and effect: trials significant, and significant with a negative mean difference."""
    gen = _generator(seed, n, 0)
    pool_a, pool_b = pool
    n_metrics, _, n_top = data.shape
    n_eff = effects.size
    significant = np.zeros((len(tests), n_metrics, n_eff), dtype=np.int64)
    wrong = np.zeros_like(significant)
    for start in range(0, n_trials, TRIAL_BATCH):
        k = min(TRIAL_BATCH, n_trials - start)
        pick = gen.integers(0, pool_a.size, k)
        topics = gen.integers(0, n_top, (k, n))
        flips = _random_signs(gen, (k, n)) if null == "exchange" else None
        design = _Design.draw(gen, k, n, n_resamples, tests)
        z = data[:, pool_a[pick][:, None], topics] - data[:, pool_b[pick][:, None], topics]  # (metrics, trials, n)
        w = z * flips if flips is not None else z - shift[:, pick][:, :, None]
        delta = effects * (sigma[:, pick][:, :, None] if unit == "sd" else np.ones((n_metrics, k, 1)))
        rows = (w[:, :, None, :] + delta[:, :, :, None]).transpose(1, 0, 2, 3)  # (trials, metrics, effects, n)
        negative = rows.mean(axis=3) < 0
        p = _pvalues(rows.reshape(k, n_metrics * n_eff, n), tests, design)
        for j, test in enumerate(tests):
            hit = (p[test] < alpha).reshape(k, n_metrics, n_eff)
            significant[j] += hit.sum(axis=0)
            wrong[j] += (hit & negative).sum(axis=0)
    return {"significant": significant.transpose(1, 0, 2), "wrong": wrong.transpose(1, 0, 2)}


def _family_counts(n: int, *, data, alpha, null, n_resamples, seed, scale, family_size, tests, corrections,
                   effects, n_trials) -> dict[str, np.ndarray]:
    """Per metric, procedure and configuration (complete null, planted): trials with a false discovery, and the sums
    over trials of the false discovery proportion and of the power."""
    gen = _generator(seed, n, 1)
    n_metrics, n_sys, n_top = data.shape
    m = family_size
    ia, ib = pair_indices(m)
    raised = np.arange(m) >= m // 2  # the planted configuration raises the family's second half
    null_pair = np.stack([np.ones(ia.size, dtype=bool), raised[ia] == raised[ib]])  # per configuration
    expected = np.sign(raised[ia].astype(int) - raised[ib].astype(int))  # sign of a false null's mean difference
    procedures = _procedures(tests, corrections)
    shape = (n_metrics, len(procedures), effects.size)
    sums = {key: np.zeros(shape) for key in ("fwer", "fdp", "power")}
    centre = data.mean(axis=2)
    for start in range(0, n_trials, TRIAL_BATCH):
        k = min(TRIAL_BATCH, n_trials - start)
        members = np.argsort(gen.random((k, n_sys)), axis=1)[:, :m]
        topics = gen.integers(0, n_top, (k, n))
        shuffle = gen.permuted(np.broadcast_to(np.arange(m), (k, n, m)), axis=-1) if null == "exchange" else None
        design = _Design.draw(gen, k, n, n_resamples, tests)
        tukey = _tukey_design(gen, n, m, n_resamples) if "tukey" in corrections else None
        y = data[:, members[:, None, :], topics[:, :, None]]  # (metrics, trials, topics, systems)
        if shuffle is not None:
            y = np.take_along_axis(y, np.broadcast_to(shuffle, y.shape), axis=3)
        else:
            y = y - np.take_along_axis(centre[:, None, :], members[None], axis=2)[:, :, None, :]
        for c, effect in enumerate(effects):
            yc = y + (effect * scale)[:, None, None, None] * raised
            z = (yc[..., ia] - yc[..., ib]).transpose(1, 0, 3, 2)  # (trials, metrics, pairs, topics)
            right = np.sign(z.mean(axis=3)) == expected
            p = _pvalues(z.reshape(k, n_metrics * ia.size, n), tests, design)
            for j, (test, correction) in enumerate(procedures):
                for g in range(n_metrics):
                    if test == "tukey":
                        asl = _tukey_asl(yc[g], tukey, ia, ib)
                    else:
                        asl = _adjust(p[test].reshape(k, n_metrics, ia.size)[:, g], correction)
                    _family_outcome(sums, (g, j, c), asl < alpha, null_pair[c], right[:, g])
    return sums


def _procedures(tests: Sequence[str], corrections: Sequence[str]) -> list[tuple[str, str]]:
    """(test, correction) of every procedure: each test under each correction, then the Tukey HSD."""
    out = [(t, c) for t in tests for c in corrections if c != "tukey"]
    return out + ([("tukey", "tukey")] if "tukey" in corrections else [])


def _family_outcome(sums: dict, at: tuple[int, int, int], reject: np.ndarray, true_null: np.ndarray,
                    right: np.ndarray) -> None:
    """Add one batch of families: V (true nulls rejected), R (rejections), the false nulls rejected rightly."""
    false_discoveries = (reject & true_null).sum(axis=1)
    fdp = false_discoveries / np.maximum(reject.sum(axis=1), 1)
    sums["fwer"][at] += np.count_nonzero(false_discoveries)
    sums["fdp"][at] += fdp.sum()
    if (~true_null).any():
        sums["power"][at] += ((reject & ~true_null & right).sum(axis=1) / np.count_nonzero(~true_null)).sum()


# --------------------------------------------------------------------------------------------- resampling


def _random_signs(gen: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """±1 with probability 1/2 each, from random bits (eight per byte drawn)."""
    size = int(np.prod(shape))
    bits = np.unpackbits(np.frombuffer(gen.bytes((size + 7) // 8), dtype=np.uint8), count=size)
    return (1.0 - 2.0 * bits).reshape(shape)


@dataclass
class _Design:
    """The resampling of a batch of trials: per trial, bootstrap count matrices C[t, b] (times topic t is drawn in
    replicate b; :func:`meta_eval.statistics.significance.pairs.replicate_counts`) and sign vectors (or, when 2^n <= B, every
    sign vector once: the exact test, the same for every trial)."""

    counts: np.ndarray | None  # (trials, n, B)
    signs: np.ndarray | None  # (trials, n, B), or (n, 2^n) when exact
    exact: bool

    @classmethod
    def draw(cls, gen: np.random.Generator, k: int, n: int, n_resamples: int, tests: Sequence[str]) -> "_Design":
        counts = signs = None
        exact = False
        if "bootstrap" in tests:
            idx = gen.integers(0, n, (k, n_resamples, n), dtype=np.int32)
            flat = (idx + n * np.arange(k * n_resamples, dtype=np.int64).reshape(k, n_resamples, 1)).ravel()
            counts = np.bincount(flat, minlength=k * n_resamples * n).reshape(k, n_resamples, n) \
                .transpose(0, 2, 1).astype(np.float64)
        if "randomisation" in tests:
            from meta_eval.statistics.significance.randomisation import sign_matrix

            exact = n < 63 and 2**n <= n_resamples
            signs = sign_matrix(n, n_resamples)[0] if exact else _random_signs(gen, (k, n, n_resamples))
        return cls(counts, signs, exact)


def _tukey_design(gen: np.random.Generator, n: int, m: int, n_resamples: int):
    """The randomised Tukey HSD's permutations, shared by a batch of trials, as a sparse averaging matrix A of
    shape (B·m, n·m): (A y)[b·m + s] = (1/n) Σ_t y[t, π_bt(s)], system s's mean under permutation b, for a trial's
    scores y (n, m) flattened."""
    from scipy import sparse

    perms = gen.permuted(np.broadcast_to(np.arange(m), (n_resamples, n, m)), axis=-1)
    columns = (np.arange(n)[None, None, :] * m + perms.transpose(0, 2, 1)).ravel()  # row (b, s), then t
    rows = np.arange(n_resamples * m + 1) * n
    return sparse.csr_matrix((np.full(columns.size, 1.0 / n), columns, rows), shape=(n_resamples * m, n * m))


# --------------------------------------------------------------------------------------------- tests


def _pvalues(z: np.ndarray, tests: Sequence[str], design: _Design) -> dict[str, np.ndarray]:
    """p-values of every test for rows of paired differences z (trials, rows, n); a trial's rows share its
    resampling. Returns test -> (trials, rows)."""
    import warnings

    k, r, n = z.shape
    out: dict[str, np.ndarray] = {}
    for test in tests:
        if test == "ttest":
            t = abs_studentised(z.mean(axis=2), z.var(axis=2, ddof=1), n, np.abs(z).max(axis=2))
            out[test] = 2.0 * stats.t.sf(t, n - 1)
        elif test == "wilcoxon":
            with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                p = stats.wilcoxon(z, axis=2, correction=True, method="approx").pvalue
            out[test] = np.where(np.isnan(p), 1.0, p)  # every difference zero: nothing to test
        elif test == "sign":
            out[test] = sign_test_pvalues(z.reshape(k * r, n)).reshape(k, r)
        elif test == "bootstrap":
            out[test] = _chunked(_bootstrap_asl, z, design.counts, design.counts.shape[2])
        else:
            out[test] = _chunked(_randomisation_asl, z, design.signs, design.signs.shape[-1], exact=design.exact)
    return out


def _chunked(func, z: np.ndarray, resampling: np.ndarray, n_rep: int, **kwargs) -> np.ndarray:
    """``func`` over slices of rows, so that a (trials, rows, B) work array holds at most :data:`WORK_ELEMENTS`."""
    k, r, _ = z.shape
    step = max(1, WORK_ELEMENTS // max(1, k * n_rep))
    return np.concatenate([func(z[:, s:s + step], resampling, **kwargs) for s in range(0, r, step)], axis=1)


def _bootstrap_asl(z: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Sakai's paired bootstrap ASL of each row, the formulas of :func:`~meta_eval.statistics.significance.paired_bootstrap` with
    each trial's count matrix: t_obs = z̄ / (σ̂/√n); w = z - z̄; t*_b from Σ_t C[t, b] w_t and
    Σ_t C[t, b] w_t²; ASL = #{b : |t*_b| >= |t_obs|} / B."""
    n, n_rep = counts.shape[1], counts.shape[2]
    zbar = z.mean(axis=2)
    scale = np.abs(z).max(axis=2)
    t_obs = abs_studentised(zbar, z.var(axis=2, ddof=1), n, scale)
    w = z - zbar[:, :, None]
    mean = np.matmul(w, counts)
    mean /= n
    var = np.matmul(w * w, counts)
    var -= n * (mean * mean)
    var /= n - 1
    t_star = abs_studentised(mean, var, n, scale[:, :, None])
    return np.count_nonzero(t_star >= t_obs[:, :, None] * (1.0 - TIE_RTOL), axis=2) / n_rep


def _randomisation_asl(z: np.ndarray, signs: np.ndarray, *, exact: bool) -> np.ndarray:
    """The paired randomisation test's ASL of each row (:func:`~meta_eval.statistics.significance.randomisation_test`):
    #{b : |mean(s_b ⊙ z)| >= |mean(z)|} / 2^n when every sign vector is listed, else (# + 1) / (B + 1)."""
    n = z.shape[2]
    n_rep = signs.shape[-1]
    observed = np.abs(z.mean(axis=2))
    resampled = np.abs(np.matmul(z, signs)) / n
    count = np.count_nonzero(resampled >= observed[:, :, None] * (1.0 - TIE_RTOL), axis=2)
    asl = count / n_rep if exact else (count + 1.0) / (n_rep + 1.0)
    return np.minimum(asl, 1.0)


def _tukey_asl(y: np.ndarray, averaging, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """The randomised Tukey HSD's ASL of every pair of each trial's family (:func:`~meta_eval.statistics.significance.tukey_hsd`):
    hsd_b = max_s m*_s - min_s m*_s over the topic-blocked permutations; ASL = #{b : hsd_b >= |ȳ_a - ȳ_b|} / B."""
    k, n, m = y.shape
    n_rep = averaging.shape[0] // m
    means = (averaging @ y.reshape(k, n * m).T).T.reshape(k, n_rep, m)
    hsd = means.max(axis=2) - means.min(axis=2)
    system_means = y.mean(axis=1)
    diff = np.abs(system_means[:, ia] - system_means[:, ib]) * (1.0 - TIE_RTOL)
    return np.count_nonzero(hsd[:, None, :] >= diff[:, :, None], axis=2) / n_rep


def _adjust(p: np.ndarray, correction: str) -> np.ndarray:
    """p-values adjusted over each row (one family per row): Bonferroni min(1, m p), Holm's step-down
    max_{j <= i} min(1, (m - j + 1) p_(j)), Benjamini-Hochberg (``scipy.stats.false_discovery_control``). Written
    row-wise here because :func:`~meta_eval.statistics.significance.adjust_pvalues` adjusts one array as one family."""
    n_tests = p.shape[1]
    if correction == "none":
        return p
    if correction == "bonferroni":
        return np.minimum(1.0, n_tests * p)
    if correction == "bh":
        return stats.false_discovery_control(p, axis=1, method="bh")
    order = np.argsort(p, axis=1, kind="stable")
    ordered = np.take_along_axis(p, order, axis=1)
    adjusted = np.minimum(1.0, np.maximum.accumulate((n_tests - np.arange(n_tests)) * ordered, axis=1))
    out = np.empty_like(p)
    np.put_along_axis(out, order, adjusted, axis=1)
    return out


# --------------------------------------------------------------------------------------------- frames


def _noncentral_t_power(n: int, d: np.ndarray, alpha: float) -> np.ndarray:
    """Power of the two-sided paired t-test at α with n normal differences of standardised mean d:
    P(|T| > t_{1-α/2, n-1}) with T ~ noncentral t(n - 1, d √n)."""
    df = n - 1
    critical = stats.t.ppf(1 - alpha / 2, df)
    ncp = np.asarray(d, dtype=np.float64) * np.sqrt(n)
    return stats.nct.sf(critical, df, ncp) + stats.nct.cdf(-critical, df, ncp)


def _pairs_frame(metrics, sizes, tests, effects, unit, by_task, n_trials, alpha, confidence) -> pd.DataFrame:
    all_effects = np.concatenate([[0.0], effects])
    rows = []
    for n in sizes:
        counts = by_task[("pairs", n)]
        theory = _noncentral_t_power(n, all_effects, alpha) if unit == "sd" else np.full(all_effects.size, np.nan)
        for g, metric in enumerate(metrics):
            for j, test in enumerate(tests):
                for e, effect in enumerate(all_effects):
                    rows.append((metric, test, n, effect, n_trials, int(counts["significant"][g, j, e]),
                                 int(counts["wrong"][g, j, e]) if effect > 0 else np.nan, theory[e]))
    frame = pd.DataFrame(rows, columns=["metric", "test", "topics", "effect", "trials", "significant", "wrong_sign",
                                        "theory"])
    frame["rate"] = frame["significant"] / frame["trials"]
    frame["rate_low"], frame["rate_high"] = wilson_interval(frame["significant"], frame["trials"], confidence)
    frame["type3"] = frame["wrong_sign"] / frame["trials"]
    frame["type3_low"], frame["type3_high"] = wilson_interval(frame["wrong_sign"], frame["trials"], confidence)
    return frame[["metric", "test", "topics", "effect", "trials", "significant", "rate", "rate_low", "rate_high",
                  "wrong_sign", "type3", "type3_low", "type3_high", "theory"]]


def procedure_label(test: str, correction: str) -> str:
    """``t-test + Holm``, ``Wilcoxon`` (uncorrected), ``Tukey HSD``."""
    if test == "tukey":
        return CORRECTION_LABELS["tukey"]
    return TEST_LABELS[test] + (f" + {CORRECTION_LABELS[correction]}" if correction != "none" else "")


def _families_frame(metrics, sizes, tests, corrections, family_effect, family_size, by_task, trials,
                    confidence) -> pd.DataFrame:
    columns = ["metric", "procedure", "test", "correction", "topics", "effect", "trials", "pairs", "true_nulls",
               "fwer", "fwer_low", "fwer_high", "fdr", "fdr_low", "fdr_high", "power", "power_low", "power_high"]
    if not sizes:
        return pd.DataFrame(columns=columns)
    procedures = _procedures(tests, corrections)
    m = family_size
    n_pairs = m * (m - 1) // 2
    half = m // 2
    planted_nulls = half * (half - 1) // 2 + (m - half) * (m - half - 1) // 2
    rows = []
    for n in sizes:
        sums = by_task[("families", n)]
        for g, metric in enumerate(metrics):
            for j, (test, correction) in enumerate(procedures):
                for c, effect in enumerate((0.0, family_effect)):
                    true_nulls = n_pairs if c == 0 else planted_nulls
                    at = (g, j, c)
                    fwer = sums["fwer"][at] / trials if true_nulls else np.nan
                    fwer_ci = wilson_interval(sums["fwer"][at], trials, confidence) if true_nulls else (np.nan,) * 2
                    fdr = sums["fdp"][at] / trials
                    power = sums["power"][at] / trials if c == 1 else np.nan
                    # FDR and power are means of values in [0, 1], whose variance is at most that of Bernoulli
                    # variables of the same mean: Wilson's interval with the mean as the proportion is conservative
                    rows.append((metric, procedure_label(test, correction), test, correction, n, effect, trials,
                                 n_pairs, true_nulls, fwer, *fwer_ci, fdr,
                                 *wilson_interval(sums["fdp"][at], trials, confidence), power,
                                 *(wilson_interval(sums["power"][at], trials, confidence) if c == 1
                                   else (np.nan,) * 2)))
    return pd.DataFrame(rows, columns=columns)
