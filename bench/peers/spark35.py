"""The peers' side of ``bench/peers/run``: Hudi, Delta and Iceberg through their own Spark bundles.

Runs in the peers' own environment (pyspark 3.5 with the three bundles; see
``bench/peers/run``), never in lakesieve's: no peer ships a bundle for Spark
4.3. Subcommands (each prints one JSON object on its last line):

- ``write``: write a layout's Parquet rows as a Hudi, Delta or Iceberg table
  with that format's own Spark writer, skipping switched on as its docs say;
- ``query``: run the benchmark's queries through the format's own Spark
  reader, with its data skipping on, and read how many files the scan read
  from the engine's own scan metrics;
- ``upsert``: upsert the given rows (1% of the table) with the format's own
  writer and time the commit (which keeps the format's statistics in step);
- ``fixtures``: write the small Hudi conformance tables (COW, MOR with log
  files, compacted, clustered) and the rows Hudi's own reader returns.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

#: The record key of every benchmark table (unique; ``l_orderkey * 8 + l_linenumber``).
KEY = "l_key"


def session(jars: list[str], warehouse: str, memory: str, shuffle: str) -> SparkSession:
    """A local Spark 3.5 session with the three bundles and their SQL extensions."""
    return (
        SparkSession.builder.master("local[2]")
        .appName("lakesieve-peers")
        .config("spark.jars", ",".join(jars))
        .config("spark.driver.memory", memory)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", shuffle)
        .config("spark.ui.showConsoleProgress", "false")
        # one Spark partition per output file: AQE would coalesce them
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
        .config("spark.kryo.registrator", "org.apache.spark.HoodieSparkKryoRegistrar")
        .config(
            "spark.sql.extensions",
            "org.apache.spark.sql.hudi.HoodieSparkSessionExtension,"
            "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions,"
            "io.delta.sql.DeltaSparkSessionExtension",
        )
        .config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        )
        .config("spark.sql.catalog.ice", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.ice.type", "hadoop")
        .config("spark.sql.catalog.ice.warehouse", warehouse)
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )


# ---------------------------------------------------------------- Hudi options


def hudi_write_options(
    name: str, operation: str, table_type: str = "COPY_ON_WRITE"
) -> dict[str, str]:
    """Hudi's writer options with its data skipping switched on, as Hudi's docs recommend.

    The metadata table with column statistics (every column), the
    record-level index and bloom filters; one file per Spark partition for a
    bulk insert (sort mode ``NONE``), so the layout the rows come in is kept.
    """
    return {
        "hoodie.table.name": name,
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.operation": operation,
        "hoodie.datasource.write.recordkey.field": KEY,
        "hoodie.datasource.write.precombine.field": KEY,
        "hoodie.datasource.write.partitionpath.field": "",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
        "hoodie.bulkinsert.sort.mode": "NONE",
        "hoodie.parquet.small.file.limit": "0",
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.index.column.stats.enable": "true",
        "hoodie.metadata.record.index.enable": "true",
        "hoodie.metadata.index.bloom.filter.enable": "true",
        "hoodie.index.type": "RECORD_INDEX",
    }


#: Hudi's reader options: data skipping over the metadata table's indexes.
HUDI_READ_OPTIONS = {
    "hoodie.metadata.enable": "true",
    "hoodie.enable.data.skipping": "true",
    "hoodie.metadata.record.index.enable": "true",
    "hoodie.metadata.index.column.stats.enable": "true",
}


# ---------------------------------------------------------------- write


def _ice_name(path: str) -> str:
    return "ice.b." + Path(path).name


def read_table(spark: SparkSession, fmt: str, path: str) -> DataFrame:
    """The table through its format's own Spark reader, skipping on (a fresh plan each call)."""
    if fmt == "hudi":
        return spark.read.format("hudi").options(**HUDI_READ_OPTIONS).load(path)
    if fmt == "delta":
        return spark.read.format("delta").load(path)
    spark.catalog.refreshTable(_ice_name(path))
    return spark.table(_ice_name(path))


