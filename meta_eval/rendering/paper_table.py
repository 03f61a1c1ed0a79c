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
                  "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


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


def latex_escape(text: str) -> str:
    """``text`` as LaTeX (ASCII): special characters escaped, Greek letters and symbols in math mode;
    ``τ_AP`` becomes τ with subscript AP."""
    out = []
    i = 0
    while i < len(text):
        m = re.match(r"τ_([A-Za-z]+(?:-[ab])?)", text[i:])
        if m:
            out.append(rf"\ensuremath{{\tau_{{\mathrm{{{m.group(1)}}}}}}}")
            i += m.end()
            continue
        ch = text[i]
        out.append(_LATEX_SPECIAL.get(ch) or _LATEX_CHARS.get(ch) or ch)
        i += 1
    result = "".join(out)
    bad = sorted({c for c in result if ord(c) > 127})
    if bad:
        raise InputError(f"no LaTeX form for the characters {bad} in {text!r}")
    return result


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

        def esc(s: str) -> str:
            return s.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")

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
            table.add_column(escape(h), justify="right" if num else "left", no_wrap=not num)
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


def means_table(means: pd.DataFrame, *, limit: int = 25, decimals: int = 4) -> PaperTable:
    """Mean score per system (rows, as ordered) and metric (columns), best in bold; more than ``limit`` systems
    are cut to the first ``limit`` with a note."""
    shown = means.iloc[:limit] if len(means) > limit else means
    note = (f"The first {limit} of {len(means)} systems by {means.columns[0]}; all are in the CSV."
            if len(means) > limit else "")
    shown = shown.copy()
    shown.index.name = shown.index.name or "system"
    return PaperTable(shown, decimals=decimals, bold=best_mask(shown, {c: "max" for c in shown.columns}, decimals),
                      note=note)


def discpower_table(summary: pd.DataFrame, top_summary: pd.DataFrame | None = None, top: int | None = None,
                    method: str = "bootstrap") -> PaperTable:
    """One row per metric: % of pairs discriminated (ASL < α), difference required; the same for the top-k
    systems. The number of pairs, the same for every metric, is in the caption (:func:`discpower_pairs`), not
    repeated in every row. Bold: most pairs discriminated, smallest difference required."""
    import pandas as pd

    def part(frame: pd.DataFrame, suffix: str) -> pd.DataFrame:
        f = frame[frame["method"] == method].set_index("metric")
        return pd.DataFrame({f"% discriminated{suffix}": 100.0 * f["proportion"],
                             f"Δ required{suffix}": f["diff_required"]})

    values = part(summary, "")
    if top_summary is not None and top:
        values = values.join(part(top_summary, f" (top {top})"))
    values.index.name = "metric"
    decimals = {c: (1 if c.startswith("%") else 3) for c in values.columns}
    best = {c: ("max" if c.startswith("%") else "min") for c in values.columns}
    return PaperTable(values, decimals=decimals, bold=best_mask(values, best, decimals))


def discpower_pairs(summary: pd.DataFrame, method: str = "bootstrap") -> int:
    """The number of system pairs a discriminative-power summary tests (one value: every metric tests them all)."""
    pairs = set(summary.loc[summary["method"] == method, "pairs"].astype(int))
    if len(pairs) != 1:
        raise InputError(f"the metrics were tested on different numbers of pairs ({sorted(pairs)})")
    return pairs.pop()


def agreement_table(sysres, *, decimals: int = 3) -> PaperTable:
    """Metric x metric: Kendall's τ_b below the diagonal, symmetrised τ_AP above it, each with its bootstrap
    interval (from :class:`meta_eval.statistics.correlation.SystemCorrelation`)."""
    level = f"{sysres.confidence:.0%}"
    method = {"bca": "BCa", "normal": "normal", "basic": "basic", "percentile": "percentile"}[sysres.ci_method]
    return matrix_table(
        sysres.matrix("kendall_tau_b"), sysres.matrix("tau_ap_sym"),
        low=(sysres.matrix("kendall_tau_b", "ci_low"), sysres.matrix("tau_ap_sym", "ci_low")),
        high=(sysres.matrix("kendall_tau_b", "ci_high"), sysres.matrix("tau_ap_sym", "ci_high")),
        caption="Agreement of the system rankings: Kendall's τ_b below the diagonal, symmetrised τ_AP above it.",
        note=f"{level} bootstrap {method} intervals over topics (B = {sysres.n_resamples}).", decimals=decimals)


