"""The ``sieve`` index type.

Registered through the ``lakesieve`` entry-point group
(``sieve = "lakesieve.indexes.sieve.plugin"``), exactly like a third-party index
type. Lookup and describe are answered by the loaded index object
(:class:`~lakesieve.sdk.IndexTypeBase`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from lakesieve.indexes.sieve.params import INDEX_TYPE, parse_options
from lakesieve.sdk import IndexTypeBase, LoadedIndex, hookimpl
from lakesieve.sdk.keys import parse_key_type, renamed_locations

if TYPE_CHECKING:
    import pyarrow as pa
    from lakesieve.sdk import BuiltIndex, IndexType
    from pyspark.sql import DataFrame, SparkSession


class SieveIndexType(IndexTypeBase):
    """The ``sieve`` index type; see :class:`lakesieve.sdk.IndexType` for each method's contract."""

    name = INDEX_TYPE
    input_passes = 2  # repartitionByRange samples the rows, then shuffles them

    def validate(self, options: Mapping[str, str], key_type: str) -> dict[str, Any]:
        """Parse options into typed parameters with defaults; check the key type."""
        parse_key_type(key_type)
        return parse_options(options or {})

    def build(
        self,
        spark: SparkSession,
        relation: DataFrame,
        key_type: str,
        params: dict[str, Any],
        locations: Sequence[str] | None = None,
        rows_hint: int | None = None,
    ) -> BuiltIndex:
        """Build the index with Spark from ``(key, location)`` rows (one pass when the hints are given)."""
        from lakesieve.indexes.sieve.build import build_spark

        return build_spark(spark, relation, key_type, params or {}, locations, rows_hint)

    def load(self, built: BuiltIndex) -> LoadedIndex:
        """Decode stored files into a :class:`~lakesieve.indexes.sieve.lookup.SieveIndex`."""
        from lakesieve.indexes.sieve.loading import load_index

        return load_index(built)

    def apply_delta(
        self, spark: SparkSession, index: Any, delta: DataFrame, params: dict[str, Any]
    ) -> BuiltIndex | None:
        """Fold ``(key, location, count)`` changes into the blocks (see ``delta.py``)."""
        from lakesieve.indexes.sieve.delta import apply_delta

        return apply_delta(spark, index, delta, params or {})

    def apply_delta_arrow(
        self, index: Any, delta: pa.Table, params: dict[str, Any]
    ) -> BuiltIndex | None:
        """Fold a summed delta on the driver (:func:`~lakesieve.indexes.sieve.delta.apply_delta_local`)."""
        import numpy as np
        import pyarrow as pa
        from lakesieve.indexes.sieve.delta import apply_delta_local

        return apply_delta_local(
            index,
            delta.column("key"),
            delta.column("location").combine_chunks().cast(pa.string()),
            np.asarray(delta.column("count").combine_chunks().cast(pa.int64()), dtype=np.int64),
            params or {},
        )

    def rename_locations(self, index: Any, renames: Mapping[str, str]) -> Any | None:
        """Move entries to new names: a location's id keeps its place, only its name changes."""
        names = renamed_locations(index.locations.tolist(), renames)
        if names is None:
            return None
        return dataclasses.replace(index, locations=np.array(names, dtype=object))


@hookimpl
def lakesieve_index_types() -> list[IndexType]:
    """The index types this plugin provides."""
    return [SieveIndexType()]
