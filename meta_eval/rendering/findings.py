"""Written findings: short sentences built from the numbers of a study's compact tables.

Every number a finding quotes is taken from a :class:`~meta_eval.rendering.paper_table.PaperTable` cell as the table displays it
(and recorded as a :class:`Fact`: table, row, column, text), or is one of the study's parameters (recorded in
``params``) — so a test can check that the report says exactly what its tables show. Findings carry no citation
years (the report's sections cite the methods), so every digit of a sentence is a cell or a parameter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from meta_eval.rendering.paper_table import PaperTable

__all__ = ["Fact", "Finding", "Quoter", "agreement_findings", "anova_findings", "discpower_findings",
           "informativeness_findings", "intuitiveness_findings", "judgments_findings", "ltr_findings",
           "reusability_findings", "split_half_findings", "topic_set_size_findings"]


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


def _ranked(table: PaperTable, column: str, *, ascending: bool = False) -> list[str]:
    """Row labels by the column's value, best (largest, or smallest with ``ascending``) first; rows without a
    value are left out."""
    import pandas as pd

    col = pd.to_numeric(table.values[column], errors="coerce").dropna()
    return [str(r) for r in col.sort_values(ascending=ascending, kind="stable").index]


def _extremes(q: Quoter, name: str, column: str, *, ascending: bool = False, interval: bool = False,
              what: str = "") -> tuple[str, str, str, str] | None:
    """(best row, its quoted cell, worst row, its quoted cell) of a column, or None without a value; with one row
    the best is the worst (and quoted once). ``what`` prefixes each quoted number (e.g. ``"τ_b = "``)."""
    order = _ranked(q.tables[name], column, ascending=ascending)
    if not order:
        return None

    def cell(row: str) -> str:
        return f"{what}{q(name, row, column)}" + (f" {q.interval(name, row, column)}" if interval else "")

    first = cell(order[0])
    return order[0], first, order[-1], first if len(order) == 1 else cell(order[-1])


def discpower_findings(tables: Mapping[str, PaperTable], *, name: str, method: str, n_resamples: int, alpha: float,
                       top: int | None, pairs: Mapping[str, int | None]) -> list[Finding]:
    """Most and least discriminative metric (all systems, then the top-k systems); one clause when every metric
    tells apart as many pairs (as shown). ``pairs``: the number of system pairs of each subset (``all``, ``top``)."""
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
        n_pairs = q.param(f"pairs ({label})", pairs[label])
        lead = (f"Discriminative power ({method}, B = {q.param('B', n_resamples)}, α = {q.param('alpha', alpha)}, "
                f"{n_pairs} system pairs): " if label == "all" else
                f"Among the top {q.param('top', top)} systems ({n_pairs} pairs), ")
        if t.text(best, column) == t.text(worst, column):
            sentence = f"{lead}every metric tells apart {q(name, best, column)} % of the pairs."
        else:
            sentence = (f"{lead}{best} tells apart the most pairs, {q(name, best, column)} %, and {worst} the "
                        f"fewest, {q(name, worst, column)} %.")
        out.append(q.finding(sentence[0].upper() + sentence[1:]))
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


# ------------------------------------------------------------------------------------------------------------------
# The meta-evaluation battery and learning to rank
# ------------------------------------------------------------------------------------------------------------------


def split_half_findings(tables: Mapping[str, PaperTable], *, name: str, n_splits: int) -> list[Finding]:
    """Which metric's system ranking is most and least stable across disjoint topic halves (largest halves)."""
    q = Quoter(tables)
    t = tables[name]
    column = next((c for c in t.values.columns if c.startswith("τ_b, n = ")), None)
    if column is None:
        return []
    size = column.split("= ")[1]
    found = _extremes(q, name, column, interval=True, what="τ_b = ")
    if found is None:
        return []
    best, best_cell, worst, worst_cell = found
    lead = (f"Split-half stability ({q.param('splits', n_splits)} random splits into two halves "
            f"of {q.param('half', size)} topics): ")
    sentence = lead + (f"the halves rank the systems with {best_cell} under {best}." if best == worst else
                       f"the halves rank the systems most alike under {best} ({best_cell}) and least alike under "
                       f"{worst} ({worst_cell}).")
    return [q.finding(sentence)]


