"""Hook implementations of the ``sieve`` index type.

Registered through the ``lakesieve`` entry-point group
(``sieve = "lakesieve.indexes.sieve.plugin"``), exactly like a third-party
index type. Every hook answers only for ``index_type == "sieve"`` and returns
``None`` otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakesieve.hookspecs import hookimpl
from lakesieve.indexes.sieve.params import INDEX_TYPE, parse_options
from lakesieve.keys import parse_key_type

if TYPE_CHECKING:
    from collections.abc import Sequence

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
    parse_key_type(key_type)
    return parse_options(options or {})


@hookimpl
def lakesieve_index_build(
    index_type: str,
    spark: SparkSession,
    relation: DataFrame,
    key_type: str,
    params: dict[str, Any],
    locations: Sequence[str] | None,
    rows_hint: int | None,
) -> BuiltIndex | None:
    """Build the index with Spark from ``(key, location)`` rows (one pass when the hints are given)."""
    if index_type != INDEX_TYPE:
        return None
    from lakesieve.indexes.sieve.build import build_spark

    return build_spark(spark, relation, key_type, params or {}, locations, rows_hint)


@hookimpl
def lakesieve_index_load(index_type: str, built: BuiltIndex) -> Any | None:
    """Decode stored files into a :class:`~lakesieve.indexes.sieve.lookup.SieveIndex`."""
    if index_type != INDEX_TYPE:
        return None
    from lakesieve.indexes.sieve.lookup import load_index

    return load_index(built)


@hookimpl
def lakesieve_index_lookup(index_type: str, index: Any, query: KeyQuery) -> LookupResult | None:
    """Answer a key query with a superset of the matching locations."""
    if index_type != INDEX_TYPE:
        return None
    return index.lookup(query)


@hookimpl
def lakesieve_index_describe(index_type: str, index: Any) -> dict[str, Any] | None:
    """Size in bytes, segment/block/entry/location counts and parameters."""
    if index_type != INDEX_TYPE:
        return None
    return index.describe()  # type: ignore[no-any-return]


@hookimpl
def lakesieve_index_apply_delta(
    index_type: str, spark: SparkSession, index: Any, delta: DataFrame, params: dict[str, Any]
) -> BuiltIndex | None:
    """Fold ``(key, location, count)`` changes into the blocks (see ``delta.py``)."""
    if index_type != INDEX_TYPE:
        return None
    from lakesieve.indexes.sieve.delta import apply_delta

    return apply_delta(spark, index, delta, params or {})
