"""Informativeness studies, caching, prediction, figures and the ``meta-eval informativeness`` command."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import meta_eval as me
from meta_eval.core.errors import InputError
from meta_eval.statistics.maxent import (Lists, ListBatch, aslam_binary, gap_figure2, g_grid, informativeness,
                           lists_from_collection, predict, prediction_table, retrieved_grade_counts, select_lists,
                           solve_cached, solve_cached_many, solve_mem)
from tests.conftest import write_collection


def _synthetic_lists(n_lists=24, depth=60, seed=0) -> Lists:
    rng = np.random.default_rng(seed)
    grades = []
    for i in range(n_lists):
        prob = np.linspace(rng.uniform(0.3, 0.9), 0.02, depth)
        rel = rng.random(depth) < prob
        grades.append(rel * (1 + (rng.random(depth) < 0.5)))
    grades = np.array(grades)
    counts = np.stack([np.full(n_lists, 100), (grades == 1).sum(1) + 5, (grades == 2).sum(1) + 3], axis=1)
    batch = ListBatch(grades, np.full(n_lists, depth), counts)
    return Lists(batch, np.array([f"run{i % 4}" for i in range(n_lists)], dtype=object),
                 np.array([f"t{i // 4}" for i in range(n_lists)], dtype=object))


def test_informativeness_rows_and_summary(tmp_path):
    lists = _synthetic_lists()
    res = informativeness(lists, ["AP", "nDCG(gain=exp)"], cache_dir=tmp_path)
    df = res.lists
    assert list(df.columns) == ["run", "topic", "metric", "threshold", "n", "method", "status", "reason",
                                "entropy", "max_residual", "approx_error", "on_face", "rms_error", "common"]
    assert len(df) == 24 * 2 * 2
    assert (df.status == 0).all() and df.max_residual.max() <= 1e-8
    s = res.summary.set_index(["metric", "threshold"])
    assert s.loc[("AP", 1), "mean_rms"] == pytest.approx(df[(df.metric == "AP") & (df.threshold == 1)]
                                                        .rms_error.mean())
    # cached: a second call loads the same distributions from disk
    files = list(tmp_path.glob("mem_*.npz"))
    assert len(files) == 2
    again = informativeness(lists, ["AP", "nDCG(gain=exp)"], cache_dir=tmp_path)
    pd.testing.assert_frame_equal(again.lists, df)


def test_cache_roundtrip(tmp_path):
    b = _synthetic_lists(6).batch
    a = solve_cached(b, "GAP(g=0.5,0.5)", cache_dir=tmp_path)
    c = solve_cached(b, "GAP(g=0.5,0.5)", cache_dir=tmp_path)
    np.testing.assert_array_equal(a.P, c.P)
    np.testing.assert_array_equal(a.status, c.status)


def test_prediction_table_diagonal_and_values():
    lists = _synthetic_lists(16).binarise()
    tab = prediction_table(lists, ["AP", "P@10"], ["AP", "P@10", "RR"])
    diag = tab[tab.source == tab.target]
    assert (diag.rmse < 1e-8).all()
    # the prediction is an exact expectation of the target metric under the fitted distribution
    res = solve_mem(lists.batch, "AP")
    pr = predict(res, lists.batch, ["P@10"])["P@10"]
    np.testing.assert_allclose(pr, res.P[:, :10, 1].sum(1) / 10, rtol=1e-12)
    row = tab[(tab.source == "AP") & (tab.target == "P@10")].iloc[0]
    actual = (lists.batch.grades[:, :10] >= 1).mean(1)
    assert row.rmse == pytest.approx(np.sqrt(np.mean((pr - actual) ** 2)))


def test_gap_figure2_table_and_figure():
    from meta_eval.analyses.informativeness import figure2, rms_bar_figure

    lists = _synthetic_lists(12)
    grid = g_grid(0.5)
    f2 = gap_figure2(lists, grid, filter_lists=False)
    t = f2.table
    assert set(t.line) == {"GAP", "nDCG(gain=exp)", "nDCG"}
    assert len(t) == 3 * len(grid) * 2
    # g = (1, 0) is AP at threshold 1
    ap = informativeness(lists, ["AP"], thresholds=(1, 2)).summary.set_index("threshold")
    at = t[(t.line == "GAP") & (t.g1 == 1.0)].set_index("threshold")
    assert at.loc[1, "mean_rms"] == pytest.approx(ap.loc[1, "mean_rms"], abs=1e-8)
    fig = figure2(t)
    assert len(fig.axes) == 2
    assert len(rms_bar_figure(f2.lists.groupby(["metric", "threshold"], as_index=False).rms_error.mean()
                              .rename(columns={"rms_error": "mean_rms"})).axes) == 1


def test_aslam_binary_ordering_columns():
    lists = _synthetic_lists(16)
    a = aslam_binary(lists, ("AP", "Rprec", "P@10"), filter_lists=False)
    assert set(a.summary.metric) == {"AP", "Rprec", "P@10"}
    assert set(a.prediction.columns) == {"source", "target", "rmse", "pearson_r", "n"}


def test_select_lists_filter():
    lists = _synthetic_lists(20)
    rc = lists.batch.retrieved_counts()
    sel = select_lists(lists, 5, 5)
    assert sel.batch.n_lists == int(((rc[:, 1:].sum(1) >= 5) & (rc[:, 2] >= 5)).sum())


def _write_collection(tmp_path, seed=0):
    return write_collection(tmp_path, n_topics=3, n_docs=60, n_runs=4, depth=40, seed=seed, gz=True)


def test_cli_informativeness(tmp_path):
    from meta_eval.cli import app

    qrels, runs = _write_collection(tmp_path)
    out, cache = tmp_path / "out", tmp_path / "cache"
    args = ["informativeness", str(runs), "--qrels", str(qrels), "--g-grid", "0.5", "--min-relevant", "3",
            "--min-high", "2", "--out", str(out), "--cache", str(cache), "--no-progress"]
    result = CliRunner().invoke(app, args + ["--predict", "P@10", "--predict", "nDCG", "--format", "png",
                                             "--format", "pdf", "--aslam"])
    assert result.exit_code == 0, result.output
    pred = pd.read_csv(out / "prediction.csv")
    assert set(pred.target) == {"P@10", "nDCG"} and set(pred.source) == {"AP", "nDCG@10", "Q", "ERR", "GAP", "nDCG"}
    assert pred[(pred.source == "nDCG") & (pred.target == "nDCG")].rmse.iloc[0] < 1e-8
    lists = pd.read_csv(out / "informativeness_lists.csv")
    assert list(lists.columns[:8]) == ["run", "topic", "metric", "threshold", "n", "method", "status", "reason"]
    assert set(lists.metric) == {"AP", "nDCG@10", "Q", "ERR", "GAP", "nDCG"}  # what was asked, no more
    grid = pd.read_csv(out / "informativeness_g_grid.csv")
    assert {(0.0, 1.0), (0.5, 0.5), (1.0, 0.0)} <= set(zip(grid.g1, grid.g2))
    summary = pd.read_csv(out / "informativeness.csv")
    assert {"metric", "threshold", "mean_rms", "sem_rms", "n_lists", "n_failed", "reliable"} <= set(summary.columns)
    assert summary.n_lists.nunique() <= len(summary.threshold.unique())  # one common set of lists per threshold
    for name in ("rms_vs_g.png", "rms_vs_g.pdf", "aslam_summary.csv", "aslam_prediction.csv",
                 "informativeness_rms.png", "informativeness_rms.pdf", "manifest.json"):
        assert (out / name).exists(), name
    said = next(line for line in result.output.splitlines() if line.startswith("meta-eval: informativeness: solving"))
    assert "2 reference(s) (GAP, nDCG: " in said and "4 for GAP over its g grid and the GAP paper's Figure 2 " \
        "(GAP(g=0,1), GAP(g=0.5,0.5), GAP(g=1,0), nDCG(gain=exp): " in said and "--g-grid 0" in said
    # rerun resumes from the cache (no new distribution files)
    n_cache = len(list(cache.glob("*.npz")))
    result = CliRunner().invoke(app, args + ["--no-figures"])
    assert result.exit_code == 0, result.output
    assert len(list(cache.glob("*.npz"))) == n_cache
    pd.testing.assert_frame_equal(pd.read_csv(out / "informativeness_lists.csv"), lists)


def test_cli_informativeness_gives_what_was_asked(tmp_path):
    """Named metrics get their rows and nothing else; GAP's g grid (the paper's Figure 2) is its own table, said
    when it is solved, and --g-grid 0 leaves it out; --aslam adds the binary comparison."""
    from meta_eval.cli import app

    qrels, runs = _write_collection(tmp_path)
    base = ["informativeness", str(runs), "--qrels", str(qrels), "--min-relevant", "3", "--min-high", "2",
            "--no-figures", "--no-cache", "--no-progress", "-a", "none"]
    result = CliRunner().invoke(app, base + ["-m", "AP", "-m", "GAP", "--g-grid", "0", "-o", str(tmp_path / "asked")])
    assert result.exit_code == 0, result.output
    assert set(pd.read_csv(tmp_path / "asked" / "informativeness.csv").metric) == {"AP", "GAP"}
    assert not (tmp_path / "asked" / "informativeness_g_grid.csv").exists()
    assert not (tmp_path / "asked" / "aslam_summary.csv").exists()
    assert "informativeness: solving" not in result.output  # only what was asked: nothing to announce
    result = CliRunner().invoke(app, base + ["-m", "GAP", "--g-grid", "0.5", "-o", str(tmp_path / "grid")])
    assert result.exit_code == 0, result.output
    assert set(pd.read_csv(tmp_path / "grid" / "informativeness.csv").metric) == {"GAP"}
    grid = pd.read_csv(tmp_path / "grid" / "informativeness_g_grid.csv")
    assert set(zip(grid.g1, grid.g2)) == {(0.0, 1.0), (0.5, 0.5), (1.0, 0.0)}
    assert ("solving 6 metrics, estimated in seconds of one core: 1 under study (GAP: " in result.output
            and "5 for GAP over its g grid and the GAP paper's Figure 2 (GAP(g=0,1), GAP(g=0.5,0.5), GAP(g=1,0), "
            "nDCG(gain=exp), nDCG: " in result.output)


def test_cli_bad_g_grid_is_a_clean_error(tmp_path):
    from meta_eval.cli import app

    qrels, runs = _write_collection(tmp_path)
    result = CliRunner().invoke(app, ["informativeness", str(runs), "--qrels", str(qrels), "--g-grid", "0.6",
                                      "--out", str(tmp_path / "o"), "--no-progress"])
    assert result.exit_code == 2
    assert "g-grid" in result.output


def test_an_unknown_metric_fails_before_any_work(tmp_path):
    """A metric no worker could rebuild is refused before the runs are read (CLI) or any list solved (library):
    the message names it, with no other metric's work done first."""
    from meta_eval.cli import app
    from meta_eval.statistics.maxent.solver import solve_mems

    result = CliRunner().invoke(app, ["informativeness", str(tmp_path / "no-runs"), "--qrels",
                                      str(tmp_path / "no-qrels"), "-m", "AP", "-m", "nosuch.py:f", "--no-progress"])
    assert result.exit_code == 2 and "nosuch.py" in result.output and "no-qrels" not in result.output
    batch = ListBatch.from_lists([[1, 0, 2]], counts=[[3, 2, 1]])
    with pytest.raises(InputError, match="NoSuchMetric"):
        solve_mems(batch, ["AP", "NoSuchMetric"], jobs=2)


