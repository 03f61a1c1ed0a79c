"""Preference judgments (trec_eval -R prefs / qrels_prefs) and judgment groups (-R qrels_jg): the model objects and
the measures, on examples worked by hand (the cases of trec_eval's own format description, formats.c)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import meta_eval as me
from meta_eval.core.errors import ConflictError, InputError

RUN = "q1 Q0 d3 1 5 r\nq1 Q0 d1 2 4 r\nq1 Q0 d9 3 3 r\nq1 Q0 d2 4 2 r\n"  # judged order d3, d1, d2 (d9 unjudged)


def _values(tmp_path, prefs: str, run: str = RUN, fmt: str = "prefs", **options) -> dict[str, float]:
    (tmp_path / "prefs").write_text(prefs)
    (tmp_path / "run").write_text(run)
    collection = me.load_preferences(tmp_path / "prefs", [tmp_path / "run"], fmt=fmt, **options)
    rows = me.evaluate(collection, ["all_prefs"])
    return {r.measure: r.value for r in rows.itertuples() if r.summary}


def test_one_subgroup_is_classes_by_level(tmp_path):
    """formats.c's example: levels 6 > 3 > 2 (d2, d6) > 0 (d3, d5) give 13 preferences. The run retrieves d3, d1, d2:
    fulfilled with both retrieved d1>d2; implied (the preferred one retrieved, the other not) d1>d6, d1>d5, d2>d5;
    both retrieved: d1-d2, d1-d3, d2-d3; exactly one retrieved: d4 over d1, d2, d3, d1>d6, d1>d5, d2>d5, d6>d3."""
    v = _values(tmp_path, "q1 u1 s1 d1 3.0\nq1 u1 s1 d2 2.0\nq1 u1 s1 d3 0.0\nq1 u1 s1 d4 6.0\n"
                          "q1 u1 s1 d5 0.0\nq1 u1 s1 d6 2.0\n")
    assert (v["prefs_num_prefs_poss"], v["prefs_num_prefs_ful"], v["prefs_num_prefs_ful_ret"]) == (13, 4, 1)
    assert v["prefs_simp"] == pytest.approx(4 / 13) and v["prefs_avgjg"] == pytest.approx(4 / 13)
    assert v["prefs_simp_ret"] == pytest.approx(1 / 3) and v["prefs_simp_imp"] == pytest.approx(4 / 10)
    assert v["prefs_pair"] == pytest.approx(4 / 13)  # one group: each pair's share is 0 or 1
    # R = 4 relevant (levels > 0) >= N = 2 not relevant: R(R - N) = 8 possible and 2·2 fulfilled preferences added
    assert v["prefs_avgjg_Rnonrel"] == pytest.approx(float(Fraction(4 + 2 * 2, 13 + 4 * 2)))
    # retrieved only: R = 2 (d1, d2), N = 1 (d3); trec_eval adds R_all·(R − N) possible ones (4 · 1)
    assert v["prefs_avgjg_Rnonrel_ret"] == pytest.approx(float(Fraction(1 + 2 * 1, 3 + 4 * 1)))


def test_several_subgroups_are_closed_transitively(tmp_path):
    """formats.c's partial order: s1 says d1 > d2 > d3, s2 says d4 > d1 > d2; closed, d4 > d3 too: 6 preferences.
    Only d1 > d2 is fulfilled (d3 is ranked first, d4 not retrieved)."""
    v = _values(tmp_path, "q1 u1 s1 d1 3.0\nq1 u1 s1 d2 2.0\nq1 u1 s1 d3 1.0\nq1 u1 s2 d1 2.0\nq1 u1 s2 d2 1.0\n"
                          "q1 u1 s2 d4 3.0\n")
    assert (v["prefs_num_prefs_poss"], v["prefs_num_prefs_ful"]) == (6, 1)
    assert v["prefs_simp"] == pytest.approx(1 / 6) and v["prefs_simp_ret"] == pytest.approx(1 / 3)
    # every document relevant (R = 4, N = 0): 4·3 fulfilled of 4·4 possible added
    assert v["prefs_avgjg_Rnonrel"] == pytest.approx(13 / 22)


def test_groups_disagreeing_on_a_pair(tmp_path):
    """Three users on d1 vs d2: two prefer d1, one d2; the run ranks d1 first."""
    prefs = "q1 u1 s d1 2\nq1 u1 s d2 1\nq1 u2 s d1 1\nq1 u2 s d2 2\nq1 u3 s d1 1\nq1 u3 s d2 0\n"
    v = _values(tmp_path, prefs, run="q1 Q0 d1 1 2 r\nq1 Q0 d2 2 1 r\n")
    assert v["prefs_pair"] == pytest.approx(2 / 3) and v["prefs_simp"] == pytest.approx(2 / 3)
    assert v["prefs_avgjg"] == pytest.approx(2 / 3)  # (1 + 0 + 1) / 3 groups


def test_qrels_read_as_preferences(tmp_path):
    """qrels_prefs: the second field is the group, grades are levels (one sub-group each)."""
    qrels = "q1 0 d1 2\nq1 0 d2 1\nq1 0 d3 0\n"
    v = _values(tmp_path, qrels, run="q1 Q0 d2 1 3 r\nq1 Q0 d1 2 2 r\nq1 Q0 d3 3 1 r\n", fmt="qrels_prefs")
    assert v["prefs_num_prefs_poss"] == 3 and v["prefs_simp"] == pytest.approx(2 / 3)  # d1 > d2 is not fulfilled


def test_preference_ties_break_by_docid_ascending(tmp_path):
    """trec_eval's preference code breaks score ties by docid ascending (its qrels measures: descending)."""
    v = _values(tmp_path, "q1 u s a 2\nq1 u s b 1\n", run="q1 Q0 b 1 1 r\nq1 Q0 a 2 1 r\n")
    assert v["prefs_simp"] == 1.0


