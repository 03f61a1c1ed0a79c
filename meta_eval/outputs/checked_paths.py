"""What the check of an output remembers until the output is written: the absolute path it was checked as.

A command checks its outputs before any work (:func:`meta_eval.outputs.writer.check_output` for a file,
:func:`meta_eval.outputs.result_folder.check_output_folder` for a result folder) and writes them after it. Code
that runs in between (a plug-in that changes the working folder) must not move ``-o out.csv`` into another folder,
so the check remembers the path it resolved under the name the command gave, and the write of that name goes
there. Once an output is written (or its writing failed) it is forgotten under every name that was checked as it:
a later check of the same name resolves it again, from the working folder of then.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CheckedPaths"]


class CheckedPaths:
    """Outputs checked and not yet written: each name as a command gave it -> the absolute path its check
    resolved."""

    def __init__(self) -> None:
        self._paths: dict[str, Path] = {}

    def remember(self, given: str | os.PathLike, path: Path) -> Path:
        """Remember that ``given`` was checked as ``path``; returns ``path``."""
        self._paths[os.fspath(given)] = path
        return path

    def recall(self, given: str | os.PathLike) -> Path | None:
        """The path ``given`` was checked as, or None when it was not checked (or was written since)."""
        return self._paths.get(os.fspath(given))

    def forget(self, path: Path) -> None:
        """Forget ``path`` under every name that was checked as it (it is written)."""
        for given in [name for name, checked in self._paths.items() if checked == path]:
            del self._paths[given]

    def take(self, given: str | os.PathLike) -> Path | None:
        """The path ``given`` was checked as (None when it was not), forgotten as it is about to be written."""
        path = self.recall(given)
        if path is not None:
            self.forget(path)
        return path
