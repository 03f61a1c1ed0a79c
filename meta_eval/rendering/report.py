"""A self-contained report folder: sections of text, compact tables and figures, rendered to Markdown and HTML.

Each table is a :class:`~meta_eval.rendering.paper_table.PaperTable` (shown in the report, written as ``NAME.tex``) backed by a
CSV with the full detail (``NAME.csv``); the report shows the numbers of the same frames the CSVs hold (rounded
only for display). Each figure is written in the requested formats (vector PDF by default) with a PNG preview that
the report embeds. The folder itself is written by :func:`meta_eval.outputs.result_folder.result_folder` (complete or absent).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from meta_eval.core.errors import OutputError
from meta_eval.rendering.figure_style import PREVIEW_DPI, check_dpi, check_formats

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

    from meta_eval.rendering.paper_table import PaperTable


class Renderable(Protocol):
    """What the report shows of an analysis's result (:class:`meta_eval.analyses.Result` is one): the method text,
    the tables (each a stem, a caption, the full frame and the compact table or None) and the figures (each a
    stem, a caption, ``draw()`` and ``in_report``)."""

    text: str
    outputs: list

    def figures(self) -> list: ...


@dataclass
class ReportTable:
    """A table of a section: the compact table shown, and the files behind it."""

    caption: str
    table: PaperTable
    csv: str
    tex: str


@dataclass
class ReportFigure:
    """A figure of a section: the preview embedded and every file written."""

    caption: str
    preview: str
    files: list[str]


@dataclass
class Section:
    """One part of the report. A failed stage keeps its section with ``error`` set instead of content."""

    title: str
    text: str = ""
    tables: list[ReportTable] = field(default_factory=list)
    figures: list[ReportFigure] = field(default_factory=list)
    error: str | None = None


class Report:
    """Collects sections; writes each table (CSV + LaTeX) and figure (formats + PNG preview) into ``out``, then
    ``report.md`` and ``report.html``.

    Parameters
    ----------
    out : path
        The (temporary) folder to write into.
    title : str
    formats : sequence of {"pdf", "png", "svg"}
        Figure formats (default vector PDF); a PNG preview at ``preview_dpi`` is added when PNG is not requested.
    dpi : int
        Resolution of requested PNGs.
    background : bool
        Write figures in a separate process while the caller goes on (:class:`~meta_eval.rendering.figure_style.
        BackgroundWriter`); :meth:`write` waits for them. For callers with a spare core.
    figures : bool
        Draw the figures (False: tables and text only).
    progress : bool
        Show the figures written (:func:`meta_eval.core.progress.progress`): an analysis's, drawn here, and those
        :meth:`write` waits for.

    Every file goes through :meth:`write_text` or :meth:`write_frame`, so a write error (a full disk, a file-size
    limit) is an :class:`~meta_eval.core.errors.OutputError` naming the file, whoever writes.
    """

    def __init__(self, out: Path, title: str, *, formats=("pdf",), dpi: int = 300, preview_dpi: int = PREVIEW_DPI,
                 background: bool = False, figures: bool = True, progress: bool = False):
        from meta_eval.rendering.figure_style import BackgroundWriter

        self.draw_figures = figures
        self.progress = progress
        self.out = Path(out)
        self._writer = BackgroundWriter() if background else None
        self.out.mkdir(parents=True, exist_ok=True)
        self.title = title
        self.formats = check_formats(formats)
        self.dpi = check_dpi(dpi)
        self.preview_dpi = check_dpi(preview_dpi)
        self.sections: list[Section] = []
        self.written: list[str] = []  # every file of the folder, in the order written (the manifest says who wrote it)

    def section(self, title: str, text: str = "") -> Section:
        section = Section(title, text)
        self.sections.append(section)
        return section

    def write_text(self, name: str, text: str) -> Path:
        """Write the file ``name`` of the folder, ``FOLDER/FILE`` in a subfolder of it (an OutputError naming it
        when the system refuses)."""
        path = self.out / name
        try:
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise OutputError(f"cannot write {name} in the result folder {self.out} "
                              f"({exc.strerror or exc})") from None
        self.written.append(name)
        return path

    def write_frame(self, name: str, frame: pd.DataFrame, *, index: bool = False) -> Path:
        """Write ``frame`` as the CSV ``name`` (full precision), through :meth:`write_text`."""
        return self.write_text(name, frame.to_csv(index=index))

    def data(self, name: str, frame: pd.DataFrame, *, index: bool = False, folder: str = "") -> Path:
        """Write a CSV that no table shows (e.g. per-topic scores); returns its path."""
        return self.write_frame(f"{_stem(name, folder)}.csv", frame, index=index)

    def add_data(self, data) -> None:
        """The files of the analysed data itself: ``standardisation.csv`` (each topic's reference mean and s.d.)
        when its scores were standardised."""
        reference = data.standardisation()
        if reference is not None:
            self.data("standardisation", reference)

    def table(self, section: Section, caption: str, table: PaperTable, name: str,
              full: pd.DataFrame | None = None, folder: str = "") -> ReportTable:
        """Show ``table`` in ``section``; write ``name.tex`` and ``name.csv`` (``full`` if given, else the table's
        values with their row labels)."""
        stem = _stem(name, folder)
        csv = f"{stem}.csv"
        self.write_frame(csv, full if full is not None else table.values, index=full is None)
        if not table.caption:
            table.caption = caption
        self.write_text(f"{stem}.tex", table.to_latex(label=f"tab:{stem.replace('/', ':')}"))
        entry = ReportTable(caption, table, csv, f"{stem}.tex")
        section.tables.append(entry)
        return entry

    def add(self, section: Section, result: Renderable, *, every_figure: bool = False, folder: str = "") -> None:
        """Put an analysis result (:class:`meta_eval.analyses.Result`) into ``section``: its method text; each table
        with a compact form shown and written as LaTeX beside its full CSV, the others as CSVs only; the figures
        meant for a report (``every_figure``: all of them, as an analysis's own command writes). ``folder``: its
        files go in that subfolder (a plug-in's, kept apart from the built-ins' files)."""
        section.text = result.text
        for t in result.outputs:
            if t.compact is not None:
                self.table(section, t.caption, t.compact, t.stem, full=t.frame, folder=folder)
            else:
                self.data(t.stem, t.frame, folder=folder)
        from meta_eval.core.progress import progress

        drawn = [f for f in (result.figure_outputs if self.draw_figures else ()) if f.in_report or every_figure]
        for f in progress(drawn, desc=f"{section.title}: figures", unit="figure", enabled=self.progress):
            self.figure(section, f.caption, f.draw(), f.stem, folder=folder)

    def figure(self, section: Section, caption: str, fig: Figure, name: str, folder: str = "") -> ReportFigure:
        """Save ``fig`` in every format (and a PNG preview) and show it in ``section``."""
        from meta_eval.rendering.figure_style import save_figure

        save = save_figure if self._writer is None else self._writer.save
        stem = _stem(name, folder)
        try:
            (self.out / stem).parent.mkdir(exist_ok=True)
            paths = save(fig, self.out / stem, self.formats, dpi=self.dpi, preview_dpi=self.preview_dpi)
        except OSError as exc:
            raise OutputError(f"cannot write the figure {stem} in the result folder {self.out} "
                              f"({exc.strerror or exc})") from None
        files = [p.relative_to(self.out).as_posix() for p in paths]
        self.written.extend(files)
        entry = ReportFigure(caption, f"{stem}.png", files)
        section.figures.append(entry)
        return entry

    def backlog(self) -> tuple[int, float | None]:
        """Figures still being written in the background, and the estimated seconds to write them
        (:meth:`~meta_eval.rendering.figure_style.BackgroundWriter.backlog`; (0, 0.0) without a background
        writer)."""
        return self._writer.backlog() if self._writer is not None else (0, 0.0)

    def write(self) -> tuple[Path, Path]:
        """Write report.md and report.html, once every figure is on disk."""
        if self._writer is not None:
            self._writer.wait(progress=self.progress)
        return self.write_text("report.md", self.markdown()), self.write_text("report.html", self.html())

    def close(self) -> None:
        """Stop the background figure writer, if any (pending figures are dropped)."""
        if self._writer is not None:
            self._writer.close()

    # ---------------------------------------------------------------------------------------------- rendering

    @staticmethod
    def _links(names: list[str]) -> str:
        return " · ".join(f"[{Path(n).suffix[1:].upper()}]({n})" for n in names)

    def markdown(self) -> str:
        parts = [f"# {self.title}\n"]
        for s in self.sections:
            parts.append(f"## {s.title}\n")
            if s.error:
                parts.append(f"**This stage failed:** `{s.error}`\n")
            if s.text:
                parts.append(s.text.strip() + "\n")
            for t in s.tables:
                parts.append(f"**{t.caption}** ({self._links([t.csv, t.tex])})\n\n{t.table.to_markdown()}")
            for f in s.figures:
                others = [n for n in f.files if n != f.preview]
                extra = f" ({self._links(others)})" if others else ""
                parts.append(f"![{f.caption}]({f.preview})\n\n*{f.caption}*{extra}\n")
        return "\n".join(parts)

    def html(self) -> str:
        e = html.escape
        body = [f"<h1>{e(self.title)}</h1>"]
        for s in self.sections:
            body.append(f"<h2>{e(s.title)}</h2>")
            if s.error:
                body.append(f"<p class='error'><b>This stage failed:</b> <code>{e(s.error)}</code></p>")
            if s.text:
                body.extend(_html_paragraph(p) for p in s.text.strip().split("\n\n"))
            for t in s.tables:
                links = " · ".join(f"<a href='{n}'>{Path(n).suffix[1:].upper()}</a>" for n in (t.csv, t.tex))
                # a table wider than the window scrolls in its own box: the page (and its text) keeps the window's width
                body.append(f"<p><b>{e(t.caption)}</b> ({links})</p><div class='wide'>{t.table.to_html()}</div>")
            for f in s.figures:
                links = " · ".join(f"<a href='{n}'>{Path(n).suffix[1:].upper()}</a>" for n in f.files
                                   if n != f.preview)
                body.append(f"<figure><img src='{f.preview}' alt='{e(f.caption)}'>"
                            f"<figcaption>{e(f.caption)}{f' ({links})' if links else ''}</figcaption></figure>")
        style = ("body{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em;line-height:1.4}"
                 "table{border-collapse:collapse;font-size:90%;margin-bottom:.5em}"
                 "td,th{padding:2px 8px;border-bottom:1px solid #ddd}td.num{text-align:right}"
                 "th{border-bottom:2px solid #444}img{max-width:100%}.error{color:#a00}.note{font-size:85%}"
                 ".wide{overflow-x:auto}")
        return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(self.title)}</title>"
                f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n")


def _html_paragraph(text: str) -> str:
    """A paragraph, or a list when every line starts with "- "."""
    lines = text.split("\n")
    if all(line.startswith("- ") for line in lines):
        return "<ul>" + "".join(f"<li>{html.escape(line[2:])}</li>" for line in lines) + "</ul>"
    return f"<p>{html.escape(text)}</p>"


def slug(name: str) -> str:
    """File-name-safe form of a name (``GAP(g=0.5,0.5)`` -> ``GAP_g_0.5_0.5``)."""
    return re.sub(r"[^A-Za-z0-9.@-]+", "_", name).strip("_").replace("@", "at")


def _stem(name: str, folder: str) -> str:
    """The file stem of ``name``, in ``folder`` (a subfolder of the result folder) when one is given."""
    return f"{slug(folder)}/{slug(name)}" if folder else slug(name)
