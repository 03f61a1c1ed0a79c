"""LambdaMART for any metric: the |ΔM|-scaled lambdas against a plain per-pair transcription of LightGBM's
lambdarank loop, and training for nDCG against LightGBM's built-in ``lambdarank`` (same parameters: same trees,
predictions equal to float32 precision)."""

from __future__ import annotations

import numpy as np
import pytest

lgb = pytest.importorskip("lightgbm")
pytest.importorskip("sklearn")

from meta_eval import Rankings, get_measure  # noqa: E402
from meta_eval.inputs.letor import LTRSet, load_folds  # noqa: E402
from meta_eval.statistics.learning_to_rank.swap_deltas import _ndcg_deltas  # noqa: E402
from meta_eval.model.demo import demo_ltr_data  # noqa: E402
from meta_eval.statistics.learning_to_rank.groups import ranked_rankings  # noqa: E402
from meta_eval.statistics.learning_to_rank.lambdamart import MetricObjective, lightgbm_sigmoid, train_lambdamart  # noqa: E402
from meta_eval.measures.graded import _ideal_dcg  # noqa: E402
from meta_eval.measures.registry import gain_table  # noqa: E402

from conftest import shared_path  # noqa: E402

PARAMS = dict(learning_rate=0.1, num_leaves=15, min_data_in_leaf=10, deterministic=True, force_row_wise=True,
              verbosity=-1, seed=3, num_threads=1)


@pytest.fixture(scope="module")
def fold():
    return load_folds(demo_ltr_data(), max_folds=1)[0]


def reference_gradients(measure, scores, labels, sizes, max_label, sigmoid=1.0, norm=True, truncation=30):
    """LightGBM's GetGradientsForOneQuery, one pair at a time, with ΔNDCG replaced by a brute-force |ΔM|."""
    m = get_measure(measure)
    grad, hess = np.zeros(len(scores)), np.zeros(len(scores))
    start = 0
    for cnt in sizes:
        s, y = scores[start:start + cnt], labels[start:start + cnt]
        order = sorted(range(cnt), key=lambda i: -s[i])  # stable, as std::stable_sort
        counts = np.bincount(y, minlength=max_label + 1)
        ranked = y[order]
        base = m(Rankings.from_lists([ranked], counts=[counts]))[0]
        lam, hes, total = np.zeros(cnt), np.zeros(cnt), 0.0
        best, worst = s[order[0]], s[order[-1]]
        for i in range(min(cnt - 1, truncation)):
            for j in range(i + 1, cnt):
                if y[order[i]] == y[order[j]]:
                    continue
                hi, lo = (i, j) if y[order[i]] > y[order[j]] else (j, i)
                swapped = ranked.copy()
                swapped[i], swapped[j] = swapped[j], swapped[i]
                delta = abs(m(Rankings.from_lists([swapped], counts=[counts]))[0] - base)
                ds = s[order[hi]] - s[order[lo]]
                if norm and best != worst:
                    delta /= float(np.float32(0.01)) + abs(ds)  # LightGBM writes 0.01f
                rho = float(lightgbm_sigmoid(ds, sigmoid))
                p_lambda, p_hess = -sigmoid * delta * rho, sigmoid**2 * delta * rho * (1 - rho)
                lam[order[lo]] -= p_lambda
                lam[order[hi]] += p_lambda
                hes[order[lo]] += p_hess
                hes[order[hi]] += p_hess
                total -= 2 * p_lambda
        if norm and total > 0:
            factor = np.log2(1 + total) / total
            lam, hes = lam * factor, hes * factor
        grad[start:start + cnt], hess[start:start + cnt] = lam, hes
        start += cnt
    return grad, hess


@pytest.mark.parametrize("measure", ["GAP", "AP", "nDCG@5", "RR"])
@pytest.mark.parametrize("norm", [True, False])
def test_lambdas_equal_per_pair_reference(measure, norm):
    rng = np.random.default_rng(4)
    sizes = np.array([7, 12, 5, 9, 3])
    labels = rng.integers(0, 3, sizes.sum())
    labels[19:24] = 1  # the third query: labels all equal, no pair, zero gradient
    scores = np.round(rng.normal(size=sizes.sum()), 1)  # ties included
    data = LTRSet(None, labels, np.concatenate([[0], np.cumsum(sizes)]), np.arange(len(sizes)))
    objective = MetricObjective(measure, data, 2, norm=norm, truncation_level=6, sigmoid=1.5)
    grad, hess = objective.gradients(scores)
    ref_grad, ref_hess = reference_gradients(measure, scores, labels, sizes, 2, 1.5, norm, 6)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(hess, ref_hess, rtol=1e-10, atol=1e-13)
    assert np.all(grad[19:24] == 0) and np.any(grad[:19] != 0)


