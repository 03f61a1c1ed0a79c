"""A self-contained report folder: sections of text, tables and figures, rendered to Markdown and HTML.

Tables are written as CSV beside the report and embedded from the same DataFrames, so the numbers in the report
are the numbers in the CSVs (rounded only for display).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

DISPLAY_DECIMALS = 4


@dataclass
class Section:
    """One part of the report. A failed stage keeps its section with ``error`` set instead of content."""

    title: str
    text: str = ""
    tables: list[tuple[str, str]] = field(default_factory=list)  # (caption, csv file name)
    figures: list[tuple[str, str]] = field(default_factory=list)  # (caption, image file name)
    error: str | None = None


class Report:
    """Collects sections, writes each table (CSV) and figure (PNG) into ``out``, then ``report.md``/``report.html``."""

    def __init__(self, out: Path, title: str):
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.title = title
        self.sections: list[Section] = []
        self._frames: dict[str, pd.DataFrame] = {}

    def section(self, title: str, text: str = "") -> Section:
        section = Section(title, text)
        self.sections.append(section)
        return section

    def table(self, section: Section, caption: str, frame: pd.DataFrame, name: str) -> Path:
        """Write ``frame`` to ``name``.csv and show it in ``section``."""
        path = self.out / f"{slug(name)}.csv"
        frame.to_csv(path, index=False)
        self._frames[path.name] = frame
        section.tables.append((caption, path.name))
        return path

    def figure(self, section: Section, caption: str, fig: Figure, name: str) -> Path:
        """Save ``fig`` as ``name``.png and show it in ``section``."""
        path = self.out / f"{slug(name)}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        section.figures.append((caption, path.name))
        return path

    def write(self) -> tuple[Path, Path]:
        md = self.out / "report.md"
        md.write_text(self.markdown())
        page = self.out / "report.html"
        page.write_text(self.html())
        return md, page

    # ---------------------------------------------------------------------------------------------- rendering

    def markdown(self) -> str:
        parts = [f"# {self.title}\n"]
        for s in self.sections:
            parts.append(f"## {s.title}\n")
            if s.error:
                parts.append(f"**This stage failed:** `{s.error}`\n")
            if s.text:
                parts.append(s.text.strip() + "\n")
            for caption, name in s.tables:
                frame = _display(self._frames[name])
                parts.append(f"**{caption}** ([{name}]({name}))\n\n{frame.to_markdown(index=False)}\n")
            for caption, name in s.figures:
                parts.append(f"![{caption}]({name})\n\n*{caption}*\n")
        return "\n".join(parts)

    def html(self) -> str:
        body = [f"<h1>{html.escape(self.title)}</h1>"]
        for s in self.sections:
            body.append(f"<h2>{html.escape(s.title)}</h2>")
            if s.error:
                body.append(f"<p class='error'><b>This stage failed:</b> <code>{html.escape(s.error)}</code></p>")
            if s.text:
                body.extend(f"<p>{html.escape(p)}</p>" for p in s.text.strip().split("\n\n"))
            for caption, name in s.tables:
                table = _display(self._frames[name]).to_html(index=False, border=0, classes="table")
                body.append(f"<p><b>{html.escape(caption)}</b> (<a href='{name}'>{name}</a>)</p>{table}")
            for caption, name in s.figures:
                body.append(f"<figure><img src='{name}' alt='{html.escape(caption)}'>"
                            f"<figcaption>{html.escape(caption)}</figcaption></figure>")
        style = ("body{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em}"
                 "table{border-collapse:collapse;font-size:90%}td,th{padding:2px 8px;border-bottom:1px solid #ddd}"
                 "img{max-width:100%}.error{color:#a00}")
        return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(self.title)}</title>"
                f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n")


def _display(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.round(DISPLAY_DECIMALS)


def slug(name: str) -> str:
    """File-name-safe form of a name (``GAP(g=0.5,0.5)`` -> ``GAP_g_0.5_0.5``)."""
    return re.sub(r"[^A-Za-z0-9.@-]+", "_", name).strip("_").replace("@", "at")
