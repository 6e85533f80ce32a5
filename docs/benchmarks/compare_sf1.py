"""Reproduce issue 3's SF1 comparisons: four index types on the interleaved, sorted and hashed Hudi layouts.

Run from the repository root after ``lakesieve bench --suite skeleton --scale 1 --workdir bench-data``
(which writes ``bench-data/tpch-sf1.0`` and ``bench-data/lineitem_hudi_sf1.0``).
"""

import json
import os
import sys
import time

import lakesieve
from lakesieve.measure.compare import compare_indexes, format_table
from lakesieve.measure.compare_report import write_html
from lakesieve.model import WriteOptions
from pyspark.sql import functions as F

spark = lakesieve.get_spark()
src = "bench-data/tpch-sf1.0/lineitem.parquet"
out = "bench-data/compare"


def run(name: str, path: str) -> None:
    """Compare the index types on ``l_orderkey`` of one table; write JSON and HTML."""
    t = time.perf_counter()
    res = compare_indexes(
        lakesieve.open(path),
        "l_orderkey",
        queries=100,
        seed=42,
        spark=spark,
        progress=lambda m: print(m, file=sys.stderr, flush=True),
    )
    res["wall_seconds"] = round(time.perf_counter() - t, 1)
    with open(f"{out}/{name}.json", "w") as fh:
        json.dump(res, fh, indent=1, default=str)
    write_html(res, f"{out}/{name}.html")
    print(f"=== {name} ({res['wall_seconds']}s)\n" + format_table(res), flush=True)


os.makedirs(out, exist_ok=True)
run("interleaved", "bench-data/lineitem_hudi_sf1.0")
if not os.path.exists("bench-data/lineitem_sorted/.hoodie"):
    t = time.perf_counter()
    lakesieve.write(
        "bench-data/lineitem_sorted",
        spark.read.parquet(src),
        format="hudi",
        options=WriteOptions(
            mode="bulk_insert",
            record_key=("l_orderkey", "l_linenumber"),
            file_groups=64,
            table_name="lineitem",
        ),
        spark=spark,
    )
    print("sorted write", round(time.perf_counter() - t, 1), flush=True)
run("sorted", "bench-data/lineitem_sorted")
if not os.path.exists("bench-data/lineitem_hashed/.hoodie"):
    t = time.perf_counter()
    df = spark.read.parquet(src).withColumn(
        "bucket", F.pmod(F.xxhash64("l_orderkey"), F.lit(64)).cast("int")
    )
    lakesieve.write(
        "bench-data/lineitem_hashed",
        df,
        format="hudi",
        options=WriteOptions(
            mode="insert",
            record_key=("l_orderkey", "l_linenumber"),
            file_groups=64,
            bucket_column="bucket",
            table_name="lineitem",
            small_file_limit_bytes=0,
        ),
        spark=spark,
    )
    print("hashed write", round(time.perf_counter() - t, 1), flush=True)
run("hashed", "bench-data/lineitem_hashed")
print("ALL DONE", flush=True)
