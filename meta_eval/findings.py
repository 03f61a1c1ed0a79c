"""Written findings: short sentences built from the numbers of a study's compact tables.

Every number a finding quotes is taken from a :class:`~meta_eval.tables.PaperTable` cell as the table displays it
(and recorded as a :class:`Fact`: table, row, column, text), or is one of the study's parameters (recorded in
``params``) — so a test can check that the report says exactly what its tables show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from meta_eval.tables import PaperTable

__all__ = ["Fact", "Finding", "Quoter", "agreement_findings", "discpower_findings", "informativeness_findings"]


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


def _ranked(table: PaperTable, column: str) -> list[str]:
    """Row labels by the column's value, best (largest) first; rows without a value are left out."""
    import pandas as pd

    col = pd.to_numeric(table.values[column], errors="coerce").dropna()
    return [str(r) for r in col.sort_values(ascending=False, kind="stable").index]


def discpower_findings(tables: Mapping[str, PaperTable], *, name: str, method: str, n_resamples: int, alpha: float,
                       top: int | None) -> list[Finding]:
    """Most and least discriminative metric (all systems, then the top-k systems)."""
    q = Quoter(tables)
    t = tables[name]
    out = []
    for suffix, label in (("", "all"), (f" (top {top})", "top")) if top else (("", "all"),):
        column = f"% discriminated{suffix}"
        if column not in t.values.columns:
            continue
        order = _ranked(t, column)
        if len(order) < 2:
            continue
        best, worst = order[0], order[-1]
        if label == "all":
            sentence = (f"Discriminative power ({method}, B = {q.param('B', n_resamples)}, α = "
                        f"{q.param('alpha', alpha)}): {best} tells apart the most system pairs, "
                        f"{q(name, best, column)} % of {q(name, best, f'pairs{suffix}')} pairs, and {worst} the "
                        "fewest, "
                        f"{q(name, worst, column)} %.")
        else:
            sentence = (f"Among the top {q.param('top', top)} systems ({q(name, best, f'pairs{suffix}')} pairs), "
                        f"{best} tells apart the most, {q(name, best, column)} %, and {worst} the fewest, "
                        f"{q(name, worst, column)} %.")
        out.append(q.finding(sentence))
    return out


def agreement_findings(tables: Mapping[str, PaperTable], *, name: str, targets: Sequence[str],
                       references: Sequence[str], interval: str, confidence: float) -> list[Finding]:
    """Which metric under study agrees most and least with which reference (τ_b and symmetrised τ_AP, with
    intervals), from the metric x metric table (τ_b below the diagonal, τ_AP above)."""
    import pandas as pd

    q = Quoter(tables)
    t = tables[name]
    labels = [str(x) for x in t.values.index]
    pairs = []
    for x in targets:
        for y in references:
            if x == y or x not in labels or y not in labels:
                continue
            i, j = sorted((labels.index(x), labels.index(y)))
            below = (labels[j], labels[i])  # τ_b cell: lower triangle
            value = pd.to_numeric(pd.Series([t.values.loc[below]]), errors="coerce").iloc[0]
            if value == value:
                pairs.append((float(value), x, y, below, (labels[i], labels[j])))
    if not pairs:
        return []
    pairs.sort(key=lambda p: -p[0])

    def describe(p) -> str:
        _, x, y, below, above = p
        return (f"{x} with {y} (τ_b = {q(name, *below)} {q.interval(name, *below)}, τ_AP = {q(name, *above)} "
                f"{q.interval(name, *above)})")

    level = q.param("confidence", round(100 * confidence))
    if len(pairs) == 1:
        sentence = f"Agreement of the system rankings ({level} % {interval} intervals): {describe(pairs[0])}."
    else:
        sentence = (f"Agreement of the system rankings with the references ({level} % {interval} intervals): "
                    f"highest for {describe(pairs[0])}, lowest for {describe(pairs[-1])}.")
    return [q.finding(sentence)]


def informativeness_findings(tables: Mapping[str, PaperTable], *, name: str, targets: Sequence[str],
                             references: Sequence[str], threshold: int = 1) -> list[Finding]:
    """How informative each metric under study is against the references: mean RMS error ± s.e. with the number
    of lists, and whether the 95 % intervals (mean ± 1.96 s.e.) separate them."""
    import pandas as pd

    q = Quoter(tables)
    t = tables[name]
    mean_col, se_col, n_col = (f"{what}, grade ≥ {threshold}" for what in ("RMS", "s.e.", "lists"))
    if mean_col not in t.values.columns:
        return []
    rows = [str(r) for r in t.values.index]
    refs = [r for r in references if r in rows]
    studied = [x for x in targets if x in rows and x not in refs]

    def number(row, column) -> float:
        return float(pd.to_numeric(pd.Series([t.values.loc[row, column]]), errors="coerce").iloc[0])

    def quoted(row) -> str:
        return f"{row} {q(name, row, mean_col)} ± {q(name, row, se_col)} ({q(name, row, n_col)} lists)"

    if not studied or not all(number(x, mean_col) == number(x, mean_col) for x in studied):
        return []
    clauses = []
    for x in studied:
        m, s = number(x, mean_col), number(x, se_col)
        lower = [r for r in refs if m + 1.96 * s < number(r, mean_col) - 1.96 * number(r, se_col)]
        higher = [r for r in refs if number(r, mean_col) + 1.96 * number(r, se_col) < m - 1.96 * s]
        same = [r for r in refs if r not in lower and r not in higher]
        verdict = ", ".join(part for part in (
            f"more informative than {' and '.join(lower)}" if lower else "",
            f"less informative than {' and '.join(higher)}" if higher else "",
            f"not distinguishable from {' and '.join(same)}" if same else "") if part)
        flagged = "reliable" in t.values.columns and t.values.loc[x, "reliable"] is not None and \
            not bool(t.values.loc[x, "reliable"])
        clauses.append(f"{quoted(x)}" + (f": {verdict}" if verdict else "")
                       + (" (flagged unreliable by the solver; see the table)" if flagged else ""))
    references_text = (" and ".join(quoted(r) for r in refs) + "; ") if refs else ""
    sentence = (f"Informativeness (mean RMS error ± s.e. of the precision-recall curves inferred from a metric's value, "
                f"relevant: grade ≥ {q.param('threshold', threshold)}; lower is more informative; a difference is "
                f"claimed only where the {q.param('level', 95)} % intervals do not overlap): {references_text}"
                f"{'; '.join(clauses)}.")
    return [q.finding(sentence)]
