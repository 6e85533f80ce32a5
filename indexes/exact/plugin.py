"""Hook implementations of the ``exact`` index type.

Registered through the ``lakesieve`` entry-point group
(``exact = "lakesieve.indexes.exact.plugin"``), exactly like a third-party
index type. Every hook answers only for ``index_type == "exact"`` and returns
``None`` otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakesieve.hookspecs import hookimpl
from lakesieve.indexes.exact.params import INDEX_TYPE, parse_exact_options
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
    """Check the key type and refuse every option (the exact index has none)."""
    if index_type != INDEX_TYPE:
        return None
    KeyOrder.of(key_type, INDEX_TYPE)
    return parse_exact_options(options)


@hookimpl
def lakesieve_index_build(
    index_type: str,
    spark: SparkSession,
    relation: DataFrame,
    key_type: str,
    params: dict[str, Any],
) -> BuiltIndex | None:
    """Build the index with Spark from ``(key, location)`` rows."""
    if index_type != INDEX_TYPE:
        return None
    from lakesieve.indexes.exact.build import build_spark

    return build_spark(spark, relation, key_type, params or {})


@hookimpl
def lakesieve_index_load(index_type: str, built: BuiltIndex) -> Any | None:
    """Decode stored files into an :class:`~lakesieve.indexes.exact.lookup.ExactIndex`."""
    if index_type != INDEX_TYPE:
        return None
    from lakesieve.indexes.exact.lookup import load_index

    return load_index(built)


@hookimpl
def lakesieve_index_lookup(index_type: str, index: Any, query: KeyQuery) -> LookupResult | None:
    """Answer a key query with exactly the matching locations."""
    if index_type != INDEX_TYPE:
        return None
    return index.lookup(query)  # type: ignore[no-any-return]


@hookimpl
def lakesieve_index_describe(index_type: str, index: Any) -> dict[str, Any] | None:
    """Size in bytes, distinct keys, entries, locations and parameters."""
    if index_type != INDEX_TYPE:
        return None
    return index.describe()  # type: ignore[no-any-return]


@hookimpl
def lakesieve_index_apply_delta(
    index_type: str, spark: SparkSession, index: Any, delta: DataFrame, params: dict[str, Any]
) -> BuiltIndex | None:
    """Fold ``(key, location, count)`` changes in; equal to a rebuild on the changed relation."""
    if index_type != INDEX_TYPE:
        return None
    from lakesieve.indexes.exact.delta import apply_delta

    return apply_delta(spark, index, delta, params or {})
