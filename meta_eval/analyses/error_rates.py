"""Error rates of significance tests under each metric: how often the paired t, Wilcoxon, sign, bootstrap and
randomisation tests call equal systems different (Type I), find a planted difference (power) or find it the wrong
way round (Type III), and how often Bonferroni, Holm, Benjamini-Hochberg and the Tukey HSD make a false discovery
over all pairs of a family of systems (FWER, FDR) — each against the number of topics, by resampling the
collection's own scores (the engine, and the design in full, is :mod:`meta_eval.statistics.significance.error_rates`).

Discriminative power counts the pairs a metric calls significant; these rates say how many of such calls are
errors. The whole analysis is this module: its declaration, result, tables, figures and findings.

References
----------
Urbano, J., Lima, H. & Hanjalic, A. (2019). Statistical significance testing in information retrieval: an empirical
analysis of Type I, Type II and Type III errors. *SIGIR*.
Ihemelandu, N. & Ekstrand, M. D. (2023). Inference at scale: significance testing for large search and
recommendation experiments. *SIGIR*.
Otero, D., Parapar, J. & Barreiro, Á. (2025). Towards reliable testing for multiple information retrieval system
comparisons. arXiv:2501.03930.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from meta_eval.analyses._base import AnalysisData, MemoryNeed
from meta_eval.analyses._result import FigureOutput, Result, TableOutput
from meta_eval.analyses._registry import analysis
from meta_eval.core.params import ANALYSIS_PARAMS, MAX_INT, Param
from meta_eval.statistics.error_rate_design import (CORRECTIONS, DEFAULT_EFFECTS, DEFAULT_FAMILY_TESTS, NULLS,
                                                    TEST_LABELS, TESTS, UNITS)


@dataclass
class ErrorRates(Result):
    """``errors`` (:class:`~meta_eval.statistics.significance.error_rates.SignificanceErrors`): the rates of every metric,
    test, procedure, size and effect; the compact tables show the largest size (and the middle effect)."""

    errors: Any
    effect: float
    colors: dict | None = None

    @property
    def largest(self) -> int:
        return int(self.errors.pairs["topics"].max())

    @property
    def smallest(self) -> int:
        return int(self.errors.pairs["topics"].min())

    def tables(self) -> list[TableOutput]:
        e = self.errors
        unit = _unit(e)
        trials = f"{e.n_trials:,} trials per cell; {_percent(e.confidence)} % Wilson intervals"
        out = [TableOutput("error_rates_type1", f"Type I error rate at α = {e.alpha:g}: share of null pairs "
                           f"({e.null}) that each test calls significant, with {self.largest} topics ({trials})",
                           e.type1(), _pair_table(e.type1(), self.largest, None, "rate")),
               TableOutput("error_rates_power", f"Power at effect {self.effect:g} {unit}: share of pairs with the "
                           f"planted effect called significant at α = {e.alpha:g}, with {self.largest} topics "
                           f"({trials})", e.power(), _pair_table(e.power(), self.largest, self.effect, "rate",
                                                                  best="max"))]
        smallest_effect = float(e.power()["effect"].min())
        type3 = _pair_table(e.power(), self.smallest, smallest_effect, "type3")
        out.append(TableOutput("error_rates_type3", f"Type III error rate: share of pairs with effect "
                               f"{smallest_effect:g} {unit} called significant the wrong way round, with "
                               f"{self.smallest} topics ({trials})", _cells_frame(type3), type3))
        if len(e.families):
            m, pairs = e.family_size, e.family_size * (e.family_size - 1) // 2
            family = f"families of {m} systems ({pairs} pairs), {self.largest} topics, {e.family_trials:,} trials"
            fwer = _family_table(e.families, self.largest, 0.0, "fwer")
            fdr = _family_table(e.families, self.largest, e.family_effect, "fdr")
            out += [TableOutput("error_rates_fwer", f"Family-wise error rate under the complete null: share of "
                                f"{family} with a false discovery ({_percent(e.confidence)} % Wilson intervals)",
                                e.families, fwer),
                    TableOutput("error_rates_fdr", f"False discovery rate with half of each family raised by "
                                f"{e.family_effect:g} {unit}: mean share of false discoveries among the discoveries, "
                                f"{family} ({_percent(e.confidence)} % Wilson intervals)", _cells_frame(fdr), fdr)]
        return out

    def figures(self) -> list[FigureOutput]:
        out = [FigureOutput("error_rates_type1", "Type I error rate of each test against the number of topics (α "
                            "dashed; Wilson intervals shaded)", lambda: _styled(_type1_figure)(self.errors)),
               FigureOutput("error_rates_power", f"Power against the effect size with {self.largest} topics; dotted: "
                            "the paired t-test's power under normal differences (noncentral t)",
                            lambda: _styled(_power_figure)(self.errors, self.largest))]
        if len(self.errors.families):
            out.append(FigureOutput("error_rates_families", "Family-wise error rate under the complete null (top) "
                                    "and false discovery rate with a planted effect (bottom) against the number of "
                                    "topics", lambda: _styled(_family_figure)(self.errors)))
        return out

    def findings(self):
        from meta_eval.rendering.findings import Quoter

        q = Quoter(self.compact)
        e = self.errors
        out = []
        sentences = (  # (table, the key its cells are ranked by, the sentence on its first and last cell)
            ("error_rates_type1", lambda v: abs(v - e.alpha), lambda close, far: (
                f"With {q.param('topics', self.largest)} topics, the Type I error rate at α = "
                f"{q.param('alpha', e.alpha)} is closest to α for {_phrase(close[0])} ({close[1]}) and furthest "
                f"from it for {_phrase(far[0])} ({far[1]}).")),
            ("error_rates_power", lambda v: -v, lambda best, worst: (
                f"At an effect of {q.param('effect', self.effect)} {_unit(e)} with {q.param('topics', self.largest)} "
                f"topics, {_phrase(best[0])} has the most power ({best[1]}) and {_phrase(worst[0])} the least "
                f"({worst[1]}).")))
        for table, key, sentence in sentences:
            extremes = _extremes(q, table, key=key)
            if extremes:
                out.append(q.finding(sentence(*extremes)))
        if "error_rates_fwer" in self.compact:
            out += self._family_findings(q)
        return out

    def _family_findings(self, q) -> list:
        """The first metric's FWER of the first test uncorrected and under each correction, and its FDR with BH."""
        e = self.errors
        fwer, fdr = self.compact["error_rates_fwer"], self.compact["error_rates_fdr"]
        metric = str(fwer.values.columns[0])
        rows = [str(r) for r in fwer.values.index]
        test = next((TEST_LABELS[t] for t in dict.fromkeys(e.families["test"]) if t != "tukey"), None)
        out = []
        if test is not None and test in rows:
            corrected = [r for r in rows if r.startswith(f"{test} + ")] + [r for r in rows if r == "Tukey HSD"]
            clauses = ", ".join(f"{r.removeprefix(test + ' + ')} {q('error_rates_fwer', r, metric)}"
                                for r in corrected)
            out.append(q.finding(
                f"Under {metric}, in families of {q.param('family size', e.family_size)} equal systems with "
                f"{q.param('topics', self.largest)} topics, uncorrected {test}s make a false discovery in "
                f"{q('error_rates_fwer', test, metric)} {q.interval('error_rates_fwer', test, metric)} of the "
                f"families" + (f"; corrected: {clauses}" if clauses else "") + "."))
        bh = f"{test} + BH"
        if test is not None and bh in [str(r) for r in fdr.values.index]:
            out.append(q.finding(
                f"With half of each family raised by {q.param('family effect', e.family_effect)} {_unit(e)}, {bh} "
                f"keeps the false discovery rate under {metric} at {q('error_rates_fdr', bh, metric)} "
                f"{q.interval('error_rates_fdr', bh, metric)} (α = {q.param('alpha', e.alpha)})."))
        return out


