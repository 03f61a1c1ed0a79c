"""What an analysis returns: a :class:`Result` (a dataclass of its numbers) that lists its tables
(:class:`TableOutput`), its figures (:class:`FigureOutput`, drawn when written) and its findings.

Every layer above the analyses (the report, the commands, the study, a notebook) reads a result through this
protocol only; :func:`meta_eval.analyses._containment.checked` computes and checks its outputs once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from matplotlib.figure import Figure

    from meta_eval.rendering.findings import Finding
    from meta_eval.rendering.paper_table import PaperTable

__all__ = ["FigureOutput", "Result", "TableOutput"]


@dataclass
class TableOutput:
    """One table of a result: ``stem``.csv holds ``frame`` (the full detail); ``compact``, when there is one, is
    the paper table shown in reports and written as ``stem``.tex with ``caption``."""

    stem: str
    caption: str
    frame: pd.DataFrame
    compact: PaperTable | None = None


@dataclass
class FigureOutput:
    """One figure of a result, drawn by ``draw()`` when it is written. ``in_report=False``: written by the
    analysis's own command only (the study report's table already shows the same numbers)."""

    stem: str
    caption: str
    draw: Callable[[], Figure]
    in_report: bool = True


@dataclass
class Result:
    """Base class of analysis results: the protocol every layer above the analyses uses.

    A subclass (a dataclass of its numbers) implements :meth:`tables` and, when it has them, :meth:`figures` and
    :meth:`findings`; it is given :attr:`text` (how the numbers were obtained: method, parameters, seed, in a few
    sentences). Running the declaration records in :attr:`analysis` which analysis produced it and in
    :attr:`params` with what parameters.
    """

    text: str = field(default="", kw_only=True)
    analysis: str = field(default="", kw_only=True)
    params: Mapping[str, Any] = field(default_factory=dict, kw_only=True)

    def tables(self) -> list[TableOutput]:
        """Every table of the result, the main one first."""
        raise NotImplementedError(f"{type(self).__name__} must implement tables()")

    def to_frame(self) -> pd.DataFrame:
        """The full tidy table of the result (its main CSV)."""
        return self.outputs[0].frame

    def table(self) -> PaperTable:
        """The compact table a paper shows (the first table that has one; else the main frame as a table)."""
        from meta_eval.rendering.paper_table import PaperTable

        compact = next((t.compact for t in self.outputs if t.compact is not None), None)
        return compact if compact is not None else PaperTable(self.to_frame().set_index(self.to_frame().columns[0]))

    def figures(self) -> list[FigureOutput]:
        """The result's figures (none by default)."""
        return []

    def findings(self) -> list[Finding]:
        """Sentences quoting the result's compact tables (none by default)."""
        return []

    @property
    def compact(self) -> dict[str, PaperTable]:
        """The compact tables by file stem: what :class:`~meta_eval.rendering.findings.Quoter` quotes."""
        return {t.stem: t.compact for t in self.outputs if t.compact is not None}

    @cached_property
    def outputs(self) -> list[TableOutput]:
        """:meth:`tables`, built once (the writers and :attr:`compact` read the same objects)."""
        return self.tables()

    @cached_property
    def figure_outputs(self) -> list[FigureOutput]:
        """:meth:`figures`, listed once (what the writers draw)."""
        return self.figures()

    @cached_property
    def finding_list(self) -> list[Finding]:
        """:meth:`findings`, stated once (what the report and the command print)."""
        return self.findings()
