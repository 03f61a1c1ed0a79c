"""Bringing your own metric: load it from ``module:function`` or ``path/to/file.py:function`` and use it everywhere.

A metric is a Python callable over :class:`~meta_eval.rankings.Rankings` returning one value per list (vectorised;
see :func:`meta_eval.measures.register`), or a function of one ranked list decorated with :func:`per_list`, which
meta-eval vectorises. A module may also register metrics itself with ``@meta_eval.register(...)``; naming the
module (``module`` or ``file.py``) then makes its metrics available by name.

Examples
--------
>>> import numpy as np, meta_eval as me
>>> @me.per_list
... def first_grade(grades, counts):
...     '''Grade of the first document, divided by the highest grade.'''
...     return grades[0] / (len(counts) - 1) if len(grades) else 0.0
>>> measure = me.metric_from_callable(first_grade)
>>> float(measure(me.Rankings.from_lists([[2, 0, 1]]))[0])
1.0
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Callable

import numpy as np

from meta_eval.errors import InputError
from meta_eval.measures.registry import Measure, family, get_measure, make_measure, register
from meta_eval.rankings import PAD, Rankings

_REGISTERED_BY = "__meta_eval_measure__"


def per_list(func: Callable[[np.ndarray, np.ndarray], float]) -> Callable[[Rankings], np.ndarray]:
    """Vectorise a metric written for one list: ``func(grades, counts) -> float``.

    ``grades`` holds the grades of the retrieved documents in rank order (-1 unjudged, -2 negative judgment; no
    padding), ``counts`` the judged documents per grade of the topic. The loop over lists is in Python, so a
    per-list metric is slower than a vectorised one; it is exact all the same.
    """

    def vectorised(r: Rankings) -> np.ndarray:
        grades = r.grades.reshape(-1, r.depth)
        n_ret = np.broadcast_to(r.n_ret, r.shape).reshape(-1)
        counts = np.broadcast_to(r.counts, r.shape + (r.counts.shape[-1],)).reshape(-1, r.counts.shape[-1])
        out = np.array([func(g[:n][g[:n] != PAD], c) for g, n, c in zip(grades, n_ret, counts)], dtype=np.float64)
        return out.reshape(r.shape)

    vectorised.__doc__ = func.__doc__
    vectorised.__name__ = getattr(func, "__name__", "metric")
    vectorised.per_list = func  # type: ignore[attr-defined]
    return vectorised


def metric_from_callable(func: Callable, name: str | None = None) -> Measure:
    """Register a callable over :class:`Rankings` (or a :func:`per_list` function) and return its measure."""
    registered = getattr(func, _REGISTERED_BY, None)
    if registered is not None:
        return get_measure(registered)
    name = name or getattr(func, "__name__", None)
    if not name or name == "<lambda>":
        raise InputError("a metric needs a name: pass name=... for a lambda")
    register(name, description=(func.__doc__ or name).strip().splitlines()[0])(func)
    setattr(func, _REGISTERED_BY, name)
    return make_measure(name)


def load_metric(spec: str) -> list[Measure]:
    """Measures named by a command-line metric specification.

    ``NAME`` (a registered or canonical name: ``AP``, ``GAP(g=0.5,0.5)``), ``module:function``,
    ``path/to/file.py:function``, or ``module`` / ``file.py`` alone (every metric the module registers with
    ``@meta_eval.register``).

    Raises
    ------
    InputError
        The module or file cannot be imported, the function does not exist or is not callable.
    """
    target, sep, attr = spec.rpartition(":") if ":" in spec and not _looks_like_name(spec) else (spec, "", "")
    if not sep and not target.endswith(".py") and not _is_module(target):
        return [get_measure(spec)]
    from meta_eval.measures.registry import families

    before = {f.name for f in families()}
    module = _import(target)
    if sep:
        func = getattr(module, attr, None)
        if not callable(func):
            raise InputError(f"{target} has no callable {attr!r}")
        if getattr(func, "__name__", "") in {f.func.__name__ for f in families()} and _registered_family(func):
            return [make_measure(_registered_family(func))]
        return [metric_from_callable(func)]
    added = [f.name for f in families() if f.name not in before]
    if not added:
        raise InputError(f"{target} registers no metric (decorate functions with @meta_eval.register)")
    return [make_measure(name) for name in added]


def _registered_family(func: Callable) -> str | None:
    from meta_eval.measures.registry import families

    for fam in families():
        if fam.func is func:
            return fam.name
    return None


def _looks_like_name(spec: str) -> bool:
    """Canonical measure names may contain ':' in parameter values, e.g. ``nDCG(gain=1:3,2:9)``."""
    return "(" in spec.split(":")[0]


def _is_module(target: str) -> bool:
    if not target or any(ch in target for ch in "()@ ="):
        return False
    try:
        family(target)
        return False  # a registered measure name wins over a module of the same name
    except InputError:
        pass
    try:
        return importlib.util.find_spec(target) is not None
    except (ImportError, ValueError):
        return False


def _import(target: str):
    if target.endswith(".py"):
        path = Path(target).expanduser().resolve()
        if not path.exists():
            raise InputError("metric file not found", str(path))
        module_name = f"meta_eval_plugin_{path.stem}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # the user's code: report, don't crash with its traceback
            raise InputError(f"cannot import metric file: {type(exc).__name__}: {exc}", str(path)) from None
        return module
    try:
        return importlib.import_module(target)
    except Exception as exc:
        raise InputError(f"cannot import metric module {target!r}: {type(exc).__name__}: {exc}") from None
