"""The ``zonemap`` index type.

Registered through the ``lakesieve`` entry-point group
(``zonemap = "lakesieve.indexes.zonemap.plugin"``), exactly like a third-party index
type. Lookup and describe are answered by the loaded index object
(:class:`~lakesieve.sdk.IndexTypeBase`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lakesieve.indexes.zonemap.params import INDEX_TYPE, parse_zonemap_options
from lakesieve.sdk import IndexTypeBase, LoadedIndex, hookimpl
from lakesieve.sdk.keys import KeyOrder, renamed_rows

if TYPE_CHECKING:
    import pyarrow as pa
    from lakesieve.sdk import BuiltIndex, IndexType
    from pyspark.sql import DataFrame, SparkSession


class ZoneMapIndexType(IndexTypeBase):
    """The ``zonemap`` index type; see :class:`lakesieve.sdk.IndexType` for each method's contract."""

    name = INDEX_TYPE

    def validate(self, options: Mapping[str, str], key_type: str) -> dict[str, Any]:
        """Parse options into typed parameters with defaults; check the key type."""
        KeyOrder.of(key_type, INDEX_TYPE)
        return parse_zonemap_options(options)

    def build(
        self,
        spark: SparkSession,
        relation: DataFrame,
        key_type: str,
        params: dict[str, Any],
        locations: Sequence[str] | None = None,
        rows_hint: int | None = None,
    ) -> BuiltIndex:
        """Build the zone map with one Spark aggregate per location."""
        from lakesieve.indexes.zonemap.build import build_spark

        return build_spark(spark, relation, key_type, params or {})

    def load(self, built: BuiltIndex) -> LoadedIndex:
        """Decode the stored table into a :class:`~lakesieve.indexes.zonemap.lookup.ZoneMapIndex`."""
        from lakesieve.indexes.zonemap.lookup import load_index

        return load_index(built)

    def apply_delta(
        self, spark: SparkSession, index: Any, delta: DataFrame, params: dict[str, Any]
    ) -> BuiltIndex | None:
        """Fold ``(key, location, count)`` changes in; bounds widen, never shrink."""
        from lakesieve.indexes.zonemap.delta import apply_delta

        return apply_delta(spark, index, delta, params or {})

    def apply_delta_arrow(
        self, index: Any, delta: pa.Table, params: dict[str, Any]
    ) -> BuiltIndex | None:
        """Fold a delta on the driver; bounds widen, never shrink."""
        from lakesieve.indexes.zonemap.delta import apply_delta_arrow

        return apply_delta_arrow(index, delta, params or {})

    def rename_locations(self, index: Any, renames: Mapping[str, str]) -> Any | None:
        """Move entries to new names (rows keep their places; a fold sorts them again)."""
        moved = renamed_rows(index.locations, index.zones, renames)
        if moved is None:
            return None
        return dataclasses.replace(index, locations=moved[0], zones=moved[1])


@hookimpl
def lakesieve_index_types() -> list[IndexType]:
    """The index types this plugin provides."""
    return [ZoneMapIndexType()]