def _extremes(q, table: str, key) -> tuple | None:
    """The first and last (metric, test) cells of a compact table ranked by ``key`` of their values, each with its
    quoted value and interval; None when the table has fewer than two cells."""
    cells = _ranked_cells(q.tables[table], key=key) if table in q.tables else []
    if len(cells) < 2:
        return None
    return tuple((rc, f"{q(table, *rc)} {q.interval(table, *rc)}") for rc in (cells[0], cells[-1]))


_PHRASES = {"t-test": "the t-test", "Wilcoxon": "the Wilcoxon test", "sign": "the sign test",
            "bootstrap": "the bootstrap test", "randomisation": "the randomisation test"}


def _phrase(cell: tuple[str, str]) -> str:
    """``the sign test under AP`` for the (metric, test) cell of a metric x test table."""
    metric, test = cell
    return f"{_PHRASES.get(test, test)} under {metric}"


def _unit(errors) -> str:
    return "σ" if errors.unit == "sd" else "score units"


def _percent(fraction: float) -> str:
    return f"{100 * fraction:g}"


def _pair_table(frame: pd.DataFrame, topics: int, effect: float | None, column: str, best: str | None = None):
    """Metric x test: ``column`` (rate or type3) with its interval, at one size (and effect)."""
    from meta_eval.rendering.paper_table import PaperTable, best_mask

    rows = frame[frame["topics"] == topics]
    if effect is not None:
        rows = rows[np.isclose(rows["effect"], effect)]
    rows = rows.assign(test=rows["test"].map(TEST_LABELS))
    values, low, high = (rows.pivot(index="metric", columns="test", values=c) for c in
                         (column, f"{column}_low", f"{column}_high"))
    order = [TEST_LABELS[t] for t in dict.fromkeys(frame["test"])]
    metrics = list(dict.fromkeys(frame["metric"]))
    values, low, high = (x.reindex(index=metrics, columns=order) for x in (values, low, high))
    values.index.name = "metric"
    values.columns.name = None
    low.columns.name = high.columns.name = None
    low.index.name = high.index.name = "metric"
    bold = best_mask(values, {c: best for c in values.columns}) if best else None
    return PaperTable(values, decimals=3, bold=bold, low=low, high=high)


