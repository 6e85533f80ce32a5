"""The order-preserving key mapping: monotone, scalar == vectorised, clear errors."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import math
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lakesieve.errors import UnsupportedKeyTypeError
from lakesieve.keys.key_arrays import map_keys_arrow
from lakesieve.keys.mapping import (
    INT64_MAX,
    INT64_MIN,
    is_injective,
    map_bound,
    map_key,
    parse_key_type,
    supported,
)

# ---------------------------------------------------------------------------
# per type: a strategy of column values, the Arrow type Spark uses, and
# Spark's ordering of the values (a sort key)
# ---------------------------------------------------------------------------

UTC = dt.UTC


def _dec(p: int, s: int) -> st.SearchStrategy[decimal.Decimal]:
    bound = 10 ** (p) - 1
    ctx = decimal.Context(prec=60)
    return st.integers(-bound, bound).map(lambda u: decimal.Decimal(u).scaleb(-s, ctx))


def _float_order(v: float) -> tuple[int, float]:
    return (1, 0.0) if math.isnan(v) else (0, v + 0.0)


def _as_float32(v: float) -> float:
    import numpy as np

    with np.errstate(over="ignore"):
        return float(np.float32(v))


naive_datetimes = st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30))
aware_datetimes = st.datetimes(
    min_value=dt.datetime(1, 1, 2),
    max_value=dt.datetime(9999, 12, 30),
    timezones=st.sampled_from([UTC, dt.timezone(dt.timedelta(hours=5, minutes=30))]),
)


def _utc(v: dt.datetime) -> dt.datetime:
    return v.replace(tzinfo=UTC) if v.tzinfo is None else v.astimezone(UTC)


CASES: dict[str, tuple[st.SearchStrategy[Any], pa.DataType, Callable[[Any], Any]]] = {
    "tinyint": (st.integers(-128, 127), pa.int8(), lambda v: v),
    "smallint": (st.integers(-(2**15), 2**15 - 1), pa.int16(), lambda v: v),
    "int": (st.integers(-(2**31), 2**31 - 1), pa.int32(), lambda v: v),
    "bigint": (st.integers(INT64_MIN, INT64_MAX), pa.int64(), lambda v: v),
    "boolean": (st.booleans(), pa.bool_(), lambda v: v),
    "date": (st.dates(), pa.date32(), lambda v: v),
    "timestamp": (naive_datetimes | aware_datetimes, pa.timestamp("us", tz="UTC"), _utc),
    "timestamp_ntz": (naive_datetimes, pa.timestamp("us"), lambda v: v),
    "decimal(10,2)": (_dec(10, 2), pa.decimal128(10, 2), lambda v: v),
    "decimal(18,0)": (_dec(18, 0), pa.decimal128(18, 0), lambda v: v),
    "decimal(38,10)": (_dec(38, 10), pa.decimal128(38, 10), lambda v: v),
    "decimal(25,0)": (_dec(25, 0), pa.decimal128(25, 0), lambda v: v),
    "string": (st.text(max_size=12), pa.string(), lambda v: v.encode("utf-8")),
    "binary": (st.binary(max_size=12), pa.binary(), lambda v: v),
    "float": (
        st.floats(width=32, allow_nan=True, allow_infinity=True),
        pa.float32(),
        _float_order,
    ),
    "double": (st.floats(allow_nan=True, allow_infinity=True), pa.float64(), _float_order),
}

# Arrow types Spark (or other writers) may also hand over for the same column.
ALT_TYPES: dict[str, list[pa.DataType]] = {
    "string": [pa.large_string(), pa.string_view()],
    "binary": [pa.large_binary()],
    "bigint": [pa.int32()],
    "timestamp_ntz": [pa.timestamp("ns")],
}


def _to_arrow_values(key_type: str, values: list[Any]) -> list[Any]:
    if key_type == "timestamp":
        return [None if v is None else _utc(v) for v in values]
    return values


@pytest.mark.parametrize("key_type", sorted(CASES))
def test_monotone(key_type: str) -> None:
    strategy, _, order = CASES[key_type]

    @settings(max_examples=80, deadline=None)
    @given(st.lists(strategy, min_size=2, max_size=20))
    def check(values: list[Any]) -> None:
        ranked = sorted(values, key=order)
        keys = [map_key(v, key_type) for v in ranked]
        assert keys == sorted(keys), (ranked, keys)
        assert all(INT64_MIN <= k <= INT64_MAX for k in keys)
        for a, b in itertools.pairwise(ranked):
            if order(a) == order(b):
                assert map_key(a, key_type) == map_key(b, key_type)

    check()


@pytest.mark.parametrize("key_type", sorted(CASES))
def test_scalar_and_vector_agree(key_type: str) -> None:
    strategy, arrow_type, _ = CASES[key_type]

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.none() | strategy, max_size=25), st.integers(0, 3))
    def check(values: list[Any], cut: int) -> None:
        expected = [None if v is None else map_key(v, key_type) for v in values]
        arr = pa.array(_to_arrow_values(key_type, values), type=arrow_type)
        got = map_keys_arrow(arr, key_type)
        assert isinstance(got, pa.Int64Array)
        assert got.to_pylist() == expected
        # sliced arrays (non-zero offsets) and chunked arrays
        assert map_keys_arrow(arr.slice(cut), key_type).to_pylist() == expected[cut:]
        chunked = pa.chunked_array([arr.slice(0, cut), arr.slice(cut)], type=arrow_type)
        assert map_keys_arrow(chunked, key_type).to_pylist() == expected
        for alt in ALT_TYPES.get(key_type, []):
            try:
                alt_arr = arr.cast(alt)
            except pa.ArrowInvalid:
                continue
            assert map_keys_arrow(alt_arr, key_type).to_pylist() == expected

    check()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=10), st.text(max_size=10))
def test_string_prefix_mapping(a: str, b: str) -> None:
    ka, kb = map_key(a, "string"), map_key(b, "string")
    if a.encode()[:8] == b.encode()[:8]:
        assert ka == kb
    elif a < b:
        assert ka <= kb
    # binary and string agree on the same bytes
    assert map_key(a.encode(), "binary") == ka


def test_documented_values() -> None:
    assert map_key(-5, "bigint") == -5
    assert map_key(True, "boolean") == 1
    assert map_key(dt.date(1970, 1, 2), "date") == 1
    assert map_key(dt.datetime(1970, 1, 1, 0, 0, 1), "timestamp") == 1_000_000
    assert (
        map_key(dt.datetime(1970, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))), "timestamp")
        == 0
    )
    assert map_key(decimal.Decimal("12.34"), "decimal(10,2)") == 1234
    assert map_key(decimal.Decimal("12.345"), "decimal(10,2)") == 1234  # floor
    assert map_key(decimal.Decimal("-12.345"), "decimal(10,2)") == -1235
    assert map_key(decimal.Decimal("123456789012345678901"), "decimal(21,0)") == 123456789012345678
    assert map_key("", "string") == INT64_MIN
    assert map_key("a", "string") == map_key("a\x00", "string")
    assert map_key(b"\xff" * 9, "binary") == INT64_MAX
    assert map_key(float("nan"), "double") == INT64_MAX
    assert map_key(-0.0, "double") == map_key(0.0, "double") == 0
    assert map_key(float("-inf"), "double") < map_key(-1e308, "double")
    assert map_key(float("nan"), "float") == 2**31 - 1
    assert map_key(0.1, "float") == map_key(_as_float32(0.1), "float")


def test_query_values_wider_than_the_column() -> None:
    # ints beyond the range clamp; floats and decimals floor
    assert map_key(2**70, "bigint") == INT64_MAX
    assert map_key(-(2**70), "int") == INT64_MIN
    assert map_key(2.5, "int") == 2
    assert map_key(-2.5, "int") == -3
    assert map_key(decimal.Decimal("7.9"), "bigint") == 7
    assert map_key(float("inf"), "bigint") == INT64_MAX
    assert map_key(10**40, "decimal(10,2)") == INT64_MAX
    assert map_key(decimal.Decimal("1E+100000"), "decimal(10,2)") == INT64_MAX
    assert map_key(decimal.Decimal("-1E-100000"), "decimal(10,2)") == -1
    assert map_key(dt.date(1970, 1, 2), "timestamp") == 86_400_000_000
    assert map_key(dt.datetime(1970, 1, 2, 23, 59), "date") == 1
    assert map_key(3, "double") == map_key(3.0, "double")
    assert map_key(decimal.Decimal("0.5"), "double") == map_key(0.5, "double")


@settings(max_examples=200, deadline=None)
@given(
    st.integers(-(10**12), 10**12)
    | st.floats(-1e12, 1e12)
    | st.decimals(-(10**12), 10**12, places=4),
    st.integers(-(10**12), 10**12)
    | st.floats(-1e12, 1e12)
    | st.decimals(-(10**12), 10**12, places=4),
)
def test_mixed_numeric_query_values_stay_monotone(a: Any, b: Any) -> None:
    if decimal.Decimal(a) > decimal.Decimal(b):
        a, b = b, a
    for key_type in ("bigint", "decimal(12,2)", "decimal(30,5)", "double", "float"):
        assert map_key(a, key_type) <= map_key(b, key_type)


def test_map_bound_exactness() -> None:
    assert map_bound(5, "bigint") == (5, True)
    assert map_bound(dt.date(2020, 1, 1), "date")[1] is True
    assert map_bound(dt.datetime(2020, 1, 1), "date")[1] is False
    assert map_bound(decimal.Decimal("1.25"), "decimal(10,2)") == (125, True)
    assert map_bound(decimal.Decimal("1.255"), "decimal(10,2)") == (125, False)
    assert map_bound("abc", "string")[1] is False
    assert map_bound(decimal.Decimal(5), "decimal(30,2)")[1] is False
    assert map_bound(0.1, "float")[1] is False
    assert map_bound(0.5, "float")[1] is True
    assert map_bound(0.1, "double")[1] is True
    assert map_bound(2**70, "bigint")[1] is False


@pytest.mark.parametrize(
    "key_type",
    [
        "array<int>",
        "map<string,int>",
        "struct<a:int>",
        "interval day",
        "void",
        "variant",
        "decimal(40,2)",
    ],
)
def test_unsupported_types_name_the_type(key_type: str) -> None:
    assert not supported(key_type)
    with pytest.raises(
        UnsupportedKeyTypeError, match=key_type.replace("(", r"\(").replace(")", r"\)")
    ):
        map_key(1, key_type)
    with pytest.raises(UnsupportedKeyTypeError):
        map_keys_arrow(pa.array([1]), key_type)


def test_type_aliases_and_injectivity() -> None:
    for alias in (
        "INT",
        "integer",
        "long",
        "short",
        "byte",
        "varchar(10)",
        "char(3)",
        "real",
        "decimal",
    ):
        assert supported(alias)
    assert parse_key_type("decimal").precision == 10
    assert parse_key_type(" Decimal( 12 , 3 ) ") == parse_key_type("decimal(12,3)")
    assert is_injective("bigint") and is_injective("decimal(18,2)") and is_injective("double")
    assert not is_injective("string") and not is_injective("decimal(19,2)")


def test_bad_values_raise() -> None:
    with pytest.raises(TypeError):
        map_key(None, "bigint")
    with pytest.raises(TypeError):
        map_key("x", "bigint")
    with pytest.raises(TypeError):
        map_key(5, "date")
    with pytest.raises(ValueError):
        map_key(float("nan"), "bigint")
    with pytest.raises(TypeError):
        map_keys_arrow(pa.array(["x"]), "bigint")


def test_float_specials_map_alike_on_every_path() -> None:
    """NaN, -0.0 and doubles beyond float range: the scalar, vector and bound paths agree.

    Builds map column values with :func:`map_keys_arrow`, lookups and the
    refresh overlay map query values with :func:`map_key`/:func:`map_bound`;
    a disagreement loses rows added by a refresh (issue 15, class 6).
    """
    import warnings

    for key_type, arrow_type in (("float", pa.float32()), ("double", pa.float64())):
        values = [math.nan, -0.0, 0.0, math.inf, -math.inf, 1.5]
        arrow = map_keys_arrow(pa.array(values, arrow_type), key_type).to_pylist()
        assert arrow == [map_key(v, key_type) for v in values]
        assert arrow[1] == arrow[2]  # -0.0 = 0.0
        assert arrow[0] > arrow[3]  # NaN above +inf
        assert map_key(-math.nan, key_type) == arrow[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        key, exact = map_bound(1e300, "float")
    assert key == map_key(math.inf, "float") and not exact
    assert map_bound(0.1, "float")[1] is False
    assert map_bound(0.5, "float") == (map_key(0.5, "float"), True)


@settings(max_examples=200, deadline=None)
@given(
    keys=st.lists(
        st.one_of(
            st.integers(-(2**63), 2**63 - 1),
            st.integers(-50, 50),
            st.sampled_from([-(2**63), 2**63 - 1, 0]),
        ),
        min_size=1,
        max_size=60,
    ),
    data=st.data(),
)
def test_sort_indices_orders_by_key_then_tie(keys: list[int], data: st.DataObject) -> None:
    """Packing (key, tie) into one integer sorts exactly as sorting the pairs, wide spans included."""
    import numpy as np
    from lakesieve.keys.key_order import KeyOrder

    ties = np.array(
        data.draw(st.lists(st.integers(0, 300), min_size=len(keys), max_size=len(keys))), np.int64
    )
    order = KeyOrder.of("bigint")
    idx = order.sort_indices(pa.array(keys, pa.int64()), ties)
    assert sorted(idx.tolist()) == list(range(len(keys)))
    got = [(keys[i], int(ties[i])) for i in idx]
    assert got == sorted(zip(keys, ties.tolist(), strict=True))
