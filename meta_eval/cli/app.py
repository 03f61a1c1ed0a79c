"""The ``meta-eval`` Typer application; each subcommand lives in a module of this package."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="meta-eval",
    help="Evaluate IR evaluation metrics: exact scores, informativeness, discriminative power, correlation.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
