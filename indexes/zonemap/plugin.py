"""Hook implementations of the ``zonemap`` index type.

Registered through the ``lakesieve`` entry-point group
(``zonemap = "lakesieve.indexes.zonemap.plugin"``), exactly like a
third-party index type. Every hook answers only for
``index_type == "zonemap"`` and returns ``None`` otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakesieve.hookspecs import hookimpl
from lakesieve.indexes.zonemap.params import INDEX_TYPE, parse_zonemap_options
from lakesieve.key_order import KeyOrder

if TYPE_CHECKING:
    from lakesieve.model import BuiltIndex, KeyQuery, LookupResult
    from pyspark.sql import DataFrame, SparkSession


@hookimpl
def lakesieve_index_types() -> list[str]:
    """The index types this plugin provides."""
    return [INDEX_TYPE]


@hookimpl
def lakesieve_index_validate(
    index_type: str, options: dict[str, str], key_type: str
) -> dict[str, Any] | None:
    """Parse options into typed parameters with defaults; check the key type."""
    if index_type != INDEX_TYPE:
        return None
    KeyOrder.of(key_type, INDEX_TYPE)
    return parse_zonemap_options(options)


@hookimpl
def lakesieve_index_build(
    index_type: str,
    spark: SparkSession,
    relation: DataFrame,
    key_type: str,
    params: dict[str, Any],
) -> BuiltIndex | None:
    """Build the zone map with one Spark aggregate per location."""
    if index_type != INDEX_TYPE:
        return None
    from lakesieve.indexes.zonemap.build import build_spark

    return build_spark(spark, relation, key_type, params or {})


@hookimpl
def lakesieve_index_load(index_type: str, built: BuiltIndex) -> Any | None:
    """Decode the stored table into a :class:`~lakesieve.indexes.zonemap.lookup.ZoneMapIndex`."""
    if index_type != INDEX_TYPE:
        return None
    from lakesieve.indexes.zonemap.lookup import load_index

    return load_index(built)


@hookimpl
def lakesieve_index_lookup(index_type: str, index: Any, query: KeyQuery) -> LookupResult | None:
    """Answer a key query with a superset of the matching locations."""
    if index_type != INDEX_TYPE:
        return None
    return index.lookup(query)  # type: ignore[no-any-return]


@hookimpl
def lakesieve_index_describe(index_type: str, index: Any) -> dict[str, Any] | None:
    """Size in bytes, location counts, source of the bounds and parameters."""
    if index_type != INDEX_TYPE:
        return None
    return index.describe()  # type: ignore[no-any-return]


@hookimpl
def lakesieve_index_apply_delta(
    index_type: str, spark: SparkSession, index: Any, delta: DataFrame, params: dict[str, Any]
) -> BuiltIndex | None:
    """Fold ``(key, location, count)`` changes in; bounds widen, never shrink."""
    if index_type != INDEX_TYPE:
        return None
    from lakesieve.indexes.zonemap.delta import apply_delta

    return apply_delta(spark, index, delta, params or {})
