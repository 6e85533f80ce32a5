"""Folding one commit's changes into a Bloom index.

Spark hashes the delta's keys and builds, per location it touches, the bits
of the keys added there — with the shape of the location's existing filter,
so the driver can or them into it. Counts (rows, rows with a null key) are
summed exactly.

A Bloom filter cannot forget a key: removing it would need the location's
remaining keys, which the delta does not carry. So removed keys keep their
bits (the filter still answers for them: a superset, never a miss) until the
index is rebuilt. What the counts do tell exactly is kept exact: a location
whose rows reach zero is dropped, and one left with only null keys loses its
filter. A filter that receives many more keys than it was sized for answers
with more false positives; ``describe`` reports the estimate
(``estimated_fpp``). Such filters are marked (``as_built`` false): compaction
reads their locations' rows again and hands them back as new locations of
the index without them (:func:`without_locations`), whose filters are then
sized and set exactly as a build sets them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.indexes.bloom.build import filter_rows_local, filters_spark
from lakesieve.indexes.bloom.lookup import BloomIndex, load_index
from lakesieve.indexes.bloom.params import parse_bloom_options
from lakesieve.indexes.bloom.storage import to_built
from lakesieve.sdk import BuiltIndex

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def apply_delta(
    spark: SparkSession, index: BloomIndex, delta: DataFrame, params: Mapping[str, Any]
) -> BuiltIndex:
    """The index after applying ``delta`` (a superset of a rebuild's answers).

    Args:
        spark: the session (unused: the delta carries it).
        index: the loaded index.
        delta: rows ``(key, location, count)``; ``count > 0`` rows added at the
            location, ``< 0`` rows removed.
        params: build parameters (the index's own when empty).
    """
    from pyspark.sql import functions as F

    full = parse_bloom_options(params or index.params)
    shapes = filter_shapes(index)
    counted = delta.select(
        F.col("key"),
        F.col("location").cast("string").alias("location"),
        F.col("count").cast("bigint").alias("cnt"),
    )
    return merge_changes(index, filters_spark(counted, index.key_type, full, shapes), full)


def apply_delta_arrow(index: BloomIndex, delta: pa.Table, params: Mapping[str, Any]) -> BuiltIndex:
    """:func:`apply_delta` computed in-process, for a summed delta already on the driver.

    Args:
        index: the loaded index.
        delta: ``key``, ``location``, ``count`` rows, one per ``(key, location)``
            by Spark's equality (the refresh sums them so).
        params: build parameters (the index's own when empty).
    """
    full = parse_bloom_options(params or index.params)
    locations = delta.column("location").combine_chunks().cast(pa.string())
    if locations.null_count:
        raise ValueError("the delta has rows with a null location")
    rows = filter_rows_local(
        delta.column("key").combine_chunks(),
        locations.to_pylist(),
        np.asarray(delta.column("count").combine_chunks().cast(pa.int64()), dtype=np.int64),
        index.key_type,
        full,
        filter_shapes(index),
    )
    return merge_changes(index, rows, full)


def filter_shapes(index: BloomIndex) -> dict[str, tuple[int, int]]:
    """``location -> (bits, probes)`` of the index's non-empty filters."""
    return {
        name: (int(index.num_bits[i]), int(index.num_hashes[i]))
        for i, name in enumerate(index.locations.tolist())
        if index.num_bits[i] > 0
    }


def merge_changes(index: BloomIndex, changes: pa.Table, params: Mapping[str, Any]) -> BuiltIndex:
    """The index with per-location filter rows of a delta or-ed in (the driver half).

    Args:
        index: the loaded index.
        changes: rows of :data:`~lakesieve.indexes.bloom.storage.FILTER_ROW_DDL`
            for the changed locations, built with :func:`filter_shapes` of
            ``index`` so existing filters keep their shape.
        params: the full build parameters.
    """
    full = parse_bloom_options(params)
    names = index.locations.tolist()
    at = {name: i for i, name in enumerate(names)}

    num_bits = index.num_bits.copy()
    num_hashes = index.num_hashes.astype(np.int32).copy()
    keys, rows, nulls = index.keys.copy(), index.rows.copy(), index.null_count.copy()
    as_built = index.as_built.astype(bool).copy()
    bits = [index.filter_bytes(i) for i in range(len(names))]
    new_bits = pc.cast(changes.column("bits"), pa.large_binary()).to_pylist()
    for j, name in enumerate(changes.column("location").to_pylist()):
        d_bits, d_probes = (
            int(changes["num_bits"][j].as_py()),
            int(changes["num_hashes"][j].as_py()),
        )
        d_keys, d_rows = int(changes["keys"][j].as_py()), int(changes["rows"][j].as_py())
        d_nulls = int(changes["null_count"][j].as_py())
        added = new_bits[j] or b""
        i = at.get(name)
        if i is None:
            at[name] = i = len(names)
            names.append(name)
            num_bits = np.append(num_bits, d_bits)
            num_hashes = np.append(num_hashes, np.int32(d_probes))
            keys, rows, nulls = (
                np.append(keys, d_keys),
                np.append(rows, d_rows),
                np.append(nulls, d_nulls),
            )
            # a location new to the index comes whole in the delta: its filter is
            # sized for and holds exactly its keys, as a build makes it
            as_built = np.append(as_built, True)
            bits.append(added)
            continue
        as_built[i] = False
        rows[i] += d_rows
        nulls[i] += d_nulls
        keys[i] += d_keys
        if num_bits[i] == 0:
            num_bits[i], num_hashes[i], bits[i] = d_bits, d_probes, added
        elif d_bits:
            if (d_bits, d_probes) != (num_bits[i], num_hashes[i]):
                raise ValueError(f"delta filter of location {name!r} has another shape")
            merged = np.frombuffer(bits[i], np.uint8) | np.frombuffer(added, np.uint8)
            bits[i] = merged.tobytes()
    nulls = np.clip(nulls, 0, np.maximum(rows, 0))
    only_nulls = rows <= nulls
    for gone in np.flatnonzero(only_nulls).tolist():
        num_bits[gone], num_hashes[gone], keys[gone], bits[gone] = 0, 0, 0, b""
        as_built[gone] = False
    keep = rows > 0
    return to_built(
        index.key_type,
        full,
        [n for n, k in zip(names, keep, strict=True) if k],
        num_bits[keep],
        num_hashes[keep],
        keys[keep],
        rows[keep],
        nulls[keep],
        [b for b, k in zip(bits, keep, strict=True) if k],
        as_built[keep],
    )


def inexact_locations(index: BloomIndex) -> list[str]:
    """Locations whose filter a delta changed since it was built (``as_built`` false)."""
    return sorted(index.locations[~index.as_built].tolist())


def without_locations(index: BloomIndex, locations: Sequence[str]) -> BloomIndex:
    """``index`` with no filter for ``locations`` (the names it does not hold are ignored)."""
    drop = pa.array(sorted(set(locations)), pa.string())
    keep = pc.invert(pc.is_in(index.filters.column("location"), value_set=drop))
    return load_index(BuiltIndex(files={"filters": index.filters.filter(keep)}, meta=index.meta))
