"""Analyses: one registry, one declaration per analysis, one result protocol.

Each analysis of a meta-evaluation — discriminative power, correlation, split-half stability, ANOVA and topic-set
size, intuitiveness, incomplete judgments, pool reusability, informativeness, learning to rank, agreement with
another judge — is a module of this package declaring it with :func:`analysis` (name, title, parameters with their
domains, the analyses it needs) over a ``run(data, **params) -> Result`` function. The study is a loop over these
declarations in dependency order (:mod:`meta_eval.orchestration.study`); the battery commands are generated from them
(:mod:`meta_eval.cli.generated`); every result answers ``to_frame()``, ``table()``, ``figures()`` and
``findings()`` (:class:`Result`).

A user's own analysis is one file with the same declaration; ``meta-eval study --analysis my.py:NAME`` runs it in
the study (its table, figure and findings in the report) and ``meta-eval analysis my.py:NAME`` on its own. The
engines below the declarations (:mod:`meta_eval.statistics.significance`, :mod:`meta_eval.statistics.correlation`, :mod:`meta_eval.meta`,
:mod:`meta_eval.statistics.maxent`, :mod:`meta_eval.statistics.learning_to_rank`) are unchanged and can be called directly.

Importing this package costs nothing beyond the standard library; the analyses' modules (and numpy) are imported
when the registry is first read.
"""

from meta_eval.analyses._base import Analysis, AnalysisData, FigureOutput, MemoryNeed, Result, TableOutput
from meta_eval.analyses._registry import (BUILTIN, analyses, analysis, builtin_names, dependency_order, get_analysis,
                                         parse_analysis)

__all__ = ["Analysis", "AnalysisData", "BUILTIN", "FigureOutput", "MemoryNeed", "Result", "TableOutput", "analyses",
           "analysis", "builtin_names", "dependency_order", "get_analysis", "parse_analysis"]
