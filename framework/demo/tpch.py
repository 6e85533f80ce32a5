"""TPC-H lineitem data and the table layouts the demo and benchmarks use.

``tpchgen-cli`` (a PyPI package) writes lineitem as Parquet in seconds. The
**interleaved** layout is the skeleton's: rows in ``l_orderkey`` order cut
into ``runs`` runs of (nearly) equal row count, whole orders kept together,
run ``i`` in file group ``i mod groups``. Every file group then holds
``runs / groups`` separate key ranges, so min/max statistics select almost
every group for a point lookup, while the key -> location mapping is constant
over each run — Sieve's home ground.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

RUN_COLUMN = "run"
BUCKET_COLUMN = "bucket"


def tpchgen_program() -> str:
    """The `tpchgen-cli` program: on PATH, or beside this interpreter."""
    found = shutil.which("tpchgen-cli")
    if found:
        return found
    candidate = Path(sys.executable).with_name("tpchgen-cli")
    if candidate.exists():
        return str(candidate)
    from lakesieve.errors import LakesieveError

    raise LakesieveError("tpchgen-cli is not installed; run: pip install tpchgen-cli")


def generate_lineitem(scale: float, out_dir: str | Path) -> Path:
    """Generate lineitem at scale factor ``scale`` as Parquet; reuse an existing file.

    Returns the path of ``lineitem.parquet``.
    """
    out = Path(out_dir)
    target = out / "lineitem.parquet"
    if target.exists() and target.stat().st_size > 0:
        return target
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            tpchgen_program(),
            "parquet",
            "-s",
            str(scale),
            "--tables=lineitem",
            f"--output-dir={out}",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return target


def with_interleaved_buckets(
    df: DataFrame, runs: int = 1024, groups: int = 64, key: str = "l_orderkey"
) -> DataFrame:
    """Add ``run`` and ``bucket`` columns: key order cut into ``runs`` equal runs, ``bucket = run mod groups``.

    Runs are cut on whole keys (all lines of an order share a run) by the
    exact cumulative row count over distinct keys, computed in Spark without
    gathering the keys in one task: the distinct keys are split into key
    ranges at approximate quantiles (a handful of cut values reach the
    driver), each range's row total is collected (one number per range),
    and a window per range adds the rows of the ranges before it.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.types import DateType, TimestampType

    spark = df.sparkSession
    per_key = df.groupBy(key).agg(F.count(F.lit(1)).alias("_n"))
    dtype = df.schema[key].dataType
    if isinstance(dtype, DateType | TimestampType):
        order = F.datediff(F.col(key).cast("date"), F.lit("1970-01-01").cast("date")).cast("double")
    else:
        order = F.col(key).cast("double")
    ranges = max(1, int(spark.conf.get("spark.sql.shuffle.partitions") or 1))
    with_order = per_key.withColumn("_o", order).persist()  # read by three jobs below
    cuts = (
        sorted(set(with_order.approxQuantile("_o", [i / ranges for i in range(1, ranges)], 0.001)))
        if ranges > 1
        else []
    )
    range_id = F.lit(0)
    for c in cuts:
        range_id = range_id + (F.col("_o") >= F.lit(c)).cast("int")
    ranged = with_order.withColumn(
        "_r", F.coalesce(range_id, F.lit(0)).cast("int")
    )  # null keys sort first
    totals = {
        int(r["_r"]): int(r["_t"])
        for r in ranged.groupBy("_r").agg(F.sum("_n").alias("_t")).collect()
    }
    offsets, acc = [], 0
    for rid in sorted(totals):
        offsets.append((rid, acc))
        acc += totals[rid]
    total = max(acc, 1)  # rows in df
    off_df = spark.createDataFrame(offsets or [(0, 0)], "_r int, _off bigint")
    w = Window.partitionBy("_r").orderBy(key).rowsBetween(Window.unboundedPreceding, -1)
    starts = ranged.join(F.broadcast(off_df), on="_r").withColumn(
        "_before", F.col("_off") + F.coalesce(F.sum("_n").over(w), F.lit(0))
    )
    runs_of_keys = starts.select(
        key,
        F.least(F.floor(F.col("_before") * F.lit(runs) / F.lit(total)), F.lit(runs - 1))
        .cast("int")
        .alias(RUN_COLUMN),
    ).localCheckpoint(eager=True)  # materialized (one row per key) so the cached keys can go
    with_order.unpersist()
    rk = runs_of_keys.withColumnRenamed(key, "_k")
    out = df.join(rk, df[key].eqNullSafe(rk["_k"]), how="inner").drop(
        "_k"
    )  # null-safe: rows with a null key kept
    return out.withColumn(BUCKET_COLUMN, (F.col(RUN_COLUMN) % F.lit(groups)).cast("int"))


