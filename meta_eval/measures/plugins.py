"""Metric plug-ins: a user's own metric, loaded from ``file.py:NAME`` or ``module:NAME``, in a namespace of its own.

Loading
    Only a specification with a colon loads code: ``path/to/file.py:function``, ``package.module:function``, or
    ``...:*`` for every metric the module registers with ``@meta_eval.register``; the part after the colon may give
    a registered plug-in's parameters and cutoff (``file.py:Hits@5``). A bare word (``AP``, ``this``) is only ever
    a measure name: nothing is imported. A file is executed from the bytes that are hashed for the cache key
    (:mod:`meta_eval.measures.fingerprint`); its folder is appended to ``sys.path`` so that it can import its
    neighbours. ``file.py`` alone, the old spelling of ``file.py:*``, still works with a FutureWarning.
Namespace
    A plug-in is named by its function (or the name it registers), which must not read as a built-in measure
    (case-insensitive: canonical names, aliases, trec_eval spellings): ``my.py:gap`` is refused, it could never be
    told from GAP. What a plug-in registers while it is imported stays with it (the built-in registry is never
    changed). :attr:`Measure.spec` (the absolute path or the module, and the name) rebuilds it in a worker process.
Contract, checked on every call (:func:`guarded`)
    A plug-in receives a :class:`~meta_eval.model.rankings.Rankings` whose ``grades``, ``n_ret`` and ``counts`` are
    read-only copies (so nothing it does can reach a built-in measure scored in the same pass), with a cache of its
    own; it returns one real, finite number per list: an array of exactly the leading shape ``r.shape`` (a
    :func:`per_list` function: one number for its list, whose ``grades`` and ``counts`` are read-only too). NaN is
    allowed only from a plug-in that declares when it is undefined (``@meta_eval.register(..., undefined="...")``);
    like the built-in RHL, such values are left out of the means. Anything else (an exception, a wrong shape,
    text, None, complex numbers, inf, a generator, a masked array) is a :class:`PluginError` naming the plug-in and
    the list: its run and topic where the caller knows them, else its grades.
What a plug-in raises
    Every exception, ``BaseException`` included (``SystemExit``, ``GeneratorExit``, a ``BaseException`` subclass
    of its own, a ``KeyboardInterrupt`` it raises itself), is contained as a :class:`PluginError` naming it, when
    the plug-in is imported and when it is called: a plug-in cannot end or silently stop a command. One exception
    is not the plug-in's: a ``KeyboardInterrupt`` from a real Ctrl-C (a SIGINT that arrived while the plug-in ran,
    :class:`InterruptWatch`) still interrupts the command (exit status 130). A plug-in that changes the working
    folder finds it put back when its code returns (:func:`folder_kept`).

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

import contextlib
import functools
import hashlib
import importlib
import importlib.util
import inspect
import numbers
import os
import re
import signal
import sys
import threading
import time
import traceback
import weakref
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

from meta_eval.core.errors import InputError, PluginError, Terminated
from meta_eval.core.params import did_you_mean, out_of_scale, scale_problem
from meta_eval.measures import registry
from meta_eval.measures.registry import (Family, Measure, PLUGIN_HINTS, bind_text, check_new_name, families,
                                         make_measure, name_taken, plugin_registrations, split_name)
from meta_eval.model.rankings import PAD, Rankings

# ------------------------------------------------------------------------------------------------------------
# The contract
# ------------------------------------------------------------------------------------------------------------


def _read_only(a) -> np.ndarray:
    """A read-only copy; its flag cannot be turned back on (a view of a read-only array)."""
    return _frozen(np.array(a, copy=True))


def _frozen(owned: np.ndarray) -> np.ndarray:
    """A read-only view of an array of our own (the view's flag cannot be turned back on)."""
    owned.flags.writeable = False
    return owned.view()


def read_only(r: Rankings) -> Rankings:
    """The rankings with read-only copies of ``grades``, ``n_ret``, ``counts`` and a cache of their own."""
    return Rankings(_read_only(r.grades), _read_only(r.n_ret), _read_only(r.counts), rel_level=r.rel_level)


def _describe(r: Rankings, index: tuple) -> str:
    """A list in words, for an error: its grades (the first 12), length and qrels counts."""
    grades = np.asarray(r.grades)[index]
    n = int(np.broadcast_to(r.n_ret, r.shape)[index])
    counts = np.broadcast_to(r.counts, r.shape + (r.counts.shape[-1],))[index]
    shown = ", ".join(str(int(g)) for g in grades[:min(n, 12)]) + (", ..." if n > 12 else "")
    return f"on the list of {n} document(s) with grades [{shown}] and qrels counts {counts.astype(int).tolist()}"


def _kind(value) -> str:
    if value is None:
        return "None"
    if isinstance(value, (str, bytes)):
        return f"the text {str(value)[:40]!r}"
    if inspect.isgenerator(value) or inspect.isasyncgen(value) or inspect.iscoroutine(value):
        return f"a {type(value).__name__}"
    return f"a {type(value).__name__}"


_FLOATS = {float, bool, np.float64, np.float32, np.int64, np.int32, np.bool_}  # float() of each is exact or rounds


def _as_real(value) -> "float | str":
    """One list's value as a float, or what is wrong with it."""
    if type(value) in _FLOATS:  # the common case, without an abstract-class check (a per-list loop is hot)
        return float(value)
    if isinstance(value, (numbers.Real, np.bool_)):  # Python and numpy numbers, Fraction...
        try:
            return float(value)
        except OverflowError:
            return "returned a number too large for a float"
    if isinstance(value, np.ndarray) and value.shape == () and value.dtype.kind in "biuf":
        return float(value)
    if isinstance(value, (complex, np.complexfloating)):
        return f"returned the complex number {value!r}; a metric value is real"
    return f"returned {_kind(value)}; a per-list metric returns one number"


def _as_values(out, shape: tuple) -> "np.ndarray | str":
    """A vectorised plug-in's result as a float64 array of ``shape``, or what is wrong with it."""
    if isinstance(out, np.ma.MaskedArray):
        return "returned a masked array; return plain numbers (and declare when the metric is undefined)"
    if out is None or isinstance(out, (str, bytes)) or inspect.isgenerator(out) or inspect.iscoroutine(out):
        return f"returned {_kind(out)}; a metric returns an array with one number per list, of shape {shape}"
    try:
        arr = np.asarray(out)
    except Exception as exc:  # noqa: BLE001 - ragged lists, objects that refuse conversion
        return f"returned {_kind(out)}, which is not an array of numbers ({type(exc).__name__}: {exc})"
    if arr.dtype.kind == "c":
        return "returned complex numbers; a metric value is real"
    if arr.dtype.kind not in "biuf":
        what = {"O": "Python objects (None, text or nested sequences)", "U": "text", "S": "bytes"}.get(
            arr.dtype.kind, f"values of type {arr.dtype}")
        return f"returned {what}; a metric returns numbers"
    if arr.shape != shape:
        scalar = " (one number for every list?)" if arr.shape == () else ""
        return (f"returned shape {arr.shape}{scalar}; a vectorised metric returns one value per list: an array of "
                f"r.shape = {shape} (decorate a function of one list with @meta_eval.per_list instead)")
    with np.errstate(over="ignore", invalid="ignore"):
        return arr.astype(np.float64)


class _Guard:
    """A plug-in's function held to the contract (module docstring); ``__wrapped__`` is the function."""

    def __init__(self, func: Callable, label: str, undefined: str = ""):
        self.label, self.undefined = label, undefined
        functools.update_wrapper(self, func)

    def __call__(self, r: Rankings, **params) -> np.ndarray:
        view = read_only(r)
        watch = InterruptWatch()
        try:
            # what a plug-in prints goes to stderr: on stdout it would end up inside `-o -` results (a CSV, JSON)
            with contextlib.redirect_stdout(sys.stderr), watch, folder_kept(), threads_noted():
                out = self.__wrapped__(view, **params)
        except PluginError as exc:  # a per-list function, which knows the list but not the plug-in's label
            index = exc.index
            raise PluginError(self.label, exc.problem, index, _describe(view, index) if index else "") from None
        except BaseException as exc:  # noqa: BLE001 - the user's code: report, never a traceback
            if watch.interrupted(exc):
                raise
            raise PluginError(self.label, describe_failure(exc)) from None
        values = _as_values(out, r.shape)
        if isinstance(values, str):
            raise PluginError(self.label, values)
        bad = ~np.isfinite(values)
        if bad.any():
            infinite = np.isinf(values)
            if infinite.any() or not self.undefined:
                index = tuple(int(i) for i in np.argwhere(infinite if infinite.any() else bad)[0])
                problem = (f"returned {values[index]} (infinite)" if infinite.any() else
                           "returned NaN, and does not declare when it is undefined (register it with "
                           "@meta_eval.register(name, undefined='when ...'): NaN is then left out of means)")
                raise PluginError(self.label, problem, index, _describe(view, index))
        at = out_of_scale(values)
        if at is not None:
            index = tuple(int(i) for i in np.unravel_index(at, values.shape))
            raise PluginError(self.label, f"returned {scale_problem(values.flat[at])}", index,
                              _describe(view, index))
        return values

    def __reduce__(self):
        return _Guard, (self.__wrapped__, self.label, self.undefined)


def guarded(func: Callable, label: str, undefined: str = "") -> Callable[..., np.ndarray]:
    """``func`` held to the plug-in contract: read-only inputs, one real finite value per list (NaN only where
    ``undefined`` says), every failure a :class:`PluginError` naming ``label``."""
    if isinstance(func, _Guard):
        func = func.__wrapped__
    return _Guard(func, label, undefined)


_WATCH = threading.local()  # per thread: the outermost InterruptWatch on, if any


class InterruptWatch:
    """While a plug-in runs (``with InterruptWatch() as watch:``), tell a real Ctrl-C from a ``KeyboardInterrupt``
    the plug-in raises itself (:meth:`interrupted`).

    In the main thread, with a Python-level SIGINT handler, the handler is wrapped for the duration to record that
    a SIGINT arrived (then it runs as before: Python's default raises KeyboardInterrupt), and put back afterwards
    (so a plug-in cannot keep a handler of its own either). Nested watches share the outermost one. Elsewhere no
    SIGINT can raise: signals reach only the main thread, and workers ignore SIGINT
    (:func:`meta_eval.core.parallel.init_worker`)."""

    def __init__(self) -> None:
        self.sigint = False
        self._outer: InterruptWatch | None = None
        self._previous = None

    def __enter__(self) -> "InterruptWatch":
        self._outer = getattr(_WATCH, "current", None)
        if self._outer is None:
            handler = signal.getsignal(signal.SIGINT) if _in_main_thread() else None
            if callable(handler):
                def recording(signum, frame):
                    self.sigint = True
                    return handler(signum, frame)

                self._previous = signal.signal(signal.SIGINT, recording)
            _WATCH.current = self
        return self

    def __exit__(self, *exc_info) -> None:
        if self._outer is None:
            _WATCH.current = None
            if self._previous is not None:
                signal.signal(signal.SIGINT, self._previous)

    def interrupted(self, exc: BaseException) -> bool:
        """Whether ``exc`` is the user's Ctrl-C or a SIGTERM (to let through) rather than the plug-in's own (to
        contain)."""
        if isinstance(exc, Terminated):
            return True
        return isinstance(exc, KeyboardInterrupt) and _in_main_thread() and (self._outer or self).sigint


@contextlib.contextmanager
def folder_kept():
    """Run a plug-in's code and put the working folder back as it was: a plug-in that changes it (``os.chdir``)
    would move every relative path read or written after it — the runs, the qrels, ``-o out.csv``."""
    try:
        before = os.getcwd()
    except OSError:  # the working folder was removed: there is nothing to put back
        yield
        return
    try:
        yield
    finally:
        try:
            changed = os.getcwd() != before
        except OSError:
            changed = True
        if changed:
            os.chdir(before)


#: The threads a plug-in's code started (:func:`threads_noted`).
_STARTED: "weakref.WeakSet[threading.Thread]" = weakref.WeakSet()


@contextlib.contextmanager
def threads_noted():
    """Run a plug-in's code and note the threads it starts (:func:`threads_left`)."""
    before = set(threading.enumerate())
    try:
        yield
    finally:
        _STARTED.update(t for t in threading.enumerate() if t not in before)


def threads_left() -> list[threading.Thread]:
    """The threads a plug-in's code started that still run and that the interpreter's exit would wait for (not
    daemons): a command does not wait for them once its work is done (:func:`meta_eval.cli.app.run`)."""
    return [t for t in _STARTED if t.is_alive() and not t.daemon]


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def is_interruption(exc: BaseException) -> bool:
    """:meth:`InterruptWatch.interrupted` of the watch on in this thread; with none, a KeyboardInterrupt in the main
    thread that a SIGINT handler could have raised counts as the user's (when in doubt, let Ctrl-C interrupt)."""
    watch = getattr(_WATCH, "current", None)
    if watch is not None:
        return watch.interrupted(exc)
    if isinstance(exc, Terminated):
        return True
    return isinstance(exc, KeyboardInterrupt) and _in_main_thread() and callable(signal.getsignal(signal.SIGINT))


def describe_failure(exc: BaseException) -> str:
    """What an exception raised by a plug-in says, and where in its code."""
    text = f"raised {type(exc).__name__}" + (f": {exc}" if str(exc) else "")
    if isinstance(exc, ValueError) and ("read-only" in str(exc) or "WRITEABLE" in str(exc)):
        text += " (plug-ins receive read-only arrays: copy one before changing it, e.g. g = r.grades.copy())"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _users(f.filename)]
    if frames:
        text += f" at {frames[-1].filename}:{frames[-1].lineno}"
    return text


