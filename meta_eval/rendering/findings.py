"""Written findings: short sentences built from the numbers of a study's compact tables.

Every number a finding quotes is taken from a :class:`~meta_eval.rendering.paper_table.PaperTable` cell as the table displays it
(and recorded as a :class:`Fact`: table, row, column, text), or is one of the study's parameters (recorded in
``params``) — so a test can check that the report says exactly what its tables show. Findings carry no citation
years (the report's sections cite the methods), so every digit of a sentence is a cell or a parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from meta_eval.rendering.paper_table import PaperTable

__all__ = ["Fact", "Finding", "Quoter", "extremes", "joined", "ranked", "tied"]


@dataclass(frozen=True)
class Fact:
    """A number quoted from a table: ``table`` (file stem), ``row``, ``column``, and the ``text`` shown;
    ``part`` is ``value`` or ``interval``."""

    table: str
    row: str
    column: str
    text: str
    part: str = "value"


@dataclass
class Finding:
    """One sentence with the table cells and parameters it quotes."""

    sentence: str
    facts: list[Fact] = field(default_factory=list)
    params: dict[str, str] = field(default_factory=dict)


class Quoter:
    """Quotes cells of named tables and records them (one per finding)."""

    def __init__(self, tables: Mapping[str, PaperTable]):
        self.tables = tables
        self.facts: list[Fact] = []
        self.params: dict[str, str] = {}

    def __call__(self, table: str, row, column) -> str:
        text = self.tables[table].text(row, column)
        self.facts.append(Fact(table, str(row), str(column), text))
        return text

    def interval(self, table: str, row, column) -> str:
        text = self.tables[table].interval(row, column)
        self.facts.append(Fact(table, str(row), str(column), text, "interval"))
        return text

    def param(self, name: str, value) -> str:
        text = f"{value:g}" if isinstance(value, float) else str(value)
        self.params[name] = text
        return text

    def finding(self, sentence: str) -> Finding:
        found = Finding(sentence, self.facts, self.params)
        self.facts, self.params = [], {}
        return found


def ranked(table: PaperTable, column: str, *, ascending: bool = False) -> list[str]:
    """Row labels by the column's value, best (largest, or smallest with ``ascending``) first; rows without a
    value are left out."""
    import pandas as pd

    col = pd.to_numeric(table.values[column], errors="coerce").dropna()
    return [str(r) for r in col.sort_values(ascending=ascending, kind="stable").index]


def tied(table: PaperTable, column: str, order: list[str], *, interval: bool = False) -> list[str]:
    """The rows of ``order`` shown with the same value as its first (and the same interval, with ``interval``): a
    finding names them all, never one picked by the order of the rows."""
    def shown(row: str) -> tuple[str, str]:
        return table.text(row, column), table.interval(row, column) if interval else ""

    return [row for row in order if shown(row) == shown(order[0])]


def joined(labels: list[str]) -> str:
    """``A``, ``A and B``, ``A, B and C``."""
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def extremes(q: Quoter, name: str, column: str, *, ascending: bool = False, interval: bool = False,
              what: str = "") -> tuple[str, str, str, str] | None:
    """(best rows, their quoted cell, worst rows, their quoted cell) of a column, or None without a value: rows
    shown with the same value are named together (``AP and GAP``); with one row, or every row tied, the best is the
    worst (and quoted once). ``what`` prefixes each quoted number (e.g. ``"τ_b = "``)."""
    table = q.tables[name]
    order = ranked(table, column, ascending=ascending)
    if not order:
        return None

    def cell(row: str) -> str:
        return f"{what}{q(name, row, column)}" + (f" {q.interval(name, row, column)}" if interval else "")

    top, bottom = tied(table, column, order, interval=interval), tied(table, column, order[::-1], interval=interval)
    first = cell(order[0])
    if len(top) == len(order):  # every row alike
        return joined(top), first, joined(top), first
    return joined(top), first, joined(bottom[::-1]), cell(order[-1])


# ------------------------------------------------------------------------------------------------------------------
# The meta-evaluation battery and learning to rank
# ------------------------------------------------------------------------------------------------------------------


