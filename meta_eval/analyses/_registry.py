"""One registry of analyses: declared once, found by name or as a plug-in.

meta-eval's own analyses are the modules of this package: a module dropped into it (a name without a leading
underscore) is imported when the registry is first read, and the analysis it declares joins the registry under the
module's name with dashes (``split_half.py`` declares ``split-half``) — no list to edit. A user's analysis is named
``path/to/file.py:NAME`` or ``module:NAME`` and loaded by the same loader as metric plug-ins
(:mod:`meta_eval.measures.plugins`: the file is recorded as an input, its folder is on the import path); it keeps a
namespace of its own, so it can never replace or shadow a built-in analysis. Either may be given parameters as a
measure is: ``judge-agreement(other_qrels=llm.qrels)``, ``my.py:top_heavy(k=5)``.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from meta_eval.analyses._base import NEEDS, Analysis, AnalysisData, MemoryNeed
from meta_eval.analyses._result import Result
from meta_eval.analyses._containment import contain
from meta_eval.core.errors import InputError
from meta_eval.core.params import Param, did_you_mean, parse_value
from meta_eval.core.progress import CostModel

__all__ = ["analyses", "analysis", "builtin_modules", "builtin_names", "dependency_order", "get_analysis",
           "parse_analysis"]

_PACKAGE = Path(__file__).resolve().parent
_ANALYSES: dict[str, Analysis] = {}
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def builtin_names() -> list[str]:
    """The built-in analyses' command names, from a listing of this package's folder (nothing read or imported): a
    module whose name has no leading underscore is one, ``split_half.py`` is ``split-half``."""
    return [info.name.replace("_", "-") for info, _ in _builtin_files()]


def builtin_modules() -> dict[str, str]:
    """The built-in analyses without importing them: command name -> its ``summary`` (what ``meta-eval --help``
    lists), read from the module's source (parsing the 28 sources costs 0.05 s: :func:`builtin_names` when the
    names suffice)."""
    return {info.name.replace("_", "-"): _declared_summary(ast.parse(path.read_text(encoding="utf-8")))
            for info, path in _builtin_files()}


def _builtin_files() -> list[tuple[pkgutil.ModuleInfo, Path]]:
    """The modules of this package whose names have no leading underscore, and their source files, by name (a
    listing of the folder: nothing is read or imported)."""
    return [(info, _PACKAGE / (f"{info.name}/__init__.py" if info.ispkg else f"{info.name}.py"))
            for info in sorted(pkgutil.iter_modules([str(_PACKAGE)]), key=lambda i: i.name)
            if not info.name.startswith("_")]


def _declared_summary(tree: ast.Module) -> str:
    """The ``summary=`` of the module's ``@analysis(...)``, else the first line of its run function's docstring."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef):
            continue
        for deco in node.decorator_list:
            if isinstance(deco, ast.Call) and getattr(deco.func, "id", None) == "analysis":
                for kw in deco.keywords:
                    if kw.arg == "summary" and isinstance(kw.value, ast.Constant):
                        return str(kw.value.value)
                return (ast.get_docstring(node) or "").strip().split("\n")[0]
    return ""


