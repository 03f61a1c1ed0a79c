"""Formal properties (:mod:`meta_eval.statistics.metric_properties.formal`): the verdicts that follow from the built-ins' definitions,
and every counterexample the engine reports re-scored by a plain Python reimplementation of the metric written here
(not meta-eval's) and shown, case by case, to break the property it is reported against."""

from __future__ import annotations

import math
import runpy
from itertools import permutations, product
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import meta_eval as me
from meta_eval.core.errors import InputError
from meta_eval.statistics.metric_properties.formal import PROPERTIES, SearchSizes, formal_properties
from meta_eval.statistics.metric_properties.formal.engine import LONGEST_GROWTH
from meta_eval.statistics.metric_properties.new_relevant import new_relevant_simple
from meta_eval.statistics.metric_properties.sensitivity import metric_increment

EXAMPLE = Path(__file__).parent / "data" / "my_metric.py"
BUILTINS = ("AP", "nDCG@10", "P@10", "RR", "RBP", "ERR", "GAP", "DCG", "nDCG", "RBP(p=0.5)")
TOL = 1e-9

# --------------------------------------------------------------------------------------------------------------------
# Plain reimplementations: one ranked list (grades top first) and the qrels counts per grade 0..c -> the value
# --------------------------------------------------------------------------------------------------------------------


def ap(ranking, counts):
    R = sum(counts[1:])
    hits, total = 0, 0.0
    for rank, g in enumerate(ranking, 1):
        if g >= 1:
            hits += 1
            total += hits / rank
    return total / R if R else 0.0  # trec_eval's convention: 0 without relevant documents


def precision_at(k):
    return lambda ranking, counts: sum(g >= 1 for g in ranking[:k]) / k


def rr(ranking, counts):
    return next((1.0 / rank for rank, g in enumerate(ranking, 1) if g >= 1), 0.0)


def rbp(p):
    return lambda ranking, counts: (1 - p) * sum(p ** (rank - 1) for rank, g in enumerate(ranking, 1) if g >= 1)


def dcg(ranking, counts, k=None):
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(ranking[:k], 1) if g > 0)


def ndcg_at(k):
    def ndcg(ranking, counts):
        ideal = sorted((g for g, n in enumerate(counts) for _ in range(n) if g > 0), reverse=True)
        best = dcg(ideal, counts, k)
        return dcg(ranking, counts, k) / best if best else 0.0
    return ndcg


def err(ranking, counts):
    c = len(counts) - 1
    stay, total = 1.0, 0.0
    for rank, g in enumerate(ranking, 1):
        r = (2 ** g - 1) / 2 ** c
        total += stay * r / rank
        stay *= 1 - r
    return total


def gap(ranking, counts):
    """Robertson, Kanoulas & Yilmaz (2010), uniform threshold probabilities g_j = 1/c."""
    c = len(counts) - 1
    G = [j / c for j in range(c + 1)]  # G(i) = Σ_{j<=i} g_j
    top = 0.0
    for n, g in enumerate(ranking, 1):
        if g > 0:
            top += sum(G[min(h, g)] for h in ranking[:n]) / n
    bottom = sum(counts[i] * G[i] for i in range(1, c + 1))
    return top / bottom if bottom else 0.0


def grbp(ranking, counts):
    c = len(counts) - 1
    return sum(0.2 * sum(0.8 ** (r - 1) for r, g in enumerate(ranking, 1) if g >= j) for j in range(1, c + 1)) / c


PLAIN = {"AP": ap, "nDCG@10": ndcg_at(10), "P@10": precision_at(10), "RR": rr, "RBP": rbp(0.8), "ERR": err,
         "GAP": gap, "DCG": dcg, "nDCG": ndcg_at(None), "RBP(p=0.5)": rbp(0.5), "grbp": grbp}
CUTOFF = {"nDCG@10": 10, "P@10": 10}


@pytest.fixture(scope="module")
def report():
    return formal_properties([*BUILTINS, f"{EXAMPLE}:grbp"])


