"""The seeded query set of the full benchmark, in a form every pruner can read.

Each query is kept both as a ``where`` string (for lakesieve and Spark) and as
inclusive intervals over the column's integer domain (for the ground truth,
the formats' own statistics and the native filter translations). Integer
columns map to themselves; ``date`` columns to days since 1970-01-01 (what
Spark's ``unix_date`` returns). Keys are sampled with Spark; the column is
never collected.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from typing import Any

from lakesieve.errors import LakesieveError

#: Two-sided ranges, as fractions of the key domain [min, max].
RANGE_FRACTIONS = {"range_0.01pct": 0.0001, "range_0.1pct": 0.001, "range_1pct": 0.01}
#: Every query kind, in report order.
KINDS = ("point", "in", *RANGE_FRACTIONS, "range_low", "range_high")
#: Values per IN list.
IN_SIZE = 10
#: Spark types the benchmark can index and query.
SUPPORTED_TYPES = ("bigint", "int", "date")

_EPOCH = dt.date(1970, 1, 1)


def to_domain(value: Any) -> int:
    """A key value as an integer of the column's domain (dates: days since the epoch)."""
    if isinstance(value, dt.datetime):
        raise LakesieveError(f"timestamp keys are not supported by the benchmark: {value!r}")
    if isinstance(value, dt.date):
        return (value - _EPOCH).days
    return int(value)


def from_domain(value: int, spark_type: str) -> Any:
    """The inverse of :func:`to_domain` for a column of ``spark_type``."""
    return _EPOCH + dt.timedelta(days=value) if spark_type == "date" else int(value)


def literal(value: int, spark_type: str) -> str:
    """A SQL literal for a domain value."""
    if spark_type == "date":
        return f"DATE '{from_domain(value, spark_type).isoformat()}'"
    return str(int(value))


@dataclass(frozen=True)
class BenchQuery:
    """One query on one column.

    Attributes:
        kind: one of :data:`KINDS`.
        column: the column queried.
        spark_type: the column's Spark type.
        intervals: inclusive ``(low, high)`` intervals over the integer domain
            whose union is the set of matching keys.
        where: the predicate as lakesieve / Spark SQL text.
    """

    kind: str
    column: str
    spark_type: str
    intervals: tuple[tuple[int, int], ...]
    where: str

    @property
    def values(self) -> tuple[int, ...]:
        """The keys of a point or IN query."""
        return tuple(a for a, _ in self.intervals)


def _point(column: str, spark_type: str, k: int) -> BenchQuery:
    return BenchQuery(
        "point", column, spark_type, ((k, k),), f"{column} = {literal(k, spark_type)}"
    )


def make_queries(
    column: str, spark_type: str, sample: list[int], lo: int, hi: int, n: int, seed: int
) -> dict[str, list[BenchQuery]]:
    """``n`` queries of every kind on ``column``, seeded.

    Points and IN lists use existing keys (``sample``); two-sided ranges cover
    a fraction of the domain ``[lo, hi]``; one-sided ranges (``<=``, ``>=``)
    end near either end of the sampled keys (within their first or last 1%).

    Raises:
        LakesieveError: no sampled key, or a bad count.
    """
    if spark_type not in SUPPORTED_TYPES:
        raise LakesieveError(
            f"column {column!r} has type {spark_type}; the benchmark queries {', '.join(SUPPORTED_TYPES)}"
        )
    if n < 1:
        raise LakesieveError(f"queries per kind must be at least 1, got {n}")
    if not sample:
        raise LakesieveError(f"column {column!r} has no key to query")
    rng = random.Random(f"{seed}:{column}")
    out: dict[str, list[BenchQuery]] = {k: [] for k in KINDS}
    for _ in range(n):
        out["point"].append(_point(column, spark_type, rng.choice(sample)))
        picks = sorted(set(rng.sample(sample, min(IN_SIZE, len(sample)))))
        text = ", ".join(literal(v, spark_type) for v in picks)
        out["in"].append(
            BenchQuery(
                "in", column, spark_type, tuple((v, v) for v in picks), f"{column} IN ({text})"
            )
        )
    for kind, frac in RANGE_FRACTIONS.items():
        width = max(1, round((hi - lo + 1) * frac))
        for _ in range(n):
            a = rng.randint(lo, max(lo, hi - width + 1))
            b = a + width - 1
            where = f"{column} BETWEEN {literal(a, spark_type)} AND {literal(b, spark_type)}"
            out[kind].append(BenchQuery(kind, column, spark_type, ((a, b),), where))
    ordered = sorted(set(sample))
    tail = max(1, len(ordered) // 100)
    for _ in range(n):
        c = ordered[rng.randrange(tail)]
        out["range_low"].append(
            BenchQuery(
                "range_low", column, spark_type, ((lo, c),), f"{column} <= {literal(c, spark_type)}"
            )
        )
        c = ordered[-1 - rng.randrange(tail)]
        out["range_high"].append(
            BenchQuery(
                "range_high",
                column,
                spark_type,
                ((c, hi),),
                f"{column} >= {literal(c, spark_type)}",
            )
        )
    return out


def sample_keys(frame: Any, column: str, want: int, seed: int) -> tuple[list[int], int, int, int]:
    """``(sample, min, max, rows)`` of a column, in the integer domain, computed in Spark.

    At most about ``want`` keys come back to the driver.
    """
    from pyspark.sql import functions as F

    keys = frame.select(F.col(column).alias("k")).where(F.col("k").isNotNull())
    stats = keys.agg(F.count(F.lit(1)), F.min("k"), F.max("k")).first()
    rows = int(stats[0])
    if rows == 0:
        raise LakesieveError(f"column {column!r} has no non-null value to query")
    fraction = min(1.0, 2.0 * want / rows)
    sample = [
        to_domain(r[0]) for r in keys.sample(fraction=fraction, seed=seed).limit(want).collect()
    ]
    if not sample:
        sample = [to_domain(r[0]) for r in keys.limit(want).collect()]
    return sample, to_domain(stats[1]), to_domain(stats[2]), rows
