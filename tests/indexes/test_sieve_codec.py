"""The Sieve's stored form (format 2, one checksummed blob) and its warm lookup path.

Round trips over drawn relations of every key type through the real index
store, corruption and truncation detected, any other format version refused
with its number named, and the warm path answering exactly like the numpy
path.
"""

from __future__ import annotations

import dataclasses
import math
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lakesieve.errors import IndexCorruptError
from lakesieve.indexes.sieve import build_local, load_index
from lakesieve.indexes.sieve.codec import (
    FILE_NAME,
    MAGIC,
    CodecError,
    decode,
    encode,
    from_table,
    to_table,
)
from lakesieve.indexes.sieve.lookup import SieveFormatError, SieveIndex
from lakesieve.model import BuiltIndex, KeyQuery
from lakesieve.store import IndexStore
from lakesieve.store.index_log import IndexState, StoredFile

from tests.indexes.test_sieve import EXAMPLES, _keys_array, _queries, _truth, relations


def _numpy_answer(index: SieveIndex, q: KeyQuery) -> frozenset[str] | None:
    """The answer of the vectorised path (the warm path must give the same)."""
    return index.lookup_vectorised(q).locations


def _stored(tmp_path: Path, built: BuiltIndex) -> BuiltIndex:
    """``built`` written by the real index store and read back (checksums verified)."""
    store = IndexStore(tmp_path / "store")
    state_id, records = store.write_files("ix", built)
    return BuiltIndex(files=store.read_files(_state(state_id, records)), meta=dict(built.meta))


def _state(state_id: str, records: list[dict[str, Any]]) -> IndexState:
    files = tuple(StoredFile(**r) for r in records)
    return IndexState("ix", state_id, "001", "001", files, {}, 0)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(relations(), st.data())
def test_round_trip_answers_like_the_numpy_path(
    case: tuple[str, list[tuple[Any, str]], dict[str, Any], int], data: st.DataObject
) -> None:
    key_type, rows, params, partitions = case
    keys: Any = _keys_array(key_type, rows)
    built = build_local(keys, [loc for _, loc in rows], key_type, params, partitions=partitions)
    assert set(built.files) == {FILE_NAME} and built.meta["format_version"] == 2
    blob = from_table(built.files[FILE_NAME])
    arrays = decode(blob)
    assert encode(arrays) == blob  # decoding loses nothing the encoding keeps
    index = load_index(built)
    assert index.locations.tolist() == arrays.locations
    assert np.array_equal(index.entry_count, arrays.entry_count)
    assert np.array_equal(index.location_rows, arrays.location_rows)
    for q in _queries(data.draw, key_type, rows):
        got = index.lookup(q).locations
        assert got is not None
        assert got == _numpy_answer(index, q), q
        assert _truth(key_type, rows, q) <= got


def test_every_key_type_survives_the_real_store(tmp_path: Path) -> None:
    cases: dict[str, list[Any]] = {
        "double": [math.nan, -0.0, 0.0, -math.inf, math.inf, 1.5, None],
        "string": ["", "a", "\u00e9t\u00e9", "commonpfx-a", "commonpfx-b", None],
        "decimal(30,3)": [None, *(__import__("decimal").Decimal(v) for v in ("-1.5", "0", "1e18"))],
        "bigint": [-(2**63), 2**63 - 1, 0, None],
    }
    for i, (key_type, values) in enumerate(cases.items()):
        locs = [f"part={j % 2}/fg-{j}" for j in range(len(values))]
        built = build_local(values, locs, key_type)
        index = load_index(_stored(tmp_path / str(i), built))
        for v, loc in zip(values, locs, strict=True):
            q = KeyQuery("is_null") if v is None else KeyQuery("points", values=(v,))
            assert loc in (index.lookup(q).locations or ()), (key_type, v)
    nan = load_index(build_local([math.nan, -0.0], ["n", "z"], "double"))
    assert nan.lookup(KeyQuery("points", values=(0.0,))).locations == {"z"}
    assert nan.lookup(KeyQuery("range", low=1e308)).locations == {"n"}  # NaN above all


def _interleaved(n: int = 50_000) -> BuiltIndex:
    keys = np.arange(n, dtype=np.int64) * 3
    locs = np.array([f"p/fg-{(i * 1024 // n) % 64:02d}-0123456789abcdef" for i in range(n)])
    return build_local(pa.array(keys), locs, "bigint", partitions=2)


def test_format_2_is_much_smaller_than_its_plain_arrays() -> None:
    """The blob against the same content as plain arrays (what format 1 stored, uncompressed)."""
    built = _interleaved()
    arrays = decode(from_table(built.files[FILE_NAME]))
    plain = sum(len(name.encode("utf-8")) for name in arrays.locations) + sum(
        np.asarray(getattr(arrays, f.name)).nbytes
        for f in dataclasses.fields(arrays)
        if f.name != "locations"
    )
    stored = load_index(built).size_bytes
    assert stored * 3 < plain, (stored, plain)


def _corrupt(blob: bytes) -> list[bytes]:
    body = blob[13:]
    head = struct.unpack("<4sBII", blob[:13])
    return [
        blob[:-1],  # truncated
        blob[:5],  # shorter than its header
        blob[:20] + bytes([blob[20] ^ 0x40]) + blob[21:],  # a flipped bit in the body
        b"XXXX" + blob[4:],  # wrong magic
        blob[:4] + b"\x07" + blob[5:],  # unknown version
        blob + b"\x00",  # trailing garbage (fails the checksum)
        struct.pack("<4sBII", MAGIC, 2, head[2], head[3] + 1) + body,  # wrong length
        # a well-formed, checksummed body with a section cut short
        struct.pack("<4sBII", MAGIC, 2, zlib.crc32(zlib.compress(b"\x01")), 1)
        + zlib.compress(b"\x01"),
    ]


