"""``meta-eval trec-eval``: trec_eval's option syntax, exit statuses and messages, without the C program (the
byte-for-byte comparisons are tests/test_trec_eval_quicktest.py and tests/test_trec_eval10.py)."""

from __future__ import annotations

import pytest

from meta_eval.cli.trec_eval import main

QRELS = "1 0 a 1\n1 0 b 0\n2 0 c 1\n3 0 d 2\n"
RUN = "1 Q0 a 1 2 r1\n1 Q0 b 2 1 r1\n3 Q0 d 1 1 last\n"  # topic 2 missing; the last line's tag is the runid


@pytest.fixture
def files(tmp_path, monkeypatch):
    (tmp_path / "qrels").write_text(QRELS)
    (tmp_path / "run").write_text(RUN)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out = capsys.readouterr()
    return status, out.out, out.err


def test_whole_numbers_are_read_as_c_reads_them(files, capsys):
    """A sign and surrounding blanks, as atol allows: -M +1 keeps one document, -l ' 2' counts grade 2 only."""
    assert run(capsys, "-c", "-m", "P.1", "-M", "+1", "qrels", "run")[1] == run(capsys, "-c", "-m", "P.1", "qrels",
                                                                               "run")[1]
    status, out, _ = run(capsys, "-c", "-q", "-m", "num_rel", "-l", " 2", "qrels", "run")
    assert status == 0 and "num_rel               \t1\t0\n" in out and "num_rel               \t3\t1\n" in out


def test_a_topic_the_run_lacks_stops_with_status_4_after_the_topics_before_it(files, capsys):
    status, out, err = run(capsys, "-q", "-m", "map", "qrels", "run")
    assert status == 4
    assert out == "map                   \t1\t1.0000\n"
    assert "topic '2'" in err


def test_with_c_it_scores_0_and_runid_is_the_last_lines_tag(files, capsys):
    status, out, _ = run(capsys, "-c", "-q", "-m", "map", "-m", "runid", "-m", "num_q", "qrels", "run")
    assert status == 0
    assert out.splitlines() == ["map                   \t1\t1.0000", "map                   \t2\t0.0000",
                                "map                   \t3\t1.0000", "runid                 \tall\tlast",
                                "num_q                 \tall\t3", "map                   \tall\t0.6667"]


def test_gnu_option_syntax(files, capsys):
    expected = run(capsys, "-c", "-q", "-m", "P.1", "qrels", "run")
    assert run(capsys, "qrels", "-cqmP.1", "run") == expected
    assert run(capsys, "--complete", "--measure=P.1", "--query_eval_wanted", "qrels", "run") == expected
    assert run(capsys, "-c", "-q", "-m", "P.1", "-m", "P.5", "qrels", "run") == expected  # the first parameters win


def test_nosummary_and_print_order(files, capsys):
    status, out, _ = run(capsys, "-c", "-n", "-m", "P.2", "-m", "map", "qrels", "run")
    assert status == 0 and out == ""
    _, out, _ = run(capsys, "-c", "-m", "P.2", "-m", "map", "qrels", "run")
    assert [line.split()[0] for line in out.splitlines()] == ["map", "P_2"]  # trec_eval's order, not the given one


