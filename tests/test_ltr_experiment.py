"""The trained-for × tested-on experiment and ``meta-eval ltr``: output columns, per-query scores that equal
meta-eval's own metrics, significance equal to scipy's paired t-test against the best row, queries without a
relevant document counted and not scored, errors as one line with exit status 2."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("lightgbm")
pytest.importorskip("sklearn")

from meta_eval import InputError  # noqa: E402
from meta_eval.inputs.letor import load_folds  # noqa: E402
from meta_eval.model.demo import demo_ltr_data  # noqa: E402
from meta_eval.statistics.learning_to_rank.experiment import RESULT_COLUMNS, ltr_stage_table, run_ltr  # noqa: E402

QUICK = dict(num_boost_round=15, early_stopping_rounds=5)


@pytest.fixture(scope="module")
def result():
    folds = load_folds(demo_ltr_data(), max_folds=2)
    return run_ltr(folds, ["nDCG", "GAP(g=0.5,0.5)", "AP"], ["nDCG@10", "AP", "P@10"], lambdamart=QUICK,
                   progress=False)


def test_table_layout(result):
    t = result.table
    assert list(t.columns) == RESULT_COLUMNS
    assert len(t) == 9
    assert t.groupby(["algorithm", "test_measure"])["best"].sum().eq(1).all()
    assert t.loc[t["best"], "p_value"].isna().all() and t.loc[~t["best"], "p_value"].between(0, 1).all()
    from meta_eval.analyses.ltr import ltr_table

    wide = ltr_table(result)
    assert list(wide.values.columns) == ["test nDCG@10", "test AP", "test P@10"]
    assert list(wide.values.index) == ["nDCG", "GAP(g=0.5,0.5)", "AP"]
    assert "†" in "".join(wide.markers.to_numpy().ravel()) or wide.bold.to_numpy().sum() == 3
    assert r"\toprule" in wide.to_latex()


def test_means_and_significance_from_per_query(result):
    from scipy import stats

    pq = result.per_query
    assert result.skipped == 1  # one of the two demo queries without a relevant document is in these two folds
    for row in result.table.itertuples():
        part = pq[(pq["trained_for"] == row.trained_for) & (pq["test_measure"] == row.test_measure)]
        assert row.mean == pytest.approx(part["value"].mean())
        assert row.sem == pytest.approx(part["value"].sem())
        if not row.best:
            best = result.table[(result.table["test_measure"] == row.test_measure) & result.table["best"]]
            other = pq[(pq["trained_for"] == best["trained_for"].iloc[0]) & (pq["test_measure"] == row.test_measure)]
            expected = stats.ttest_rel(part["value"].to_numpy(), other["value"].to_numpy()).pvalue
            assert row.p_value == pytest.approx(expected if np.isfinite(expected) else 1.0)


def test_per_query_values_are_metascores(result):
    """Recompute one model's test scores with meta-eval's measure on a hand-built Rankings."""
    from meta_eval import Rankings, get_measure
    from meta_eval.statistics.learning_to_rank.lambdamart import train_lambdamart

    fold = load_folds(demo_ltr_data(), max_folds=1)[0]
    booster = train_lambdamart(fold, "nDCG", max_label=2, **QUICK)
    scores = booster.predict(fold.test.X, num_iteration=booster.best_iteration or None)
    pq = result.per_query
    mine = pq[(pq["fold"] == fold.name) & (pq["trained_for"] == "nDCG") & (pq["test_measure"] == "AP")]
    for q, value in zip(mine["query"].head(5), mine["value"].head(5)):
        i = int(np.flatnonzero(fold.test.queries == q)[0])
        lo, hi = fold.test.bounds[i], fold.test.bounds[i + 1]
        order = np.argsort(-scores[lo:hi], kind="stable")
        labels = fold.test.y[lo:hi]
        r = Rankings.from_lists([labels[order]], counts=[np.bincount(labels, minlength=3)])
        assert value == pytest.approx(get_measure("AP")(r)[0])


def test_stage_table(result):
    stage = ltr_stage_table(result, {"GAP(g=0.5,0.5)": 0.8, "nDCG": 0.5})
    assert list(stage.columns[:3]) == ["algorithm", "trained_for", "informativeness"]
    assert np.isnan(stage.loc[stage["trained_for"] == "AP", "informativeness"]).all()
    assert "test nDCG@10" in stage.columns


def test_bad_requests():
    with pytest.raises(InputError, match="unknown algorithm"):
        run_ltr(None, ["nDCG"], ["AP"], ["ranknet"])
    with pytest.raises(InputError, match="unknown measure"):
        run_ltr(None, ["nDCGG"], ["AP"])
    with pytest.raises(InputError, match="smooth"):
        run_ltr(None, ["P@10"], ["AP"], ["softrank"])


def test_cli_end_to_end(tmp_path):
    from typer.testing import CliRunner

    from meta_eval.cli import app

    out = tmp_path / "ltr"
    res = CliRunner().invoke(app, ["ltr", "--max-folds", "1", "--rounds", "10", "--early-stopping", "3",
                                   "--train-for", "GAP", "--train-for", "AP", "--test", "nDCG@10", "--test", "P@5",
                                   "--out", str(out), "--format", "png", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "│ GAP " in res.output and "trained for" in res.output  # the compact table, one row per objective
    table = pd.read_csv(out / "ltr.csv")
    assert table["test_measure"].tolist() == ["nDCG@10", "nDCG@10", "P@5", "P@5"]
    assert table.columns.tolist() == [*RESULT_COLUMNS, "informativeness_rms"]
    for name in ("ltr_per_query.csv", "ltr.tex", "ltr.png", "report.md", "manifest.json"):
        assert (out / name).exists()


def test_cli_errors(tmp_path):
    from typer.testing import CliRunner

    from meta_eval.cli import app

    bad = tmp_path / "bad.txt"
    bad.write_text("1 qid:1 1:0.5\nnope qid:1 1:0.1\n")
    res = CliRunner().invoke(app, ["ltr", "--data", str(bad), "--no-progress"])
    assert res.exit_code == 2
    assert "meta-eval: error:" in res.output and "bad.txt:2:" in res.output
    res = CliRunner().invoke(app, ["ltr", "--train-for", "P@10", "--algorithm", "softrank", "--no-progress"])
    assert res.exit_code == 2 and "lambdamart" in res.output


def test_models_trained_on_two_workers_give_the_same_results(result):
    """Each (fold, algorithm, objective) model trains in a worker process (meta_eval.core.parallel); the per-query values
    are identical to the in-process run, for LambdaMART and SoftRank alike."""
    folds = load_folds(demo_ltr_data(), max_folds=2)
    two = run_ltr(folds, ["nDCG", "GAP(g=0.5,0.5)", "AP"], ["nDCG@10", "AP", "P@10"], lambdamart=QUICK,
                  progress=False, jobs=2)
    pd.testing.assert_frame_equal(two.per_query, result.per_query, check_exact=True)
    pd.testing.assert_frame_equal(two.table, result.table, check_exact=True)
    soft = dict(epochs=10)
    one = run_ltr(folds[:1], ["nDCG", "AP"], ["AP"], ["softrank"], softrank=soft, progress=False)
    two = run_ltr(folds[:1], ["nDCG", "AP"], ["AP"], ["softrank"], softrank=soft, progress=False, jobs=2)
    pd.testing.assert_frame_equal(two.per_query, one.per_query, check_exact=True)
