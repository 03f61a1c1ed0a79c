"""Incomplete judgments and pool reusability against straightforward reference implementations: reduced qrels
drawn by a plain loop over topics and grades from the same per-draw seeds, every reduced collection built with
``Collection.with_judgments`` (and ``condensed``) and scored with ``me.score``, Kendall's τ from scipy and the
paired t-test from ``scipy.stats.ttest_rel``; leave-one-out pools from Python sets of top-k documents."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import meta_eval as me
from meta_eval.statistics.correlation.rank import snap_ties
from meta_eval.statistics.correlation import tau_ap
from meta_eval.core.errors import InputError
from meta_eval.statistics.incomplete_judgments import incomplete_judgments, judgment_masks, significant_pairs
from meta_eval.statistics.reusability import prefix_groups, reusability
from meta_eval.statistics.rejudge import Rejudger, resolve_measures
from tests.conftest import write_collection

MEASURES = ["AP", "nDCG@10", "bpref"]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """Six runs x eight topics, documents judged only in part (so unjudged documents exist)."""
    root = tmp_path_factory.mktemp("meta")
    qrels, runs = write_collection(root, n_topics=8, n_docs=40, n_runs=6, depth=25, noise=2.0, seed=5)
    lines = qrels.read_text().splitlines()
    keep = np.random.default_rng(0).random(len(lines)) < 0.7  # a pool that missed 30 % of the documents
    qrels.write_text("\n".join(line for line, k in zip(lines, keep) if k) + "\n")
    return me.load_collection(qrels, [runs])


def _reference_masks(col, fractions, n_draws, seed, sampling="uniform"):
    """Plain loops: per draw, the same uniform keys; per (topic, grade) group keep the round(f n) smallest keys
    (at least one of a relevant grade), or per topic the round(f n) documents first pooled."""
    j = col.judgments
    out = np.zeros((len(fractions), n_draws, len(j)), dtype=bool)
    first = None
    if sampling == "depth":
        first = {}
        for s in range(len(col.systems)):
            for t in range(len(col.topics)):
                for block in col.blocks:
                    where = np.flatnonzero(block.topics == t)
                    if where.size:
                        docs = block.docs[s, where[0]]
                        for rank, d in enumerate(docs[docs >= 0], start=1):
                            first[(t, d)] = min(first.get((t, d), 10**9), rank)
    for d in range(n_draws):
        u = np.random.default_rng([seed, d]).random(len(j))
        groups = {}
        for i in range(len(j)):
            key = (j.topic[i], j.grade[i]) if sampling == "uniform" else j.topic[i]
            groups.setdefault(key, []).append(i)
        for key, rows in groups.items():
            if sampling == "uniform":
                rows = sorted(rows, key=lambda i: u[i])
            else:
                rows = sorted(rows, key=lambda i: (first.get((j.topic[i], j.doc[i]), col.depth + 1), u[i]))
            for fi, f in enumerate(fractions):
                k = int(np.floor(f * len(rows) + 0.5))
                if sampling == "depth" or key[1] >= col.rel_level:
                    k = max(k, 1)
                out[fi, d, rows[:k]] = True
    return out


@pytest.mark.parametrize("sampling", ["uniform", "depth"])
def test_masks_match_plain_loops(small, sampling):
    fractions = [0.1, 0.35, 0.8]
    got = judgment_masks(small, fractions, 3, sampling=sampling, seed=11)
    assert np.array_equal(got, _reference_masks(small, fractions, 3, 11, sampling))
    assert np.all(got[0] <= got[1]) and np.all(got[1] <= got[2])  # nested within a draw
    assert np.array_equal(judgment_masks(small, fractions, 5, sampling=sampling, seed=11)[:, :3], got)


def test_engine_matches_with_judgments(small):
    rj = Rejudger(small)
    # the cutoff measures take the engine's top-k path (PREFIX_FAMILIES): same values as on whole lists
    ms = resolve_measures(MEASURES + ["NumRel", "P@5", "nDCG@3", "AP@10", "GAP@4", "ERR@5", "RBP@6", "Q@7",
                                      "Recall@8", "RR@3"])
    keep = np.random.default_rng(2).random((3, rj.n_judgments)) < 0.5
    which = np.array([[0] * 6, [1] * 6, [2, 2, 1, 1, 0, 0]])
    out = rj.all_scores(ms, keep, which, ("standard", "condensed"))
    reference = {}
    for mask in range(3):
        reduced = small.with_judgments(keep[mask])
        for m in ms:
            reference[(m.output_name, "standard", mask)] = me.score(reduced, m)
            reference[(m.output_name, "condensed", mask)] = me.score(reduced.condensed(), m)
    for (name, form, mask), expected in reference.items():
        got = out[(name, form)]
        for k in range(3):
            rows = which[k] == mask
            assert np.allclose(got[k, rows], expected[rows], atol=1e-12), (name, form, k)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_significant_pairs_matches_ttest_rel():
    rng = np.random.default_rng(1)
    x = rng.random((2, 7, 10)) + np.arange(7)[None, :, None] * 0.05
    x[0, 1] = x[0, 0]  # identical systems: never significant
    x[0, 2] = x[0, 0] + 0.1  # constant difference: significant
    ia, ib = np.triu_indices(7, 1)
    for k in range(2):
        with np.errstate(invalid="ignore", divide="ignore"):
            p = stats.ttest_rel(x[k, ia], x[k, ib], axis=1).pvalue
        d = x[k, ia] - x[k, ib]
        constant = np.ptp(d, axis=1) == 0
        p = np.where(constant, np.where(d[:, 0] == 0, 1.0, 0.0), p)
        assert significant_pairs(x, 0.05)[k] == pytest.approx(np.mean(p < 0.05))


def test_incomplete_judgments_match_the_reference(small):
    fractions, n_draws, seed = [0.2, 0.6], 2, 3
    res = incomplete_judgments(small, MEASURES, fractions=fractions, n_draws=n_draws, seed=seed,
                               reference="standard")
    masks = _reference_masks(small, fractions, n_draws, seed)
    full = {m: me.score(small, m) for m in MEASURES}
    rows = []
    for fi, f in enumerate(fractions):
        for d in range(n_draws):
            reduced = small.with_judgments(masks[fi, d])
            for form, col in (("standard", reduced), ("condensed", reduced.condensed())):
                for m in MEASURES:
                    v = me.score(col, m)
                    ref_means, means = _mean(full[m], m), _mean(v, m)
                    ia, ib = np.triu_indices(6, 1)
                    with np.errstate(invalid="ignore", divide="ignore"):
                        p = np.nan_to_num(stats.ttest_rel(v[ia], v[ib], axis=1).pvalue, nan=1.0)
                    # means equal up to rounding are one tie (snap_ties), where scipy orders them by their last bit
                    rows.append((m, form, f, d, stats.kendalltau(snap_ties(ref_means), snap_ties(means)).statistic,
                                 tau_ap(ref_means, means), np.mean(p < 0.05)))
    ref = pd.DataFrame(rows, columns=["metric", "form", "fraction", "draw", "kendall_tau_b", "tau_ap", "discpower"])
    got = res.draws.merge(ref, on=["metric", "form", "fraction", "draw"], suffixes=("", "_ref"))
    assert len(got) == len(ref) == len(res.draws)
    for c in ("kendall_tau_b", "tau_ap", "discpower"):
        assert np.allclose(got[c], got[f"{c}_ref"], atol=1e-12, equal_nan=True), c
    kept = masks.mean(axis=2)  # (fraction, draw)
    fi = res.draws["fraction"].map({0.2: 0, 0.6: 1}).to_numpy()
    assert np.allclose(res.draws["judged_fraction"], kept[fi, res.draws["draw"].to_numpy()])
    s = res.summary
    assert set(s.columns) >= {"kendall_tau_b", "kendall_tau_b_low", "tau_ap_high", "discpower_full", "draws"}
    assert (s["draws"] == n_draws).all()
    assert s["discpower_full"].iloc[0] == pytest.approx(significant_pairs(full[s["metric"].iloc[0]][None])[0])
    same = incomplete_judgments(small, MEASURES, fractions=fractions, n_draws=n_draws, seed=seed)
    cond = same.draws[same.draws["form"] == "condensed"]
    ref_ap = _mean(me.score(small.condensed(), "AP"), "AP")  # each form against itself under the full qrels
    first = cond[(cond["metric"] == "AP") & (cond["fraction"] == 0.2) & (cond["draw"] == 0)]
    reduced = _mean(me.score(small.with_judgments(masks[0, 0]).condensed(), "AP"), "AP")
    assert first["kendall_tau_b"].iloc[0] == pytest.approx(stats.kendalltau(snap_ties(ref_ap), snap_ties(reduced)).statistic)
    std = same.draws[same.draws["form"] == "standard"].reset_index(drop=True)
    pd.testing.assert_frame_equal(std, res.draws[res.draws["form"] == "standard"].reset_index(drop=True))


def test_incomplete_judgments_do_not_depend_on_chunks(small, monkeypatch):
    kwargs = dict(fractions=[0.3, 0.5], n_draws=3, forms=("condensed",), seed=1)
    one = incomplete_judgments(small, ["AP"], **kwargs)
    monkeypatch.setattr("meta_eval.statistics.rejudge.BUDGET", 2 * 6 * 8 * 25)  # two combos per chunk: 3 chunks
    monkeypatch.setattr("meta_eval.statistics.rejudge.PART", 3 * 8 * 25)  # blocks cut in two parts of 3 systems
    chunked = incomplete_judgments(small, ["AP"], **kwargs)
    pd.testing.assert_frame_equal(one.draws, chunked.draws)


@pytest.mark.slow
def test_incomplete_judgments_do_not_depend_on_workers(small, monkeypatch):
    kwargs = dict(fractions=[0.3, 0.5], n_draws=3, forms=("condensed",), seed=1)
    one = incomplete_judgments(small, ["AP"], **kwargs)
    monkeypatch.setattr("meta_eval.statistics.rejudge.BUDGET", 2 * 6 * 8 * 25)
    two = incomplete_judgments(small, ["AP"], jobs=2, **kwargs)
    pd.testing.assert_frame_equal(one.draws, two.draws)


def test_incomplete_judgments_errors(small):
    with pytest.raises(InputError, match="fractions"):
        incomplete_judgments(small, ["AP"], fractions=[0.0, 0.5])
    with pytest.raises(InputError, match="sampling"):
        judgment_masks(small, [0.5], 2, sampling="pool")
    with pytest.raises(InputError, match="forms"):
        incomplete_judgments(small, ["AP"], forms=["residual"])
    condensed_only = small.condensed()
    with pytest.raises(InputError, match="unjudged='nonrel'"):
        incomplete_judgments(condensed_only, ["AP"], forms=["standard"])


# --------------------------------------------------------------------------------------------- reusability


def _reference_reusability(col, measure, groups, depth):
    """For each group: the judged documents it alone put in the top-``depth`` pool (Python sets), removed; its
    runs re-scored with ``with_judgments``; rank among the other runs' official means."""
    j = col.judgments
    pooled = {}
    for s, name in enumerate(col.systems):
        for block in col.blocks:
            for local, t in enumerate(block.topics):
                docs = block.docs[s, local, :depth]
                for d in docs[docs >= 0]:
                    pooled.setdefault((t, d), set()).add(groups[name])
    full = me.score(col, measure).mean(1)
    out = {}
    for s, name in enumerate(col.systems):
        g = groups[name]
        keep = np.array([pooled.get((t, d), set()) != {g} for t, d in zip(j.topic, j.doc)])
        reduced = me.score(col.with_judgments(keep), measure)[s].mean()
        others = np.delete(full, s)
        out[name] = (reduced - full[s], 1 + (others > reduced).sum() - (1 + (others > full[s]).sum()),
                     int((~keep).sum()))
    return out


