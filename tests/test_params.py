"""Measure parameters: every domain is checked when the name is parsed, with an error naming the measure, the
parameter and the allowed values; random names and parameters never give a traceback or a non-finite score."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import meta_eval as me
from meta_eval.cli import app
from meta_eval.measures.registry import families
from meta_eval.core.trec_eval_names import known_trec_names

# (name, parameter, text the error must contain): one per declared domain
BAD = [
    ("RBP(p=1.5)", "p=1.5", "(0, 1)"), ("RBP(p=0)", "p=0", "(0, 1)"), ("RBP(p=nan)", "p=nan", "(0, 1)"),
    ("RBP(p=inf)", "p=inf", "(0, 1)"), ("RBP(p=abc)", "p='abc'", "(0, 1)"),
    ("P@0", "k=0", "[1, inf)"), ("P@-5", "k=-5", "[1, inf)"), ("AP@1.5", "k='1.5'", "integer"),
    ("P_0", "k=0", "[1, inf)"), ("nDCG@0", "k=0", "[1, inf)"), ("ndcg_cut_0", "k=0", "[1, inf)"),
    ("iprec_at_recall_1.5", "k=1.5", "[0, 1]"), ("IPrec@-0.1", "k=-0.1", "[0, 1]"),
    ("IPrec(cut=floor)@0.5", "cut='floor'", "round, ceil, v9"), ("IPrec11(levels=0.5,2)", "levels=0.5,2", "[0, 1]"),
    ("Rprec_mult@0", "k=0", "(0, inf)"), ("SetF(beta=-1)", "beta=-1", "[0, inf)"),
    ("GAP(g=0.5,0.6)", "g=0.5,0.6", "does not sum to 1"), ("GAP(g=-0.5,1.5)", "g=-0.5,1.5", "[0, 1]"),
    ("nDCG(gain=1:3,200:9)", "gain=1:3,200:9", "0..127"), ("nDCG(gain=-1:3)", "gain=-1:3", "0..127"),
    ("nDCG(gain=1:nan)", "gain=1:nan", "[-1e100, 1e100]"), ("nDCG(gain=squared)", "gain='squared'", "linear, exp"),
    ("nDCG(discount=log3)", "discount='log3'", "log2, jk, none"), ("DCG(discount=jk,base=1)", "base=1", "(1, inf)"),
    ("Q(beta=-1)", "beta=-1", "[0, inf)"), ("ERR(stop=cubic)", "stop='cubic'", "exp, linear"),
    ("ERR(max_grade=0)", "max_grade=0", "[1, 127]"), ("ERR(max_grade=1000)", "max_grade=1000", "[1, 127]"),
    ("RBP(graded=maybe)", "graded='maybe'", "true or false"), ("RBP(max=all)", "max='all'", "scale, topic"),
    ("RBP_resid(fully_judged=no)", "fully_judged='no'", "tail, zero"), ("NCP(stop=last)", "stop='last'", "uniform"),
    ("NCP(q=0)", "q=0", "(0, 1]"), ("NRecall(N=0)", "N=0", "[1, inf)"), ("NPrecision(N=-3)", "N=-3", "[1, inf)"),
    ("Utility(a=inf)", "a=inf", "finite"), ("Utility(b=1e101)", "b=1e+101", "[-1e100, 1e100]"),
    ("Utility(N=-1)", "N=-1", "[0, inf)"), ("RelP@0", "k=0", "[1, inf)"),
    ("relative_P_0", "k=0", "[1, inf)"), ("Judged@0", "k=0", "[1, inf)"), ("unj_0", "k=0", "[1, inf)"),
    ("Success@0", "k=0", "[1, inf)"), ("Recall@0", "k=0", "[1, inf)"),
    ("NumRel(summary=mean)", "summary='mean'", "sum"),
    ("G(gain=1:x)", "gain='1:x'", "grade:gain"), ("utility_1,2", "utility", "4 coefficients"),
]


@pytest.mark.parametrize("name, param, allowed", BAD)
def test_bad_parameter_is_a_clear_error(name, param, allowed):
    with pytest.raises(me.InputError) as info:
        me.get_measure(name)
    message = str(info.value)
    assert name in message and param in message and allowed in message, message


@pytest.mark.parametrize("name, param, allowed", BAD[::4])
def test_bad_parameter_on_the_command_line(name, param, allowed):
    result = CliRunner().invoke(app, ["evaluate", "-m", name])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("meta-eval: error: ") and param in lines[0], result.output


EXTREME = ["P@9007199254740992", "nDCG@9007199254740992", "RBP(p=1e-300)", "RBP(p=0.9999999999)@99999999999",
           "NRecall(N=9007199254740992)", "NPrecision(N=9007199254740992)",
           "Utility(a=1e100,b=-1e100,d=1e100,N=99999999)",
           "Q(beta=1e308)", "Q(beta=1e-308)", "SetF(beta=1e200)", "SetF(beta=1e-200)", "nDCG(gain=1:1e100,2:1e100)",
           "G(gain=1:1e100,2:1e100)", "Rndcg(gain=1:1e100,2:1e100)", "nDCG_rel(gain=1:1e100,2:-1e100)",
           "Q(gain=1:1e100,beta=1e308)", "ERR(stop=linear,gain=1:1e100)", "RBP(graded=true,gain=1:0,2:0)",
           "DCG(discount=jk,base=1.0000000001)", "ANDCG(gain=1:-1e100,2:1e100)", "GAP(g=1e-300,1)",
           "NCP(stop=geometric,q=1e-300)", "ERR(max_grade=127)", "nERR(stop=linear,max_grade=2)"]
# (max_grade below the qrels' highest grade, 2 here, is refused: tests/test_adversarial_round5.py)


@pytest.mark.parametrize("name", EXTREME)
def test_extreme_valid_parameters_give_finite_scores(name):
    values = me.score(me.demo_collection(), name)
    assert np.isfinite(values).all()


@pytest.mark.parametrize("name", ["ERR(gain=1:-1)", "RBP(graded=true,gain=2:-1)"])
def test_gains_that_become_probabilities_must_be_non_negative(name):
    with pytest.raises(me.InputError, match="negative gain"):
        me.get_measure(name)


def test_make_measure_validates_too():
    with pytest.raises(me.InputError, match=r"p=2.*\(0, 1\)"):
        me.make_measure("RBP", p=2)
    with pytest.raises(me.InputError, match="has no parameter 'pp'.*did you mean p"):
        me.make_measure("RBP", pp=0.5)
    assert me.make_measure("P", k=np.int64(5)).name == "P@5"


@pytest.mark.parametrize("typo, suggestion", [
    ("nDGC@10", "nDCG"), ("mapp", "map"), ("ndcg_cutt_10", "ndcg_cut_10"), ("Rprc", "Rprec"), ("infap_x", "infAP"),
    ("precison@5", "precision"), ("RBP(pp=0.5)", "p"), ("NCP(stop=geometrc)", "geometric"),
])
def test_did_you_mean(typo, suggestion):
    with pytest.raises(me.InputError, match="did you mean") as info:
        me.get_measure(typo)
    assert suggestion in str(info.value)


def test_measures_command_lists_every_family():
    result = CliRunner().invoke(app, ["measures"])
    assert result.exit_code == 0
    for fam in families():
        assert f"\n{fam.name}" in "\n" + result.output, fam.name
    assert "p: number in (0, 1); default 0.8" in result.output  # RBP's persistence, from its declaration
    assert "rbp_resid" in result.output and "ndcg_cut_K" in result.output
    one = CliRunner().invoke(app, ["measures", "rbp_resid"])
    assert one.exit_code == 0 and "RBP_resid(p=0.9,fully_judged=zero)" in one.output and "Moffat" in one.output
    assert CliRunner().invoke(app, ["measures", "nDGC"]).exit_code == 2


# ----------------------------------------------------------------------------------------------- fuzzing

_VALUES = st.one_of(
    st.integers(-3, 1200).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["0", "1", "0.5", "0.9", "1e9", "-0", "true", "false", "exp", "linear", "log2", "jk", "none",
                     "topic", "scale", "zero", "tail", "round", "ceil", "v9", "uniform", "first", "geometric",
                     "trec_eval", "sum", "1:3,2:9", "0:1", "0.5,0.5", "0.2,0.3,0.5", "1,0", "", " ", "a=b", "@",
                     "((", "1:3,1:4", "5:-2", "127:1", "9999999999999999999999"]),
    st.text(max_size=6),
)


@st.composite
def measure_names(draw):
    """A family name or trec_eval spelling, with random parameters and cutoff (valid or not)."""
    if draw(st.booleans()):
        base = draw(st.sampled_from(known_trec_names()))
        return base if draw(st.booleans()) else base + draw(st.sampled_from(["", "x", "_0", "_-1", "_2.5", "_1=3"]))
    fam = draw(st.sampled_from(families()))
    params = [p.name for p in fam.params] + ["bogus"]
    chosen = draw(st.lists(st.sampled_from(params), max_size=3, unique=True))
    inner = ",".join(f"{key}={draw(_VALUES)}" for key in chosen)
    name = fam.name + (f"({inner})" if inner else "")
    if draw(st.booleans()):
        name += "@" + draw(_VALUES)
    return name


@pytest.fixture(scope="module")
def small_collection():
    return me.demo_collection().subset(systems=me.demo_collection().systems[:3],
                                       topics=me.demo_collection().topics[:4])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=measure_names())
def test_random_names_parse_or_fail_clearly_and_score_finite(name, small_collection):
    try:
        measure = me.get_measure(name)
    except me.InputError:
        return
    assert me.get_measure(measure.name).name == measure.name  # the canonical name parses back to itself
    try:
        values = me.score(small_collection, measure)
    except me.InputError:
        return  # data-dependent checks (GAP's g must cover the qrels' grades, NRecall's N the lists)
    undefined = np.isnan(values)
    assert not np.isinf(values).any(), name
    if undefined.any():
        assert measure.family.undefined, f"{name} is NaN but does not declare when it is undefined"


@pytest.mark.parametrize("k", [1e18, 1e300])
def test_rprec_mult_with_a_cutoff_beyond_any_integer(k):
    """Rprec_mult@k for a k whose cutoff ⌊k·R + 0.9⌋ overflows int64: C(n)/cutoff (every retrieved relevant
    document over the huge cutoff), tiny and positive, not the -0.0 of a wrapped integer; no warning."""
    col = me.demo_collection()
    r = col.rankings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = me.score(col, f"Rprec_mult@{k:g}")
    R = r.num_rel().astype(float)
    expected = np.where(R > 0, r.count_at(r.cum_relevant(), r.depth) / np.floor(k * R + 0.9), 0.0)
    np.testing.assert_allclose(values, expected, rtol=1e-12)
    assert (values[R > 0] >= 0).all() and not np.signbit(values).any()