def _family_table(frame: pd.DataFrame, topics: int, effect: float, column: str):
    """Procedure x metric: ``column`` (fwer or fdr) with its interval, at one size and configuration."""
    from meta_eval.rendering.paper_table import PaperTable

    rows = frame[(frame["topics"] == topics) & np.isclose(frame["effect"], effect)]
    procedures = list(dict.fromkeys(frame["procedure"]))
    metrics = list(dict.fromkeys(frame["metric"]))
    values, low, high = (rows.pivot(index="procedure", columns="metric", values=c)
                         .reindex(index=procedures, columns=metrics) for c in (column, f"{column}_low",
                                                                              f"{column}_high"))
    for x in (values, low, high):
        x.index.name, x.columns.name = "procedure", None
    return PaperTable(values, decimals=3, low=low, high=high)


def _cells_frame(table) -> pd.DataFrame:
    """A compact table's numbers as a tidy frame (its CSV): row, column, value, low, high."""
    values = table.values.stack(future_stack=True).rename("value")
    return pd.concat([values, table.low.stack(future_stack=True).rename("low"),
                      table.high.stack(future_stack=True).rename("high")], axis=1).reset_index() \
        .rename(columns={"level_1": "column"})


def _ranked_cells(table, key) -> list[tuple[str, str]]:
    """(row, column) of every cell with a value, by ``key`` of its displayed number (ascending; stable)."""
    cells = []
    for row in table.values.index:
        for column in table.values.columns:
            text = table.text(row, column)
            try:
                cells.append((key(float(text)), str(row), str(column)))
            except ValueError:  # a dash: no value
                continue
    cells.sort(key=lambda c: c[0])
    return [(r, c) for _, r, c in cells]


# --------------------------------------------------------------------------------------------- figures