def _users(filename: str) -> bool:
    """Whether a traceback frame is in the user's code (not meta-eval's, the standard library's or a package's)."""
    from meta_eval.measures.fingerprint import _system_roots

    path = Path(filename)
    return path.is_absolute() and not path.is_relative_to(_OWN_FOLDER) and \
        not any(path.is_relative_to(root) for root in _system_roots())


_OWN_FOLDER = Path(__file__).resolve().parent.parent


#: Python time (thread CPU seconds, spent and about to be spent) after which a per-list function is compiled: about
#: what compiling it costs, so that compiling pays for itself before it is tried (a function scored on a few lists
#: never imports numba) and a slow function costs at most about twice its compiled time.
COMPILE_AFTER_S = 1.0
#: Lists timed in Python on the first call, before anything is decided.
PROBE_LISTS = 256
#: Lists whose compiled value is compared with the Python call's: in the first compiled calls, then in every call.
VERIFY_FIRST, VERIFY_EACH = 64, 2


def per_list(func: Callable[[np.ndarray, np.ndarray], float]) -> Callable[[Rankings], np.ndarray]:
    """Vectorise a metric written for one list: ``func(grades, counts) -> float``.

    ``grades`` holds the grades of the retrieved documents in rank order (-1 unjudged, -2 negative judgment; no
    padding), ``counts`` the judged documents per grade of the topic; both are read-only. ``func`` must be a
    function of these two arguments alone (no state carried from one list to the next, no global that changes):
    it may be called on the lists in any order, some of them twice, and it may be compiled. A list whose function
    raises or returns something other than a real number is a :class:`PluginError` for that list.

    How it runs (:class:`_PerList`): the first lists in Python, one call a list, timed; once the Python calls have
    cost, or are about to cost, :data:`COMPILE_AFTER_S` (about what compiling costs), the function is compiled
    with numba and called on every list in one compiled loop (:mod:`meta_eval.measures.per_list_compiler`: a loop
    down a 1000-document list then costs about what a vectorised metric does, not a hundred times more). The
    compiled values are used only while they equal the Python call's to the last bit on the lists checked in
    every call (:data:`VERIFY_FIRST` lists, then :data:`VERIFY_EACH` a call and the longest). A function numba cannot compile,
    whose compiled values differ (numba sums floats in order where numpy sums pairwise, widens ``int8``
    arithmetic, freezes module globals) or that raises only when compiled stays in Python, with one line on
    stderr saying why and how to make it fast: write it vectorised over :class:`Rankings`.
    """
    evaluator = _PerList(func)

    @functools.wraps(func)
    def vectorised(r: Rankings) -> np.ndarray:
        return evaluator(r)

    vectorised.per_list = func  # type: ignore[attr-defined]
    vectorised.evaluator = evaluator  # type: ignore[attr-defined]
    return vectorised


