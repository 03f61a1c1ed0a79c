"""trec_eval 10's own test suite through ``meta-eval trec-eval``: every command line of its Makefile's ``quicktest``
target prints byte for byte the expected output shipped with it (``test/out.test*``), with exit status 0. The
sources come from ``../shared/data/trec_eval-10.0-src.tar.gz`` (skipped without it); no C program is needed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from meta_eval.cli.trec_eval import main
from tests.trec_eval_source import extract, quicktest_lines


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return extract(tmp_path_factory.mktemp("trec_eval10"))


def test_the_makefile_has_fifteen_quicktest_lines(source):
    lines = quicktest_lines(source)
    assert len(lines) == 15
    assert {expected for _, expected in lines} >= {"test/out.test.aqZ", "test/out.test.prefs", "test/out.test.qrels_jg"}


@pytest.mark.parametrize("index", range(15))
def test_quicktest_line_is_byte_identical(source, index, monkeypatch, capsysbinary):
    args, expected = quicktest_lines(source)[index]
    monkeypatch.chdir(source)
    status = main(args)
    out = capsysbinary.readouterr().out
    assert status == 0
    assert out == (source / expected).read_bytes(), " ".join(args)


def test_quicktest_through_the_command_line(source):
    """The same through the installed command (option parsing by Typer's context, standard output, status)."""
    args, expected = quicktest_lines(source)[13]  # -m with parameters in every form
    out = subprocess.run([sys.executable, "-c", "from meta_eval.cli import run; run()", "trec-eval", *args],
                         cwd=source, capture_output=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout == (source / expected).read_bytes()


def test_results_from_standard_input(source):
    data = (source / "test" / "results.test").read_bytes()
    out = subprocess.run([sys.executable, "-c", "from meta_eval.cli import run; run()", "trec-eval",
                          "test/qrels.test", "-"], cwd=source, input=data, capture_output=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout == (source / "test" / "out.test").read_bytes()