# --------------------------------------------------------------------------------------------------------------------
# What follows from the definitions
# --------------------------------------------------------------------------------------------------------------------

EXPECTED = {  # (metric, property): status over both spaces; "binary" = held for binary relevance only
    ("DCG", "bounded"): "violated", ("AP", "bounded"): "held", ("RBP", "bounded"): "held",
    ("ERR", "bounded"): "held", ("nDCG", "bounded"): "held",
    ("P@10", "realisable"): "violated", ("AP", "realisable"): "held", ("RBP", "realisable"): "violated",
    ("RBP(p=0.5)", "realisable"): "violated", ("RR", "realisable"): "held", ("nDCG@10", "realisable"): "held",
    ("GAP", "realisable"): "held", ("ERR", "realisable"): "violated", ("DCG", "realisable"): "undefined",
    ("AP", "localised"): "violated", ("nDCG@10", "localised"): "violated", ("GAP", "localised"): "violated",
    ("P@10", "localised"): "held", ("RR", "localised"): "held", ("RBP", "localised"): "held",
    ("DCG", "localised"): "held", ("ERR", "localised"): "held",
    ("AP", "convergent"): "binary", ("AP", "top-weighted"): "binary", ("GAP", "convergent"): "held",
    ("RR", "convergent"): "violated", ("RR", "top-weighted"): "violated",
    ("P@10", "convergent"): "binary", ("P@10", "top-weighted"): "violated",
    ("AP", "deepness threshold"): "violated", ("AP", "closeness threshold"): "held",
    ("nDCG", "deepness threshold"): "violated", ("DCG", "deepness threshold"): "violated",
    ("RR", "deepness threshold"): "held", ("RR", "closeness threshold"): "violated",
    ("P@10", "deepness threshold"): "held", ("P@10", "closeness threshold"): "held",
    ("RBP", "deepness threshold"): "held", ("RBP", "closeness threshold"): "held",
    ("RBP(p=0.5)", "closeness threshold"): "violated", ("ERR", "closeness threshold"): "violated",
    ("AP", "confidence"): "violated", ("P@10", "priority"): "violated", ("RR", "priority"): "violated",
    ("AP", "top-heavy"): "held", ("P@10", "top-heavy"): "violated", ("RBP", "top-heavy"): "held",
    ("AP", "new relevant"): "violated", ("nDCG", "new relevant"): "violated", ("P@10", "new relevant"): "held",
    ("RBP", "new relevant"): "held", ("RR", "new relevant"): "held",
    ("P@10", "interval"): "held", ("RBP(p=0.5)", "interval"): "held", ("AP", "interval"): "violated",
    ("RBP", "interval"): "violated", ("RR", "interval"): "violated", ("DCG", "interval"): "violated",
}


@pytest.mark.parametrize("metric, prop", list(EXPECTED), ids=[f"{m}-{p}" for m, p in EXPECTED])
def test_built_in_verdicts_follow_from_the_definitions(report, metric, prop):
    got = "binary" if report.binary_only(metric, prop) else report.status(metric, prop)
    assert got == EXPECTED[metric, prop], str(report.verdict(metric, prop))


def test_every_metric_is_monotone_and_complete_and_none_satisfies_confidence(report):
    for m in BUILTINS:
        assert report.status(m, "monotone") == "held" and report.status(m, "complete") == "held", m
        assert report.status(m, "confidence") == "violated", m


def test_held_states_the_space_searched(report):
    v = report.get("AP", "monotone", "binary")
    assert v.status == "held" and v.checked > 10_000 and v.evidence == ()
    assert "every ranking of 0-10 documents over grades 0-1" in report.sizes.describe("binary")
    assert "4000 random rankings of 7-24 documents" in report.sizes.describe("graded")


def test_p_at_10_cannot_reach_1_with_fewer_than_10_relevant_documents(report):
    a, b = report.verdict("P@10", "realisable").evidence
    assert sum(a.counts[1:]) < 10 and a.value == pytest.approx(sum(a.counts[1:]) / 10) and b.value == 1.0