def swaps_compact(swaps: pd.DataFrame, pairs: Sequence[tuple[str, str]] | None = None) -> PaperTable:
    """One row per metric pair (x vs y): pairs, % of pairs ordered oppositely, how many of those swaps are
    significant under x, under y, under both."""
    import pandas as pd

    frame = swaps
    if pairs is not None:
        wanted = {tuple(p) for p in pairs} | {(b, a) for a, b in pairs}
        frame = swaps[[(x, y) in wanted for x, y in zip(swaps.metric_x, swaps.metric_y)]]
    values = pd.DataFrame({
        "pairs": frame["n_pairs"].astype(int).to_numpy(),
        "% swapped": 100.0 * frame["swap_rate"].to_numpy(),
        "significant under x": frame["n_swaps_significant_x"].to_numpy(),
        "under y": frame["n_swaps_significant_y"].to_numpy(),
        "under both": frame["n_swaps_significant_both"].to_numpy(),
    }, index=pd.Index([f"{x} vs {y}" for x, y in zip(frame.metric_x, frame.metric_y)], name="x vs y"))
    return PaperTable(values, decimals={"% swapped": 1})


def informativeness_table(summary: pd.DataFrame, *, decimals: int = 3) -> PaperTable:
    """One row per metric; per relevance threshold t: mean RMS error of the inferred PR curves, its standard
    error and the number of lists (columns ``RMS, grade ≥ t``, ``s.e., grade ≥ t``, ``lists, grade ≥ t``), and
    the lists whose solve failed. Generic over the summary's columns: ``metric, threshold, mean_rms`` and, when
    present, ``sem_rms``, ``n_lists``, ``n_failed``, ``reliable``, ``method`` (column ``form``: declared, derived,
    prefix-state, or sampled -- approximate). Bold: the lowest error per threshold."""
    import pandas as pd

    parts = []
    for level, f in summary.groupby("threshold", sort=True):
        f = f.set_index("metric")
        cols = {f"RMS, grade ≥ {level}": f["mean_rms"]}
        if "sem_rms" in f:
            cols[f"s.e., grade ≥ {level}"] = f["sem_rms"]
        if "n_lists" in f:
            cols[f"lists, grade ≥ {level}"] = f["n_lists"].astype(int)
        parts.append(pd.DataFrame(cols))
    values = pd.concat(parts, axis=1).reindex(list(dict.fromkeys(summary["metric"])))
    if "n_failed" in summary:
        values["failed"] = summary.groupby("metric", sort=False)["n_failed"].max().reindex(values.index).astype(int)
    if "reliable" in summary:
        values["reliable"] = summary.groupby("metric", sort=False)["reliable"].all().reindex(values.index)
    if "method" in summary:  # how the expected value was found; "sampled" is approximate
        values["form"] = summary.groupby("metric", sort=False)["method"].first().reindex(values.index)
    values.index.name = "metric"
    best = {c: "min" for c in values.columns if c.startswith("RMS")}
    return PaperTable(values, decimals=decimals, bold=best_mask(values, best, decimals),
                      note="Lower RMS error: the metric's value says more about the list's precision-recall curve.")


def g_grid_table(table: pd.DataFrame, *, decimals: int = 3) -> PaperTable:
    """GAP's mean RMS error over its threshold probabilities (rows g = (g1, g2)), per relevance threshold; the lines
    that do not depend on g (e.g. nDCG) as one row each. Bold: the lowest error per threshold."""
    import pandas as pd

    gap = table[table["line"] == "GAP"]
    rows = {}
    for (g1, g2), f in gap.groupby(["g1", "g2"], sort=True):
        rows[f"GAP(g={g1:g},{g2:g})"] = f.set_index("threshold")["mean_rms"]
    for line, f in table[table["line"] != "GAP"].groupby("line", sort=False):
        rows[line] = f.groupby("threshold")["mean_rms"].first()
    values = pd.DataFrame(rows).T
    values.columns = [f"RMS, grade ≥ {t}" for t in values.columns]
    values.index.name = "metric"
    best = {c: "min" for c in values.columns}
    return PaperTable(values, decimals=decimals, bold=best_mask(values, best, decimals))


# ------------------------------------------------------------------------------------------------------------------
# The meta-evaluation battery (meta_eval.meta) and learning to rank (meta_eval.statistics.learning_to_rank)
# ------------------------------------------------------------------------------------------------------------------


def percent(fraction: float) -> str:
    """A fraction as the percentage the battery's column names use (``0.5`` -> ``50 %``)."""
    return f"{100 * fraction:.0f} %"


