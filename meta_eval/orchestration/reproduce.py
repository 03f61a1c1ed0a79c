"""Reproduction of the seed papers' tables and figures: a registry of targets for ``meta-eval reproduce``.

Each target is a function returning a :class:`Reproduction`: a tidy table with one row per published number,
``target, row, column, published, computed`` (plus ``decimals``, ``tolerance``, ``status`` and ``note``) and an
optional figure. Published numbers are transcribed from the papers (the independent reference); every computed
number comes from meta-eval's measures and analyses.

Matching rule: a published value printed with d decimals matches when |computed − published| <= 0.5·10⁻ᵈ (it is
the rounding of the computed value); a Monte-Carlo quantity matches within its stated ``tolerance`` (3 standard
errors). ``status`` is ``ok``, ``MISMATCH``, ``documented`` (the published number is a typo or a different
convention, explained in ``note``; not counted as a mismatch) or ``info`` (no published number: reported only).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from meta_eval.core.errors import InputError

__all__ = ["Reproduction", "TARGETS", "mismatches", "reproduce", "reproduce_all", "targets"]

COLUMNS = ["target", "row", "column", "published", "computed"]


@dataclass
class Reproduction:
    """One reproduced table or figure."""

    target: str
    title: str
    table: pd.DataFrame
    figure: object | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def n_mismatches(self) -> int:
        return int((self.table["status"] == "MISMATCH").sum())

    def csv_table(self) -> pd.DataFrame:
        """The five columns written to CSV: ``target,row,column,published,computed``."""
        return self.table[COLUMNS]


class _Rows:
    """Collects the rows of one target."""

    def __init__(self, target: str):
        self.target = target
        self.rows: list[dict] = []

    def add(self, row, column, published, computed, *, tolerance: float | None = None, note: str = "",
            documented: bool = False) -> None:
        """``published``: the printed text (str, its decimals define the precision), a number with a tolerance,
        or None (information only)."""
        decimals = None
        if isinstance(published, str):
            text = published.strip()
            decimals = len(text.split(".")[1]) if "." in text else 0
            pub = float(text)
        else:
            pub = None if published is None else float(published)
        comp = float(computed)
        if pub is None:
            status = "info"
        else:
            limit = tolerance if tolerance is not None else 0.5 * 10.0 ** -(decimals if decimals is not None else 12)
            ok = bool(np.isfinite(comp)) and abs(comp - pub) <= limit * (1 + 1e-9) + 1e-12
            status = "ok" if ok else ("documented" if documented else "MISMATCH")
        self.rows.append({"target": self.target, "row": str(row), "column": str(column), "published": pub,
                          "computed": comp, "decimals": decimals, "tolerance": tolerance, "status": status,
                          "note": note})

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=COLUMNS + ["decimals", "tolerance", "status", "note"])


# ============================================================================================ Kishida (000)

KISHIDA_TABLE1 = {  # R -> {v: printed change of AP, j = 101}
    10: {"0.1": "0.00081", "0.3": "-0.01737", "0.5": "-0.03555"},
    50: {"0.1": "0.00794", "0.3": "0.00402", "0.5": "0.00010"},
    100: {"0.1": "0.00891", "0.3": "0.00693", "0.5": "0.00495"},
}

KISHIDA_TABLE2 = {  # theta -> row -> printed value
    0.9: {"mu": "0.62396", "sigma2_mu": "0.01660", "sigma2_d": "0.01314", "total": "0.02974", "mean_vp": "0.03006"},
    0.5: {"mu": "0.60679", "sigma2_mu": "0.00004", "sigma2_d": "0.03674", "total": "0.03678", "mean_vp": "0.03687"},
}
TABLE2_LABELS = {"mu": "mu", "sigma2_mu": "sigma2_mu", "sigma2_d": "sigma2_d", "total": "sigma2_mu + sigma2_d",
                 "mean_vp": "mean V_p"}

KISHIDA_TABLE3 = {
    "average": {"vS'": ".488", "vD": ".443", "vQ": ".503", "vG": ".410"},
    "std. dev.": {"vS'": ".245", "vD": ".250", "vQ": ".240", "vG": ".228"},
}

KISHIDA_TABLE4 = {  # lower triangle as printed
    "vD": {"vS'": "0.969"},
    "vQ": {"vS'": "0.885", "vD": "0.840"},
    "vG": {"vS'": "0.963", "vD": "0.940", "vQ": "0.961"},
    "AP": {"vS'": "0.857", "vD": "0.829", "vQ": "0.928", "vG": "0.894"},
}

KISHIDA_TABLE5 = {
    "a": ("0.923", "0.933", "0.667", "0.733"),
    "b": ("0.331", "0.184", "0.513", "0.304"),
    "b/a": ("0.358", "0.197", "0.770", "0.415"),
    "c": ("0.558", "0.610", "0.750", "0.622"),
    "c/a": ("0.604", "0.654", "1.125", "0.848"),
    "d": ("0.692", "0.640", "0.333", "0.400"),
    "d/a": ("0.750", "0.686", "0.500", "0.545"),
    "e": ("0.138", "0.046", "0.121", "0.080"),
    "e/d": ("0.200", "0.072", "0.364", "0.200"),
}
KISHIDA_COLUMNS = ("vS'", "vD", "vQ", "vG")
KISHIDA_NOTE = ("vS' = MSR (Eq. 27), vD = ANDCG (Eq. 32, Järvelin-Kekäläinen discount, b = 2), vQ = Q (Eq. 35, "
                "beta = 1, gain = grade), vG = GenAP (Eq. 42); qrels hold the three relevant documents (3, 2, 1).")


def _kishida_sensitivity() -> Reproduction:
    from meta_eval.model.demo import demo_collection
    from meta_eval.model.rankings import Rankings
    from meta_eval.orchestration.reproduce_figures import sensitivity_figure
    from meta_eval.statistics.metric_properties.sensitivity import ap_increment, metric_increment, sensitivity_profile

    rows = _Rows("kishida-sensitivity")
    col = demo_collection()
    r = col.rankings
    closed = ap_increment(r)
    top = min(r.depth, 50)
    numeric = metric_increment("AP", r, positions=range(1, top + 1))
    rows.add(f"Eq. 10 vs numerical ΔAP (demo collection, ranks 1-{top})", "max abs difference", 0.0,
             np.nanmax(np.abs(closed[..., :top] - numeric)), tolerance=1e-12,
             note="Kishida's closed form against flipping the document and rescoring with the AP measure")
    # Eq. 11: Δv(j) > Δv(j+1) when ranks j and j+1 both hold non-relevant documents
    both = ~np.isnan(closed[..., :-1]) & ~np.isnan(closed[..., 1:])
    holds = (closed[..., :-1] > closed[..., 1:])[both]
    rows.add("Eq. 11 (adjacent non-relevant ranks, demo collection)", "fraction with Δv(j) > Δv(j+1)", 1.0,
             holds.mean(), tolerance=0.0, note=f"{holds.size} adjacent pairs checked")
    # Δv(N) = 1/N when the other R - 1 relevant documents lie above N (§2.2)
    N, R = 1000, 10
    lst = np.zeros(N, dtype=int)
    lst[:R - 1] = 1
    d = ap_increment(Rankings.from_lists([lst], [[N - R, R]]))[0, -1]
    rows.add(f"Δv(N), N = {N}, R = {R}", "value", 1.0 / N, d, tolerance=1e-15, note="the report's minimum 1/N")
    # R-precision: Δr(j) = 1/R for j <= R (the report's contrast), 0 below R
    example = [1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0]
    rr = Rankings.from_lists([example], [[9, 4]])
    dr = metric_increment("Rprec", rr)[0]
    top = dr[:4][~np.isnan(dr[:4])]
    rows.add("Δr(j), R-precision, j <= R (R = 4)", "value", 0.25, top.max(), tolerance=1e-15)
    rows.add("Δr(j), R-precision, j <= R (R = 4)", "spread over j", 0.0, np.ptp(top), tolerance=1e-15,
             note="independent of the position, as the report says (and 0 for j > R)")
    profile = sensitivity_profile(["AP", "vS'", "nDCG", "Q", "RBP(p=0.8)", "Rprec"], [[0] * 20], [[15, 5]])
    return Reproduction("kishida-sensitivity", "Kishida Eq. 9-11: sensitivity of AP (and other metrics) to rank",
                        rows.frame(), sensitivity_figure(profile), notes=[
                            "Figure: increment of each metric when rank j of an all-non-relevant 20-list turns "
                            "relevant (R = 5 fixed): a user's new metric can be added to the list."])


def _kishida_table1() -> Reproduction:
    from meta_eval.measures.resolver import get_measure
    from meta_eval.model.demo import demo_collection
    from meta_eval.model.rankings import Rankings
    from meta_eval.statistics.metric_properties.new_relevant import new_relevant_change, new_relevant_simple, new_relevant_table
    from meta_eval.statistics.metric_properties.sensitivity import metric_increment

    rows = _Rows("kishida-table1")
    table = new_relevant_table(101, list(KISHIDA_TABLE1), [float(v) for v in KISHIDA_TABLE1[10]])
    for R, cells in KISHIDA_TABLE1.items():
        for v, printed in cells.items():
            rows.add(f"R={R}", f"v={v}", printed, table.loc[R, float(v)])
    r = demo_collection().rankings
    top = min(r.depth, 50)
    eq16 = new_relevant_change(r)[..., :top]
    numeric = metric_increment("AP", r, positions=range(1, top + 1), count="add")
    rows.add(f"Eq. 16 vs numerical ΔAP with R + 1 (demo collection, ranks 1-{top})", "max abs difference", 0.0,
             np.nanmax(np.abs(eq16 - numeric)), tolerance=1e-12)
    # Eq. 17 on a real list: 10 relevant documents in the top 100, a new one found at 101
    lst = np.zeros(101, dtype=int)
    lst[[0, 2, 5, 9, 14, 20, 30, 45, 70, 99]] = 1
    one = Rankings.from_lists([lst], [[91, 10]])
    v = float(get_measure("AP")(one)[0])
    rows.add("Eq. 17 vs numerical ΔAP, list with R = 10, j = 101", "abs difference", 0.0,
             abs(new_relevant_simple(101, 10, v) - metric_increment("AP", one, positions=[101], count="add")[0, 0]),
             tolerance=1e-12)
    return Reproduction("kishida-table1", "Kishida Table 1: change of AP after finding a relevant document at 101",
                        rows.frame(), notes=[
                            "Computed by Eq. 17, 1/j - v/(R+1), checked against flipping the document and rescoring "
                            "with the AP measure (R + 1).",
                            "The report's sign condition 'v_j > R + 1' is a typesetting slip for v*j > R + 1."])


def _kishida_table2(replicates: int = 200) -> Reproduction:
    from meta_eval.statistics.metric_properties.judgment_variation import population_judgment_variation, simulate_judgment_variation

    rows = _Rows("kishida-table2")
    for theta, published in KISHIDA_TABLE2.items():
        sim = simulate_judgment_variation(theta, 50, 10, 1000, seed=2005)
        spread = simulate_judgment_variation(theta, 50, 10, 1000, seed=2006, replicates=replicates)
        exact = population_judgment_variation(theta, 10)
        expectation = {"mu": exact.mu, "sigma2_mu": exact.sigma2_mu + exact.sigma2_d / 1000,
                       "sigma2_d": exact.sigma2_d, "total": exact.total + exact.sigma2_d / 1000,
                       "mean_vp": exact.total}
        for key, printed in published.items():
            sd = float(np.std(getattr(spread, key), ddof=1))
            rows.add(TABLE2_LABELS[key], f"theta={theta} (simulation, seed 2005)", printed, getattr(sim, key),
                     tolerance=3 * np.sqrt(2) * sd,
                     note=f"two independent runs of the simulation: tolerance 3*sqrt(2)*sd, sd = {sd:.5f} over "
                          f"{replicates} replicates")
        for key, printed in published.items():
            sd = float(np.std(getattr(spread, key), ddof=1))
            rows.add(TABLE2_LABELS[key], f"theta={theta} (exact expectation)", printed, expectation[key],
                     tolerance=3 * sd, note="exact expectation by enumeration of the 2^10 x 2^10 cases; "
                                            "tolerance 3 sd of one simulation run")
        rows.add("(sigma2_mu + sigma2_d) / mean V_p - 1", f"theta={theta} (simulation, seed 2005)", 0.0,
                 sim.relative_gap, tolerance=0.03, note="the report's identity, required within 3 %")
        pub_gap = float(published["total"]) / float(published["mean_vp"]) - 1
        rows.add("(sigma2_mu + sigma2_d) / mean V_p - 1", f"theta={theta} (published numbers)", 0.0, pub_gap,
                 tolerance=0.03)
    return Reproduction("kishida-table2", "Kishida Table 2: variation of relevance judgments (simulation)",
                        rows.frame(), notes=[
                            "L = 50 topics, N = 10 documents, M = 1000 repetitions; relevant when a uniform number "
                            "exceeds pi (the report's wording); AP with R = the documents judged relevant in the "
                            "list (0 when none); variances with the n - 1 divisor.",
                            "The published table is one random realisation, so it is compared with ours within "
                            "Monte-Carlo tolerances and with the exact expectation of each row "
                            "(E[sigma2_mu hat] = sigma2_mu + sigma2_d / M).",
                            "Both theta give the same mu = 0.60696 exactly: each document is relevant with "
                            "probability 1/2 either way."])


def _patterns():
    from meta_eval.statistics.metric_properties.patterns import pattern_scores

    return pattern_scores(list(KISHIDA_COLUMNS))


def _kishida_table3() -> Reproduction:
    from meta_eval.statistics.metric_properties.patterns import kishida_patterns, pattern_statistics

    from meta_eval.orchestration.reproduce_figures import pattern_scatter

    rows = _Rows("kishida-table3")
    rows.add("sample size", "patterns", "136", len(kishida_patterns()))
    scores = _patterns()
    stats = pattern_statistics(scores[list(KISHIDA_COLUMNS)])
    for stat, cells in KISHIDA_TABLE3.items():
        for m, printed in cells.items():
            rows.add(stat, m, printed, stats.loc[stat, m])
    return Reproduction("kishida-table3", "Kishida Table 3: mean and s.d. over the 136 patterns", rows.frame(),
                        pattern_scatter(scores), notes=[KISHIDA_NOTE, "Standard deviation with the n - 1 divisor (136 - 1)."])


def _kishida_table4() -> Reproduction:
    from meta_eval.rendering.heatmap import correlation_heatmap
    from meta_eval.statistics.metric_properties.patterns import pattern_correlations

    rows = _Rows("kishida-table4")
    corr = pattern_correlations(_patterns())
    for row, cells in KISHIDA_TABLE4.items():
        for column, printed in cells.items():
            rows.add("Ave. Pre." if row == "AP" else row, column, printed, corr.loc[row, column])
    fig = correlation_heatmap(corr, title="Kishida Table 4: Pearson correlation over 136 patterns", lower=True)
    return Reproduction("kishida-table4", "Kishida Table 4: correlation matrix over the 136 patterns", rows.frame(),
                        fig, notes=[KISHIDA_NOTE, "Pearson correlation; binary AP counts grade > 0 as relevant."])


def _kishida_table5() -> Reproduction:
    from meta_eval.statistics.metric_properties.patterns import TABLE5_PATTERNS, characteristic_patterns

    rows = _Rows("kishida-table5")
    table = characteristic_patterns(_patterns()[list(KISHIDA_COLUMNS)])
    for row, printed in KISHIDA_TABLE5.items():
        label = f"{row}. {TABLE5_PATTERNS[row]}" if row in TABLE5_PATTERNS else row
        for m, p in zip(KISHIDA_COLUMNS, printed):
            rows.add(label, m, p, table.loc[row, m])
    return Reproduction("kishida-table5", "Kishida Table 5: characteristic patterns and ratios", rows.frame(),
                        notes=[KISHIDA_NOTE, "Ratios are of the unrounded scores (e.g. vQ c/a = 0.74974 / 0.66667 "
                                             "= 1.125, whereas .750/.667 would give 1.124)."])


# ============================================================================================ GAP paper (004)


GAP_EXAMPLES = (  # (grades, counts per grade 0..c, g)
    ([3, 0, 2, 1, 0, 2, 0, 0, 1, 0], [6, 3, 3, 2], (0.2, 0.3, 0.5)),
    ([1, 2, 0, 0, 2, 1, 0, 1], [4, 4, 3], (0.5, 0.5)),
    ([0, 0, 2, 0, 1, 0, 2, 1, 1], [5, 5, 4], (0.8, 0.2)),
)


def _random_lists(seed: int, n_lists: int = 200, c: int = 3, depth: int = 15):
    rng = np.random.default_rng(seed)
    grades = rng.integers(0, c + 1, size=(n_lists, depth))
    counts = np.stack([np.bincount(g, minlength=c + 1) for g in grades]) + rng.integers(0, 3, (n_lists, c + 1))
    return grades, counts


def _gap_properties(n_samples: int = 200_000) -> Reproduction:
    from meta_eval.measures.registry import make_measure
    from meta_eval.model.demo import demo_collection
    from meta_eval.model.rankings import Rankings
    from meta_eval.measures import curves
    from meta_eval.orchestration.reproduce_figures import graded_pr_figure
    from meta_eval.statistics.metric_properties.gap import (check_ideal_maximum, check_reduces_to_ap, check_swap_monotonicity,
                                          gap_monte_carlo, graded_pr_area)

    rows = _Rows("gap-properties")
    grades, counts = _random_lists(2010)
    r = Rankings.from_lists(grades.tolist(), counts)
    diffs = check_reduces_to_ap(r)
    for t, d in enumerate(diffs, start=1):
        rows.add(f"GAP(g = e_{t}) = AP at threshold {t} (200 random lists)", "max abs difference", 0.0, d,
                 tolerance=1e-12)
    gap, ideal = check_ideal_maximum(r)
    rows.add("maximum at the ideal ordering (200 random lists)", "max GAP - GAP(ideal)", 0.0,
             max(float(np.max(gap - ideal)), 0.0), tolerance=0.0)
    rows.add("maximum at the ideal ordering (200 random lists)", "GAP(ideal)", 1.0, ideal.min(), tolerance=1e-12,
             note="every relevant document ranked in non-increasing grade order gives 1")
    changes = np.concatenate([check_swap_monotonicity(g, c, (0.2, 0.3, 0.5))
                              for g, c in zip(grades[:50], counts[:50])])
    rows.add("swap with a lower-ranked document of smaller grade (50 lists, all pairs)", "fraction lowering GAP",
             1.0, (changes < 0).mean(), tolerance=0.0,
             note=f"{changes.size} swaps, g = (0.2, 0.3, 0.5) (mass on every grade: strictly lower)")
    for i, (g_list, c_list, g) in enumerate(GAP_EXAMPLES, start=1):
        mc = gap_monte_carlo(g_list, c_list, g, n_samples=n_samples, seed=i)
        rows.add(f"example {i}: random experiment of §3.1.2 ({n_samples} draws)", "Monte-Carlo mean vs GAP",
                 mc.exact, mc.mean, tolerance=3 * mc.se, note=f"within 3 standard errors (se = {mc.se:.5f})")
    for i, (g_list, c_list, g) in enumerate(GAP_EXAMPLES, start=1):
        one = Rankings.from_lists([g_list], [c_list])
        area = graded_pr_area(one, g)
        exact = float(make_measure("GAP", g=tuple(g))(one)[0])
        rows.add(f"example {i}: GAP as Σ graded precision x recall step", "vs GAP measure", exact, area.gap[0],
                 tolerance=1e-12)
        rows.add(f"example {i}: area under the graded PR curve (trapezoid)", "GAP - area", None, area.difference[0],
                 note="reported (the paper says GAP approximates the area; no number is printed)")
    demo = demo_collection().rankings
    area = graded_pr_area(demo)
    has_rel = demo.num_rel(1) > 0
    rows.add("demo collection, every run and topic (uniform g)", "mean |GAP - area|", None,
             np.abs(area.difference[has_rel]).mean(), note="reported")
    curve = curves.graded_pr_curve(Rankings.from_lists([GAP_EXAMPLES[0][0]], [GAP_EXAMPLES[0][1]]),
                                   g=GAP_EXAMPLES[0][2])
    return Reproduction("gap-properties", "GAP paper §3: properties, probabilistic interpretation, graded PR area",
                        rows.frame(), graded_pr_figure(curve, title="Graded PR curve, example 1, g = (0.2, 0.3, 0.5)"),
                        notes=[
                            "Step 1 of the random experiment draws the (user, document) pair uniformly among pairs "
                            "where the document is relevant to the user (threshold t with probability "
                            "∝ g_t R_t), as the paper's p_dn implies; drawing t from g alone gives sum_t g_t AP_t, "
                            "not GAP.",
                            "The area is the trapezoidal area under the non-interpolated graded PR curve from recall "
                            "0 (flat to the first pivot) to the last pivot."])


# ============================================================================================ NCP (001)


def _ncp() -> Reproduction:
    from meta_eval.measures.resolver import get_measure
    from meta_eval.model.rankings import Rankings
    from meta_eval.statistics.metric_properties.ncp import ncp

    rows = _Rows("ncp")
    ranking = [1, 0, 1, 0, 0, 1, 0, 0, 0, 1]  # RNRNNRNNNR, R = 4 (P@rel = 1, 2/3, 3/6, 4/10)
    r = Rankings.from_lists([ranking], [[6, 4]])
    hand_ap = (1 + 2 / 3 + 3 / 6 + 4 / 10) / 4
    rows.add("RNRNNRNNNR, R = 4", "NCP(uniform) = AP", hand_ap, ncp(r, lambda R: [1 / R] * R)[0], tolerance=1e-12)
    rows.add("RNRNNRNNNR, R = 4", "AP measure", hand_ap, get_measure("AP")(r)[0], tolerance=1e-12)
    rows.add("RNRNNRNNNR, R = 4", "NCP(first) = RR", 1.0, ncp(r, [1.0])[0], tolerance=1e-12)
    rows.add("RNRNNRNNNR, R = 4", "NCP(p_s = .5, .25, .125, .125)", 0.5 + 0.25 * 2 / 3 + 0.125 * 0.5 + 0.125 * 0.4,
             ncp(r, [0.5, 0.25, 0.125, 0.125])[0], tolerance=1e-12, note="a user-given stopping distribution")
    rng = np.random.default_rng(2008)
    lists = rng.integers(0, 2, size=(300, 25))
    counts = np.stack([[25 - l.sum(), l.sum()] for l in lists]) + np.array([0, 1]) * rng.integers(0, 4, (300, 1))
    rr = Rankings.from_lists(lists.tolist(), counts)
    rows.add("300 random lists", "max |NCP_u - AP|", 0.0,
             np.abs(ncp(rr, lambda R: [1 / R] * R) - get_measure("AP")(rr)).max(), tolerance=1e-12)
    rows.add("300 random lists", "max |NCP_1 - RR|", 0.0, np.abs(ncp(rr, [1.0]) - get_measure("RR")(rr)).max(),
             tolerance=1e-12)
    rows.add("300 random lists", "max |NCP(geometric q=.5) - NCP measure|", 0.0, np.abs(
        ncp(rr, lambda R: 0.5 ** np.arange(R) / (0.5 ** np.arange(R)).sum())
        - get_measure("NCP(stop=geometric,q=0.5)")(rr)).max(), tolerance=1e-12)
    return Reproduction("ncp", "Robertson 2008: NCP(uniform) = AP, NCP(first) = RR, user-given stopping",
                        rows.frame(), notes=["Reference values worked by hand from the definitions (the paper "
                                             "prints no numbers)."])


# ============================================================================================ IR book (002)


def _irbook_exercise() -> Reproduction:
    from meta_eval.orchestration.reproduce_figures import pr_roc_figure
    from meta_eval.statistics.metric_properties.textbook_rankings import exercise_curves, exercise_measures

    rows = _Rows("irbook-exercise")
    table = exercise_measures()
    # hand-worked from the definitions of §8.4 (the book prints no answers); R = 4, the 10 documents judged
    reference = {
        "System 1": {"P": 4 / 10, "R": 1.0, "F1": 2 * 0.4 / 1.4, "AP": (1 + 2 / 3 + 3 / 9 + 4 / 10) / 4,
                     "Rprec": 2 / 4, "11pt": (3 * 1 + 3 * 2 / 3 + 5 * 0.4) / 11, "AUC": (6 + 5) / 24},
        "System 2": {"P": 4 / 10, "R": 1.0, "F1": 2 * 0.4 / 1.4, "AP": (1 / 2 + 2 / 5 + 3 / 6 + 4 / 7) / 4,
                     "Rprec": 1 / 4, "11pt": 4 / 7, "AUC": (5 + 3 + 3 + 3) / 24},
    }
    for system, cells in reference.items():
        for measure, value in cells.items():
            rows.add(system, measure, value, table.loc[system, measure], tolerance=1e-12)
    eleven = exercise_curves()["eleven"]
    ref11 = {"System 1": [1, 1, 1, 2 / 3, 2 / 3, 2 / 3, 0.4, 0.4, 0.4, 0.4, 0.4], "System 2": [4 / 7] * 11}
    for system, values in ref11.items():
        got = eleven[eleven.system == system].precision.to_numpy()
        for level, (want, have) in enumerate(zip(values, got)):
            rows.add(system, f"interpolated P at recall {level / 10:.1f}", want, have, tolerance=1e-12)
    c = exercise_curves()
    return Reproduction("irbook-exercise", "IR book §8.4 exercise: System 1 RNRNNNNNRR vs System 2 NRNNRRRNNN",
                        rows.frame(), pr_roc_figure(c["pr"], c["roc"]), notes=[
                            "References worked by hand (the book prints no answers); 4 relevant documents, the 10 "
                            "ranked documents are the judged set (6 non-relevant) for the ROC curve.",
                            "AP and R-precision prefer System 1, AUC prefers System 2.",
                            "Table 8.1 (11-point table of Figure 8.2) is not reproduced: the book does not give the "
                            "ranking behind Figure 8.2."])


# ============================================================================================ IJCSIT (003)

IJCSIT_TABLE1 = (  # (judgments, AP, Precision, Recall) as printed
    ("10000 00000 00000 00000", "0.1", "0.05", "0.10"),
    ("00000 00000 00000 00001", "0.005", "0.05", "0.10"),
    ("00000 00000 00000 00011", "0.015", "0.10", "0.20"),
    ("00000 00000 00000 00111", "0.031", "0.15", "0.30"),
    ("00000 00000 00000 01111", "0.053", "0.20", "0.40"),
    ("00000 00000 00000 11111", "0.081", "0.25", "0.50"),
    ("00000 00000 00001 11111", "0.12", "0.30", "0.60"),
)
IJCSIT_TABLE2 = {"No": ("0.34", "0.25", "0.50"), "Yes": ("0.11", "0.10", "0.20")}
IJCSIT_NOTE = ("n = 20, R = 10; AP = (1/R) sum of precisions at relevant ranks (the printed values imply dividing by "
               "R = 10, not by the relevant documents retrieved as the paper's Eq. 6 prints).")


def _ijcsit_table1() -> Reproduction:
    from meta_eval.statistics.metric_properties.ap_positions import tail_relevant_table

    rows = _Rows("ijcsit-table1")
    table = tail_relevant_table(20, 10, 6)
    for (pattern, ap, p, rec), (label, computed) in zip(IJCSIT_TABLE1, table.iterrows()):
        if pattern != label:
            raise AssertionError(f"row order: {pattern} vs {label}")
        rows.add(pattern, "Avg. Precision", ap, computed["AP"])
        rows.add(pattern, "Precision", p, computed["P@20"])
        rows.add(pattern, "Recall", rec, computed["Recall@20"])
    return Reproduction("ijcsit-table1", "IJCSIT 2015 Table 1: first position vs last positions", rows.frame(),
                        notes=[IJCSIT_NOTE, "Values are printed with 1 to 3 decimals; each is checked to its own "
                                            "printed precision (0.12 is 0.11535 to 2 decimals)."])


def _ijcsit_table2() -> Reproduction:
    from meta_eval.statistics.metric_properties.ap_positions import translation_table

    rows = _Rows("ijcsit-table2")
    table = translation_table()
    for key, (ap, p, rec) in IJCSIT_TABLE2.items():
        rows.add(f"translated={key}", "Avg. Precision", ap, table.loc[key, "AP"])
        rows.add(f"translated={key}", "Precision", p, table.loc[key, "P@20"])
        rows.add(f"translated={key}", "Recall", rec, table.loc[key, "Recall@20"])
    return Reproduction("ijcsit-table2", "IJCSIT 2015 Table 2: rankings with and without query translation",
                        rows.frame(), notes=[IJCSIT_NOTE])


def _ijcsit_figure3() -> Reproduction:
    from meta_eval.orchestration.reproduce_figures import position_profile_figure
    from meta_eval.statistics.metric_properties.ap_positions import single_relevant_profile

    rows = _Rows("ijcsit-figure3")
    profile = single_relevant_profile(20, 10)
    for i in range(1, 21):
        rows.add(f"relevant at {i}", "AP", 1 / (10 * i), profile.loc[i, "AP"], tolerance=1e-12,
                 note="Eq. 7 with R = 10: AP = 1/(R i)")
    rows.add("all positions", "Precision (constant)", "0.05", profile["P@20"].max())
    rows.add("all positions", "Precision spread", 0.0, np.ptp(profile["P@20"]), tolerance=0.0)
    rows.add("all positions", "Recall (constant)", "0.10", profile["Recall@20"].max())
    rows.add("all positions", "Recall spread", 0.0, np.ptp(profile["Recall@20"]), tolerance=0.0)
    rows.add("AP(10) - AP(11)", "text §4", "0.001", profile.loc[10, "AP"] - profile.loc[11, "AP"])
    rows.add("AP(1) - AP(2)", "text §4", "0.95", profile.loc[1, "AP"] - profile.loc[2, "AP"], documented=True,
             note="typo in the paper: the difference is 0.1 - 0.05 = 0.05 (0.95 fits no convention: with "
                  "AP = 1/i it would be 0.5)")
    return Reproduction("ijcsit-figure3", "IJCSIT 2015 Figure 3: one relevant document at position i (n = 20, R = 10)",
                        rows.frame(), position_profile_figure(profile.rename(columns={
                            "P@20": "Precision", "Recall@20": "Recall"})), notes=[IJCSIT_NOTE])


def _ijcsit_switch() -> Reproduction:
    from meta_eval.statistics.metric_properties.ap_positions import switched_judgments
    from meta_eval.statistics.metric_properties.sensitivity import ap_increment
    from meta_eval.model.rankings import Rankings

    rows = _Rows("ijcsit-switch")
    base = [1, 1, 0, 0, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]  # the paper's untranslated list
    for count in ("fixed", "add"):
        res = switched_judgments(base, [3, 12, 20], counts=[10, 10], count=count)
        rows.add(f"switch ranks 3, 12, 20 (R {count})", "total - sum of successive single switches", 0.0,
                 res.total - res.steps.sum(), tolerance=1e-12,
                 note="the paper's claim: k simultaneous switches = k successive single switches")
        rows.add(f"switch ranks 3, 12, 20 (R {count})", "ΔAP total", None, res.total)
        rows.add(f"switch ranks 3, 12, 20 (R {count})", "interaction (total - independent singles)", None,
                 res.interaction, note="not 0: each switch also raises the precision at relevant ranks below it")
    d = ap_increment(Rankings.from_lists([base], [[10, 10]]))[0]
    pairs = ~np.isnan(d[:-1]) & ~np.isnan(d[1:])
    rows.add("ΔAP(j) > ΔAP(j+1) for adjacent non-relevant ranks", "fraction", 1.0,
             (d[:-1] > d[1:])[pairs].mean(), tolerance=0.0, note="the paper's Eq. 13 ordering (= Kishida Eq. 11)")
    return Reproduction("ijcsit-switch", "IJCSIT 2015 §3.2: ΔAP of k switched judgments", rows.frame())


# ============================================================================================ registry

TARGETS: dict[str, tuple[str, Callable[[], Reproduction]]] = {
    "kishida-sensitivity": ("Kishida Eq. 9-11 (Δv(j), monotonicity)", _kishida_sensitivity),
    "kishida-table1": ("Kishida Table 1 (new relevant document at 101)", _kishida_table1),
    "kishida-table2": ("Kishida Table 2 (judgment variation simulation)", _kishida_table2),
    "kishida-table3": ("Kishida Table 3 (136 patterns: mean, s.d.)", _kishida_table3),
    "kishida-table4": ("Kishida Table 4 (136 patterns: correlations)", _kishida_table4),
    "kishida-table5": ("Kishida Table 5 (characteristic patterns)", _kishida_table5),
    "gap-properties": ("GAP paper §3 (properties, Monte Carlo, graded PR)", _gap_properties),
    "ncp": ("Robertson 2008 NCP", _ncp),
    "irbook-exercise": ("IR book §8.4 exercise rankings", _irbook_exercise),
    "ijcsit-figure3": ("IJCSIT 2015 Figure 3 data", _ijcsit_figure3),
    "ijcsit-table1": ("IJCSIT 2015 Table 1", _ijcsit_table1),
    "ijcsit-table2": ("IJCSIT 2015 Table 2", _ijcsit_table2),
    "ijcsit-switch": ("IJCSIT 2015 ΔAP of switched judgments", _ijcsit_switch),
}


def targets() -> list[str]:
    """Names of the reproducible targets (``all`` runs every one)."""
    return list(TARGETS)


def reproduce(target: str) -> Reproduction:
    """Run one target and time it."""
    if target not in TARGETS:
        raise InputError(f"unknown target {target!r}; choose one of: {', '.join(targets())}, all")
    start = time.perf_counter()
    result = TARGETS[target][1]()
    result.seconds = time.perf_counter() - start
    return result


def reproduce_all() -> list[Reproduction]:
    """Every target, in registry order."""
    return [reproduce(t) for t in TARGETS]


def mismatches(results: list[Reproduction] | Reproduction) -> pd.DataFrame:
    """The rows with status ``MISMATCH`` (empty when everything reproduces)."""
    if isinstance(results, Reproduction):
        results = [results]
    table = pd.concat([r.table for r in results], ignore_index=True)
    return table[table.status == "MISMATCH"]
