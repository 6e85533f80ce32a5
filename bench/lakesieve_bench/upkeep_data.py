"""Tables, upserts and queries of the index upkeep bench (:mod:`lakesieve_bench.index_upkeep`).

The tables are a copy of an existing Hudi table (the interleaved TPC-H SF1
one) and a table of shuffled int64 keys written by lakesieve's own writer;
each upsert is one commit changing 1% of the rows; the queries are point
and range predicates on the key, and :func:`compare` sets an upkept index's
selections against a fresh build's and against the true locations.
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lakesieve_bench.timeline import upsert_orders

#: How :func:`shuffled_key` maps a row number to a key: its 64-bit hash
#: (``hash``, the default) or ``(n * LATTICE_MULTIPLIER) mod 2**32`` (``lattice``,
#: a bijection, since the multiplier is odd: distinct keys whose residues follow a
#: lattice, which the Sieve partly exploits).
KEY_KINDS = ("hash", "lattice")
LATTICE_MULTIPLIER = 2_654_435_761

SF1_RECORD_KEY = ("l_orderkey", "l_linenumber")

#: An upsert: ``(spark, table) -> figures``; the figures may name ``changed_keys``
#: (keys the commit wrote), which the point queries then include.
Upsert = Callable[[Any, Any], dict[str, Any]]


# ---------------------------------------------------------------- tables


def copy_table(source: str | Path, dest: Path) -> Path:
    """A copy of the table at ``source`` without its indexes (``.lakesieve``), replacing ``dest``."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns(".lakesieve"))
    return dest


def shuffled_key(row: Any, kind: str = "hash") -> Any:
    """The shuffled key of row number ``row`` (a Spark column), of a kind of :data:`KEY_KINDS`.

    ``hash``: the row number's 64-bit hash shifted to >= 0, keys spread
    uniformly over ``[0, 2**63)`` with no order or structure, so bucketing on
    them sends each key to a random file group (two of a million rows share
    a hash with odds of about 1e-7). ``lattice``: ``(n * 2654435761) mod 2**32``,
    distinct keys in shuffled order whose file groups (``key mod groups``)
    repeat along a lattice: which keys share a block, and how well a block's
    locations compress, then depend on the block width.
    """
    from pyspark.sql import functions as F

    n = row.cast("long")
    if kind == "lattice":
        return ((n * F.lit(LATTICE_MULTIPLIER)) % F.lit(2**32)).cast("long")
    if kind != "hash":
        raise ValueError(f"unknown key kind {kind!r} (one of {', '.join(KEY_KINDS)})")
    return F.shiftrightunsigned(F.xxhash64(n), 1)


def write_shuffled(
    spark: Any, path: Path, rows: int, file_groups: int = 64, keys: str = "hash"
) -> Path:
    """A Hudi table of ``rows`` shuffled int64 keys ``id`` in ``file_groups`` groups bucketed on ``id``."""
    from lakesieve.model import WriteOptions
    from lakesieve.table import write
    from pyspark.sql import functions as F

    if path.exists():
        shutil.rmtree(path)
    frame = spark.range(rows).select(
        shuffled_key(F.col("id"), keys).alias("id"),
        (F.col("id") % 1000).cast("double").alias("amount"),
        F.concat(F.lit("tag-"), (F.col("id") % 97).cast("string")).alias("tag"),
    )
    options = WriteOptions(
        mode="bulk_insert",
        record_key=("id",),
        file_groups=file_groups,
        bucket_column="id",
        table_name="shuffled",
    )
    write(path, frame, format="hudi", options=options, spark=spark)
    return path


