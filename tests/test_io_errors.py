"""Bad input gets a clear error naming the file and the line; nothing is silently coerced."""

from __future__ import annotations

import gzip

import pandas as pd
import pytest

import meta_eval as me
from meta_eval.core.errors import InputError

QRELS = "1 0 a 1\n1 0 b 0\n1 0 c 2\n2 0 a 1\n"
RUN = "1 Q0 a 1 3.0 r\n1 Q0 b 2 2.0 r\n1 Q0 z 3 1.0 r\n2 Q0 a 1 1.0 r\n"


def write(tmp_path, name, text, gz=False):
    path = tmp_path / name
    if gz:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def load(tmp_path, qrels=QRELS, run=RUN, **options):
    return me.load_collection(write(tmp_path, "qrels", qrels), [write(tmp_path, "run", run)], **options)


def error_of(tmp_path, **kwargs) -> InputError:
    with pytest.raises(InputError) as info:
        load(tmp_path, **kwargs)
    return info.value


def test_valid_input_loads(tmp_path):
    col = load(tmp_path)
    assert col.systems == ["r"] and col.topics == ["1", "2"]


@pytest.mark.parametrize(
    "run, line, words",
    [
        ("1 Q0 a 1 3.0 r\n1 Q0 b 2 2.0\n", 2, "expected 6"),
        ("1 Q0 a 1 3.0 r\n1 Q0 b 2 high r\n", 2, "score must be a number"),
        ("1 Q0 a 1 3.0 r\n\n1 Q0 b 2 nan r\n", 3, "finite"),
        ("1 Q0 a 1 inf r\n", 1, "finite"),
        ("1 Q0 a 1 3.0 r\n1 Q0 b 2 2.0 r\n1 Q0 a 3 1.0 r\n", 3, "appears twice"),
        ("1\tQ0\ta\t1\t3.0\tr\n1\tQ0\t\tb\t2\tr\n", 2, "expected 6"),
        # single spaces but for one line, whose empty field (a missing rank, q0 or tag) makes six of five
        ("1 Q0 a 1 3.0 r\n1 Q0 b  2.0 r\n", 2, "expected 6"),
        ("1 Q0 a 1 3.0 r\n1  b 2 2.0 r\n", 2, "expected 6"),
        ("1 Q0 a 1 3.0 r\n1 Q0 b 2 2.0 \n", 2, "expected 6"),
    ],
)
def test_bad_run_lines(tmp_path, run, line, words):
    err = error_of(tmp_path, run=run)
    assert err.line == line and str(err.source).endswith("run") and words in str(err)


@pytest.mark.parametrize(
    "qrels, line, words",
    [
        ("1 0 a 1\n1 0 b\n", 2, "expected 4"),
        ("1 0 a 1\n1  b 1\n", 2, "expected 4"),
        ("1 0 a 1\n1 0 b 0.5\n", 2, "integer"),
        ("1 0 a 1\n1 0 b two\n", 2, "number"),
        ("1 0 a 1\n1 0 b 0\n1 0 a 2\n", 3, "judged twice"),
    ],
)
def test_bad_qrels_lines(tmp_path, qrels, line, words):
    err = error_of(tmp_path, qrels=qrels)
    assert err.line == line and str(err.source).endswith("qrels") and words in str(err)


def test_empty_file(tmp_path):
    err = error_of(tmp_path, run="\n  \n")
    assert "empty" in str(err) and str(err.source).endswith("run")


def test_corrupt_and_truncated_gzip(tmp_path):
    good = gzip.compress(RUN.encode())
    (tmp_path / "trunc.gz").write_bytes(good[: len(good) // 2])
    (tmp_path / "junk.gz").write_bytes(b"\x1f\x8b" + b"not gzip at all")
    for name in ("trunc.gz", "junk.gz"):
        with pytest.raises(InputError, match="gzip") as info:
            me.load_collection(write(tmp_path, "q", QRELS), [tmp_path / name])
        assert info.value.source.endswith(name)


def test_gzip_run_reads_like_plain(tmp_path):
    plain = load(tmp_path)
    zipped = me.load_collection(write(tmp_path, "q", QRELS), [write(tmp_path, "run.gz", RUN, gz=True)])
    assert (plain.grades == zipped.grades).all()


def test_run_with_no_topic_in_common(tmp_path):
    err = error_of(tmp_path, run="9 Q0 a 1 1.0 r\n")
    assert "no topic in common" in str(err) and str(err.source).endswith("run")


def test_missing_file_and_empty_glob(tmp_path):
    with pytest.raises(InputError, match="not found"):
        me.load_collection(tmp_path / "nope", [write(tmp_path, "run", RUN)])
    with pytest.raises(InputError, match="no run files"):
        me.load_collection(write(tmp_path, "q", QRELS), [str(tmp_path / "*.none")])


def test_bad_options(tmp_path):
    for options in ({"ties": "random"}, {"missing": "maybe"}, {"depth": 0}, {"unjudged": "drop"}):
        with pytest.raises(InputError):
            load(tmp_path, **options)


def test_dataframe_errors():
    qrels = pd.DataFrame({"topic": ["1"], "docid": ["a"], "grade": [1.5]})
    with pytest.raises(InputError, match="integer"):
        me.load_collection(qrels, [pd.DataFrame({"run": ["r"], "topic": ["1"], "docid": ["a"], "score": [1.0]})])
    good = pd.DataFrame({"topic": ["1"], "docid": ["a"], "grade": [1]})
    with pytest.raises(InputError, match="finite"):
        me.load_collection(good, [pd.DataFrame({"run": ["r"], "topic": ["1"], "docid": ["a"], "score": ["x"]})])
    with pytest.raises(InputError, match="lacks columns"):
        me.load_collection(good, [pd.DataFrame({"run": ["r"], "topic": ["1"]})])


def test_unknown_measure_and_parameters():
    for spec, words in (("APX", "unknown measure"), ("nDCG(gainz=exp)", "no parameter"),
                        ("nDCG(gain=cubic)", "bad value"), ("bpref@10", "no @cutoff"), ("P@ten", "bad value")):
        with pytest.raises(InputError, match=words):
            me.get_measure(spec)
    with pytest.raises(InputError, match="sum to 1"):
        me.score_lists("GAP(g=0.5,0.2)", [[1, 2]])
    with pytest.raises(InputError, match="one threshold probability per grade"):
        me.score_lists("GAP(g=1)", [[1, 2]])


def test_unknown_systems_and_topics_in_subset(tmp_path):
    col = load(tmp_path)
    with pytest.raises(InputError, match="unknown topic"):
        col.subset(topics=["7"])
