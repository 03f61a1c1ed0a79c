"""One progress helper for every long loop of meta-eval.

:func:`progress` picks the display from where the output goes:

* a terminal: a tqdm bar (``tqdm.std``);
* Jupyter with ipywidgets installed: a tqdm widget (``tqdm.notebook``);
* anything else (a log file, a pipe, CI, Jupyter without ipywidgets): plain lines, one every ``interval`` seconds
  and only for loops that run that long, each with the fraction done, the elapsed time and the time left — no
  cursor escape codes, no "IProgress not found" warning.

``META_EVAL_PROGRESS=bar|lines|off`` overrides the choice (e.g. ``off`` in batch jobs). tqdm is imported only
when a bar is shown, so importing this module costs nothing.

The time left is measured, never assumed: a loop extrapolates the rate of its own units (work, when its units are
weighted) from its first completed unit on, so one-time costs before it (imports, compiled kernels loaded) are not
taken for the cost of every unit, and :func:`restart_rate` moves that point past a later one-time cost (worker
processes starting). Work made of stages of different kinds — a study's analyses, then its report — is shown by
:class:`StageProgress`: each stage's estimated cost (a :class:`CostModel` fitted on measured runs), scaled by how
long the stages done so far took against their estimates; never a share of the stages' number.

:data:`clock` is the clock of every display (a test replaces it by a fake one).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

__all__ = ["CostModel", "StageProgress", "clock", "duration", "progress", "progress_mode", "restart_rate"]

#: Seconds between two plain progress lines (and before the first one).
LINE_INTERVAL = 10.0
MODES = ("auto", "bar", "notebook", "lines", "off")
#: The clock of every display, in seconds (``time.monotonic``; a test may set a fake or a CPU clock).
clock: Callable[[], float] = time.monotonic


def forced_mode() -> str | None:
    """The mode ``META_EVAL_PROGRESS`` sets (``bar``, ``lines`` or ``off``), None when it is not set."""
    text = os.environ.get("META_EVAL_PROGRESS", "")
    if not text.strip():
        return None
    if text.strip().lower() not in ("bar", "lines", "off"):
        from meta_eval.core.errors import InputError

        raise InputError(f"META_EVAL_PROGRESS must be bar, lines or off, got {text!r}")
    return text.strip().lower()


def progress_mode(file: IO[str] | None = None) -> str:
    """How progress is shown on ``file`` (default stderr): ``bar``, ``notebook`` or ``lines``.

    ``META_EVAL_PROGRESS`` (``bar``, ``lines`` or ``off``) takes precedence.
    """
    forced = forced_mode()
    if forced is not None:
        return forced
    if _in_jupyter():
        import importlib.util

        return "notebook" if importlib.util.find_spec("ipywidgets") is not None else "lines"
    stream = file if file is not None else sys.stderr
    try:
        return "bar" if stream is not None and stream.isatty() else "lines"
    except (AttributeError, ValueError):  # closed or unusual streams
        return "lines"


def progress(
    iterable: Iterable | None = None,
    *,
    total: int | None = None,
    desc: str = "",
    unit: str = "it",
    enabled: bool = True,
    leave: bool = False,
    file: IO[str] | None = None,
    interval: float | None = None,
    mode: str = "auto",
) -> Any:
    """A progress display over ``iterable`` (or a manual one with ``total`` and ``.update(n)``).

    Parameters
    ----------
    iterable : iterable, optional
        Items to iterate over; ``total`` defaults to ``len(iterable)`` when it has one.
    total : int, optional
        Number of steps (for manual use: ``with progress(total=n) as bar: ... bar.update(k)``).
    desc, unit : str
        What is counted, e.g. ``desc="bootstrap", unit="chunk"``.
    enabled : bool
        False: a silent pass-through (the ``--no-progress`` of every command).
    leave : bool
        Keep the bar on the terminal when done (bars only).
    file : file object, optional
        Where to write (default stderr).
    interval : float, optional
        Seconds between plain lines (lines mode; default :data:`LINE_INTERVAL`).
    mode : {"auto", "bar", "notebook", "lines", "off"}
        ``auto`` decides with :func:`progress_mode`.

    Returns
    -------
    An object that iterates like ``iterable`` and has ``update(n)``, ``close()`` and context-manager support
    (a ``tqdm`` instance for bars).
    """
    if mode not in MODES:
        from meta_eval.core.errors import InputError

        raise InputError(f"progress mode must be one of {', '.join(MODES)}; got {mode!r}")
    if total is None and iterable is not None and hasattr(iterable, "__len__"):
        total = len(iterable)  # type: ignore[arg-type]
    chosen = progress_mode(file) if mode == "auto" else mode
    if not enabled or chosen == "off":
        return _Silent(iterable)
    if chosen == "lines":
        return _Lines(iterable, total=total, desc=desc, unit=unit, file=file,
                      interval=LINE_INTERVAL if interval is None else interval)
    if chosen == "notebook":
        from tqdm.notebook import tqdm
    else:
        from tqdm.std import tqdm
    return tqdm(iterable, total=total, desc=desc, unit=unit, leave=leave, file=file, dynamic_ncols=True)


class _Silent:
    """Pass-through with the progress interface."""

    def __init__(self, iterable: Iterable | None):
        self.iterable = iterable
        self.n = 0

    def __iter__(self) -> Iterator:
        return iter(self.iterable if self.iterable is not None else ())

    def update(self, n: int = 1) -> None:
        self.n += n

    def set_description(self, desc: str) -> None:
        self.desc = desc

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Lines(_Silent):
    """Plain progress lines for logs: ``desc: 40% (400/1000 rep), 12 s elapsed, about 18 s left``.

    Hand-written because tqdm's line mode still writes carriage returns; tqdm's time formatting is reused.
    Nothing is printed for a loop that ends within ``interval`` seconds; a longer one gets a final line.

    The time left is the work left at the rate measured since the first completed unit (the time before it holds
    one-time costs: imports, compiled kernels loaded); until a second unit completes, at the rate since the start.
    After :meth:`restart_rate` (a one-time cost just paid, e.g. worker processes started), the rate is measured
    from that point only, and no time left is given until a unit completes after it.
    """

    def __init__(self, iterable, *, total, desc, unit, file, interval):
        super().__init__(iterable)
        self.total, self.desc, self.unit, self.file, self.interval = total, desc or "progress", unit, file, interval
        self.clock = clock
        self.start = self.last = self.clock()
        self.since: tuple[float, float] | None = None  # (time, work done) the rate is measured from
        self.strict = False  # set by restart_rate: no fallback to the rate since the start
        self.printed = False

    def __iter__(self) -> Iterator:
        for item in super().__iter__():
            yield item
            self.update(1)
        self.close()

    def update(self, n: int = 1) -> None:
        self.n += n
        now = self.clock()
        if self.since is None:
            self.since = (now, self.n)
        finished = self.total is not None and self.n >= self.total  # the final line says it
        if now - self.last >= self.interval and not finished:
            self.last = now
            self._print(now)

    def restart_rate(self) -> None:
        """Measure the rate from now on: what came before held a one-time cost."""
        self.since, self.strict = (self.clock(), self.n), True

    def close(self) -> None:
        now = self.clock()
        if (self.printed or now - self.start >= self.interval) and not getattr(self, "closed", False):
            self._print(now, done=True)
        self.closed = True

    def left(self, now: float) -> float | None:
        """Seconds left at the measured rate (None: not measured yet)."""
        if not self.total:
            return None
        since_t, since_n = self.since if self.since is not None else (self.start, 0)
        if self.n > since_n and now > since_t:
            rate = (now - since_t) / (self.n - since_n)
        elif self.n and not self.strict:
            rate = (now - self.start) / self.n
        else:
            return None
        return max(rate * (self.total - self.n), 0.0)

    def _print(self, now: float, done: bool = False) -> None:
        elapsed = now - self.start
        counted = f" ({_count(self.n)}/{_count(self.total)} {self.unit})" if isinstance(self.total, int) else ""
        if done:
            line = (f"{self.desc}: done" + (f", {_count(self.n)} {self.unit}" if counted or not self.total else "")
                    + f" in {duration(elapsed)}")
        elif self.total:
            left = self.left(now)
            line = (f"{self.desc}: {100 * self.n / self.total:3.0f}%{counted}, {duration(elapsed)} elapsed, "
                    + (f"about {duration(left)} left" if left is not None else "time left: measuring"))
        else:
            line = f"{self.desc}: {self.n} {self.unit}, {duration(elapsed)} elapsed"
        stream = self.file if self.file is not None else sys.stderr
        print(line, file=stream, flush=True)
        self.printed = True


def restart_rate(display: Any) -> None:
    """Tell a progress display that a one-time cost (worker processes starting) is behind: its time left is
    measured from here on (plain lines; a tqdm bar's smoothed rate forgets it by itself)."""
    restart = getattr(display, "restart_rate", None)
    if callable(restart):
        restart()


def duration(seconds: float) -> str:
    """``00:37``, ``1:02:05`` (tqdm's format)."""
    from tqdm.std import tqdm

    return tqdm.format_interval(seconds)


#: Seconds of estimated work it takes for the measured speed to count as much as the cost models' own (the
#: shrinkage of :meth:`StageProgress.speed` toward 1): a 0.1 s stage says little about this machine's speed, a few
#: seconds of stages say most of it (a machine four times slower, e.g. 2 cores at a load of 8, is seen as 3.4 times
#: slower after 4 s of estimated work).
PRIOR_S = 1.0


class StageProgress:
    """Progress over stages whose cost is estimated beforehand: a study's analyses, then its report.

    One line when a stage starts (plain lines) — the stage that ended with its measured time and estimate, the one
    that starts with its estimate, what follows and the time left — or a bar filled by estimated work, never by the
    number of stages::

        study: discpower (3/10, estimated 00:06); properties took 00:21 (estimated 00:18); then 7 more analyses and
        the report: about 01:20 left

    The time left is the estimates left (the current stage's less its elapsed time) times the measured speed
    (:meth:`speed`): how long the stages done took against their estimates, shrunk toward 1 while little has been
    measured (:data:`PRIOR_S`). A stage without an estimate (a plug-in's analysis) is named as of unknown cost.

    Parameters
    ----------
    stages : sequence of (name, estimated seconds or None)
        The stages counted (``noun``), in order.
    closing : (name, estimated seconds or None), optional
        A last stage named rather than counted ("then 7 more analyses and the report").
    desc, noun : str
        What runs (``study``) and what its stages are (``analyses``).
    enabled, file, mode
        As :func:`progress`.
    beside : callable, optional
        ``beside() -> seconds``: work going on beside the stages that the last one waits for (figures drawn in
        the background): the time left is never less than it and the last stage's estimate.
    """

    def __init__(self, stages: Sequence[tuple[str, float | None]], *, closing: tuple[str, float | None] | None = None,
                 desc: str = "study", noun: str = "analyses", enabled: bool = True, file: IO[str] | None = None,
                 mode: str = "auto", beside: Callable[[], float] | None = None):
        self.stages = [*stages, *([closing] if closing is not None else [])]
        self.counted = len(stages)
        self.closing = closing[0] if closing is not None else None
        self.desc, self.noun, self.file, self.beside = desc, noun, file, beside
        self.estimates = {name: est for name, est in self.stages}
        self.measured: dict[str, float] = {}
        self.expected: dict[str, float] = {}  # each stage's estimate at the measured speed, when it began
        self.current: str | None = None
        self.clock = clock
        self.start = self.began = self.clock()
        chosen = progress_mode(file) if mode == "auto" else mode
        self.mode = chosen if enabled else "off"
        self.bar = None
        if self.mode in ("bar", "notebook"):
            if self.mode == "notebook":
                from tqdm.notebook import tqdm
            else:
                from tqdm.std import tqdm
            self.bar = tqdm(total=100.0, desc=desc, file=file, leave=False, dynamic_ncols=True,
                           bar_format="{desc} |{bar}| {elapsed}{postfix}")
        self.first_estimate = self.left(self.start)
        self._say(f"{desc}: {self.counted} {noun}" + (f" and the {self.closing}" if self.closing else "")
                  + (f": about {duration(self.first_estimate)} of one core's work by their cost models"
                     if self.first_estimate is not None else "") + self._unknown([n for n, _ in self.stages])
                  + " (the time left follows the speed measured as they finish)")

    def begin(self, name: str, estimate: float | None = None) -> None:
        """Stage ``name`` starts (the current one, if any, ends). ``estimate``: its seconds as measured now (a
        backlog of figures at their measured cost), instead of its cost model's at the measured speed."""
        ended = self.end()
        self.current, self.began = name, self.clock()
        k = [n for n, _ in self.stages].index(name)
        if estimate is not None:
            self.expected[name] = estimate
        elif self.estimates[name] is not None:
            self.expected[name] = self.estimates[name] * self.speed()
        where = f"{k + 1}/{self.counted}, " if k < self.counted else ""
        parts = [f"{self.desc}: {name} ({where}" + (f"estimated {duration(self.expected[name])})"
                                                    if name in self.expected else "cost unknown)")]
        if ended is not None:
            parts.append(f"{ended} took {duration(self.measured[ended])}" + (
                f" (estimated {duration(self.expected[ended])})" if ended in self.expected else ""))
        later = self._after(name)
        left = self.left(self.began)
        parts.append((f"then {later}: " if later else "") + (f"about {duration(left)} left" if left is not None
                                                             else "time left unknown") + self._unknown(self._rest()))
        self._say("; ".join(parts), k)

    def end(self) -> str | None:
        """The current stage ends; returns its name."""
        if self.current is None:
            return None
        ended, self.current = self.current, None
        self.measured[ended] = self.clock() - self.began
        return ended

    def close(self, completed: bool = True) -> None:
        """The last stage ends: one line with the total and the first estimate (``completed=False``: stopped by an
        error, no line). Closing twice does nothing."""
        if getattr(self, "closed", False):
            return
        self.closed = True
        self.end()
        total = self.clock() - self.start
        if self.mode == "lines" and completed:
            first = (f" (estimated {duration(self.first_estimate)} at the start)" if self.first_estimate is not None
                     else "")
            self._print(f"{self.desc}: done in {duration(total)}{first}")
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def speed(self) -> float:
        """Measured time over estimated time of the stages done, shrunk toward 1 by :data:`PRIOR_S` seconds."""
        done = [n for n in self.measured if self.estimates.get(n) is not None]
        measured = sum(self.measured[n] for n in done)
        estimated = sum(self.estimates[n] for n in done)
        return (measured + PRIOR_S) / (estimated + PRIOR_S)

    def left(self, now: float) -> float | None:
        """Seconds left: the estimates of the stages to come and the current one's rest, at the measured speed
        (None when no stage left has an estimate)."""
        rest = [self.estimates[n] for n in self._rest() if self.estimates[n] is not None]
        current = self.expected.get(self.current) if self.current is not None else None
        if not rest and current is None:
            return None if self._rest() or self.current is not None else 0.0
        running = max(current - (now - self.began), 0.0) if current is not None else 0.0
        left = running + self.speed() * sum(rest)
        if self.beside is not None and self.current != self.closing:
            last = (self.estimates.get(self.closing) or 0.0) if self.closing is not None else 0.0
            left = max(left, self.beside() + self.speed() * last)
        return left

    def _rest(self) -> list[str]:
        """The stages not yet started."""
        names = [n for n, _ in self.stages]
        if self.current is not None:
            return names[names.index(self.current) + 1:]
        return [n for n in names if n not in self.measured]

    def _after(self, name: str) -> str:
        names = [n for n, _ in self.stages]
        later = names[names.index(name) + 1:]
        counted = [n for n in later if n != self.closing]
        text = f"{len(counted)} more {self.noun if len(counted) != 1 else _singular(self.noun)}" if counted else ""
        if self.closing in later:
            text += (" and " if text else "") + f"the {self.closing}"
        return text

    def _unknown(self, names: list[str]) -> str:
        unknown = [n for n in names if self.estimates[n] is None]
        return f", {len(unknown)} of unknown cost ({', '.join(unknown)})" if unknown else ""

    def _say(self, line: str, k: int | None = None) -> None:
        if self.mode == "lines":
            self._print(line)
        elif self.bar is not None:
            done = sum(self.estimates[n] or 0.0 for n in self.measured)
            total = sum(e or 0.0 for _, e in self.stages)
            self.bar.n = min(100.0, 100.0 * done / total) if total else 0.0
            if k is not None:
                self.bar.set_description(f"{self.desc} {min(k + 1, self.counted)}/{self.counted}: {self.current}",
                                         refresh=False)
            left = self.left(self.clock())
            self.bar.set_postfix_str(f"about {duration(left)} left" if left is not None else "")

    def _print(self, line: str) -> None:
        print(line, file=self.file if self.file is not None else sys.stderr, flush=True)


def _singular(noun: str) -> str:
    return {"analyses": "analysis"}.get(noun, noun.removesuffix("s"))


@dataclass(frozen=True)
class CostModel:
    """What a piece of work costs, in seconds of one core: ``fixed_s + per_unit_s × units``, where ``count(*args)``
    counts the units of the work (e.g. system pairs × replicates × topics × metrics).

    :meth:`fit` finds both coefficients from measured runs, stated beside the model in the code (``measured``),
    so an estimate can be traced to the runs it comes from.
    """

    unit: str
    count: Callable[..., float]
    fixed_s: float = 0.0
    per_unit_s: float = 0.0
    measured: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def seconds(self, *args: Any) -> float:
        """The estimated seconds of the work ``count(*args)`` counts."""
        return self.fixed_s + self.per_unit_s * float(self.count(*args))

    @classmethod
    def fit(cls, unit: str, count: Callable[..., float], measured: Mapping[str, tuple[float, float]]) -> CostModel:
        """The model whose ``fixed_s`` and ``per_unit_s`` (both >= 0) minimise the relative squared error over the
        runs ``measured``: {run: (units, seconds)}, i.e. Σ ((fixed + per_unit × units) / seconds − 1)², a
        non-negative least-squares problem of two unknowns (as ``scipy.optimize.nnls`` solves it; written out
        here because the registry builds these models when it is read, where scipy is not imported)."""
        rows = [(1.0 / t, u / t) for u, t in measured.values() if t > 0]
        if not rows:
            raise ValueError(f"cost model of {unit!r}: no run with a positive time")
        candidates = [_fit_both(rows), _fit_one(rows, 1), _fit_one(rows, 0)]  # a tie: cost in proportion
        fixed, per_unit = min((c for c in candidates if c is not None),
                              key=lambda c: sum((c[0] * a + c[1] * b - 1.0) ** 2 for a, b in rows))
        return cls(unit, count, fixed, per_unit, dict(measured))


def _fit_both(rows: list[tuple[float, float]]) -> tuple[float, float] | None:
    """Least squares of Σ (x a + y b − 1)² over (a, b) rows, when both x and y come out >= 0."""
    saa = sum(a * a for a, _ in rows)
    sbb = sum(b * b for _, b in rows)
    sab = sum(a * b for a, b in rows)
    sa, sb = sum(a for a, _ in rows), sum(b for _, b in rows)
    det = saa * sbb - sab * sab
    if det <= 1e-12 * saa * sbb:
        return None
    x, y = (sa * sbb - sb * sab) / det, (sb * saa - sa * sab) / det
    return (x, y) if x >= 0 and y >= 0 else None


def _fit_one(rows: list[tuple[float, float]], which: int) -> tuple[float, float] | None:
    """Least squares with one coefficient only (the other 0)."""
    ss = sum(r[which] ** 2 for r in rows)
    if ss == 0:
        return None
    value = max(sum(r[which] for r in rows) / ss, 0.0)
    return (value, 0.0) if which == 0 else (0.0, value)


def _count(x: float) -> str:
    """A count as text: an integer as it is, a measure of work (weighted progress) rounded."""
    return str(x) if isinstance(x, int) else f"{x:.0f}"


def _in_jupyter() -> bool:
    """True inside a Jupyter kernel (IPython's ZMQ shell)."""
    if "ipykernel" not in sys.modules:
        return False
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"