def shuffled_upsert(rows: int, fraction: float, seed: int, keys: str = "hash") -> Upsert:
    """An upsert of ``fraction`` of ``rows``: 2/3 updates of random existing ids, 1/3 new ids.

    ``keys`` is the table's key kind (:func:`shuffled_key`).
    """

    def upsert(spark: Any, table: Any) -> dict[str, Any]:
        from lakesieve.model import WriteOptions
        from lakesieve.table import write
        from pyspark.sql import functions as F

        total = max(3, round(rows * fraction))
        inserts = total // 3
        updates = total - inserts
        rng = random.Random(seed)
        numbers = [(i, True) for i in rng.sample(range(rows), updates)] + [
            (rows + i, False) for i in range(inserts)
        ]
        frame = (
            spark.createDataFrame(numbers, "n long, updated boolean")
            .select(
                shuffled_key(F.col("n"), keys).alias("id"),
                F.when(F.col("updated"), F.lit(-1.0)).otherwise(F.lit(-2.0)).alias("amount"),
                F.when(F.col("updated"), F.lit("updated"))
                .otherwise(F.lit("inserted"))
                .alias("tag"),
            )
            .cache()
        )
        written = {
            flag: [
                int(r[0])
                for r in frame.where(F.col("tag") == flag).select("id").limit(50).collect()
            ]
            for flag in ("updated", "inserted")
        }
        options = WriteOptions(mode="upsert", record_key=("id",), bucket_column="id")
        started = time.perf_counter()
        write(table.path, frame, format="hudi", options=options, spark=spark)
        seconds = time.perf_counter() - started
        frame.unpersist()
        return {
            "write_seconds": round(seconds, 2),
            "rows": len(numbers),
            "updates": updates,
            "inserts": inserts,
            "changed_keys": written["updated"] + written["inserted"],
        }

    return upsert


def sf1_upsert(fraction: float, seed: int) -> Upsert:
    """The timeline suite's upsert: every line of ``fraction`` of the orders, ``l_quantity`` + 1."""

    def upsert(spark: Any, table: Any) -> dict[str, Any]:
        seconds, rows = upsert_orders(spark, table, fraction, seed, "cow")
        return {"write_seconds": round(seconds, 2), "rows": rows}

    return upsert


def sf1_insert_upsert(fraction: float, seed: int, insert_share: float = 1 / 3) -> Upsert:
    """An upsert of ``fraction`` of the orders: ``insert_share`` of them new, the rest updated.

    Updated orders change as the timeline suite's do. The new orders are
    copies of sampled orders' lines under order keys above the table's
    largest (each line keeps its bucket, so its file group), so the commit
    adds keys to the index where the timeline suite's upsert only rewrites
    rows in place. By default a third of the orders are new; issue 54
    measured half.
    """

    def upsert(spark: Any, table: Any) -> dict[str, Any]:
        from lakesieve.model import WriteOptions
        from lakesieve.table import write
        from pyspark.sql import functions as F

        current = table.full_read(spark)
        current = current.select([c for c in current.columns if not c.startswith("_hoodie")])
        top = current.agg(F.max("l_orderkey")).first()
        assert top is not None  # an aggregate without grouping has one row
        offset = int(top[0])
        sampled = [
            int(r[0])
            for r in current.select("l_orderkey")
            .distinct()
            .sample(fraction=fraction, seed=seed)
            .collect()
        ]
        rng = random.Random(seed)
        rng.shuffle(sampled)
        cut = int(len(sampled) * insert_share + 1e-9)  # a third of 3n orders: n, not n - 1
        new_sources = sorted(sampled[:cut])
        updated = sorted(sampled[cut:])
        qty_type = current.schema["l_quantity"].dataType
        changed = current.where(F.col("l_orderkey").isin(updated)).withColumn(
            "l_quantity", (F.col("l_quantity") + F.lit(1)).cast(qty_type)
        )
        inserted = current.where(F.col("l_orderkey").isin(new_sources)).withColumn(
            "l_orderkey", F.col("l_orderkey") + F.lit(offset)
        )
        frame = changed.unionByName(inserted).cache()
        rows = frame.count()
        options = WriteOptions(
            mode="upsert", record_key=SF1_RECORD_KEY, bucket_column="bucket", table_name="lineitem"
        )
        started = time.perf_counter()
        write(table.path, frame, format="hudi", options=options, spark=spark)
        seconds = time.perf_counter() - started
        frame.unpersist()
        return {
            "write_seconds": round(seconds, 2),
            "rows": rows,
            "orders_updated": len(updated),
            "orders_inserted": len(new_sources),
            "changed_keys": updated[:50] + [k + offset for k in new_sources[:50]],
        }

    return upsert


