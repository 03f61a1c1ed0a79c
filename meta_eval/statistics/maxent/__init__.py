"""Informativeness by the maximum-entropy method (MEM; Aslam, Yilmaz & Pavlu 2005; Robertson et al. 2010).

``solve_mem`` finds, for every ranked list, the maximum-entropy probability-at-rank distribution over grades given
the grade counts and the list's metric value; ``expectations`` declares each metric's exact expected value (a user
metric registers its form with ``register_expectation``); ``forms`` finds one for any other metric by probing it (a
degree-2 polynomial, or a prefix-state automaton: ``prefix_state``) or, as a last resort, samples it (``sampled``);
``curves`` compares inferred and actual PR curves;
``study`` runs the GAP paper's Figure 2 and Aslam et al.'s binary comparison.
"""

from meta_eval.statistics.maxent.batch import ListBatch
from meta_eval.statistics.maxent.curves import (expected_precision_recall, interpolated_precision, pr_error, rms_11pt,
                                  rms_recall_changes)
from meta_eval.statistics.maxent.expectations import (CascadeForm, ExpectationForm, LinearForm, PairwiseForm, expectation,
                                        observed, register_expectation, registered_measures)
from meta_eval.statistics.maxent.reference import reference_linear, reference_nonlinear, reference_solve
from meta_eval.statistics.maxent.result import STATUS, MEMResult, count_targets, entropy
from meta_eval.statistics.maxent.solver import solve_mem, solve_mems
from meta_eval.statistics.maxent.pr_inference import (AslamResult, Figure2Result, InformativenessResult, Lists, aslam_binary,
                                 check_plugins, curve_errors, figure2_measures, g_grid, gap_figure2, gap_measure,
                                 informativeness, lists_from_collection, predict, prediction_table,
                                 qualifying_lists, retrieved_grade_counts, select_lists, solve_cached,
                                 solve_cached_many, summarise)

__all__ = [
    "AslamResult", "CascadeForm", "ExpectationForm", "Figure2Result", "InformativenessResult", "LinearForm",
    "ListBatch", "Lists", "MEMResult", "PairwiseForm", "STATUS", "aslam_binary", "check_plugins", "count_targets",
    "curve_errors", "entropy", "expectation", "expected_precision_recall", "figure2_measures", "g_grid", "gap_figure2",
    "gap_measure", "informativeness", "interpolated_precision", "lists_from_collection", "observed",
    "pr_error", "predict", "prediction_table", "qualifying_lists", "reference_linear", "reference_nonlinear",
    "reference_solve", "register_expectation", "registered_measures", "retrieved_grade_counts", "rms_11pt",
    "rms_recall_changes", "select_lists", "solve_cached", "solve_cached_many", "solve_mem", "solve_mems", "summarise",
]
