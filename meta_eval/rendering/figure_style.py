"""The one figure style of meta-eval, and the helper that saves a figure in the requested formats.

Every figure function is wrapped in :func:`styled`: seaborn's ``paper`` context on the ``ticks`` style (no top and
right spines, light horizontal grid), Paul Tol's colour-blind-safe "bright" palette (then his "muted" one for more
than seven metrics; seaborn's ``colorblind`` palette has two oranges among its first six), TrueType fonts in PDF and PS
(the Type 3 fonts matplotlib embeds by default are refused by ACM and IEEE checks). Metric colours come from
:func:`metric_colors`, so a study passes one mapping to every figure and a metric keeps its colour throughout.

Sizes are for a two-column paper: :data:`FULL_WIDTH` (7 in, both columns) and :data:`COLUMN_WIDTH` (3.35 in).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from meta_eval.core.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["BackgroundWriter", "COLUMN_WIDTH", "FORMATS", "FULL_WIDTH", "figure_paths", "metric_colors", "paper_style",
           "save_figure", "styled"]

FULL_WIDTH = 7.0
COLUMN_WIDTH = 3.35
FORMATS = ("pdf", "png", "svg")
#: Paul Tol's qualitative "bright" scheme, then "muted" (https://personal.sron.nl/~pault/#sec:qualitative); the
#: bright cyan comes after purple, so the first five metrics never pair blue with cyan (AP and GAP were told apart
#: by shade alone), and grey is left for the references.
PALETTE = ("#4477AA", "#EE6677", "#228833", "#CCBB44", "#AA3377", "#66CCEE",
           "#332288", "#117733", "#44AA99", "#88CCEE", "#DDCC77", "#CC6677", "#882255")
#: The reference metrics a study compares against (GAP, nDCG): black and grey, apart from every metric under study.
REFERENCE_COLORS = ("#222222", "#888888")
#: Resolution of the PNG previews a report embeds beside vector figures.
PREVIEW_DPI = 110

_RC = {
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "svg.fonttype": "path",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.grid.axis": "y",
    "grid.color": "0.9",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
    "figure.dpi": 100,
    "savefig.dpi": 300,
}


@contextmanager
def paper_style():
    """Context in which a figure is built in the paper style (seaborn paper context, ticks, colour-blind)."""
    import matplotlib as mpl
    import seaborn as sns

    rc = {**sns.axes_style("ticks"), **sns.plotting_context("paper", font_scale=1.05), **_RC,
          "axes.prop_cycle": mpl.cycler(color=list(PALETTE))}
    with mpl.rc_context(rc):
        yield


def styled(func: Callable[..., Figure]) -> Callable[..., Figure]:
    """Decorator: build the figure inside :func:`paper_style` (and, in a notebook, make it show itself)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        show_in_notebooks()
        with paper_style():
            return func(*args, **kwargs)

    return wrapper


@functools.cache
def show_in_notebooks() -> None:
    """In IPython or Jupyter, display a :class:`matplotlib.figure.Figure` as a PNG image.

    meta-eval builds figures without pyplot (no global state, no GUI backend), so Jupyter's inline backend, which
    pyplot activates, never registers itself, and a notebook cell returning a figure would print
    ``<Figure size 700x270>``. Registering IPython's own PNG printer for the class is what the inline backend
    does; nothing happens outside IPython."""
    import sys

    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return
    from IPython.core.pylabtools import print_figure

    formatter = shell.display_formatter.formatters["image/png"]
    formatter.for_type_by_name("matplotlib.figure", "Figure",
                               lambda fig: print_figure(fig, "png", bbox_inches="tight", dpi=PREVIEW_DPI))


