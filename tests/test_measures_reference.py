"""Measures against published numbers and hand-worked examples (independent references)."""

from __future__ import annotations

import numpy as np
import pytest

import meta_eval as me
from meta_eval.measures.scoring import score_lists

# NTCIREVAL's sample (methods.md §5): rel dummy01-03 = L3, 04-06 = L2, 07-10 = L1, 11 = L0;
# run: dummy11, dummy01, dummy12 (unjudged), dummy04; gains -g 1:2:3.
NTCIR_COUNTS = [[1, 4, 3, 3]]
NTCIR_RUN = [[0, 3, me.UNJUDGED, 2]]
NTCIR_EXPECTED = {
    "AP": 0.1000,
    "Q(gain=1:1,2:2,3:3)": 0.0967,
    "nDCG(discount=jk)": 0.3380,  # nDCG@1000, Järvelin–Kekäläinen, b = 2
    "nDCG": 0.2760,  # MSnDCG@1000: 1/log(r+1), linear gains
    "RBP(p=0.95,graded=true)": 0.0761,
    "ERR(stop=linear)": 0.4062,
    "nERR(stop=linear)": 0.4710,
    "P@1000": 0.0020,
    "RR": 0.5,
}


@pytest.mark.parametrize("name", sorted(NTCIR_EXPECTED))
def test_ntcireval_sample(name):
    value = score_lists(name, NTCIR_RUN, NTCIR_COUNTS)[0]
    assert round(float(value), 4) == pytest.approx(NTCIR_EXPECTED[name], abs=1e-4 + 1e-12)


# Kishida (2005) Table 5: three relevant documents of grades 3, 2, 1; five positions.
KISHIDA_TABLE5 = {
    "32000": (0.923, 0.933, 0.667, 0.733),
    "00123": (0.331, 0.184, 0.513, 0.304),
    "03210": (0.558, 0.610, 0.750, 0.622),
    "30000": (0.692, 0.640, 0.333, 0.400),
    "00003": (0.138, 0.046, 0.121, 0.080),
}


@pytest.mark.parametrize("pattern", sorted(KISHIDA_TABLE5))
def test_kishida_table5_patterns(pattern):
    grades = [[int(c) for c in pattern]]
    got = [float(score_lists(m, grades, [[0, 1, 1, 1]])[0]) for m in ("vS'", "vD", "vQ", "vG")]
    assert np.round(got, 3).tolist() == list(KISHIDA_TABLE5[pattern])


def test_kishida_worked_examples():
    # §4.1.2: x = 1,2,3 (system A) vs 3,2,1 (system B): v_S = 0.75 for both; v_S' ≈ 0.61 and 0.88.
    a, b = [[1, 2, 3, 0, 0]], [[3, 2, 1, 0, 0]]
    # The report's example has four relevant documents of grades 3, 2, 2, 1 (ideal y = 3, 2, 2, 1).
    ideal = [[0, 1, 2, 1]]
    assert score_lists("vS'", a, ideal)[0] == pytest.approx(3 / (3 + 2 / 2 + 2 / 3 + 1 / 4), rel=1e-12)
    assert score_lists("vS", b, ideal)[0] == pytest.approx(6 / 8)
    assert round(float(score_lists("vS'", a, ideal)[0]), 2) == 0.61
    assert round(float(score_lists("vS'", b, ideal)[0]), 2) == 0.88
    assert score_lists("vS", a, ideal)[0] == pytest.approx(6 / 8)


def test_ranked_half_life_kishida_example():
    # relevance 0.5, 1, 1, 0.5 at ranks 1, 3, 9, 14 -> RHL 3.0; scale by 2 to integer grades 1, 2, 2, 1.
    grades = [0] * 14
    for rank, g in ((1, 1), (3, 2), (9, 2), (14, 1)):
        grades[rank - 1] = g
    assert score_lists("RHL", [grades], [[10, 2, 2]])[0] == pytest.approx(3.0)


def test_aslam_slides_ap_example():
    # RNRNNRNNNR with R = 4: AP = (1 + 2/3 + 3/6 + 4/10) / 4 = 0.6417.
    ranking = [[1 if c == "R" else 0 for c in "RNRNNRNNNR"]]
    assert score_lists("AP", ranking, [[6, 4]])[0] == pytest.approx((1 + 2 / 3 + 3 / 6 + 4 / 10) / 4)


def test_ir_book_exercise_rankings():
    # Manning et al. §8.4 exercise: System 1 RNRNNNNNRR, System 2 NRNNRRRNNN, 4 relevant in the collection.
    s1 = [1 if c == "R" else 0 for c in "RNRNNNNNRR"]
    s2 = [1 if c == "R" else 0 for c in "NRNNRRRNNN"]
    ap = score_lists("AP", [s1, s2], [[6, 4]])
    assert ap[0] == pytest.approx((1 + 2 / 3 + 3 / 9 + 4 / 10) / 4)
    assert ap[1] == pytest.approx((1 / 2 + 2 / 5 + 3 / 6 + 4 / 7) / 4)
    assert score_lists("Rprec", [s1, s2], [[6, 4]]).tolist() == [0.5, 0.25]


