"""Correlation between evaluation metrics.

- :mod:`~meta_eval.statistics.correlation.rank`: the coefficients (Kendall tau-b, tau_AP and its tie-aware variants, Spearman,
  Pearson), vectorised over leading axes.
- :func:`correlate_systems`: metric vs metric on system rankings (mean over topics), with bootstrap intervals.
- :func:`correlate_topics`: metric vs metric on per-topic scores, pooled and averaged over topics.
- :func:`ranking_swaps`, :func:`swap_table`: system pairs ordered differently, and how many are significant.
"""

from meta_eval.statistics.correlation.agreement import Swaps, ranking_swaps, swap_table
from meta_eval.statistics.correlation.rank import kendall_tau_b, pearson, spearman, tau_ap, tau_ap_a, tau_ap_b
from meta_eval.statistics.correlation.systems import COEFFICIENTS, SystemCorrelation, correlate_systems
from meta_eval.statistics.correlation.topics import TopicCorrelation, correlate_topics

__all__ = [
    "COEFFICIENTS",
    "Swaps",
    "SystemCorrelation",
    "TopicCorrelation",
    "correlate_systems",
    "correlate_topics",
    "kendall_tau_b",
    "pearson",
    "ranking_swaps",
    "spearman",
    "swap_table",
    "tau_ap",
    "tau_ap_a",
    "tau_ap_b",
]
