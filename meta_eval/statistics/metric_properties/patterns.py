"""The 136-pattern comparison of multi-grade metrics (Kishida 2005, §4.3, Tables 3–5).

Three relevant documents of grades 3, 2 and 1 exist; a system shows n = 5 documents. A pattern places any subset of
the three relevant documents at distinct positions (the other positions hold non-relevant documents):
Σ_k C(3, k)·5!/(5 − k)! = 1 + 15 + 60 + 60 = 136 patterns, from "32100" to "00000". Each metric is computed with
the qrels holding the three relevant documents (counts [.., 1, 1, 1]); binary AP treats grade > 0 as relevant.
Table 3: mean and standard deviation (n − 1 divisor) over the 136 patterns; Table 4: Pearson correlations; Table
5: five characteristic patterns and ratios of their scores (from unrounded scores).
"""

from __future__ import annotations

from itertools import combinations, permutations
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from meta_eval.core.errors import InputError
from meta_eval.statistics.metric_properties.metric_input import MetricLike, as_metric
from meta_eval.model.rankings import Rankings

__all__ = [
    "KISHIDA_METRICS", "TABLE5_PATTERNS", "TABLE5_RATIOS", "characteristic_patterns", "kishida_patterns",
    "pattern_correlations", "pattern_scores", "pattern_statistics",
]

KISHIDA_METRICS = {"vS'": "vS'", "vD": "vD", "vQ": "vQ", "vG": "vG"}
"""Kishida's four indicators as registered measures: MSR (Eq. 27), ANDCG (Eq. 32, J&K discount b = 2), Q (Eq. 35,
β = 1, gain = grade), GenAP (Eq. 42)."""
TABLE5_PATTERNS = {"a": "32000", "b": "00123", "c": "03210", "d": "30000", "e": "00003"}
TABLE5_RATIOS = (("b", "a"), ("c", "a"), ("d", "a"), ("e", "d"))


def kishida_patterns(grades: Sequence[int] = (3, 2, 1), n: int = 5) -> np.ndarray:
    """Every placement of any subset of the relevant ``grades`` into ``n`` positions: ``(P, n)`` int array,
    sorted from the best-looking string ("32100") down to "00000".

    Examples
    --------
    >>> kishida_patterns().shape
    (136, 5)
    """
    grades = tuple(int(g) for g in grades)
    if any(g <= 0 for g in grades) or len(set(grades)) != len(grades) or len(grades) > n:
        raise InputError(f"grades must be distinct positive grades, at most n={n} of them; got {grades}")
    found = set()
    for k in range(len(grades) + 1):
        for subset in combinations(grades, k):
            for where in permutations(range(n), k):
                row = [0] * n
                for g, p in zip(subset, where):
                    row[p] = g
                found.add(tuple(row))
    return np.array(sorted(found, reverse=True), dtype=np.int64)


def _labels(patterns: np.ndarray) -> list[str]:
    return ["".join(str(int(g)) for g in row) for row in patterns]


def pattern_scores(
    metrics: Iterable[MetricLike] | None = None,
    grades: Sequence[int] = (3, 2, 1),
    n: int = 5,
    include_ap: bool = True,
) -> pd.DataFrame:
    """Scores of every pattern: rows = pattern strings, columns = metrics.

    Parameters
    ----------
    metrics : iterable of str, Measure or callable, optional
        Default Kishida's four (vS', vD, vQ, vG). Add any registered measure (``"GAP(g=0.2,0.3,0.5)"``,
        ``"nDCG(gain=exp)"``) or a function of :class:`~meta_eval.model.rankings.Rankings` as extra columns.
    include_ap : bool
        Append binary ``AP`` (grade > 0 relevant), the last row of Table 4.
    """
    patterns = kishida_patterns(grades, n)
    counts = np.zeros(max(grades) + 1, dtype=np.int64)
    counts[list(grades)] = 1
    r = Rankings(grades=patterns.astype(np.int16), n_ret=np.full(len(patterns), n),
                 counts=np.broadcast_to(counts, (len(patterns), len(counts))))
    chosen = list(KISHIDA_METRICS) if metrics is None else list(metrics)
    if include_ap and "AP" not in chosen:
        chosen.append("AP")
    columns = {}
    for metric in chosen:
        name, func = as_metric(metric)
        columns[name] = np.broadcast_to(np.asarray(func(r), dtype=np.float64), r.shape)
    return pd.DataFrame(columns, index=pd.Index(_labels(patterns), name="pattern"))


def pattern_statistics(scores: pd.DataFrame) -> pd.DataFrame:
    """Table 3: ``average`` and ``std. dev.`` (n − 1 divisor) of each column."""
    return pd.DataFrame({"average": scores.mean(), "std. dev.": scores.std(ddof=1)}).T


def pattern_correlations(scores: pd.DataFrame) -> pd.DataFrame:
    """Table 4: Pearson correlation matrix of the columns."""
    return scores.corr(method="pearson")


def characteristic_patterns(scores: pd.DataFrame, patterns: dict[str, str] | None = None,
                            ratios: Sequence[tuple[str, str]] = TABLE5_RATIOS) -> pd.DataFrame:
    """Table 5: the scores of the characteristic patterns (rows ``a``..``e``) and the ratios ``b/a`` ... ``e/d``
    computed from unrounded scores."""
    patterns = TABLE5_PATTERNS if patterns is None else patterns
    missing = [p for p in patterns.values() if p not in scores.index]
    if missing:
        raise InputError(f"patterns {missing} are not among the scored patterns")
    rows = {key: scores.loc[pattern] for key, pattern in patterns.items()}
    for num, den in ratios:
        rows[f"{num}/{den}"] = rows[num] / rows[den]
    order = []
    for key in patterns:
        order.append(key)
        order.extend(f"{n}/{d}" for n, d in ratios if n == key)
    return pd.DataFrame({k: rows[k] for k in order}).T