@pytest.mark.parametrize("grouping", ["run", "pairs"])
def test_reusability_matches_the_reference(small, grouping):
    groups = {s: s for s in small.systems} if grouping == "run" else {s: f"g{i // 2}" for i, s in
                                                                      enumerate(small.systems)}
    res = reusability(small, ["AP", "P@10"], groups=None if grouping == "run" else groups, depth=5)
    for m in ("AP", "P@10"):
        ref = _reference_reusability(small, m, groups, 5)
        rows = res.runs[res.runs["metric"] == m].set_index("run")
        for run, (change, rank_change, removed) in ref.items():
            assert rows.loc[run, "score_change"] == pytest.approx(change, abs=1e-12)
            assert rows.loc[run, "rank_change"] == rank_change
            assert rows.loc[run, "removed"] == removed
    summary = res.summary.set_index("metric")
    assert summary.loc["AP", "runs"] == 6
    ap = res.runs[res.runs.metric == "AP"]
    assert summary.loc["AP", "mean_score_change"] == pytest.approx(ap.score_change.mean())


def test_reusability_options(small):
    assert prefix_groups(["BBGhelani1", "BBGhelani2", "uog_run-3", "7"]) == {
        "BBGhelani1": "BBGhelani", "BBGhelani2": "BBGhelani", "uog_run-3": "uog_run", "7": "7"}
    assert prefix_groups(["abc1", "abd2"], length=2) == {"abc1": "ab", "abd2": "ab"}
    z = reusability(small, ["AP"], depth=5, standardise="z")
    assert np.isclose(z.runs["score_full"].mean(), 0.0)  # standardised against the full-qrels reference
    both = reusability(small, ["AP"], depth=5, forms=("standard", "condensed"))
    assert set(both.runs["form"]) == {"standard", "condensed"}
    with pytest.raises(InputError, match="lacks"):
        reusability(small, ["AP"], groups={"run0": "a"})
    with pytest.raises(InputError, match="two groups"):
        reusability(small, ["AP"], groups={s: "one" for s in small.systems})
    with pytest.raises(InputError, match="depth"):
        reusability(small, ["AP"], depth=0)


