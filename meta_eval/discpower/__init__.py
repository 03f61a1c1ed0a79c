"""Discriminative power of evaluation metrics: how many system pairs a metric tells apart, and how confidently.

Sakai's (2006) paired bootstrap (and an unpaired variant), the randomised Tukey HSD, the paired randomisation test,
classical paired tests with Holm / Bonferroni / Benjamini-Hochberg corrections, Voorhees-Buckley swap rates and
Buckley-Voorhees error rates, and the GAP paper's "best systems" subset. Every analysis maps a (systems x topics) score matrix to a result object.
"""

from meta_eval.discpower._common import PairwiseTest, pair_indices
from meta_eval.discpower.analysis import DEFAULT_RESAMPLES, METHODS, DiscPower, discriminative_power
from meta_eval.discpower.bootstrap import paired_bootstrap, unpaired_bootstrap
from meta_eval.discpower.classical import (adjust_pvalues, benjamini_hochberg, bonferroni, classical_test, holm,
                                          sign_test_pvalues)
from meta_eval.discpower.stability import SplitHalf, SwapRates, error_rates, split_half, swap_rates
from meta_eval.discpower.randomisation import randomisation_test
from meta_eval.discpower.subsets import best_systems, select_systems, select_topics, system_ranks
from meta_eval.discpower.tukey import tukey_hsd, tukey_null

__all__ = [
    "DEFAULT_RESAMPLES",
    "METHODS",
    "DiscPower",
    "PairwiseTest",
    "SplitHalf",
    "SwapRates",
    "adjust_pvalues",
    "benjamini_hochberg",
    "bonferroni",
    "best_systems",
    "classical_test",
    "discriminative_power",
    "error_rates",
    "holm",
    "pair_indices",
    "paired_bootstrap",
    "randomisation_test",
    "select_systems",
    "select_topics",
    "sign_test_pvalues",
    "split_half",
    "swap_rates",
    "system_ranks",
    "tukey_hsd",
    "tukey_null",
    "unpaired_bootstrap",
]
