"""The meta-evaluation battery on the command line: ``meta-eval incomplete-judgments``, ``reusability``, ``anova``
(with effect sizes and topic-set size), ``intuitiveness`` and ``split-half``. Each command is a thin layer over the
study stage of :mod:`meta_eval.meta.stages`: it prints the main table and the finding, and with ``--out`` writes
the stage's CSVs and figures into a result folder."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from meta_eval.cli.app import app
from meta_eval.parallel import connect_scheduler
from meta_eval.cli.common import (AlphaOpt, DepthOpt, DpiOpt, Float32Opt, FormatOpt, JobsOpt, LevelOpt, Missing,
                                  MissingOpt, OutDirOpt, OverwriteOpt, ProgressOpt, QrelsOpt, RunsArg, SchedulerOpt,
                                  SeedOpt, StandardiseOpt, Ties, TiesOpt, Unjudged, UnjudgedOpt, collection_from_cli,
                                  figure_formats, folder_target, measures_option, reports_errors)

DEFAULT_MEASURES = ("AP", "nDCG", "nDCG@10", "P@10")
MeasuresOpt = measures_option(DEFAULT_MEASURES)


class Sampling(str, Enum):
    uniform = "uniform"
    depth = "depth"


class Form(str, Enum):
    standard = "standard"
    condensed = "condensed"


class Reference(str, Enum):
    same = "same"
    standard = "standard"


class Variance(str, Enum):
    two_way = "two-way"
    one_way = "one-way"


def _collection(qrels, runs, depth, rel_level, missing, unjudged, ties, float32, progress):
    return collection_from_cli(qrels, runs, depth, rel_level, missing, unjudged, ties, float32, progress=progress)


def _value(option):
    return None if option is None else option.value


def _show(frame, columns: dict[str, str], title: str, finding: str) -> None:
    """Print some columns of a table (column -> short header), then the finding."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=title)
    from pandas.api.types import is_numeric_dtype

    for c, header in columns.items():
        table.add_column(header, justify="right" if is_numeric_dtype(frame[c]) else "left")
    for row in frame[list(columns)].itertuples(index=False):
        table.add_row(*(_cell(v) for v in row))
    console.print(table)
    console.print(finding)


def _cell(value) -> str:
    if isinstance(value, float):
        if value != value:
            return "–"
        return f"{value:.1e}" if 0 < abs(value) < 1e-3 else f"{value:.3f}"
    return str(value)


def _write(stage, target, fmt, dpi: int) -> None:
    """Write the stage's tables (CSV) and figures into the result folder ``target`` (checked at the command's
    start by :func:`meta_eval.cli.common.folder_target`; None: nothing to write)."""
    if target is None:
        return
    from meta_eval.figures.style import check_formats, save_figure

    formats = check_formats(figure_formats(fmt))
    with target.open() as tmp:
        for stem, _, frame in stage.tables:
            frame.to_csv(tmp / f"{stem}.csv", index=False)
        for stem, _, fig in stage.figures:
            save_figure(fig, tmp / stem, formats, dpi=dpi, preview_dpi=150)
        (tmp / "finding.txt").write_text(stage.text + "\n\n" + stage.finding + "\n")
        written = sorted(p.name for p in tmp.iterdir())
    print(f"wrote {', '.join(written)} to {target.out}")