@pytest.mark.parametrize("prefs, message", [
    ("q1 u s1 d1 2\nq1 u s1 d2 1\nq1 u s2 d2 2\nq1 u s2 d1 1\n", "contradict"),
    ("q1 u s1 d1 2\nq1 u s1 d1 1\n", "listed twice"),
    ("q1 u s1 d1 2\nq1 u s1 d2 1\nq1 u s2 d1 0\nq1 u s2 d3 1\n", "not relevant"),
])
def test_inconsistent_groups_are_refused_with_the_line(tmp_path, prefs, message):
    with pytest.raises(ConflictError, match=message) as info:
        _values(tmp_path, prefs)
    assert info.value.line is not None and str(tmp_path / "prefs") in str(info.value)


def test_a_bad_level_names_the_line(tmp_path):
    (tmp_path / "prefs").write_text("q1 u s d1 2\nq1 u s d2 high\n")
    with pytest.raises(InputError, match=r"prefs:2: level must be a number"):
        me.read_prefs(tmp_path / "prefs")


def test_a_preference_measure_of_qrels_is_refused():
    with pytest.raises(InputError, match="needs preference judgments"):
        me.evaluate(me.demo_collection(), ["prefs_simp"])


def test_judgment_groups_average_each_groups_value(tmp_path):
    """map_avgjg is AP averaged over a topic's groups, each group's AP that of its own qrels."""
    groups = {"a": "t1 a d1 1\nt1 a d2 0\nt1 a d3 1\n", "b": "t1 b d1 0\nt1 b d2 1\n"}
    (tmp_path / "jg").write_text("".join(groups.values()) + "t2 a d1 1\n")
    run = "t1 Q0 d1 1 3 r\nt1 Q0 d2 2 2 r\nt1 Q0 d3 3 1 r\nt2 Q0 d4 1 2 r\nt2 Q0 d1 2 1 r\n"
    (tmp_path / "run").write_text(run)
    jg = me.load_judgment_groups(tmp_path / "jg", [tmp_path / "run"])
    got = me.score(jg, ["map_avgjg", "P_avgjg_2"])
    expected = []
    for name, text in groups.items():
        (tmp_path / name).write_text(text.replace(f" {name} ", " 0 "))
        one = me.load_collection(tmp_path / name, [tmp_path / "run"])
        expected.append(me.score(one, "AP")[0, 0])
    assert got["map_avgjg"][0, 0] == pytest.approx(np.mean(expected))
    assert got["map_avgjg"][0, 1] == pytest.approx(0.5)  # t2: one group, d1 at rank 2
    assert got["P_avgjg_2"][0, 0] == pytest.approx((0.5 + 0.5) / 2)
    assert list(jg.groups) == [2, 1]
