"""trec_eval's own test suite (../shared/data/trec_eval-test): every numeric measure it prints (all of all_trec but
the relstring string), to the printed 4 decimals, with and without -c, -M100 and -l2."""

from __future__ import annotations

import pytest

import meta_eval as me
from meta_eval.core.trec_eval_names import expand_trec_spec
from tests.conftest import shared_path

MEAS_PARAMS = ("iprec_at_recall..10,.20,.25,.75,.50 P.5,7,3 recall.20,2000 Rprec_mult.5.0,0.2,0.35 "
               "utility.2,-1,0,0 11pt_avg..25,.5,.75 ndcg.1=3,2=9,4=4.5 ndcg_cut.10,20,23.4 success.2,5,20").split()

CASES = {
    # expected output: (qrels, run, load options mirroring trec_eval's flags (-c is missing="zero"), measure specs)
    "out.test.aq": ("qrels.test", "results.test", {"missing": "skip"}, ["all_trec"]),
    "out.test.aqc": ("qrels.test", "results.trunc", {"missing": "zero"}, ["all_trec"]),
    "out.test.aqcM": ("qrels.test", "results.trunc", {"missing": "zero", "depth": 100}, ["all_trec"]),
    "out.test.aql": ("qrels.rel_level", "results.test", {"rel_level": 2, "missing": "skip"}, ["all_trec"]),
    "out.test.meas_params": ("qrels.test", "results.test", {"missing": "skip"}, MEAS_PARAMS),
}


def _expected(path) -> dict[tuple[str, str], str]:
    rows = {}
    for line in path.read_text().splitlines():
        measure, topic, value = line.split()
        rows[(measure, topic)] = value
    return rows


@pytest.mark.parametrize("output", sorted(CASES))
def test_matches_trec_eval_output(output):
    base = shared_path("data", "trec_eval-test")
    qrels, run, options, specs = CASES[output]
    expected = _expected(base / output)
    collection = me.load_collection(base / qrels, [base / run], **options)
    results = me.evaluate(collection, specs)
    compared, mismatches = 0, []
    for row in results.itertuples():
        want = expected.get((row.measure, row.topic))
        if want is None:
            continue
        got = f"{row.value:.4f}" if "." in want else str(int(round(row.value)))
        compared += 1
        if got != want:
            mismatches.append((row.measure, row.topic, got, want))
    assert not mismatches, mismatches[:10]
    produced = {r.measure for r in results.itertuples()}
    not_compared = {m for m, _ in expected} - produced - {"runid", "num_q", "relstring", "relstring_20"}
    assert not not_compared, f"trec_eval measures meta-eval does not compute: {sorted(not_compared)}"
    assert compared >= 80, compared


def test_all_trec_covers_the_required_measures():
    names = set(expand_trec_spec("all_trec"))
    required = {"num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
                "iprec_at_recall_0.50", "P_10", "recall_100", "ndcg", "ndcg_cut_10", "11pt_avg", "success_5",
                "Rprec_mult_1.00", "set_P", "set_recall", "set_F", "map_cut_10", "rbp", "rbp_resid", "infAP",
                "gm_bpref", "utility", "relative_P_10", "G", "binG", "Rndcg", "ndcg_rel", "set_map", "set_relative_P",
                "num_nonrel_judged_ret", "unj_10"}
    assert required <= names


def test_trec_layout_round_trips_expected_file():
    """The trec layout printer produces lines trec_eval would print for the measures we share."""
    base = shared_path("data", "trec_eval-test")
    collection = me.load_collection(base / "qrels.test", [base / "results.test"])
    measures = me.resolve(["map", "P.5,10", "ndcg_cut.10"])
    text = me.format_trec(me.evaluate(collection, measures), measures)
    expected = _expected(base / "out.test.aq")
    for line in text.splitlines():
        measure, topic, value = line.split("\t")
        if measure.strip() in ("runid", "num_q"):
            continue
        assert expected[(measure.strip(), topic)] == value
    assert text.count("\n") == 3 * 4 + 4 + 2