def anova_findings(tables: Mapping[str, PaperTable], *, name: str) -> list[Finding]:
    """Which metric's scores the system effect explains most and least (partial ω² of the two-way ANOVA)."""
    q = Quoter(tables)
    found = _extremes(q, name, "ω², system", what="ω² = ")
    if found is None:
        return []
    best, best_cell, worst, worst_cell = found
    topic = _extremes(q, name, "ω², topic", what="ω² = ")
    if best == worst:
        sentence = f"Two-way ANOVA (system + topic) of {best}: system effect {best_cell}"
        return [q.finding(sentence + (f", topic effect {topic[1]}." if topic is not None else "."))]
    sentence = (f"Two-way ANOVA (system + topic): the system effect is largest under {best} ({best_cell}) and "
                f"smallest under {worst} ({worst_cell})")
    if topic is not None and topic[1] == topic[3]:
        sentence += f"; the topic effect is {topic[1]} under every metric"
    elif topic is not None:
        sentence += f"; the topic effect ranges from {topic[3]} ({topic[2]}) to {topic[1]} ({topic[0]})"
    return [q.finding(sentence + ".")]


def topic_set_size_findings(tables: Mapping[str, PaperTable], *, name: str, n_topics: int, power: float,
                            alpha: float) -> list[Finding]:
    """How many topics each metric needs (paired t-test design, the smallest minD the table shows)."""
    q = Quoter(tables)
    t = tables[name]
    column = next((c for c in t.values.columns if c.startswith("t-test")), None)
    if column is None:
        return []
    found = _extremes(q, name, column, ascending=True)
    if found is None:
        return []
    best, best_cell, worst, worst_cell = found
    needs = (f"{best} needs {best_cell} topics" if best == worst else
             f"{best} needs the fewest topics, {best_cell}, and {worst} the most, {worst_cell}")
    sentence = (f"Topic-set size (Sakai's design; paired t-test, power {q.param('power', power)}, α = "
                f"{q.param('alpha', alpha)}, minD = {q.param('minD', column.split('= ')[1])}): {needs}; this "
                f"collection has {q.param('topics', n_topics)}.")
    return [q.finding(sentence)]


def intuitiveness_findings(tables: Mapping[str, PaperTable], *, name: str, gold: str, targets: Sequence[str],
                           references: Sequence[str]) -> list[Finding]:
    """Each metric under study against each reference: the share of their disagreements on which the gold
    criterion sides with each (Sakai 2012)."""
    q = Quoter(tables)
    t = tables[name]
    rows = [str(r) for r in t.values.index]
    pairs = [(x, y) for x in targets for y in references if x != y and x in rows and y in rows]
    if not pairs:  # no reference among the metrics: every pair
        pairs = [(x, y) for i, x in enumerate(rows) for y in rows[i + 1:]]
    by_metric: dict[str, dict[str, list[str]]] = {}
    for x, y in pairs:
        a, b = q(name, x, y), q(name, y, x)
        if a == "–" or b == "–":  # the two metrics never disagree
            continue
        side = "more" if float(t.values.loc[x, y]) > float(t.values.loc[y, x]) else \
            "less" if float(t.values.loc[x, y]) < float(t.values.loc[y, x]) else "as"
        by_metric.setdefault(x, {}).setdefault(side, []).append(f"{y} ({a} vs {b})")
    if not by_metric:
        return []
    parts = []
    for x, sides in by_metric.items():
        said = [f"{word} intuitive than {' and '.join(sides[key])}" for key, word in
                (("more", "more"), ("less", "less"), ("as", "as")) if key in sides]
        parts.append(f"{x} is " + "; ".join(said))
    sentence = (f"Intuitiveness against {q.param('gold', gold)} (Sakai's concordance test: in the system-topic pairs "
                f"two metrics order oppositely, the share where {gold} sides with each; higher is more intuitive). "
                + ". ".join(parts) + ".")
    return [q.finding(sentence)]