def metric_colors(names: Iterable[str], fixed: Mapping[str, object] | None = None,
                  references: Iterable[str] = ()) -> dict[str, tuple]:
    """One colour per metric, in order, from the colour-blind-safe palette (cycled after 13 metrics).

    Pass the same mapping to every figure of a study so that a metric keeps its colour; ``fixed`` pins colours.
    ``references`` (at most two, e.g. a study's GAP and nDCG) are drawn in black and grey, so the metrics under
    study keep the palette's most distinct colours and a reader tells the references apart at a glance.
    """
    names = list(dict.fromkeys(names))
    refs = [n for n in dict.fromkeys(references) if n in names][: len(REFERENCE_COLORS)]
    studied = [n for n in names if n not in refs]
    out = {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(studied)}
    out.update(zip(refs, REFERENCE_COLORS))
    out.update(dict(fixed or {}))
    return {n: out[n] for n in [*names, *(fixed or {})]}


def colors_for(names: Sequence[str], colors: Mapping[str, object] | None) -> dict[str, object]:
    """``colors`` restricted to ``names``, with palette colours for names it lacks."""
    if colors is None:
        return metric_colors(names)
    missing = [n for n in names if n not in colors]
    extra = metric_colors([*colors, *missing])
    return {n: colors[n] if n in colors else extra[n] for n in names}


def check_formats(formats: Iterable[str] | str) -> tuple[str, ...]:
    """Validated figure formats (``pdf``, ``png``, ``svg``), in order, without repeats."""
    items = [formats] if isinstance(formats, str) else list(formats)
    out = []
    for f in items:
        value = getattr(f, "value", f)
        if value not in FORMATS:
            raise InputError(f"figure format must be one of {', '.join(FORMATS)}; got {value!r}")
        if value not in out:
            out.append(value)
    if not out:
        raise InputError(f"at least one figure format is needed ({', '.join(FORMATS)})")
    return tuple(out)


def check_dpi(dpi: int) -> int:
    """A resolution in [50, 1200] dots per inch."""
    if isinstance(dpi, bool) or not isinstance(dpi, int) or not 50 <= dpi <= 1200:
        raise InputError(f"dpi must be an integer in [50, 1200]; got {dpi!r}")
    return dpi


def save_figure(
    fig: Figure,
    stem: str | Path,
    formats: Iterable[str] | str = ("pdf",),
    *,
    dpi: int = 300,
    preview_dpi: int | None = None,
) -> list[Path]:
    """Write ``fig`` as ``stem.<format>`` for every format (PNG at ``dpi``; PDF and SVG are vector).

    With ``preview_dpi``, a PNG preview ``stem.png`` at that resolution is also written when PNG was not
    requested (reports embed it). Returns the paths written, the requested formats first.
    """
    import io

    written = []
    with paper_style():  # font embedding is decided when the file is written
        for path, fmt, resolution in _outputs(stem, formats, dpi, preview_dpi):
            metadata = {"pdf": {"CreationDate": None}, "svg": {"Date": None}}.get(fmt)
            # drawn in memory, then written: a write error (a full disk, a file-size limit) is then the OSError
            # callers report, where matplotlib's PDF writer, failing inside its stream, raised an AttributeError
            drawn = io.BytesIO()
            fig.savefig(drawn, format=fmt, dpi=resolution, bbox_inches="tight", pad_inches=0.02, metadata=metadata)
            path.write_bytes(drawn.getvalue())
            written.append(path)
    return written


def figure_paths(stem: str | Path, formats: Iterable[str] | str = ("pdf",), *, dpi: int = 300,
                 preview_dpi: int | None = None) -> list[Path]:
    """The files :func:`save_figure` writes for these arguments, in the same order."""
    return [path for path, _, _ in _outputs(stem, formats, dpi, preview_dpi)]


def _outputs(stem, formats, dpi, preview_dpi) -> list[tuple[Path, str, int]]:
    formats = check_formats(formats)
    dpi = check_dpi(dpi)
    stem = Path(stem)
    jobs = [(fmt, dpi) for fmt in formats]
    if preview_dpi is not None and "png" not in formats:
        jobs.append(("png", check_dpi(preview_dpi)))
    return [(stem.with_name(f"{stem.name}.{fmt}"), fmt, resolution) for fmt, resolution in jobs]