@pytest.mark.shared
@pytest.mark.slow
def test_trec_covid_observed_values_match_core(shared_dir):
    """Our point-mass expectations equal the core metric library on every TREC-COVID round-1 list."""
    data = shared_dir / "data" / "trec-covid-round1"
    col = me.load_collection(qrels=data / "qrels.txt", runs=[data / "runs"])
    lists = lists_from_collection(col)
    from meta_eval.statistics.maxent import observed

    for m in ("AP", "GAP(g=0.5,0.5)", "nDCG(gain=exp)", "nDCG", "P@10", "Rprec", "RR"):
        np.testing.assert_allclose(observed(m, lists.batch), me.score(col, m).reshape(-1), atol=1e-12)
    assert select_lists(lists).batch.n_lists == 3374


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_lists_of_a_sample_equal_the_sample_of_all_lists(seed):
    """retrieved_grade_counts and lists_from_collection(index=...) read a sample straight from the blocks (lists of
    very different lengths: several blocks; empty lists; unjudged, negative and unretrieved documents); they equal
    the counts and the subset of the full list batch."""
    rng = np.random.default_rng(seed)
    docs = [f"d{j}" for j in range(60)]
    qrels = pd.DataFrame([(str(t), d, int(rng.choice([-1, 0, 1, 2, 3], p=[0.05, 0.5, 0.2, 0.15, 0.1])))
                          for t in range(6) for d in docs[: 20 + 5 * t]], columns=["topic", "docid", "grade"])
    runs = []
    for r in range(4):
        for t in range(6):
            n = int(rng.choice([0, 1, 3, 9, 40]))
            picked = rng.choice(len(docs), size=n, replace=False)
            runs += [(f"r{r}", str(t), docs[j], float(n - i)) for i, j in enumerate(picked)]
    col = me.load_collection(qrels, pd.DataFrame(runs, columns=["run", "topic", "docid", "score"]))
    full = lists_from_collection(col)
    np.testing.assert_array_equal(retrieved_grade_counts(col), full.batch.retrieved_counts())
    index = np.sort(rng.choice(full.batch.n_lists, size=rng.integers(1, full.batch.n_lists + 1), replace=False))
    sample, expected = lists_from_collection(col, index=index), full.subset(index)
    for name in ("grades", "lengths", "counts"):
        np.testing.assert_array_equal(getattr(sample.batch, name), getattr(expected.batch, name))
    assert list(sample.runs) == list(expected.runs) and list(sample.topics) == list(expected.topics)