def judgments_findings(tables: Mapping[str, PaperTable], *, name: str, sampling: str, n_draws: int,
                       threshold: float) -> list[Finding]:
    """Which metric's ranking survives reduced judgments best (τ_b at the middle fraction) and which needs the
    fewest judgments to keep τ_b ≥ threshold."""
    q = Quoter(tables)
    t = tables[name]
    middle = [c for c in t.values.columns if c.startswith("τ_b, ")]
    need = f"% kept for τ_b ≥ {threshold:g}"
    if not middle:
        return []
    column = middle[-1]
    kept = column.split(", ")[1].replace(" kept", "")
    found = _extremes(q, name, column, interval=True, what="τ_b = ")
    if found is None:
        return []
    best, best_cell, worst, worst_cell = found
    sentence = (f"Incomplete judgments ({sampling} sampling, {q.param('draws', n_draws)} draws per fraction): with "
                f"{q.param('kept', kept)} of the judgments kept, the system ranking "
                + (f"keeps {best_cell} with the full-qrels ranking under {best}" if best == worst else
                   f"stays closest to the full-qrels ranking under {best} ({best_cell}) and moves most under {worst} "
                   f"({worst_cell})"))
    if need in t.values.columns:
        reached = _ranked(t, need, ascending=True)
        missing = [str(r) for r in t.values.index if str(r) not in reached]
        level = q.param("threshold", threshold)
        parts = []
        if reached and t.text(reached[0], need) == t.text(reached[-1], need):
            who = " and ".join(reached) if missing else "every metric"
            parts.append(f"τ_b stays ≥ {level} down to {q(name, reached[0], need)} % of the judgments under {who}")
        elif reached:
            parts.append(f"τ_b stays ≥ {level} down to {q(name, reached[0], need)} % of the judgments under "
                         f"{reached[0]} but only down to {q(name, reached[-1], need)} % under {reached[-1]}")
        if missing:
            parts.append(f"τ_b ≥ {level} is reached at no fraction studied under {' and '.join(missing)}")
        sentence += "; " + "; ".join(parts)
    return [q.finding(sentence + ".")]


def reusability_findings(tables: Mapping[str, PaperTable], *, name: str, unit: str, depth: int) -> list[Finding]:
    """Under which metric a run left out of the pool moves least and most (mean |rank change|)."""
    q = Quoter(tables)
    column = "mean |rank change|"
    order = _ranked(tables[name], column, ascending=True)
    if not order:
        return []
    best, worst = order[0], order[-1]
    lead = (f"Pool reusability (leave-one-{unit}-out, pool depth {q.param('depth', depth)}): a {unit} left out of "
            f"the pool (losing {q(name, best, 'judgments removed')} judgments on average)")
    t = tables[name]
    drops = _ranked(t, "largest rank drop")
    if t.text(best, column) == t.text(worst, column):
        if t.text(drops[0], "largest rank drop") == t.text(drops[-1], "largest rank drop"):
            sentence = (f"{lead} moves alike under every metric: mean |rank change| {q(name, best, column)}, at most "
                        f"{q(name, best, 'largest rank drop')} places down")
            if float(t.values.loc[best, column]) == 0 and float(t.values.loc[best, "largest rank drop"]) == 0:
                sentence = f"{lead} keeps its rank under every metric"
        else:
            sentence = (f"{lead} moves alike under every metric on average (mean |rank change| "
                        f"{q(name, best, column)}); it drops at most {q(name, drops[0], 'largest rank drop')} places "
                        f"under {drops[0]}")
        sentence += "."
    else:
        sentence = (f"{lead} moves least under {best} (mean |rank change| {q(name, best, column)}, at most "
                    f"{q(name, best, 'largest rank drop')} places down) and most under {worst} "
                    f"({q(name, worst, column)}, at most {q(name, worst, 'largest rank drop')} places down).")
    return [q.finding(sentence)]


def ltr_findings(tables: Mapping[str, PaperTable], *, name: str, algorithm: str, n_queries: int) -> list[Finding]:
    """The best objective for each test metric, and how the most informative metric fares as an objective."""
    q = Quoter(tables)
    t = tables[name]
    tests = [c for c in t.values.columns if c.startswith("test ")]
    if not tests or len(t.values) < 2:
        return []
    bests = []
    for column in tests:
        rows = [str(r) for r, b in zip(t.values.index, t.bold[column]) if b]
        if rows:
            bests.append(f"{column[5:]}: {' and '.join(rows)} ({q(name, rows[0], column)})")
    sentence = (f"Learning to rank ({algorithm}; {q.param('queries', n_queries)} test queries): the best objective "
                "per test metric — " + "; ".join(bests))
    rms = "RMS (informativeness)"
    if rms in t.values.columns:
        order = _ranked(t, rms, ascending=True)
        if order:
            top = order[0]
            best_on = [c[5:] for c in tests if bool(t.bold.loc[top, c])]
            below = [c[5:] for c in tests if "†" in str(t.markers.loc[top, c])]
            sentence += (f". Trained for the most informative metric, {top} (RMS {q(name, top, rms)}), the ranker "
                         f"is the best on {', '.join(best_on) if best_on else 'no test metric'} and significantly "
                         f"below the best on {', '.join(below) if below else 'none'}")
    return [q.finding(sentence + ".")]