@dataclass(frozen=True)
class _Lists:
    """The lists of a :class:`Rankings` as a per-list function sees them: list i is ``grades[i, :lengths[i]]``
    (``grades`` a read-only copy, C-contiguous), its topic's counts ``counts[i]`` (read-only); ``shape`` the
    leading shape the values return to."""

    grades: np.ndarray
    lengths: np.ndarray
    counts: np.ndarray
    shape: tuple

    @classmethod
    def of(cls, r: Rankings) -> "_Lists":
        """Each list is ``g[:n][g[:n] != PAD]`` of its padded row ``g`` and length ``n`` (Python's slice: a
        negative ``n`` counts from the end), left-aligned; rows with PAD inside the list (never made by meta-eval)
        are compacted."""
        n_lists, depth = int(np.prod(r.shape, dtype=np.int64)), r.depth
        grades = np.array(np.asarray(r.grades).reshape(n_lists, depth), order="C")  # our copy
        n = np.broadcast_to(r.n_ret, r.shape).reshape(n_lists).astype(np.int64)
        stop = np.where(n < 0, np.maximum(depth + n, 0), np.minimum(n, depth))
        pad = grades == PAD
        first_pad = np.where(pad.any(axis=-1), pad.argmax(axis=-1), depth)
        if (first_pad < stop).any():
            kept = ~pad & (np.arange(depth) < stop[:, None])
            grades = np.take_along_axis(grades, np.argsort(~kept, axis=-1, kind="stable"), axis=-1)
            stop = kept.sum(axis=-1).astype(np.int64)
        width = r.counts.shape[-1]
        counts = np.array(np.broadcast_to(r.counts, r.shape + (width,)).reshape(n_lists, width), order="C")
        return cls(_frozen(grades), stop, _frozen(counts), r.shape)

    def __len__(self) -> int:
        return len(self.lengths)


