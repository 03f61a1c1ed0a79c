"""Informativeness by the maximum-entropy method, under the name of the concept.

The engine lives in :mod:`meta_eval.mem` (forms, solver, cache; its name kept short and stable); this module gives
its public names under the name every command, table and report uses: ``meta_eval.informativeness.solve_mem`` is
``meta_eval.mem.solve_mem``, the same object. The analysis a study runs is :mod:`meta_eval.analyses.informativeness`.
"""

from meta_eval.mem import *  # noqa: F401,F403 - the alias
from meta_eval.mem import __all__  # noqa: F401
