"""Key-range partitions of an exact index, and the manifest that lists them.

An exact index of format 2 is a small ``manifest`` (read when the index is
loaded) plus one ``part-<n>`` file per key range (read when a query's keys
fall in its range; see :mod:`lakesieve.sdk.index_files`):

================  ==================================================================
``part-<n>``      one row per (key, location) pair of the range: ``key`` (the
                  column's Arrow type; null for the rows of null keys),
                  ``location`` (dictionary of strings), ``count`` (int64 rows,
                  positive). Non-null keys come first, sorted in the column's
                  order (:class:`~lakesieve.sdk.keys.KeyOrder`), then by location name;
                  null keys last, one row per location.
``manifest``      one row per partition: ``file``, ``low``/``high`` (the least
                  and greatest non-null key, in the column's type; null when the
                  partition holds only null keys), ``keys``, ``entries``,
                  ``rows``, ``null_rows`` and ``size_bytes``.
================  ==================================================================

:func:`partition_table` lays one partition out; the Spark build runs it in
its tasks (:func:`write_partitions`), while compaction and in-process builds
run it on the driver over ranges cut by :func:`split_ranges`. The manifest's
bounds are computed from the keys actually in each file, so a lookup that
reads every partition whose ``[low, high]`` can hold a key never misses one,
however Spark cut the ranges.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.sdk.index_files import ON_DEMAND_PREFIX, ipc_file_bytes, write_task_file
from lakesieve.sdk.keys import KeyOrder, LocationCodes, location_names

#: Format version of an index of key-range partitions and a manifest (stored in its meta).
PARTITIONED_FORMAT = 2

#: Rows of the relation per partition the Spark build aims at (pairs are at most as many).
ROWS_PER_PARTITION = 500_000

#: Pairs per partition when the driver lays an index out (compaction, in-process builds).
PAIRS_PER_PARTITION = 500_000

#: Spark schema of the row each build task returns for its partition.
TASK_ROW_DDL = (
    "file string, sha256 string, size_bytes long, rows long, bounds binary, "
    "locations binary, keys long, entries long, row_count long, null_rows long"
)


#: Arrow schema of :data:`TASK_ROW_DDL`.
TASK_ROW_SCHEMA = pa.schema(
    [
        ("file", pa.string()),
        ("sha256", pa.string()),
        ("size_bytes", pa.int64()),
        ("rows", pa.int64()),
        ("bounds", pa.binary()),
        ("locations", pa.binary()),
        ("keys", pa.int64()),
        ("entries", pa.int64()),
        ("row_count", pa.int64()),
        ("null_rows", pa.int64()),
    ]
)


def manifest_schema(key_type: pa.DataType) -> pa.Schema:
    """Schema of the manifest for keys of Arrow type ``key_type``."""
    return pa.schema(
        [
            pa.field("file", pa.string(), nullable=False),
            pa.field("low", key_type),
            pa.field("high", key_type),
            pa.field("keys", pa.int64(), nullable=False),
            pa.field("entries", pa.int64(), nullable=False),
            pa.field("rows", pa.int64(), nullable=False),
            pa.field("null_rows", pa.int64(), nullable=False),
            pa.field("size_bytes", pa.int64(), nullable=False),
        ]
    )


def file_name(number: int) -> str:
    """The name of partition ``number``'s file."""
    return f"{ON_DEMAND_PREFIX}{number:05d}"


