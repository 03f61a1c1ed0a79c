"""One registry of analyses, mirroring the measures': declared once, found by name or as a plug-in.

meta-eval's own analyses are the modules of :data:`BUILTIN` (imported on first use, in this order: the order of a
study's report). A user's analysis is named ``path/to/file.py:NAME`` or ``module:NAME`` and loaded by the same
loader as metric plug-ins (:mod:`meta_eval.measures.plugins`: the file is recorded as an input, its folder is on
the import path); it keeps a namespace of its own, so it can never replace or shadow a built-in analysis. Either may
be given parameters as a measure is: ``judge-agreement(other_qrels=llm.qrels)``, ``my.py:top_heavy(k=5)``.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from meta_eval.analyses._base import Analysis, AnalysisData, MemoryNeed, Result
from meta_eval.core.errors import InputError

__all__ = ["BUILTIN", "analyses", "analysis", "dependency_order", "get_analysis", "parse_analysis"]

#: meta-eval's own analyses: module of meta_eval.analyses -> the analysis it declares (its name with dashes).
BUILTIN = ("scores", "properties", "discpower", "error_rates", "split_half", "anova", "correlation", "intuitiveness",
           "incomplete_judgments", "reusability", "informativeness", "ltr", "judge_agreement")

_ANALYSES: dict[str, Analysis] = {}
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def builtin_names() -> tuple[str, ...]:
    """The built-in analyses' names, without importing them (``split_half`` -> ``split-half``)."""
    return tuple(module.replace("_", "-") for module in BUILTIN)


def analysis(name: str, *, title: str, params: Sequence[Any] = (), requires: Sequence[str] = (),
             after: Sequence[str] = (), summary: str = "", study: Mapping[str, str] | None = None,
             command: str | None = None, measures: Sequence[str] | None = None,
             enabled: Callable[[Mapping[str, Any]], bool] | None = None,
             memory: Callable[[AnalysisData, Mapping[str, Any]], list[MemoryNeed]] | None = None,
             prepare: Callable[[], Any] | None = None, files: Sequence[str] = (), standardised: bool = False,
             parallel: bool = False) -> Callable[[Callable[..., Result]], Analysis]:
    """Declare an analysis: decorate its ``run(data, **params) -> Result`` function.

    The decorated name becomes the :class:`Analysis` declaration. meta-eval's own analyses join the registry; a
    user's (a notebook, a plug-in file) stay apart — hand the declaration to
    :func:`meta_eval.orchestration.study.run_study` (``StudyOptions(analyses=[...])``) or name it ``file.py:NAME``.

    Examples
    --------
    >>> from meta_eval.analyses import Result, analysis
    >>> from meta_eval.core.params import Param
    >>> @analysis("mean-gap", title="Gap between the best and the worst system",
    ...           params=(Param("k", 1, int, "systems at each end", within="[1, inf)"),))
    ... def mean_gap(data, *, k):
    ...     ...
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise InputError(f"analysis name {name!r}: a word of letters, digits, '-' and '_', starting with a letter")
    declared = tuple(params)
    names = [p.name for p in declared]
    if len(set(names)) != len(names):
        raise InputError(f"analysis {name}: a parameter is declared twice ({names})")
    if "data" in names:
        raise InputError(f"analysis {name}: no parameter may be called 'data' (run receives the data under that name)")
    unknown = [f for f in files if f not in names]
    if unknown:
        raise InputError(f"analysis {name}: files names undeclared parameters {unknown}")

    def decorate(run: Callable[..., Result]) -> Analysis:
        decl = Analysis(name, title, run, declared, tuple(requires), tuple(after),
                        summary or (run.__doc__ or title).strip().split("\n")[0], dict(study or {}), command,
                        tuple(measures) if measures is not None else Analysis.measures, enabled, memory, prepare,
                        tuple(files), standardised, parallel)
        if _builtin(run):
            known = _ANALYSES.get(name)
            if known is not None and (known.run.__module__, known.run.__qualname__) != (run.__module__,
                                                                                       run.__qualname__):
                raise InputError(f"analysis {name!r} is declared twice ({known.run.__module__}, {run.__module__})")
            _ANALYSES[name] = decl
        return decl

    return decorate


def _builtin(func: Callable) -> bool:
    return str(getattr(func, "__module__", "")).startswith("meta_eval.")


def _load_builtins() -> None:
    for module in BUILTIN:
        importlib.import_module(f"meta_eval.analyses.{module}")


def analyses() -> list[Analysis]:
    """Every built-in analysis, in the study's order."""
    _load_builtins()
    return [_ANALYSES[name] for name in builtin_names()]