def write_interleaved_hudi(
    spark: SparkSession,
    source: str | Path,
    table_path: str | Path,
    runs: int = 1024,
    groups: int = 64,
    commits: int = 16,
    progress: bool = False,
) -> list[str]:
    """Write lineitem in the interleaved layout as ``commits`` bucketed Hudi commits.

    Commit ``c`` holds runs ``[c * runs/commits, (c+1) * runs/commits)``.
    Returns the instants written.
    """
    from lakesieve.model import WriteOptions
    from lakesieve.table import write
    from pyspark.sql import functions as F

    base = with_interleaved_buckets(spark.read.parquet(str(source)), runs, groups).cache()
    per_commit = max(1, runs // commits)
    instants = []
    options = WriteOptions(
        mode="insert",
        record_key=("l_orderkey", "l_linenumber"),
        file_groups=groups,
        bucket_column=BUCKET_COLUMN,
        table_name="lineitem",
        small_file_limit_bytes=0,
    )
    for c in range(commits):
        lo, hi = c * per_commit, (c + 1) * per_commit if c < commits - 1 else runs
        part = base.where((F.col(RUN_COLUMN) >= lo) & (F.col(RUN_COLUMN) < hi)).drop(RUN_COLUMN)
        inst = write(table_path, part, format="hudi", options=options, spark=spark)
        instants.append(inst.id)
        if progress:
            print(
                f"  commit {c + 1}/{commits}: runs {lo}-{hi - 1} -> instant {inst.id}",
                file=sys.stderr,
            )
    base.unpersist()
    return instants


#: The four layouts of the full benchmark, in report order.
LAYOUTS = ("sorted", "interleaved", "hashed", "shipdate")

#: What each layout is, in one line (printed in reports).
LAYOUT_DESCRIPTIONS = {
    "sorted": "l_orderkey order cut into one contiguous key range per location",
    "interleaved": "l_orderkey order cut into 1024 runs, run i in location i mod 64 (16 key ranges per location)",
    "hashed": "rows spread over the locations by pmod(xxhash64(l_orderkey), 64)",
    "shipdate": "l_shipdate order cut into one contiguous date range per location",
}


def with_layout(df: DataFrame, layout: str, groups: int = 64, runs: int = 1024) -> DataFrame:
    """Add the ``bucket`` column (0 .. ``groups - 1``) that places each row of ``df`` in ``layout``.

    - ``sorted``: ``l_orderkey`` order cut into ``groups`` runs of equal row count, run i in bucket i;
    - ``interleaved``: ``runs`` runs, run i in bucket ``i mod groups`` (see :func:`with_interleaved_buckets`);
    - ``hashed``: ``pmod(xxhash64(l_orderkey), groups)``;
    - ``shipdate``: like ``sorted`` but on ``l_shipdate`` (whole dates kept in one bucket).

    Writing the result with ``bucket_column="bucket"`` and ``file_groups=groups``
    gives one location per bucket in every format.

    Raises:
        LakesieveError: an unknown layout name or a bad count.
    """
    from lakesieve.errors import LakesieveError
    from pyspark.sql import functions as F

    if layout not in LAYOUTS:
        raise LakesieveError(f"unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
    if groups < 1 or runs < groups:
        raise LakesieveError(
            f"layout {layout!r} needs groups >= 1 and runs >= groups, got {groups} and {runs}"
        )
    if layout == "hashed":
        return df.withColumn(
            BUCKET_COLUMN, F.pmod(F.xxhash64("l_orderkey"), F.lit(groups)).cast("int")
        )
    if layout == "interleaved":
        return with_interleaved_buckets(df, runs=runs, groups=groups).drop(RUN_COLUMN)
    key = "l_shipdate" if layout == "shipdate" else "l_orderkey"
    return with_interleaved_buckets(df, runs=groups, groups=groups, key=key).drop(RUN_COLUMN)
