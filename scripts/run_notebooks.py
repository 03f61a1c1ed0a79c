"""Execute the notebooks on the embedded demo collection and store them with their outputs.

A reader browsing the repository should see the figures and tables, not only code, and see what anyone gets from a
fresh clone: so each notebook is executed in a temporary copy of ``notebooks/`` placed where ``../shared`` (the
reference data some notebooks add a TREC-COVID section for) cannot be found, and the executed notebook is written
back. Volatile metadata (execution times, kernel versions) is dropped, so a re-run changes a notebook only where its
outputs change.

    python scripts/run_notebooks.py                 # every notebook
    python scripts/run_notebooks.py notebooks/discpower.ipynb
    python scripts/run_notebooks.py --check         # execute, report, write nothing (CI: pytest --nbmake does this)

Needs the test extra (nbclient, ipykernel): ``pip install ".[test]"``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIBLINGS = ("examples",)  # beside notebooks/ in the temporary clone


def execute(path: Path, timeout: int) -> object:
    """The notebook at ``path`` executed in a temporary copy of its folder, two levels below a fresh temporary
    root (so ``../shared`` and ``../../shared`` do not exist)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "clone" / path.parent.name
        shutil.copytree(path.parent, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "byo-study*"))
        for sibling in SIBLINGS:  # folders of a clone the notebooks read (../examples/top_stability.py)
            shutil.copytree(ROOT / sibling, work.parent / sibling, ignore=shutil.ignore_patterns("__pycache__"))
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(work)}}).execute()
    return _without_volatile(nb)


def _without_volatile(nb):
    """Drop what changes on every run whatever the outputs: execution times and the kernel's versions."""
    nb.metadata.pop("widgets", None)
    nb.metadata.get("language_info", {}).pop("version", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    return nb


def main(argv: list[str] | None = None) -> int:
    import nbformat

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.ipynb")
    parser.add_argument("--check", action="store_true", help="execute only; write nothing")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per cell")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("*.ipynb"))
    failed = []
    for path in paths:
        start = time.perf_counter()
        try:
            nb = execute(path.resolve(), args.timeout)
        except Exception as exc:  # noqa: BLE001 - report every notebook, then fail
            failed.append(path)
            lines = [line for line in str(exc).splitlines() if line.strip()]
            print(f"FAILED {path} ({type(exc).__name__}):", *lines[-6:], sep="\n  ")
            continue
        if not args.check:
            nbformat.write(nb, path)
        print(f"ok {path} ({time.perf_counter() - start:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
