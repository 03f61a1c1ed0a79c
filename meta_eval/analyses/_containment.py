"""A plug-in analysis's code, contained, and every result's outputs checked before anything is written.

A plug-in analysis is the user's code at six points: ``run``, ``enabled``, ``memory``, ``prepare``, ``before`` (its
declaration's callables) and the result's ``tables()``, ``findings()``, ``figures()`` and each figure's ``draw()``.
Whatever it raises there — an ``Exception``, ``SystemExit``, ``GeneratorExit`` or its own ``BaseException`` subclass —
becomes one :class:`~meta_eval.core.errors.InputError` naming the plug-in, the method and the line of the user's file
it failed on; a ``KeyboardInterrupt`` stays one (the user's Ctrl-C), as does a SIGTERM
(:class:`~meta_eval.core.errors.Terminated`), and meta-eval's own errors pass unchanged. The declaration's callables
are wrapped once, when the plug-in is loaded (:func:`contain`), so no caller can forget.

What a result returns is checked for every analysis, built-in or not (:func:`checked`): lists of
:class:`~meta_eval.analyses._result.TableOutput`, :class:`~meta_eval.rendering.findings.Finding` and
:class:`~meta_eval.analyses._result.FigureOutput`; file stems that are plain file names and distinct; a ``draw()``
that returns a matplotlib figure. They are computed once, here, and the writers read the checked lists
(:attr:`Result.outputs`, :attr:`Result.figure_outputs`, :attr:`Result.finding_list`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from meta_eval.core.errors import InputError, MetaEvalError, Terminated

if TYPE_CHECKING:  # pragma: no cover
    from meta_eval.analyses._result import Result

#: A table's or figure's file stem: a plain file name (no folder, no leading dot), short enough for any file system
#: with its longest suffix and the result folder's temporary twin.
STEM = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_CALLABLES = ("run", "enabled", "memory", "prepare", "before")
_PUBLIC = {"Finding": "meta_eval.rendering.findings.Finding, made by Quoter.finding"}


def contained(label: str, what: str, func: Callable) -> Callable:
    """``func`` whose failures are an :class:`InputError` ``analysis plug-in LABEL: WHAT raised TYPE: TEXT at
    FILE:LINE``."""
    from meta_eval.measures.plugins import describe_failure, threads_noted

    @functools.wraps(func)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            with threads_noted():
                return func(*args, **kwargs)
        except (KeyboardInterrupt, Terminated, MetaEvalError):  # Ctrl-C, SIGTERM, meta-eval's own errors
            raise
        except BaseException as exc:  # noqa: BLE001 - the user's code: SystemExit and GeneratorExit included
            raise InputError(f"analysis plug-in {label}: {what} {describe_failure(exc)}") from exc

    call.contained = True  # type: ignore[attr-defined]
    return call


def contain(decl: Any, label: str) -> Any:
    """The declaration (an :class:`~meta_eval.analyses._base.Analysis`) of a plug-in loaded from ``label``, each
    of its callables :func:`contained`."""
    named = f"{decl.name} ({label})"
    wrapped = {name: contained(named, f"{name}()", getattr(decl, name)) for name in _CALLABLES
               if getattr(decl, name) is not None and not getattr(getattr(decl, name), "contained", False)}
    return replace(decl, source=label, **wrapped)


def checked(decl: Any, result: Result) -> Result:
    """``result`` of the analysis ``decl`` with its tables, findings and figures computed once and checked
    (contained for a plug-in).

    Raises
    ------
    InputError
        A method that fails (plug-ins) or returns something else than documented, a stem that is not a plain file
        name, two outputs of one stem.
    """
    from meta_eval.analyses._result import FigureOutput, TableOutput
    from meta_eval.rendering.findings import Finding

    label = f"{decl.name} ({decl.source})" if decl.source else decl.name
    call = (lambda what, f: contained(label, what, f)) if decl.source else (lambda what, f: f)
    where = f"analysis {'plug-in ' if decl.source else ''}{label}"
    tables = _list_of(call("tables()", result.tables)(), TableOutput, f"{where}: tables()")
    findings = _list_of(call("findings()", result.findings)(), Finding, f"{where}: findings()")
    figures = _list_of(call("figures()", result.figures)(), FigureOutput, f"{where}: figures()")
    _check_stems([t.stem for t in tables], f"{where}: tables()")
    _check_stems([f.stem for f in figures], f"{where}: figures()")
    for t in tables:
        _check_table(t, f"{where}: table {t.stem!r}")
    figures = [replace(f, draw=_drawing(where, f, call)) for f in figures]
    vars(result).update(outputs=tables, finding_list=findings, figure_outputs=figures)
    return result


def _list_of(value: Any, kind: type, where: str) -> list:
    if not isinstance(value, (list, tuple)):
        raise InputError(f"{where} returned {type(value).__name__}; expected a list of {kind.__name__}")
    wrong = next((v for v in value if not isinstance(v, kind)), None)
    if wrong is not None:
        public = _PUBLIC.get(kind.__name__, f"meta_eval.analyses.{kind.__name__}")
        raise InputError(f"{where} returned a list holding {type(wrong).__name__} ({wrong!r:.60}); expected "
                         f"{kind.__name__} items ({public})")
    return list(value)


def _check_stems(stems: list, where: str) -> None:
    for stem in stems:
        if not isinstance(stem, str) or not STEM.fullmatch(stem):
            raise InputError(f"{where}: file stem {stem!r} is not a plain file name (letters, digits, '_', '.', '-'; "
                             "at most 100 characters, no folder)")
    twice = sorted({s for s in stems if stems.count(s) > 1})
    if twice:
        raise InputError(f"{where}: two outputs named {twice[0]!r}")


def _check_table(table: Any, where: str) -> None:
    import pandas as pd

    from meta_eval.rendering.paper_table import PaperTable

    if not isinstance(table.frame, pd.DataFrame):
        raise InputError(f"{where}: frame is {type(table.frame).__name__}, not a pandas DataFrame")
    if table.compact is not None and not isinstance(table.compact, PaperTable):
        raise InputError(f"{where}: compact is {type(table.compact).__name__}, not a PaperTable (or None)")
    if not isinstance(table.caption, str):
        raise InputError(f"{where}: caption is {type(table.caption).__name__}, not text")


def _drawing(where: str, figure: Any, call: Callable) -> Callable:
    draw = call(f"figure {figure.stem!r}: draw()", figure.draw)

    def drawn():
        from matplotlib.figure import Figure

        fig = draw()
        if not isinstance(fig, Figure):
            raise InputError(f"{where}: figure {figure.stem!r}: draw() returned {type(fig).__name__}; expected a "
                             "matplotlib Figure")
        return fig

    return drawn
