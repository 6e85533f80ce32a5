"""Turning Hudi read units into one Spark DataFrame.

Two paths, unioned by column name:

- **base-only units** (copy-on-write slices, merge-on-read slices without
  logs) with Parquet base files are read by Spark's own Parquet reader, all
  files in one scan (Hadoop's ``.crc`` side files ignored). With
  ``with_location`` the location comes from the hidden ``_metadata.file_name``
  column through a broadcast join with a small (file name, location) frame.
- **units with log files**, and units whose base file is not Parquet (Lance),
  are read by hudi-rs *inside Spark tasks*: a small
  frame of unit descriptors (location, base file, log files), one row per
  unit, goes through ``mapInArrow``; each task opens hudi-rs' file group reader
  as of the read's instant and yields Arrow batches.

Both parts share one Spark schema: the table's read columns
(:func:`lakesieve.plugins.hudi.tables.read_schema`) typed as Spark's Parquet
reader types them in the newest base file, so the two parts (and an empty
read) agree. The workers need ``lakesieve`` and ``hudi`` importable by the
interpreter in ``PYSPARK_PYTHON``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
from lakesieve.plugins.hudi import storage, tables, timeline
from lakesieve.plugins.hudi.unit_reader import is_parquet, project, read_unit_batches
from lakesieve.sdk import LOCATION_COLUMN, ReadUnit, TableRef
from lakesieve.sdk.spark import RAW_LOCAL_FILES, parquet_reader

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

_FILE_NAME = "__lakesieve_file_name"
_UNIT_SCHEMA = "location string, base_file string, log_files array<string>"
#: How Spark types each sampled base file, per session: a base file is never
#: rewritten under its name (the name carries its instant), so the answer
#: stays true. Bounded; cleared when full.
_FILE_SCHEMAS: dict[tuple[int, str], StructType] = {}
_FILE_SCHEMAS_MAX = 256


def _file_schema(spark: SparkSession, path: str) -> StructType:
    """The schema Spark's Parquet reader gives the base file at ``path`` (inferred once per session)."""
    key = (id(spark), path)
    known = _FILE_SCHEMAS.get(key)
    if known is None:
        reader = spark.read.options(**RAW_LOCAL_FILES)
        known = reader.option("recursiveFileLookup", "true").parquet(path).schema
        if len(_FILE_SCHEMAS) >= _FILE_SCHEMAS_MAX:
            _FILE_SCHEMAS.clear()
        _FILE_SCHEMAS[key] = known
    return known


def _base_instant(unit: ReadUnit) -> str:
    """The instant in a base file name (``<id>_<token>_<instant>.<ext>``)."""
    name = (unit.base_file or "").rsplit("/", 1)[-1]
    return name.rsplit("_", 1)[-1].split(".", 1)[0]


def sample_base_file(units: Sequence[ReadUnit]) -> str | None:
    """The newest Parquet base file among ``units``: its footer carries the latest schema."""
    with_base = [u for u in units if is_parquet(u.base_file)]
    return max(with_base, key=_base_instant).base_file if with_base else None


def spark_schema(
    spark: SparkSession, table_path: str, arrow_schema: pa.Schema, sample: str | None
) -> StructType:
    """The Spark schema of a read: the table's columns, typed like Spark reads the data files.

    Args:
        spark: the session.
        table_path: table root.
        arrow_schema: the table's read schema (names and order).
        sample: a base file (relative) whose Spark types to use, if any.
    """
    from pyspark.sql.pandas.types import from_arrow_type
    from pyspark.sql.types import StructField, StructType

    file_fields: dict[str, StructField] = {}
    if sample:
        inferred = _file_schema(spark, storage.join(table_path, sample))
        file_fields = {f.name: f for f in inferred.fields}
    fields = []
    for fld in arrow_schema:
        known = file_fields.get(fld.name)
        data_type = known.dataType if known is not None else from_arrow_type(fld.type)
        fields.append(StructField(fld.name, data_type, True))
    return StructType(fields)


