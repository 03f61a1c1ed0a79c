"""``meta-eval compare``: runs against a baseline (or all pairs) with significance tests, ranx/PyTerrier style."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from meta_eval.cli.app import app
from meta_eval.cli.common import (AlphaOpt, CollectionOptions, ConfidenceOpt, SeedOpt, StandardiseOpt, declared_inputs,
                                  measures_option, reports_errors, resamples_option, standardise_label,
                                  standardise_scores, with_collection)

DEFAULT_MEASURES = ("AP", "nDCG@10")
OUTPUTS = (".csv", ".md", ".tex")
MeasuresOpt = measures_option(DEFAULT_MEASURES)
ResamplesOpt = resamples_option("bootstrap: default 1000; randomisation: default 10000")


class Test(str, Enum):
    t = "t"
    wilcoxon = "wilcoxon"
    bootstrap = "bootstrap"
    randomisation = "randomisation"


class Correction(str, Enum):
    holm = "holm"
    bonferroni = "bonferroni"
    bh = "bh"
    none = "none"


def _check_output(path: Path | None, inputs: list[str]) -> None:
    """The output file's format from its extension, and that it can be written — before any work."""
    from meta_eval.core.errors import InputError
    from meta_eval.outputs.writer import check_output

    if path is None:
        return
    if Path(path).suffix.lower() not in OUTPUTS:
        raise InputError(f"-o {path}: the format follows the extension, one of {', '.join(OUTPUTS)}")
    check_output(path, inputs=inputs)


@app.command()
@reports_errors
@with_collection
def compare(
    inputs: CollectionOptions,
    measures: MeasuresOpt = None,
    baseline: Annotated[Optional[str], typer.Option("--baseline", "-b", help="Run (name) every other run is compared "
                                                    "with. Default: the first run.", show_default=False)] = None,
    all_pairs: Annotated[bool, typer.Option("--all-pairs", help="Compare every pair of runs instead (ranx-style "
                                            "letters mark the runs each one is significantly better than).")] = False,
    test: Annotated[Test, typer.Option("--test", help="Paired test: t (Student), wilcoxon (signed-rank), bootstrap "
                                       "(Sakai 2006) or randomisation.")] = Test.t,
    correction: Annotated[Correction, typer.Option("--correction", help="Multiple-comparison correction over the "
                                                   "comparisons of each measure.")] = Correction.holm,
    alpha: AlphaOpt = 0.05,
    confidence: ConfidenceOpt = 0.95,
    resamples: ResamplesOpt = None,
    standardise: StandardiseOpt = None,
    seed: SeedOpt = 0,
    out: Annotated[Optional[str], typer.Option("--out", "-o", help="Write the result to this file; the format "
                                                "follows the extension: .csv (one row per comparison, full "
                                                "precision), .md or .tex (tables).", show_default=False)] = None,
) -> None:
    """Compare runs against a baseline (or all pairs) under each measure: means, mean difference with its t
    interval, effect size (Cohen's d_z), p-values (paired t, Wilcoxon, Sakai's bootstrap or randomisation) with a
    multiple-comparison correction, and topics won/tied/lost. --standardise: on per-topic standardised scores
    (reference: every run given), stated in the table notes and, in a CSV, in a column ``standardise``."""
    qrels, runs, progress = inputs.qrels, inputs.runs, inputs.progress
    from rich.console import Console

    import meta_eval as me
    from meta_eval.statistics.comparison import compare as run_compare
    from meta_eval.outputs.writer import write_output

    declared = declared_inputs(qrels, runs, measures)
    _check_output(out, declared)
    col = inputs.load()
    names = list(measures or DEFAULT_MEASURES)
    data = col
    if standardise is not None:  # score here to standardise; compare takes the arrays
        scores = me.score(col, names)
        scores, _ = standardise_scores(scores if isinstance(scores, dict) else {names[0]: scores}, standardise,
                                       list(col.topics))
        data, names = scores, list(scores)
    result = run_compare(data, names, systems=list(col.systems), baseline=baseline, all_pairs=all_pairs,
                         test=test.value, correction=correction.value, alpha=alpha, confidence=confidence,
                         n_resamples=resamples, seed=seed, progress=progress)
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    table = result.paper_table()
    if standardise is not None:
        table.note += f" Scores: {standardise_label(standardise)}."
    console.print(f"{len(col.systems)} runs × {len(col.topics)} topics; mean {standardise_label(standardise)}:")
    console.print(table.to_rich(""))
    console.print(table.note)
    if not all_pairs:
        console.print(result.detail_table().to_rich())
    if out is None:
        return
    suffix = Path(out).suffix.lower()
    if suffix == ".csv":
        text = (result.table.assign(standardise=standardise.value).to_csv(index=False) if standardise is not None
                else result.to_csv())
    elif suffix == ".md":
        text = table.to_markdown() + "\n" + result.detail_table().to_markdown()
    else:
        text = table.to_latex(label="tab:compare")
    write_output(out, text, inputs=declared)
    console.print(f"wrote {out}")
