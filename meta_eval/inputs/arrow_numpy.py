"""Arrow arrays to numpy and back through their buffers, without pandas.

pyarrow's own conversions (``Array.to_numpy``, ``pa.array``, compute functions given Python scalars) go through
its pandas compatibility layer, which imports pandas on first use: a third of a second, holding the GIL, that
``meta-eval evaluate`` spends on nothing (it prints its tables from numpy arrays). Reading and writing the buffers
directly costs nothing and copies nothing. Written by hand because pyarrow has no pandas-free conversion;
``tests/test_arrow_numpy.py`` checks these against pyarrow's own, and that loading a collection does not import
pandas.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

_NUMPY = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64,
          pa.uint8(): np.uint8, pa.uint16(): np.uint16, pa.uint32(): np.uint32, pa.uint64(): np.uint64,
          pa.float32(): np.float32, pa.float64(): np.float64}
_ARROW = {np.dtype(dtype): arrow for arrow, dtype in _NUMPY.items()}


def to_numpy(values: pa.Array | pa.ChunkedArray, null: float | None = None) -> np.ndarray:
    """A numpy view of a numeric Arrow array (chunks are combined first).

    Parameters
    ----------
    values : pyarrow.Array or pyarrow.ChunkedArray
        Integers or floats.
    null : number, optional
        The value of null entries (a copy is then made); without it, an array with nulls is an error.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if values.type not in _NUMPY:
        raise TypeError(f"not a numeric Arrow array: {values.type}")
    dtype = np.dtype(_NUMPY[values.type])
    data = values.buffers()[1]
    out = np.frombuffer(data, dtype=dtype, count=len(values), offset=values.offset * dtype.itemsize) if len(values) \
        else np.zeros(0, dtype=dtype)
    if values.null_count == 0:
        return out
    if null is None:
        raise ValueError("the array has nulls: give the value they take")
    bits = np.frombuffer(values.buffers()[0], dtype=np.uint8)
    valid = np.unpackbits(bits, bitorder="little")[values.offset:values.offset + len(values)].astype(bool)
    return np.where(valid, out, null).astype(dtype)


def from_numpy(values: np.ndarray) -> pa.Array:
    """An Arrow array over a 1-d numeric numpy array's memory (a contiguous copy is made if needed)."""
    values = np.ascontiguousarray(values)
    if values.ndim != 1 or values.dtype not in _ARROW:
        raise TypeError(f"not a 1-d numeric array: {values.dtype}, {values.ndim} dimensions")
    return pa.Array.from_buffers(_ARROW[values.dtype], len(values), [None, pa.py_buffer(values)])


def strings(texts: Sequence[str]) -> pa.Array:
    """An Arrow string array of Python strings."""
    encoded = [text.encode() for text in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    if offsets[-1] > np.iinfo(np.int32).max:
        return pa.Array.from_buffers(pa.large_string(), len(encoded), [None, pa.py_buffer(offsets),
                                                                       pa.py_buffer(b"".join(encoded))])
    return pa.Array.from_buffers(pa.string(), len(encoded), [None, pa.py_buffer(offsets.astype(np.int32)),
                                                             pa.py_buffer(b"".join(encoded))])
