"""Exact index partitions written by Spark's own ORC writer (format 3).

The format-2 build hands every (key, location) pair to Python in its tasks,
which sort, sum and write them; at SF10 that hand-over and the per-range
sort cost more than the whole Spark sort the build is measured against. In
format 3 no Python runs in the tasks:

1. Each row's location travels as Spark's ``xxhash64`` code of its name
   (:class:`~lakesieve.sdk.keys.LocationCodes`).
2. ``repartitionByRange`` on the key (the same shuffle a sort makes), and
   Spark writes each range, rows as they come, as one ORC file of ``key``,
   ``code`` and ``part`` (the range's number) into a hidden folder of the
   state's folder. Keys of small domains (:data:`COUNTED_TYPES`) are
   counted per (key, code) before the shuffle instead, and the files hold a
   ``count`` column. ORC, not Parquet: Hudi readers take any ``.parquet`` file
   under a table's folders for a base file, and an index root usually lies
   inside the table.
3. Each file's bounds: for integer keys of raw rows (:func:`footer_bounds`)
   from the file's ORC footer (:func:`~lakesieve.sdk.index_files.read_file_stats`: row count,
   non-null values, least and greatest key, exact for integers), with the
   location codes Spark saw collected as it wrote (an ``observe`` on the
   write); otherwise, or when a footer cannot be read, a second small job
   reads the files back and aggregates, per range and location code, the
   least and greatest key, rows and non-null rows, with Spark's own ordering
   (NaN above every number, ``-0.0 = 0.0``). Either way the manifest's bounds
   hold every key of the file, whatever Spark's range boundaries were. A code
   of no known location (or a null location's) makes the build drop the
   files and fall back to format 2, whose join path handles any location
   (and names a null one in its error).
4. The driver moves the files into the state's folder as ``part-<n>.orc``,
   hashes them and writes the manifest and a ``locations`` file (name and
   code of every location).

A partition is read as raw rows (one per relation row, unsorted) and laid
out on the driver when a query first needs it
(:func:`partition_from_codes`): about :data:`ROWS_PER_FILE_FACTOR` times
:data:`~lakesieve.indexes.exact.partitions.ROWS_PER_PARTITION` rows each, a sort
of about 0.15 s per million rows (SF1 ``l_partkey``: a cold point lookup 160 ms, a
warm one 0.1 ms). The stored files are not sorted; their distinct keys are not counted at build time (the
manifest's ``keys`` and ``entries`` count non-null rows).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from lakesieve.indexes.exact.partitions import file_name, layout_ids, manifest_from_rows
from lakesieve.sdk.index_files import (
    ORC_SUFFIX,
    OrcFooterError,
    StagingArea,
    ipc_size,
    read_file_stats,
)
from lakesieve.sdk.keys import KeyOrder, LocationCodes, code_column, unique_ints
from pyarrow import orc

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, Observation, SparkSession

log = logging.getLogger(__name__)

#: Exact index format whose partitions Spark writes as ORC.
SPARK_FILES_FORMAT = 3

#: Spark's ``xxhash64`` of a null (its seed): a null location's code, which no name has.
NULL_CODE = 42

#: Key kinds format 3 stores (ORC and pyarrow round-trip them exactly;
#: timestamps would come back in nanoseconds and overflow at the extremes).
SPARK_FILE_KINDS = frozenset(
    {"int", "boolean", "float", "double", "date", "decimal", "string", "binary"}
)

#: Key types of small domains, whose rows repeat a (key, location) pair so often
#: that counting them before the shuffle leaves almost nothing to move or write
#: (SF10 ``l_shipdate``: 60M rows, 161,660 pairs).
COUNTED_TYPES = frozenset({"boolean", "tinyint", "byte", "smallint", "short", "date"})

#: Rows of the relation per Spark-written file, as a multiple of
#: :data:`~lakesieve.indexes.exact.partitions.ROWS_PER_PARTITION`. Fewer, larger
#: ranges make a cheaper shuffle on few cores (SF10 on 2 cores: a 120-way range
#: shuffle written as ORC took 26 s, 64-way 20 s, 16-way 17-19 s; BENCHMARKS.md),
#: at the cost of a longer first read of a partition by a lookup.
ROWS_PER_FILE_FACTOR = 2

_SPARK_PART = re.compile(r"^part-(\d+)-.*\.orc$")


def counted_before_shuffle(order: KeyOrder) -> bool:
    """Whether rows are counted per (key, location) before the shuffle (small key domains)."""
    return order.key_type.strip().lower() in COUNTED_TYPES


def suits(order: KeyOrder) -> bool:
    """Whether keys of ``order``'s type can be stored in format 3."""
    return order.kind.kind in SPARK_FILE_KINDS