def _mean(values, measure: str):
    """Each system's mean over topics as the library takes it (topics added in order, as trec_eval adds them)."""
    return me.aggregate(values, me.resolve(measure)[0])


def _reference_judged_depth(col) -> int:
    """Plain loops: per run, the smallest over topics of the leading judged documents of its list; the largest over
    runs (at least 1)."""
    judged = {(t, d) for t, d in zip(col.judgments.topic, col.judgments.doc)}
    best = 0
    for s in range(len(col.systems)):
        depth = None
        for block in col.blocks:
            for local, t in enumerate(block.topics):
                docs = [d for d in block.docs[s, local] if d >= 0]
                if not docs:
                    continue
                lead = next((k for k, d in enumerate(docs) if (t, d) not in judged), len(docs))
                depth = lead if depth is None else min(depth, lead)
        best = max(best, depth or 0)
    return max(best, 1)


def test_the_pool_depth_is_the_depth_the_qrels_judged_the_runs_to(small, tmp_path):
    """The reusability analysis's default pool depth: on the demo collection the depth of its pool (10, the
    constant of scripts/make_demo.py), on the small collection what plain loops find; a hand-made pool of the top 2
    of two runs, with a third run outside it, has depth 2."""
    from meta_eval.analyses.reusability import judged_depth

    assert judged_depth(me.demo_collection()) == 10
    assert judged_depth(small) == _reference_judged_depth(small)
    qrels = pd.DataFrame({"topic": ["1"] * 4 + ["2"] * 4, "docid": ["a", "b", "c", "x", "a", "b", "c", "d"],
                          "grade": [1, 0, 2, 0, 1, 1, 0, 0]})
    lines = {"A": {"1": "a b z", "2": "a b d y"}, "B": {"1": "c x a", "2": "c d"}, "C": {"1": "q a", "2": "b z"}}
    runs = pd.DataFrame([{"topic": t, "docid": d, "score": 10 - k, "run": s}
                         for s, topics in lines.items() for t, docs in topics.items()
                         for k, d in enumerate(docs.split())])
    col = me.load_collection(qrels, runs)
    assert judged_depth(col) == 2 == _reference_judged_depth(col)  # A to 2, B to 2 (its whole list on topic 2)
    assert judged_depth(col.subset(systems=["C"])) == 1  # no run judged even at rank 1: at least 1


def test_the_study_leaves_runs_out_of_the_pool_the_collection_was_built_with():
    """By default the pool depth is the collection's: on the demo collection (pooled at depth 10) runs lose rank
    when left out, where depth 100 (the former default) left every change 0 and the table now says why."""
    from meta_eval.analyses import AnalysisData, get_analysis

    data = AnalysisData.from_collection(me.demo_collection(), ["AP", "nDCG@10"])
    result = get_analysis("reusability")(data)
    assert result.depth == 10 and "Pool depth 10" in result.text
    assert (result.result.runs["rank_change"] > 0).any() and result.figures()
    deep = get_analysis("reusability")(data, pool_depth=100)
    table = deep.table()
    assert deep.still and not deep.figures()
    assert (table.values.drop(columns="judgments removed").to_numpy(dtype=float) == 0).all()
    assert "because no relevant document is in the top 100 of one run alone" in table.note