def test_ap_is_not_localised_because_it_needs_r(report):
    a, b = report.get("AP", "localised", "binary").evidence
    assert a.ranking == b.ranking == (1,) and {a.counts, b.counts} == {(0, 1), (0, 2)}
    assert {a.value, b.value} == {1.0, 0.5}


# --------------------------------------------------------------------------------------------------------------------
# Every counterexample, re-scored by the plain implementations and checked against its property
# --------------------------------------------------------------------------------------------------------------------


def _differ(a, b) -> list[int]:
    assert len(a) == len(b)
    return [i for i, (x, y) in enumerate(zip(a, b)) if x != y]


def _swapped(ranking, i, j):
    out = list(ranking)
    out[i], out[j] = out[j], out[i]
    return tuple(out)


def _top(ranking, metric) -> int:
    return min(len(ranking), CUTOFF.get(metric, len(ranking)))


def _all_lists(counts, longest):
    """Every ranked list drawn from the judged documents ``counts`` (grade multiset), of 0..longest documents."""
    docs = [g for g, n in enumerate(counts) for _ in range(n)]
    for n in range(min(longest, len(docs)) + 1):
        yield from set(permutations(docs, n))


def check_counterexample(metric, prop, evidence, values, depth=64):
    """Assert that ``evidence`` (with ``values`` from the plain implementation) is a case of ``prop`` and breaks
    it (``depth``: the threshold probe's deepest n)."""
    f = PLAIN[metric]
    if prop in ("bounded",):
        first, second, third = values
        assert third - second >= 0.95 * (second - first) > 0  # growth that does not slow down
        # the probe's last three doublings: growth seen up to 4,096 documents is looked at again up to 65,536
        assert [len(c.ranking) for c in evidence] == [LONGEST_GROWTH // 4, LONGEST_GROWTH // 2, LONGEST_GROWTH]
        return
    if prop == "complete":
        (a,), (va,) = evidence, values
        assert sum(a.counts[1:]) == 0 and not math.isfinite(va)
        return
    a, b = evidence[:2]
    va, vb = values[:2]
    if prop == "monotone":
        assert a.ranking[:-1] == b.ranking and a.counts == b.counts and va < vb - TOL
    elif prop == "confidence":
        assert b.ranking == a.ranking + (0,) and a.counts == b.counts and max(a.ranking) >= 1 and va <= vb + TOL
    elif prop == "convergent":
        d, top = _differ(a.ranking, b.ranking), _top(b.ranking, metric)
        assert a.counts == b.counts and d[0] < top and a.ranking[d[0]] > b.ranking[d[0]]
        if len(d) == 1:  # a more relevant unretrieved document brought in
            assert b.counts[a.ranking[d[0]]] > b.ranking.count(a.ranking[d[0]])
        else:  # or one from past the cutoff
            assert len(d) == 2 and d[1] >= top and a.ranking == _swapped(b.ranking, *d)
        assert va <= vb + TOL
    elif prop in ("top-weighted", "priority"):
        i, j = _differ(a.ranking, b.ranking)
        assert a.ranking == _swapped(b.ranking, i, j) and b.ranking[j] > b.ranking[i] and a.counts == b.counts
        assert j == i + 1 if prop == "priority" else j < _top(b.ranking, metric)
        assert va <= vb + TOL
    elif prop == "deepness":
        d = _differ(a.ranking, b.ranking)
        i, j = d[0], d[-2]
        base = _swapped(a.ranking, i, i + 1)
        assert j > i + 1 and _swapped(base, j, j + 1) == b.ranking and base[i] < base[i + 1]
        assert (base[i], base[i + 1]) == (base[j], base[j + 1]) and va <= vb + TOL
    elif prop == "top-heavy":
        (j, k) = _differ(a.ranking, b.ranking)
        assert k == j + 1 and a.ranking[j] == b.ranking[k] >= 1 and a.ranking[k] == b.ranking[j] == 0
        assert k < _top(a.ranking, metric) and va <= vb + TOL
    elif prop == "new relevant":
        (j,) = _differ(a.ranking, b.ranking)
        g = a.ranking[j]
        assert b.ranking[j] == 0 and g >= 1 and a.counts[0] == b.counts[0] - 1 and a.counts[g] == b.counts[g] + 1
        assert va < vb - TOL
    elif prop == "localised":
        top = _top(a.ranking, metric)
        assert a.ranking[:top] == b.ranking[:top] and abs(va - vb) > TOL
    elif prop == "realisable":
        assert sum(a.counts[1:]) >= 1
        best = max(f(r, a.counts) for r in _all_lists(a.counts, 10))
        assert best == pytest.approx(va) and best < vb - TOL
    elif prop in ("deepness threshold", "closeness threshold"):
        n = len(b.ranking) // 2
        top_grade = len(a.counts) - 1
        assert a.ranking == (top_grade,) and b.ranking == (0,) * n + (top_grade,) * n
        probe = [(m,) + (0,) * (top_grade - 1) + (m,) for m in range(1, depth + 1)]
        assert a.counts == b.counts == probe[n - 1]
        deep = [f((0,) * m + (top_grade,) * m, q) for m, q in enumerate(probe, 1)]
        single = [f((top_grade,), q) for q in probe]
        if prop == "deepness threshold":  # the deep list still wins (or ties) at n, beyond half the probe
            assert vb >= va - TOL and n > depth // 2
        else:  # the deep list never wins anywhere on the probe
            assert all(d <= s + TOL for d, s in zip(deep, single))
    elif prop == "interval":
        c_ = evidence[2]
        n = len(a.ranking)
        assert len(b.ranking) == len(c_.ranking) == n and a.counts == (n,) * len(a.counts)
        grid = sorted({round(f(r, a.counts), 12) for r in product(range(len(a.counts)), repeat=n)})
        k = grid.index(round(va, 12))
        assert grid[k: k + 3] == pytest.approx(values) and abs((values[2] - values[1]) - (values[1] - va)) > TOL
    else:
        raise AssertionError(f"no check for {prop}")


def test_every_counterexample_is_re_scored_and_breaks_its_property(report):
    checked = 0
    for v in report.verdicts:
        if v.status != "violated" or v.metric not in PLAIN:
            continue
        values = [PLAIN[v.metric](c.ranking, c.counts) for c in v.evidence]
        assert values == pytest.approx([c.value for c in v.evidence], rel=1e-9, abs=1e-12), str(v)
        check_counterexample(v.metric, v.prop, v.evidence, values)
        checked += 1
    assert checked > 100


def test_kishida_counterexamples_agree_with_the_paper_and_the_sensitivity_profile(report):
    after, before = report.get("AP", "new relevant", "binary").evidence
    j = next(i for i, (x, y) in enumerate(zip(after.ranking, before.ranking)) if x != y) + 1
    # Eq. 17 holds here: no relevant document lies below rank j
    assert after.value - before.value == pytest.approx(
        float(new_relevant_simple(j, sum(before.counts[1:]), before.value)))
    at_j, at_next = report.get("P@10", "top-heavy", "binary").evidence
    base = tuple(0 if (x != y) else x for x, y in zip(at_j.ranking, at_next.ranking))
    j = next(i for i, (x, y) in enumerate(zip(at_j.ranking, at_next.ranking)) if x != y)
    delta = metric_increment("P@10", me.Rankings.from_lists([base], [at_j.counts]), positions=[j + 1, j + 2])[0]
    assert delta[0] == pytest.approx(delta[1])  # Δv(j) = Δv(j + 1): not top-heavy


def test_realisability_of_rbp_follows_from_its_formula(report):
    a, b = report.get("RBP", "realisable", "binary").evidence
    assert a.value == pytest.approx(0.2) and b.value == pytest.approx(1 - 0.8 ** len(b.ranking))


# --------------------------------------------------------------------------------------------------------------------
# A user's plug-in gets the same report
# --------------------------------------------------------------------------------------------------------------------

PLUGIN = '''
import numpy as np
import meta_eval as me


def set_precision(r: me.Rankings) -> np.ndarray:
    """Relevant retrieved / retrieved (0 for an empty list)."""
    return r.num_rel_ret() / np.maximum(r.n_ret, 1)
'''
REGISTERED = '''
import numpy as np
import meta_eval as me


@me.register("ap_or_nan", undefined="no relevant document")
def ap_or_nan(r):
    """AP divided by R without trec_eval's convention: undefined when R = 0."""
    rel = r.relevant()
    R = r.num_rel().astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (rel * r.cum_relevant() / r.ranks).sum(-1) / R
'''


@pytest.fixture(scope="module")
def plugin_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("plugin")
    (folder / "registered.py").write_text(REGISTERED)  # registers while imported as a plug-in: in its own namespace
    path = folder / "new_metrics.py"
    path.write_text(PLUGIN)
    return path


def set_precision(ranking, counts):
    return sum(g >= 1 for g in ranking) / max(len(ranking), 1)


def ap_or_nan(ranking, counts):
    return ap(ranking, counts) if sum(counts[1:]) else float("nan")


def test_a_plug_in_gets_the_same_report_as_the_same_function(plugin_file):
    small = dict(random_cases=300, growth_length=256, threshold_depth=16)
    from_file = formal_properties(f"{plugin_file}:set_precision", **small)
    from_function = formal_properties(runpy.run_path(str(plugin_file))["set_precision"], **small)
    assert from_file.metrics == from_function.metrics == ["set_precision"]
    assert [v.status for v in from_file.verdicts] == [v.status for v in from_function.verdicts]
    assert from_file.to_frame().drop(columns="metric").equals(from_function.to_frame().drop(columns="metric"))


def test_plug_in_counterexamples_are_re_scored(plugin_file):
    registered = plugin_file.parent / "registered.py"
    res = formal_properties([f"{plugin_file}:set_precision", f"{registered}:ap_or_nan"], random_cases=300)
    assert res.status("set_precision", "confidence") == "held"  # appending a non-relevant document costs
    assert res.status("set_precision", "monotone") == "violated"
    assert res.status("ap_or_nan", "complete") == "violated"
    assert res.status("ap_or_nan", "localised") == "violated"
    plain = {"set_precision": set_precision, "ap_or_nan": ap_or_nan}
    for v in res.verdicts:
        if v.status != "violated":
            continue
        PLAIN[v.metric] = plain[v.metric]
        try:
            values = [plain[v.metric](c.ranking, c.counts) for c in v.evidence]
            assert values == pytest.approx([c.value for c in v.evidence], nan_ok=True), str(v)
            check_counterexample(v.metric, v.prop, v.evidence, values)
        finally:
            PLAIN.pop(v.metric)


# --------------------------------------------------------------------------------------------------------------------
# The analysis, from Python and from the command line
# --------------------------------------------------------------------------------------------------------------------


def test_the_analysis_keeps_the_contract_and_names_the_new_metric():
    from meta_eval.analyses import AnalysisData
    from meta_eval.orchestration.contract import check_analysis

    data = AnalysisData.from_collection(me.demo_collection(), ("AP", "RR", "P@10", "RBP", f"{EXAMPLE}:grbp"))
    res = check_analysis("properties", data, random_cases=300)
    assert res.result.metrics[0] == "grbp"  # the new metric first
    sentences = [f.sentence for f in res.findings()]
    assert any(s.startswith("The new metric grbp holds") for s in sentences)
    assert "RR is the only metric under study that is both localised and realisable." in sentences
    tex = res.table().to_latex(label="properties")
    assert r"\surd" in tex and r"\times" in tex
    frame = res.to_frame()
    assert set(frame.space) == {"binary", "graded"} and len(frame) == 5 * 2 * len(PROPERTIES)


def test_the_analysis_runs_from_the_command_line(tmp_path):
    from meta_eval.cli import app

    out = tmp_path / "props"
    res = CliRunner().invoke(app, ["analysis", "properties(random_cases=200,growth_length=64)", "-m", "AP", "-m",
                                   "P@10", "-m", f"{EXAMPLE}:grbp", "--out", str(out), "--format", "png"])
    assert res.exit_code == 0, res.output
    assert "The new metric grbp holds" in res.output
    for name in ("properties.csv", "properties.tex", "properties_constraints.tex", "properties_counterexamples.csv",
                 "report.md"):
        assert (out / name).stat().st_size > 0, name


def test_its_command_takes_the_measures_as_arguments():
    """``meta-eval properties AP P@10 my.py:grbp`` (issue 34): the measures are the command's arguments."""
    from meta_eval.cli import app

    res = CliRunner().invoke(app, ["properties", "AP", "P@10", f"{EXAMPLE}:grbp", "--random-cases", "200",
                                   "--growth-length", "64", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "The new metric grbp holds" in " ".join(res.output.split())
    empty = CliRunner().invoke(app, ["properties", "--no-progress", "-h"])
    assert "measures_args" in empty.output or "MEASURES" in empty.output.upper()


# --------------------------------------------------------------------------------------------------------------------
# Determinism and bad input
# --------------------------------------------------------------------------------------------------------------------


def test_the_same_seed_gives_the_same_report_and_another_seed_the_same_verdicts():
    small = dict(random_cases=400, growth_length=256)
    a = formal_properties(["nDCG@10", "P@10"], **small)
    b = formal_properties(["nDCG@10", "P@10"], **small)
    c = formal_properties(["nDCG@10", "P@10"], seed=7, **small)
    assert a.to_frame().equals(b.to_frame())
    assert a.matrix().equals(c.matrix())


@pytest.mark.parametrize("field, value", [("length", 0), ("grades", 1), ("random_length", 5), ("seed", -1),
                                          ("growth_length", True)])
def test_bad_sizes_are_input_errors_naming_the_size(field, value):
    with pytest.raises(InputError, match=field):
        SearchSizes(**{field: value})


def test_an_unknown_size_is_an_input_error_with_a_suggestion():
    with pytest.raises(InputError, match="did you mean length"):
        formal_properties("AP", lenght=5)


def test_bad_metrics_are_input_errors():
    with pytest.raises(InputError, match="at least one metric"):
        formal_properties([])
    with pytest.raises(InputError, match="unknown measure"):
        formal_properties(["nDGC"])
    with pytest.raises(InputError, match="one value per list"):
        formal_properties(lambda r: np.zeros(3), random_cases=10)


def test_a_space_too_large_for_memory_is_refused_with_the_sizes_to_lower():
    with pytest.raises(InputError, match="lower the length, the grades or the unretrieved"):
        formal_properties("AP", grades=4)


def test_without_random_cases_the_exhaustive_space_decides_alone_and_a_constant_metric_is_undefined_there():
    res = formal_properties(["AP", lambda r: np.zeros(r.shape)], random_cases=0, growth_length=64)
    assert res.status("AP", "localised") == "violated" and res.status("AP", "monotone") == "held"
    assert res.status("<lambda>", "interval") == "undefined"  # fewer than three distinct values at every length
    assert res.status("<lambda>", "convergent") == "violated" and res.status("<lambda>", "realisable") == "held"


def test_the_random_search_finds_what_the_exhaustive_space_cannot_and_reports_the_smallest():
    def buggy(r):  # precision at 20, less 0.01 from the 15th document on: extending 14 documents to 15 lowers it
        return r.count_at(r.cum_relevant(), 20) / 20 - 0.01 * (r.n_ret >= 15)

    res = formal_properties(buggy, random_cases=2000)
    longer, shorter = res.get("buggy", "monotone", "binary").evidence
    assert (len(shorter.ranking), len(longer.ranking)) == (14, 15) and longer.ranking[:-1] == shorter.ranking
    assert longer.value == pytest.approx(shorter.value + (longer.ranking[-1] >= 1) / 20 - 0.01)
