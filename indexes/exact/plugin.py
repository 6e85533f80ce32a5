"""The ``exact`` index type.

Registered through the ``lakesieve`` entry-point group
(``exact = "lakesieve.indexes.exact.plugin"``), exactly like a third-party index
type. Lookup and describe are answered by the loaded index object
(:class:`~lakesieve.sdk.IndexTypeBase`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lakesieve.indexes.exact.params import INDEX_TYPE, parse_exact_options
from lakesieve.sdk import IndexTypeBase, LoadedIndex, hookimpl
from lakesieve.sdk.keys import KeyOrder

if TYPE_CHECKING:
    import pyarrow as pa
    from lakesieve.sdk import BuiltIndex, IndexType
    from pyspark.sql import DataFrame, SparkSession


class ExactIndexType(IndexTypeBase):
    """The ``exact`` index type; see :class:`lakesieve.sdk.IndexType` for each method's contract."""

    name = INDEX_TYPE

    def validate(self, options: Mapping[str, str], key_type: str) -> dict[str, Any]:
        """Check the key type and refuse every option (the exact index has none)."""
        KeyOrder.of(key_type, INDEX_TYPE)
        return parse_exact_options(options)

    def build(
        self,
        spark: SparkSession,
        relation: DataFrame,
        key_type: str,
        params: dict[str, Any],
        locations: Sequence[str] | None = None,
        rows_hint: int | None = None,
    ) -> BuiltIndex:
        """Build the index with Spark from ``(key, location)`` rows."""
        from lakesieve.indexes.exact.build import build_spark

        return build_spark(
            spark, relation, key_type, params or {}, rows_hint=rows_hint, locations=locations
        )

    def load(self, built: BuiltIndex) -> LoadedIndex:
        """Decode stored files into an :class:`~lakesieve.indexes.exact.partitioned.PartitionedExactIndex`."""
        from lakesieve.indexes.exact.loading import load_index

        return load_index(built)

    def apply_delta(
        self, spark: SparkSession, index: Any, delta: DataFrame, params: dict[str, Any]
    ) -> BuiltIndex | None:
        """Fold ``(key, location, count)`` changes in; equal to a rebuild on the changed relation."""
        from lakesieve.indexes.exact.delta import apply_delta

        return apply_delta(spark, index, delta, params or {})

    def apply_delta_arrow(
        self, index: Any, delta: pa.Table, params: dict[str, Any]
    ) -> BuiltIndex | None:
        """Fold a summed delta on the driver; ``None`` for ORC partitions or past the driver's pair limit."""
        from lakesieve.indexes.exact.delta import apply_delta_arrow

        return apply_delta_arrow(index, delta, params or {})


@hookimpl
def lakesieve_index_types() -> list[IndexType]:
    """The index types this plugin provides."""
    return [ExactIndexType()]
