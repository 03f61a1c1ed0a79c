"""Issue 15: inputs found by fuzzing — large grades, null-like tokens, bad bytes, signs, overflowing integers.

Each case either gives trec_eval's exact result or a clear error naming the file and the line.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import meta_eval as me
from meta_eval.inputs.tables import MAX_GRADE

RUN = "1 Q0 a 1 2.0 r\n1 Q0 b 2 1.0 r\n1 Q0 c 3 0.5 r\n"


def _load(tmp_path, qrels: str, run: str = RUN, **options):
    (tmp_path / "q").write_text(qrels) if isinstance(qrels, str) else (tmp_path / "q").write_bytes(qrels)
    (tmp_path / "r").write_text(run) if isinstance(run, str) else (tmp_path / "r").write_bytes(run)
    return me.load_collection(tmp_path / "q", [tmp_path / "r"], **options)


def test_highest_supported_grade_is_exact(tmp_path):
    col = _load(tmp_path, f"1 0 a 0\n1 0 b {MAX_GRADE}\n1 0 c 1\n")
    # AP with b (rank 2) and c (rank 3) relevant: (1/2 + 2/3) / 2; linear-gain nDCG by its definition.
    assert me.score(col, "AP")[0, 0] == pytest.approx((1 / 2 + 2 / 3) / 2, abs=1e-15)
    dcg = MAX_GRADE / np.log2(3) + 1 / np.log2(4)
    idcg = MAX_GRADE + 1 / np.log2(3)
    assert me.score(col, "nDCG")[0, 0] == pytest.approx(dcg / idcg, abs=1e-15)


@pytest.mark.parametrize("grade", [MAX_GRADE + 1, 32767, 32768, 2**31 - 1, 2**31, 2**62])
def test_grades_above_the_limit_are_a_clear_error(tmp_path, grade):
    with pytest.raises(me.InputError, match=rf"q:2: grade {grade} is above the largest supported grade"):
        _load(tmp_path, f"1 0 a 0\n1 0 b {grade}\n")


def test_grade_beyond_64_bits_is_a_clear_error(tmp_path):
    with pytest.raises(me.InputError, match=r"q:1: grade 99999999999999999999 is out of the 64-bit"):
        _load(tmp_path, "1 0 a 99999999999999999999\n")


def test_large_negative_grades_are_judged_nonrelevant(tmp_path):
    col = _load(tmp_path, f"1 0 a {-2**40}\n1 0 b 1\n")
    assert col.grades[0, 0, :2].tolist() == [me.JUDGED_NEG, 1]
    assert me.score(col, "AP")[0, 0] == 0.5


def test_grade_too_large_in_a_dataframe_names_the_row():
    qrels = pd.DataFrame({"topic": ["1", "1"], "docid": ["a", "b"], "grade": [1, 40000]})
    run = pd.DataFrame({"run": "r", "topic": "1", "docid": ["a"], "score": [1.0]})
    with pytest.raises(me.InputError, match=r"qrels DataFrame:2: grade 40000"):
        me.load_collection(qrels, [run])


@pytest.mark.parametrize("token", ["NA", "null", "nan", "NaN", "N/A", ""])
def test_null_like_grades_name_the_line(tmp_path, token):
    with pytest.raises(me.InputError, match=r"q:2: "):
        _load(tmp_path, f"1 0 a 1\n1 0 b {token}\n1 0 c 0\n" if token else "1 0 a 1\n1 0 b\n")


@pytest.mark.parametrize("token", ["NA", "null", "nan", "inf", "-inf"])
def test_bad_scores_quote_the_text_of_the_file(tmp_path, token):
    with pytest.raises(me.InputError) as info:
        _load(tmp_path, "1 0 a 1\n", f"1 Q0 a 1 1.0 r\n1 Q0 b 2 {token} r\n")
    assert "/r:2: score must be" in str(info.value) and repr(token) in str(info.value)
    assert "np.float64" not in str(info.value)


def test_plus_signs_are_accepted_like_atol(tmp_path):
    col = _load(tmp_path, "1 0 a +1\n1 0 b 0\n", "1 Q0 a 1 +1.5 r\n1 Q0 b 2 +2 r\n")
    assert col.grades[0, 0, :2].tolist() == [0, 1]  # b's score 2 beats a's 1.5


def test_invalid_utf8_names_the_line(tmp_path):
    with pytest.raises(me.InputError, match=r"r:2: not valid UTF-8"):
        _load(tmp_path, "1 0 a 1\n", b"1 Q0 a 1 1.0 r\n1 Q0 \xff\xfe 2 0.5 r\n")
    with pytest.raises(me.InputError, match=r"q:3: not valid UTF-8"):
        _load(tmp_path, b"1 0 a 1\n1 0 b 0\n1 0 \xc3 1\n")


def test_a_byte_order_mark_after_the_start_names_its_line(tmp_path):
    """``cat a.run b.run`` of files that each begin with a byte-order mark: the inner one would make topic "\ufeff1"
    or a document never judged, silently; a mark at the very start is dropped, as before."""
    bom = "\ufeff".encode()
    with pytest.raises(me.InputError, match=r"r:2: a byte-order mark"):
        _load(tmp_path, "1 0 a 1\n", b"1 Q0 a 1 1.0 r\n" + bom + b"1 Q0 b 2 0.5 r\n")
    with pytest.raises(me.InputError, match=r"q:3: a byte-order mark"):
        _load(tmp_path, b"1 0 a 1\n1 0 b 0\n" + bom + b"2 0 c 1\n")
    with pytest.raises(me.InputError, match=r"s.csv:3: a byte-order mark"):
        (tmp_path / "s.csv").write_bytes(b"run,topic,measure,value\nr,1,AP,0.5\n" + bom + b"r,2,AP,0.5\n")
        from meta_eval.inputs.score_tables import read_scores

        read_scores(tmp_path / "s.csv")
    with pytest.raises(me.InputError, match=r"q:3: a byte-order mark"):  # lone-CR line ends: the line, not 1
        _load(tmp_path, b"1 0 a 1\r1 0 b 0\r" + bom + b"2 0 c 1\r")
    col = _load(tmp_path, bom + b"1 0 a 1\n", bom + b"1 Q0 a 1 1.0 r\n")
    assert col.topics == ["1"] and col.grades[0, 0, 0] == 1


@pytest.mark.parametrize("comments", ["# judged later\n", "# a\n\n  # b\n"])
def test_a_file_of_comments_alone_is_named_not_blamed_on_the_other(tmp_path, comments):
    """A qrels of comments alone was read as no topic, and the run was blamed ("no topic in common with the qrels");
    trec_eval 10 crashes on it."""
    with pytest.raises(me.InputError, match=r"/q: holds no judgment"):
        _load(tmp_path, comments)
    with pytest.raises(me.InputError, match=r"/r: holds no ranked document"):
        _load(tmp_path, "1 0 a 1\n", comments)


def test_cli_reports_a_large_grade_in_one_line(tmp_path, capsys):
    from typer.testing import CliRunner

    from meta_eval.cli import app

    (tmp_path / "q").write_text("1 0 a 32768\n")
    (tmp_path / "r").write_text(RUN)
    result = CliRunner().invoke(app, ["evaluate", "-Q", str(tmp_path / "q"), str(tmp_path / "r"), "-m", "map"])
    assert result.exit_code == 2
    assert "q:1: grade 32768 is above the largest supported grade" in result.output
    assert "Traceback" not in result.output
