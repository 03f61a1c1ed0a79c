"""Bringing your own metric (the public names; the loader is :mod:`meta_eval.measures.plugins`).

A metric is a Python callable over :class:`~meta_eval.rankings.Rankings` returning one value per list, or a
function of one ranked list decorated with :func:`per_list`. Name it on the command line or in a study as
``path/to/file.py:function`` or ``module:function`` (``...:*`` for every metric the module registers with
``@meta_eval.register``), or hand it over in Python with :func:`metric_from_callable`. Plug-ins keep a namespace of
their own, receive read-only arrays and must return one real, finite number per list
(:mod:`meta_eval.measures.plugins` states the contract).
"""

from __future__ import annotations

from meta_eval.measures.plugins import PluginError, metric_from_callable, per_list
from meta_eval.measures.registry import Measure

__all__ = ["PluginError", "load_metric", "metric_from_callable", "per_list"]


def load_metric(spec: "str | Measure") -> list[Measure]:
    """The measures one specification names: ``NAME`` (``AP``, ``GAP(g=0.5,0.5)``, ``map``; never imports
    anything), ``module:function``, ``path/to/file.py:function``, or ``...:*`` (every metric the module registers).

    Raises
    ------
    InputError
        Unknown name, a module or file that cannot be imported, no such function, a name taken by a built-in.
    """
    from meta_eval.measures.resolver import measures_of

    return measures_of(spec)