def write(spark: SparkSession, fmt: str, source: str, path: str) -> dict[str, Any]:
    """Write ``source`` (Parquet with a ``_part`` column) as one table: one file per ``_part``.

    ``_part`` values hash to distinct Spark partitions (chosen by the caller),
    so ``repartition(64, _part)`` puts each location's rows in one task and
    each writer writes one file per task.
    """
    rows = spark.read.parquet(source)
    parts = rows.select("_part").distinct().count()
    frame = rows.repartition(parts, "_part").sortWithinPartitions(KEY).drop("_part")
    started = time.perf_counter()
    if fmt == "hudi":
        opts = hudi_write_options(Path(path).name, "bulk_insert")
        frame.write.format("hudi").options(**opts).mode("overwrite").save(path)
    elif fmt == "delta":
        frame.write.format("delta").mode("overwrite").save(path)
    else:
        spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.b")
        spark.sql(f"DROP TABLE IF EXISTS {_ice_name(path)}")
        frame.writeTo(_ice_name(path)).tableProperty("write.distribution-mode", "none").create()
    seconds = time.perf_counter() - started
    return {
        "format": fmt,
        "path": path,
        "write_seconds": seconds,
        "metadata_bytes": metadata_bytes(fmt, path),
    }


def metadata_bytes(fmt: str, path: str) -> int:
    """Bytes of what the format keeps for skipping: Hudi's metadata table, Delta's log, Iceberg's metadata."""
    sub = {"hudi": ".hoodie/metadata", "delta": "_delta_log", "iceberg": "metadata"}[fmt]
    root = Path(path) / sub
    return sum(
        p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.name.endswith(".crc")
    )


# ---------------------------------------------------------------- query


def _scan_metrics(frame: DataFrame) -> dict[str, int]:
    """Files and bytes the executed plan's scan nodes read, from Spark's own SQL metrics.

    File scans (Hudi, Delta) report ``numFiles`` and ``filesSize``; Iceberg's
    batch scan reports ``resultDataFiles`` (and ``resultDeleteFiles``) and
    ``totalFileSize``.
    """
    plan = frame._jdf.queryExecution().executedPlan()  # the engine's own metrics
    leaves = plan.collectLeaves()
    files = size = 0
    seen: list[str] = []
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        metrics = leaf.metrics()
        seen.append(leaf.nodeName())
        names = metrics.keySet().iterator()
        while names.hasNext():
            name = str(names.next())
            value = int(metrics.apply(name).value())
            if name in ("numFiles", "resultDataFiles", "resultDeleteFiles"):
                files += value
            elif name == "filesSize" or (
                "filesize" in name.lower() and "delete" not in name.lower()
            ):  # Iceberg: its total data file size metric
                size += value
    return {"files": files, "bytes": size, "nodes": len(seen)}


def digest(keys: list[int]) -> str:
    """The answer's fingerprint: its record keys, sorted."""
    return hashlib.sha1(",".join(map(str, sorted(keys))).encode()).hexdigest()


def query(
    spark: SparkSession, fmt: str, path: str, queries: dict[str, str], reps: int
) -> dict[str, Any]:
    """Every query ``reps`` times through the format's own reader; files and bytes from the scan metrics."""
    total = _scan_metrics_of(read_table(spark, fmt, path))
    out: dict[str, Any] = {
        "files_total": total["files"],
        "bytes_total": total["bytes"],
        "queries": {},
    }
    for name, where in queries.items():
        times = []
        metrics: dict[str, int] = {}
        keys: list[int] = []
        for _ in range(reps):
            frame = read_table(spark, fmt, path).where(where)
            started = time.perf_counter()
            rows = frame.collect()
            times.append(time.perf_counter() - started)
            metrics = _scan_metrics(frame)
            keys = [int(r[KEY]) for r in rows]
        out["queries"][name] = {
            "files_read": metrics["files"],
            "bytes_read": metrics["bytes"],
            "seconds": statistics.median(times),
            "rows": len(keys),
            "digest": digest(keys),
        }
    return out


def _scan_metrics_of(frame: DataFrame) -> dict[str, int]:
    """The scan metrics of a read of every row (an aggregate no format answers from metadata)."""
    whole = frame.select(F.sum(F.xxhash64(KEY)))
    whole.collect()
    return _scan_metrics(whole)


# ---------------------------------------------------------------- upsert


