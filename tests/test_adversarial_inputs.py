"""Issue 21, silently wrong input: every text input goes through one reader (``meta_eval.inputs.trec.read_bytes``), which
reads any line ending, skips comment lines, refuses binary data and unreadable paths, and whose diagnosis names the
file and line of every line the parser refuses.

Each case asserts the exact result (the same scores as the plain file) or a clear error naming the file and line,
and that the input files are unchanged.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import meta_eval as me
from meta_eval.core.errors import InputError

QRELS = "1 0 a 2\n1 0 b 0\n1 0 c 1\n1 0 d 1\n2 0 a 1\n2 0 e 0\n2 0 f 2\n"
RUN = ("1 Q0 a 1 3.0 tagA\n1 Q0 b 2 2.0 tagA\n1 Q0 c 3 1.0 tagA\n1 Q0 x 4 0.5 tagA\n"
       "2 Q0 e 1 2.0 tagA\n2 Q0 f 2 1.5 tagA\n2 Q0 a 3 1.0 tagA\n")
MEASURES = ["AP", "nDCG", "P@2", "RR", "GAP", "bpref"]


def _write(path, content) -> None:
    path.write_bytes(content.encode() if isinstance(content, str) else content)


def _scores(tmp_path, qrels=QRELS, run=RUN):
    _write(tmp_path / "q", qrels)
    _write(tmp_path / "r", run)
    col = me.load_collection(tmp_path / "q", [tmp_path / "r"])
    return col, {m: me.score(col, m) for m in MEASURES}


def _error(tmp_path, qrels=QRELS, run=RUN) -> str:
    with pytest.raises(InputError) as info:
        _scores(tmp_path, qrels, run)
    return str(info.value)


def _cli(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from meta_eval.cli import run; run()", *map(str, args)],
                          capture_output=True, text=True,
                          cwd=cwd, timeout=120)


@pytest.fixture
def reference(tmp_path_factory):
    return _scores(tmp_path_factory.mktemp("ref"))[1]


def _same(scores, reference) -> None:
    for m in MEASURES:
        np.testing.assert_array_equal(scores[m], reference[m], err_msg=m)


# ------------------------------------------------------------------------------------------------ line endings


def _with_endings(text: str, endings: list[str]) -> str:
    lines = text.splitlines()
    return "".join(line + endings[i % len(endings)] for i, line in enumerate(lines))


@pytest.mark.parametrize("ending", ["\r", "\r\n", "\n"])
def test_every_line_ending_gives_the_same_scores(tmp_path, reference, ending):
    col, scores = _scores(tmp_path, _with_endings(QRELS, [ending]), _with_endings(RUN, [ending]))
    _same(scores, reference)
    assert col.systems == ["tagA"]


@given(st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=1, max_size=8),
       st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=1, max_size=8), st.booleans())
@settings(max_examples=30, deadline=None)
def test_mixed_line_endings_and_gzip_give_the_same_scores(tmp_path_factory, endings_q, endings_r, gz):
    tmp = tmp_path_factory.mktemp("mixed")
    run = _with_endings(RUN, endings_r).encode()
    _, scores = _scores(tmp, _with_endings(QRELS, endings_q), gzip.compress(run) if gz else run)
    _, reference = _scores(tmp_path_factory.mktemp("ref"))
    _same(scores, reference)


def test_cr_only_error_names_the_line_as_an_editor_shows_it(tmp_path):
    bad = QRELS.replace("1 0 c 1", "1 0 c one")
    message = _error(tmp_path, _with_endings(bad, ["\r"]))
    assert message.endswith("q:3: grade must be a number, got 'one'")


# ------------------------------------------------------------------------------------------------ comments


def test_comment_lines_are_skipped_and_line_numbers_kept(tmp_path, reference):
    qrels = "# judged by assessor 7\n" + QRELS.replace("1 0 c 1\n", "1 0 c 1\n  # a comment after spaces\n")
    run = "#run tagA, BM25\n" + RUN
    _same(_scores(tmp_path, qrels, run)[1], reference)
    bad = "# header\n# more\n" + QRELS.replace("2 0 e 0", "2 0 e zero")
    assert _error(tmp_path, bad).endswith("q:8: grade must be a number, got 'zero'")


def test_a_hash_inside_a_line_is_text(tmp_path):
    qrels = "1 0 doc#1 1\n1 0 doc#2 0\n"
    run = "1 Q0 doc#2 1 2.0 t\n1 Q0 doc#1 2 1.0 t\n"
    col, scores = _scores(tmp_path, qrels, run)
    assert scores["AP"][0, 0] == 0.5 and scores["RR"][0, 0] == 0.5


# ------------------------------------------------------------------------------------------------ joined lines


@pytest.mark.parametrize("joiner", ["", " ", "\t"])
@pytest.mark.parametrize("line", [1, 3, 6])
def test_joined_qrels_lines_are_refused_with_their_line(tmp_path, joiner, line):
    lines = QRELS.splitlines(keepends=True)
    lines[line - 1] = lines[line - 1].rstrip("\n") + joiner
    message = _error(tmp_path, "".join(lines))
    assert f"q:{line}: expected 4 whitespace-separated fields" in message
    assert "two lines joined" in message


@pytest.mark.parametrize("joiner", ["", " ", "\t"])
@pytest.mark.parametrize("line", [1, 4, 6])
def test_joined_run_lines_are_refused_with_their_line(tmp_path, joiner, line):
    lines = RUN.splitlines(keepends=True)
    lines[line - 1] = lines[line - 1].rstrip("\n") + joiner
    message = _error(tmp_path, run="".join(lines))
    assert f"r:{line}: two run lines joined on one line" in message


def test_free_text_after_the_run_tag_is_ignored_as_trec_eval_does(tmp_path, reference):
    run = RUN.replace("tagA\n", "tagA more junk at the end 12 3.5\n", 2)
    _same(_scores(tmp_path, run=run)[1], reference)


def test_extra_qrels_fields_are_refused_as_trec_eval_does(tmp_path):
    message = _error(tmp_path, QRELS.replace("1 0 b 0", "1 0 b 0 0.7"))
    assert "q:2: expected 4 whitespace-separated fields" in message and "found 5" in message


# ------------------------------------------------------------------------------------------------ numbers


# What Python's float()/int() accept but C's strtod/strtol (and so trec_eval and Arrow) do not read as a number.
PYTHON_ONLY_NUMBERS = ["1_000", "1_0.5", "\u0663", "\u0661\u0662", "\uff11", "\u00b2", "1e1_0", "\u0ae7.5"]


@pytest.mark.parametrize("token", PYTHON_ONLY_NUMBERS)
def test_numbers_python_reads_but_c_does_not_are_refused_with_the_line(tmp_path, token):
    assert _error(tmp_path, run=RUN.replace("2.0", token, 1)).endswith(f"r:2: score must be a number, got {token!r}")
    assert _error(tmp_path, QRELS.replace("1 0 d 1", f"1 0 d {token}")).endswith(
        f"q:4: grade must be a number, got {token!r}")


@given(st.text(alphabet=st.characters(categories=["Nd", "No", "Pc", "Zs"]), min_size=1, max_size=6))
@settings(max_examples=60, deadline=None)
def test_any_non_ascii_number_is_a_clear_error_or_ascii(tmp_path_factory, token):
    tmp = tmp_path_factory.mktemp("num")
    run = RUN.replace("2.0", "1" + token, 1)
    try:
        _, scores = _scores(tmp, run=run)
    except InputError as exc:
        assert str(exc).startswith(str(tmp / "r") + ":")  # a file and a line, never a traceback
    else:  # only ASCII whitespace may be read as a field separator: the score is then "1" and the rest other fields
        assert token.isascii() or token[0] in " \t", token


@pytest.mark.parametrize("token", ["1e400", "-1e999", "inf", "Infinity", "nan"])
def test_out_of_range_scores_name_the_line(tmp_path, token):
    assert "r:2: score must be a finite number" in _error(tmp_path, run=RUN.replace("2.0", token, 1))


# ------------------------------------------------------------------------------------------------ paths and bytes


def test_symlink_loop_is_a_clear_error(tmp_path):
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    _write(tmp_path / "q", QRELS)
    for args in ([tmp_path / "q", [tmp_path / "a"]], [tmp_path / "a", [tmp_path / "q"]]):
        with pytest.raises(InputError, match=r"/a: cannot read \(Too many levels of symbolic links\)"):
            me.load_collection(*args)
    result = _cli("evaluate", "-Q", tmp_path / "q", tmp_path / "a", "-m", "AP")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "a: cannot read (Too many levels of symbolic links)" in result.stderr


def test_unreadable_file_is_a_clear_error(tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    _write(tmp_path / "r", RUN)
    os.chmod(tmp_path / "r", 0)
    _write(tmp_path / "q", QRELS)
    with pytest.raises(InputError, match="r: cannot read"):
        me.load_collection(tmp_path / "q", [tmp_path / "r"])


def test_latin1_run_tag_is_refused_not_mangled(tmp_path):
    run = RUN.encode().replace(b"tagA", "système".encode("latin-1"))
    message = _error(tmp_path, run=run)
    assert message.endswith("r:7: the run tag b'syst\\xe8me' is not valid UTF-8 text")  # the last line's tag names the run
    col, _ = _scores(tmp_path, run=RUN.replace("tagA", "système"))  # UTF-8 is read as written
    assert col.systems == ["système"]


@pytest.mark.parametrize("content, line", [
    (QRELS.encode().replace(b"1 0 c 1", b"1 0 c\x001"), 3),
    ("\ufeff".encode("utf-16-le") + QRELS.encode("utf-16-le"), 1),
    (gzip.compress(b"\x00" * 1_000_000), 1),
])
def test_binary_data_is_refused_with_the_line(tmp_path, content, line):
    assert f"q:{line}: binary data, not a text file" in _error(tmp_path, content)


def test_gzip_bomb_is_refused_before_it_is_inflated(tmp_path):
    """400 MB of zeros in 400 kB of gzip: refused from its first 64 kB, in a process that never holds the 400 MB."""
    compressor = gzip.GzipFile(tmp_path / "q", "wb", compresslevel=9)
    for _ in range(400):
        compressor.write(bytes(1 << 20))
    compressor.close()
    code = ("import sys\nfrom meta_eval.inputs.trec import read_qrels\ntry:\n    read_qrels(sys.argv[1])\n"
            "except Exception as exc:\n    print(exc)\n"  # VmHWM: this process's peak (ru_maxrss keeps the parent's across exec)
            "print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM')))")
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path / "q")], capture_output=True, text=True,
                            timeout=120)
    message, peak_kb = result.stdout.splitlines()
    assert message.endswith("q:1: binary data, not a text file: a NUL byte at byte 1 of the line")
    assert int(peak_kb) < 300_000


def test_devices_and_fifos_as_inputs(tmp_path):
    """An endless device of binary data is refused after its first block; a FIFO (process substitution) is read."""
    zero = tmp_path / "zero"
    try:
        os.mknod(zero, 0o600 | 0o020000, os.makedev(1, 5))  # a character device like /dev/zero, in tmp
    except (PermissionError, OSError):
        pytest.skip("mknod not permitted")
    _write(tmp_path / "r", RUN)
    with pytest.raises(InputError, match="zero:1: binary data"):
        me.load_collection(zero, [tmp_path / "r"])
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"printf '{QRELS}' > '{fifo}'"])
    col = me.load_collection(fifo, [tmp_path / "r"])
    writer.wait(timeout=30)
    assert me.score(col, "AP").shape == (1, 2)


def test_inputs_are_never_changed_by_a_refused_read(tmp_path):
    files = {"q": QRELS.replace("1 0 b 0", "1 0 b 0 extra").encode(), "r": _with_endings(RUN, ["\r"]).encode()}
    for name, data in files.items():
        _write(tmp_path / name, data)
    result = _cli("evaluate", "-Q", tmp_path / "q", tmp_path / "r", "-m", "AP", "-o", tmp_path / "out.csv")
    assert result.returncode == 2 and "q:2: expected 4" in result.stderr and "Traceback" not in result.stderr
    for name, data in files.items():
        assert hashlib.sha256((tmp_path / name).read_bytes()).digest() == hashlib.sha256(data).digest()
    assert not (tmp_path / "out.csv").exists()


# ------------------------------------------------------------------------------------------------ other text inputs


def test_study_file_and_group_file_go_through_the_reader(tmp_path):
    from meta_eval.inputs.trec import read_run_groups
    from meta_eval.orchestration.multi_collection_study import read_study_file

    _write(tmp_path / "groups", "# run group\r\nrunA g1\r\nrunB g1\rrunC\n")
    with pytest.raises(InputError, match=r"groups:4: expected 2 whitespace-separated fields"):
        read_run_groups(tmp_path / "groups")
    _write(tmp_path / "groups", "runA g1\nrunA g2\n")
    with pytest.raises(InputError, match=r"groups:2: run 'runA' is given a group twice"):
        read_run_groups(tmp_path / "groups")
    _write(tmp_path / "study.toml", '[study]\nmetrics = ["AP"]\n# caf\xe9\n'.encode("latin-1"))
    with pytest.raises(InputError, match=r"study.toml:3: not valid UTF-8"):
        read_study_file(tmp_path / "study.toml")
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    with pytest.raises(InputError, match="loop: cannot read"):
        read_study_file(tmp_path / "loop")


# ------------------------------------------------------------------------------------------------ C's whitespace


@pytest.mark.parametrize("odd", ["\x0b", "\x0c"])
def test_a_vertical_tab_or_form_feed_separates_fields_in_a_file_of_tabs(tmp_path, odd):
    """trec_eval's isspace splits at them. In a file of tabs they stayed inside a field: ``1<TAB>Q0<TAB>a\f9...``
    made docid ``a\f9``, never judged (AP 0 where trec_eval finds 1, exit 0), and the run's name came from
    another field than the tag's."""
    tabs = "".join("\t".join(f[:3]) + odd + "x\t" + "\t".join(f[3:]) + "\n" for f in map(str.split, RUN.splitlines()))
    spaces = tabs.replace("\t", " ").replace(odd, " ")  # the same fields, as isspace reads them
    col, scores = _scores(tmp_path, QRELS, tabs)
    col_spaces, reference = _scores(tmp_path_factory_free(tmp_path), QRELS, spaces)
    _same(scores, reference)
    assert col.systems == col_spaces.systems == ["1.0"]  # the 6th field as isspace counts them (a x 3 1.0 tagA)
    qrels = QRELS.replace("1 0 c 1", f"1 0 c{odd}x 1").replace(" ", "\t")  # five fields: refused as trec_eval does
    assert "q:3:" in _error(tmp_path, qrels)


