"""trec_eval 10's sources and test folder, from ``../shared/data/trec_eval-10.0-src.tar.gz`` (not in the repository):
extracted once per test session, and the quicktest command lines of its Makefile; the trec_eval 10 program when
one is given (``META_EVAL_TREC_EVAL10``, ``trec_eval10`` on the PATH, or a ``trec_eval`` that says it is 10)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tarfile
from pathlib import Path

from tests.conftest import shared_path

TARBALL = ("data", "trec_eval-10.0-src.tar.gz")


def extract(target: Path) -> Path:
    """The source tree (``trec_eval/``, with ``test/`` and ``Makefile``) extracted under ``target``."""
    with tarfile.open(shared_path(*TARBALL)) as tar:
        # the "data" filter (refuse links out of the tree, absolute names, device files) where Python has it
        # (3.11.4 on; 3.11.0-3.11.3 lack the argument): the tarball is trec_eval's own, from ../shared
        tar.extractall(target, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    found = [p.parent for p in target.rglob("Makefile") if (p.parent / "test" / "out.test").exists()]
    assert len(found) == 1, found
    return found[0]


def quicktest_lines(source: Path) -> list[tuple[list[str], str]]:
    """``(trec_eval's arguments, expected output file)`` of every line of the Makefile's ``quicktest`` target."""
    lines, inside = [], False
    for line in (source / "Makefile").read_text().splitlines():
        if line.startswith("quicktest:"):
            inside = True
        elif inside and not line.startswith("\t"):
            break
        elif inside and "./trec_eval" in line:
            command, expected = line.split("| diff - ")
            lines.append((shlex.split(command)[1:], expected.strip()))
    return lines


def trec_eval10() -> str | None:
    """A trec_eval 10 program, or None."""
    given = os.environ.get("META_EVAL_TREC_EVAL10") or shutil.which("trec_eval10")
    if given:
        return given
    other = os.environ.get("META_EVAL_TREC_EVAL") or shutil.which("trec_eval")
    if other and version(other).startswith("10"):
        return other
    return None


def version(program: str) -> str:
    """What ``program -v`` says its version is ("" if it says nothing)."""
    try:
        out = subprocess.run([program, "-v"], capture_output=True, text=True, timeout=30)
    except OSError:
        return ""
    words = (out.stderr + out.stdout).split()
    return words[-1] if words else ""