@pytest.mark.parametrize("args, status, message", [
    (["-m", "nosuch", "qrels", "run"], 1, "illegal measure 'nosuch'"),
    (["-m", "P.", "qrels", "run"], 1, "illegal measure"),
    (["-x", "qrels", "run"], 1, "option -x not recognized"),
    (["qrels"], 1, "Usage"),
    (["-R", "bogus", "qrels", "run"], 2, "illegal rel_format"),
    (["-T", "bogus", "qrels", "run"], 2, "illegal retrieval results format"),
    (["-m", "P.3,3", "qrels", "run"], 2, "given twice"),
    (["-m", "ndcg.x", "qrels", "run"], 2, "malformed pair"),
    (["-c", "-R", "prefs", "-m", "map", "qrels", "run"], 2, "qrels:1: expected 5"),
    (["-c", "-m", "prefs_simp", "qrels", "run"], 4, "cannot be calculated from -R qrels"),
    (["-c", "-Z", "qrels", "qrels", "run"], 255, "qrels:1: mean must be a number"),
    (["-c", "qrels", "missing"], 2, "missing: file not found"),
    (["-c", "-M", "1e3", "qrels", "run"], 1, "-M '1e3': expected a whole number"),  # atol would read 1
    (["-c", "-l", "", "qrels", "run"], 1, "-l '': expected a whole number"),  # atol would read 0
    (["-c", "-l", "2.5", "qrels", "run"], 1, "-l '2.5': expected a whole number"),
    (["-c", "-N", "-1", "qrels", "run"], 1, "-N -1: the number of documents in the collection must be at least 0"),
])
def test_statuses(files, capsys, args, status, message):
    got, out, err = run(capsys, *args)
    assert got == status and message in err, err
    assert out == ""


def test_bad_input_names_file_and_line(files, capsys):
    (files / "bad").write_text("1 Q0 a 1 2 r\n1 Q0 b 2 x r\n")
    status, _, err = run(capsys, "-c", "qrels", "bad")
    assert status == 2 and "bad:2: score must be a number" in err


def test_a_document_twice_is_status_4(files, capsys):
    (files / "dup").write_text("1 Q0 a 1 2 r\n1 Q0 a 2 1 r\n")
    status, _, err = run(capsys, "-c", "qrels", "dup")
    assert status == 4 and "dup:2" in err


def test_several_runs_print_in_turn(files, capsys):
    (files / "run2").write_text("1 Q0 b 1 2 r2\n2 Q0 c 1 1 r2\n3 Q0 d 1 1 r2\n")
    one = run(capsys, "-c", "-q", "qrels", "run")[1] + run(capsys, "-c", "-q", "qrels", "run2")[1]
    status, both, _ = run(capsys, "-c", "-q", "qrels", "run", "run2")
    assert status == 0 and both == one


def test_zscores(files, capsys):
    (files / "z").write_text("1 map 0.5 0.25\n3 map 1.0 0\n2 map 0.0 0\n")
    status, out, _ = run(capsys, "-c", "-q", "-m", "map", "-Z", "z", "qrels", "run")
    assert status == 0
    name = f"Z{'map':<22s}"  # trec_eval's "Z%-22s"
    # topic 1: (1 - 0.5) / 0.25; topic 2: sd 0 and the value is the mean; topic 3: sd 0, value 1 = mean
    assert out.splitlines() == [f"{name}\t1\t2.0000", f"{name}\t2\t0.0000", f"{name}\t3\t0.0000",
                                f"{name}\tall\t0.6667"]
    (files / "z").write_text("1 map 0.5 0.25\n3 map 0.5 0\n")
    _, out, _ = run(capsys, "-c", "-q", "-m", "map", "-Z", "z", "qrels", "run")
    assert [line.split("\t")[2] for line in out.splitlines()] == ["2.0000", "-1000000.0000", "-1000000.0000",
                                                                  "-666666.0000"]


def test_help_lists_the_differences(capsys):
    status, out, _ = run(capsys, "--help")
    assert status == 0 and "What differs from trec_eval 10" in out and "-nan" in out


def test_a_run_without_a_topic_of_the_qrels(files, capsys):
    """trec_eval -c scores every topic 0; without -c it stops at the first (status 4)."""
    (files / "other").write_text("9 Q0 a 1 2 r\n")
    assert run(capsys, "-q", "-m", "map", "qrels", "other")[:2] == (4, "")
    status, out, _ = run(capsys, "-c", "-m", "map", "qrels", "other")
    assert status == 0 and out == "map                   \tall\t0.0000\n"