def locations_table(codes: LocationCodes) -> pa.Table:
    """The ``locations`` file: every location's name and code."""
    by_id = np.empty(len(codes.names), dtype=np.int64)
    by_id[codes.code_ids] = codes.codes
    return pa.table({"location": pa.array(codes.names, pa.string()), "code": by_id})


def codes_of_table(table: pa.Table) -> LocationCodes:
    """The :class:`LocationCodes` of a stored ``locations`` file.

    Raises:
        ValueError: the file lacks its columns, holds a null, repeats a name or a code.
    """
    if not {"location", "code"} <= set(table.column_names):
        raise ValueError("the locations file lacks its columns")
    names = table.column("location").to_pylist()
    codes = table.column("code").to_pylist()
    if any(n is None for n in names) or any(c is None for c in codes):
        raise ValueError("the locations file holds a null")
    if len(set(names)) != len(names):
        raise ValueError("the locations file repeats a name")
    ordered = sorted(zip(names, codes, strict=True))
    found = LocationCodes.from_codes(dict(ordered), [n for n, _ in ordered])
    if found is None:
        raise ValueError("the locations file repeats a code")
    return found


def partition_from_codes(order: KeyOrder, table: pa.Table, codes: LocationCodes) -> pa.Table:
    """A format-3 partition (raw ``key``, ``code`` rows) laid out as a format-2 partition table.

    Raises:
        ValueError: a column is missing, a code is null or no known location's.
    """
    if not {"key", "code"} <= set(table.column_names):
        raise ValueError("the partition lacks its key and code columns")
    code_col = table.column("code").combine_chunks()
    if code_col.null_count:
        raise ValueError("the partition holds a null location code")
    ids, known = codes.ids_of(np.asarray(code_col, dtype=np.int64))
    if not known.all():
        raise ValueError("the partition names a location of no known code")
    keys = table.column("key").combine_chunks().cast(order.arrow_type())
    counts = np.ones(len(keys), np.int64)
    if "count" in table.column_names:
        count_col = table.column("count").combine_chunks()
        if count_col.null_count:
            raise ValueError("the partition holds a null count")
        counts = np.asarray(count_col, dtype=np.int64)
        if len(counts) and counts.min() <= 0:
            raise ValueError("the partition holds a count that is not positive")
    part, _ = layout_ids(order, keys, ids, pa.array(codes.names, pa.string()), counts)
    return part


def _spark_out(area: StagingArea) -> str:
    out = os.path.join(area.folder, f".spark-{uuid.uuid4().hex}")
    if os.path.dirname(out) != area.folder.rstrip(os.sep):
        raise ValueError(f"Spark output folder {out} is not inside {area.folder}")
    return out


