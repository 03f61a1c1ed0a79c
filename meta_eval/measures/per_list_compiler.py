"""A per-list metric compiled: one numba call over every list of a padded matrix (for :func:`meta_eval.per_list`).

A per-list plug-in ``f(grades, counts) -> float`` called from Python costs an interpreter round trip per list, and
one per rank when it is written as a loop down the ranking: on TREC-COVID's 1000-document lists some 300 µs a list,
against 3 µs for the same metric vectorised over :class:`~meta_eval.model.rankings.Rankings`. numba compiles most
such functions as they are written (loops, arithmetic, numpy on one list); :class:`CompiledLoop` calls the compiled
function on every list in one compiled loop, without the interpreter.

Whether its values may be used is the caller's decision (:mod:`meta_eval.measures.plugins` compares them with the
Python call's): numba's arithmetic is not always Python's — numpy sums floats pairwise and numba in order (the last
digit differs), numpy keeps ``int8`` arithmetic in ``int8`` (it wraps) and numba widens it, module globals are
frozen at compilation. Where the two could fail differently, the compiled call raises instead, so that the caller
can replay the lists in Python: the function is compiled with Python's error model (a division by zero raises
ZeroDivisionError, never inf) and with bounds checking (an index past a list raises IndexError instead of reading
memory).
"""

from __future__ import annotations

import types
import warnings
from typing import Callable

import numpy as np


class NotCompilable(Exception):
    """numba cannot compile the function for these arguments; the message says why, in one line."""


class CompiledLoop:
    """``f`` compiled, called on every list: ``loop(grades, lengths, counts)[i] = f(grades[i, :lengths[i]],
    counts[i])``.

    Parameters
    ----------
    func : callable
        ``f(grades, counts) -> number``: a plain Python function (or a numba dispatcher).

    Notes
    -----
    numba is imported on the first call, never before (it takes a third of a second). The loop is compiled once
    for each new combination of argument types (grade and count dtypes); a failure to compile is
    :class:`NotCompilable`, any other exception is the function's own, raised on some list.
    """

    def __init__(self, func: Callable):
        self.func = func
        self._loop = None

    def __call__(self, grades: np.ndarray, lengths: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Values of every list: ``grades`` (L, D) and ``counts`` (L, C) read-only and C-contiguous, ``lengths``
        (L,) int64 at most D."""
        out = np.empty(len(lengths), dtype=np.float64)
        loop = self._compiled((grades, lengths, counts, out))
        loop(grades, lengths, counts, out)
        return out

    def _compiled(self, args: tuple) -> Callable:
        """The loop compiled for the types of ``args`` (a no-op after the first time)."""
        try:
            import numba
            from numba.core.errors import NumbaWarning

            if self._loop is None:
                self._loop = _make_loop(self.func)
            with warnings.catch_warnings():  # numba's advice is about the user's code, which is compiled unasked
                warnings.simplefilter("ignore", NumbaWarning)
                self._loop.compile(tuple(numba.typeof(a) for a in args))
        except Exception as exc:  # noqa: BLE001 - numba's typing, lowering or unsupported-feature errors
            raise NotCompilable(_first_line(exc)) from None
        return self._loop


def _make_loop(func: Callable):
    """The numba loop calling ``func`` (compiled in turn, with its helpers, :func:`_njit`) on each list."""
    import numba
    from numba.core.dispatcher import Dispatcher

    inner = func if isinstance(func, Dispatcher) else _njit(func, {})

    @numba.njit(error_model="python")
    def loop(grades, lengths, counts, out):  # pragma: no cover - compiled; its values are checked by the tests
        for i in range(out.shape[0]):
            out[i] = inner(grades[i, :lengths[i]], counts[i])

    return loop


def _njit(func: Callable, done: dict):
    """``func`` for numba (bounds checked, Python's error model), with the plain Python functions it calls by global
    name — the helpers of a plug-in's module — compiled the same way, so that a metric split into functions
    compiles as a whole. ``done`` maps the functions already seen to their compiled form (recursion)."""
    import numba

    if not isinstance(func, types.FunctionType):
        return numba.njit(boundscheck=True, error_model="python")(func)
    if func in done:
        return done[func]
    helpers = {name: func.__globals__[name] for name in _global_names(func.__code__)
               if isinstance(func.__globals__.get(name), types.FunctionType)}
    if helpers:  # the same code, reading its helpers from a copy of its globals where they are compiled
        copy = types.FunctionType(func.__code__, dict(func.__globals__), func.__name__, func.__defaults__,
                                  func.__closure__)
        copy.__kwdefaults__, copy.__qualname__, copy.__module__ = func.__kwdefaults__, func.__qualname__, func.__module__
    else:
        copy = func
    done[func] = compiled = numba.njit(boundscheck=True, error_model="python")(copy)
    for name, helper in helpers.items():
        copy.__globals__[name] = _njit(helper, done)
    return compiled


def _global_names(code: types.CodeType) -> set[str]:
    """The names a code object and the code nested in it (comprehensions, inner functions) may read as globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _first_line(exc: BaseException) -> str:
    """numba's error in one line: its first line that says something (numba's messages start with a banner)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("Failed in nopython mode pipeline",
                                                            "During:", "File ", "<source"))]
    text = (useful or lines or [type(exc).__name__])[0]
    return f"{type(exc).__name__}: {text}"[:200]