def _merge_in_worker(
    table_path: str,
    options: Mapping[str, str],
    instant: str | None,
    target: pa.Schema,
    with_location: bool,
    narrowed: bool,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: merge every described unit through hudi-rs.

    ``narrowed``: ``target`` is a projection of the table's columns, which
    hudi-rs is asked to read alone (with what merging needs).
    """
    columns = list(target.names) if narrowed else None
    for descriptors in batches:
        for row in descriptors.to_pylist():
            for batch in read_unit_batches(
                table_path,
                options,
                row["base_file"],
                row["log_files"] or [],
                instant,
                target,
                columns,
            ):
                if with_location:
                    location = pa.array([row["location"]] * batch.num_rows, type=pa.string())
                    batch = pa.RecordBatch.from_arrays(
                        [*batch.columns, location], names=[*batch.schema.names, LOCATION_COLUMN]
                    )
                yield batch


def _read_base_files(
    spark: SparkSession,
    table_path: str,
    schema: StructType,
    units: Sequence[ReadUnit],
    with_location: bool,
) -> DataFrame:
    from pyspark.sql import functions as F

    paths = [storage.join(table_path, u.base_file) for u in units if u.base_file]
    reader = parquet_reader(spark, schema)
    df = reader.option("recursiveFileLookup", "true").parquet(*paths)
    if not with_location:
        return df  # the given schema's columns, in its order
    columns = [F.col(f"`{name}`") for name in schema.names]
    names = spark.createDataFrame(
        [((u.base_file or "").rsplit("/", 1)[-1], u.location) for u in units],
        f"{_FILE_NAME} string, {LOCATION_COLUMN} string",
    )
    scanned = df.select(*columns, F.col("_metadata.file_name").alias(_FILE_NAME))
    joined = scanned.join(F.broadcast(names), on=_FILE_NAME, how="inner")
    return joined.select(*columns, F.col(LOCATION_COLUMN))


def _read_merged(
    spark: SparkSession,
    table: TableRef,
    instant: str | None,
    schema: StructType,
    units: Sequence[ReadUnit],
    with_location: bool,
    narrowed: bool,
) -> DataFrame:
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StringType, StructField, StructType

    descriptors = spark.createDataFrame(
        [(u.location, u.base_file, list(u.log_files)) for u in units], _UNIT_SCHEMA
    )
    target = to_arrow_schema(schema, timezone="UTC")
    out_schema = schema
    if with_location:
        out_schema = StructType([*schema.fields, StructField(LOCATION_COLUMN, StringType(), True)])
    body = functools.partial(
        _merge_in_worker,
        table.path,
        tables.worker_options(table.path, table.options),
        instant,
        target,
        with_location,
        narrowed,
    )
    return map_in_arrow(descriptors, body, out_schema)


def map_in_arrow(
    df: DataFrame,
    func: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
    schema: StructType,
) -> DataFrame:
    """``df.mapInArrow(func, schema)``, also where pandas is not installed.

    PySpark's public ``mapInArrow`` insists on pandas on the driver although
    the Arrow map runs without it. Without pandas, on a classic (non-Connect)
    session, the same plan is built from PySpark's own UDF class with the
    Arrow map evaluation type; Python workers run it exactly the same way.
    """
    try:
        return df.mapInArrow(func, schema)
    except ImportError:  # PySpark's check for pandas on the driver
        jdf = getattr(df, "_jdf", None)
        if jdf is None:  # Spark Connect: nothing to fall back to
            raise
    from pyspark.rdd import PythonEvalType
    from pyspark.sql import DataFrame as SparkDataFrame
    from pyspark.sql.udf import UserDefinedFunction

    udf = UserDefinedFunction(
        func, returnType=schema, evalType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF
    )
    column = udf(*[df[name] for name in df.columns])
    return SparkDataFrame(jdf.mapInArrow(column._jc, False, None), df.sparkSession)


def read_units(
    spark: SparkSession,
    table: TableRef,
    units: Sequence[ReadUnit],
    instant: str | None,
    with_location: bool,
    columns: Sequence[str] | None = None,
) -> DataFrame:
    """Return the rows of ``units`` as of ``instant`` (latest when ``None``) as a DataFrame.

    With ``columns``, only those columns (in that order): base files are
    scanned for them alone and hudi-rs merges only them (and what merging
    needs) in the tasks.

    Raises:
        InstantNotFoundError: ``instant`` is not a completed instant.
        ColumnNotFoundError: a name in ``columns`` is not a column of the table.
    """
    ht = tables.open_ref(table)
    chosen = timeline.resolve(timeline.completed_data_instants(ht), instant, table.path)
    as_of = chosen.timestamp if chosen is not None else None
    arrow_schema = project(tables.read_schema(ht), columns)

    sample = sample_base_file(units)
    if sample is None and not units and as_of is not None:
        slices = ht.get_file_slices(tables.as_of(as_of))
        names = [s.base_file_relative_path() for s in slices if is_parquet(s.base_file_name or "")]
        sample = max(names, key=lambda n: n.rsplit("_", 1)[-1]) if names else None
    schema = spark_schema(spark, table.path, arrow_schema, sample)

    if not units:
        from pyspark.sql.types import StringType, StructField, StructType

        empty_schema = schema
        if with_location:
            empty_schema = StructType(
                [*schema.fields, StructField(LOCATION_COLUMN, StringType(), True)]
            )
        return spark.createDataFrame([], empty_schema)

    base_only = [u for u in units if is_parquet(u.base_file) and not u.log_files]
    merged = [u for u in units if u.log_files or not is_parquet(u.base_file)]
    parts: list[DataFrame] = []
    if base_only:
        parts.append(_read_base_files(spark, table.path, schema, base_only, with_location))
    if merged:
        parts.append(
            _read_merged(spark, table, as_of, schema, merged, with_location, columns is not None)
        )
    result = parts[0]
    for part in parts[1:]:
        result = result.unionByName(part)
    return result