def write_spark_files(
    spark: SparkSession,
    relation: DataFrame,
    order: KeyOrder,
    area: StagingArea,
    codes: LocationCodes,
    partitions: int | None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int] | None:
    """Have Spark write the key-range partitions into ``area``; see the module docs.

    Returns:
        The file records (``name``, ``sha256``, ``size_bytes``, ``rows``,
        ``suffix``), the manifest rows and how many locations hold rows; or
        ``None`` when a row's location is no known one (nothing is left in
        ``area`` then).
    """
    from pyspark.sql import functions as F

    rows = relation.select(F.col("key"), code_column().alias("code"))
    if counted_before_shuffle(order):
        # few distinct keys: Spark's partial counts shrink the rows before the shuffle,
        # and adaptive execution sizes the ranges for the pairs that are left
        pairs = rows.groupBy("key", "code").agg(F.count(F.lit(1)).alias("count"))
        ranged = pairs.repartitionByRange(F.col("key"))
        row_count = F.sum("count")
        keyed = F.sum(F.when(F.col("key").isNotNull(), F.col("count")).otherwise(0))
    else:
        ranged = (
            rows.repartitionByRange(partitions, F.col("key"))
            if partitions is not None
            else rows.repartitionByRange(F.col("key"))
        )
        row_count, keyed = F.count(F.lit(1)), F.count("key")
    out = _spark_out(area)
    try:
        written = ranged.withColumn("part", F.spark_partition_id())
        observation = None
        if footer_bounds(order):
            from pyspark.sql import Observation

            observation = Observation()
            written = written.observe(
                observation, F.collect_set("code").alias("codes"), F.count(F.lit(1)).alias("rows")
            )
        # one file per range, whatever the session's spark.sql.files.maxRecordsPerFile
        writer = written.write.mode("errorifexists").option("maxRecordsPerFile", 0)
        writer.option("compression", "zstd").orc(out)
        written_ranges = (
            _footer_ranges(order, out, observation) if observation is not None else None
        )
        if written_ranges is None:
            written_ranges = _ranges_read_back(order, _read_back(spark, out, row_count, keyed))
        _, known = codes.ids_of(written_ranges.codes)
        if not known.all():
            return None
        records, manifest_rows = _move_files(area, out, written_ranges.ranges)
        return records, manifest_rows, len(written_ranges.codes)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def footer_bounds(order: KeyOrder) -> bool:
    """Whether each file's bounds come from its ORC footer (integer keys of raw rows)."""
    return order.kind.kind == "int" and not counted_before_shuffle(order)


def _read_back(spark: SparkSession, out: str, row_count: Column, keyed: Column) -> pa.Table:
    """Per (range, location code): least and greatest key, rows, non-null rows, stored rows."""
    from pyspark.sql import functions as F

    return (
        spark.read.orc(out)
        .groupBy("part", "code")
        .agg(
            F.min("key").alias("low"),
            F.max("key").alias("high"),
            row_count.alias("rows"),
            keyed.alias("keyed"),
            F.count(F.lit(1)).alias("stored"),
        )
        .toArrow()
    )


@dataclass(frozen=True)
class _Ranges:
    """What Spark wrote: each range's bounds and counts, and the location codes on its rows.

    Attributes:
        ranges: by range number (Spark's partition id): ``low`` and ``high``
            (one-element Arrow arrays, null when the range holds no key),
            ``rows``, ``keyed`` (rows with a key) and ``stored`` (rows in its file).
        codes: the distinct location codes of every row (a null location's is
            :data:`NULL_CODE`), as int64.
    """

    ranges: dict[int, dict[str, Any]]
    codes: np.ndarray


def _footer_ranges(order: KeyOrder, out: str, observation: Observation) -> _Ranges | None:
    """The ranges from the files' ORC footers, the codes from what the write observed.

    Each file is one range, so its footer's row count and key bounds are the
    range's. ``None`` when a footer cannot be read (the caller then reads the
    files back).

    Raises:
        RuntimeError: the footers' rows disagree with the rows Spark counted as it wrote.
    """
    metrics = observation.get
    key_arrow = order.arrow_type()
    ranges: dict[int, dict[str, Any]] = {}
    for spark_name in sorted(f for f in os.listdir(out) if _SPARK_PART.match(f)):
        match = _SPARK_PART.match(spark_name)
        assert match is not None
        try:
            found = read_file_stats(os.path.join(out, spark_name))
        except OrcFooterError as exc:
            log.info("reading format-3 files back: %s", exc)
            return None
        if not found.rows:
            continue
        key = found.columns.get("key")
        if key is None:
            log.info("reading format-3 files back: %s has no integer key column", spark_name)
            return None
        ranges[int(match.group(1))] = {
            "low": pa.array([key.minimum], key_arrow),
            "high": pa.array([key.maximum], key_arrow),
            "rows": found.rows,
            "keyed": key.values,
            "stored": found.rows,
        }
    total = sum(r["rows"] for r in ranges.values())
    if total != int(metrics["rows"]):
        raise RuntimeError(
            f"Spark wrote {metrics['rows']} rows but its files' footers hold {total}"
        )
    seen = unique_ints(np.asarray([int(c) for c in metrics["codes"]], np.int64))
    return _Ranges(ranges, seen)


def _ranges_read_back(order: KeyOrder, stats: pa.Table) -> _Ranges:
    """The ranges and codes from the readback's rows per (range, location code)."""
    codes = np.asarray(stats.column("code").fill_null(NULL_CODE), np.int64)
    return _Ranges(_per_part(order, stats), unique_ints(codes))


