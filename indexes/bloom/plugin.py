"""The ``bloom`` index type.

Registered through the ``lakesieve`` entry-point group
(``bloom = "lakesieve.indexes.bloom.plugin"``), exactly like a third-party index
type. Lookup and describe are answered by the loaded index object
(:class:`~lakesieve.sdk.IndexTypeBase`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lakesieve.indexes.bloom.params import INDEX_TYPE, parse_bloom_options
from lakesieve.sdk import IndexTypeBase, LoadedIndex, hookimpl
from lakesieve.sdk.keys import KeyOrder, renamed_rows

if TYPE_CHECKING:
    import pyarrow as pa
    from lakesieve.sdk import BuiltIndex, IndexType
    from pyspark.sql import DataFrame, SparkSession


class BloomIndexType(IndexTypeBase):
    """The ``bloom`` index type; see :class:`lakesieve.sdk.IndexType` for each method's contract."""

    name = INDEX_TYPE

    def validate(self, options: Mapping[str, str], key_type: str) -> dict[str, Any]:
        """Parse ``fpp`` and ``expected_keys`` with defaults; check the key type."""
        KeyOrder.of(key_type, INDEX_TYPE)
        return parse_bloom_options(options)

    def build(
        self,
        spark: SparkSession,
        relation: DataFrame,
        key_type: str,
        params: dict[str, Any],
        locations: Sequence[str] | None = None,
        rows_hint: int | None = None,
    ) -> BuiltIndex:
        """Build one Bloom filter per location with Spark."""
        from lakesieve.indexes.bloom.build import build_spark

        return build_spark(spark, relation, key_type, params or {}, locations, rows_hint)

    def load(self, built: BuiltIndex) -> LoadedIndex:
        """Decode the stored table into a :class:`~lakesieve.indexes.bloom.lookup.BloomIndex`."""
        from lakesieve.indexes.bloom.lookup import load_index

        return load_index(built)

    def apply_delta(
        self, spark: SparkSession, index: Any, delta: DataFrame, params: dict[str, Any]
    ) -> BuiltIndex | None:
        """Or the bits of added keys in; removed keys keep their bits (a superset)."""
        from lakesieve.indexes.bloom.delta import apply_delta

        return apply_delta(spark, index, delta, params or {})

    def apply_delta_arrow(
        self, index: Any, delta: pa.Table, params: dict[str, Any]
    ) -> BuiltIndex | None:
        """Fold a summed delta on the driver; filters gain the added keys' bits."""
        from lakesieve.indexes.bloom.delta import apply_delta_arrow

        return apply_delta_arrow(index, delta, params or {})

    def rename_locations(self, index: Any, renames: Mapping[str, str]) -> Any | None:
        """Move entries to new names (rows keep their places; a fold sorts them again)."""
        moved = renamed_rows(index.locations, index.filters, renames)
        if moved is None:
            return None
        return dataclasses.replace(index, locations=moved[0], filters=moved[1])

    def inexact_locations(self, index: Any) -> list[str]:
        """Locations whose filter a delta changed since it was built."""
        from lakesieve.indexes.bloom.delta import inexact_locations

        return inexact_locations(index)

    def without_locations(self, index: Any, locations: Sequence[str]) -> Any:
        """The index without those locations' filters (compaction builds them again)."""
        from lakesieve.indexes.bloom.delta import without_locations

        return without_locations(index, locations)


@hookimpl
def lakesieve_index_types() -> list[IndexType]:
    """The index types this plugin provides."""
    return [BloomIndexType()]