# ---------------------------------------------------------------- queries


def make_queries(
    spark: Any, table: Any, column: str, changed: list[int], points: int, ranges: int, seed: int
) -> list[str]:
    """``points`` point and ``ranges`` range predicates on ``column`` from keys the table holds.

    Half the points (at most) are keys the upsert wrote (``changed``), the rest
    a seeded sample of the table's keys; ranges start at sampled keys, their
    widths from a millionth to a tenth of the key span.
    """
    from pyspark.sql import functions as F

    frame = table.full_read(spark).select(column)
    stats = frame.agg(F.min(column), F.max(column), F.count(F.lit(1))).first()
    assert stats is not None  # an aggregate without grouping has one row
    lo, hi, total = int(stats[0]), int(stats[1]), int(stats[2])
    wanted = points + ranges
    sampled = [
        int(r[0])
        for r in frame.sample(fraction=min(1.0, 8.0 * wanted / max(1, total)), seed=seed)
        .limit(4 * wanted)
        .collect()
    ]
    rng = random.Random(seed)
    rng.shuffle(sampled)
    from_changed = rng.sample(changed, min(len(changed), points // 2))
    n_sampled = points - len(from_changed)
    keys = from_changed + sampled[:n_sampled]
    starts = sampled[n_sampled : n_sampled + ranges] or [lo]
    span = max(1, hi - lo)
    wheres = [f"{column} = {k}" for k in keys]
    for j in range(ranges):
        width = max(1, span // 10 ** (6 - j % 6))
        a = starts[j % len(starts)]
        wheres.append(f"{column} between {a} and {a + width}")
    return wheres


def selections(table: Any, name: str, wheres: list[str]) -> list[frozenset[str]]:
    """The locations index ``name`` selects for each predicate (all visible ones where it cannot answer)."""
    out = []
    for where in wheres:
        plan = table.plan(where)
        item = next(i for i in plan.indexes if i.definition.name == name)
        if item.error:
            raise RuntimeError(f"index {name} unusable: {item.error}")
        visible = frozenset(plan.snapshot.locations)
        out.append(frozenset(item.selected) if item.answered else visible)
    return out


def compare(
    wheres: list[str],
    upkept: list[frozenset[str]],
    fresh: list[frozenset[str]],
    truth: list[frozenset[str]],
) -> dict[str, Any]:
    """How an upkept index's selections relate to a fresh build's (and to the true locations).

    ``truth`` holds the locations that truly hold matching keys (a fresh exact
    index's selections). An approximate index (Sieve, Bloom) may select other
    false positives than a fresh build of it without being wrong: such a
    query counts under ``not_supersets`` only; one whose selection lacks a
    true location counts under ``misses_truth`` too, and is a correctness bug.
    """
    equal = supersets = 0
    problems = []
    for where, a, b, t in zip(wheres, upkept, fresh, truth, strict=True):
        if a == b:
            equal += 1
        elif a > b:
            supersets += 1
        else:
            problems.append(
                {
                    "where": where,
                    "missing": sorted(b - a),
                    "extra": len(a - b),
                    "missing_true_locations": sorted(t - a),
                }
            )
    return {
        "queries": len(wheres),
        "equal": equal,
        "strict_supersets": supersets,
        "not_supersets": len(problems),
        "misses_truth": sum(1 for p in problems if p["missing_true_locations"]),
        "covers_truth": all(t <= a for a, t in zip(upkept, truth, strict=True)),
        "problems": problems,
        "selected_total": sum(len(a) for a in upkept),
        "fresh_selected_total": sum(len(b) for b in fresh),
    }