def _per_part(order: KeyOrder, stats: pa.Table) -> dict[int, dict[str, Any]]:
    """Each range's bounds and counts from the readback's rows per (range, location)."""
    key_arrow = order.arrow_type()
    parts = np.asarray(stats.column("part"), dtype=np.int64)
    lows = stats.column("low").combine_chunks().cast(key_arrow)
    highs = stats.column("high").combine_chunks().cast(key_arrow)
    low_forms, high_forms = order.array(lows), order.array(highs)
    has_low = ~np.asarray(lows.is_null(), dtype=bool)
    rows = np.asarray(stats.column("rows"), dtype=np.int64)
    keyed = np.asarray(stats.column("keyed"), dtype=np.int64)
    stored = np.asarray(stats.column("stored"), dtype=np.int64)
    out: dict[int, dict[str, Any]] = {}
    for part in np.unique(parts).tolist():
        at = np.flatnonzero(parts == part)
        with_keys = at[has_low[at]]
        if len(with_keys):
            lo = int(with_keys[min(range(len(with_keys)), key=lambda i: low_forms[with_keys[i]])])
            hi = int(with_keys[max(range(len(with_keys)), key=lambda i: high_forms[with_keys[i]])])
            low, high = lows.slice(lo, 1), highs.slice(hi, 1)
        else:
            low = high = pa.nulls(1, key_arrow)
        out[int(part)] = {
            "low": low,
            "high": high,
            "rows": int(rows[at].sum()),
            "keyed": int(keyed[at].sum()),
            "stored": int(stored[at].sum()),
        }
    return out


def _move_files(
    area: StagingArea, out: str, ranges: dict[int, dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Move Spark's files into ``area`` as ``part-<n>.orc``; their records and manifest rows.

    Each file is read once whole (its hash); its row count comes from its footer.
    """
    by_part = dict(ranges)
    records: list[dict[str, Any]] = []
    manifest_rows: list[dict[str, Any]] = []
    spark_files = sorted(f for f in os.listdir(out) if _SPARK_PART.match(f))
    for number, spark_name in enumerate(spark_files):
        match = _SPARK_PART.match(spark_name)
        assert match is not None
        source = os.path.join(out, spark_name)
        stored = orc.ORCFile(source).nrows
        if stored == 0:  # Spark writes one empty file when every range is empty
            continue
        summary = by_part.pop(int(match.group(1)), None)
        if summary is None or summary["stored"] != stored:
            raise RuntimeError(f"Spark's file {spark_name} and the rows read back disagree")
        with open(source, "rb") as fh:
            digest = hashlib.file_digest(fh, "sha256").hexdigest()
            size = os.fstat(fh.fileno()).st_size
        name = file_name(number)
        os.replace(source, os.path.join(area.folder, f"{name}{ORC_SUFFIX}"))
        rows, with_key = summary["rows"], summary["keyed"]
        records.append(
            {
                "name": name,
                "sha256": digest,
                "size_bytes": size,
                "rows": stored,
                "suffix": ORC_SUFFIX,
            }
        )
        manifest_rows.append(
            {
                "file": name,
                "low": summary["low"],
                "high": summary["high"],
                "keys": with_key,
                "entries": with_key,
                "row_count": rows,
                "null_rows": rows - with_key,
                "size_bytes": size,
            }
        )
    if by_part:
        raise RuntimeError(
            f"no file of Spark's holds the rows read back for ranges {sorted(by_part)}"
        )
    return records, manifest_rows


def with_sizes(manifest: pa.Table, files: dict[str, pa.Table]) -> pa.Table:
    """``manifest`` with each partition's ``size_bytes`` that of ``files[name]`` as Arrow IPC."""
    sizes = [ipc_size(files[name]) for name in manifest.column("file").to_pylist()]
    at = manifest.schema.get_field_index("size_bytes")
    return manifest.set_column(at, manifest.schema.field(at), pa.array(sizes, pa.int64()))


def manifest_of(order: KeyOrder, manifest_rows: list[dict[str, Any]]) -> pa.Table:
    """The manifest of format-3 partitions (the format-2 manifest's columns)."""
    return manifest_from_rows(order.arrow_type(), manifest_rows)
