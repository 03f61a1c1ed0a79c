"""``meta-eval evaluate``: score runs, per topic and on average, as a table, CSV or trec_eval's layout."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from meta_eval.cli.app import app
from meta_eval.cli.common import (DepthOpt, Float32Opt, LevelOpt, Missing, MissingOpt, QrelsOpt, RunsArg, Ties,
                                  TiesOpt, Unjudged, UnjudgedOpt, collection_from_cli, reports_errors)
from meta_eval.evaluate import evaluate as evaluate_collection
from meta_eval.evaluate import format_trec, resolve

DEFAULT_MEASURES = ["AP", "GAP", "nDCG", "nDCG@10", "P@10", "Rprec", "RR", "bpref"]


class Format(str, Enum):
    table = "table"
    csv = "csv"
    trec = "trec"


@app.command()
@reports_errors
def evaluate(
    runs: RunsArg = None,
    qrels: QrelsOpt = None,
    measure: Annotated[Optional[list[str]], typer.Option(
        "--measure", "-m", help="Measure name, canonical (AP, nDCG@10, GAP(g=0.5,0.5)) or trec_eval "
        "(map, P.5,10, ndcg_cut.10, all_trec). Repeatable.")] = None,
    per_topic: Annotated[bool, typer.Option("--per-topic", "-q", help="Also print per-topic values.")] = False,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="table, csv (run,topic,measure,value) or trec.")] = Format.table,
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Write to this file instead of stdout.")] = None,
    depth: DepthOpt = None,
    rel_level: LevelOpt = 1,
    missing: MissingOpt = Missing.zero,
    unjudged: UnjudgedOpt = Unjudged.nonrel,
    ties: TiesOpt = Ties.trec_eval,
    float32: Float32Opt = False,
) -> None:
    """Score every run with the given measures (default: the demo collection and a standard set)."""
    collection = collection_from_cli(qrels, runs, depth, rel_level, missing, unjudged, ties, float32)
    measures = resolve(measure or DEFAULT_MEASURES)
    results = evaluate_collection(collection, measures, per_topic_rows=per_topic or fmt != Format.table,
                                  progress=len(measures) * len(collection.systems) > 2000)
    if fmt == Format.trec:
        text = format_trec(results, measures, per_topic_rows=per_topic)
    elif fmt == Format.csv:
        rows = results if per_topic else results[results.topic == "all"]
        text = rows.to_csv(index=False, float_format="%.6f")
    else:
        _print_table(results, measures, out)
        return
    if out:
        out.write_text(text)
    else:
        sys.stdout.write(text)


def _print_table(results, measures, out: Path | None) -> None:
    means = results[results.topic == "all"].pivot(index="run", columns="measure", values="value")
    names = [m.output_name for m in measures]
    means = means.loc[list(dict.fromkeys(results.run)), names]
    table = Table(title=f"Mean over topics ({len(means)} runs)")
    table.add_column("run", style="bold")
    for name in names:
        table.add_column(name, justify="right")
    for run, row in means.iterrows():
        table.add_row(str(run), *(f"{v:.4f}" for v in row.to_numpy()))
    console = Console(file=open(out, "w") if out else None, width=max(100, 12 * (len(names) + 2)))
    console.print(table)