def test_corrupt_blobs_are_detected() -> None:
    built = _interleaved(5_000)
    blob = from_table(built.files[FILE_NAME])
    for bad in _corrupt(blob):
        with pytest.raises(CodecError):
            decode(bad)
        with pytest.raises(SieveFormatError):
            load_index(BuiltIndex(files={FILE_NAME: to_table(bad)}, meta=built.meta))
    for files in (
        {},
        {FILE_NAME: pa.table({"data": [blob, blob]})},
        {FILE_NAME: pa.table({"other": [blob]})},
    ):
        with pytest.raises(SieveFormatError):
            load_index(BuiltIndex(files=files, meta=built.meta))


def test_inconsistent_sections_are_detected() -> None:
    arrays = decode(from_table(_interleaved(5_000).files[FILE_NAME]))
    meta = dict(_interleaved(5_000).meta)
    bad = [
        {"entry_loc": arrays.entry_loc + 1000},  # unknown location ids
        {"block_entries": arrays.block_entries[:-1]},  # fewer blocks than segments need
        {"entry_count": arrays.entry_count[:-1]},  # entries of unequal length
        {"location_rows": arrays.location_rows[:-1]},
        {"seg_width": np.ones_like(arrays.seg_width)},  # far more blocks than stored
    ]
    for change in bad:
        broken = type(arrays)(**{**arrays.__dict__, **change})
        with pytest.raises(SieveFormatError):
            load_index(BuiltIndex(files={FILE_NAME: to_table(encode(broken))}, meta=meta))


def test_corrupt_stored_file_is_refused(tmp_path: Path) -> None:
    built = _interleaved(5_000)
    store = IndexStore(tmp_path / "store")
    state_id, records = store.write_files("ix", built)
    path = store.root / records[0]["path"]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(IndexCorruptError, match="checksum"):
        store.read_files(_state(state_id, records))
    # a blob corrupted before the store's checksum was taken fails the Sieve's own check
    blob = bytearray(from_table(built.files[FILE_NAME]))
    blob[-3] ^= 0x01
    bad = BuiltIndex(files={FILE_NAME: to_table(bytes(blob))}, meta=built.meta)
    with pytest.raises(IndexCorruptError):
        load_index(_stored(tmp_path / "b", bad))


def _format_1_files(n: int) -> dict[str, pa.Table]:
    """Files shaped like the removed format 1 (five Arrow tables), holding ``n`` one-key blocks."""
    ids = pa.array([0] * n, pa.int32())
    ones = pa.array([1] * n, pa.int64())
    keys = pa.array(range(n), pa.int64())
    return {
        "locations": pa.table({"location": ["l0"], "rows": pa.array([n], pa.int64())}),
        "directory": pa.table(
            {
                "min_key": keys,
                "max_key": keys,
                "width": pa.array([0] * n, pa.uint64()),
                "first_block": pa.array(range(n), pa.int64()),
            }
        ),
        "blocks": pa.table({"first_entry": pa.array(range(n), pa.int64())}),
        "entries": pa.table({"location_id": ids, "count": ones}),
        "nulls": pa.table(
            {"location_id": pa.array([], pa.int32()), "count": pa.array([], pa.int64())}
        ),
    }


def test_unknown_format_version_is_refused() -> None:
    built = _interleaved(2_000)
    for version in (0, 1, 3, None, "2"):
        with pytest.raises(SieveFormatError, match=f"format version {version!r},") as caught:
            load_index(
                BuiltIndex(files=built.files, meta={**built.meta, "format_version": version})
            )
        assert isinstance(caught.value, IndexCorruptError)
        assert "\n" not in str(caught.value) and "rebuild" in str(caught.value)
    # format 1 (no longer read) is refused under its own number and under format 2's,
    # never misread
    old = _format_1_files(10)
    for version in (1, 2):
        with pytest.raises(SieveFormatError):
            load_index(BuiltIndex(files=old, meta={**built.meta, "format_version": version}))


@settings(max_examples=50, deadline=None)
@given(st.data())
def test_warm_ranges_equal_numpy_ranges_on_overlapping_segments(data: st.DataObject) -> None:
    n = data.draw(st.integers(50, 400))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    keys = np.sort(rng.integers(0, 5 * n, n))
    locs = [f"l{(k * data.draw(st.sampled_from([1, 3, 7])) // 40) % 9}" for k in keys.tolist()]
    params = {"min_run_keys": data.draw(st.integers(1, 5)), "max_segment_keys": 30}
    index = load_index(
        build_local(pa.array(keys), locs, "bigint", params, partitions=data.draw(st.integers(1, 5)))
    )
    warm = index.warm()
    assert warm is not None
    for _ in range(60):
        lo = int(rng.integers(-10, 5 * n + 10))
        hi = lo + int(rng.integers(0, 3 * n))
        assert warm.names_of(warm.range_mask(lo, hi)) == index.key_range(lo, hi), (lo, hi)
        assert warm.names_of(warm.point_mask(lo)) == index.points(np.array([lo])), lo
