"""Arrow <-> numpy through buffers (meta_eval.inputs.arrow_numpy) against pyarrow's own conversions, and the everyday
``meta-eval evaluate`` never importing pandas."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from meta_eval.inputs.arrow_numpy import byte_order, from_numpy, has_empty, string_hashes, strings, to_numpy

NUMERIC = st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64, np.float32,
                           np.float64])


@settings(deadline=None)  # the first example imports pandas (pyarrow's own conversion, the reference)
@given(dtype=NUMERIC, data=st.data())
def test_to_numpy_matches_pyarrow_on_slices_and_chunks(dtype, data):
    values = data.draw(hnp.arrays(dtype, st.integers(0, 40)))
    array = pa.array(values)
    start = data.draw(st.integers(0, len(values)))
    stop = data.draw(st.integers(start, len(values)))
    part = array.slice(start, stop - start)
    np.testing.assert_array_equal(to_numpy(part), part.to_numpy(), strict=True)
    chunked = pa.chunked_array([array, part], type=array.type)
    np.testing.assert_array_equal(to_numpy(chunked), chunked.to_numpy(), strict=True)


@settings(deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.integers(-100, 100)), max_size=40), offset=st.integers(0, 5))
def test_nulls_take_the_given_value(values, offset):
    array = pa.array(values, type=pa.int32()).slice(min(offset, len(values)))
    expected = np.array([-1 if v is None else v for v in array.to_pylist()], dtype=np.int32)
    np.testing.assert_array_equal(to_numpy(array, null=-1), expected, strict=True)
    if array.null_count:
        with pytest.raises(ValueError, match="nulls"):
            to_numpy(array)


@settings(deadline=None)
@given(dtype=NUMERIC, data=st.data())
def test_from_numpy_round_trips(dtype, data):
    values = data.draw(hnp.arrays(dtype, st.integers(0, 40)))
    for part in (values, values[::2]):  # (compared through numpy: Arrow's equals never finds NaN equal)
        array = from_numpy(part)
        assert array.type == pa.array(part).type
        np.testing.assert_array_equal(array.to_numpy(), part, strict=True)


@given(st.lists(st.text(), max_size=20))
def test_strings_match_pyarrow(texts):
    assert strings(texts).equals(pa.array(texts, type=pa.string()))


def test_non_numeric_arrays_are_refused():
    with pytest.raises(TypeError, match="numeric"):
        to_numpy(pa.array(["a"]))
    with pytest.raises(TypeError, match="numeric"):
        from_numpy(np.zeros((2, 2)))


@pytest.mark.parametrize("fmt", ["table", "trec", "md", "tex"])
def test_evaluate_prints_without_importing_pandas(tmp_path, fmt):
    """pandas costs a third of a second of import: the printed formats are made from numpy arrays, and pyarrow's
    conversions that would import it are avoided while the collection is loaded (tab- and space-separated runs,
    ties, unjudged documents)."""
    (tmp_path / "qrels").write_text("1 0 a 2\n1 0 b 0\n2 0 c 1\n")
    (tmp_path / "r1").write_text("1\tQ0\ta\t1\t2.5\tr1\n1\tQ0\tz\t2\t2.5\tr1\n2\tQ0\tc\t1\t1.0\tr1\n")
    (tmp_path / "r2").write_text("2 Q0 c 1 3 r2\n1 Q0 b 1 2 r2\n1 Q0 a 2 1 r2\n")
    code = ("import sys\nfrom meta_eval.cli.app import app\n"
            "try:\n    app(sys.argv[1:])\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
            "print('pandas imported' if 'pandas' in sys.modules else 'no pandas', file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", code, "evaluate", "-Q", str(tmp_path / "qrels"), str(tmp_path / "r1"),
                          str(tmp_path / "r2"), "-m", "AP", "-m", "nDCG@10", "-q", "-f", fmt, "--no-progress"],
                         capture_output=True, text=True, check=True)
    assert "r2" in out.stdout
    assert out.stderr.strip().endswith("no pandas"), out.stderr


BYTES = st.lists(st.binary(max_size=20).filter(lambda b: b"\x00" not in b) | st.sampled_from([b"", b"a", b"ab\x00"]),
                 max_size=40)


@settings(deadline=None)
@given(values=BYTES, data=st.data())
def test_string_hashes_are_equal_exactly_for_equal_strings(values, data):
    """Equal strings, equal hashes, whatever the array's layout (sliced, large offsets, dictionary-encoded,
    chunked); distinct strings, distinct hashes (a collision of 64-bit hashes among 40 strings would be a
    defect)."""
    array = pa.array(values, pa.binary())
    start = data.draw(st.integers(0, len(values)))
    layouts = [(array, values), (array.cast(pa.large_binary()), values), (array.slice(start), values[start:]),
               (pa.chunked_array([array.slice(0, start), array.slice(start)], pa.binary()), values),
               (array.dictionary_encode(), values)]
    reference = {value: string_hashes(pa.array([value], pa.binary()))[0] for value in values}
    for layout, expected in layouts:
        hashes = string_hashes(layout)
        assert hashes.dtype == np.uint64
        assert hashes.tolist() == [reference[v] for v in expected]
    assert len(set(reference.values())) == len(reference)


@settings(deadline=None)
@given(values=st.lists(st.binary(max_size=20), max_size=40))
def test_byte_order_is_memcmp_order(values):
    """Strings in C's byte order (memcmp, a prefix first; NUL bytes too), equal strings in their order: Python's
    sort of bytes is that order, and stable."""
    order = byte_order(pa.array(values, pa.binary()))
    assert order.tolist() == sorted(range(len(values)), key=lambda i: values[i])
    assert byte_order(pa.array([v.decode("latin-1") for v in values], pa.string()).cast(pa.binary())).tolist() == \
        order.tolist()


def test_hashes_and_order_refuse_what_is_not_text():
    with pytest.raises(TypeError, match="string or binary"):
        string_hashes(pa.array([1, 2]))
    with pytest.raises(ValueError, match="nulls"):
        byte_order(pa.array(["a", None]))


@given(values=BYTES, data=st.data())
def test_has_empty_finds_an_empty_value(values, data):
    array = pa.array(values, pa.binary())
    start = data.draw(st.integers(0, len(values)))
    for layout, expected in ((array, values), (array.slice(start), values[start:]),
                             (array.cast(pa.large_string()) if all(v.isascii() for v in values) else array, values)):
        assert has_empty(layout) == (b"" in expected)
