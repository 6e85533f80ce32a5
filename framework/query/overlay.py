"""Answering key queries from the delta states stacked on an index's base.

An index refreshed incrementally is a base state (built or compacted by its
index type) plus a chain of delta states, each the net ``(key, location,
count)`` changes of some commits. Until the chain is compacted, lookups ask
the base and add every location whose summed count over the chain is
positive for a matching key:

* truth at the chain's instant = base truth + summed delta, per (key, location);
* a pair still present has a base count above zero (so the base, a superset
  of its own truth, answers it) or a positive summed delta (so the overlay
  does): no false negatives;
* negative sums are ignored: a location emptied by deletes stays in the base
  answer until compaction folds the delta in (more locations, never fewer).

Keys are compared by Spark SQL's rules. Keys of every type that
:mod:`lakesieve.keys.mapping` maps injectively (integers, booleans, dates,
timestamps, decimals up to 18 digits, float and double) are compared as the
integers that mapping gives, the one mapping every index type's build uses:
NaN equals NaN and sorts above +inf, ``-0.0`` equals ``0.0``, and a query
value that is not a value of the column (a double between two floats) is
widened to its neighbours. Arrow's own comparisons would say ``NaN > 5`` is
false and could hash ``-0.0`` apart from ``0.0``, losing rows a refresh
added. Strings, binaries and wider decimals are compared with Arrow compute
in the column's Arrow type (bytewise, as Spark orders them). Any value the
overlay cannot compare makes it answer "every location" — a slower, still
exact read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.expressions import spark_type_of
from lakesieve.keys.key_arrays import map_keys_arrow
from lakesieve.keys.mapping import is_injective, map_bound, map_key, supported
from lakesieve.model import KeyQuery

#: Columns of a stored delta.
DELTA_COLUMNS = ("key", "location", "count")

#: Name of the file a delta state stores.
DELTA_FILE = "delta"


def net_delta(deltas: Sequence[pa.Table]) -> pa.Table:
    """Sum several deltas per (key, location) and drop the pairs that cancel out."""
    tables = [t.select(list(DELTA_COLUMNS)) for t in deltas if t.num_rows]
    if not tables:
        if deltas:
            return deltas[0].select(list(DELTA_COLUMNS)).slice(0, 0)
        return pa.table(
            {
                "key": pa.array([], pa.int64()),
                "location": pa.array([], pa.string()),
                "count": pa.array([], pa.int64()),
            }
        )
    joined = pa.concat_tables(tables, promote_options="default")
    summed = joined.group_by(["key", "location"], use_threads=False).aggregate([("count", "sum")])
    summed = summed.rename_columns(["key", "location", "count"]).select(list(DELTA_COLUMNS))
    return summed.filter(pc.not_equal(summed["count"], 0))


@dataclass
class DeltaOverlay:
    """The positive (key, location) pairs of a delta chain, for lookups.

    Attributes:
        positive: rows ``(key, location)`` whose summed count is above zero.
        rows: rows of the summed delta (positive and negative), for describe.
    """

    positive: pa.Table
    rows: int

    @classmethod
    def from_deltas(cls, deltas: Sequence[pa.Table]) -> DeltaOverlay:
        """Sum the chain's deltas into an overlay."""
        net = net_delta(deltas)
        positive = net.filter(pc.greater(net["count"], 0)).select(["key", "location"])
        return cls(positive, net.num_rows)

    def locations(self, query: KeyQuery) -> frozenset[str] | None:
        """Locations with a positive summed count for a key matching ``query``; ``None`` = all."""
        if self.positive.num_rows == 0:
            return frozenset()
        keys = self.positive["key"]
        try:
            mask = _matches(keys, query)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return None
        if mask is None:
            return None
        chosen = self.positive["location"].filter(mask)
        return frozenset(str(v) for v in pc.unique(chosen).to_pylist())


def _scalar(value: Any, type_: pa.DataType) -> pa.Scalar:
    if pa.types.is_timestamp(type_) and getattr(value, "tzinfo", None) is None and type_.tz:
        import datetime as dt

        value = value.replace(tzinfo=dt.UTC)
    return pa.scalar(value, type=type_)


def _mapped_key_type(type_: pa.DataType) -> str | None:
    """The Spark key type whose integer mapping compares ``type_``'s values exactly, if any."""
    key_type = spark_type_of(type_)
    return key_type if supported(key_type) and is_injective(key_type) else None


def _mapped_matches(keys: pa.ChunkedArray, query: KeyQuery, key_type: str) -> Any:
    """``query`` over the keys' integer mapping (the one the index builds use)."""
    mapped = map_keys_arrow(keys, key_type)
    if query.kind == "points":
        values = [map_key(v, key_type) for v in query.values if v is not None]
        if not values:
            return pa.array([False] * len(keys))
        return pc.fill_null(pc.is_in(mapped, value_set=pa.array(values, pa.int64())), False)
    mask: Any = pc.is_valid(mapped)
    if query.low is not None:
        low, exact = map_bound(query.low, key_type)
        cmp = pc.greater if exact and not query.low_inclusive else pc.greater_equal
        mask = pc.and_kleene(mask, cmp(mapped, pa.scalar(low, pa.int64())))
    if query.high is not None:
        high, exact = map_bound(query.high, key_type)
        cmp = pc.less if exact and not query.high_inclusive else pc.less_equal
        mask = pc.and_kleene(mask, cmp(mapped, pa.scalar(high, pa.int64())))
    return pc.fill_null(mask, False)


def _matches(keys: pa.ChunkedArray, query: KeyQuery) -> Any:
    if query.kind == "is_null":
        return pc.is_null(keys)
    key_type = _mapped_key_type(keys.type)
    if key_type is not None and query.kind in ("points", "range"):
        return _mapped_matches(keys, query, key_type)
    if query.kind == "points":
        values = [v for v in query.values if v is not None]
        if not values:
            return pa.array([False] * len(keys))
        value_set = pa.array([_scalar(v, keys.type).as_py() for v in values], type=keys.type)
        return pc.fill_null(pc.is_in(keys, value_set=value_set), False)
    if query.kind == "range":
        mask: Any = pc.is_valid(keys)
        if query.low is not None:
            low = _scalar(query.low, keys.type)
            cmp = pc.greater_equal if query.low_inclusive else pc.greater
            mask = pc.and_kleene(mask, cmp(keys, low))
        if query.high is not None:
            high = _scalar(query.high, keys.type)
            cmp = pc.less_equal if query.high_inclusive else pc.less
            mask = pc.and_kleene(mask, cmp(keys, high))
        return pc.fill_null(mask, False)
    return None
