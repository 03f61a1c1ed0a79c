"""Command-line interface: ``meta-eval SUBCOMMAND``.

Subcommand modules are imported when their command runs (see :mod:`meta_eval.cli.app`), so ``meta-eval --help``
and ``from meta_eval.cli import app`` are fast; :func:`load_all` imports every one of them.
"""

from __future__ import annotations

from meta_eval.cli.app import COMMANDS, app, commands, load_all, run

__all__ = ["COMMANDS", "app", "commands", "load_all", "run"]
