"""One contract, run over every registered analysis and measure family, a user's analysis plug-in and a user's metric
plug-in (:mod:`meta_eval.orchestration.contract`, as scikit-learn's ``check_estimator``); and the contract's own checks fail on
extensions that break it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import meta_eval as me
from meta_eval.analyses import AnalysisData, Result, TableOutput, analyses, analysis, get_analysis
from meta_eval.orchestration.contract import ContractError, check_analysis, check_measure
from meta_eval.core.params import Param

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "top_stability.py"
METRIC = REPO / "tests" / "data" / "my_metric.py"

def _data():
    return AnalysisData.from_collection(me.demo_collection(), ("AP", "nDCG@10"), against=("GAP",))


@pytest.mark.parametrize("name", [a.name for a in analyses()])
def test_every_analysis_keeps_the_contract(name):
    if name == "ltr":
        pytest.importorskip("lightgbm")
    result = check_analysis(name, _data())  # with its own quick budgets (Analysis.quick)
    assert result.analysis == name and (result.findings() or name == "scores"), "every analysis but the scores " \
        "has a finding on the demo collection"


def test_a_users_analysis_plug_in_keeps_the_contract():
    result = check_analysis(f"{EXAMPLE}:top_stability(n_resamples=100)", _data())
    assert result.params == {"k": 5, "n_resamples": 100, "seed": 0}
    assert list(result.to_frame().columns) == ["measure", "mean_overlap", "low", "high"]


@pytest.mark.parametrize("family", me.families(), ids=lambda f: f.name)
def test_every_measure_family_keeps_the_contract(family):
    check_measure(family)


@pytest.mark.parametrize("name", ["grbp", "top_grade_rank"])
def test_a_users_metric_plug_in_keeps_the_contract(name):
    assert check_measure(f"{METRIC}:{name}").family.source


def test_the_engines_forms_are_checked_against_the_measure_itself(monkeypatch):
    """nDCG's expected-value form and swap delta pass; the contract catches a form or delta that is off."""
    from meta_eval.statistics.learning_to_rank import swap_deltas
    from meta_eval.statistics.maxent import expectations

    ndcg = me.get_measure("nDCG@10")
    assert expectations.declared_form(ndcg) is not None and swap_deltas.closed_form(ndcg) is not None
    check_measure(ndcg)
    good = swap_deltas._DELTAS["ndcg"]
    with monkeypatch.context() as patch:
        patch.setitem(swap_deltas._DELTAS, "ndcg",
                      lambda **p: (lambda g, c, level, top: 1.01 * good(**p)(g, c, level, top)))
        with pytest.raises(ContractError, match="swap delta equals the change"):
            check_measure(ndcg)
    with monkeypatch.context() as patch:
        patch.setitem(expectations._FORMS, "ndcg", expectations._FORMS["dcg"])  # DCG is not nDCG
        with pytest.raises(ContractError, match="expectation form takes the measure's value"):
            check_measure(ndcg)
    check_measure(ndcg)


def test_the_measures_vocabulary_reaches_the_declared_expectation_form():
    """nDCG(discount=log2) is nDCG, and nDCG(discount=jk) is built from the core's own discount: both declared
    (MEM's own spelling of the discount was 'log', and the core's fell back to probing); a parameter the form does
    not take (graded RBP) is derived instead."""
    from meta_eval.statistics import maxent as mem
    from meta_eval.statistics.maxent.forms import metric_form

    col = me.demo_collection()
    lists = mem.lists_from_collection(col, index=np.arange(10))
    for name in ("nDCG(discount=log2)@10", "nDCG(discount=jk,base=3)@10", "ndcg_cut_10"):
        form = metric_form(name, lists.batch)
        assert form.method == "declared" and form.residual < 1e-12, name
    assert metric_form("RBP(graded=true)@10", lists.batch).method != "declared"  # a form the builder lacks


# ------------------------------------------------------------------------------------------ the checks can fail


@dataclass
class _Broken(Result):
    frame: pd.DataFrame
    quote: str

    def tables(self):
        from meta_eval.rendering.paper_table import PaperTable

        return [TableOutput("broken", "A table", self.frame, PaperTable(self.frame.set_index("measure")))]

    def findings(self):
        from meta_eval.rendering.findings import Quoter

        q = Quoter(self.compact)
        return [q.finding(f"AP scores {q('broken', 'AP', 'value')} {self.quote}.")]


def _broken(quote: str):
    @analysis("broken", title="Broken", params=(Param("x", 1, int, "a number", within="[0, 5]"),))
    def run(data, *, x):
        return _Broken(pd.DataFrame({"measure": ["AP"], "value": [0.5]}), quote, text="made up")

    return run


def test_the_contract_refuses_a_finding_with_a_number_from_elsewhere():
    check_analysis(_broken("well"), _data())
    with pytest.raises(ContractError, match=r"every number of a finding comes from its tables"):
        check_analysis(_broken("in 42 % of cases"), _data())


def test_the_contract_refuses_a_default_outside_its_domain_and_a_result_that_is_not_one():
    decl = _broken("well")
    with pytest.raises(ContractError, match="default of x lies outside its domain"):
        check_analysis(replace(decl, params=(Param("x", 9, int, "a number", within="[0, 5]"),)), _data())
    with pytest.raises(me.InputError, match="returned dict, not a Result"):
        check_analysis(replace(decl, run=lambda data, *, x: {}), _data())
    with pytest.raises(ContractError, match="depends on an analysis that exists"):
        check_analysis(replace(decl, after=("no-such-analysis",)), _data())


def test_built_in_analyses_cannot_be_replaced_by_a_plug_in(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(EXAMPLE.read_text().replace('@analysis("top-stability"', '@analysis("anova"'))
    with pytest.raises(me.InputError, match="the name of a built-in analysis"):
        check_analysis(f"{path}:top_stability")
    assert get_analysis("anova").source == ""
