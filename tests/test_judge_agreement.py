"""The judge-agreement analysis against independent computations: Cohen's κ against scikit-learn (unweighted and
weighted), the labels joined by hand, τ_b against scipy, τ_AP against its definition written out, swapped pairs
and rank changes recounted from the two score tables; its command, its place in a study, and its errors."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import kendalltau, rankdata
from sklearn.metrics import cohen_kappa_score
from typer.testing import CliRunner

import meta_eval as me
from meta_eval.analyses import AnalysisData, get_analysis
from meta_eval.analyses.judge_agreement import cohen_kappa
from meta_eval.cli import app
from meta_eval.model.demo import demo_llm_qrels, demo_paths

MEASURES = ("AP", "nDCG@10", "P@10", "RR")


@pytest.fixture(scope="module")
def result():
    data = AnalysisData.from_collection(me.demo_collection(), MEASURES)
    return get_analysis("judge-agreement")(data, other_qrels=str(demo_llm_qrels()), other_name="the LLM")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=2, max_size=60),
       st.sampled_from(["none", "linear", "quadratic"]))
def test_kappa_equals_scikit_learn(pairs, weights):
    a, b = np.array(pairs).T
    mine = cohen_kappa(a, b, weights)
    grades = np.arange(min(a.min(), b.min()), max(a.max(), b.max()) + 1)  # weights by grade, not by position
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn warns where κ is undefined (one label): NaN, checked below
        theirs = cohen_kappa_score(a, b, labels=grades, weights=None if weights == "none" else weights)
    if np.isnan(theirs) or np.isinf(theirs):
        assert np.isnan(mine)  # both raters give every item one label: κ undefined
    else:
        assert mine == pytest.approx(theirs, abs=1e-12)


def test_kappa_refuses_bad_input():
    with pytest.raises(me.InputError, match="weights must be one of"):
        cohen_kappa([0, 1], [0, 1], "cubic")
    with pytest.raises(me.InputError, match="same length"):
        cohen_kappa([0, 1], [0])


def _labels(path) -> pd.DataFrame:
    rows = [line.split() for line in Path(path).read_text().splitlines() if line.strip()]
    return pd.DataFrame({"topic": [r[0] for r in rows], "docid": [r[2] for r in rows],
                         "grade": [int(r[3]) for r in rows]})


def test_label_agreement_is_the_hand_join_of_the_two_files(result):
    qrels, _ = demo_paths()
    both = _labels(qrels).merge(_labels(demo_llm_qrels()), on=["topic", "docid"], suffixes=("_a", "_b"))
    kappa = result.kappa.set_index("labels")
    graded, binary = kappa.index
    assert kappa.loc[graded, "documents"] == len(both)
    assert kappa.loc[graded, "agreement"] == pytest.approx(np.mean(both.grade_a == both.grade_b))
    assert kappa.loc[graded, "kappa"] == pytest.approx(cohen_kappa_score(both.grade_a, both.grade_b))
    assert kappa.loc[binary, "kappa"] == pytest.approx(cohen_kappa_score(both.grade_a >= 1, both.grade_b >= 1))
    matrix = result.confusion.set_index(["reference", "other"])["documents"]
    hand = pd.crosstab(both.grade_a, both.grade_b)
    for (i, j), n in matrix.items():
        assert n == hand.loc[i, j]


def test_rankings_equal_the_coefficients_computed_independently(result):
    reference = me.demo_collection()
    other = me.load_collection(demo_llm_qrels(), [demo_paths()[1]])
    rows = result.rankings.set_index("measure")
    for m in MEASURES:
        # means equal up to float noise are ties: rounded to 12 decimals, whatever the order of summation
        x, y = np.round(me.score(reference, m).mean(1), 12), np.round(me.score(other, m).mean(1), 12)
        assert rows.loc[m, "kendall_tau_b"] == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)
        assert rows.loc[m, "tau_ap"] == pytest.approx(_tau_ap_by_definition(x, y), abs=1e-12)
        rx, ry = np.round(x, 12), np.round(y, 12)  # equal means that differ by float noise are ties
        swapped = [(i, j) for i in range(len(x)) for j in range(i + 1, len(x))
                   if (rx[i] - rx[j]) * (ry[i] - ry[j]) < 0]
        assert rows.loc[m, "swaps"] == len(swapped) and rows.loc[m, "pairs"] == len(x) * (len(x) - 1) // 2
        ranks = result.ranks[result.ranks.measure == m]
        change = rankdata(-ry, method="min") - rankdata(-rx, method="min")
        assert (ranks["rank_change"].to_numpy() == change).all()
        assert rows.loc[m, "largest_rank_change"] == np.abs(change).max()
        listed = result.swaps[result.swaps.measure == m]
        assert len(listed) == len(swapped)


def _tau_ap_by_definition(x, y):
    """τ_AP(y | x) of Yilmaz et al. (2008), item by item, with Urbano & Marrero's (2017) ties: for every item i below
    y's top tie group, C(i) / (items strictly above i in y), C(i) the items strictly above i in both y and x."""
    ratios = []
    for i in range(len(y)):
        above = [k for k in range(len(y)) if y[k] > y[i]]
        if above:
            ratios.append(sum(x[k] > x[i] for k in above) / len(above))
    return 2 * np.mean(ratios) - 1