def _panels(n: int, height: float = 2.2):
    """A figure with one panel per metric (at most four a row), sharing their axes."""
    from matplotlib.figure import Figure

    from meta_eval.rendering.figure_style import COLUMN_WIDTH, FULL_WIDTH

    cols = min(n, 4)
    rows = -(-n // cols)
    fig = Figure(figsize=(FULL_WIDTH if n > 1 else COLUMN_WIDTH + 0.8, height * rows), layout="constrained")
    axes = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes


def _test_styles(tests) -> dict[str, tuple[str, str]]:
    from meta_eval.rendering.figure_style import PALETTE

    markers = "osD^v"
    return {t: (PALETTE[i % len(PALETTE)], markers[i % len(markers)]) for i, t in enumerate(tests)}


def _test_lines(ax, frame: pd.DataFrame, metric: str, x: str, band: bool = False) -> None:
    """A line per test (the styles of every test of ``frame``, the same in every panel): the rate of ``metric``
    against column ``x``, with its interval as a band when ``band``."""
    for test, (color, marker) in _test_styles(dict.fromkeys(frame["test"])).items():
        rows = frame[(frame["metric"] == metric) & (frame["test"] == test)].sort_values(x)
        ax.plot(rows[x], rows["rate"], color=color, marker=marker, markersize=3, lw=1, label=TEST_LABELS[test])
        if band:
            ax.fill_between(rows[x], rows["rate_low"], rows["rate_high"], color=color, alpha=0.12, lw=0)


def _type1_figure(errors):
    """Type I error rate against the number of topics: a panel per metric, a line per test, α dashed."""
    frame = errors.type1()
    metrics = list(dict.fromkeys(frame["metric"]))
    fig, axes = _panels(len(metrics))
    for ax, metric in zip(axes, metrics):
        _test_lines(ax, frame, metric, "topics", band=True)
        ax.axhline(errors.alpha, color="0.3", ls="--", lw=0.8)
        ax.set_title(metric, fontsize="medium")
        ax.set_xlabel("topics")
    axes[0].set_ylabel("Type I error rate")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right upper", fontsize="small")
    return fig


def _power_figure(errors, topics: int):
    """Power against the effect at one size: a panel per metric, a line per test, the noncentral t dotted."""
    frame = errors.power()
    frame = frame[frame["topics"] == topics]
    metrics = list(dict.fromkeys(frame["metric"]))
    fig, axes = _panels(len(metrics))
    for ax, metric in zip(axes, metrics):
        _test_lines(ax, frame, metric, "effect")
        theory = frame[frame["metric"] == metric].drop_duplicates("effect").sort_values("effect")
        if theory["theory"].notna().any():
            ax.plot(theory["effect"], theory["theory"], color="0.2", ls=":", lw=1, label="t-test, normal")
        ax.set_ylim(0, 1)
        ax.set_title(metric, fontsize="medium")
        ax.set_xlabel("effect (σ)" if errors.unit == "sd" else "effect")
    axes[0].set_ylabel("power")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right upper", fontsize="small")
    return fig


def _family_figure(errors):
    """FWER (complete null, top) and FDR (planted effect, bottom) against the number of topics: a column per
    metric, a colour per correction, a line style per test."""
    from matplotlib.figure import Figure

    from meta_eval.rendering.figure_style import FULL_WIDTH, PALETTE

    frame = errors.families
    metrics = list(dict.fromkeys(frame["metric"]))
    colors = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(dict.fromkeys(frame["correction"]))}
    dashes = dict(zip(dict.fromkeys(frame["test"]), ("-", "--", ":", "-.", (0, (1, 3)), (0, (5, 1)))))
    fig = Figure(figsize=(FULL_WIDTH, 4.2), layout="constrained")
    axes = fig.subplots(2, len(metrics), sharex=True, sharey="row", squeeze=False)
    for j, metric in enumerate(metrics):
        for i, (column, effect) in enumerate((("fwer", 0.0), ("fdr", errors.family_effect))):
            ax = axes[i, j]
            rows = frame[(frame["metric"] == metric) & np.isclose(frame["effect"], effect)]
            for procedure, grp in rows.groupby("procedure", sort=False):
                grp = grp.sort_values("topics")
                ax.plot(grp["topics"], grp[column], color=colors[grp["correction"].iloc[0]],
                        ls=dashes[grp["test"].iloc[0]], lw=1, label=procedure)
            ax.axhline(errors.alpha, color="0.3", ls="--", lw=0.6)
            ax.set_title(metric if i == 0 else "", fontsize="medium")
            ax.set_xlabel("topics" if i == 1 else "")
    axes[0, 0].set_ylabel("FWER (complete null)")
    axes[1, 0].set_ylabel("FDR (planted effect)")
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside right upper", fontsize="x-small")
    return fig


