"""The metric library: every measure is a vectorised function of :class:`~meta_eval.model.rankings.Rankings`.

Importing this package registers the built-in measures; ``get_measure`` parses canonical names and trec_eval
spellings; ``register`` adds a user measure with the same interface; ``resolve`` is the one way from what a user
wrote (names, trec_eval ``-m`` lists, ``file.py:NAME`` and ``module:NAME`` plug-ins) to measures.

Inside the package the arrows point one way: :mod:`~meta_eval.measures.registry` at the bottom, the families
(``binary``, ``graded``, ``incomplete``, ``kishida``, ``preferences``), :mod:`~meta_eval.measures.trec_names` and
:mod:`~meta_eval.measures.plugins` above it, :mod:`~meta_eval.measures.resolver` on top; no module of the package
imports this one.
"""

from meta_eval.measures import binary, graded, incomplete, kishida, preferences  # noqa: F401  (the built-in families)
from meta_eval.measures.plugins import register
from meta_eval.measures.registry import Family, Measure, Param, families, make_measure
from meta_eval.measures.resolver import get_measure, resolve, resolve_one

__all__ = ["Family", "Measure", "Param", "families", "get_measure", "make_measure", "register", "resolve",
           "resolve_one"]
