"""Issue 24: the prefix-state form family (meta_eval.statistics.maxent.prefix_state).

- the identified form's expectation and gradient equal brute-force enumeration of every grade assignment of short
  lists under random product distributions (an independent reference: the metric itself on all K^n lists);
- on longer random lists the form reproduces the metric itself at every point mass;
- metrics outside the family are refused (and fall back to sampling), never given a wrong form;
- a cascade plug-in gets an exact (not approximate) informativeness row, also through worker processes;
- the MEM cache key covers the new module.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import meta_eval as me
from meta_eval.statistics import maxent as mem
from meta_eval.statistics.maxent.batch import ListBatch
from meta_eval.statistics.maxent.forms import metric_form
from meta_eval.statistics.maxent.groups import grouping
from meta_eval.statistics.maxent.prefix_state import prefix_state_form
from meta_eval.statistics.maxent.result import OK
from meta_eval.statistics.maxent.solver import solve_mem
from meta_eval.statistics.maxent.verify import score_batch


@me.per_list
def first_top_rr(grades, counts):
    """1 / rank of the first document of the top grade (0 if none): a cascade plug-in."""
    hits = np.flatnonzero(np.asarray(grades) >= len(counts) - 1)
    return 1.0 / (hits[0] + 1) if hits.size else 0.0


@me.per_list
def second_hit(grades, counts):
    """1 / rank of the second relevant document: a count capped at 2 carried down the ranking."""
    hits = np.flatnonzero(np.asarray(grades) >= 1)
    return 1.0 / (hits[1] + 1) if hits.size > 1 else 0.0


@me.per_list
def median_rank(grades, counts):
    """Median rank of the relevant documents (not a small state: it needs them all)."""
    hits = np.flatnonzero(np.asarray(grades) >= 1)
    return float(np.median(hits + 1)) if hits.size else 0.0


CASCADE = me.metric_from_callable(first_top_rr, name="first_top_rr_test")
SECOND = me.metric_from_callable(second_hit, name="second_hit_test")
MEDIAN = me.metric_from_callable(median_rank, name="median_rank_test")
IN_FAMILY = ["RR", "ERR", "nERR", "Success@3", "AP", "nDCG", "RBP", CASCADE, SECOND]


def _measure(m):
    return me.get_measure(m) if isinstance(m, str) else m


def _short_batch(rng, n_lists=6, K=3, max_len=5):
    lengths = rng.integers(1, max_len + 1, n_lists)
    lists = [rng.integers(0, K, n) for n in lengths]
    counts = np.array([np.bincount(g, minlength=K) + rng.integers(0, 3, K) for g in lists])
    counts[:, 1:] = np.maximum(counts[:, 1:], 1)
    return ListBatch.from_lists(lists, counts=counts)


def _brute_force(measure, batch: ListBatch, P: np.ndarray):
    """E[M] and dE/dp_i(j) - dE/dp_i(0) of each list by enumerating its K^n grade assignments (the metric itself
    on every one; dE/dp_i(j) = E[M | G_i = j] under independent ranks)."""
    K = batch.n_grades
    values = np.zeros(batch.n_lists)
    grads = np.zeros(P.shape)
    for l in range(batch.n_lists):
        n = int(batch.lengths[l])
        every = np.array(list(itertools.product(range(K), repeat=n)))
        scored = score_batch(measure, ListBatch(every, np.full(len(every), n),
                                                np.repeat(batch.counts[l : l + 1], len(every), axis=0)))
        probs = P[l, np.arange(n)[None, :], every]  # (K^n, n): p_i(g_i)
        values[l] = np.sum(scored * probs.prod(1))
        for i in range(n):
            others = np.prod(np.delete(probs, i, axis=1), axis=1)
            for j in range(K):
                grads[l, i, j] = np.sum((every[:, i] == j) * others * scored)
            grads[l, i] -= grads[l, i, 0]
    return values, grads


@pytest.mark.parametrize("metric", IN_FAMILY, ids=lambda m: m if isinstance(m, str) else m.output_name)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1))
def test_expectation_and_gradient_equal_brute_force_enumeration(metric, seed):
    rng = np.random.default_rng(seed)
    b = _short_batch(rng)
    found = prefix_state_form(_measure(metric), b)
    assert found is not None and found.residual <= 1e-9
    P = rng.dirichlet(np.ones(3) * 0.7, size=(b.n_lists, b.depth)) * b.mask[..., None]
    form = found.automaton(np.arange(b.n_lists), b)
    value, grad = form.value_and_grad(P)
    truth, truth_grad = _brute_force(_measure(metric), b, P)
    np.testing.assert_allclose(value, truth, rtol=0, atol=1e-12)
    np.testing.assert_allclose(grad * b.mask[..., None], truth_grad, rtol=0, atol=1e-12)
    np.testing.assert_allclose(form.value(P), value, rtol=0, atol=0)


@pytest.mark.parametrize("metric", IN_FAMILY, ids=lambda m: m if isinstance(m, str) else m.output_name)
def test_form_reproduces_the_metric_on_random_lists(metric):
    rng = np.random.default_rng(11)
    lists = [rng.integers(0, 3, n) for n in (40, 40, 25, 60, 7)]
    counts = np.array([np.bincount(g, minlength=3) + rng.integers(0, 5, 3) for g in lists])
    b = ListBatch.from_lists(lists, counts=counts)
    found = prefix_state_form(_measure(metric), b)
    assert found is not None
    # fresh lists of the batch's lengths and counts, with their grades drawn anew
    fresh = ListBatch(rng.integers(0, 3, b.grades.shape) * b.mask, b.lengths, b.counts)
    got = found.automaton(np.arange(fresh.n_lists), fresh).value(fresh.onehot())
    np.testing.assert_allclose(got, score_batch(_measure(metric), fresh), rtol=0, atol=1e-9)


def test_grouping_detects_what_the_metric_depends_on():
    b = _short_batch(np.random.default_rng(3), n_lists=12, max_len=9)

    @me.per_list
    def length_bonus(grades, counts):
        return float(np.sum(np.asarray(grades) >= 1)) / len(grades)

    assert grouping(me.get_measure("RR"), b, 1, 1e-9, 0) == "all"
    assert grouping(me.get_measure("AP"), b, 1, 1e-9, 0) == "counts"
    assert grouping(me.metric_from_callable(length_bonus, name="length_bonus_test"), b, 1, 1e-9, 0) == \
        "length+counts"


def test_metrics_outside_the_family_are_refused_and_sampled():
    rng = np.random.default_rng(5)
    lists = [rng.integers(0, 3, n) for n in (30, 30, 20)]
    b = ListBatch.from_lists(lists, counts=np.array([np.bincount(g, minlength=3) + 2 for g in lists]))
    assert prefix_state_form(MEDIAN, b) is None
    source = metric_form(MEDIAN, b)
    assert source.method == "sampled" and not source.exact
    with pytest.raises(me.InputError, match="no exact expected-value form"):
        metric_form(MEDIAN, b, method="prefix-state")


def test_prefix_state_is_tried_after_the_polynomial_forms():
    b = _short_batch(np.random.default_rng(8), n_lists=5, max_len=12)
    assert metric_form(me.get_measure("P@5"), b, method=None).method in ("declared", "derived")
    source = metric_form(CASCADE, b)
    assert source.method == "prefix-state" and source.exact and source.residual <= 1e-9
    assert "dimension 2" in source.detail and "one for every list" in source.detail


def _demo_lists(n=60):
    lists = mem.select_lists(mem.lists_from_collection(me.demo_collection()))
    return lists.subset(np.arange(min(n, lists.batch.n_lists)))


def test_a_cascade_plug_in_gets_an_exact_informativeness_row():
    lists = _demo_lists()
    res = mem.informativeness(lists, [CASCADE, "AP"], thresholds=[1, 2])
    rows = res.summary.set_index(["metric", "threshold"])
    mine = rows.loc["first_top_rr_test"]
    assert set(mine["method"]) == {"prefix-state"} and not mine["approximate"].any()
    assert (mine["failure_rate"] <= 0.01).all()
    # the exact form's solution matches the observed value of every converged list
    solved = solve_mem(lists.batch, CASCADE)
    ok = solved.status == OK
    assert ok.mean() >= 0.99
    observed = score_batch(CASCADE, lists.batch)
    np.testing.assert_allclose(solved.achieved[ok], observed[ok], atol=1e-9)
    assert solved.info["form"].startswith("prefix-state automaton")


def test_a_named_cascade_plug_in_is_probed_once_and_solved_by_workers(tmp_path):
    plugin = tmp_path / "cascade.py"
    plugin.write_text("import numpy as np\nimport meta_eval as me\n\n@me.per_list\n"
                      "def cascade(grades, counts):\n    hits = np.flatnonzero(np.asarray(grades) >= len(counts) - 1)\n"
                      "    return 1.0 / (hits[0] + 1) if hits.size else 0.0\n")
    b = _demo_lists(70).batch
    one = solve_mem(b, f"{plugin}:cascade", jobs=1)
    two = solve_mem(b, f"{plugin}:cascade", jobs=2)
    assert one.method == two.method == "prefix-state"
    np.testing.assert_array_equal(one.P, two.P)
    np.testing.assert_array_equal(one.status, two.status)


def test_the_cache_key_covers_the_prefix_state_code():
    from pathlib import Path

    import meta_eval.statistics.maxent.forms as forms
    from meta_eval.measures.fingerprint import closure

    found = closure("meta_eval.statistics.maxent.forms", Path(forms.__file__).resolve(), "meta_eval.statistics.maxent")
    assert {"meta_eval.statistics.maxent.prefix_state", "meta_eval.statistics.maxent._prefix_kernel", "meta_eval.statistics.maxent.sampled"} <= set(found.files)


def test_bad_distribution_shapes_are_clear_errors():
    b = _short_batch(np.random.default_rng(2))
    form = prefix_state_form(me.get_measure("RR"), b).automaton(np.arange(b.n_lists), b)
    with pytest.raises(me.InputError, match="grades"):
        form.value(np.zeros((b.n_lists, b.depth, 5)))
    with pytest.raises(me.InputError, match="depth"):
        form.value(np.zeros((b.n_lists, 0, 3)))


def test_a_sampled_metric_is_reported_approximate_with_its_error():
    lists = _demo_lists(12)
    assert metric_form(me.get_measure("bpref"), lists.batch).method == "sampled"
    res = mem.informativeness(lists, ["bpref", "AP"], thresholds=[1])
    rows = res.summary.set_index("metric")
    assert rows.loc["bpref", "approximate"] and rows.loc["bpref", "method"] == "sampled"
    assert np.isfinite(rows.loc["bpref", "approx_error"]) and rows.loc["bpref", "approx_error"] > 0
    assert not rows.loc["AP", "approximate"] and np.isnan(rows.loc["AP", "approx_error"])
    notes = [w for w in res.warnings if w.startswith("approximate: bpref")]
    assert len(notes) == 1 and "estimated error" in notes[0]
    assert not any(w.startswith("approximate: AP") for w in res.warnings)
