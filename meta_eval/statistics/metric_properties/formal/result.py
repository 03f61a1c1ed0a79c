"""What the formal-property search returns: the search sizes, one verdict per metric, property and space, with the
cases that show it, and the result gathering them."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np
import pandas as pd

from meta_eval.core.errors import InputError
from meta_eval.core.params import MAX_INT

HELD, VIOLATED, UNDEFINED = "held", "violated", "undefined"
#: The two spaces searched: grades 0..1 and grades 0..c.
SPACES = ("binary", "graded")
SYMBOL = {HELD: "✓", VIOLATED: "✗", UNDEFINED: "–"}


#: Each search size: its allowed range (what keeps the exhaustive spaces in memory and the search to seconds) and
#: what it sets, in words.
LIMITS = {"length": (1, 7), "binary_length": (1, 12), "grades": (2, 4), "unretrieved": (0, 6),
          "random_cases": (0, 20_000), "random_length": (2, 64), "threshold_depth": (1, 1024),
          "growth_length": (4, 1 << 16), "seed": (0, MAX_INT)}
DOCS = {"length": "graded space: every ranking of up to this many documents (exhaustive)",
        "binary_length": "binary space: every ranking of up to this many documents (exhaustive)",
        "grades": "highest grade of the graded space",
        "unretrieved": "judged documents a ranking may leave unretrieved, beyond its length (exhaustive) and per "
                       "grade (random)",
        "random_cases": "random rankings per space, of the lengths beyond the exhaustive ones",
        "random_length": "longest random ranking",
        "threshold_depth": "Amigó et al.'s thresholds: n relevant documents after n non-relevant, n up to this",
        "growth_length": "boundedness probe: rankings of 1, 2, 4, ... up to this many documents",
        "seed": "seed of the random search"}


@dataclass(frozen=True)
class SearchSizes:
    """How much of the space of cases the search covers (every size is stated with each "held").

    Attributes
    ----------
    length : int
        Graded space: every list of 0..length documents over grades 0..``grades`` (exhaustive).
    binary_length : int
        Binary space: every list of 0..binary_length documents over grades 0..1 (exhaustive).
    grades : int
        c, the highest grade of the graded space.
    unretrieved : int
        Qrels compositions of up to (list length + unretrieved) judged documents in the exhaustive spaces, and
        0..unretrieved unretrieved judged documents of each grade in the random search.
    random_cases : int
        Random base cases per space, spread evenly over the lengths past the exhaustive ones up to
        ``random_length``; each yields one random candidate of every comparison.
    random_length : int
        Longest random list.
    threshold_depth : int
        Amigó et al.'s thresholds: n = 1..threshold_depth.
    growth_length : int
        Boundedness probe: lists of 1, 2, 4, ... up to this many documents.
    seed : int
        Seed of the random search.
    """

    length: int = 6
    binary_length: int = 10
    grades: int = 2
    unretrieved: int = 3
    random_cases: int = 4000
    random_length: int = 24
    threshold_depth: int = 64
    growth_length: int = 4096
    seed: int = 0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            lo, hi = LIMITS[f.name]
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
                raise InputError(f"formal properties: {f.name} must be an integer in [{lo}, {hi}], got {value!r}")
        if self.random_length <= max(self.length, self.binary_length):
            raise InputError(f"formal properties: random_length ({self.random_length}) must exceed the exhaustive "
                             f"lengths ({self.length}, {self.binary_length}): the random search goes beyond them")

    def describe(self, space: str) -> str:
        """The space searched, in words (what "held" means)."""
        c, n = (1, self.binary_length) if space == "binary" else (self.grades, self.length)
        return (f"every ranking of 0-{n} documents over grades 0-{c} with every qrels of up to {n + self.unretrieved} "
                f"judged documents holding it; {self.random_cases} random rankings of {n + 1}-{self.random_length} "
                f"documents with 0-{self.unretrieved} unretrieved judged documents per grade (seed {self.seed})")


@dataclass(frozen=True)
class Case:
    """A ranked list, its topic's qrels (judged documents per grade 0..c) and the metric's value."""

    ranking: tuple[int, ...]
    counts: tuple[int, ...]
    value: float

    @property
    def ranking_text(self) -> str:
        """Grades top first (``2 1 0``); long runs shortened (``0×64 2×64``); ``(empty)``."""
        if not self.ranking:
            return "(empty)"
        runs = []
        for g in self.ranking:
            if runs and runs[-1][0] == g:
                runs[-1][1] += 1
            else:
                runs.append([g, 1])
        if len(self.ranking) <= 24:
            return " ".join(str(g) for g in self.ranking)
        return " ".join(f"{g}×{k}" if k > 2 else " ".join([str(g)] * k) for g, k in runs)

    @property
    def counts_text(self) -> str:
        """``n0/n1/n2``: judged documents of grade 0, 1, 2."""
        return "/".join(str(k) for k in self.counts)

    def __str__(self) -> str:
        return f"[{self.ranking_text}] q={self.counts_text} -> {self.value:.6g}"


@dataclass(frozen=True)
class Verdict:
    """One metric, one property, one space (``binary`` or ``graded``).

    ``status``: held (no counterexample in the space searched), violated (``evidence`` shows it), or undefined
    (nothing to test: every value involved is NaN, or the property presupposes one that failed). ``checked``:
    comparisons (or cases) with defined values; ``skipped``: those with a NaN. ``evidence``: the smallest
    counterexample found (for an existence property, the witness when held and the deepest probe when
    violated); ``claim``: what it shows, in words.
    """

    metric: str
    prop: str
    space: str
    status: str
    checked: int
    skipped: int = 0
    evidence: tuple[Case, ...] = ()
    claim: str = ""

    def __str__(self) -> str:
        cases = "; ".join(str(c) for c in self.evidence)
        return f"{self.metric} {self.prop} ({self.space}): {self.status}" + (f" — {self.claim}: {cases}"
                                                                             if cases else "")


@dataclass
class FormalProperties:
    """The verdicts of every metric on every property, in both spaces (a dataclass of numbers, scipy-style).

    Attributes
    ----------
    metrics : list of str
        The metrics, in the order given.
    properties : list of str
        The properties, in catalogue order.
    verdicts : list of Verdict
        One per metric, property and space.
    sizes : SearchSizes
        What was searched.
    """

    metrics: list[str]
    properties: list[str]
    verdicts: list[Verdict]
    sizes: SearchSizes
    _index: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._index = {(v.metric, v.prop, v.space): v for v in self.verdicts}

    def get(self, metric: str, prop: str, space: str) -> Verdict:
        key = (metric, prop, space)
        if key not in self._index:
            raise InputError(f"no verdict for metric {metric!r}, property {prop!r}, space {space!r}; metrics: "
                             f"{self.metrics}; properties: {self.properties}")
        return self._index[key]

    def verdict(self, metric: str, prop: str) -> Verdict:
        """The deciding verdict over both spaces: a violation (the binary one first), else a held one, else
        undefined."""
        both = [self.get(metric, prop, s) for s in SPACES]
        for status in (VIOLATED, HELD):
            for v in both:
                if v.status == status:
                    return v
        return both[0]

    def status(self, metric: str, prop: str) -> str:
        """held, violated or undefined over both spaces."""
        return self.verdict(metric, prop).status

    def binary_only(self, metric: str, prop: str) -> bool:
        """Whether the property holds for binary relevance but is violated once grades are told apart (as for a
        binary metric scored on graded qrels)."""
        return self.get(metric, prop, "binary").status == HELD and self.get(metric, prop, "graded").status == VIOLATED

    def symbol(self, metric: str, prop: str) -> str:
        """✓ held, ✗ violated, – undefined, ✓/✗ held for binary relevance only."""
        return f"{SYMBOL[HELD]}/{SYMBOL[VIOLATED]}" if self.binary_only(metric, prop) else \
            SYMBOL[self.status(metric, prop)]

    def matrix(self) -> pd.DataFrame:
        """Metrics × properties of the combined status."""
        return pd.DataFrame([[self.status(m, p) for p in self.properties] for m in self.metrics],
                            index=pd.Index(self.metrics, name="metric"), columns=self.properties)

    def to_frame(self) -> pd.DataFrame:
        """Every verdict as a row: metric, property, space, status, checked, skipped, claim, and the evidence
        cases (ranking, qrels, value) as text."""
        rows = []
        for v in self.verdicts:
            row = {"metric": v.metric, "property": v.prop, "space": v.space, "status": v.status,
                   "checked": v.checked, "skipped": v.skipped, "claim": v.claim}
            for k in range(3):
                case = v.evidence[k] if k < len(v.evidence) else None
                row[f"ranking {'ABC'[k]}"] = case.ranking_text if case else ""
                row[f"qrels {'ABC'[k]}"] = case.counts_text if case else ""
                row[f"value {'ABC'[k]}"] = case.value if case else np.nan
            rows.append(row)
        return pd.DataFrame(rows)
