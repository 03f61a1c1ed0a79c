"""AP, precision and recall against the positions of relevant documents (the IJCSIT 2015 paper, §3.2 and §4).

The paper's setting: a ranked list of n = 20 documents for a topic with R = 10 relevant documents in the
collection; precision = C(20)/20, recall = C(20)/R. Its Table 1 values imply AP = (1/R) Σ_i x_i p_i with R = 10
(the TREC convention), not the division by the number of relevant documents *retrieved* that its Eq. 6 prints
(which would give AP = 1 for the first row instead of the printed 0.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from meta_eval.core.errors import InputError
from meta_eval.statistics.metric_properties.metric_input import MetricLike, as_metric, rn_grades
from meta_eval.statistics.metric_properties.sensitivity import metric_increment
from meta_eval.model.rankings import Rankings

__all__ = [
    "SwitchResult", "TRANSLATION_LISTS", "single_relevant_profile", "switched_judgments", "tail_relevant_table",
    "translation_table",
]

TRANSLATION_LISTS = {"No": "11000 01011 00000 00000", "Yes": "10000 00000 00001 00000"}
"""The paper's Table 2: relevance of the top 20 for the original query and after round-trip translation."""


def _metrics(n: int) -> tuple[str, ...]:
    return ("AP", f"P@{n}", f"Recall@{n}")


def _score(lists: list[list[int]], R: int, metrics: Sequence[MetricLike]) -> dict[str, np.ndarray]:
    n = len(lists[0])
    r = Rankings.from_lists(lists, [[n, R]])
    return {as_metric(m)[0]: np.asarray(as_metric(m)[1](r)) for m in metrics}


def _pattern(grades: Sequence[int]) -> str:
    text = "".join(str(g) for g in grades)
    return " ".join(text[i: i + 5] for i in range(0, len(text), 5))


def single_relevant_profile(n: int = 20, R: int = 10, metrics: Sequence[MetricLike] | None = None) -> pd.DataFrame:
    """The data of the paper's Figure 3: one relevant document at position i = 1..n of an n-list (R relevant in
    the collection). AP = 1/(R·i) falls fast over the first ten positions; precision 1/n and recall 1/R are flat.

    Returns a DataFrame indexed by ``position`` with one column per metric.
    """
    if n < 1 or R < 1:
        raise InputError(f"need n >= 1 and R >= 1, got n={n}, R={R}")
    lists = np.eye(n, dtype=np.int64).tolist()
    scores = _score(lists, R, metrics or _metrics(n))
    return pd.DataFrame(scores, index=pd.Index(np.arange(1, n + 1), name="position"))


def tail_relevant_table(n: int = 20, R: int = 10, max_k: int = 6,
                        metrics: Sequence[MetricLike] | None = None) -> pd.DataFrame:
    """The paper's Table 1: a single relevant document first, then k = 1..max_k relevant documents at the end of
    the list. Rows are labelled by the relevance pattern (groups of five)."""
    if not 1 <= max_k <= n:
        raise InputError(f"max_k must be in 1..{n}, got {max_k}")
    first = [1] + [0] * (n - 1)
    lists = [first] + [[0] * (n - k) + [1] * k for k in range(1, max_k + 1)]
    scores = _score(lists, R, metrics or _metrics(n))
    return pd.DataFrame(scores, index=pd.Index([_pattern(g) for g in lists], name="judgments"))


def translation_table(lists: dict[str, str] | None = None, R: int = 10,
                      metrics: Sequence[MetricLike] | None = None) -> pd.DataFrame:
    """The paper's Table 2: AP, precision and recall of the top 20 without and with translation of the query."""
    lists = lists or TRANSLATION_LISTS
    grades = [rn_grades(s) for s in lists.values()]
    if len({len(g) for g in grades}) != 1:
        raise InputError("all lists must have the same length")
    scores = _score(grades, R, metrics or _metrics(len(grades[0])))
    return pd.DataFrame(scores, index=pd.Index(list(lists), name="translated"))


@dataclass
class SwitchResult:
    """ΔAP (or any metric) of k switched judgments.

    ``total``: metric after switching all k at once minus before; ``steps``: the k successive single-switch
    increments in the given order (they telescope to ``total``: the paper's "k simultaneous switches provoke the
    same change as k successive single switches"); ``independent``: each single switch applied alone to the
    original list; ``interaction`` = total − Σ independent (not 0 in general: a switch at j also raises the
    precision at every relevant rank below j).
    """

    total: float
    steps: np.ndarray
    independent: np.ndarray
    interaction: float


def switched_judgments(grades: Sequence[int], positions: Sequence[int], counts: Sequence[int] | None = None,
                       metric: MetricLike = "AP", count: str = "fixed") -> SwitchResult:
    """Switch the documents at 1-based ``positions`` from non-relevant to relevant, one list.

    ``count="fixed"`` keeps R (Kishida Eq. 10); ``"add"`` counts each switched document as newly relevant
    (R grows, the paper's Eq. 12 with N_rel + 1).
    """
    base = np.asarray(grades, dtype=np.int64)
    pos = [int(p) for p in positions]
    if len(set(pos)) != len(pos) or any(p < 1 or p > len(base) for p in pos):
        raise InputError(f"positions must be distinct ranks in 1..{len(base)}, got {pos}")
    if any(base[p - 1] > 0 for p in pos):
        raise InputError("every switched position must hold a non-relevant document")
    r0 = Rankings.from_lists([base], None if counts is None else [counts])
    independent = metric_increment(metric, r0, positions=pos, count=count)[0]
    steps, current = [], r0
    for p in pos:
        steps.append(metric_increment(metric, current, positions=[p], count=count)[0, 0])
        g = current.grades.copy()
        g[0, p - 1] = 1
        counts_now = current.counts.copy()
        if count == "add":
            counts_now = counts_now.copy()
            counts_now[0, 1] += 1
            counts_now[0, 0] = max(counts_now[0, 0] - 1, 0)
        current = Rankings(g, current.n_ret, counts_now, current.rel_level)
    steps_arr = np.array(steps)
    _, func = as_metric(metric)
    total = float(func(current)[0] - func(r0)[0])
    return SwitchResult(total, steps_arr, independent, total - float(independent.sum()))