def upsert(spark: SparkSession, fmt: str, path: str, source: str) -> dict[str, Any]:
    """Upsert the rows of ``source`` (same schema, existing keys) with the format's own writer."""
    rows = spark.read.parquet(source).drop("_part").cache()
    rows.count()
    started = time.perf_counter()
    if fmt == "hudi":
        opts = hudi_write_options(Path(path).name, "upsert")
        rows.write.format("hudi").options(**opts).mode("append").save(path)
    elif fmt == "delta":
        rows.createOrReplaceTempView("peers_upsert")
        spark.sql(
            f"MERGE INTO delta.`{path}` t USING peers_upsert s ON t.{KEY} = s.{KEY} "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
    else:
        rows.createOrReplaceTempView("peers_upsert")
        spark.sql(
            f"MERGE INTO {_ice_name(path)} t USING peers_upsert s ON t.{KEY} = s.{KEY} "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
    seconds = time.perf_counter() - started
    rows.unpersist()
    return {
        "format": fmt,
        "path": path,
        "upsert_seconds": seconds,
        "metadata_bytes": metadata_bytes(fmt, path),
    }


# ---------------------------------------------------------------- fixtures


def _fixture_rows(spark: SparkSession, lo: int, hi: int, version: int) -> DataFrame:
    """Rows ``id`` in ``[lo, hi)``: a few column types, values that change with ``version``."""
    return spark.range(lo, hi).select(
        F.col("id").cast("bigint").alias("id"),
        F.concat(F.lit("name-"), F.col("id").cast("string"), F.lit(f"-v{version}")).alias("name"),
        ((F.col("id") * 7919) % 1000).cast("int").alias("score"),
        (F.col("id") / F.lit(4.0) + F.lit(version)).cast("double").alias("amount"),
        F.date_add(F.lit("2024-01-01").cast("date"), (F.col("id") % 90).cast("int")).alias("day"),
        F.when(F.col("id") % 3 == 0, F.lit("east")).otherwise(F.lit("west")).alias("region"),
        F.lit(version).cast("int").alias("version"),
    )


def _fixture_options(
    name: str, table_type: str, operation: str, extra: dict[str, str]
) -> dict[str, str]:
    opts = {
        "hoodie.table.name": name,
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.operation": operation,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "version",
        "hoodie.datasource.write.partitionpath.field": "region",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.index.column.stats.enable": "true",
        "hoodie.metadata.record.index.enable": "true",
        "hoodie.index.type": "RECORD_INDEX",
        # small tables: small bloom filters and few file groups
        "hoodie.index.bloom.num_entries": "200",
        "hoodie.metadata.record.index.min.filegroup.count": "1",
        "hoodie.metadata.record.index.max.filegroup.count": "1",
        "hoodie.parquet.small.file.limit": "0",
        "hoodie.upsert.shuffle.parallelism": "2",
        "hoodie.insert.shuffle.parallelism": "2",
        "hoodie.bulkinsert.shuffle.parallelism": "2",
        "hoodie.compact.inline": "false",
        "hoodie.clustering.inline": "false",
        "hoodie.clean.automatic": "false",
        "hoodie.archive.automatic": "false",
        "hoodie.keep.min.commits": "20",
        "hoodie.keep.max.commits": "30",
        "hoodie.cleaner.commits.retained": "10",
    }
    opts.update(extra)
    return opts


def fixtures(spark: SparkSession, out: str, writer: str) -> dict[str, Any]:
    """Write the Hudi conformance tables as ``out/<name>.zip`` with what Hudi's own reader returns.

    Beside each zip, ``<name>.expected.json`` holds the rows (data columns
    and ``_hoodie_record_key``) that ``spark.read.format("hudi")`` returns at
    the latest instant, sorted by ``id``, and ``writer`` (the pins).
    """
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="hudi-spark-fixtures-"))
    plans: dict[str, tuple[str, list[tuple[str, int, int, dict[str, str]]]]] = {
        # (operation, lo, hi, extra options) per commit
        "cow": (
            "COPY_ON_WRITE",
            [
                ("insert", 0, 200, {}),
                ("upsert", 150, 260, {}),
                ("delete", 20, 40, {}),
            ],
        ),
        "mor_logs": (
            "MERGE_ON_READ",
            [
                ("insert", 0, 200, {}),
                ("upsert", 100, 240, {}),
                ("delete", 0, 15, {}),
                ("upsert", 230, 300, {}),
            ],
        ),
        "mor_compacted": (
            "MERGE_ON_READ",
            [
                ("insert", 0, 200, {}),
                ("upsert", 50, 150, {}),
                (
                    "upsert",
                    120,
                    220,
                    {
                        "hoodie.compact.inline": "true",
                        "hoodie.compact.inline.max.delta.commits": "1",
                    },
                ),
                ("upsert", 210, 250, {}),
            ],
        ),
        "cow_clustered": (
            "COPY_ON_WRITE",
            [
                ("insert", 0, 80, {}),
                ("insert", 80, 160, {}),
                ("insert", 160, 240, {}),
                (
                    "upsert",
                    60,
                    100,
                    {
                        "hoodie.clustering.inline": "true",
                        "hoodie.clustering.inline.max.commits": "1",
                        "hoodie.clustering.plan.strategy.sort.columns": "id",
                        "hoodie.clustering.plan.strategy.small.file.limit": "10485760",
                        "hoodie.clustering.plan.strategy.target.file.max.bytes": "10485760",
                    },
                ),
            ],
        ),
    }
    made: dict[str, Any] = {}
    for name, (table_type, commits) in plans.items():
        path = str(work / name)
        for version, (operation, lo, hi, extra) in enumerate(commits, start=1):
            rows = _fixture_rows(spark, lo, hi, version)
            opts = _fixture_options(name, table_type, operation, extra)
            rows.write.format("hudi").options(**opts).mode("append").save(path)
        frame = spark.read.format("hudi").options(**HUDI_READ_OPTIONS).load(path)
        columns = [
            "_hoodie_record_key",
            "id",
            "name",
            "score",
            "amount",
            "day",
            "region",
            "version",
        ]
        got = [
            {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in r.asDict().items()}
            for r in frame.select(*columns).orderBy("id").collect()
        ]
        expected = {
            "table": name,
            "table_type": table_type,
            "writer": writer,
            "columns": columns,
            "rows": got,
        }
        (root / f"{name}.expected.json").write_text(json.dumps(expected, indent=0) + "\n")
        _zip_table(work / name, root / f"{name}.zip")
        made[name] = len(got)
    shutil.rmtree(work)
    return {"tables": made}


