"""IJCSIT 2015 (Tables 1, 2, Figure 3, switched judgments) and the IR book §8.4 exercise rankings.

Published numbers are transcribed from the papers as printed text and checked to their printed precision.
"""

from __future__ import annotations

import numpy as np
import pytest

import meta_eval as me
from meta_eval.statistics.metric_properties.ap_positions import (single_relevant_profile, switched_judgments, tail_relevant_table,
                                         translation_table)
from meta_eval.statistics.metric_properties.textbook_rankings import exercise_curves, exercise_measures
from meta_eval.orchestration.reproduce import IJCSIT_TABLE1  # (judgments, AP, Precision, Recall) as printed, R = 10


def printed(value: float, text: str) -> bool:
    decimals = len(text.split(".")[1])
    return abs(value - float(text)) <= 0.5 * 10.0**-decimals + 1e-12




def test_ijcsit_table1():
    table = tail_relevant_table(20, 10, 6)
    assert list(table.index) == [row[0] for row in IJCSIT_TABLE1]
    for pattern, ap, p, rec in IJCSIT_TABLE1:
        assert printed(table.loc[pattern, "AP"], ap), pattern
        assert printed(table.loc[pattern, "P@20"], p), pattern
        assert printed(table.loc[pattern, "Recall@20"], rec), pattern
    # the paper's reading: 6 relevant documents at the end approach one relevant document first
    assert table.AP.iloc[6] > table.AP.iloc[0] > table.AP.iloc[5]


def test_ijcsit_table1_needs_r_not_relevant_retrieved():
    """The printed 0.1 for a single relevant document first is AP with R = 10; the paper's Eq. 6 (dividing by the
    relevant documents retrieved) would give 1.0."""
    r = me.Rankings.from_lists([[1] + [0] * 19], [[19, 1]])
    assert me.get_measure("AP")(r)[0] == 1.0 and not printed(1.0, "0.1")


def test_ijcsit_table2():
    table = translation_table()
    for key, (ap, p, rec) in {"No": ("0.34", "0.25", "0.50"), "Yes": ("0.11", "0.10", "0.20")}.items():
        assert printed(table.loc[key, "AP"], ap)
        assert printed(table.loc[key, "P@20"], p)
        assert printed(table.loc[key, "Recall@20"], rec)


def test_ijcsit_figure3_data():
    profile = single_relevant_profile(20, 10)
    assert profile.AP.to_numpy() == pytest.approx(1 / (10 * np.arange(1, 21)))
    assert np.ptp(profile["P@20"]) == 0 and printed(profile["P@20"].iloc[0], "0.05")
    assert np.ptp(profile["Recall@20"]) == 0 and printed(profile["Recall@20"].iloc[0], "0.10")
    # text §4: "between 10th and 11th position is 0.001" (0.000909 printed with 3 decimals)
    assert printed(profile.AP[10] - profile.AP[11], "0.001")
    # text §4: "the difference in value between the 1st and the 2nd position is 0.95" is a typo: it is 0.05
    assert printed(profile.AP[1] - profile.AP[2], "0.05") and not printed(profile.AP[1] - profile.AP[2], "0.95")


@pytest.mark.parametrize("count", ["fixed", "add"])
def test_switched_judgments(count):
    base = [1, 1, 0, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    res = switched_judgments(base, [3, 12, 20], counts=[10, 10], count=count)
    assert res.total == pytest.approx(res.steps.sum(), abs=1e-12)
    # direct: AP after switching all three
    after = list(base)
    for p in (3, 12, 20):
        after[p - 1] = 1
    R_after = 10 if count == "fixed" else 13
    ap = lambda g, R: sum(sum(g[: k + 1]) / (k + 1) for k in range(len(g)) if g[k]) / R  # noqa: E731
    R_before = 10
    assert res.total == pytest.approx(ap(after, R_after) - ap(base, R_before))
    assert res.interaction == pytest.approx(res.total - res.independent.sum())
    with pytest.raises(me.InputError):
        switched_judgments(base, [1], counts=[10, 10])


# ----------------------------------------------------------------------------------------- IR book §8.4


def test_irbook_exercise_by_hand():
    t = exercise_measures()
    s1, s2 = t.loc["System 1"], t.loc["System 2"]
    assert s1.AP == pytest.approx((1 + 2 / 3 + 3 / 9 + 4 / 10) / 4)
    assert s2.AP == pytest.approx((1 / 2 + 2 / 5 + 3 / 6 + 4 / 7) / 4)
    assert (s1.Rprec, s2.Rprec) == (0.5, 0.25)
    assert (s1.P, s1.R, s2.P, s2.R) == (0.4, 1.0, 0.4, 1.0)
    assert s1.F1 == pytest.approx(2 * 0.4 * 1 / 1.4)
    assert s1["11pt"] == pytest.approx(7 / 11) and s2["11pt"] == pytest.approx(4 / 7)
    assert (s1.AUC, s2.AUC) == pytest.approx((11 / 24, 14 / 24))
    assert s1.AP > s2.AP and s1.AUC < s2.AUC  # the measures disagree


def test_irbook_curves():
    c = exercise_curves()
    assert set(c) == {"pr", "eleven", "roc"}
    assert set(c["pr"].system) == {"System 1", "System 2"}
    assert len(c["eleven"]) == 22
