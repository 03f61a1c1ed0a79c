"""The metric library: every measure is a vectorised function of :class:`~meta_eval.model.rankings.Rankings`.

Importing this package registers the built-in measures; ``get_measure`` parses canonical names and trec_eval
spellings; ``register`` adds a user measure with the same interface; ``resolve`` is the one way from what a user
wrote (names, trec_eval ``-m`` lists, ``file.py:NAME`` and ``module:NAME`` plug-ins) to measures.
"""

from meta_eval.measures import binary, graded, incomplete, kishida, preferences  # noqa: F401  (registration side effects)
from meta_eval.measures.registry import Family, Measure, Param, families, get_measure, make_measure, register
from meta_eval.measures.resolver import resolve, resolve_one

__all__ = ["Family", "Measure", "Param", "families", "get_measure", "make_measure", "register", "resolve",
           "resolve_one"]
