"""Tables as they go into a paper: one :class:`PaperTable` rendered as Markdown, LaTeX, HTML or a console table,
and the compact tables of each analysis (one row per metric, or a metric x metric matrix); the full detail stays
in the CSVs.

A cell shows a number (rounded for display), optionally an interval ``[lo, hi]``, superscript markers (e.g.
significance) and bold (best in its column). The renderers are written here rather than with
``DataFrame.to_markdown``/``Styler.to_latex`` because neither escapes ``|`` in Markdown cells nor puts per-cell
markers and intervals beside bold best values; each is a few lines over the same cell texts, so every format shows
exactly the same numbers.

LaTeX output uses ``booktabs`` (and ``amssymb`` for the ▲/▼ markers) and is plain ASCII.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from meta_eval.core.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

__all__ = ["PaperTable", "best_mask", "format_number", "latex_escape"]

DASH = "–"
#: LaTeX for the characters meta-eval's tables and captions use (pdflatex takes ASCII only).
_LATEX_CHARS = {
    "τ": r"\ensuremath{\tau}", "κ": r"\ensuremath{\kappa}", "α": r"\ensuremath{\alpha}", "ρ": r"\ensuremath{\rho}",
    "σ": r"\ensuremath{\sigma}",
    "Δ": r"\ensuremath{\Delta}",
    "≥": r"\ensuremath{\geq}", "≤": r"\ensuremath{\leq}", "±": r"\ensuremath{\pm}", "×": r"\ensuremath{\times}",
    "−": "-", "–": "--", "—": "---", "…": r"\ldots{}", "→": r"\ensuremath{\rightarrow}", "é": r"\'e",
    "▲": r"\ensuremath{\blacktriangle}", "▼": r"\ensuremath{\blacktriangledown}", "†": r"\dag{}",
    "‡": r"\ddag{}", "ω": r"\ensuremath{\omega}", "²": r"\ensuremath{^2}", "Φ": r"\ensuremath{\Phi}",
    "’": "'", "“": "``", "”": "''", "≈": r"\ensuremath{\approx}", "∞": r"\ensuremath{\infty}",
    "✓": r"\ensuremath{\surd}", "✗": r"\ensuremath{\times}",
}
_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "|": r"\textbar{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  # pdfLaTeX's default encoding prints these as other glyphs (< as ¡, ` as ‘): "ASL < 0.05" in math
                  "<": r"\ensuremath{<}", ">": r"\ensuremath{>}", "`": r"\textasciigrave{}"}


def format_number(value, decimals: int = 3) -> str:
    """Display text of a cell value: integers as integers, floats with ``decimals`` decimals, NaN as a dash."""
    import numpy as np

    if value is None or type(value).__name__ == "NAType":  # pandas' missing value (nullable integer columns)
        return DASH
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        if value != value:
            return DASH
        if value == float("inf"):
            return "∞"
        text = f"{value:.{decimals}f}"
        return "0." + "0" * decimals if text == "-0." + "0" * decimals else text
    return str(value)


def markdown_escape(text: str) -> str:
    """``text`` as a Markdown table cell: ``\\``, ``|`` and backticks escaped (a backtick pair was a code span that
    swallowed the cell border), ``&``, ``<`` and ``>`` as HTML entities (a run named ``<script>`` stays text),
    line ends as spaces."""
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\\", "\\\\")
            .replace("|", "\\|").replace("`", "\\`").replace("\n", " "))


def latex_escape(text: str) -> str:
    """``text`` as LaTeX: special characters escaped, Greek letters and symbols in math mode, accented Latin
    letters as accent commands (:func:`_latex_letter`); ``τ_AP`` becomes τ with subscript AP."""
    out = []
    i = 0
    while i < len(text):
        m = re.match(r"τ_([A-Za-z]+(?:-[ab])?)", text[i:])
        if m:
            out.append(rf"\ensuremath{{\tau_{{\mathrm{{{m.group(1)}}}}}}}")
            i += m.end()
            continue
        ch = text[i]
        out.append(_LATEX_SPECIAL.get(ch) or _LATEX_CHARS.get(ch) or _latex_letter(ch))
        i += 1
    return "".join(out)


#: LaTeX's accent commands, by the Unicode combining mark a letter decomposes into (ö = o + U+0308).
_ACCENTS = {"\u0300": "`", "\u0301": "'", "\u0302": "^", "\u0303": "~", "\u0304": "=", "\u0306": "u",
            "\u0307": ".", "\u0308": '"', "\u030a": "r", "\u030b": "H", "\u030c": "v", "\u0327": "c",
            "\u0328": "k"}
_LETTERS = {"ß": r"\ss{}", "ø": r"\o{}", "Ø": r"\O{}", "æ": r"\ae{}", "Æ": r"\AE{}", "œ": r"\oe{}",
            "Œ": r"\OE{}", "ł": r"\l{}", "Ł": r"\L{}", "ı": r"\i{}"}


def _latex_letter(ch: str) -> str:
    """A character LaTeX writes with a command: a Latin letter with accents (``\\"o`` for ö, from its Unicode
    decomposition), a Greek letter (``\\ensuremath{\\lambda}``); any other character as it is, in the UTF-8 file
    (a run named in Chinese: XeLaTeX or LuaLaTeX typeset it, pdfLaTeX needs a font for it)."""
    if ord(ch) < 128:
        return ch
    if ch in _LETTERS:
        return _LETTERS[ch]
    base, *marks = unicodedata.normalize("NFD", ch)
    if marks and ord(base) < 128 and base.isalpha() and all(m in _ACCENTS for m in marks):
        out = base if base not in "ij" else "\\" + base  # dotless i and j take the accent
        for mark in marks:
            out = f"\\{_ACCENTS[mark]}{{{out}}}"
        return out
    name = unicodedata.name(ch, "").split()  # GREEK SMALL LETTER LAMDA
    if len(name) == 4 and name[0] == "GREEK" and name[1] in ("SMALL", "CAPITAL") and name[2] == "LETTER":
        letter = name[-1].lower().replace("lamda", "lambda")
        if name[1] == "CAPITAL":
            if letter not in _GREEK_CAPITALS:  # Alpha, Beta...: LaTeX writes them as the Latin capitals
                return _GREEK_AS_LATIN.get(letter, ch)
            letter = letter.capitalize()
        return "o" if letter == "omicron" else rf"\ensuremath{{\{letter}}}"
    return ch


_GREEK_CAPITALS = {"gamma", "delta", "theta", "lambda", "xi", "pi", "sigma", "upsilon", "phi", "psi", "omega"}
_GREEK_AS_LATIN = {"alpha": "A", "beta": "B", "epsilon": "E", "zeta": "Z", "eta": "H", "iota": "I", "kappa": "K",
                   "mu": "M", "nu": "N", "omicron": "O", "rho": "P", "tau": "T", "chi": "X"}


def best_mask(values: pd.DataFrame, directions: Mapping[str, Literal["max", "min"]],
              decimals: int | Mapping[str, int] = 3) -> pd.DataFrame:
    """Boolean frame: the best cell(s) of each listed column, compared as displayed (rounded to ``decimals``, a
    number or one per column), so every cell that shows the best value is bold; a column whose cells all show the
    same value has no best."""
    import numpy as np
    import pandas as pd

    mask = pd.DataFrame(False, index=values.index, columns=values.columns)
    for column, direction in directions.items():
        if column not in values.columns:
            raise InputError(f"no column {column!r} to mark the best of; have {list(values.columns)}")
        if direction not in ("max", "min"):
            raise InputError(f"best must be 'max' or 'min'; got {direction!r} for {column!r}")
        d = _decimals(decimals, column)
        col = pd.to_numeric(values[column], errors="coerce").astype(float).round(d)
        if col.notna().sum() < 2 or col.nunique() < 2:
            continue
        best = col.max() if direction == "max" else col.min()
        mask[column] = np.isclose(col, best, rtol=0, atol=0.5 * 10.0 ** -(d + 3)) & col.notna()
    return mask


def _decimals(decimals: int | Mapping[str, int], column) -> int:
    if isinstance(decimals, Mapping):
        return int(decimals.get(column, decimals.get("*", 3)))
    return int(decimals)


@dataclass
class PaperTable:
    """A compact table: row labels (the index), columns, display cells; rendered identically in every format.

    Attributes
    ----------
    values : DataFrame
        The cells (numbers or text); the index holds the row labels and its name the first header.
    caption : str
        One or two sentences saying what the table shows.
    decimals : int or mapping column -> int
        Decimals of the numbers shown (per column; key ``"*"`` for the others; default 3).
    bold : DataFrame of bool, optional
        Cells shown in bold (e.g. :func:`best_mask`).
    markers : DataFrame of str, optional
        Superscript markers per cell (e.g. ``▲`` significantly better, or ranx-style run letters).
    low, high : DataFrame, optional
        Interval bounds shown after the value as ``[low, high]``.
    note : str
        A footnote (e.g. what the markers mean).
    """

    values: pd.DataFrame
    caption: str = ""
    decimals: int | Mapping[str, int] = 3
    bold: pd.DataFrame | None = None
    markers: pd.DataFrame | None = None
    low: pd.DataFrame | None = None
    high: pd.DataFrame | None = None
    note: str = ""
    _cells: list[list[tuple[str, str, str, bool]]] = field(default=None, init=False, repr=False)  # type: ignore

    def __post_init__(self) -> None:
        for name in ("bold", "markers", "low", "high"):
            other = getattr(self, name)
            if other is not None and (list(other.index) != list(self.values.index)
                                      or list(other.columns) != list(self.values.columns)):
                raise InputError(f"PaperTable.{name} must have the rows and columns of the values")

    # ------------------------------------------------------------------------------------------------- cells

    @property
    def header(self) -> list[str]:
        return [str(self.values.index.name or ""), *map(str, self.values.columns)]

    @property
    def row_labels(self) -> list[str]:
        return [str(r) for r in self.values.index]

    def cells(self) -> list[list[tuple[str, str, str, bool]]]:
        """Per row and column: (value text, interval text, marker text, bold)."""
        if self._cells is None:
            rows = []
            for i in range(self.values.shape[0]):
                row = []
                for j in range(self.values.shape[1]):
                    value = self.values.iat[i, j]
                    d = _decimals(self.decimals, self.values.columns[j])
                    text = format_number(value, d)
                    interval = ""
                    if self.low is not None and self.high is not None and text != DASH:
                        lo, hi = self.low.iat[i, j], self.high.iat[i, j]
                        if lo == lo and hi == hi and lo is not None:
                            interval = f"[{format_number(lo, d)}, {format_number(hi, d)}]"
                    marker = str(self.markers.iat[i, j] or "") if self.markers is not None else ""
                    bold = bool(self.bold.iat[i, j]) if self.bold is not None else False
                    row.append((text, interval, marker, bold))
                rows.append(row)
            self._cells = rows
        return self._cells

    def text(self, row, column) -> str:
        """The displayed value of one cell (without interval and markers), as findings quote it."""
        i = self.values.index.get_loc(row)
        j = self.values.columns.get_loc(column)
        return self.cells()[i][j][0]

    def interval(self, row, column) -> str:
        """The displayed interval of one cell, ``[lo, hi]`` (empty when it has none)."""
        i = self.values.index.get_loc(row)
        j = self.values.columns.get_loc(column)
        return self.cells()[i][j][1]

    def plain(self) -> list[list[str]]:
        """Rows of plain cell texts (row label first), as the console shows them."""
        out = []
        for label, row in zip(self.row_labels, self.cells()):
            out.append([label, *(" ".join(p for p in (v, iv) if p) + m for v, iv, m, _ in row)])
        return out

    def _numeric_columns(self) -> list[bool]:
        import pandas as pd

        return [bool(pd.api.types.is_numeric_dtype(self.values[c])) or self.low is not None
                for c in self.values.columns]

    # --------------------------------------------------------------------------------------------- renderers

    def to_markdown(self) -> str:
        """A GitHub-flavoured Markdown table (``|`` in cells escaped), with the note below it."""

        esc = markdown_escape
        align = ["---", *("---:" if n else "---" for n in self._numeric_columns())]
        lines = ["| " + " | ".join(esc(h) for h in self.header) + " |", "| " + " | ".join(align) + " |"]
        for label, row in zip(self.row_labels, self.cells()):
            parts = [esc(label)]
            for value, interval, marker, bold in row:
                cell = f"**{esc(value)}**" if bold else esc(value)
                if interval:
                    cell += f" {esc(interval)}"
                if marker:
                    cell += f"<sup>{html.escape(marker)}</sup>"
                parts.append(cell)
            lines.append("| " + " | ".join(parts) + " |")
        text = "\n".join(lines) + "\n"
        if self.note:
            text += f"\n{self.note}\n"
        return text

    def to_latex(self, label: str | None = None, *, float_env: bool = True) -> str:
        """A booktabs table (``table`` float with caption and label, or the bare ``tabular``)."""
        spec = "l" + "".join("r" if n else "l" for n in self._numeric_columns())
        body = [r"\begin{tabular}{" + spec + "}", r"\toprule",
                " & ".join(latex_escape(h) for h in self.header) + r" \\", r"\midrule"]
        for label_text, row in zip(self.row_labels, self.cells()):
            parts = [latex_escape(label_text)]
            for value, interval, marker, bold in row:
                cell = latex_escape(value)
                if bold:
                    cell = rf"\textbf{{{cell}}}"
                if marker:
                    cell += rf"\textsuperscript{{{latex_escape(marker)}}}"
                if interval:
                    cell += rf" {{\scriptsize {latex_escape(interval)}}}"
                parts.append(cell)
            body.append(" & ".join(parts) + r" \\")
        body += [r"\bottomrule", r"\end{tabular}"]
        packages = "% requires \\usepackage{booktabs}" + (", \\usepackage{amssymb}" if any(
            c in "▲▼" for r in self.cells() for _, _, m, _ in r for c in m) else "")
        if not float_env:
            return packages + "\n" + "\n".join(body) + "\n"
        lines = [packages, r"\begin{table}[t]", r"\centering", r"\small"]
        if self.caption:
            lines.append(r"\caption{" + latex_escape(self.caption) + "}")
        if label:
            lines.append(r"\label{" + re.sub(r"[^A-Za-z0-9:._-]", "-", label) + "}")
        lines += body
        if self.note:
            lines.append(r"\par\smallskip{\footnotesize " + latex_escape(self.note) + "}")
        lines.append(r"\end{table}")
        return "\n".join(lines) + "\n"

    def to_html(self) -> str:
        """An HTML table with the same cells."""
        e = html.escape
        numeric = self._numeric_columns()
        head = "".join(f"<th>{e(h)}</th>" for h in self.header)
        rows = []
        for label, row in zip(self.row_labels, self.cells()):
            tds = [f"<td>{e(label)}</td>"]
            for (value, interval, marker, bold), num in zip(row, numeric):
                cell = f"<b>{e(value)}</b>" if bold else e(value)
                if interval:
                    cell += f" <small>{e(interval)}</small>"
                if marker:
                    cell += f"<sup>{e(marker)}</sup>"
                tds.append(f"<td class='{'num' if num else 'txt'}'>{cell}</td>")
            rows.append("<tr>" + "".join(tds) + "</tr>")
        note = f"<p class='note'>{e(self.note)}</p>" if self.note else ""
        return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>{note}"

    def to_rich(self, title: str | None = None):
        """A :class:`rich.table.Table` for the console (bold best cells)."""
        from rich.markup import escape
        from rich.table import Table

        table = Table(title=escape(title if title is not None else self.caption), title_justify="left")
        for h, num in zip(self.header, [False, *self._numeric_columns()]):
            # a long run name is cut with an ellipsis, never the numbers: they keep their header's width
            table.add_column(escape(h), justify="right" if num else "left", no_wrap=True,
                             min_width=len(h) if num else None, overflow="ellipsis")
        for label, row in zip(self.row_labels, self.cells()):
            cells = [escape(label)]
            for value, interval, marker, bold in row:
                text = escape(" ".join(p for p in (value, interval) if p) + marker)
                cells.append(f"[bold]{text}[/bold]" if bold else text)
            table.add_row(*cells)
        return table

    def _repr_html_(self) -> str:  # a notebook shows the table as the report does
        return self.to_html()

    def to_frame(self) -> pd.DataFrame:
        """The displayed table as strings (row label first)."""
        import pandas as pd

        return pd.DataFrame(self.plain(), columns=self.header)


def matrix_table(lower: pd.DataFrame, upper: pd.DataFrame, *, caption: str, low: Sequence[pd.DataFrame] = (),
                 high: Sequence[pd.DataFrame] = (), decimals: int = 3, note: str = "") -> PaperTable:
    """A metric x metric table: ``lower`` below the diagonal, ``upper`` above it, a dash on the diagonal; the
    optional ``low``/``high`` pairs give the intervals of (lower, upper) the same way."""
    import numpy as np
    import pandas as pd

    k = lower.shape[0]
    below = np.tril(np.ones((k, k), dtype=bool), -1)
    above = below.T

    def combine(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
        v = np.full((k, k), np.nan)
        v[below] = a.to_numpy(float)[below]
        v[above] = b.to_numpy(float)[above]
        return pd.DataFrame(v, index=lower.index, columns=lower.columns)

    values = combine(lower, upper)
    lo = combine(*low) if len(low) == 2 else None
    hi = combine(*high) if len(high) == 2 else None
    values.index.name = ""
    if lo is not None:
        lo.index.name = hi.index.name = ""
    return PaperTable(values, caption=caption, decimals=decimals, low=lo, high=hi, note=note)


# ------------------------------------------------------------------------------------------------------------------
# The compact tables of the analyses (the CSVs keep the full detail)
# ------------------------------------------------------------------------------------------------------------------


# ------------------------------------------------------------------------------------------------------------------
# The meta-evaluation battery (meta_eval.meta) and learning to rank (meta_eval.statistics.learning_to_rank)
# ------------------------------------------------------------------------------------------------------------------


def percent(fraction: float) -> str:
    """A fraction as the percentage the battery's column names use (``0.5`` -> ``50 %``)."""
    return f"{100 * fraction:.0f} %"


def row_labels(metrics, forms) -> list[str]:
    """``metric`` when every row has the same score form, ``metric (form)`` otherwise."""
    several = len(set(forms)) > 1
    return [f"{m} ({f})" if several else str(m) for m, f in zip(metrics, forms)]


def cell_frames(rows: dict[str, dict[str, tuple]], index, columns):
    """values, low, high frames from ``{row: {column: (value, low, high)}}``."""
    import numpy as np
    import pandas as pd

    parts = [pd.DataFrame({c: [rows[r].get(c, (np.nan,) * 3)[k] for r in index] for c in columns},
                          index=pd.Index(index, name="metric")) for k in range(3)]
    return parts


