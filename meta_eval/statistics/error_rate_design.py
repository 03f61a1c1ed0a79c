"""The choices of the error-rate experiment (:mod:`meta_eval.statistics.significance.error_rates`): its tests,
corrections, null hypotheses, effect units and defaults, with their labels.

A module of its own, without imports, so that the analysis's declaration (:mod:`meta_eval.analyses.error_rates`)
reads them when the registry loads, without importing the engine and scipy with it.
"""

#: Paired tests of two systems on the topics.
TESTS = ("ttest", "wilcoxon", "sign", "bootstrap", "randomisation")
#: Multiple-comparison corrections of a family's tests (``tukey``: the randomised Tukey HSD).
CORRECTIONS = ("none", "bonferroni", "holm", "bh", "tukey")
#: How a pair's per-topic differences are made null (the engine's module docstring: ``Null pairs``).
NULLS = ("exchange", "shift")
#: Units of an effect: the pair's null standard deviation, or score units.
UNITS = ("sd", "score")
DEFAULT_EFFECTS = (0.1, 0.2, 0.3, 0.5, 0.8)
DEFAULT_FAMILY_TESTS = ("ttest", "wilcoxon", "sign")
TEST_LABELS = {"ttest": "t-test", "wilcoxon": "Wilcoxon", "sign": "sign", "bootstrap": "bootstrap",
               "randomisation": "randomisation"}
CORRECTION_LABELS = {"none": "", "bonferroni": "Bonferroni", "holm": "Holm", "bh": "BH", "tukey": "Tukey HSD"}
