"""Command-line interface: ``meta-eval SUBCOMMAND``. Importing this package registers every subcommand."""

from __future__ import annotations

import importlib

from meta_eval.cli.app import app

# Subcommand modules register themselves on ``app``; a module not written yet is simply absent.
for _name in ("evaluate", "measures", "discpower", "informativeness", "correlate", "reproduce", "study", "compare",
              "ltr", "meta"):
    try:
        importlib.import_module(f"meta_eval.cli.{_name}")
    except ModuleNotFoundError as exc:  # pragma: no cover - only while a subcommand is missing
        if exc.name != f"meta_eval.cli.{_name}":
            raise

__all__ = ["app"]