def test_retrieved_counts_count_each_grade_inside_the_list():
    batch = ListBatch(np.array([[2, 0, 1, 1], [1, 2, 0, 0]]), np.array([3, 1]), np.array([[5, 2, 2], [1, 1, 1]]))
    np.testing.assert_array_equal(batch.retrieved_counts(), [[1, 1, 1], [0, 1, 0]])


def test_a_probed_metric_at_its_extreme_is_noted():
    """Success@10 (a prefix-state form found by probing) is at 1 on the demo's filtered lists: the report says those
    lists were solved on a face that may not be the one of largest entropy; AP's declared extreme gets no note."""
    lists = select_lists(lists_from_collection(me.demo_collection())).subset(np.arange(12))
    res = informativeness(lists, ["AP", "Success@10"])
    notes = [w for w in res.warnings if w.startswith("at an extreme")]
    assert len(notes) == 1 and "Success@10 is at its attainable maximum or minimum on 12 of 12 lists" in notes[0]
    assert res.lists.loc[res.lists.metric == "Success@10", "on_face"].all()


def test_distributions_solved_beforehand_give_the_same_result_and_are_checked():
    """One solve_cached_many pass for several analyses (the study's informativeness and Figure 2) gives what each
    analysis solving its own gives; results for other lists or another number of metrics are refused."""
    lists = select_lists(lists_from_collection(me.demo_collection())).subset(np.arange(10))
    own = informativeness(lists, ["AP", "ERR"])
    solved = solve_cached_many(lists.batch, ["AP", "ERR"])
    pd.testing.assert_frame_equal(informativeness(lists, ["AP", "ERR"], solved=solved).lists, own.lists)
    with pytest.raises(InputError, match="one result per measure"):
        informativeness(lists, ["AP", "ERR"], solved=solved[:1])
    with pytest.raises(InputError, match="one result per measure"):
        informativeness(lists.subset(np.arange(5)), ["AP", "ERR"], solved=solved)
