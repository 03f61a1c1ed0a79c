"""Metric properties and the seed papers' analyses, one module per concept.

- :mod:`~meta_eval.statistics.metric_properties.sensitivity`: Kishida's Δv(j) (Eq. 9–11) and the numerical Δ of any metric when the
  document at rank j turns relevant (top-heaviness).
- :mod:`~meta_eval.statistics.metric_properties.new_relevant`: a newly found relevant document (Kishida Eq. 15–17, Table 1).
- :mod:`~meta_eval.statistics.metric_properties.judgment_variation`: variation of relevance judgments (Kishida Eq. 18–25, Table 2),
  simulated or from several qrels.
- :mod:`~meta_eval.statistics.metric_properties.patterns`: the 136-pattern comparison (Kishida §4.3, Tables 3–5).
- :mod:`~meta_eval.statistics.metric_properties.gap`: GAP properties, its probabilistic interpretation (Monte Carlo) and the area
  under the graded PR curve (Robertson, Kanoulas & Yilmaz 2010, §3).
- :mod:`~meta_eval.statistics.metric_properties.ncp`: NCP with a user-given stopping distribution (Robertson 2008).
- :mod:`~meta_eval.statistics.metric_properties.ap_positions`: AP, precision and recall against relevant positions (IJCSIT 2015).
- :mod:`~meta_eval.statistics.metric_properties.textbook_rankings`: the exercise rankings of Manning et al. §8.4.
- :mod:`~meta_eval.statistics.metric_properties.formal`: the formal properties of any metric (Moffat's seven, Amigó
  et al.'s ranking constraints, Kishida's sensitivity, the interval scale) by exhaustive enumeration and a seeded
  random search.
"""

from meta_eval.statistics.metric_properties.gap import (GapMonteCarlo, PRArea, check_ideal_maximum, check_reduces_to_ap,
                                      check_swap_monotonicity, gap_monte_carlo, graded_pr_area)
from meta_eval.statistics.metric_properties.judgment_variation import (JudgmentVariation, decompose_judgment_variation,
                                                     judgment_variation_from_qrels, population_judgment_variation,
                                                     simulate_judgment_variation)
from meta_eval.statistics.metric_properties.ncp import ncp
from meta_eval.statistics.metric_properties.new_relevant import new_relevant_change, new_relevant_simple, new_relevant_table
from meta_eval.statistics.metric_properties.patterns import (characteristic_patterns, kishida_patterns, pattern_correlations,
                                           pattern_scores, pattern_statistics)
from meta_eval.statistics.metric_properties.sensitivity import ap_increment, metric_increment, sensitivity_profile

__all__ = [
    "GapMonteCarlo", "JudgmentVariation", "PRArea", "ap_increment", "characteristic_patterns",
    "check_ideal_maximum", "check_reduces_to_ap", "check_swap_monotonicity", "decompose_judgment_variation",
    "gap_monte_carlo", "graded_pr_area", "judgment_variation_from_qrels", "kishida_patterns", "metric_increment",
    "ncp", "new_relevant_change", "new_relevant_simple", "new_relevant_table", "pattern_correlations",
    "pattern_scores", "pattern_statistics", "population_judgment_variation", "sensitivity_profile",
    "simulate_judgment_variation",
]
