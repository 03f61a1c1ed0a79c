"""``meta-eval ltr``: a metric as a learning-to-rank objective (the GAP paper's Tables 1-2) — one ranker trained for
each metric, every ranker tested on every test metric, each row tested against the best."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from meta_eval.cli.app import app
from meta_eval.core.parallel import connect_scheduler
from meta_eval.cli.common import (AlphaOpt, DpiOpt, FormatOpt, JobsOpt, OutDirOpt, OverwriteOpt, ProgressOpt,
                                  SchedulerOpt, SeedOpt, figure_formats, folder_target, reports_errors)

DEFAULT_TRAIN = ("nDCG", "GAP", "AP")
DEFAULT_TEST = ("nDCG@10", "AP", "P@10")


class Algorithm(str, Enum):
    lambdamart = "lambdamart"
    softrank = "softrank"


class Significance(str, Enum):
    ttest = "ttest"
    wilcoxon = "wilcoxon"
    sign = "sign"


class Model(str, Enum):
    linear = "linear"
    mlp = "mlp"


def _positive(value: float) -> float:
    if not value > 0:
        raise typer.BadParameter(f"must be > 0; got {value:g}")
    return value


def _measures(what: str, defaults: tuple[str, ...]):
    return typer.Option(help=f"{what}: a name (nDCG, AP, GAP(g=0.5,0.5), P@10), a trec_eval name or "
                        "module:function / file.py:function (repeatable). Default: " + ", ".join(defaults) + ".",
                        show_default=False)


@app.command()
@reports_errors
def ltr(
    data: Annotated[Optional[Path], typer.Option("--data", "-d", help="LETOR/SVMlight file (split by "
                    "--folds cross-validation over queries), folder of train/vali/test files (.gz ok; a missing "
                    "vali is carved from train) or of Fold1..FoldK folders. Default: the embedded demo set.")] = None,
    train_for: Annotated[Optional[list[str]], _measures("Objective metric", DEFAULT_TRAIN)] = None,
    test: Annotated[Optional[list[str]], _measures("Test metric", DEFAULT_TEST)] = None,
    algorithm: Annotated[Optional[list[Algorithm]], typer.Option(help="lambdamart (LightGBM, lambdas scaled by |ΔM|) "
                         "or softrank (smooth nDCG/AP/GAP, PyTorch); repeatable. Default: lambdamart.",
                         show_default=False)] = None,
    folds: Annotated[int, typer.Option("--folds", min=3, help="Folds of the cross-validation of a single file.")] = 5,
    max_folds: Annotated[Optional[int], typer.Option(min=1, help="Use only the first N folds.")] = None,
    rel_level: Annotated[int, typer.Option("--rel-level", "-l", min=1, help="Binary measures: relevant = label >= "
                         "this.")] = 1,
    significance: Annotated[Significance, typer.Option(help="Paired test of each row against the best.")]
    = Significance.ttest,
    alpha: AlphaOpt = 0.05,
    rounds: Annotated[int, typer.Option(min=1, help="LambdaMART: maximum boosting rounds.")] = 500,
    early_stopping: Annotated[int, typer.Option(min=0, help="LambdaMART: stop after N rounds without improvement "
                              "of the trained-for metric on validation (0: never).")] = 50,
    learning_rate: Annotated[float, typer.Option(callback=_positive, help="LambdaMART learning rate (> 0).")] = 0.05,
    num_leaves: Annotated[int, typer.Option(min=2, help="LambdaMART leaves per tree.")] = 31,
    truncation_level: Annotated[int, typer.Option(min=1, help="LambdaMART: pairs need a document in the top N "
                                "(LightGBM's lambdarank_truncation_level).")] = 30,
    model: Annotated[Model, typer.Option(help="SoftRank scorer: linear or a one-hidden-layer network.")] = Model.linear,
    sigma: Annotated[float, typer.Option(callback=_positive, help="SoftRank score noise σ (> 0).")] = 0.1,
    epochs: Annotated[int, typer.Option(min=1, help="SoftRank: maximum epochs (full batch, Adam).")] = 150,
    seed: SeedOpt = 0,
    out: OutDirOpt = None,
    overwrite: OverwriteOpt = False,
    fmt: FormatOpt = None,
    dpi: DpiOpt = 300,
    figures: Annotated[bool, typer.Option(help="Write the figure to --out.")] = True,
    progress: ProgressOpt = True,
    jobs: JobsOpt = None,
    scheduler: SchedulerOpt = None,
) -> None:
    """Train a ranker for each --train-for metric (same folds and seeds, early stopping on validation), score the
    test queries with every --test metric, and print the GAP paper's Tables 1-2 layout. With --out: results.csv
    (algorithm, trained_for, test_measure, mean, sem, p_value, best), per_query.csv, table.md, table.tex,
    settings.json and the figure. Test queries without a relevant document are not scored (their number is
    printed)."""
    from rich.console import Console

    from meta_eval.rendering.figure_style import check_formats
    from meta_eval.statistics.learning_to_rank.experiment import run_ltr

    console = Console()
    formats = check_formats(figure_formats(fmt))
    target = folder_target(out, "ltr", overwrite=overwrite, qrels=None, runs=None, measures=[*(train_for or ()), *(test or ())], files=[data])
    connect_scheduler(scheduler, jobs)  # an unreachable scheduler fails before any work
    result = run_ltr(
        data, list(train_for or DEFAULT_TRAIN), list(test or DEFAULT_TEST),
        [a.value for a in algorithm] if algorithm else ["lambdamart"], k=folds, max_folds=max_folds, seed=seed,
        rel_level=rel_level, significance=significance.value,
        lambdamart=dict(num_boost_round=rounds, early_stopping_rounds=early_stopping or None,
                        params={"learning_rate": learning_rate, "num_leaves": num_leaves,
                                "lambdarank_truncation_level": truncation_level}),
        softrank=dict(model=model.value, sigma=sigma, epochs=epochs), progress=progress, jobs=jobs,
        scheduler=scheduler)
    console.print(result.markdown(alpha=alpha), markup=False, highlight=False)
    if out is None:
        return
    with target.open() as tmp:
        result.write(tmp, figure=figures, formats=formats, dpi=dpi)
        written = sorted(p.name for p in tmp.iterdir())
    console.print(f"wrote {', '.join(written)} to {out}")
