"""Turning Iceberg read units into one Spark DataFrame.

Two ways, chosen per table (:func:`.columns.by_name_is_exact`):

- **by name** (every table whose fields never changed name or id): Spark's
  own Parquet reader scans every data file with the snapshot's schema. When
  the frame needs per-file facts -- the location, position deletes, or
  identity partition values for files that do not carry their partition
  column -- each row's file is recognised by its URL-decoded
  ``_metadata.file_name`` and joined with a small broadcast frame of (file
  name, location, data file path, partition values); a column is then
  ``coalesce(file value, partition value)`` (an identity partition holds one
  value, so the two agree wherever the file has the column). Position delete
  files are read by Spark too: their ``(file_path, pos)`` rows are mapped to
  file names through the same small frame and removed with an anti-join on
  ``_metadata.row_index``.
- **by field id** (renamed, dropped and re-added fields, name mappings that
  differ from the names): each task reads its data files with
  :mod:`.unit_reader`, which resolves columns by field id, through
  ``mapInArrow``.

Delete kinds that cannot be applied refuse the read
(:mod:`lakesieve.plugins.iceberg.deletes`), as does a schema with two column
names equal but for case while ``spark.sql.caseSensitive`` is off.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
from lakesieve.plugins.iceberg import catalog, columns, schema, timeline
from lakesieve.plugins.iceberg.deletes import FILE_PATH, POS, position_delete_paths
from lakesieve.plugins.iceberg.errors import IcebergFeatureError
from lakesieve.plugins.iceberg.snapshot import data_path, read_path
from lakesieve.sdk import LOCATION_COLUMN, ReadUnit, TableRef
from lakesieve.sdk.paths import file_name
from lakesieve.sdk.spark import (
    FILE_KEY,
    ROW_KEY,
    decoded_file_name,
    default_parallelism,
    empty_frame,
    parquet_reader,
    unique_name_rounds,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

#: Column carrying a row's position in its data file, when asked for.
POSITION_COLUMN = "__lakesieve_pos"
#: Column carrying a row's data file path as the metadata writes it, when asked for.
FILE_PATH_COLUMN = "__lakesieve_file_path"


#: Prefix of the broadcast columns carrying identity partition values.
CONSTANT_PREFIX = "__lakesieve_const_"


def constants_frame_columns(
    units: Sequence[ReadUnit], arrow: pa.Schema, ids: dict[str, int]
) -> dict[str, pa.Array]:
    """Per unit (in order), the identity partition value of every column that has one."""
    decoded = [columns.decode_identity(u.extra.get(columns.IDENTITY_KEY)) for u in units]
    out: dict[str, pa.Array] = {}
    for fld in arrow:
        field_id = ids.get(fld.name)
        if field_id is None or not any(field_id in d for d in decoded):
            continue
        parts = [columns.constant_array(d.get(field_id), fld.type, 1) for d in decoded]
        out[fld.name] = pa.concat_arrays(parts)
    return out


def _read_round(
    spark: SparkSession,
    full: StructType,
    units: Sequence[ReadUnit],
    delete_paths: list[str],
    with_location: bool,
    with_position: bool,
    constants: dict[str, pa.Array],
) -> DataFrame:
    from pyspark.sql import functions as F

    df = parquet_reader(spark, full).parquet(*[read_path(u) for u in units])
    columns = [F.col(f"`{n}`") for n in full.names]
    if not (with_location or with_position or delete_paths or constants):
        return df.select(*columns)
    need_rows = with_position or bool(delete_paths)
    scanned = df.select(
        *columns,
        decoded_file_name().alias(FILE_KEY),
        *([F.col("_metadata.row_index").alias(ROW_KEY)] if need_rows else []),
    )
    facts = pa.table(
        {
            FILE_KEY: pa.array([file_name(read_path(u)) for u in units], pa.string()),
            LOCATION_COLUMN: pa.array([u.location for u in units], pa.string()),
            FILE_PATH_COLUMN: pa.array([data_path(u) for u in units], pa.string()),
            **{f"{CONSTANT_PREFIX}{i}": arr for i, arr in enumerate(constants.values())},
        }
    )
    files = F.broadcast(spark.createDataFrame(facts))
    if delete_paths:
        positions = (
            parquet_reader(spark, f"{FILE_PATH} string, {POS} bigint")
            .parquet(*delete_paths)
            .join(files, files[FILE_PATH_COLUMN] == F.col(FILE_PATH), "inner")
            .select(F.col(FILE_KEY), F.col(POS).alias(ROW_KEY))
            .distinct()
        )
        scanned = scanned.join(positions, on=[FILE_KEY, ROW_KEY], how="left_anti")
    joined = scanned.join(files, on=FILE_KEY, how="inner")
    slot = {name: f"{CONSTANT_PREFIX}{i}" for i, name in enumerate(constants)}
    out = [
        F.coalesce(F.col(f"`{n}`"), F.col(slot[n])).alias(n) if n in slot else F.col(f"`{n}`")
        for n in full.names
    ]
    if with_location:
        out.append(F.col(LOCATION_COLUMN))
    if with_position:
        out.extend([F.col(FILE_PATH_COLUMN), F.col(ROW_KEY).alias(POSITION_COLUMN)])
    return joined.select(*out)


def read_units(
    spark: SparkSession,
    ref: TableRef,
    units: Sequence[ReadUnit],
    instant: str | None,
    with_location: bool,
    with_position: bool = False,
) -> DataFrame:
    """The rows of ``units`` as of ``instant`` (current when ``None``), position deletes applied.

    Args:
        spark: the session.
        ref: the table.
        units: read units of the snapshot at ``instant``.
        instant: snapshot id.
        with_location: add the location column.
        with_position: also add each row's data file path and position
            (:data:`FILE_PATH_COLUMN`, :data:`POSITION_COLUMN`), for writers of
            position deletes.

    Raises:
        InstantNotFoundError: ``instant`` is not a snapshot on the timeline.
        IcebergFeatureError: a delete kind or a schema change lakesieve cannot honour.
    """
    table = catalog.load_for_read(ref.path, ref.options)
    snap = timeline.resolve(table, ref.path, instant)
    chosen = schema.schema_at(table.metadata, snap.schema_id if snap is not None else None)
    arrow = schema.arrow_schema(chosen, ref.path)
    check_spark_names(spark, arrow.names, ref.path)
    full = schema.spark_schema(arrow)
    if not units or snap is None:
        return empty_frame(spark, full, with_location)
    delete_paths = position_delete_paths(units, ref.path)
    if not columns.by_name_is_exact(table.metadata):
        columns.check_nested_fields(table.metadata, ref.path)
        if with_position:
            raise IcebergFeatureError(
                f"Iceberg table {ref.path} renamed or re-added columns (field ids differ from "
                "names); lakesieve cannot write position deletes for it; refusing"
            )
        return _read_by_field_id(spark, ref, units, instant, full, with_location)
    constants = constants_frame_columns(units, arrow, columns.top_level_ids(chosen))
    parts = [
        _read_round(
            spark,
            full,
            group,
            delete_paths,
            with_location,
            with_position,
            constants_of(group, units, constants),
        )
        for group in unique_name_rounds(units)
    ]
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result


def constants_of(
    group: Sequence[ReadUnit], units: Sequence[ReadUnit], constants: dict[str, pa.Array]
) -> dict[str, pa.Array]:
    """The rows of ``constants`` (one per unit of ``units``) for the units of ``group``."""
    if not constants:
        return constants
    index = {id(u): i for i, u in enumerate(units)}
    rows = pa.array([index[id(u)] for u in group], pa.int64())
    return {name: arr.take(rows) for name, arr in constants.items()}


def check_spark_names(spark: SparkSession, names: Sequence[str], table_path: str) -> None:
    """Refuse a schema Spark cannot hold: two names equal but for case, case-insensitively.

    Raises:
        IcebergFeatureError: naming the table and both columns.
    """
    clash = columns.case_collisions(list(names))
    if clash is None:
        return
    if str(spark.conf.get("spark.sql.caseSensitive", "false")).lower() == "true":
        return
    raise IcebergFeatureError(
        f"Iceberg table {table_path} has columns {clash[0]!r} and {clash[1]!r}, whose names "
        "differ only in case, which Spark cannot hold while spark.sql.caseSensitive is false; "
        "refusing to read it through Spark (read_arrow reads it)"
    )


def _units_in_worker(
    table_path: str,
    options: dict[str, str],
    instant: str | None,
    with_location: bool,
    target: pa.Schema,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: read every described unit with the field-id reader."""
    from lakesieve.plugins.iceberg.unit_reader import read_unit_batches
    from lakesieve.sdk import TableRef

    ref = TableRef(table_path, "iceberg", options)
    for descriptors in batches:
        for text in descriptors.column(0).to_pylist():
            unit = _unit_from_json(text)
            for batch in read_unit_batches(ref, unit, instant, None):
                arrays = [
                    batch.column(i).cast(target.field(i).type) for i in range(batch.num_columns)
                ]
                if with_location:
                    arrays.append(pa.array([unit.location] * batch.num_rows, pa.string()))
                yield pa.RecordBatch.from_arrays(arrays, schema=target)