def _plain(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    return values


def partition_table(
    order: KeyOrder,
    keys: pa.Array | pa.ChunkedArray,
    locations: pa.Array | pa.ChunkedArray,
    counts: np.ndarray,
) -> tuple[pa.Table, dict[str, Any]]:
    """Lay out one partition from (key, location, count) rows; the file's table and its summary.

    Rows may repeat a pair (their counts are summed) and keys equal in the
    column's order (``0.0`` and ``-0.0``, NaNs) are one key; pairs whose
    count sums to zero or less are dropped.

    Returns:
        The partition table, and ``low``/``high`` (one-element arrays of the
        key type, null when no non-null key), ``keys``, ``entries``,
        ``row_count`` and ``null_rows``.

    Raises:
        ValueError: a location is null.
    """
    keys, locs = _plain(keys), _plain(locations)
    if locs.null_count:
        raise ValueError("the relation has rows with a null location")
    names = pc.unique(locs).sort()
    loc_ids = np.asarray(pc.index_in(locs, value_set=names), dtype=np.int64)
    return layout_ids(order, keys, loc_ids, names, counts)


def layout_ids(
    order: KeyOrder,
    keys: pa.Array,
    loc_ids: np.ndarray,
    names: pa.Array,
    counts: np.ndarray,
) -> tuple[pa.Table, dict[str, Any]]:
    """:func:`partition_table` for rows whose locations are ids into ``names`` (sorted, distinct)."""
    counts = np.asarray(counts, dtype=np.int64)
    loc_ids = np.asarray(loc_ids, dtype=np.int64)
    is_null = np.asarray(keys.is_null(), dtype=bool)
    # non-null keys: sort by (form, location), sum per pair, drop what is not positive
    valid = np.flatnonzero(~is_null)
    k = keys.take(pa.array(valid, pa.int64()))
    ids, cnt = loc_ids[valid], counts[valid]
    if len(k):
        idx = order.sort_indices(k, ids)
        k, ids, cnt = k.take(pa.array(idx)), ids[idx], cnt[idx]
        new_key = order.changes(order.array(k))
        new_pair = new_key.copy()
        new_pair[1:] |= ids[1:] != ids[:-1]
        starts = np.flatnonzero(new_pair)
        cnt = np.add.reduceat(cnt, starts)
        keep = cnt > 0
        starts, cnt = starts[keep], cnt[keep]
        k, ids = k.take(pa.array(starts, pa.int64())), ids[starts]
    n_keys = int(order.changes(order.array(k)).sum()) if len(k) else 0
    # null keys: one row per location
    null_sums = np.bincount(loc_ids[is_null], weights=counts[is_null], minlength=len(names))
    null_sums = np.rint(null_sums).astype(np.int64)
    null_ids = np.flatnonzero(null_sums > 0)
    all_ids = np.concatenate([ids, null_ids]).astype(np.int32)
    used = np.zeros(len(names), dtype=bool)
    used[all_ids] = True
    remap = np.cumsum(used).astype(np.int32) - 1
    dictionary = names.filter(pa.array(used))
    key_col = pa.concat_arrays([k, pa.nulls(len(null_ids), keys.type)])
    table = pa.table(
        {
            "key": key_col,
            "location": pa.DictionaryArray.from_arrays(
                pa.array(remap[all_ids], pa.int32()), dictionary
            ),
            "count": pa.array(np.concatenate([cnt, null_sums[null_ids]]), pa.int64()),
        }
    )
    summary = {
        "low": k.slice(0, 1) if len(k) else pa.nulls(1, keys.type),
        "high": k.slice(len(k) - 1, 1) if len(k) else pa.nulls(1, keys.type),
        "keys": n_keys,
        "entries": len(k),
        "row_count": int(cnt.sum()) + int(null_sums.sum()),
        "null_rows": int(null_sums.sum()),
    }
    return table, summary


def bounds_bytes(summary: dict[str, Any]) -> bytes:
    """A partition's low and high keys as a two-row Arrow IPC file (they keep their exact type)."""
    both = pa.concat_arrays([summary["low"], summary["high"]])
    return ipc_file_bytes(pa.table({"bound": both}))


def _from_codes(batch: pa.RecordBatch, codes: LocationCodes) -> pa.Table | None:
    """A ``(key, code, cnt)`` batch as ``key``, ``loc_id``, ``loc_name``, ``cnt`` (``None``: a code is unknown)."""
    ids, known = codes.ids_of(np.asarray(batch.column(1), dtype=np.int64))
    if not known.all():
        return None
    return pa.table(
        {
            "key": batch.column(0),
            "loc_id": pa.array(ids, pa.int32()),
            "loc_name": pa.nulls(batch.num_rows, pa.string()),
            "cnt": batch.column(2),
        }
    )


def write_partitions(
    batches: Iterator[pa.RecordBatch],
    key_type: str,
    folder: str,
    names: list[str],
    codes: LocationCodes | None = None,
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` body of the build: lay out this task's key range and write its file.

    Rows are ``key``, ``loc_id``, ``loc_name`` (see :func:`~lakesieve.sdk.keys.with_location_ids`)
    and, optionally, ``cnt`` (1 when absent: raw rows); pairs are summed
    here. With ``codes``, rows are ``key``, ``code``, ``cnt`` instead
    (:class:`~lakesieve.sdk.keys.LocationCodes`), and a code that is no known
    location's makes the task yield a row with a null ``file`` and write
    nothing. Rows of null keys are counted per location as batches stream by,
    so a column of mostly nulls (all in one range) costs no memory. Yields one
    row of :data:`TASK_ROW_DDL` (nothing for an empty partition).
    """
    from pyspark import TaskContext

    order = KeyOrder.of(key_type)
    kept: list[pa.Table] = []
    null_rows: dict[str, int] = {}
    for batch in batches:
        if codes is not None:
            decoded = _from_codes(batch, codes)
            if decoded is None:
                # every field null, ``file`` too: this task wrote nothing
                yield pa.RecordBatch.from_pylist([{}], schema=TASK_ROW_SCHEMA)
                return
            table = decoded
        else:
            table = pa.Table.from_batches([batch])
        if "cnt" not in table.column_names:
            table = table.append_column("cnt", pa.array(np.ones(table.num_rows, np.int64)))
        nulls = pc.is_null(table.column("key"))
        if pc.any(nulls).as_py():
            # null keys all land in one range: count them per location as they stream by
            held = table.filter(nulls)
            summed = pa.table({"location": location_names(held, names), "cnt": held.column("cnt")})
            if summed.column("location").null_count:
                raise ValueError("the relation has rows with a null location")
            summed = summed.group_by("location").aggregate([("cnt", "sum")])
            for loc, cnt in zip(
                summed.column("location").to_pylist(),
                summed.column("cnt_sum").to_pylist(),
                strict=True,
            ):
                null_rows[loc] = null_rows.get(loc, 0) + int(cnt)
            table = table.filter(pc.invert(nulls))
        if table.num_rows:
            # built anew: Spark's count column arrives as a non-nullable field
            kept.append(
                pa.table(
                    {
                        "key": table.column("key"),
                        "cnt": table.column("cnt").cast(pa.int64()),
                        "location": location_names(table, names),
                    }
                )
            )
    if not kept and not null_rows:
        return
    key_type_arrow = kept[0].schema.field("key").type if kept else order.arrow_type()
    null_part = pa.table(
        {
            "key": pa.nulls(len(null_rows), key_type_arrow),
            "cnt": pa.array(list(null_rows.values()), pa.int64()),
            "location": pa.array(list(null_rows), pa.string()),
        }
    )
    table = pa.concat_tables([*kept, null_part])
    part, summary = partition_table(
        order,
        table.column("key"),
        table.column("location"),
        np.asarray(table.column("cnt").combine_chunks(), dtype=np.int64),
    )
    context = TaskContext.get()
    name = file_name(context.partitionId() if context is not None else 0)
    record = write_task_file(folder, name, part)
    yield pa.RecordBatch.from_pydict(
        {
            "file": [name],
            "sha256": [record["sha256"]],
            "size_bytes": [record["size_bytes"]],
            "rows": [record["rows"]],
            "bounds": [bounds_bytes(summary)],
            "locations": [
                ipc_file_bytes(
                    pa.table({"location": part.column("location").combine_chunks().dictionary})
                )
            ],
            "keys": [summary["keys"]],
            "entries": [summary["entries"]],
            "row_count": [summary["row_count"]],
            "null_rows": [summary["null_rows"]],
        },
        schema=TASK_ROW_SCHEMA,
    )


def manifest_from_rows(key_arrow: pa.DataType, rows: list[dict[str, Any]]) -> pa.Table:
    """The manifest of partitions described by ``rows`` (``file``, ``low``, ``high``, counts)."""
    rows = sorted(rows, key=lambda r: str(r["file"]))
    empty = pa.array([], key_arrow)
    lows = [r["low"] for r in rows]
    highs = [r["high"] for r in rows]
    return pa.table(
        {
            "file": pa.array([r["file"] for r in rows], pa.string()),
            "low": pa.concat_arrays([empty, *[a.cast(key_arrow) for a in lows]]),
            "high": pa.concat_arrays([empty, *[a.cast(key_arrow) for a in highs]]),
            "keys": pa.array([r["keys"] for r in rows], pa.int64()),
            "entries": pa.array([r["entries"] for r in rows], pa.int64()),
            "rows": pa.array([r["row_count"] for r in rows], pa.int64()),
            "null_rows": pa.array([r["null_rows"] for r in rows], pa.int64()),
            "size_bytes": pa.array([r["size_bytes"] for r in rows], pa.int64()),
        },
        schema=manifest_schema(key_arrow),
    )


def split_ranges(
    order: KeyOrder, keys: pa.Array, locations: pa.Array, counts: np.ndarray
) -> dict[str, pa.Table]:
    """Lay out a whole index on the driver: its partition files and manifest, by name.

    Used where the pairs are on the driver already (in-process builds,
    compaction). Ranges hold about :data:`PAIRS_PER_PARTITION` rows and never
    split one key's rows.
    """
    keys, locations = _plain(keys), _plain(locations)
    counts = np.asarray(counts, dtype=np.int64)
    is_null = np.asarray(keys.is_null(), dtype=bool)
    valid = np.flatnonzero(~is_null)
    k = keys.take(pa.array(valid, pa.int64()))
    cuts = [0]
    if len(k):
        forms = order.array(k)
        idx = order.sort_indices(k, np.zeros(len(k), np.int64))
        valid, forms = valid[idx], forms[idx]
        firsts = np.flatnonzero(order.changes(forms))
        step = PAIRS_PER_PARTITION
        at = np.searchsorted(firsts, np.arange(0, len(k), step))
        cuts = sorted({int(firsts[i]) for i in at[at < len(firsts)]})
    bounds = [*cuts, len(valid)]
    groups = [valid[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    nulls = np.flatnonzero(is_null)
    if not groups:
        groups = [nulls] if len(nulls) else []
    elif len(nulls):
        groups[0] = np.concatenate([groups[0], nulls])
    files: dict[str, pa.Table] = {}
    rows = []
    for number, rows_at in enumerate(groups):
        take = pa.array(rows_at, pa.int64())
        part, summary = partition_table(
            order, keys.take(take), locations.take(take), counts[rows_at]
        )
        if part.num_rows == 0:
            continue
        name = file_name(number)
        files[name] = part
        rows.append(
            {**summary, "file": name, "size_bytes": len(ipc_file_bytes(part))},
        )
    files["manifest"] = manifest_from_rows(order.arrow_type() if not len(keys) else keys.type, rows)
    return files
