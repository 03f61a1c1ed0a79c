"""What the check of an output remembers, and when it forgets it: one mechanism under the writer of files and the
writer of result folders (:class:`meta_eval.outputs.checked_paths.CheckedPaths`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from meta_eval.outputs.checked_paths import CheckedPaths
from meta_eval.outputs.result_folder import check_output_folder, result_folder
from meta_eval.outputs.writer import check_output, write_output


def test_a_checked_path_is_recalled_by_its_name_until_it_is_taken_under_every_name():
    checked = CheckedPaths()
    target = Path("/somewhere/res.csv")
    assert checked.remember("res.csv", target) == target
    checked.remember("./res.csv", target)
    checked.remember("other.csv", Path("/somewhere/other.csv"))
    assert checked.recall("res.csv") == target and checked.recall(Path("./res.csv")) == target
    assert checked.take("./res.csv") == target
    assert checked.recall("res.csv") is None and checked.take("res.csv") is None  # both names of the written file
    assert checked.recall("other.csv") == Path("/somewhere/other.csv")
    checked.forget(Path("/somewhere/other.csv"))
    assert checked.recall("other.csv") is None


def test_a_written_file_is_forgotten_under_each_name_it_was_checked_as(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    monkeypatch.chdir(first)
    check_output("res.csv")
    check_output("./res.csv")
    monkeypatch.chdir(second)
    write_output("./res.csv", "a\n")  # where it was checked
    write_output("res.csv", "b\n")  # written already: this name resolves from the working folder of now
    assert (first / "res.csv").read_text() == "a\n" and (second / "res.csv").read_text() == "b\n"


def test_a_result_folder_is_forgotten_once_written_even_when_its_writing_failed(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    monkeypatch.chdir(first)
    assert check_output_folder("res") == first / "res"
    monkeypatch.chdir(second)
    with pytest.raises(RuntimeError), result_folder("res", kind="t"):
        raise RuntimeError("the work failed")
    assert not (first / "res").exists()
    assert check_output_folder("res") == second / "res"  # checked again from the working folder of now