def get_analysis(name: str) -> Analysis:
    """The built-in analysis ``name`` (InputError with "did you mean" for an unknown one)."""
    _load_builtins()
    if name in _ANALYSES:
        return _ANALYSES[name]
    from meta_eval.core.params import did_you_mean

    close = did_you_mean(name, list(_ANALYSES))
    raise InputError(f"unknown analysis {name!r}" + (f"; did you mean {close}?" if close else "")
                     + f" (analyses: {', '.join(_ANALYSES)}; a plug-in is named file.py:NAME or module:NAME)")


def parse_analysis(spec: "str | Analysis") -> tuple[Analysis, dict[str, Any]]:
    """The analysis a specification names and the parameters it sets (checked against the declaration).

    ``NAME``, ``NAME(param=value,...)``, ``file.py:NAME(...)`` or ``module:NAME(...)``; a value of a repeatable
    parameter is comma-separated (``fractions=0.3,0.7``).
    """
    if isinstance(spec, Analysis):
        return spec, {}
    if not isinstance(spec, str) or not spec.strip():
        raise InputError(f"an analysis is named by a word or file.py:NAME; got {spec!r}")
    from meta_eval.measures.plugins import parse_spec
    from meta_eval.measures.registry import split_name

    text = spec.strip()
    plugin = parse_spec(text)
    name, pairs, cut = split_name(plugin.attr if plugin is not None else text)
    if cut is not None:
        raise InputError(f"analysis {text!r}: an analysis takes no @cutoff")
    decl = _load_plugin(plugin, name.strip(), text) if plugin is not None else get_analysis(name.strip())
    return decl, _values(decl, pairs, text)


def _values(decl: Analysis, pairs: list[tuple[str, str]], text: str) -> dict[str, Any]:
    from meta_eval.core.params import _parse_value

    where = f"analysis {text}"
    out: dict[str, Any] = {}
    for key, value in pairs:
        param = decl.param(key)
        parts = [v.strip() for v in value.split(",")] if param.many else [value]
        parsed = tuple(_parse_value(param, v, where) if param.parse is not str else v for v in parts)
        out[key] = param.validate(parsed if param.many else parsed[0], where)
    return out


def _load_plugin(plugin, name: str, text: str) -> Analysis:
    """The analysis ``name`` of a plug-in file or module (the metric plug-ins' loader)."""
    from meta_eval.measures import plugins

    loaded = plugins.load_code(plugin, "analysis plug-in")
    found = getattr(loaded.module, name, None)
    if not isinstance(found, Analysis):
        declared = [k for k, v in vars(loaded.module).items() if isinstance(v, Analysis)]
        what = "no analysis" if found is None else f"{type(found).__name__}, not an analysis"
        raise InputError(f"{loaded.shown}:{name} is {what} (declare one with @meta_eval.analyses.analysis; "
                         f"{'declared here: ' + ', '.join(declared) if declared else 'it declares none'})")
    builtin = set(builtin_names())
    if found.name in builtin:
        raise InputError(f"analysis plug-in {text} is named {found.name!r}, the name of a built-in analysis: a "
                         "plug-in never replaces one — rename it")
    from dataclasses import replace

    return replace(found, source=loaded.label)


def dependency_order(selected: Iterable[Analysis]) -> list[Analysis]:
    """The analyses in an order in which each comes after those it requires or uses (a stable topological sort:
    otherwise in the given order). An analysis required but not selected is an error naming both."""
    chosen = list(selected)
    by_name = {a.name: a for a in chosen}
    for a in chosen:
        missing = [r for r in a.requires if r not in by_name]
        if missing:
            raise InputError(f"analysis {a.name} requires {', '.join(missing)}, which will not run (skipped or "
                             "not selected)")
    order: list[Analysis] = []
    placed: set[str] = set()
    placing: set[str] = set()

    def place(a: Analysis) -> None:
        if a.name in placed:
            return
        if a.name in placing:
            raise InputError(f"analyses depend on each other in a cycle through {a.name}")
        placing.add(a.name)
        for dep in (*a.requires, *a.after):
            if dep in by_name:
                place(by_name[dep])
        placing.discard(a.name)
        placed.add(a.name)
        order.append(a)

    for a in chosen:
        place(a)
    return order