def tmp_path_factory_free(tmp_path):
    folder = tmp_path / "spaces"
    folder.mkdir(exist_ok=True)
    return folder


def test_a_byte_order_mark_before_a_comment_line_leaves_it_a_comment(tmp_path, reference):
    """The mark was dropped after the comment lines were: ``\\ufeff# TREC-COVID round 1`` became topic ``#`` with
    document ``round`` relevant (a phantom topic, MAP halved), or a wrong 'grade must be a number' error."""
    bom = b"\xef\xbb\xbf"
    _same(_scores(tmp_path, bom + b"# judged by NIST\n" + QRELS.encode(), bom + b"# BM25\n" + RUN.encode())[1],
          reference)
    assert _error(tmp_path, bom + bom + QRELS.encode()).endswith("q:1: a byte-order mark (U+FEFF) in the middle of "
                                                                 "the file (files joined with cat?): remove it")


def test_a_file_compressed_twice_says_so(tmp_path):
    message = _error(tmp_path, gzip.compress(gzip.compress(QRELS.encode())))
    assert "compressed twice" in message and "binary data" not in message


def test_runs_whose_names_collide_even_with_their_file_names_name_both_files(tmp_path):
    (tmp_path / "sub").mkdir()
    for path in (tmp_path / "r", tmp_path / "sub" / "r"):
        _write(path, RUN)
    _write(tmp_path / "q", QRELS)
    with pytest.raises(InputError, match=r"both named 'tagA@r', even with their file names \(.*r and .*sub/r\)"):
        me.load_collection(tmp_path / "q", [tmp_path / "r", tmp_path / "sub" / "r"])