class BackgroundWriter:
    """Saves figures in one separate process while the caller goes on computing.

    Drawing and writing a figure (text layout, tight bounding boxes, font subsetting for the embedded TrueType
    fonts) costs about as much as a study's computations; a study on several cores hands each finished figure to
    this writer (pickled, as matplotlib supports) instead of waiting for it. A figure that cannot be pickled
    (e.g. a lambda tick formatter) is saved in the calling process. :meth:`wait` blocks until every file is
    written (showing its progress) and raises the first error; :meth:`backlog` says what is left and what a figure
    has cost; :meth:`close` also stops the process.
    """

    def __init__(self) -> None:
        self._executor = None
        self._pending: list = []
        self._seconds: list[float] = []  # the measured time of each figure written

    def save(self, fig: Figure, stem: str | Path, formats: Iterable[str] | str = ("pdf",), *, dpi: int = 300,
             preview_dpi: int | None = None) -> list[Path]:
        """Like :func:`save_figure` (same files, same order), written in the background; closes ``fig``."""
        import pickle

        import matplotlib.pyplot as plt

        paths = figure_paths(stem, formats, dpi=dpi, preview_dpi=preview_dpi)
        try:
            payload = pickle.dumps(fig)
        except Exception:  # noqa: BLE001 -- anything unpicklable is simply saved here
            return save_figure(fig, stem, formats, dpi=dpi, preview_dpi=preview_dpi)
        if self._executor is None:
            # loky (joblib's process pool): a clean process -- forking a parent that runs pyarrow and joblib threads
            # is not safe -- that, unlike multiprocessing's spawn, does not re-run the caller's __main__ script
            import os

            from joblib.externals.loky import ProcessPoolExecutor

            self._executor = ProcessPoolExecutor(1, initializer=_writer_init, initargs=(os.getpid(),))
        self._pending.append((Path(stem).name, self._executor.submit(
            _save_pickled, payload, str(stem), tuple(check_formats(formats)), dpi, preview_dpi)))
        plt.close(fig)
        return paths

    def backlog(self) -> tuple[int, float | None]:
        """Figures not yet written, and the estimated seconds to write them: their number times the mean measured
        time of those written (None before the first)."""
        waiting = sum(not future.done() for _, future in self._pending)
        done = [future for _, future in self._pending if future.done() and future.exception() is None]
        seconds = self._seconds + [future.result() for future in done]
        return waiting, waiting * sum(seconds) / len(seconds) if seconds else None

    def wait(self, progress: bool = False) -> None:
        """Block until every figure is written (``progress``: a display of the figures written, of all handed to
        this writer since the last wait, with the time left); raise the first error."""
        from concurrent.futures import as_completed

        from meta_eval.core.progress import progress as progress_display

        pending, self._pending = self._pending, []
        errors, first = [], None
        names = {future: name for name, future in pending}
        with progress_display(total=len(pending), desc="report: figures", unit="figure", enabled=progress) as bar:
            written = {future for future in names if future.done()}
            if written:
                bar.update(len(written))  # the time left is measured on the figures written while waiting
            for future in as_completed(names):
                try:
                    self._seconds.append(future.result())
                except Exception as exc:  # noqa: BLE001 -- reported below with the figure's name
                    errors.append(f"{names[future]}: {type(exc).__name__}: {exc}")
                    first = first or exc
                if future not in written:
                    bar.update(1)
        if errors:  # caused by the first (a result folder names the file of a failed write from it)
            raise RuntimeError(f"{len(errors)} figure(s) could not be written ({'; '.join(errors)})") from first

    def close(self) -> None:
        if self._executor is not None:
            dropped = any(not future.done() for _, future in self._pending)  # an error or interrupt: stop now
            if dropped:
                from meta_eval.core.parallel import quiet_killed_pools

                quiet_killed_pools()
            self._executor.shutdown(wait=not dropped, kill_workers=dropped)
            self._executor = None
        self._pending = []


