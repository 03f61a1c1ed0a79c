"""Pieces shared by the subcommands: collection options, loading, error reporting."""

from __future__ import annotations

import functools
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Callable, Optional

import typer

from meta_eval.collection import Collection, load_collection
from meta_eval.demo import demo_collection
from meta_eval.errors import MetaEvalError


class Missing(str, Enum):
    zero = "zero"
    skip = "skip"


class Unjudged(str, Enum):
    nonrel = "nonrel"
    remove = "remove"


class Ties(str, Enum):
    trec_eval = "trec_eval"
    docid_asc = "docid_asc"
    input = "input"
    rank = "rank"


QrelsOpt = Annotated[Optional[Path], typer.Option("--qrels", "-Q", help="Qrels file (topic iteration docid grade). "
                                                  "Default: the embedded demo collection.")]
RunsArg = Annotated[Optional[list[str]], typer.Argument(help="Run files, directories or glob patterns (.gz ok).",
                                                        show_default=False)]
DepthOpt = Annotated[Optional[int], typer.Option("--depth", "-M", help="Keep the top N documents per topic (trec_eval -M).")]
LevelOpt = Annotated[int, typer.Option("--rel-level", "-l", help="Relevant = grade >= this (trec_eval -l).")]
MissingOpt = Annotated[Missing, typer.Option("--missing", help="Topics a run lacks: score 0 (trec_eval -c) or skip.")]
UnjudgedOpt = Annotated[Unjudged, typer.Option("--unjudged", help="Unjudged documents: not relevant, or removed (-J).")]
TiesOpt = Annotated[Ties, typer.Option("--ties", help="Ordering: trec_eval (score desc, docid desc), docid_asc, input, rank.")]
Float32Opt = Annotated[bool, typer.Option("--float32", help="32-bit scores: reproduce trec_eval 9.x / pytrec_eval ties.")]


def collection_from_cli(
    qrels: Path | None,
    runs: list[str] | None,
    depth: int | None = None,
    rel_level: int = 1,
    missing: Missing = Missing.zero,
    unjudged: Unjudged = Unjudged.nonrel,
    ties: Ties = Ties.trec_eval,
    float32: bool = False,
    progress: bool = True,
) -> Collection:
    """Load the collection named on the command line, or the demo collection when none is."""
    options = dict(depth=depth, rel_level=rel_level, missing=_value(missing), unjudged=_value(unjudged),
                   ties=_value(ties), score_precision="float32" if float32 else "float64")
    if qrels is None and not runs:
        return demo_collection(**options)
    if qrels is None:
        raise typer.BadParameter("runs were given without --qrels")
    if not runs:
        raise typer.BadParameter("--qrels was given without any run")
    return load_collection(qrels, runs, progress=progress, **options)


def _value(option):
    return option.value if isinstance(option, Enum) else option


def reports_errors(func: Callable) -> Callable:
    """Turn meta-eval's own errors into one line on stderr and exit status 2 (no traceback)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except MetaEvalError as exc:
            print(f"meta-eval: error: {exc}", file=sys.stderr)
            raise typer.Exit(code=2) from None

    return wrapper