def test_findings_quote_the_tables(result):
    found = result.findings()
    assert len(found) == 2 and "Cohen's κ" in found[0].sentence and "the LLM" in found[1].sentence
    for finding in found:
        for fact in finding.facts:
            assert fact.text == result.compact[fact.table].text(fact.row, fact.column)


def test_the_command_writes_its_result_folder(tmp_path):
    out = tmp_path / "judges"
    res = CliRunner().invoke(app, ["judge-agreement", "--other-qrels", str(demo_llm_qrels()), "-m", "AP", "-m", "RR",
                                   "-a", "none", "--weights", "linear", "--no-progress", "--out", str(out), "--format", "png",
                                   "--dpi", "50"])
    assert res.exit_code == 0, res.output
    assert "Cohen's κ" in res.output and "linear weights" in res.output
    rankings = pd.read_csv(out / "judge_agreement.csv")
    assert list(rankings.measure) == ["AP", "RR"]
    assert {"judge_kappa.csv", "judge_ranks.csv", "judge_swaps.csv", "judge_confusion.csv",
            "judge_ranks.png"} <= {p.name for p in out.iterdir()}
    assert json.loads((out / "manifest.json").read_text())["complete"] is True


def test_the_command_refuses_a_missing_file_before_any_work(tmp_path):
    res = CliRunner().invoke(app, ["judge-agreement", "--other-qrels", str(tmp_path / "none.txt"), "--out",
                                   str(tmp_path / "out")])
    assert res.exit_code == 2 and "is not a file" in res.output and not (tmp_path / "out").exists()
    res = CliRunner().invoke(app, ["judge-agreement"])
    assert res.exit_code == 2 and "other_qrels is needed" in res.output


def test_it_runs_in_a_study_when_named_and_not_otherwise(tmp_path):
    from meta_eval.orchestration.study import StudyOptions, run_study

    skip = ("discpower", "split-half", "anova", "correlation", "intuitiveness", "incomplete-judgments",
            "reusability", "informativeness")
    small = dict(metrics=("AP", "RR"), against=("nDCG",), skip=skip, formats=("png",), dpi=50)
    plain = run_study(me.demo_collection(), tmp_path / "a", StudyOptions(**small))
    assert "judge-agreement" not in plain.timings
    spec = f"judge-agreement(other_qrels={demo_llm_qrels()},other_name=the LLM)"
    named = run_study(me.demo_collection(), tmp_path / "b", StudyOptions(**small, analyses=(spec,)))
    assert not named.errors and "judge-agreement" in named.timings
    report = (tmp_path / "b" / "report.md").read_text()
    assert "## Agreement with another judge" in report and "The labels of the LLM agree" in report
    assert (tmp_path / "b" / "judge_agreement.tex").exists()
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    assert str(demo_llm_qrels()) in json.dumps(manifest["study_options"])