@app.command("incomplete-judgments")
@reports_errors
def incomplete_judgments(
    runs: RunsArg = None,
    qrels: QrelsOpt = None,
    measures: MeasuresOpt = None,
    fraction: Annotated[Optional[list[float]], typer.Option("--fraction", min=0.0, max=1.0, help="Fraction of the "
                        "judgments kept (repeatable). Default: 0.1, 0.2, ..., 0.9.", show_default=False)] = None,
    draws: Annotated[int, typer.Option("--draws", min=1, help="Seeded draws per fraction (the budget: cost grows "
                                       "with fractions x draws).")] = 20,
    sampling: Annotated[Sampling, typer.Option(help="uniform: per topic and grade, at random; depth: per topic, "
                                               "the documents that entered the pool first.")] = Sampling.uniform,
    form: Annotated[Optional[list[Form]], typer.Option("--form", help="Score form (repeatable): standard (unjudged = "
                    "not relevant) and/or condensed (unjudged removed). Default: both.", show_default=False)] = None,
    reference: Annotated[Reference, typer.Option(help="Full-qrels ranking each form is compared with: the same "
                                                 "form's, or the standard form's.")] = Reference.same,
    alpha: AlphaOpt = 0.05,
    threshold: Annotated[float, typer.Option(min=-1.0, max=1.0, help="τ level the finding reports the smallest "
                                             "fraction for, in [-1, 1].")] = 0.9,
    standardise: StandardiseOpt = None,
    seed: SeedOpt = 0,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
    out: OutDirOpt = None,
    overwrite: OverwriteOpt = False,
    fmt: FormatOpt = None,
    dpi: DpiOpt = 300,
    depth: DepthOpt = None,
    rel_level: LevelOpt = 1,
    missing: MissingOpt = Missing.zero,
    unjudged: UnjudgedOpt = Unjudged.nonrel,
    ties: TiesOpt = Ties.trec_eval,
    float32: Float32Opt = False,
    progress: ProgressOpt = True,
) -> None:
    """Robustness to incomplete judgments (Buckley & Voorhees 2004; Sakai 2007): re-score every run under reduced
    qrels and compare each metric's system ranking with its full-qrels ranking (τ_b, τ_AP), with intervals over
    seeded draws, and its discriminative power. With --out: incomplete_judgments.csv (summary),
    incomplete_judgments_draws.csv and the figure."""
    from meta_eval.meta.stages import incomplete_judgments_stage

    target = folder_target(out, "incomplete-judgments", overwrite=overwrite, qrels=qrels, runs=runs, measures=measures)
    connect_scheduler(scheduler, jobs)  # an unreachable scheduler fails before any work
    col = _collection(qrels, runs, depth, rel_level, missing, unjudged, ties, float32, progress)
    fractions = fraction or (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
    forms = [f.value for f in form] if form else ["standard", "condensed"]
    stage = incomplete_judgments_stage(col, list(measures or DEFAULT_MEASURES), fractions=fractions, n_draws=draws,
                                       sampling=sampling.value, forms=forms, alpha=alpha, threshold=threshold,
                                       seed=seed, n_jobs=jobs, scheduler=scheduler, standardise=_value(standardise), progress=progress,
                                       reference=reference.value)
    _show(stage.result.summary, {"metric": "metric", "form": "form", "fraction": "kept", "kendall_tau_b": "τ_b",
                                 "kendall_tau_b_low": "low", "kendall_tau_b_high": "high", "tau_ap": "τ_AP",
                                 "discpower": "power", "discpower_full": "full"},
          "Agreement with the full-qrels ranking (power: pairs significant)", stage.finding)
    _write(stage, target, fmt, dpi)


@app.command()
@reports_errors
def reusability(
    runs: RunsArg = None,
    qrels: QrelsOpt = None,
    measures: MeasuresOpt = None,
    pool_depth: Annotated[int, typer.Option("--pool-depth", "-k", min=1, help="Pool depth: a run contributed the "
                                            "documents of its top k.")] = 100,
    group_by: Annotated[Optional[str], typer.Option("--group-by", help="Leave groups out instead of single runs: "
                        "'prefix' (run names without their trailing number) or a file of 'run group' lines.",
                        show_default=False)] = None,
    form: Annotated[Optional[list[Form]], typer.Option("--form", help="Score form (repeatable). Default: standard.",
                                                       show_default=False)] = None,
    standardise: StandardiseOpt = None,
    out: OutDirOpt = None,
    overwrite: OverwriteOpt = False,
    fmt: FormatOpt = None,
    dpi: DpiOpt = 300,
    depth: DepthOpt = None,
    rel_level: LevelOpt = 1,
    missing: MissingOpt = Missing.zero,
    unjudged: UnjudgedOpt = Unjudged.nonrel,
    ties: TiesOpt = Ties.trec_eval,
    float32: Float32Opt = False,
    progress: ProgressOpt = True,
) -> None:
    """Pool reusability (Zobel 1998; Büttcher et al. 2007): leave each run (or group) out of the depth-k pool, re-score
    it without the judgments only it contributed, and report its score and rank change. With --out:
    reusability.csv (per run), reusability_summary.csv and the rank-change figure."""
    from meta_eval.meta.stages import reusability_stage

    target = folder_target(out, "reusability", overwrite=overwrite, qrels=qrels, runs=runs, measures=measures,
                           files=[group_by])
    col = _collection(qrels, runs, depth, rel_level, missing, unjudged, ties, float32, progress)
    groups = _groups(group_by)
    forms = [f.value for f in form] if form else ["standard"]
    stage = reusability_stage(col, list(measures or DEFAULT_MEASURES), groups=groups, depth=pool_depth, forms=forms,
                              standardise=_value(standardise))
    _show(stage.result.summary, {"metric": "metric", "form": "form", "runs": "runs", "mean_score_change": "Δscore",
                                 "min_score_change": "min Δ", "mean_abs_rank_change": "|Δrank|",
                                 "max_rank_change": "max drop", "runs_dropping": "dropping"},
          "Runs left out of the pool (per run: reusability.csv)", stage.finding)
    _write(stage, target, fmt, dpi)


def _groups(group_by: str | None):
    from meta_eval.errors import InputError

    if group_by is None or group_by == "prefix":
        return group_by
    path = Path(group_by)
    if not path.is_file():
        raise InputError(f"--group-by must be 'prefix' or a file of 'run group' lines; {group_by!r} is neither")
    from meta_eval.io import read_run_groups

    return read_run_groups(path)


@app.command()
@reports_errors
def anova(
    runs: RunsArg = None,
    qrels: QrelsOpt = None,
    measures: MeasuresOpt = None,
    min_d: Annotated[Optional[list[float]], typer.Option("--min-d", min=0.0, help="Minimum detectable difference of "
                     "the topic-set-size design (repeatable). Default: 0.02 .. 0.20 (raw scores), 0.1 .. 1.0 "
                     "(standardised).", show_default=False)] = None,
    alpha: AlphaOpt = 0.05,
    power: Annotated[float, typer.Option(min=0.5, max=0.999, help="Power 1 - β of the design.")] = 0.8,
    anova_systems: Annotated[Optional[list[int]], typer.Option("--anova-systems", min=2, help="m of the one-way "
                             "ANOVA design (repeatable). Default: 2 and 10.", show_default=False)] = None,
    variance: Annotated[Variance, typer.Option(help="σ² of the design: residual variance of the two-way (system + "
                                               "topic) or one-way (system) ANOVA.")] = Variance.two_way,
    standardise: StandardiseOpt = None,
    out: OutDirOpt = None,
    overwrite: OverwriteOpt = False,
    fmt: FormatOpt = None,
    dpi: DpiOpt = 300,
    depth: DepthOpt = None,
    rel_level: LevelOpt = 1,
    missing: MissingOpt = Missing.zero,
    unjudged: UnjudgedOpt = Unjudged.nonrel,
    ties: TiesOpt = Ties.trec_eval,
    float32: Float32Opt = False,
    progress: ProgressOpt = True,
) -> None:
    """Two-way ANOVA of system and topic effects per metric (ω², Ferro & Silvello 2018), effect sizes of every system
    pair, and Sakai's (2016) topic-set-size design (topics needed for a given power and minimum detectable
    difference, paired t-test and one-way ANOVA). With --out: anova.csv, topic_set_size.csv, effect_sizes.csv and
    the figures."""
    import meta_eval as me
    from meta_eval.meta.stages import anova_stage

    target = folder_target(out, "anova", overwrite=overwrite, qrels=qrels, runs=runs, measures=measures)
    col = _collection(qrels, runs, depth, rel_level, missing, unjudged, ties, float32, progress)
    names = list(dict.fromkeys(measures or DEFAULT_MEASURES))
    scores = {name: me.score(col, name) for name in names}
    stage = anova_stage(scores, list(col.systems), min_d=min_d, alpha=alpha, beta=1.0 - power,
                        n_systems=anova_systems or (2, 10), variance=variance.value, standardise=_value(standardise))
    _show(stage.tables[0][2], {"metric": "metric", "effect": "effect", "df": "df", "sum_sq": "SS", "F": "F",
                               "p_value": "p", "omega_sq": "ω²"}, "Two-way ANOVA", stage.finding)
    _write(stage, target, fmt, dpi)


@app.command()
@reports_errors
def intuitiveness(
    runs: RunsArg = None,
    qrels: QrelsOpt = None,
    measures: MeasuresOpt = None,
    gold: Annotated[str, typer.Option(help="Gold criterion: a measure whose preferences count as right (default: "
                                      "the number of relevant documents in the top 10).")] = "P@10",
    out: OutDirOpt = None,
    overwrite: OverwriteOpt = False,
    fmt: FormatOpt = None,
    dpi: DpiOpt = 300,
    depth: DepthOpt = None,
    rel_level: LevelOpt = 1,
    missing: MissingOpt = Missing.zero,
    unjudged: UnjudgedOpt = Unjudged.nonrel,
    ties: TiesOpt = Ties.trec_eval,
    float32: Float32Opt = False,
    progress: ProgressOpt = True,
) -> None:
    """Intuitiveness (Sakai 2012): on the topic-level disagreements between two metrics, how often each agrees with
    a simple gold criterion; every pair of metrics. With --out: intuitiveness.csv and the matrix figure."""
    import meta_eval as me
    from meta_eval.meta.stages import intuitiveness_stage

    target = folder_target(out, "intuitiveness", overwrite=overwrite, qrels=qrels, runs=runs,
                           measures=[*(measures or ()), gold])
    col = _collection(qrels, runs, depth, rel_level, missing, unjudged, ties, float32, progress)
    names = [n for n in dict.fromkeys(measures or ("AP", "nDCG", "nDCG@10", "RR")) if n != gold]
    stage = intuitiveness_stage(col, {name: me.score(col, name) for name in names}, gold=gold)
    _show(stage.result.table, {"metric_x": "x", "metric_y": "y", "disagreements": "disagreements",
                               "intuitiveness_x": "x agrees", "intuitiveness_y": "y agrees", "gold_ties": "gold ties"},
          f"Intuitiveness against {gold}", stage.finding)
    _write(stage, target, fmt, dpi)


@app.command("split-half")
@reports_errors
def split_half(
    runs: RunsArg = None,
    qrels: QrelsOpt = None,
    measures: MeasuresOpt = None,
    size: Annotated[Optional[list[int]], typer.Option("--size", min=1, help="Topics per half (repeatable). Default: "
                                                      "1 .. T/2.", show_default=False)] = None,
    splits: Annotated[int, typer.Option("--splits", min=1, help="Random splits per size.")] = 100,
    standardise: StandardiseOpt = None,
    seed: SeedOpt = 0,
    out: OutDirOpt = None,
    overwrite: OverwriteOpt = False,
    fmt: FormatOpt = None,
    dpi: DpiOpt = 300,
    depth: DepthOpt = None,
    rel_level: LevelOpt = 1,
    missing: MissingOpt = Missing.zero,
    unjudged: UnjudgedOpt = Unjudged.nonrel,
    ties: TiesOpt = Ties.trec_eval,
    float32: Float32Opt = False,
    progress: ProgressOpt = True,
) -> None:
    """Split-half stability (Voorhees 2009): τ between the system rankings of two disjoint topic halves, against
    the half size. With --out: split_half.csv and the figure."""
    import meta_eval as me
    from meta_eval.meta.stages import split_half_stage

    target = folder_target(out, "split-half", overwrite=overwrite, qrels=qrels, runs=runs, measures=measures)
    col = _collection(qrels, runs, depth, rel_level, missing, unjudged, ties, float32, progress)
    names = list(dict.fromkeys(measures or DEFAULT_MEASURES))
    scores = {name: me.score(col, name) for name in names}
    stage = split_half_stage(scores, list(col.systems), sizes=size, n_splits=splits, seed=seed,
                             standardise=_value(standardise))
    frame = stage.result
    _show(frame[frame["size"] == frame["size"].max()], {"metric": "metric", "size": "size", "coefficient": "τ",
                                                        "mean": "mean", "ci_low": "low", "ci_high": "high"},
          "Split-half τ between the largest halves (all sizes: split_half.csv)", stage.finding)
    _write(stage, target, fmt, dpi)