def _styled(func):
    """``func`` drawn in the package's figure style (imported when a figure is drawn)."""
    def draw(*args, **kwargs):
        from meta_eval.rendering.figure_style import styled

        return styled(func)(*args, **kwargs)

    return draw


# --------------------------------------------------------------------------------------------- the analysis


def _memory(data: AnalysisData, params) -> list[MemoryNeed]:
    """The engine's peak for one batch of trials at the largest size (:func:`~meta_eval.statistics.significance.error_rates.
    work_bytes`)."""
    from meta_eval.statistics.significance.error_rates import default_sizes, work_bytes

    n = max(params["sizes"] or default_sizes(len(data.topics)))
    need = work_bytes(n, params["n_resamples"], len(data.raw), len(params["effects"]) + 1,
                      min(params["family_size"], len(data.systems)))
    return [MemoryNeed(need, f"error rates with B = {params['n_resamples']:,} over {n} topics", "n_resamples")]


def _when_named(params) -> bool:
    """Opt-in in a study (``meta-eval study --analysis error-rates``): its default budget costs several seconds
    more than the rest of the demo study's battery."""
    return False


def _family_size(value) -> str | None:
    return "must be 0 (no families) or at least 2" if value == 1 else None


@analysis("error-rates", quick=dict(n_trials=100, family_trials=20, n_resamples=200),
          summary="How often significance tests are wrong under each metric.",
          title="Error rates of significance tests", needs="scores", order=12,
          params=(Param("tests", TESTS, str, "tests of a pair of systems", choices=TESTS, many=True,
                        flags=("--test",)),
                  ANALYSIS_PARAMS["alpha"],
                  Param("sizes", None, int, "topics drawn per trial; default 5, 10, 20, 30, 50, ... up to T",
                        within="[2, inf)", many=True, flags=("--size",)),
                  Param("effects", DEFAULT_EFFECTS, float, "effect sizes of the power and Type III rates",
                        within="(0, inf)", many=True, flags=("--effect",)),
                  Param("unit", "sd", str, "unit of the effects: sd (standard deviations of the pair's null "
                        "differences, Cohen's d_z) or score (the metric's own units)", choices=UNITS),
                  Param("null", "exchange", str, "how a pair is made null: exchange (the two systems' scores "
                        "swapped at random per topic) or shift (one system shifted by the pair's mean difference)",
                        choices=NULLS),
                  Param("n_trials", 1000, int, "trials (a pair and a topic sample) per size and effect",
                        within=f"[1, {MAX_INT}]", flags=("--trials",)),
                  replace(ANALYSIS_PARAMS["n_resamples"], doc="B of the bootstrap, randomisation and Tukey HSD "
                          "tests"),
                  Param("family_size", 10, int, "systems per family of the FWER and FDR (0: none)",
                        within=f"[0, {MAX_INT}]", check=_family_size, domain="0, or an integer of at least 2"),
                  Param("family_trials", 400, int, "families per size", within=f"[1, {MAX_INT}]"),
                  Param("family_effect", 0.5, float, "effect planted in half of each family (unit as effects)",
                        within="(0, inf)"),
                  Param("family_tests", DEFAULT_FAMILY_TESTS, str, "tests whose p-values the corrections adjust",
                        choices=TESTS, many=True, flags=("--family-test",)),
                  Param("corrections", CORRECTIONS, str, "multiple-comparison procedures over a family's pairs",
                        choices=CORRECTIONS, many=True, flags=("--correction",)),
                  ANALYSIS_PARAMS["confidence"], ANALYSIS_PARAMS["seed"]),
          enabled=_when_named, memory=_memory, standardised=True, parallel=True)