class _PerList:
    """How one per-list function is evaluated (:func:`per_list`): in Python, list by list, until that costs about
    what compiling it would; then by its compiled loop, whose values are used only while they equal the Python
    call's on the lists checked; in Python for good (with one line on stderr) when they do not.

    Attributes
    ----------
    compiled : CompiledLoop or None
        The compiled loop, once compiling pays.
    python_only : str
        Why the function stays in Python ("" until that is decided).
    python_seconds, python_lists : float, int
        Thread CPU time spent in Python calls, and the lists they evaluated.
    """

    def __init__(self, func: Callable):
        self.func = func
        self.compiled = None
        self.python_only = ""
        self.python_seconds, self.python_lists, self.verified = 0.0, 0, 0

    def __reduce__(self):  # a worker process decides afresh
        return _PerList, (self.func,)

    def __call__(self, r: Rankings) -> np.ndarray:
        lists = _Lists.of(r)
        out = np.empty(len(lists), dtype=np.float64)
        done = 0
        if self.compiled is None and not self.python_only:
            if self.python_lists < PROBE_LISTS:  # the first lists tell what a Python call costs
                done = self._python(lists, out, range(min(len(lists), PROBE_LISTS - self.python_lists)))
            if done < len(lists) and self._compiling_pays(len(lists) - done):
                from meta_eval.measures.per_list_compiler import CompiledLoop

                self.compiled = CompiledLoop(self.func)
        if done < len(lists) and (self.compiled is None or not self._compiled(lists, out, done)):
            self._python(lists, out, range(done, len(lists)))
        return out.reshape(lists.shape)

    def _compiling_pays(self, remaining: int) -> bool:
        """Whether the Python calls spent and those ``remaining`` would cost :data:`COMPILE_AFTER_S`."""
        return self.python_seconds * (1 + remaining / max(self.python_lists, 1)) >= COMPILE_AFTER_S

    def _python(self, lists: _Lists, out: np.ndarray, positions: range | np.ndarray) -> int:
        """``out[i]`` for the lists at ``positions`` by one Python call each (timed); returns the number of lists."""
        func, grades, counts, shape = self.func, lists.grades, lists.counts, lists.shape
        positions = np.asarray(positions, dtype=np.int64)
        began = time.thread_time()
        for i, n in zip(positions.tolist(), lists.lengths[positions].tolist()):
            try:
                value = func(grades[i, :n], counts[i])  # views of read-only arrays are read-only
            except BaseException as exc:  # noqa: BLE001 - the user's code (module docstring)
                if is_interruption(exc):
                    raise
                raise PluginError(func.__name__, describe_failure(exc), _position(i, shape)) from None
            value = _as_real(value)
            if isinstance(value, str):
                raise PluginError(func.__name__, value, _position(i, shape))
            out[i] = value
        self.python_seconds += time.thread_time() - began
        self.python_lists += len(positions)
        return len(positions)

    def _compiled(self, lists: _Lists, out: np.ndarray, start: int) -> bool:
        """``out[start:]`` by the compiled loop, checked against Python calls; False when it is not to be used (the
        caller evaluates the lists in Python)."""
        from meta_eval.measures.per_list_compiler import NotCompilable

        rest = slice(start, len(lists))
        try:
            values = self.compiled(lists.grades[rest], lists.lengths[rest], lists.counts[rest])
        except NotCompilable as exc:
            return self._settle(lists, f"numba cannot compile it ({exc})")
        except Exception as exc:  # noqa: BLE001 - raised on some list: Python says which, and how
            self._python(lists, out, range(start, len(lists)))  # raises the list's PluginError if Python fails too
            return self._settle(lists, f"compiled, it raises {type(exc).__name__} where Python returns a value", True)
        checked = start + self._checked(lists.lengths[rest])
        expected = np.empty(len(lists))
        try:
            self._python(lists, expected, checked)
        except PluginError:
            self._settle(lists, "compiled, it returns a value where Python fails")
            self._python(lists, out, range(start, len(lists)))  # the first list that fails, in order
            raise
        if not _same_floats(expected[checked], values[checked - start]):
            return self._settle(lists, "its compiled values differ from Python's (numba's arithmetic is not numpy's: "
                                "it sums floats in order, widens int8, freezes module globals)")
        self.verified += len(checked)
        out[rest] = values
        return True

    def _checked(self, lengths: np.ndarray) -> np.ndarray:
        """Positions of the lists whose compiled values are checked in this call: the longest, and others spread
        over the call, moving from call to call."""
        k = min(len(lengths), VERIFY_FIRST if self.verified < VERIFY_FIRST else VERIFY_EACH)
        spread = (np.arange(k) * len(lengths) // max(k, 1) + self.verified) % len(lengths)
        return np.unique(np.r_[spread, np.argmax(lengths)]).astype(np.int64)

    def _settle(self, lists: _Lists, reason: str, filled: bool = False) -> bool:
        """Python from now on, because of ``reason``; one line on stderr when that is slow (the Python calls cost
        more than twice a vectorised metric on the same lists), once, from the main process (a worker's line
        would repeat it). Returns ``filled``: whether the caller's values are complete."""
        import multiprocessing

        self.compiled, self.python_only = None, reason
        per_list_s = self.python_seconds / max(self.python_lists, 1)
        yardstick = _vectorised_seconds(lists.grades)
        factor = per_list_s / yardstick if yardstick > 0 else float("inf")
        if factor > 2 and multiprocessing.parent_process() is None:
            times = f", about {factor:.0f}x a vectorised metric" if np.isfinite(factor) else ""
            print(f"meta-eval: per-list plug-in {self.func.__name__} runs in Python, one call a list "
                  f"({per_list_s * 1e6:.0f} µs a list{times}): {reason}; for speed, write it vectorised over "
                  "me.Rankings (README, Plug-ins)", file=sys.stderr)
        return filled


def _vectorised_seconds(grades: np.ndarray) -> float:
    """Thread CPU seconds a list that a vectorised metric (RBP's passes: gains, rank weights, a sum) takes on these
    lists: the yardstick of the warning of :meth:`_PerList._settle`."""
    sample = grades[:4096]
    began = time.thread_time()
    (np.maximum(sample, 0) * 0.8 ** np.arange(sample.shape[-1])).sum(axis=-1)
    return (time.thread_time() - began) / max(len(sample), 1)


def _same_floats(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal to the last bit (so 0.0 is not -0.0), NaN equal to NaN whatever its payload."""
    return bool(((a.view(np.uint64) == b.view(np.uint64)) | (np.isnan(a) & np.isnan(b))).all())


def _position(flat: int, shape: tuple) -> tuple[int, ...]:
    return tuple(int(k) for k in np.unravel_index(flat, shape))


# ------------------------------------------------------------------------------------------------------------
# Measures from callables
# ------------------------------------------------------------------------------------------------------------


def register(name: str, **declaration) -> Callable[[Callable], Callable]:
    """Decorator registering a user's vectorised measure function under ``name`` (``meta_eval.register``).

    The declaration is :func:`meta_eval.measures.registry.register`'s (``params``, ``cutoff``, ``aliases``,
    ``undefined``, ``input`` ...); a function from outside meta-eval that joins the built-in namespace is held to
    the plug-in contract (:func:`guarded`). Imported as a plug-in (``file.py:NAME``, ``module:NAME``), the
    function stays in the plug-in's namespace, and :func:`load` holds it to the contract.

    Examples
    --------
    >>> import meta_eval as me
    >>> @me.register("HitsDoc", cutoff=me.Param("k", 10, int, "rank cutoff", within="[1, inf)"))
    ... def hits(r, k):
    ...     return r.count_at(r.cum_relevant(), k)
    >>> float(me.get_measure("HitsDoc@2")(me.Rankings.from_lists([[1, 0, 1]]))[0])
    1.0
    """
    return registry.register(name, contract=guarded, **declaration)


def metric_from_callable(func: Callable, name: str | None = None) -> Measure:
    """The measure of a callable over :class:`Rankings` (or a :func:`per_list` function), held to the plug-in
    contract. It is not registered: it stays apart from the built-in names, which it may not take.

    Raises
    ------
    InputError
        No usable name (a lambda without ``name=``), or the name is a built-in measure's.
    """
    for fam in families():
        if fam.func is func or getattr(fam.func, "__wrapped__", None) is func:
            return make_measure(fam.name)  # registered with @meta_eval.register in this process
    name = name or getattr(func, "__name__", None)
    if not name or name == "<lambda>":
        raise InputError("a metric needs a name: pass name=... for a lambda")
    if not callable(func):
        raise InputError(f"metric {name!r} is not callable")
    check_new_name(name, "metric")
    _refuse_builtin_name(name, f"metric {name!r}")
    description = (func.__doc__ or name).strip().splitlines()[0] if (func.__doc__ or name).strip() else name
    return Measure(Family(name, guarded(func, name), description=description))


def _refuse_builtin_name(name: str, what: str) -> None:
    taken = name_taken(name)
    if taken:
        raise InputError(f"{what} is named {name!r}, which is {taken}: a plug-in never replaces or shadows a "
                         "built-in measure — rename it (e.g. my_" + name.lower() + ")")


# ------------------------------------------------------------------------------------------------------------
# Loading
# ------------------------------------------------------------------------------------------------------------

# target: a file ending in .py or a dotted module path; the part after the last such colon: *, or a name with
# optional (parameters) and @cutoff (parameters may hold colons: gain maps)
_SPEC = re.compile(r"^(?P<target>.+?):(?P<attr>\*|[^\s:()@,=]+(?:\(.*\))?(?:@[^:@()\s]+)?)$", re.DOTALL)
_MODULE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


@dataclass(frozen=True)
class PluginSpec:
    """A parsed plug-in specification: ``kind`` "file" or "module", the ``target`` as written, ``attr``."""

    kind: str
    target: str
    attr: str


def parse_spec(text: str) -> PluginSpec | None:
    """The plug-in a specification names, or None if it is a measure name (which never loads code)."""
    match = _SPEC.match(text.strip())
    if match is None:
        return None
    target, attr = match["target"].strip(), match["attr"]
    if target.endswith(".py"):
        return PluginSpec("file", target, attr)
    if _MODULE.match(target):
        return PluginSpec("module", target, attr)
    return None


@dataclass
class _Module:
    """A loaded plug-in module: what it registered (in order), its code fingerprint, its families made so far."""

    module: object
    label: str  # the target as specs name it: absolute path of a file, or the module
    shown: str  # the target in messages
    digest: str  # sha256 of the file executed ("" for a module)
    registered: dict = field(default_factory=dict)  # lower name or alias -> Family (raw)
    order: list = field(default_factory=list)  # registered families in order
    fingerprint: str | None = None
    closure: object = None  # meta_eval.measures.fingerprint.Closure of its code
    unkeyable: str = ""
    made: dict = field(default_factory=dict)  # name -> plug-in Family


_LOCK = threading.RLock()
_FILES: dict[Path, _Module] = {}
_MODULES: dict[str, _Module] = {}
_CAPTURED: dict[str, dict] = {}  # module name -> {name: (family, aliases)} it registered while a plug-in was imported


def any_loaded() -> bool:
    """Whether this process has run a plug-in's code (a file or a module named in a specification)."""
    return bool(_FILES or _MODULES)


def load(spec: PluginSpec) -> list[Measure]:
    """The measures a plug-in specification names (module docstring).

    Raises
    ------
    InputError
        The file is missing or not a regular file, the module cannot be imported (with the error and its line),
        the name is unknown, a built-in measure's, or given parameters it does not declare.
    """
    with _LOCK:
        loaded = load_code(spec)
        if spec.attr == "*":
            if not loaded.order:
                raise InputError(f"{loaded.shown} registers no metric (decorate functions with "
                                 f"@meta_eval.register, or name one: {loaded.shown}:FUNCTION)")
            return [_measure(loaded, fam.name, [], None, f"{loaded.shown}:{fam.name}") for fam in loaded.order]
        name, pairs, cut = split_name(spec.attr)
        return [_measure(loaded, name.strip(), pairs, cut, f"{loaded.shown}:{spec.attr}")]


def load_code(spec: PluginSpec, what: str = "metric plug-in") -> _Module:
    """The loaded module of a plug-in specification (imported once, again when its code changed); ``what`` names
    the kind of plug-in in messages (analysis plug-ins, :mod:`meta_eval.analyses._registry`, load the same way)."""
    with _LOCK:
        return _load_file(spec.target, what) if spec.kind == "file" else _load_module(spec.target, what)


def _measure(loaded: _Module, name: str, pairs, cut, where: str) -> Measure:
    fam = loaded.registered.get(name.lower())
    if fam is None:
        obj = getattr(loaded.module, name, None)
        if obj is None or not callable(obj) or isinstance(obj, type):
            known = [f.name for f in loaded.order] + [k for k, v in vars(loaded.module).items()
                                                      if inspect.isfunction(v) and not k.startswith("_")]
            close = did_you_mean(name, known)
            raise InputError(f"{loaded.shown} has no metric or function named {name!r}"
                             + (f"; did you mean {close}?" if close else ""))
        registered = next((f for f in loaded.order if f.func is obj), None)
        if registered is not None:
            fam = registered
        else:
            if pairs or cut is not None:
                raise InputError(f"{where}: {name} is a plain function, which takes no parameters (declare them "
                                 "with @meta_eval.register)")
            doc = (getattr(obj, "__doc__", None) or "").strip()
            fam = Family(name, obj, description=doc.splitlines()[0] if doc else name)
    if any(fam is f for f in families()):  # imported before, outside a plug-in: it is in the built-in namespace already
        return bind_text(fam, pairs, cut, where)
    made = loaded.made.get(fam.name)
    if made is None:
        check_new_name(fam.name, where)
        _refuse_builtin_name(fam.name, f"metric plug-in {where}")
        made = replace(fam, func=guarded(fam.func, f"{loaded.shown}:{fam.name}", fam.undefined), source=loaded.label)
        loaded.made[fam.name] = made
        PLUGIN_HINTS[fam.name.lower()] = f"{loaded.shown}:{fam.name}"
    measure = bind_text(made, pairs, cut, where)
    return replace(measure, origin=f"{loaded.label}:{measure.name}")  # how a worker process loads it again


def _shown(path: Path) -> str:
    """A plug-in file as messages name it: relative to the working folder when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _load_file(target: str, what: str = "metric plug-in") -> _Module:
    path = Path(target).expanduser().resolve()
    if not path.exists():
        raise InputError(f"{what} file not found", str(path))
    if not path.is_file():
        raise InputError(f"{what} is not a regular file", str(path))
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the {what}: {exc.strerror or exc}", str(path)) from None
    digest = hashlib.sha256(source).hexdigest()
    known = _FILES.get(path)
    if known is not None and known.digest == digest and not _stale(known):
        return known
    stem = re.sub(r"\W", "_", path.stem)
    name = f"meta_eval_plugin_{stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.append(folder)  # its neighbours can be imported (appended: it never shadows an installed module)
    sys.modules[name] = module
    watch = InterruptWatch()
    try:
        with plugin_registrations() as found, watch, folder_kept(), threads_noted():
            exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 - the user's plug-in is code
    except BaseException as exc:  # noqa: BLE001 - the user's code: report where, never a traceback
        sys.modules.pop(name, None)
        if watch.interrupted(exc):
            raise
        line = _line_in(exc, path)
        raise InputError(f"cannot import {what}: {type(exc).__name__}: {exc}", str(path), line) from None
    loaded = _Module(module, str(path), _shown(path), digest)
    _record(loaded, found, name)
    _fingerprint(loaded, name, path, "", "<plug-in>")
    _check_neighbours(loaded, path.parent, what)
    _FILES[path] = loaded
    return loaded


def _check_neighbours(loaded: _Module, folder: Path, what: str = "metric plug-in") -> None:
    """Refuse a plug-in whose neighbour module (``import helpers`` with ``helpers.py`` beside it) was taken from
    another folder: a module of that name was imported first (another plug-in's), so the plug-in would run code
    that is not its own."""
    for module, (file, _) in (loaded.closure.files.items() if loaded.closure is not None else ()):
        top = module.split(".")[0]
        own = folder / f"{top}.py" if (folder / f"{top}.py").is_file() else folder / top / "__init__.py"
        if module != "<plug-in>" and own.is_file() and not Path(file).is_relative_to(folder):
            raise InputError(f"{what} {loaded.shown} imports {top!r}, which is {own}, but a module of that "
                             f"name was imported before from {Path(file).parent} and is used instead; rename one "
                             "of the two")


def _fingerprint(loaded: _Module, name: str, path: Path, package: str, label: str | None) -> None:
    """Hash the plug-in's code right after it ran (:mod:`meta_eval.measures.fingerprint`), and record its files as
    inputs of the command (:mod:`meta_eval.core.file_identity`: no output may replace them)."""
    from meta_eval.core.file_identity import record_inputs
    from meta_eval.measures.fingerprint import closure

    try:
        loaded.closure = closure(name, path, package, root_label=label)
        loaded.fingerprint = loaded.closure.digest
    except OSError as exc:  # a neighbour vanished in between: the plug-in works, its results are not cached
        loaded.unkeyable = f"its code could not be read whole ({exc})"
    record_inputs([path, *(file for file, _ in (loaded.closure.files.values() if loaded.closure else ()))])


def _stale(loaded: _Module) -> bool:
    """Whether a file of the plug-in's code changed since it was loaded: then the changed local modules are
    forgotten (re-imported with the plug-in), so that the code that runs is the code that is keyed."""
    changed = loaded.closure.changed() if loaded.closure is not None else []
    for module in changed:
        if module != "<plug-in>":
            sys.modules.pop(module, None)
    return bool(changed)


def _line_in(exc: BaseException, path: Path) -> int | None:
    if isinstance(exc, SyntaxError) and exc.filename == str(path):
        return exc.lineno
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(path)]
    return frames[-1].lineno if frames else None


def _load_module(target: str, what: str = "metric plug-in") -> _Module:
    known = _MODULES.get(target)
    if known is not None:
        if not _stale(known):
            return known
        sys.modules.pop(target, None)  # its code changed: import it anew
    watch = InterruptWatch()
    try:
        with plugin_registrations() as found, watch, folder_kept(), threads_noted():
            module = importlib.import_module(target)
    except BaseException as exc:  # noqa: BLE001 - the user's code (module docstring)
        if watch.interrupted(exc):
            raise
        raise InputError(f"cannot import {what} module {target!r}: {type(exc).__name__}: {exc}") from None
    loaded = _Module(module, target, target, "")
    _record(loaded, found, module.__name__)
    for fam in families():  # a module imported before, outside a plug-in, registered into the built-in names
        if getattr(getattr(fam.func, "__wrapped__", fam.func), "__module__", None) == module.__name__:
            loaded.order.append(fam)
            loaded.registered.setdefault(fam.name.lower(), fam)
    file = getattr(module, "__file__", None)
    if file and os.path.isfile(file):
        path = Path(file).resolve()
        package = module.__name__ if path.name == "__init__.py" else module.__name__.rpartition(".")[0]
        _fingerprint(loaded, module.__name__, path, package, None)
    else:
        loaded.unkeyable = f"module {target} has no source file"
    _MODULES[target] = loaded
    return loaded


def _record(loaded: _Module, found: list, module_name: str) -> None:
    """Keep what was registered during an import, by the module that registered it (a helper the plug-in imports
    keeps its own, for ``helper:*``), and give the plug-in the families of its own module."""
    fresh: dict[str, dict] = {}  # what each module registered in this import (a re-import replaces it all)
    for fam, aliases in found:
        mine = fresh.setdefault(getattr(fam.func, "__module__", ""), {})
        if fam.name.lower() in mine:
            raise InputError(f"{loaded.shown} registers {fam.name!r} twice")
        mine[fam.name.lower()] = (fam, aliases)
    _CAPTURED.update(fresh)
    for fam, aliases in _CAPTURED.get(module_name, {}).values():
        for word in (fam.name, *aliases):
            if word.lower() in loaded.registered:
                raise InputError(f"{loaded.shown} registers {word!r} twice")
            loaded.registered[word.lower()] = fam
        loaded.order.append(fam)


def plugin_fingerprint(family: Family) -> tuple[str | None, str]:
    """(hash of the code, "") of a loaded plug-in's module, or (None, why it cannot be keyed)."""
    loaded = _FILES.get(Path(family.source)) if family.source.endswith(".py") else _MODULES.get(family.source)
    if loaded is None:
        return None, f"plug-in {family.source} is not loaded"
    return loaded.fingerprint, loaded.unkeyable