def test_gap_weighted_mean_of_thresholded_aps():
    """methods.md §2.2: GAP = Σ_l w_l AP^(l), w_l = g_l R^(l) / Σ g_l' R^(l')."""
    rng = np.random.default_rng(7)
    for _ in range(50):
        c = int(rng.integers(1, 5))
        n = int(rng.integers(1, 30))
        grades = rng.integers(0, c + 1, size=n)
        counts = np.bincount(grades, minlength=c + 1) + rng.integers(0, 4, size=c + 1)
        counts[c] += 1  # at least one relevant document, so every weight is defined
        g = rng.dirichlet(np.ones(c))
        gap = score_lists(me.make_measure("GAP", g=tuple(g)), [grades], [counts])[0]
        R = np.array([counts[level:].sum() for level in range(1, c + 1)])
        aps = np.array([score_lists("AP", [grades], [counts], rel_level=level)[0] for level in range(1, c + 1)])
        w = g * R / (g * R).sum()
        assert gap == pytest.approx((w * aps).sum(), abs=1e-12)


def test_gap_brute_force_definition():
    """GAP paper §2.2, summed literally over pivot n and m <= n."""
    rng = np.random.default_rng(3)
    for _ in range(30):
        c, n = 3, int(rng.integers(1, 15))
        grades = rng.integers(0, c + 1, size=n)
        counts = np.bincount(grades, minlength=c + 1) + rng.integers(0, 3, size=c + 1)
        g = rng.dirichlet(np.ones(c))
        num = sum(sum(g[: min(grades[m], grades[k])].sum() for m in range(k + 1) if grades[m] > 0) / (k + 1)
                  for k in range(n) if grades[k] > 0)
        den = sum(counts[i] * g[:i].sum() for i in range(1, c + 1))
        got = score_lists(me.make_measure("GAP", g=tuple(g)), [grades], [counts])[0]
        assert got == pytest.approx(num / den, abs=1e-12)


def test_ncp_special_cases_and_geometric():
    grades = [[0, 1, 1, 0, 1, 0]]
    counts = [[3, 5]]
    assert score_lists("NCP", grades, counts)[0] == pytest.approx(score_lists("AP", grades, counts)[0])
    assert score_lists("NCP(stop=first)", grades, counts)[0] == pytest.approx(0.5)
    # geometric q=0.5 over R=5 relevant: p_s(k) = 0.5^(k-1) * 0.5 / (1 - 0.5^5)
    p = 0.5 ** np.arange(5) * 0.5 / (1 - 0.5**5)
    expected = p[0] * 1 / 2 + p[1] * 2 / 3 + p[2] * 3 / 5
    assert score_lists("NCP(stop=geometric,q=0.5)", grades, counts)[0] == pytest.approx(expected)


def test_normalized_recall_and_precision_by_hand():
    # N = 10 documents, R = 2 relevant at ranks 2 and 5: z_r = 1 - ((2+5) - (1+2)) / (2 * 8) = 0.75
    grades = [[0, 1, 0, 0, 1, 0, 0, 0, 0, 0]]
    assert score_lists("NRecall", grades, [[8, 2]])[0] == pytest.approx(0.75)
    from math import comb, log

    zp = 1 - (log(2) + log(5) - (log(1) + log(2))) / log(comb(10, 2))
    assert score_lists("NPrecision", grades, [[8, 2]])[0] == pytest.approx(zp)
    # an unretrieved relevant document goes to the bottom of the collection
    assert score_lists("NRecall(N=10)", [[1, 0, 0]], [[8, 2]])[0] == pytest.approx(1 - (1 + 10 - 3) / (2 * 8))


def test_err_exponential_by_hand():
    # grades 2, 0, 1 with gmax = 2: R = 3/4, 0, 1/4 -> ERR = 3/4 + (1/3)(1/4)(1/4)
    assert score_lists("ERR", [[2, 0, 1]], [[1, 1, 1]])[0] == pytest.approx(0.75 + (1 / 3) * 0.25 * 0.25)
    assert score_lists("ERR(max_grade=4)", [[2]], [[0, 0, 1]])[0] == pytest.approx(3 / 16)


def test_bpref_by_hand():
    # ranks: N(judged nonrel) R U(unjudged) R ; R = 2, judged nonrel = 3 -> (1 - 1/2) + (1 - 1/2), / 2
    assert score_lists("bpref", [[0, 1, me.UNJUDGED, 1]], [[3, 2]])[0] == pytest.approx(0.5)


def test_measures_on_empty_list_are_zero():
    r = me.Rankings.from_lists([[]], counts=[[3, 2, 1]])
    for name in ("AP", "GAP", "nDCG", "nDCG@10", "P@5", "Rprec", "RR", "bpref", "Q", "ERR", "RBP", "vS'", "vG",
                 "Recall@10", "SetF", "IPrec11"):
        assert me.get_measure(name)(r)[0] == 0.0, name
