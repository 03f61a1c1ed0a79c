"""Discriminative power of evaluation metrics: how many system pairs a metric tells apart, and how confidently.

Sakai's (2006) paired bootstrap (and an unpaired variant), the randomised Tukey HSD, the paired randomisation test,
and classical paired tests with Holm / Bonferroni / Benjamini-Hochberg corrections, each over every system pair of
a (systems x topics) score matrix, returning a result object.
"""

from meta_eval.statistics.significance.pairs import PairwiseTest, pair_indices
from meta_eval.statistics.significance.discriminative_power import DEFAULT_RESAMPLES, METHODS, PairTests, discriminative_power
from meta_eval.statistics.significance.bootstrap import paired_bootstrap, unpaired_bootstrap
from meta_eval.statistics.significance.classical import (adjust_pvalues, benjamini_hochberg, bonferroni, classical_test, holm,
                                          sign_test_pvalues)
from meta_eval.statistics.significance.randomisation import randomisation_test
from meta_eval.statistics.significance.tukey import tukey_hsd, tukey_null

__all__ = [
    "DEFAULT_RESAMPLES",
    "METHODS",
    "PairTests",
    "PairwiseTest",
    "adjust_pvalues",
    "benjamini_hochberg",
    "bonferroni",
    "classical_test",
    "discriminative_power",
    "holm",
    "pair_indices",
    "paired_bootstrap",
    "randomisation_test",
    "sign_test_pvalues",
    "tukey_hsd",
    "tukey_null",
    "unpaired_bootstrap",
]
