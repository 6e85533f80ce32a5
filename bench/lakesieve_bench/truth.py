"""The ground truth of the full benchmark: which locations really hold a match of each query.

Computed in Spark from the table's (key, location) relation, never from an
index: the distinct (key, location) pairs are joined with the queries'
intervals cut into fixed-width bins of the integer key domain (one bin width
per column, the narrowest two-sided range), so the join stays an equi-join
and only the (query, location) pairs that match come back to the driver.
"""

from __future__ import annotations

from typing import Any

from lakesieve_bench.queries import BenchQuery


def _bins(queries: list[BenchQuery], width: int) -> list[tuple[int, int, int, int]]:
    rows = []
    for qid, q in enumerate(queries):
        for a, b in q.intervals:
            for bin_ in range(a // width, b // width + 1):
                rows.append((qid, bin_, a, b))
    return rows


def true_locations(
    spark: Any, relation: Any, column: str, spark_type: str, queries: list[BenchQuery], width: int
) -> list[frozenset[str]]:
    """Per query, the locations holding at least one row that matches it.

    ``relation`` has the column ``column`` and ``location``; ``width`` is the
    bin width in domain units (the narrowest range's width is a good choice).
    """
    from lakesieve.model import LOCATION_COLUMN
    from pyspark.sql import functions as F

    width = max(1, int(width))
    key = F.unix_date(F.col(column)) if spark_type == "date" else F.col(column).cast("long")
    pairs = (
        relation.select(key.alias("k"), F.col(LOCATION_COLUMN).alias("location"))
        .where(F.col("k").isNotNull())
        .distinct()
        .withColumn("bin", F.floor(F.col("k") / F.lit(width)).cast("long"))
    )
    rows = _bins(queries, width)
    found: list[set[str]] = [set() for _ in queries]
    if not rows:
        return [frozenset(s) for s in found]
    qbins = spark.createDataFrame(rows, "q int, bin long, a long, b long")
    hits = (
        pairs.join(F.broadcast(qbins), "bin")
        .where((F.col("k") >= F.col("a")) & (F.col("k") <= F.col("b")))
        .select("q", "location")
        .distinct()
    )
    for r in hits.toLocalIterator():
        found[int(r[0])].add(str(r[1]))
    return [frozenset(s) for s in found]