def analysis(name: str, *, title: str, params: Sequence[Param] = (), requires: Sequence[str] = (),
             after: Sequence[str] = (), summary: str = "", needs: str = "collection", order: int = 100,
             measures: Sequence[str] | None = None, enabled: Callable[[Mapping[str, Any]], bool] | None = None,
             memory: Callable[[AnalysisData, Mapping[str, Any]], list[MemoryNeed]] | None = None,
             prepare: Callable[[], Any] | None = None, files: Sequence[str] = (), standardised: bool = False,
             parallel: bool = False, quick: Mapping[str, Any] | None = None,
             before: Callable[[Mapping[str, Any]], Any] | None = None, min_measures: int = 1,
             cost: CostModel | None = None, applies: Callable[[AnalysisData], str | None] | None = None
             ) -> Callable[[Callable[..., Result]], Analysis]:
    """Declare an analysis: decorate its ``run(data, **params) -> Result`` function.

    The decorated name becomes the :class:`Analysis` declaration (its fields are documented there). meta-eval's
    own analyses join the registry; a user's (a notebook, a plug-in file) stay apart — hand the declaration to
    :func:`meta_eval.orchestration.study.run_study` (``StudyOptions(analyses=[...])``) or name it ``file.py:NAME``.

    Examples
    --------
    >>> from meta_eval.analyses import Param, Result, analysis
    >>> @analysis("mean-gap", title="Gap between the best and the worst system", needs="scores",
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
    for param in declared:  # a default outside its own domain failed every use, after the work before it
        param.validate(param.default, f"analysis {name}", kind="the default of parameter")
    if not isinstance(min_measures, int) or min_measures < 1:
        raise InputError(f"analysis {name}: min_measures={min_measures!r}; allowed: an integer >= 1")
    if needs not in NEEDS:
        raise InputError(f"analysis {name}: needs={needs!r}; allowed: {', '.join(NEEDS)}")
    unknown = [f for f in files if f not in names]
    if unknown:
        raise InputError(f"analysis {name}: files names undeclared parameters {unknown}")

    def decorate(run: Callable[..., Result]) -> Analysis:
        decl = Analysis(name, title, run, declared, tuple(requires), tuple(after),
                        summary or (run.__doc__ or title).strip().split("\n")[0], needs, order,
                        tuple(measures) if measures is not None else None, enabled, memory, prepare, tuple(files),
                        standardised, parallel, dict(quick or {}), before, min_measures, cost=cost,
                        applies=applies)
        module = str(getattr(run, "__module__", ""))
        if module.startswith(f"{__package__}."):
            _register(decl, module)
        return decl

    return decorate


def _register(decl: Analysis, module: str) -> None:
    """Add a built-in analysis: its name must be its module's (``split_half`` -> ``split-half``), so the command
    list (:func:`builtin_modules`) names it without importing it."""
    expected = module.split(".")[2].replace("_", "-")
    if decl.name != expected:
        raise InputError(f"analysis {decl.name!r} is declared in meta_eval.analyses.{module.split('.')[2]}: a built-in "
                         f"analysis is named after its module ({expected!r})")
    known = _ANALYSES.get(decl.name)
    if known is not None and known.run.__module__ != decl.run.__module__:
        raise InputError(f"analysis {decl.name!r} is declared twice ({known.run.__module__}, {decl.run.__module__})")
    _ANALYSES[decl.name] = decl


def _load_builtins() -> None:
    """Import every built-in analysis module (those imported already cost a dictionary lookup)."""
    for info, _ in _builtin_files():
        importlib.import_module(f"{__package__}.{info.name}")


def analyses() -> list[Analysis]:
    """Every built-in analysis, in the report's order (its declared ``order``, then its name)."""
    _load_builtins()
    return sorted(_ANALYSES.values(), key=lambda a: (a.order, a.name))


def get_analysis(name: str) -> Analysis:
    """The built-in analysis ``name`` (InputError with "did you mean" for an unknown one)."""
    _load_builtins()
    if name in _ANALYSES:
        return _ANALYSES[name]
    close = did_you_mean(name, list(_ANALYSES))
    raise InputError(f"unknown analysis {name!r}" + (f"; did you mean {close}?" if close else "")
                     + f" (analyses: {', '.join(sorted(_ANALYSES))}; a plug-in is named file.py:NAME or module:NAME)")


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
    name, pairs, cut = split_name(plugin.attr if plugin is not None else text, what="analysis")
    if cut is not None:
        raise InputError(f"analysis {text!r}: an analysis takes no @cutoff")
    decl = _load_plugin(plugin, name.strip(), text) if plugin is not None else get_analysis(name.strip())
    return decl, _values(decl, pairs, text)


def _values(decl: Analysis, pairs: list[tuple[str, str]], text: str) -> dict[str, Any]:
    from meta_eval.measures.registry import split_top_level

    where = f"analysis {text}"
    out: dict[str, Any] = {}
    for key, value in pairs:
        param = decl.param(key)
        if key in out:
            raise InputError(f"{where}: parameter {key} is given twice")
        parts = [v.strip() for v in split_top_level(value)] if param.many else [value]
        parsed = tuple(parse_value(param, v, where) if param.parse is not str else v for v in parts)
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
    if found.name in builtin_names():
        raise InputError(f"analysis plug-in {text} is named {found.name!r}, the name of a built-in analysis: a "
                         "plug-in never replaces one — rename it")
    return contain(found, loaded.label)


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