def _row_labels(metrics, forms) -> list[str]:
    """``metric`` when every row has the same score form, ``metric (form)`` otherwise."""
    several = len(set(forms)) > 1
    return [f"{m} ({f})" if several else str(m) for m, f in zip(metrics, forms)]


def _cell_frames(rows: dict[str, dict[str, tuple]], index, columns):
    """values, low, high frames from ``{row: {column: (value, low, high)}}``."""
    import numpy as np
    import pandas as pd

    parts = [pd.DataFrame({c: [rows[r].get(c, (np.nan,) * 3)[k] for r in index] for c in columns},
                          index=pd.Index(index, name="metric")) for k in range(3)]
    return parts


def judgments_fractions(summary: pd.DataFrame) -> tuple[float, float]:
    """The two fractions :func:`judgments_table` shows: the smallest studied and the middle one."""
    fractions = sorted(set(summary["fraction"].tolist()))
    return fractions[0], fractions[len(fractions) // 2]


def judgments_table(result, *, threshold: float = 0.9, decimals: int = 3) -> PaperTable:
    """Robustness to incomplete judgments (:class:`~meta_eval.statistics.incomplete_judgments.IncompleteJudgments`), one row per metric (and
    score form): Kendall's τ_b with the full-qrels ranking at the smallest and the middle fraction of judgments
    kept and τ_AP at the middle one (mean over draws with the percentile interval), the smallest fraction from
    which the mean τ_b stays ≥ ``threshold``, and the percentage of system pairs a paired t-test separates at the
    middle fraction and with the full qrels. Bold: best per column."""
    summary = result.summary
    low_f, mid_f = judgments_fractions(summary)
    low_c, mid_c, ap_c = f"τ_b, {percent(low_f)} kept", f"τ_b, {percent(mid_f)} kept", f"τ_AP, {percent(mid_f)} kept"
    need_c, sig_c, full_c = (f"% kept for τ_b ≥ {threshold:g}", f"% significant, {percent(mid_f)} kept",
                             "% significant, full qrels")
    need = result.min_fraction(threshold).set_index(["metric", "form"])["min_fraction"]
    labels = dict(zip(zip(summary["metric"], summary["form"]), _row_labels(summary["metric"], summary["form"])))
    rows: dict[str, dict[str, tuple]] = {}
    nan = float("nan")
    for r in summary.itertuples(index=False):
        cells = rows.setdefault(labels[(r.metric, r.form)], {})
        if r.fraction == low_f:
            cells[low_c] = (r.kendall_tau_b, r.kendall_tau_b_low, r.kendall_tau_b_high)
        if r.fraction == mid_f:
            cells[mid_c] = (r.kendall_tau_b, r.kendall_tau_b_low, r.kendall_tau_b_high)
            cells[ap_c] = (r.tau_ap, r.tau_ap_low, r.tau_ap_high)
            cells[sig_c] = (100 * r.discpower, 100 * r.discpower_low, 100 * r.discpower_high)
        cells[need_c] = (100 * need[(r.metric, r.form)], nan, nan)
        cells[full_c] = (100 * r.discpower_full, nan, nan)
    columns = list(dict.fromkeys([low_c, mid_c, ap_c, need_c, sig_c, full_c]))
    values, low, high = _cell_frames(rows, list(rows), columns)
    digits = {low_c: decimals, mid_c: decimals, ap_c: decimals, need_c: 0, sig_c: 1, full_c: 1}
    best = {low_c: "max", mid_c: "max", ap_c: "max", need_c: "min", sig_c: "max"}
    return PaperTable(values, decimals=digits, bold=best_mask(values, best, digits), low=low, high=high,
                      note=f"τ with the same form's full-qrels ranking; {DASH} under “{need_c}”: not reached at "
                      "any fraction studied. Intervals: 2.5 and 97.5 percentiles over draws.")


def reusability_table(result) -> PaperTable:
    """Pool reusability (:class:`~meta_eval.statistics.reusability.Reusability`), one row per metric (and form): the judgments
    removed per run left out of the pool (mean), its mean score change, the largest score drop, the mean |rank
    change|, the largest rank drop and how many runs drop. Bold: the smallest mean |rank change| and largest drop
    in rank."""
    removed = result.runs.groupby(["metric", "form"], sort=False)["removed"].mean().rename("removed")
    summary = result.summary.join(removed, on=["metric", "form"])
    import pandas as pd

    values = pd.DataFrame({
        "judgments removed": summary["removed"].to_numpy(),
        "mean score change": summary["mean_score_change"].to_numpy(),
        "largest score drop": summary["min_score_change"].to_numpy(),
        "mean |rank change|": summary["mean_abs_rank_change"].to_numpy(),
        "largest rank drop": summary["max_rank_change"].to_numpy().astype(int),
        "runs dropping": summary["runs_dropping"].to_numpy().astype(int),
    }, index=pd.Index(_row_labels(summary["metric"], summary["form"]), name="metric"))
    digits = {"judgments removed": 1, "mean score change": 4, "largest score drop": 4, "mean |rank change|": 2}
    best = {"mean |rank change|": "min", "largest rank drop": "min"}
    runs = int(summary["runs"].max()) if len(summary) else 0
    return PaperTable(values, decimals=digits, bold=best_mask(values, best, digits),
                      note=f"Each of the {runs} runs is re-scored without the judgments only it contributed to the "
                      "pool and ranked among the other runs' official scores; a rank drop is a positive change.")


def anova_table(table: pd.DataFrame) -> PaperTable:
    """Two-way ANOVA per metric (:attr:`~meta_eval.statistics.anova.Anova.table`): F and partial ω² of the system and topic
    effects, and the residual variance V_E. Bold: the largest system ω² (the system effect explains most)."""
    import pandas as pd

    wide = {}
    for metric, f in table.groupby("metric", sort=False):
        f = f.set_index("effect")
        wide[metric] = {"F, system": f.loc["system", "F"], "ω², system": f.loc["system", "omega_sq"],
                        "F, topic": f.loc["topic", "F"], "ω², topic": f.loc["topic", "omega_sq"],
                        "V_E": f.loc["residual", "sum_sq"] / f.loc["residual", "df"]}
    values = pd.DataFrame(wide).T.astype(float)
    values.index.name = "metric"
    digits = {"F, system": 1, "F, topic": 1, "ω², system": 3, "ω², topic": 3, "V_E": 4}
    return PaperTable(values, decimals=digits, bold=best_mask(values, {"ω², system": "max"}, digits),
                      note="ω²: partial omega squared (Olejnik & Algina 2003); V_E: residual variance of the two-way "
                      "model (σ² of the topic-set-size design). p-values and sums of squares are in the CSV.")


def topic_set_size_columns(table: pd.DataFrame) -> list[tuple[str, int, float]]:
    """The (design, m, minD) cells :func:`topic_set_size_table` shows: the t-test at two minimum detectable
    differences of the grid (0.05 and 0.10 on raw scores, 0.25 and 0.5 on standardised ones, else the grid's
    quartiles) and the ANOVA design of the most systems at the larger one."""
    import numpy as np

    grid = sorted(set(np.round(table["min_d"], 6)))
    wanted = [d for d in ((0.05, 0.1) if grid[-1] < 0.5 else (0.25, 0.5)) if any(np.isclose(grid, d))]
    if len(wanted) < 2:
        wanted = sorted({grid[len(grid) // 4], grid[len(grid) // 2]})
    out = [("ttest", 2, d) for d in wanted if (table["design"] == "ttest").any()]
    anova = table[table["design"] == "anova"]
    if len(anova):
        out.append(("anova", int(anova["n_systems"].max()), wanted[-1]))
    return out


def topic_set_size_table(table: pd.DataFrame, n_topics: int | None = None) -> PaperTable:
    """Topics needed per metric (:attr:`~meta_eval.statistics.topic_set_size.TopicSetSize.table`) for the designs and minimum
    detectable differences of :func:`topic_set_size_columns`. Bold: the fewest topics per column."""
    import numpy as np
    import pandas as pd

    cols = {}
    for design, m, d in topic_set_size_columns(table):
        rows = table[(table["design"] == design) & (table["n_systems"] == m) & np.isclose(table["min_d"], d)]
        name = f"t-test, minD = {d:g}" if design == "ttest" else f"ANOVA (m = {m}), minD = {d:g}"
        cols[name] = rows.set_index("metric")["n_topics"].astype("Int64")  # missing where σ² = 0 (undefined)
    values = pd.DataFrame(cols).reindex(list(dict.fromkeys(table["metric"])))
    values.index.name = "metric"
    first = table.iloc[0]
    note = (f"Power {1 - first['beta']:g} at α = {first['alpha']:g} (Sakai 2016); σ² from the ANOVA residual "
            "variance" + (f"; this collection has {n_topics} topics." if n_topics else "."))
    return PaperTable(values, bold=best_mask(values, {c: "min" for c in values.columns}, 0), note=note)


def intuitiveness_table(matrix: pd.DataFrame, gold: str, *, decimals: int = 3) -> PaperTable:
    """Intuitiveness matrix (:meth:`~meta_eval.statistics.intuitiveness.Intuitiveness.matrix`): row x, column y = the share of the
    disagreements of x and y on which the gold criterion prefers x's choice; a dash on the diagonal."""
    values = matrix.copy()
    values.index.name = "metric"
    return PaperTable(values, decimals=decimals,
                      note=f"Row metric's share of its disagreements with the column metric (topic × system pairs "
                      f"ordered oppositely) on which {gold} sides with the row metric; the two shares of a pair add "
                      "up to less than 1 when the gold criterion ties. Counts are in the CSV.")


def split_half_table(summary: pd.DataFrame, *, decimals: int = 3) -> PaperTable:
    """Split-half stability, one row per metric: Kendall's τ_b and τ_AP-b between the rankings of two disjoint
    halves of n topics (the largest n, with the percentile interval over splits) and τ_b at half that size. Bold:
    the largest value per column."""
    sizes = sorted(set(summary["size"].astype(int)))
    big, small = sizes[-1], sizes[(len(sizes) - 1) // 2]
    rows: dict[str, dict[str, tuple]] = {}
    wanted = {(big, "kendall_tau_b"): f"τ_b, n = {big}", (big, "tau_ap_b"): f"τ_AP-b, n = {big}",
              (small, "kendall_tau_b"): f"τ_b, n = {small}"}
    for r in summary.itertuples(index=False):
        name = wanted.get((int(r.size), r.coefficient))
        if name:
            rows.setdefault(r.metric, {})[name] = (r.mean, r.ci_low, r.ci_high)
    columns = list(dict.fromkeys(wanted.values()))
    values, low, high = _cell_frames(rows, list(rows), columns)
    splits = int(summary["splits"].max())
    return PaperTable(values, decimals=decimals, bold=best_mask(values, {c: "max" for c in columns}, decimals),
                      low=low, high=high,
                      note=f"Mean over {splits} random splits, 2.5 and 97.5 percentiles in brackets.")


def ltr_table(result, informativeness: Mapping[str, float] | None = None, *, alpha: float = 0.05,
              decimals: int = 4) -> PaperTable:
    """Effectiveness when trained for a metric (:class:`~meta_eval.statistics.learning_to_rank.LTRResult`), beside the metric's
    informativeness: one row per (algorithm, trained-for metric), the mean test score per test metric, the best
    row of each algorithm and column in bold, † on rows significantly below it (p < ``alpha``), and the trained-for
    metric's mean RMS error of the informativeness stage (lower: more informative)."""
    import numpy as np
    import pandas as pd

    from meta_eval.statistics.learning_to_rank.experiment import ALGORITHM_LABELS, ltr_stage_table

    wide = ltr_stage_table(result, informativeness)
    t = result.table
    several = t["algorithm"].nunique() > 1
    label = [f"{ALGORITHM_LABELS.get(a, a)}, {m}" if several else str(m)
             for a, m in zip(wide["algorithm"], wide["trained_for"])]
    tests = [c for c in wide.columns if c.startswith("test ")]
    values = wide[tests].set_axis(pd.Index(label, name="trained for"))
    markers = pd.DataFrame("", index=values.index, columns=tests)
    bold = pd.DataFrame(False, index=values.index, columns=tests)
    key = {(a, m): lab for a, m, lab in zip(wide["algorithm"], wide["trained_for"], label)}
    for r in t.itertuples(index=False):
        row, col = key[(r.algorithm, r.trained_for)], f"test {r.test_measure}"
        bold.loc[row, col] = bool(r.best)
        markers.loc[row, col] = "†" if r.p_value < alpha else ""
    if informativeness is not None:
        rms = wide["informativeness"].to_numpy(dtype=float)
        values.insert(0, "RMS (informativeness)", rms)
        markers.insert(0, "RMS (informativeness)", "")
        lowest = np.isclose(rms, np.nanmin(rms)) if np.isfinite(rms).any() else np.zeros(len(rms), bool)
        bold.insert(0, "RMS (informativeness)", lowest)
    s = result.settings
    note = (f"Mean over {s.get('n_test_queries', '?')} test queries ({s.get('folds', '?')} fold(s)); bold: the best "
            f"objective per test metric; †: significantly below it ({s.get('significance', 'ttest')}, p < "
            f"{alpha:g}).")
    if informativeness is not None:
        note += " RMS: the trained-for metric's mean RMS error in the informativeness stage (lower: more informative)."
    return PaperTable(values, decimals={"RMS (informativeness)": 3, "*": decimals}, bold=bold, markers=markers,
                      note=note)
