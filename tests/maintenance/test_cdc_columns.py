"""The vectorised CDC column decoder against fastavro, the Avro library, as the reference.

Random row schemas (nullable and required fields of every Avro type the
decoder walks), random rows and operations are encoded by fastavro as Hudi
``data_before_after`` records; every column the decoder reads must come out
exactly as fastavro decodes it, and every other column must be refused
(:class:`NotVectorizable`), never misread. Damaged blocks must be refused.
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import math
import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lakesieve.plugins.hudi.cdc import (
    CdcFormatError,
    NotVectorizable,
    block_content,
    cdc_schema,
    encode_records,
    records_column,
)
from lakesieve.plugins.hudi.cdc_columns import blocks_column

#: (Avro type, value strategy) per field kind.
KINDS: dict[str, tuple[Any, Any]] = {
    "boolean": ("boolean", st.booleans()),
    "int": ("int", st.integers(-(2**31), 2**31 - 1)),
    "long": ("long", st.integers(-(2**63), 2**63 - 1)),
    "float": ("float", st.floats(width=32, allow_nan=True)),
    "double": ("double", st.floats(allow_nan=True)),
    "string": ("string", st.text(max_size=12)),
    "bytes": ("bytes", st.binary(max_size=12)),
    "date": (
        {"type": "int", "logicalType": "date"},
        st.dates(dt.date(1900, 1, 1), dt.date(2200, 1, 1)),
    ),
    "decimal": (
        {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
        st.decimals(-(10**6), 10**6, places=2, allow_nan=False, allow_infinity=False),
    ),
    "fixed": ({"type": "fixed", "name": "f4", "size": 4}, st.binary(min_size=4, max_size=4)),
    "fixeddecimal": (
        {
            "type": "fixed",
            "name": "fd",
            "size": 8,
            "logicalType": "decimal",
            "precision": 18,
            "scale": 3,
        },
        st.decimals(-(10**14), 10**14, places=3, allow_nan=False, allow_infinity=False),
    ),
    "enum": ({"type": "enum", "name": "e3", "symbols": ["A", "B", "C"]}, st.sampled_from("ABC")),
}
READ = {"boolean", "int", "long", "float", "double", "string", "date", "decimal", "fixeddecimal"}


@st.composite
def tables(draw: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A row schema (each named type used once) and CDC records of its rows."""
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=8))
    fields = []
    strategies = {}
    for i, kind in enumerate(kinds):
        avro, values = KINDS[kind]
        if isinstance(avro, dict) and "name" in avro:
            avro = {**avro, "name": f"{avro['name']}_{i}"}
        nullable = draw(st.booleans())
        name = f"c{i}_{kind}"
        fields.append({"name": name, "type": ["null", avro] if nullable else avro})
        strategies[name] = st.none() | values if nullable else values
    schema = {"type": "record", "name": "row", "namespace": "hoodie.t", "fields": fields}
    row = st.fixed_dictionaries(strategies)
    ops = draw(
        st.lists(
            st.one_of(
                st.tuples(st.just("i"), st.none(), row),
                st.tuples(st.just("u"), row, row),
                st.tuples(st.just("d"), row, st.none()),
            ),
            max_size=30,
        )
    )
    records = [{"op": op, "ts_ms": "1", "before": b, "after": a} for op, b, a in ops]
    return schema, records


def _same(kind: str, got: list[Any], want: list[Any]) -> bool:
    if kind == "date":
        want = [None if v is None else (v - dt.date(1970, 1, 1)).days for v in want]
    if len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        if isinstance(w, float) and math.isnan(w):
            if not (isinstance(g, float) and math.isnan(g)):
                return False
        elif isinstance(w, float):
            if not (g == w and math.copysign(1, g) == math.copysign(1, w)):
                return False
        elif g != w:
            return False
    return True


@settings(max_examples=400, deadline=None)
@given(data=tables(), blocks=st.integers(1, 3))
def test_vectorised_columns_equal_fastavro(data: Any, blocks: int) -> None:
    schema, records = data
    cdc = cdc_schema(schema)
    encoded = encode_records(cdc, records)
    cut = [len(encoded) * k // blocks for k in range(blocks + 1)]
    contents = [block_content(encoded[a:b]) for a, b in itertools.pairwise(cut)]
    for f in schema["fields"]:
        kind = f["name"].split("_", 1)[1]
        want = records_column(contents, cdc, f["name"])
        if kind not in READ:
            with pytest.raises(NotVectorizable):
                blocks_column(contents, cdc, f["name"])
            continue
        got = blocks_column(contents, cdc, f["name"])
        assert np.array_equal(got.record_block, want.record_block)
        assert np.array_equal(got.has_before, want.has_before)
        assert np.array_equal(got.has_after, want.has_after)
        assert _same(kind, got.before.to_pylist(), want.before.to_pylist()), f
        assert _same(kind, got.after.to_pylist(), want.after.to_pylist()), f


def _sample() -> tuple[dict[str, Any], bytes]:
    schema = {
        "type": "record",
        "name": "row",
        "fields": [
            {"name": "k", "type": ["null", "long"]},
            {"name": "s", "type": "string"},
            {
                "name": "m",
                "type": {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 1},
            },
        ],
    }
    rows = [
        {
            "op": "u",
            "ts_ms": "1",
            "before": {"k": 1, "s": "a", "m": decimal.Decimal("1.5")},
            "after": {"k": 2, "s": "bé", "m": decimal.Decimal("-2.0")},
        },
        {
            "op": "i",
            "ts_ms": "1",
            "before": None,
            "after": {"k": None, "s": "", "m": decimal.Decimal("0.0")},
        },
        {
            "op": "d",
            "ts_ms": "1",
            "before": {"k": -7, "s": "x" * 300, "m": decimal.Decimal("9.9")},
            "after": None,
        },
    ]
    cdc = cdc_schema(schema)
    return cdc, block_content(encode_records(cdc, rows))


def test_known_values() -> None:
    cdc, content = _sample()
    col = blocks_column([content], cdc, "k")
    assert col.before.to_pylist() == [1, -7] and col.after.to_pylist() == [2, None]
    assert col.has_before.tolist() == [True, False, True]
    assert blocks_column([content], cdc, "s").after.to_pylist() == ["bé", ""]
    assert blocks_column([content], cdc, "m").before.to_pylist() == [
        decimal.Decimal("1.5"),
        decimal.Decimal("9.9"),
    ]
    assert records_column([content], cdc, "m").before.to_pylist() == [
        decimal.Decimal("1.5"),
        decimal.Decimal("9.9"),
    ]
    assert pa.types.is_int64(col.before.type)


@pytest.mark.parametrize("damage", ["truncate", "extra", "op", "images", "count"])
def test_damaged_blocks_are_refused(damage: str) -> None:
    cdc, content = _sample()
    if damage == "truncate":
        bad = content[:-3]
    elif damage == "extra":
        bad = content + b"\x00"
    elif damage == "op":  # the insert says it is an update: its before image is missing
        at = content.index(b"\x02i")
        bad = content[:at] + b"\x02u" + content[at + 2 :]
    elif damage == "images":  # the delete says it is an insert: it holds a before image
        at = content.index(b"\x02d")
        bad = content[:at] + b"\x02i" + content[at + 2 :]
    else:  # one record more than the block holds
        version, count = struct.unpack_from(">ii", content, 0)
        bad = struct.pack(">ii", version, count + 1) + content[8:]
    with pytest.raises(CdcFormatError):
        blocks_column([bad], cdc, "k")
    with pytest.raises(CdcFormatError):
        records_column([bad], cdc, "k")
