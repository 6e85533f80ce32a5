"""``valueset``: each location's distinct values, kept while there are few of them.

After ClickHouse's ``set(N)`` skipping index. For a low-cardinality column
(a status, a country, a product line) min/max statistics rarely prune — a
file holding ``'AR'`` and ``'ZW'`` "may hold" every country — but the set of
values in one file is short. This index keeps, per location, the distinct
values of the column when there are at most ``max_values`` of them, and
marks the location ``many`` otherwise (it is then always read), plus whether
the location holds a NULL.

Values are stored as the framework's order-preserving 64-bit keys
(:func:`lakesieve.sdk.map_key`), which already follow Spark SQL's rules (NaN equals
NaN and sorts above +inf, -0.0 equals 0.0). The mapping may send several
values to one key (strings sharing their first 8 bytes): that only adds
locations to an answer, never removes one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from lakesieve.sdk import (
    INT64_MAX,
    INT64_MIN,
    BuiltIndex,
    KeyQuery,
    LookupResult,
    OptionSpec,
    UnsupportedKeyTypeError,
    hookimpl,
    key_type_supported,
    map_bound,
    map_key,
    map_keys_arrow,
    parse_options,
    stored_size,
)

NAME = "valueset"
OPTIONS = {
    "max_values": OptionSpec(
        "integer", 64, "most distinct values kept per location", low=1, high=100_000
    )
}
#: One row per location that holds rows: its values (None when it has too many) and a NULL flag.
SCHEMA = pa.schema(
    [("location", pa.string()), ("keys", pa.list_(pa.int64())), ("has_null", pa.bool_())]
)


class ValueSet:
    """A loaded index: location -> sorted keys (``None``: too many to keep), and NULL holders."""

    def __init__(self, built: BuiltIndex) -> None:
        table = built.files["sets"]
        if table.schema != SCHEMA:
            raise ValueError(f"valueset index has schema {table.schema}, expected {SCHEMA}")
        self.key_type = str(built.meta["key_type"])
        self.built = built
        self.keys: dict[str, np.ndarray | None] = {}
        self.nulls: set[str] = set()
        rows = zip(*(table.column(n).to_pylist() for n in SCHEMA.names), strict=True)
        for location, values, has_null in rows:
            self.keys[location] = None if values is None else np.sort(np.array(values, np.int64))
            if has_null:
                self.nulls.add(location)

    def matching(self, hit: Any) -> LookupResult:
        """The locations whose keys ``hit`` accepts, and every location with too many values."""
        return LookupResult(
            frozenset(loc for loc, ks in self.keys.items() if ks is None or (len(ks) and hit(ks)))
        )


class ValueSetIndex:
    """The ``valueset`` index type (see the module docstring)."""

    name = NAME

    def validate(self, options: Mapping[str, str], key_type: str) -> dict[str, Any]:
        """Check ``max_values`` and that the column's type has a key mapping."""
        if not key_type_supported(key_type):
            raise UnsupportedKeyTypeError(f"index type {NAME!r} does not support {key_type}")
        return parse_options(NAME, OPTIONS, options)

    def build(
        self,
        spark: Any,
        relation: Any,
        key_type: str,
        params: dict[str, Any],
        locations: Sequence[str] | None = None,
        rows_hint: int | None = None,
    ) -> BuiltIndex:
        """One Spark aggregate per location; at most ``max_values`` values each reach the driver."""
        from pyspark.sql import functions as F

        cap = int(params["max_values"])
        per_location = (
            relation.groupBy("location")
            .agg(
                F.count_distinct("key").alias("n"),
                F.slice(F.array_sort(F.collect_set("key")), 1, cap).alias("values"),
                F.max(F.col("key").isNull()).alias("has_null"),
            )
            .toArrow()
        )
        mapped = [
            map_keys_arrow(values.values, key_type).to_pylist() if n <= cap else None
            for n, values in zip(
                per_location.column("n").to_pylist(), per_location.column("values"), strict=True
            )
        ]
        table = pa.table(
            [
                per_location.column("location").cast(pa.string()),
                pa.array(mapped, pa.list_(pa.int64())),
                per_location.column("has_null").cast(pa.bool_()),
            ],
            schema=SCHEMA,
        )
        return BuiltIndex({"sets": table}, {"key_type": key_type, "max_values": cap})

    def load(self, built: BuiltIndex) -> ValueSet:
        """Decode the stored table (raises on anything malformed)."""
        return ValueSet(built)

    def lookup(self, index: ValueSet, query: KeyQuery) -> LookupResult:
        """Locations holding a matching value, every location with too many values to keep."""
        if query.kind == "is_null":
            return LookupResult(frozenset(index.nulls))
        if query.kind == "points":
            wanted = np.array([map_key(v, index.key_type) for v in query.values], np.int64)
            return index.matching(lambda ks: bool(np.isin(ks, wanted).any()))
        low, high = INT64_MIN, INT64_MAX
        if query.low is not None:
            low, exact = map_bound(query.low, index.key_type)
            low += int(exact and not query.low_inclusive)
        if query.high is not None:
            high, exact = map_bound(query.high, index.key_type)
            high -= int(exact and not query.high_inclusive)
        return index.matching(lambda ks: bool(((ks >= low) & (ks <= high)).any()))

    def describe(self, index: ValueSet) -> dict[str, Any]:
        """Size as stored, entries, and how many locations keep their values."""
        kept = [ks for ks in index.keys.values() if ks is not None]
        return {
            "index_type": NAME,
            "key_type": index.key_type,
            "size_bytes": stored_size(index.built.files),
            "entries": sum(len(ks) for ks in kept),
            "locations": len(index.keys),
            "locations_with_values": len(kept),
            "params": {"max_values": index.built.meta["max_values"]},
        }

    def apply_delta(
        self, spark: Any, index: ValueSet, delta: Any, params: dict[str, Any]
    ) -> BuiltIndex:
        """Add the values rows were added with; removals are ignored (the sets stay supersets)."""
        added = self.build(spark, delta.where("count > 0"), index.key_type, params)
        sets = dict(index.keys)
        nulls = set(index.nulls)
        cap = int(params["max_values"])
        for loc, ks, has_null in zip(
            *(added.files["sets"].column(n).to_pylist() for n in SCHEMA.names), strict=True
        ):
            old = sets.get(loc, np.array([], np.int64))
            merged = None if ks is None or old is None else np.union1d(old, np.array(ks, np.int64))
            sets[loc] = merged if merged is not None and len(merged) <= cap else None
            if has_null:
                nulls.add(loc)
        table = pa.table(
            [
                pa.array(list(sets), pa.string()),
                pa.array(
                    [None if ks is None else ks.tolist() for ks in sets.values()], SCHEMA[1].type
                ),
                pa.array([loc in nulls for loc in sets], pa.bool_()),
            ],
            schema=SCHEMA,
        )
        return BuiltIndex({"sets": table}, {"key_type": index.key_type, "max_values": cap})

    def compact(self, spark: Any, index: ValueSet, params: dict[str, Any]) -> None:
        """Nothing to compact: :meth:`apply_delta` already returns a full state."""
        return None


@hookimpl
def lakesieve_index_types() -> list[ValueSetIndex]:
    """The index types this plugin provides."""
    return [ValueSetIndex()]
