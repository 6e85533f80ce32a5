"""Folding one commit's changes into a zone map.

Spark sums the delta per location: rows added minus rows removed, the same
for rows with a null key, and the minimum and maximum of the keys added. The
driver merges that into the stored zones:

- bounds widen to cover the added keys;
- bounds never shrink on removals: without the location's remaining keys
  the new minimum and maximum are unknown, so the old ones are kept — still
  bounds, so answers stay a superset (a rebuild tightens them);
- counts are exact, so a location whose rows reach zero is dropped, one left
  with only null keys loses its bounds, and IS NULL stays exact.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.indexes.zonemap.build import column
from lakesieve.indexes.zonemap.lookup import ZoneMapIndex
from lakesieve.indexes.zonemap.params import parse_zonemap_options
from lakesieve.indexes.zonemap.storage import shorten, to_built
from lakesieve.sdk import BuiltIndex

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def _aligned(values: pa.Array, at: np.ndarray) -> pa.Array:
    """``values[at]`` with nulls where ``at`` is -1."""
    return values.take(pa.array(np.maximum(at, 0), pa.int64(), mask=at < 0))


def _counts(values: np.ndarray, at: np.ndarray) -> np.ndarray:
    out = np.zeros(len(at), np.int64)
    out[at >= 0] = values[at[at >= 0]]
    return out


def _pick(index: ZoneMapIndex, old: pa.Array, new: pa.Array, smaller: bool) -> pa.Array:
    """Per location the smaller (or larger) of two typed bounds, ignoring nulls."""
    old_ok = np.asarray(old.is_valid(), dtype=bool)
    new_ok = np.asarray(new.is_valid(), dtype=bool)
    old_f, new_f = index.order.array(old), index.order.array(new)
    better = np.asarray(new_f < old_f if smaller else new_f > old_f, dtype=bool)
    take_new = new_ok & (~old_ok | better)
    return pc.if_else(pa.array(take_new), new, old)


def apply_delta(
    spark: SparkSession, index: ZoneMapIndex, delta: DataFrame, params: Mapping[str, Any]
) -> BuiltIndex:
    """The zone map after applying ``delta`` (a superset of a rebuild's answers).

    Args:
        spark: the session (unused: the delta carries it).
        index: the loaded zone map.
        delta: rows ``(key, location, count)``; ``count > 0`` rows added at the
            location, ``< 0`` rows removed.
        params: build parameters (the index's own when empty).
    """
    from pyspark.sql import functions as F

    full = parse_zonemap_options(params or index.params)
    added = F.when(F.col("count") > 0, F.col("key"))
    changes = (
        delta.select(
            F.col("key"),
            F.col("location").cast("string").alias("location"),
            F.col("count").cast("bigint").alias("count"),
        )
        .groupBy("location")
        .agg(
            F.min(added).alias("min"),
            F.max(added).alias("max"),
            F.sum("count").alias("rows"),
            F.sum(F.when(F.col("key").isNull(), F.col("count")).otherwise(F.lit(0))).alias("nulls"),
        )
        .toArrow()
    )
    return merge_changes(index, changes, full)


def apply_delta_arrow(
    index: ZoneMapIndex, delta: pa.Table, params: Mapping[str, Any]
) -> BuiltIndex:
    """:func:`apply_delta` computed in-process, for a summed delta already on the driver.

    Per location: the minimum and maximum of the keys added (``count > 0``)
    in Spark's order (the comparison forms of
    :class:`~lakesieve.sdk.keys.KeyOrder`: NaN above every number,
    strings by UTF-8 bytes), the net rows and the net rows with a null key.

    Args:
        index: the loaded zone map.
        delta: ``key``, ``location``, ``count`` rows (summed or not).
        params: build parameters (the index's own when empty).
    """
    full = parse_zonemap_options(params or index.params)
    key_type = index.zones.schema.field("min").type
    keys = delta.column("key").combine_chunks().cast(key_type)
    locations = delta.column("location").combine_chunks().cast(pa.string())
    if locations.null_count:
        raise ValueError("the delta has rows with a null location")
    counts = np.asarray(delta.column("count").combine_chunks().cast(pa.int64()), dtype=np.int64)
    encoded = locations.dictionary_encode()
    names = encoded.dictionary.to_pylist()
    loc_ids = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    valid = np.asarray(keys.is_valid(), dtype=bool)
    forms = index.order.array(keys)
    rows = np.bincount(loc_ids, weights=counts, minlength=len(names)).astype(np.int64)
    nulls = np.bincount(loc_ids[~valid], weights=counts[~valid], minlength=len(names)).astype(
        np.int64
    )
    lows: list[int | None] = [None] * len(names)
    highs: list[int | None] = [None] * len(names)
    added = np.flatnonzero(valid & (counts > 0))
    if forms.dtype == np.int64:  # one sort by (location, form): first and last of each run
        order = added[np.lexsort((forms[added], loc_ids[added]))]
        group = loc_ids[order]
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]]) if len(order) else order
        ends = np.r_[starts[1:], len(order)] - 1 if len(order) else order
        for s_at, e_at in zip(starts.tolist(), ends.tolist(), strict=True):
            lows[int(group[s_at])] = int(order[s_at])
            highs[int(group[s_at])] = int(order[e_at])
    else:  # bytes or Decimal forms: compared in Python
        for i in range(len(names)):
            ranked = sorted(added[loc_ids[added] == i].tolist(), key=lambda r: forms[r])
            lows[i] = ranked[0] if ranked else None
            highs[i] = ranked[-1] if ranked else None

    def picked(at_rows: list[int | None]) -> pa.Array:
        some = [r for r in at_rows if r is not None]
        chosen = keys.take(pa.array(some, pa.int64())).to_pylist()
        it = iter(chosen)
        return pa.array([None if r is None else next(it) for r in at_rows], key_type)

    changes = pa.table(
        {
            "location": pa.array(names, pa.string()),
            "min": picked(lows),
            "max": picked(highs),
            "rows": pa.array(rows, pa.int64()),
            "nulls": pa.array(nulls, pa.int64()),
        }
    )
    return merge_changes(index, changes, full)


def merge_changes(index: ZoneMapIndex, changes: pa.Table, params: Mapping[str, Any]) -> BuiltIndex:
    """The zone map with per-location changes folded in (the driver half of :func:`apply_delta`).

    Args:
        index: the loaded zone map.
        changes: one row per changed location: ``location``, ``min`` and
            ``max`` of the keys added (typed; null when none), ``rows`` and
            ``nulls`` (net rows and net rows with a null key added).
        params: the full build parameters.
    """
    full = parse_zonemap_options(params)
    d_names = column(changes, "location")
    if d_names.null_count:
        raise ValueError("the delta has rows with a null location")
    key_arrow_type = index.zones.schema.field("min").type
    d_min, d_max, cut = shorten(
        index.order,
        column(changes, "min").cast(key_arrow_type),
        column(changes, "max").cast(key_arrow_type),
        int(full["string_prefix_bytes"]),
    )

    old_names = index.locations.tolist()
    new_names = d_names.to_pylist()
    names = sorted(set(old_names) | set(new_names))
    old_at = {n: i for i, n in enumerate(old_names)}
    new_at = {n: i for i, n in enumerate(new_names)}
    oi = np.array([old_at.get(n, -1) for n in names], dtype=np.int64)
    ni = np.array([new_at.get(n, -1) for n in names], dtype=np.int64)

    mins = _pick(index, _aligned(column(index.zones, "min"), oi), _aligned(d_min, ni), True)
    maxs = _pick(index, _aligned(column(index.zones, "max"), oi), _aligned(d_max, ni), False)
    d_rows = np.asarray(column(changes, "rows").fill_null(0), dtype=np.int64)
    d_nulls = np.asarray(column(changes, "nulls").fill_null(0), dtype=np.int64)
    rows = _counts(index.rows, oi) + _counts(d_rows, ni)
    nulls = np.maximum(_counts(index.null_count, oi) + _counts(d_nulls, ni), 0)

    keep = rows > 0
    no_keys = pa.array(rows <= nulls)
    mins = pc.if_else(no_keys, pa.nulls(len(names), key_arrow_type), mins)
    maxs = pc.if_else(no_keys, pa.nulls(len(names), key_arrow_type), maxs)
    mask = pa.array(keep)
    shortened = min(int(keep.sum()), int(index.meta.get("shortened_bounds", 0)) + cut)
    return to_built(
        index.order,
        [n for n, k in zip(names, keep, strict=True) if k],
        mins.filter(mask),
        maxs.filter(mask),
        rows[keep],
        np.minimum(nulls, rows)[keep],
        full,
        shortened,
    )