def _zip_table(table: Path, target: Path) -> None:
    """Zip a table folder (``<name>/...`` inside the zip), files in a fixed order."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for path in sorted(p for p in table.rglob("*") if p.is_file()):
            zf.write(path, str(path.relative_to(table.parent)))


# ---------------------------------------------------------------- main


def main() -> None:
    """Parse the subcommand and print its JSON result on the last line."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("command", choices=["write", "query", "upsert", "fixtures"])
    p.add_argument("--jars", required=True, help="comma-separated bundle jars")
    p.add_argument("--warehouse", default="/tmp/lakesieve-peers-warehouse")
    p.add_argument("--memory", default="3g")
    p.add_argument("--pins", default="", help="the pinned versions, recorded with the fixtures")
    p.add_argument("--spec", help="JSON file: the list of tasks of this command")
    p.add_argument(
        "--out", required=True, help="result JSON (write/query/upsert) or folder (fixtures)"
    )
    args = p.parse_args()
    shuffle = "2" if args.command == "fixtures" else "64"
    spark = session(args.jars.split(","), args.warehouse, args.memory, shuffle)
    spark.sparkContext.setLogLevel("ERROR")
    result: Any
    if args.command == "fixtures":
        result = fixtures(spark, args.out, args.pins)
    else:
        tasks = json.loads(Path(args.spec).read_text())
        result = []
        for task in tasks:
            t0 = time.perf_counter()
            if args.command == "write":
                result.append(write(spark, task["format"], task["source"], task["path"]))
            elif args.command == "query":
                got = query(spark, task["format"], task["path"], task["queries"], task["reps"])
                result.append({**task, **got})
            else:
                result.append(upsert(spark, task["format"], task["path"], task["source"]))
            print(
                f"  {args.command} {task['format']} {Path(task['path']).name}: {time.perf_counter() - t0:.1f}s",
                file=sys.stderr,
                flush=True,
            )
        Path(args.out).write_text(json.dumps(result, indent=1))
    spark.stop()
    print(json.dumps({"ok": True, "command": args.command}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
