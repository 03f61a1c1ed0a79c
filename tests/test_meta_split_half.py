"""Split-half stability (Voorhees 2009) against a plain loop over sizes and splits that draws the same splits
from the same seed, with scipy's Kendall τ."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import meta_eval as me
from meta_eval.statistics.correlation import tau_ap_b
from meta_eval.statistics.stability import split_half, swap_rates
from meta_eval.core.errors import InputError


def test_split_half_matches_a_plain_loop():
    x = me.score(me.demo_collection(), "AP")
    n_top = x.shape[1]
    res = split_half(x, sizes=[2, 5, 10], n_splits=15, seed=4)
    rng = np.random.default_rng(4)
    expected = []
    for n in (2, 5, 10):
        order = rng.permuted(np.broadcast_to(np.arange(n_top), (15, n_top)), axis=1)
        for j in range(15):
            m1, m2 = x[:, order[j, :n]].mean(1), x[:, order[j, n:2 * n]].mean(1)
            expected.append((n, j, stats.kendalltau(m1, m2).statistic, tau_ap_b(m1, m2)))
    got = res.splits[["size", "split", "kendall_tau_b", "tau_ap_b"]].to_numpy()
    assert np.allclose(got, np.array(expected), atol=1e-12)
    s = res.summary[res.summary["coefficient"] == "kendall_tau_b"].set_index("size")
    assert s.loc[10, "mean"] == pytest.approx(np.mean([e[2] for e in expected if e[0] == 10]))
    assert (s["splits"] == 15).all() and (s["ci_low"] <= s["mean"]).all() and (s["mean"] <= s["ci_high"]).all()
    assert s.loc[10, "mean"] > s.loc[2, "mean"]  # larger halves agree more


def test_split_half_uses_the_swap_rate_splits():
    """Same seed, same disjoint sets as the swap rates: the refactored split drawing did not change them."""
    rng = np.random.default_rng(0)
    x = rng.random((5, 12))
    a = swap_rates(x, sizes=[3], n_splits=7, seed=1).by_size
    # swap count recomputed from split_half's sets (the first and second set of each split)
    r = np.random.default_rng(1)
    order = r.permuted(np.broadcast_to(np.arange(12), (7, 12)), axis=1)
    ia, ib = np.triu_indices(5, 1)
    swaps = sum(int(((x[ia][:, order[j, :3]].mean(1) - x[ib][:, order[j, :3]].mean(1))
                     * (x[ia][:, order[j, 3:6]].mean(1) - x[ib][:, order[j, 3:6]].mean(1)) < 0).sum())
                for j in range(7))
    assert int(a["swaps"].iloc[0]) == swaps


def test_split_half_checks_sizes():
    with pytest.raises(InputError, match="sizes"):
        split_half(np.random.default_rng(0).random((4, 6)), sizes=[4])
