"""Measure names: parsing, canonical printing, trec_eval aliases, user-registered measures."""

from __future__ import annotations

import numpy as np
import pytest

import meta_eval as me
from meta_eval.core.trec_eval_names import expand_trec_spec


@pytest.mark.parametrize("spec, canonical", [
    ("AP", "AP"), ("ap", "AP"), ("AP@10", "AP@10"), ("P@5", "P@5"), ("nDCG@10", "nDCG@10"),
    ("nDCG(gain=exp)@20", "nDCG(gain=exp)@20"), ("GAP(g=0.5,0.5)", "GAP(g=0.5,0.5)"),
    ("GAP( g=0.25, 0.75 )", "GAP(g=0.25,0.75)"), ("Q(beta=1)", "Q"), ("RBP(p=0.5)", "RBP(p=0.5)"),
    ("nDCG(gain=1:3,2:9)", "nDCG(gain=1:3,2:9)"), ("vS'", "MSR"), ("NCP(stop=first)", "NCP(stop=first)"),
])
def test_canonical_names_round_trip(spec, canonical):
    m = me.get_measure(spec)
    assert m.name == canonical
    assert me.get_measure(m.name).name == canonical


@pytest.mark.parametrize("trec, canonical", [
    ("map", "AP"), ("P_5", "P@5"), ("ndcg_cut_10", "nDCG@10"), ("ndcg", "nDCG"), ("Rprec", "Rprec"),
    ("recip_rank", "RR"), ("bpref", "bpref"), ("iprec_at_recall_0.10", "IPrec@0.1"), ("map_cut_100", "AP@100"),
    ("recall_1000", "Recall@1000"), ("success_1", "Success@1"), ("Rprec_mult_0.20", "Rprec_mult@0.2"),
    ("ndcg_1=3,2=9", "nDCG(gain=1:3,2:9)"), ("11pt_avg", "IPrec11"), ("set_F", "SetF(beta2=1)"), ("gm_map", "GM_AP"),
])
def test_trec_eval_aliases(trec, canonical):
    m = me.get_measure(trec)
    assert m.name == canonical and m.output_name == trec


def test_expand_trec_spec():
    assert expand_trec_spec("P.5,10") == ["P_5", "P_10"]
    assert expand_trec_spec("ndcg_cut.10,20,23.4") == ["ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23"]
    assert len(expand_trec_spec("iprec_at_recall")) == 11
    assert expand_trec_spec("AP") == ["AP"]


def test_alias_and_canonical_give_same_values():
    col = me.demo_collection()
    for a, b in (("map", "AP"), ("ndcg_cut_10", "nDCG@10"), ("P_5", "P@5"), ("recip_rank", "RR")):
        np.testing.assert_array_equal(me.score(col, a), me.score(col, b))


def test_user_registered_measure_works_everywhere():
    @me.register("HitsTest", cutoff=me.Param("k", 10, int, "rank cutoff"))
    def hits(r, k):
        """Number of relevant documents in the top k."""
        return r.count_at(r.cum_relevant(), k).astype(float)

    col = me.demo_collection()
    np.testing.assert_array_equal(me.score(col, "HitsTest@5"), me.score(col, "P@5") * 5)
    df = me.evaluate(col, ["HitsTest@5"])
    assert set(df.measure) == {"HitsTest@5"}


def test_gm_map_is_geometric_mean_with_floor():
    col = me.demo_collection()
    ap = me.score(col, "AP")
    gm = me.evaluate(col, ["gm_map"], per_topic_rows=False).value.to_numpy()
    np.testing.assert_allclose(gm, np.exp(np.log(np.maximum(ap, 1e-5)).mean(1)))


def test_every_family_has_a_docstring_with_a_source():
    """Every family meta-eval registers itself: listed in a fresh interpreter, since other tests register plug-ins
    (a user's metric may lack a docstring) in this process's registry."""
    import subprocess
    import sys

    listing = "import meta_eval as me; print('\\n'.join(f'{f.name}\\t{bool(f.doc.strip())}' for f in me.families()))"
    out = subprocess.run([sys.executable, "-c", listing], capture_output=True, text=True, check=True).stdout
    rows = [line.split("\t") for line in out.splitlines()]
    assert {"AP", "GAP", "nDCG", "ERR", "RBP"} <= {name for name, _ in rows}
    assert [name for name, documented in rows if documented != "True"] == []
