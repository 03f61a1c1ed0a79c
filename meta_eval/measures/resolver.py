"""The one measure resolver: every entry point (evaluate, study, the battery, informativeness, LTR) turns what the
user wrote into measures here.

A specification is a :class:`~meta_eval.measures.registry.Measure`, a name (canonical ``GAP(g=0.5,0.5)``,
``nDCG@10``, or a trec_eval spelling ``map``, ``P_5``), a trec_eval ``-m`` list (``P.5,10``, ``ndcg_cut``,
``all_trec``), or a plug-in (``file.py:NAME``, ``module:NAME``, ``...:*``; :mod:`meta_eval.measures.plugins`). Only a
plug-in specification imports code.

The top of the measures layer: it reads trec_eval's spellings (:mod:`meta_eval.measures.trec_names`) and loads
plug-ins (:mod:`meta_eval.measures.plugins`) over the registry (:mod:`meta_eval.measures.registry`), and it is how a
measure travels to another process: as its specification (:attr:`Measure.spec`), resolved again there.
"""

from __future__ import annotations

import copyreg
import inspect
from dataclasses import replace
from typing import Iterable

from meta_eval.core.errors import InputError
from meta_eval.core.trec_eval_names import expand_trec_spec
from meta_eval.measures import plugins
from meta_eval.measures.registry import Measure, canonical_measure, is_builtin
from meta_eval.measures.trec_names import from_trec_name


def get_measure(spec: "str | Measure") -> Measure:
    """Parse a measure name, a trec_eval spelling (``map``, ``P_5``: labelled with it) or a canonical name
    (``nDCG(gain=exp)@10``), into a :class:`Measure`; never imports anything.

    Raises
    ------
    InputError
        Unknown measure (with "did you mean" over every name), unknown parameter, bad value, or a cutoff on a
        measure that takes none.
    """
    if isinstance(spec, Measure):
        return spec
    spec = spec.strip()
    trec = from_trec_name(spec)
    return trec if trec is not None else canonical_measure(spec)


def load_metric(spec: "str | Measure") -> list[Measure]:
    """The measures one specification names (one, or several for a trec_eval list or ``file.py:*``): ``NAME``
    (``AP``, ``GAP(g=0.5,0.5)``, ``map``; never imports anything), ``module:function``, ``path/to/file.py:function``,
    or ``...:*`` (every metric the module registers).

    Raises
    ------
    InputError
        Unknown name, bad parameters, or a plug-in that cannot be loaded (see :func:`resolve`).
    """
    if isinstance(spec, Measure):
        return [spec]
    if not isinstance(spec, str):
        raise InputError(f"a measure is given by its name or as a Measure; got {type(spec).__name__} {spec!r}")
    text = spec.strip()
    if not text:
        raise InputError("empty measure name")
    plugin = plugins.parse_spec(text)
    if plugin is not None:
        return plugins.load(plugin)
    if text.endswith(".py") and ":" not in text:
        raise InputError(f"measure {text}: a file names no metric by itself; write {text}:FUNCTION for one of its "
                         f"functions or {text}:* for every metric it registers")
    return [get_measure(name) for name in expand_trec_spec(text)]


def resolve(measures: "str | Measure | Iterable[str | Measure]") -> list[Measure]:
    """Every measure the specifications name, in order, each once.

    Names are case-insensitive and measures cannot share one: a repeat of the same measure is dropped, two
    different measures printed under the same name (two plug-ins ``a.py:score`` and ``b.py:score``) are an error.

    Raises
    ------
    InputError
        An unknown name (with "did you mean"), a bad parameter, a plug-in that cannot be loaded or is named like a
        built-in measure, or two measures under one name.

    Examples
    --------
    >>> [m.output_name for m in resolve(["AP", "P.5,10", "map", "ap"])]
    ['AP', 'P_5', 'P_10', 'map']
    """
    if isinstance(measures, (str, Measure)):
        measures = [measures]
    if not isinstance(measures, Iterable):
        raise InputError(f"measures are given by name, as Measures, or as a list of them; got {measures!r}")
    out: list[Measure] = []
    seen: dict[str, tuple] = {}
    for spec in measures:
        for m in load_metric(spec):
            key = m.output_name.lower()
            identity = (m.output_name, m.spec, id(inspect.unwrap(m.family.func)))
            if key not in seen:
                seen[key] = identity
                out.append(m)
            elif seen[key] != identity:
                raise InputError(f"two different measures are named {m.output_name!r} "
                                 f"({_origin(seen[key][1])} and {_origin(m.spec)}); rename one")
    return out


def resolve_read(names: Iterable[str]) -> list[Measure]:
    """:func:`resolve` for measure names read from a data file (a score table's measure column): a name read from a
    file never loads code, so a plug-in's specification there (``evil.py:m``) is refused; the user names a plug-in
    on the command line or in code."""
    names = list(names)
    code = [name for name in names if isinstance(name, str) and plugins.parse_spec(name) is not None]
    if code:
        raise InputError(f"the scores name the measure {code[0]!r}, a plug-in's specification: names read from a "
                         "file never load code; to use the plug-in, name it with -m (or in code)")
    return resolve(names)


def known_measure(name: str) -> Measure | None:
    """The one measure a name read from data names (:func:`resolve_read`: never loading code), or None when it
    names none meta-eval knows, or several (a score table's own measure)."""
    try:
        found = resolve_read([name])
    except InputError:
        return None
    return found[0] if len(found) == 1 else None


def resolve_one(spec: "str | Measure") -> Measure:
    """The single measure a specification names (InputError if it names several)."""
    found = resolve(spec)
    if len(found) != 1:
        raise InputError(f"{spec!r} names {len(found)} measures; give one")
    return found[0]


def _origin(spec: str) -> str:
    return spec if ":" in spec else f"{spec} (defined in this process)"


# --------------------------------------------------------------------------------------------- pickling


def _reduce(measure: Measure):
    """How a measure travels to another process (pickle, ``copy``): a plug-in, a trec_eval spelling or a built-in
    as its specification, resolved again there (a worker loads the plug-in itself); one registered in this process
    only (``meta_eval.register`` in a notebook), by value."""
    if measure.origin is not None or is_builtin(measure.family.func):
        return _rebuild, (measure.spec, measure.label)
    return Measure, (measure.family, measure.params, measure.label)


def _rebuild(spec: str, label: str | None) -> Measure:
    (measure,) = resolve(spec)
    return measure if label is None else replace(measure, label=label)


# Registered here, not as Measure.__reduce__: rebuilding resolves, and the registry sits below the resolver. Any
# import of the measures package imports this module (meta_eval/measures/__init__.py), before any Measure exists.
copyreg.pickle(Measure, _reduce)
