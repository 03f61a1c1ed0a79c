"""Comparing runs with significance tests: every run against a baseline (or every pair of runs), per measure.

For each (run, baseline, measure): the mean scores, the mean per-topic difference with its Student t confidence
interval, the effect size, a p-value from one of four paired tests, the p-value adjusted for the comparisons made
with that measure, and the topics won, tied and lost. The tests are those of :mod:`meta_eval.statistics.significance` (one
implementation each): paired t and Wilcoxon signed-rank (scipy), Sakai's (2006) paired bootstrap, and the paired
randomisation test. The compare analysis (:mod:`meta_eval.analyses.compare`) renders the result as a
ranx/PyTerrier-style table of means with significance markers.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from meta_eval.core.errors import InputError
from meta_eval.core.params import ANALYSIS_PARAMS

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["BETTER", "COLUMNS", "CORRECTIONS", "CORRECTION_NAMES", "Comparison", "TESTS", "WORSE", "compare"]

TESTS = ("t", "wilcoxon", "bootstrap", "randomisation")
CORRECTIONS = ("holm", "bonferroni", "bh", "none")
#: Columns of :attr:`Comparison.table` (and of the CSV ``meta-eval compare -o FILE.csv`` writes).
COLUMNS = ("run", "baseline", "measure", "mean", "baseline_mean", "diff", "ci_low", "ci_high", "effect_size", "test",
           "p_value", "p_adjusted", "correction", "wins", "ties", "losses")
BETTER, WORSE = "▲", "▼"


@dataclass(frozen=True)
class Comparison:
    """Result of :func:`compare`.

    Attributes
    ----------
    table : DataFrame
        One row per (run, baseline, measure) with the columns :data:`COLUMNS`.
    means : DataFrame
        Mean score of every run (rows, in input order) under every measure (columns).
    baseline : str or None
        The baseline run, or None when every pair was compared.
    test, correction : str
    alpha, confidence : float
    n_resamples : int or None
        B of the bootstrap / randomisation test.
    seed : int or None
    n_topics : int
    """

    table: pd.DataFrame
    means: pd.DataFrame
    baseline: str | None
    test: str
    correction: str
    alpha: float
    confidence: float
    n_resamples: int | None
    seed: int | None
    n_topics: int

    def significant(self) -> pd.Series:
        """Boolean per row of :attr:`table`: adjusted p-value < alpha."""
        return self.table["p_adjusted"] < self.alpha

    def letters(self) -> dict[str, str]:
        """The letter of each run in the all-pairs table (a, b, ..., z, aa, ab, ...), ranx-style."""
        out = {}
        for i, run in enumerate(self.means.index):
            word, k = "", i
            while True:
                word = string.ascii_lowercase[k % 26] + word
                k = k // 26 - 1
                if k < 0:
                    break
            out[str(run)] = word
        return out

    def to_csv(self, path=None, **kwargs):
        """The comparisons as CSV (columns :data:`COLUMNS`, full precision)."""
        return self.table.to_csv(path, index=False, **kwargs)


CORRECTION_NAMES = {"holm": "Holm", "bonferroni": "Bonferroni", "bh": "Benjamini-Hochberg"}


def _scores_from(data, measures, systems):
    """(names, {measure: (S, T) array}, systems, n_topics) from a Collection or a mapping."""
    from meta_eval.model.collection import Collection

    if isinstance(data, Collection):
        if not measures:
            raise InputError("compare needs at least one measure (e.g. measures=['AP', 'nDCG@10'])")
        from meta_eval.measures.resolver import resolve
        from meta_eval.measures.scoring import per_topic_many

        resolved = resolve(measures)  # one pass over the lists for every measure
        return dict(zip((m.output_name for m in resolved), per_topic_many(data, resolved))), list(data.systems)
    if not isinstance(data, Mapping) or not data:
        raise InputError("compare takes a Collection or a non-empty mapping measure -> (runs x topics) scores; got "
                         f"{type(data).__name__}")
    wanted = list(data) if measures is None else ([measures] if isinstance(measures, str) else list(measures))
    unknown = [m for m in wanted if m not in data]
    if unknown:
        raise InputError(f"no scores for measures {unknown}; have {list(data)}")
    return {m: data[m] for m in wanted}, systems


def _check_choice(value: str, allowed: Sequence[str], name: str) -> str:
    value = getattr(value, "value", value)
    if value not in allowed:
        raise InputError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def _pairs(systems: list[str], baseline: str | None, all_pairs: bool) -> tuple[np.ndarray, np.ndarray, str | None]:
    if all_pairs:
        if baseline is not None:
            raise InputError("give either a baseline or all_pairs=True, not both")
        a, b = np.triu_indices(len(systems), 1)
        return a, b, None
    base = systems[0] if baseline is None else baseline
    if base not in systems:
        import difflib

        close = difflib.get_close_matches(str(base), systems, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; runs are e.g. {', '.join(systems[:5])}"
        raise InputError(f"baseline {base!r} is not one of the runs{hint}")
    j = systems.index(base)
    a = np.array([i for i in range(len(systems)) if i != j], dtype=np.intp)
    return a, np.full(a.size, j, dtype=np.intp), base


def _pvalues(x: np.ndarray, pairs, test: str, alpha: float, n_resamples: int | None, seed, progress: bool):
    from meta_eval.statistics.significance.bootstrap import paired_bootstrap
    from meta_eval.statistics.significance.classical import classical_test
    from meta_eval.statistics.significance.randomisation import DEFAULT_RANDOMISATIONS, randomisation_test

    if test == "t":
        return classical_test(x, test="ttest", alpha=alpha, pairs=pairs).asl
    if test == "wilcoxon":
        return classical_test(x, test="wilcoxon", alpha=alpha, pairs=pairs).asl
    if test == "bootstrap":
        return paired_bootstrap(x, n_resamples=1000 if n_resamples is None else n_resamples, alpha=alpha,
                                seed=seed, pairs=pairs, progress=progress).asl
    return randomisation_test(x, n_resamples=DEFAULT_RANDOMISATIONS if n_resamples is None else n_resamples,
                              alpha=alpha, seed=seed, pairs=pairs, progress=progress).asl


def difference_interval(diffs: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean of each row of per-topic differences with its Student t interval, and Cohen's d_z.

    ::

        d̄ ± t_{n-1, (1+c)/2} · s / √n,     d_z = d̄ / s        (s: the n-1 standard deviation of the differences)

    Rows with s = 0 get the interval [d̄, d̄] and d_z = NaN (undefined); s = 0 as the significance tests decide it,
    within rounding (:func:`~meta_eval.statistics.significance.pairs.no_spread`: a constant difference of 0.1 leaves
    s ~ 1e-17, which made d_z ~ 3e15). The interval is ``scipy.stats.ttest_rel(a, b).confidence_interval(c)``
    (checked in the tests).
    """
    from scipy import stats

    from meta_eval.statistics.significance.pairs import no_spread

    n = diffs.shape[1]
    mean = diffs.mean(axis=1)
    sd = diffs.std(axis=1, ddof=1)
    sd = np.where(no_spread(sd * sd, np.abs(diffs).max(axis=1, initial=0.0)), 0.0, sd)
    half = stats.t.ppf((1 + confidence) / 2, n - 1) * sd / np.sqrt(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        effect = np.where(sd > 0, mean / np.where(sd > 0, sd, 1.0), np.nan)
    return mean - half, mean + half, effect


def compare(
    data,
    measures: str | Sequence[str] | None = None,
    *,
    systems: Sequence[str] | None = None,
    baseline: str | None = None,
    all_pairs: bool = False,
    test: str = "t",
    correction: str = "holm",
    alpha: float = 0.05,
    confidence: float = 0.95,
    n_resamples: int | None = None,
    seed: int | None = 0,
    progress: bool = False,
) -> Comparison:
    """Compare runs against a baseline (or all pairs of runs) under each measure, with significance tests.

    Parameters
    ----------
    data : Collection or mapping measure -> array (S, T)
        A collection (scored here with :func:`meta_eval.score`) or per-topic scores of S runs on T topics.
    measures : str or sequence of str, optional
        Measures to compare on (required with a Collection; default every key of a mapping).
    systems : sequence of str, optional
        Run names of a mapping's rows (default ``s0 ..``).
    baseline : str, optional
        The run every other run is compared with (default: the first run).
    all_pairs : bool
        Compare every pair of runs instead (a < b in input order; ``diff`` = mean(run) - mean(baseline column)).
    test : {"t", "wilcoxon", "bootstrap", "randomisation"}
        Paired t-test (``scipy.stats.ttest_rel``), Wilcoxon signed-rank (``scipy.stats.wilcoxon``), Sakai's
        paired bootstrap (B = 1000) or the paired randomisation test (B = 10,000); all two-sided.
    correction : {"holm", "bonferroni", "bh", "none"}
        Multiple-comparison adjustment over the comparisons of one measure (the family is "all runs compared
        under this measure"), as ``statsmodels.stats.multitest.multipletests``.
    alpha : float
        Significance level of the markers and of :meth:`Comparison.significant`.
    confidence : float
        Level of the t interval of each mean difference.
    n_resamples : int, optional
        B of the bootstrap or randomisation test.
    seed : int or None
        Seed of the bootstrap / randomisation (one design shared by every comparison).
    progress : bool

    Returns
    -------
    Comparison
        ``.table`` (one row per comparison), ``.means``, ``.significant()``, ``.letters()``, ``.to_csv()``.

    Notes
    -----
    ``effect_size`` is Cohen's d_z, the mean difference over the standard deviation of the differences (paired
    design). ``wins``/``ties``/``losses`` count topics where the run scores higher than, exactly the same as, or
    lower than the baseline. ``mean`` is the arithmetic mean of the per-topic scores (the tests are about it).

    Examples
    --------
    >>> import meta_eval as me
    >>> res = me.compare(me.demo_collection(), ["AP", "nDCG@10"], baseline="sys01")
    >>> list(res.table.columns[:4])
    ['run', 'baseline', 'measure', 'mean']
    """
    import pandas as pd

    from meta_eval.statistics.significance.pairs import check_alpha, check_scores
    from meta_eval.statistics.significance.classical import adjust_pvalues

    test = _check_choice(test, TESTS, "test")
    correction = _check_choice(correction, CORRECTIONS, "correction")
    alpha = check_alpha(alpha)
    confidence = ANALYSIS_PARAMS["confidence"].validate(confidence, "compare")  # the analyses' one check ("0.9" too)
    scores, systems = _scores_from(data, measures, systems)
    checked = {}
    for name, value in scores.items():
        try:
            checked[name], names = check_scores(value, systems)
        except InputError as exc:
            raise InputError(f"measure {name}: {exc}") from None
    shapes = {v.shape for v in checked.values()}
    if len(shapes) != 1:
        raise InputError(f"every measure needs scores of the same runs and topics; got shapes {sorted(shapes)}")
    systems = list(names)
    a, b, base = _pairs(systems, baseline, all_pairs)
    frames = []
    for name, x in checked.items():
        diffs = x[a] - x[b]
        lo, hi, effect = difference_interval(diffs, confidence)
        p = _pvalues(x, (a, b), test, alpha, n_resamples, seed, progress)
        frames.append(pd.DataFrame({
            "run": np.asarray(systems, dtype=object)[a], "baseline": np.asarray(systems, dtype=object)[b],
            "measure": name, "mean": x[a].mean(axis=1), "baseline_mean": x[b].mean(axis=1),
            "diff": diffs.mean(axis=1), "ci_low": lo, "ci_high": hi, "effect_size": effect, "test": test,
            "p_value": p, "p_adjusted": adjust_pvalues(p, correction), "correction": correction,
            "wins": (diffs > 0).sum(axis=1), "ties": (diffs == 0).sum(axis=1), "losses": (diffs < 0).sum(axis=1)}))
    table = pd.concat(frames, ignore_index=True)[list(COLUMNS)]
    means = pd.DataFrame({name: x.mean(axis=1) for name, x in checked.items()}, index=pd.Index(systems, name="run"))
    n_topics = next(iter(checked.values())).shape[1]
    return Comparison(table=table, means=means, baseline=base, test=test, correction=correction, alpha=alpha,
                      confidence=confidence, n_resamples=n_resamples, seed=seed, n_topics=n_topics)
