"""SoftRank: SoftNDCG and SoftGAP tend to the exact metric as σ → 0, their autodiff gradients match finite
differences, and training a linear model improves on chance."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")

from meta_eval import InputError, Rankings, get_measure  # noqa: E402
from meta_eval.statistics.learning_to_rank.softrank import soft_metric, train_softrank  # noqa: E402
from meta_eval.model.rankings import PAD  # noqa: E402

MEASURES = ["nDCG", "nDCG(gain=exp)@4", "nDCG(discount=jk,base=3)", "GAP", "GAP(g=0.2,0.8)", "AP"]


def block(seed=0, n_lists=6, n=9):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, (n_lists, n))
    valid = np.ones((n_lists, n), bool)
    valid[1, 6:] = False
    labels[2] = 0  # no relevant document: the metric is 0
    labels = np.where(valid, labels, 0)
    counts = np.stack([np.bincount(l[v], minlength=3) for l, v in zip(labels, valid)])
    counts[-1, 2] += 1  # a relevant document that is not in the list
    return rng.normal(size=(n_lists, n)), labels, valid, counts


def exact(measure, scores, labels, valid, counts):
    order = np.argsort(-np.where(valid, scores, -np.inf), axis=1)
    grades = np.take_along_axis(np.where(valid, labels, PAD), order, axis=1).astype(np.int16)
    return get_measure(measure)(Rankings(grades, valid.sum(1), counts))


@pytest.mark.parametrize("measure", MEASURES)
def test_soft_metric_tends_to_metric(measure):
    scores, labels, valid, counts = block()
    target = exact(measure, scores, labels, valid, counts)
    errors = [np.abs(soft_metric(measure, torch.tensor(scores), labels, valid, counts, sigma).numpy() - target).max()
              for sigma in (0.3, 0.03, 1e-4)]
    assert errors[-1] < 1e-9
    assert errors[0] > 10 * errors[-1]


@pytest.mark.parametrize("measure", ["nDCG", "GAP", "AP"])
def test_gradient_matches_finite_differences(measure):
    scores, labels, valid, counts = block(1, n_lists=3, n=7)

    def value(s):
        return soft_metric(measure, torch.tensor(s), labels, valid, counts, 0.7).sum().item()

    s = torch.tensor(scores, requires_grad=True)
    soft_metric(measure, s, labels, valid, counts, 0.7).sum().backward()
    eps = 1e-6
    fd = np.zeros_like(scores)
    for idx in np.ndindex(scores.shape):
        up, down = scores.copy(), scores.copy()
        up[idx] += eps
        down[idx] -= eps
        fd[idx] = (value(up) - value(down)) / (2 * eps)
    np.testing.assert_allclose(s.grad.numpy(), fd, atol=1e-8)
    assert np.abs(fd).max() > 1e-3


def test_softgap_is_the_papers_formula():
    """SoftGAP of §5 by hand for one list of three documents."""
    s, y, sigma = np.array([0.3, -0.2, 0.5]), np.array([2, 1, 0]), 0.4
    from scipy.stats import norm

    pi = norm.cdf((s[:, None] - s[None, :]) / (sigma * np.sqrt(2)))
    np.fill_diagonal(pi, 0)
    g = np.array([0.5, 0.5])
    cum = np.concatenate([[0], np.cumsum(g)])
    pc = [(cum[y[n]] + sum(pi[m, n] * cum[min(y[m], y[n])] for m in range(3) if m != n))
          / (1 + sum(pi[m, n] for m in range(3) if m != n)) for n in range(3)]
    den = 1 * (g[0] + g[1]) + 1 * g[0]  # one document of grade 2, one of grade 1
    got = soft_metric("GAP(g=0.5,0.5)", torch.tensor(s[None]), y[None], np.ones((1, 3), bool),
                      np.array([[1, 1, 1]]), sigma).item()
    assert got == pytest.approx(sum(pc) / den, abs=1e-12)


def test_no_smooth_form():
    scores, labels, valid, counts = block()
    with pytest.raises(InputError, match="lambdamart"):
        soft_metric("P@10", torch.tensor(scores), labels, valid, counts, 0.1)


@pytest.mark.parametrize("model", ["linear", "mlp"])
def test_training_improves_on_chance(model):
    from meta_eval.inputs.letor import load_folds
    from meta_eval.model.demo import demo_ltr_data
    from meta_eval.statistics.learning_to_rank.groups import ranked_rankings

    fold = load_folds(demo_ltr_data(), max_folds=1)[0]
    trained = train_softrank(fold, "GAP", model=model, epochs=30, eval_every=10, patience=2)
    assert trained.best_epoch in (10, 20, 30) and trained.history
    gap = get_measure("GAP")
    learned = gap(ranked_rankings(trained.predict(fold.test.X), fold.test.y, fold.test.bounds, 2)).mean()
    rng = np.random.default_rng(0)
    chance = gap(ranked_rankings(rng.normal(size=len(fold.test.y)), fold.test.y, fold.test.bounds, 2)).mean()
    assert learned > chance + 0.2
    assert torch.get_num_threads() >= 1
