"""Hook implementations of the ``bloom`` index type.

Registered through the ``lakesieve`` entry-point group
(``bloom = "lakesieve.indexes.bloom.plugin"``), exactly like a third-party
index type. Every hook answers only for ``index_type == "bloom"`` and
returns ``None`` otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakesieve.hookspecs import hookimpl
from lakesieve.indexes.bloom.params import INDEX_TYPE, parse_bloom_options
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
    """Parse ``fpp`` and ``expected_keys`` with defaults; check the key type."""
    if index_type != INDEX_TYPE:
        return None
    KeyOrder.of(key_type, INDEX_TYPE)
    return parse_bloom_options(options)


@hookimpl
def lakesieve_index_build(
    index_type: str,
    spark: SparkSession,
    relation: DataFrame,
    key_type: str,
    params: dict[str, Any],
) -> BuiltIndex | None:
    """Build one Bloom filter per location with Spark."""
    if index_type != INDEX_TYPE:
        return None
    from lakesieve.indexes.bloom.build import build_spark

    return build_spark(spark, relation, key_type, params or {})


@hookimpl
def lakesieve_index_load(index_type: str, built: BuiltIndex) -> Any | None:
    """Decode the stored table into a :class:`~lakesieve.indexes.bloom.lookup.BloomIndex`."""
    if index_type != INDEX_TYPE:
        return None
    from lakesieve.indexes.bloom.lookup import load_index

    return load_index(built)


@hookimpl
def lakesieve_index_lookup(index_type: str, index: Any, query: KeyQuery) -> LookupResult | None:
    """Answer ``=``, IN and IS NULL; ranges get ``LookupResult.all()``."""
    if index_type != INDEX_TYPE:
        return None
    return index.lookup(query)  # type: ignore[no-any-return]


@hookimpl
def lakesieve_index_describe(index_type: str, index: Any) -> dict[str, Any] | None:
    """Size in bytes, filter bits, keys, estimated false-positive rate and parameters."""
    if index_type != INDEX_TYPE:
        return None
    return index.describe()  # type: ignore[no-any-return]


@hookimpl
def lakesieve_index_apply_delta(
    index_type: str, spark: SparkSession, index: Any, delta: DataFrame, params: dict[str, Any]
) -> BuiltIndex | None:
    """Or the bits of added keys in; removed keys keep their bits (a superset)."""
    if index_type != INDEX_TYPE:
        return None
    from lakesieve.indexes.bloom.delta import apply_delta

    return apply_delta(spark, index, delta, params or {})
