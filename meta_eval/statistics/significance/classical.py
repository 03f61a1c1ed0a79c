"""Classical paired tests of every system pair (t-test, Wilcoxon signed-rank, sign test) and the Holm, Bonferroni
and Benjamini-Hochberg corrections, for comparison with the bootstrap."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from scipy import stats

from meta_eval.statistics.significance.pairs import (PairwiseTest, abs_studentised, check_alpha, check_scores,
                                                     resolve_pairs)
from meta_eval.core.errors import InputError

TESTS = ("ttest", "wilcoxon", "sign")
CORRECTIONS = ("holm", "bonferroni", "bh")


def holm(pvalues) -> np.ndarray:
    """Holm (1979) step-down adjusted p-values.

    With p_(1) <= ... <= p_(m): p̃_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)).
    """
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adjusted
    return out


def bonferroni(pvalues) -> np.ndarray:
    """Bonferroni adjusted p-values: min(1, m p_i)."""
    p = np.asarray(pvalues, dtype=np.float64)
    return np.minimum(1.0, p.size * p)


def adjust_pvalues(pvalues, correction: str | None) -> np.ndarray:
    """p-values adjusted for multiple comparisons over the whole array: ``None``/``"none"``, ``"holm"``,
    ``"bonferroni"`` or ``"bh"`` (Benjamini-Hochberg)."""
    p = np.asarray(pvalues, dtype=np.float64)
    if correction in (None, "none"):
        return p.copy()
    if correction not in CORRECTIONS:
        raise InputError(f"unknown correction {correction!r}; expected none or one of {', '.join(CORRECTIONS)}")
    return {"holm": holm, "bonferroni": bonferroni, "bh": benjamini_hochberg}[correction](p)


def benjamini_hochberg(pvalues) -> np.ndarray:
    """Benjamini-Hochberg (1995) adjusted p-values (``scipy.stats.false_discovery_control(method='bh')``)."""
    p = np.asarray(pvalues, dtype=np.float64)
    return stats.false_discovery_control(p, method="bh") if p.size else p


def sign_test_pvalues(diffs: np.ndarray) -> np.ndarray:
    """Two-sided exact sign test per row of ``diffs``: ties (zero differences) are dropped.

    p = min(1, 2 P[Bin(n, 1/2) <= min(n+, n-)]) with n = n+ + n-; p = 1 when n = 0. Same as
    ``scipy.stats.binomtest(n+, n, 0.5).pvalue`` (checked in the tests).
    """
    pos = (diffs > 0).sum(axis=1)
    neg = (diffs < 0).sum(axis=1)
    n = pos + neg
    p = np.minimum(1.0, 2.0 * stats.binom.cdf(np.minimum(pos, neg), n, 0.5))
    return np.where(n == 0, 1.0, p)


def classical_test(
    scores,
    systems: Sequence[str] | None = None,
    *,
    test: str = "ttest",
    correction: str | None = None,
    alpha: float = 0.05,
    pairs: tuple[np.ndarray, np.ndarray] | None = None,
) -> PairwiseTest:
    """A classical paired test of every pair of systems (or of the given pairs) over the shared topics.

    Parameters
    ----------
    scores : array_like, shape (S, T)
    systems : sequence of str, optional
    test : {'ttest', 'wilcoxon', 'sign'}
        ``ttest``: ``scipy.stats.ttest_rel`` (two-sided); ``wilcoxon``: ``scipy.stats.wilcoxon`` (two-sided,
        zero differences dropped, exact for small samples without ties); ``sign``: exact binomial sign test.
    correction : {None, 'holm', 'bonferroni', 'bh'}
        Multiple-comparison adjustment over the pairs tested: Holm's step-down or Bonferroni (family-wise error),
        Benjamini-Hochberg (false discovery rate).
    alpha : float
    pairs : (array of int, array of int), optional
        Test only these pairs (a, b) of system positions (default all C(S, 2) pairs a < b).

    Returns
    -------
    PairwiseTest
        ``asl`` holds the (adjusted) p-values; method is e.g. ``ttest`` or ``wilcoxon-holm``. Pairs whose test
        is undefined (identical systems: zero differences on every topic) get p = 1. ``diff_required`` is NaN.
    """
    x, names = check_scores(scores, systems)
    alpha = check_alpha(alpha)
    if test not in TESTS:
        raise InputError(f"unknown classical test {test!r}; expected one of {TESTS}")
    if correction not in (None, *CORRECTIONS):
        raise InputError(f"unknown correction {correction!r}; expected None or one of {CORRECTIONS}")
    ia, ib = resolve_pairs(x.shape[0], pairs)
    diffs = x[ia] - x[ib]
    with np.errstate(divide="ignore", invalid="ignore"):
        if test == "ttest":
            with warnings.catch_warnings():  # scipy's "catastrophic cancellation": the s.d. = 0 rule decides below
                warnings.simplefilter("ignore", RuntimeWarning)
                p = _zero_sd_rule(diffs, stats.ttest_rel(x[ia], x[ib], axis=1).pvalue)
        elif test == "wilcoxon":
            p = _wilcoxon(diffs)
        else:
            p = sign_test_pvalues(diffs)
    p = adjust_pvalues(np.where(np.isnan(p), 1.0, p), correction)
    means = x.mean(axis=1)
    return PairwiseTest(
        method=test if correction is None else f"{test}-{correction}",
        systems=names,
        pair_a=ia,
        pair_b=ib,
        difference=means[ia] - means[ib],
        asl=np.asarray(p, dtype=np.float64),
        alpha=alpha,
    )


def _zero_sd_rule(diffs: np.ndarray, p: np.ndarray) -> np.ndarray:
    """t-test p-values with the s.d. = 0 rule of the other tests (:func:`~meta_eval.statistics.significance.pairs.
    abs_studentised`): differences constant within rounding (a difference of 0.1 on every topic leaves an s.d. of
    1e-17, and scipy a p-value of that noise) get p = 0, and a mean within rounding of zero p = 1."""
    scale = np.abs(diffs).max(axis=1, initial=0.0)
    t = abs_studentised(diffs.mean(axis=1), diffs.var(axis=1, ddof=1), diffs.shape[1], scale)
    return np.where(np.isinf(t), 0.0, np.where(t == 0, 1.0, p))


def _wilcoxon(diffs: np.ndarray) -> np.ndarray:
    """Wilcoxon signed-rank p-values per row, each as ``scipy.stats.wilcoxon(row)`` gives it; rows of all zeros
    get p = 1.

    scipy's vectorised call chooses the exact or the normal-approximation method once for the whole array (ties or
    zero differences in any row make every row approximate), so the rows are tested in two groups: those without
    ties or zeros (exact for n <= 50, as scipy does for a single row) and the others.
    """
    import warnings

    p = np.ones(diffs.shape[0])
    live = np.any(diffs != 0, axis=1)
    magnitude = np.sort(np.abs(diffs), axis=1)
    irregular = (magnitude[:, 0] == 0) | np.any((np.diff(magnitude, axis=1) == 0) & (magnitude[:, 1:] > 0), axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for group in (live & ~irregular, live & irregular):
            if group.any():
                p[group] = stats.wilcoxon(diffs[group], axis=1).pvalue
    return p