def run(data: AnalysisData, *, tests: tuple[str, ...], alpha: float, sizes: tuple[int, ...] | None,
        effects: tuple[float, ...], unit: str, null: str, n_trials: int, n_resamples: int, family_size: int,
        family_trials: int, family_effect: float, family_tests: tuple[str, ...], corrections: tuple[str, ...],
        confidence: float, seed: int) -> ErrorRates:
    """Type I, power and Type III rates of paired tests, and FWER and FDR of multiple comparisons over a family of
    systems, under each metric, against the number of topics drawn from the collection."""
    from meta_eval.statistics.significance.error_rates import significance_error_rates

    errors = significance_error_rates(data.scores, data.systems, tests=tests, alpha=alpha, sizes=sizes,
                                      effects=effects, unit=unit, null=null, n_trials=n_trials,
                                      n_resamples=n_resamples, family_size=family_size, family_trials=family_trials,
                                      family_effect=family_effect, family_tests=family_tests,
                                      corrections=corrections, confidence=confidence, seed=seed, jobs=data.jobs,
                                      scheduler=data.scheduler, progress=data.progress)
    chosen = sorted(set(effects))
    effect = chosen[len(chosen) // 2]
    return ErrorRates(errors, effect, data.colors, text=_method_text(data, errors))


def _method_text(data: AnalysisData, errors) -> str:
    sizes = ", ".join(str(n) for n in sorted(set(errors.pairs["topics"])))
    unit = "standard deviations σ of the pair's null differences (Cohen's d_z)" if errors.unit == "sd" else \
        "the metric's own units"
    null = ("on each drawn topic the two systems' scores are swapped with probability 1/2 (a random sign on the "
            "difference): every test's null hypothesis holds exactly and the metric's ties and magnitudes are kept"
            if errors.null == "exchange" else
            "the second system is shifted by the pair's mean difference over all topics: the mean difference is "
            "exactly 0 with the pair's own shape (the sign and Wilcoxon tests' hypotheses may then be false; ties "
            "are broken)")
    text = (f"Each trial draws a pair of systems of the collection and n topics with replacement (n = {sizes}; the "
            f"collection's topics are the population) and makes the pair null: {null}. Type I error: the share of "
            f"{errors.n_trials:,} trials per size a test calls significant at α = {errors.alpha:g}; power and Type "
            f"III error: the same with an effect added to every difference, in {unit}, and the share called "
            "significant with a negative mean difference. Tests: paired t (R t.test), Wilcoxon signed-rank with the "
            "normal approximation and continuity correction (R wilcox.test, exact = FALSE), exact sign test (R "
            f"binom.test), Sakai's paired bootstrap and the paired randomisation test (B = {errors.n_resamples:,}, "
            f"seed {errors.seed}).")
    if len(errors.families):
        text += (f"\n\nFamilies: {errors.family_trials:,} trials per size each draw {errors.family_size} systems "
                 "and n topics, make the systems equal the same way, and test every pair; p-values are corrected "
                 "over the family (Bonferroni, Holm, Benjamini-Hochberg) or the family tested with the randomised "
                 "Tukey HSD. FWER: the share of families with a true null rejected (complete null); FDR: the mean "
                 f"share of false discoveries among the discoveries when half the family is raised by "
                 f"{errors.family_effect:g}" + (" times the median σ of the collection's pairs." if errors.unit == "sd"
                                                 else "."))
    text += (f" Intervals: {_percent(errors.confidence)} % Wilson intervals (for FDR, a mean of proportions, with "
             "the mean in place of the proportion: conservative). After Urbano, Lima & Hanjalic (2019), Ihemelandu & "
             "Ekstrand (2023) and Otero, Parapar & Barreiro (2025)." + data.standardise_note())
    return text
