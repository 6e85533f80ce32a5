"""The key mapping of :mod:`lakesieve.keys.mapping`, vectorised over Arrow arrays.

:func:`map_keys_arrow` maps a whole column (an Arrow array or chunked array)
to the int64 keys that :func:`lakesieve.keys.mapping.map_key` gives each value, with
numpy instead of a Python loop wherever the type allows: builds and deltas of
every index type map their key columns here, inside Spark tasks.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.keys.mapping import (
    INT32_MAX,
    INT64_MAX,
    MAX_EXACT_DIGITS,
    MICROS_PER_DAY,
    KeyKind,
    as_float,
    decimal_key,
    parse_key_type,
)

__all__ = ["map_keys_arrow"]


def _null_mask(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.zeros(len(arr), dtype=bool)
    return np.asarray(arr.is_null())


def _result(values: np.ndarray, arr: pa.Array) -> pa.Int64Array:
    mask = _null_mask(arr)
    out = pa.array(
        values.astype(np.int64, copy=False), type=pa.int64(), mask=mask if mask.any() else None
    )
    assert isinstance(out, pa.Int64Array)
    return out


def _ints(arr: pa.Array) -> np.ndarray:
    """Integer storage of an array as int64 numpy, nulls filled with 0."""
    raw = pc.cast(arr, pa.int64()) if not pa.types.is_int64(arr.type) else arr
    return np.asarray(raw.fill_null(0) if raw.null_count else raw, dtype=np.int64)


def _timestamp_micros(arr: pa.Array) -> np.ndarray:
    unit = arr.type.unit
    raw = _ints(arr.cast(pa.int64()))
    if unit == "us":
        return raw
    if unit == "ns":
        return raw // 1000
    factor = 1_000_000 if unit == "s" else 1000
    with np.errstate(over="raise"):
        return raw * np.int64(factor)


def _prefix_keys(arr: pa.Array) -> np.ndarray:
    """First 8 bytes of each binary value, big-endian, shifted to signed order."""
    t = arr.type
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        arr = arr.cast(pa.large_binary())
    elif pa.types.is_string(t):
        arr = arr.cast(pa.binary())
    elif pa.types.is_large_string(t):
        arr = arr.cast(pa.large_binary())
    elif pa.types.is_fixed_size_binary(t):
        arr = arr.cast(pa.binary())
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    off_type = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=off_type)[arr.offset : arr.offset + n + 1].astype(
        np.int64
    )
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    starts = offsets[:-1]
    lengths = np.minimum(offsets[1:] - starts, 8)
    mat = np.zeros((n, 8), dtype=np.uint8)
    for j in range(8):
        has = lengths > j
        mat[has, j] = data[starts[has] + j]
    unsigned = mat.view(">u8").reshape(n).astype(np.uint64)
    return (unsigned ^ np.uint64(1 << 63)).view(np.int64)


def _decimal_keys(arr: pa.Array, k: KeyKind) -> np.ndarray:
    t = arr.type
    shift = k.scale - k.dropped_digits - t.scale  # key = floor(unscaled * 10**shift)
    n = len(arr)
    if pa.types.is_decimal128(t) and t.precision <= MAX_EXACT_DIGITS and shift == 0:
        words = np.frombuffer(arr.buffers()[1], dtype="<i8")
        return words[2 * arr.offset : 2 * (arr.offset + n) : 2].copy()
    out = np.zeros(n, dtype=np.int64)
    for i, value in enumerate(arr.to_pylist()):
        if value is not None:
            out[i] = decimal_key(value, k)
    return out


def _float_bits_keys(values: np.ndarray, wide: bool) -> np.ndarray:
    if wide:
        v = values.astype(np.float64)
        v[v == 0.0] = 0.0
        bits = v.view(np.int64)
        keys = np.where(bits < 0, bits ^ np.int64(INT64_MAX), bits)
        keys[np.isnan(v)] = INT64_MAX
        return keys
    with np.errstate(over="ignore"):
        v32 = values.astype(np.float32)
    v32[v32 == 0.0] = 0.0
    bits32 = v32.view(np.int32)
    keys32 = np.where(bits32 < 0, bits32 ^ np.int32(INT32_MAX), bits32).astype(np.int64)
    keys32[np.isnan(v32)] = INT32_MAX
    return keys32


def _floats(arr: pa.Array) -> np.ndarray:
    if pa.types.is_floating(arr.type):
        filled = arr.fill_null(0) if arr.null_count else arr
        return np.asarray(filled.cast(pa.float64()), dtype=np.float64)
    if pa.types.is_integer(arr.type) or pa.types.is_boolean(arr.type):
        return _ints(arr).astype(np.float64)
    if pa.types.is_decimal(arr.type):
        return np.array(
            [as_float(v) if v is not None else 0.0 for v in arr.to_pylist()], dtype=np.float64
        )
    raise TypeError(f"cannot map an Arrow {arr.type} array to floating keys")


def _map_chunk(arr: pa.Array, k: KeyKind) -> np.ndarray:
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    kind = k.kind
    if kind in ("int", "boolean"):
        if pa.types.is_integer(t) or pa.types.is_boolean(t):
            return _ints(arr)
    elif kind == "date":
        if pa.types.is_date32(t):
            return _ints(arr.cast(pa.int32()))
        if pa.types.is_date64(t):
            return _ints(arr.cast(pa.int64())) // 86_400_000
        if pa.types.is_timestamp(t):
            return _timestamp_micros(arr) // MICROS_PER_DAY
    elif kind == "timestamp":
        if pa.types.is_timestamp(t):
            return _timestamp_micros(arr)
        if pa.types.is_date32(t):
            return _ints(arr.cast(pa.int32())) * np.int64(MICROS_PER_DAY)
    elif kind == "decimal":
        if pa.types.is_decimal(t):
            return _decimal_keys(arr, k)
        if pa.types.is_integer(t):
            return np.array(
                [decimal_key(v, k) if v is not None else 0 for v in arr.to_pylist()],
                dtype=np.int64,
            )
    elif kind in ("string", "binary"):
        if (
            pa.types.is_string(t)
            or pa.types.is_large_string(t)
            or pa.types.is_binary(t)
            or pa.types.is_large_binary(t)
            or pa.types.is_string_view(t)
            or pa.types.is_binary_view(t)
            or pa.types.is_fixed_size_binary(t)
        ):
            return _prefix_keys(arr)
    elif kind in ("float", "double"):
        return _float_bits_keys(_floats(arr), wide=kind == "double")
    raise TypeError(f"cannot map an Arrow {t} array to {kind} keys")


def map_keys_arrow(array: pa.Array | pa.ChunkedArray, key_type: str) -> pa.Int64Array:
    """Map a pyarrow array of column values to integer keys, vectorised.

    Args:
        array: values of a column of type ``key_type`` (the Arrow type Spark
            uses for it; wider integer/timestamp units are accepted).
        key_type: Spark simple type string of the column.

    Returns:
        An int64 array of the same length; nulls stay null. Equal, element by
        element, to :func:`map_key`.

    Raises:
        UnsupportedKeyTypeError: ``key_type`` is not supported.
        TypeError: the Arrow type does not fit ``key_type``.
    """
    k = parse_key_type(key_type)
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    if not isinstance(array, pa.Array):
        array = pa.array(array)
    return _result(_map_chunk(array, k), array)
