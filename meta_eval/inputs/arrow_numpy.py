"""Arrow arrays to numpy and back through their buffers, without pandas; 64-bit hashes of Arrow strings.

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


# Odd 64-bit multipliers of splitmix64 (Steele, Lea & Flood 2014, "Fast splittable pseudorandom number generators").
_LENGTH_SEED = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)
#: ``_TAIL[k]`` keeps the first k bytes of a little-endian word.
_TAIL = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


def string_hashes(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A 64-bit hash of every string (or binary value) of an Arrow array: equal strings get equal hashes.

    The bytes are read 8 at a time as words from the array's data buffer, one word position at a time for all
    strings at once (numpy; a string of n bytes costs ceil(n / 8) steps), and combined as
    ``h = m(h ^ word)`` from ``h = length × c``, where ``m`` multiplies by an odd constant and folds the high half
    onto the low one (splitmix64's steps), and a last ``m`` mixes every bit into the low ones. Distinct strings
    share a hash with probability about 2**-64 per pair, so users compare the strings themselves wherever an equal
    hash decides something.

    Written by hand because Arrow has no element-wise hash kernel, and its hash tables (``dictionary_encode``,
    ``index_in``) cannot be kept between calls: looking up each run's documents among the qrels' would hash every
    qrels document again for every run (0.18 s per run for 650,000 judgments).

    Parameters
    ----------
    values : pyarrow.Array or pyarrow.ChunkedArray
        string, large_string, binary or large_binary values (or a dictionary of them), without nulls.
    """
    values = one_array(values)
    if pa.types.is_dictionary(values.type):
        return string_hashes(values.dictionary)[to_numpy(values.indices)]
    words, start, lengths = _words(values)
    if not len(lengths):
        return np.zeros(0, dtype=np.uint64)
    h = lengths.astype(np.uint64)
    h *= _LENGTH_SEED
    rows = None  # the strings longer than the word position (None: all)
    for at in range(0, int(lengths.max()), 8):
        if at:
            longer = lengths > at
            rows = None if longer.all() else np.flatnonzero(longer) if rows is None else rows[longer[rows]]
        left = lengths - at if rows is None else lengths[rows] - at  # bytes of the string from the word on
        word = words[start + at if rows is None else start[rows] + at]
        if left.min() < 8:
            word &= _TAIL[np.minimum(left, 8)]
        if rows is None:
            h ^= word
            _step(h)
        else:
            word ^= h[rows]
            h[rows] = _step(word)
    h *= _MIX_2
    h ^= h >> np.uint64(29)
    return h


def byte_order(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The permutation sorting strings (or binary values) in byte order, as C's ``strcmp``/``memcmp`` compare
    them (a prefix first); equal values keep their order.

    Each string is read as big-endian 8-byte words (zero-padded), whose numeric order is the bytes' order; the
    words (and the lengths, last) are the keys of one ``lexsort``. Written by hand: Arrow's ``sort_indices`` on
    strings costs about 0.4 µs a value, these sort keys a tenth of that.
    """
    values = one_array(values)
    if pa.types.is_dictionary(values.type):
        values = values.dictionary.take(values.indices)
    words, start, lengths = _words(values)
    if not len(lengths):
        return np.zeros(0, dtype=np.int64)
    words_first = []  # the big-endian words, the first word first
    for at in range(0, int(lengths.max(initial=0)), 8):
        left = np.clip(lengths - at, 0, 8)
        word = words[np.minimum(start + at, len(words) - 1)] & _TAIL[left]
        words_first.append(word.byteswap() if np.little_endian else word)
    if len(words_first) == 1:  # strings of at most 8 bytes: one key, unless a NUL byte makes padded words tie
        order = np.argsort(words_first[0], kind="stable")
        word, length = words_first[0][order], lengths[order]
        if not ((word[1:] == word[:-1]) & (length[1:] != length[:-1])).any():
            return order
    return np.lexsort([lengths, *words_first[::-1]])  # lexsort's last key is the first compared


def has_empty(values: pa.Array) -> bool:
    """Whether a string or binary array (not a dictionary) holds an empty value: two equal offsets in a row."""
    large = pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type)
    width = np.dtype(np.int64 if large else np.int32)
    if not len(values):
        return False
    offsets = np.frombuffer(values.buffers()[1], dtype=width, count=len(values) + 1,
                            offset=values.offset * width.itemsize)
    return bool((offsets[1:] == offsets[:-1]).any())


def one_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A column as one array (a file larger than a parse block was read in several chunks)."""
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    return values


def _words(values: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A string array's bytes as (unaligned) 8-byte words, one starting at each byte (the bytes are copied, with 8
    zero bytes after them), and each string's start (in bytes) and length."""
    if values.null_count:
        raise ValueError("the array has nulls")
    large = pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type)
    if not (large or pa.types.is_string(values.type) or pa.types.is_binary(values.type)):
        raise TypeError(f"not a string or binary Arrow array: {values.type}")
    n = len(values)
    width = np.dtype(np.int64 if large else np.int32)
    offsets = np.frombuffer(values.buffers()[1], dtype=width, count=n + 1, offset=values.offset * width.itemsize) \
        if n else np.zeros(1, dtype=width)
    first, end = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(values.buffers()[2], dtype=np.uint8, count=end) if end else np.zeros(0, np.uint8)
    padded = np.concatenate([data[first:], np.zeros(8, dtype=np.uint8)])
    words = np.ndarray(shape=(len(padded) - 7,), dtype=np.uint64, buffer=padded, strides=(1,))
    return words, offsets[:-1].astype(np.int64) - first, np.diff(offsets).astype(np.int64)


def _step(h: np.ndarray) -> np.ndarray:
    """Multiply by an odd constant, then fold the high half onto the low one (in place; returns ``h``)."""
    h *= _MIX_1
    h ^= h >> np.uint64(32)
    return h