def _writer_init(parent: int) -> None:
    import os

    import matplotlib

    from meta_eval.core.parallel import init_worker

    init_worker(parent)  # dies with the study that started it
    matplotlib.use("Agg")
    # a lower priority than the study's workers: the figures are drawn on cores the analyses leave idle rather
    # than taking a share of the cores from the workers of the stages that follow
    try:
        os.nice(10)
    except (AttributeError, OSError):  # no nice() on Windows; a refused priority change only costs time
        pass


def _save_pickled(payload: bytes, stem: str, formats: tuple[str, ...], dpi: int, preview_dpi: int | None) -> float:
    """Save a pickled figure; returns the seconds it took (the writer's measure of what a figure costs)."""
    import pickle
    import time

    import matplotlib.pyplot as plt

    started = time.perf_counter()
    fig = pickle.loads(payload)
    try:
        save_figure(fig, stem, formats, dpi=dpi, preview_dpi=preview_dpi)
    finally:
        plt.close(fig)
    return time.perf_counter() - started


# ------------------------------------------------------------------------------------------------------------------
# Helpers the analyses' figures share
# ------------------------------------------------------------------------------------------------------------------


#: Line styles and markers of the series of one figure, in order (a metric keeps its colour from metric_colors):
#: six dash patterns, so that the six metrics of a default study never share one, and lines that coincide still
#: show each (solid, dashed, dotted, dash-dot, long dash, dash-dot-dot).
LINE_STYLES = ("-", (0, (4, 2)), (0, (1, 1.5)), (0, (6, 2, 1, 2)), (0, (9, 3)), (0, (5, 1.5, 1, 1.5, 1, 1.5)))
MARKERS = ("o", "s", "D", "^", "v", "P")


def need_columns(frame, columns: set[str], name: str) -> None:
    """InputError unless ``frame`` is a DataFrame with ``columns`` (what figure ``name`` draws from)."""
    import pandas as pd

    if not isinstance(frame, pd.DataFrame) or not columns <= set(frame.columns):
        raise InputError(f"{name} needs a table with columns {sorted(columns)}; got "
                         f"{list(getattr(frame, 'columns', []))}")


def dodged(ax, x, mean, low, high, *, color, marker: str, offset: float, style="-", label=None) -> None:
    """A metric's means joined by a line, each with its interval as an error bar, shifted by ``offset`` along x so
    that the intervals of metrics at the same x stand side by side instead of merging into one band."""
    import numpy as np

    x = np.asarray(x, dtype=float) + offset
    mean, low, high = (np.asarray(v, dtype=float) for v in (mean, low, high))
    # a bootstrap percentile interval need not hold the mean (every resample at 1.000, the mean 0.992): its bar
    # then starts at the mean, where matplotlib refuses a negative length
    bars = np.clip(np.vstack([mean - low, high - mean]), 0, None)
    ax.errorbar(x, mean, yerr=bars, color=color, linestyle=style, linewidth=1.1,
                marker=marker, markersize=3, markeredgecolor="white", markeredgewidth=0.4, elinewidth=0.7,
                capsize=0, label=label)


def dodge_offsets(n: int, step: float):
    """x offsets of ``n`` dodged series, centred on 0, ``step`` apart."""
    import numpy as np

    return (np.arange(n) - (n - 1) / 2) * step


def fit_length(text, length: float, max_lines: int = 4) -> None:
    """Break ``text`` (a matplotlib Text) into as few lines, of even length, as keep its long side within
    ``length`` display units (pixels at the figure's dpi): a colour bar's label longer than the figure is high
    runs off it. Left as it is when even ``max_lines`` lines do not fit."""
    import math
    import textwrap

    words = " ".join(text.get_text().split())
    renderer = text.figure._get_renderer()
    for lines in range(1, max_lines + 1):
        text.set_text(textwrap.fill(words, width=math.ceil(len(words) / lines)) if lines > 1 else words)
        extent = text.get_window_extent(renderer)
        if max(extent.width, extent.height) <= length:
            return
    text.set_text(words)