def _unit_to_json(unit: ReadUnit) -> str:
    return json.dumps(
        {
            "location": unit.location,
            "base_file": unit.base_file,
            "delete_files": list(unit.delete_files),
            "extra": dict(unit.extra),
        }
    )


def _unit_from_json(text: str) -> ReadUnit:
    d = json.loads(text)
    return ReadUnit(
        location=d["location"],
        base_file=d["base_file"],
        delete_files=tuple(d["delete_files"]),
        extra=d["extra"],
    )


def _read_by_field_id(
    spark: SparkSession,
    ref: TableRef,
    units: Sequence[ReadUnit],
    instant: str | None,
    full: StructType,
    with_location: bool,
) -> DataFrame:
    """The rows of ``units`` read in Spark tasks by the field-id reader (:mod:`.unit_reader`)."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StringType, StructField, StructType

    out = full
    if with_location:
        out = StructType([*full.fields, StructField(LOCATION_COLUMN, StringType(), True)])
    descriptors = spark.createDataFrame(
        [(_unit_to_json(u),) for u in units], "unit string"
    ).repartition(min(len(units), default_parallelism(spark)))
    body = functools.partial(
        _units_in_worker,
        ref.path,
        dict(ref.options),
        instant,
        with_location,
        to_arrow_schema(out, timezone="UTC", prefers_large_types=False),
    )
    return descriptors.mapInArrow(body, out)