def test_sigmoid_table_matches_lightgbm_edges():
    x = np.array([-100.0, -25.0, 0.0, 3.3, 25.0, 100.0])
    p = lightgbm_sigmoid(x)
    exact = 1 / (1 + np.exp(x))
    assert np.all(np.abs(p - exact) < 5e-5)
    assert p[0] == p[1] and p[-1] == p[-2]


def _builtin_vs_custom(train, test, truncation, deltas=None, rounds=25):
    ds = lgb.Dataset(train.X, train.y, group=train.sizes, free_raw_data=False)
    builtin = lgb.train({**PARAMS, "objective": "lambdarank", "lambdarank_truncation_level": truncation}, ds, rounds)
    objective = MetricObjective("nDCG(gain=exp)", train, train.max_label, truncation_level=truncation, deltas=deltas)
    ds2 = lgb.Dataset(train.X, train.y, group=train.sizes, free_raw_data=False)
    custom = lgb.train({**PARAMS, "objective": objective}, ds2, rounds)
    return builtin.predict(test.X), custom.predict(test.X), builtin, custom


def lightgbm_ndcg_deltas(truncation):
    """LightGBM's ΔNDCG: the full-list ΔDCG (gain 2^l − 1) over the ideal DCG cut at the truncation level."""

    def deltas(grades, counts, top):
        r = Rankings(grades, (grades >= 0).sum(-1), counts)
        table = gain_table("exp", r.max_grade)
        full, cut = _ideal_dcg(r, table, None, "log2", 2.0), _ideal_dcg(r, table, truncation, "log2", 2.0)
        scale = np.divide(full, cut, out=np.zeros_like(full), where=cut > 0)
        return _ndcg_deltas(grades, counts, "exp", "log2", 2.0, None, top) * scale[:, None, None]

    return deltas


def test_ndcg_objective_reproduces_builtin_lambdarank(fold):
    """With a truncation level >= the longest query, |ΔnDCG(gain=exp)| is LightGBM's ΔNDCG: same model."""
    longest = int(fold.train.sizes.max())
    ours, theirs, b1, b2 = _builtin_vs_custom(fold.train, fold.test, longest)
    scale = np.abs(theirs).max()
    assert np.abs(ours - theirs).max() <= 1e-6 * scale
    split_features = [t["tree_structure"].get("split_feature") for t in b1.dump_model()["tree_info"]]
    assert split_features == [t["tree_structure"].get("split_feature") for t in b2.dump_model()["tree_info"]]


def test_default_truncation_with_lightgbm_normaliser(fold):
    """At LightGBM's default truncation (30, shorter than some demo queries) its ΔNDCG divides by the ideal DCG@30;
    with that normaliser the objective again gives LightGBM's model."""
    assert fold.train.sizes.max() > 30
    ours, theirs, *_ = _builtin_vs_custom(fold.train, fold.test, 30, lightgbm_ndcg_deltas(30))
    assert np.abs(ours - theirs).max() <= 1e-6 * np.abs(theirs).max()


@pytest.mark.shared
def test_reproduces_builtin_on_mslr_sample():
    mslr = load_folds(shared_path("data", "mslr-sample"))[0]
    ours, theirs, *_ = _builtin_vs_custom(mslr.train, mslr.test, 30, lightgbm_ndcg_deltas(30), rounds=15)
    assert np.abs(ours - theirs).max() <= 1e-6 * np.abs(theirs).max()


def test_training_for_gap_learns(fold):
    booster = train_lambdamart(fold, "GAP", num_boost_round=60, early_stopping_rounds=20)
    assert 1 <= booster.best_iteration <= 60
    scores = booster.predict(fold.test.X, num_iteration=booster.best_iteration)
    learned = get_measure("GAP")(ranked_rankings(scores, fold.test.y, fold.test.bounds, 2)).mean()
    rng = np.random.default_rng(0)
    chance = np.mean([get_measure("GAP")(ranked_rankings(rng.normal(size=len(scores)), fold.test.y,
                                                         fold.test.bounds, 2)).mean() for _ in range(5)])
    assert learned > chance + 0.2


def test_plugin_metric_objective(fold, tmp_path):
    """A file.py:function metric trains through the general path."""
    from meta_eval.measures.resolver import load_metric

    path = tmp_path / "top_grade.py"
    path.write_text("import meta_eval as me\n\n@me.per_list\ndef top_grade(grades, counts):\n"
                    "    '''Grade of the first document over the top grade.'''\n"
                    "    return grades[0] / (len(counts) - 1) if len(grades) else 0.0\n")
    measure = load_metric(f"{path}:top_grade")[0]
    booster = train_lambdamart(fold, measure, num_boost_round=3, early_stopping_rounds=None,
                               params={"lambdarank_truncation_level": 3})
    assert booster.num_trees() == 3
