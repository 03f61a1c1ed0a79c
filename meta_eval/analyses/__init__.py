"""Analyses: one module per analysis, one registry, one result protocol.

Each analysis of a meta-evaluation — discriminative power, correlation, split-half stability, ANOVA and topic-set
size, intuitiveness, incomplete judgments, pool reusability, informativeness, learning to rank, agreement with
another judge, formal properties, error rates of significance tests — is one module of this package that owns
everything specific to it: its declaration (:func:`analysis`: name, title, parameters with their domains, what it
reads, the analyses it needs) over a ``run(data, **params) -> Result`` function, its typed result, its compact
table, its findings and its figures. The engine below it (the statistics, a plain function from arrays to a result
object) lives in :mod:`meta_eval.statistics`; the generic machinery (:class:`~meta_eval.rendering.paper_table.
PaperTable`, :class:`~meta_eval.rendering.findings.Quoter`, the figure style, the writers) in
:mod:`meta_eval.rendering`.

A module dropped into this package is registered (its name with dashes is the analysis's); its command is generated
from the declaration (:mod:`meta_eval.cli.generated`), the study runs it in its report's order
(:mod:`meta_eval.orchestration.study`), and the contract test checks it (:func:`check_analysis`). A user's own
analysis is one file with the same declaration: ``meta-eval study --analysis my.py:NAME`` runs it in the study (its
table, figure and findings in the report) and ``meta-eval analysis my.py:NAME`` on its own.

Importing this package imports no numerical library; the analyses' modules (and numpy) are imported when the
registry is first read.
"""

from meta_eval.analyses._base import DEFAULT_AGAINST, DEFAULT_METRICS, NEEDS, Analysis, AnalysisData, MemoryNeed
from meta_eval.analyses._result import FigureOutput, Result, TableOutput
from meta_eval.analyses._registry import (analyses, analysis, builtin_modules, builtin_names, dependency_order,
                                          get_analysis, parse_analysis)
from meta_eval.core.params import ANALYSIS_PARAMS, Param

__all__ = ["ANALYSIS_PARAMS", "DEFAULT_AGAINST", "DEFAULT_METRICS", "NEEDS", "Analysis", "AnalysisData",
           "FigureOutput", "MemoryNeed", "Param", "Result", "TableOutput", "analyses", "analysis", "builtin_modules",
           "builtin_names", "dependency_order", "get_analysis", "parse_analysis"]
