"""One progress helper for every long loop of meta-eval.

:func:`progress` picks the display from where the output goes:

* a terminal: a tqdm bar (``tqdm.std``);
* Jupyter with ipywidgets installed: a tqdm widget (``tqdm.notebook``);
* anything else (a log file, a pipe, CI, Jupyter without ipywidgets): plain lines, one every ``interval`` seconds
  and only for loops that run that long, each with the fraction done, the elapsed time and the time left — no
  cursor escape codes, no "IProgress not found" warning.

``META_EVAL_PROGRESS=bar|lines|off`` overrides the choice (e.g. ``off`` in batch jobs). tqdm is imported only
when a bar is shown, so importing this module costs nothing.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import IO, Any

__all__ = ["progress", "progress_mode"]

#: Seconds between two plain progress lines (and before the first one).
LINE_INTERVAL = 10.0
MODES = ("auto", "bar", "notebook", "lines", "off")


def progress_mode(file: IO[str] | None = None) -> str:
    """How progress is shown on ``file`` (default stderr): ``bar``, ``notebook`` or ``lines``.

    ``META_EVAL_PROGRESS`` (``bar``, ``lines`` or ``off``) takes precedence.
    """
    forced = os.environ.get("META_EVAL_PROGRESS", "").strip().lower()
    if forced in ("bar", "lines", "off"):
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
    interval: float = LINE_INTERVAL,
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
    interval : float
        Seconds between plain lines (lines mode).
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
        return _Lines(iterable, total=total, desc=desc, unit=unit, file=file, interval=interval)
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
    Nothing is printed for a loop that ends within ``interval`` seconds; a loop that printed gets a final line.
    """

    def __init__(self, iterable, *, total, desc, unit, file, interval):
        super().__init__(iterable)
        self.total, self.desc, self.unit, self.file, self.interval = total, desc or "progress", unit, file, interval
        self.start = self.last = time.monotonic()
        self.printed = False

    def __iter__(self) -> Iterator:
        for item in super().__iter__():
            yield item
            self.update(1)
        self.close()

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            self._print(now)

    def close(self) -> None:
        if self.printed and not getattr(self, "closed", False):
            self._print(time.monotonic(), done=True)
        self.closed = True

    def _print(self, now: float, done: bool = False) -> None:
        from tqdm.std import tqdm

        elapsed = now - self.start
        counted = f" ({_count(self.n)}/{_count(self.total)} {self.unit})" if isinstance(self.total, int) else ""
        if done:
            line = (f"{self.desc}: done" + (f", {_count(self.n)} {self.unit}" if counted or not self.total else "")
                    + f" in {tqdm.format_interval(elapsed)}")
        elif self.total:
            left = elapsed / self.n * (self.total - self.n) if self.n else float("nan")
            eta = tqdm.format_interval(left) if left == left else "?"
            line = (f"{self.desc}: {100 * self.n / self.total:3.0f}%{counted}, "
                    f"{tqdm.format_interval(elapsed)} elapsed, about {eta} left")
        else:
            line = f"{self.desc}: {self.n} {self.unit}, {tqdm.format_interval(elapsed)} elapsed"
        stream = self.file if self.file is not None else sys.stderr
        print(line, file=stream, flush=True)
        self.printed = True


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
