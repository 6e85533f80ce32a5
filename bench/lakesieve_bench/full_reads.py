"""Timed reads of the full suite: Spark reads of a file selection, driver-side Arrow reads, buckets."""

from __future__ import annotations

import dataclasses
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from lakesieve_bench.queries import BenchQuery


def local_path(table: Any, unit: Any) -> str | None:
    """The local path of a unit's base file, or ``None`` when it has none."""
    path = unit.base_file
    if not path:
        return None
    if path.startswith("file://"):
        path = path[len("file://") :]
    return path if os.path.isabs(path) else os.path.join(table.path, path)


def buckets(
    table: Any, snapshot: Any, columns: tuple[str, ...]
) -> tuple[dict[str, int], dict[int, list[Any]]]:
    """``location -> bucket`` and ``bucket -> [rows, (min, max) per column]`` from the data files' footers."""
    import pyarrow.parquet as pq
    from lakesieve.demo.tpch import BUCKET_COLUMN
    from lakesieve.errors import LakesieveError

    from lakesieve_bench.native import footer_bounds

    loc_bucket: dict[str, int] = {}
    per_bucket: dict[int, list[Any]] = {}
    for unit in snapshot.units:
        path = local_path(table, unit)
        if path is None:
            raise LakesieveError(f"location {unit.location} of {table.path} has no base file")
        bounds = footer_bounds([path], [BUCKET_COLUMN, *columns])
        b = bounds[BUCKET_COLUMN][0]
        if b is None or b[0] != b[1]:
            raise LakesieveError(f"data file {path} holds more than one bucket")
        loc_bucket[unit.location] = b[0]
        entry = per_bucket.setdefault(b[0], [0, *[None] * len(columns)])
        entry[0] += pq.ParquetFile(path).metadata.num_rows
        for i, c in enumerate(columns):
            got = bounds[c][0]
            old = entry[i + 1]
            entry[i + 1] = (
                got if old is None else (min(old[0], got[0]), max(old[1], got[1])) if got else old
            )
    return loc_bucket, per_bucket


def spark_action_floor(spark: Any, repeats: int = 5) -> float:
    """Median seconds of the reads' aggregate over a one-row local DataFrame: Spark's cost per read.

    A pruned read through Spark pays about this much whatever it reads, so
    ``full scan / floor`` is about the most any index can show on the Spark
    read path (about: single reads vary around it by tens of milliseconds).
    """
    one = spark.createDataFrame([(1, 1)], "l_orderkey bigint, l_linenumber int")
    _, secs = _median_time(lambda: agg_rows(one), repeats)
    return secs


def agg_rows(frame: Any) -> tuple[int, int]:
    """``(rows, hash sum)`` of a frame: equal reads have equal figures."""
    from pyspark.sql import functions as F

    row = frame.agg(F.count(F.lit(1)), F.sum(F.hash("l_orderkey", "l_linenumber"))).first()
    return int(row[0]), int(row[1] or 0)


ARROW_COLUMNS = ("l_orderkey", "l_linenumber")


ARROW_REPEATS = 3


def _arrow_key(tbl: Any) -> list[tuple[int, int]]:
    """The (l_orderkey, l_linenumber) pairs of an Arrow result, sorted: equal results have equal keys."""
    return sorted(
        zip(
            tbl.column("l_orderkey").to_pylist(),
            tbl.column("l_linenumber").to_pylist(),
            strict=True,
        )
    )


def _median_time(fn: Callable[[], Any], repeats: int = ARROW_REPEATS) -> tuple[Any, float]:
    """``(last result, median seconds)`` of ``repeats`` calls."""
    times, got = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        got = fn()
        times.append(time.perf_counter() - t0)
    return got, statistics.median(times)


def arrow_reads(
    table: Any, snap: Any, native: Any, q: BenchQuery, want_rows: int
) -> dict[str, Any]:
    """The same query with no Spark job: lakesieve's driver-side read against Arrow full and native scans.

    - ``lakesieve``: ``Table.plan`` + ``Table.read_plan_arrow`` (the product
      path: every selected unit through the format plugin's unit reader);
    - ``full_scan``: one ``pyarrow.dataset`` scan of every data file of the
      snapshot, filter pushed down (row-group statistics used), multi-threaded;
    - ``native``: the format library's own statistics pruning, then the same
      ``pyarrow.dataset`` scan of the files it kept.

    Each is the median of :data:`ARROW_REPEATS` runs. The lakesieve and
    native results are compared with the full scan (sorted keys), and the
    full scan's row count with Spark's.
    """
    import pyarrow.dataset as ds
    from lakesieve.expressions import bind, to_arrow

    bound = bind(q.where, table.schema(), table.path)
    expr = to_arrow(bound)
    files = [p for p in (local_path(table, u) for u in snap.units) if p]

    def scan(paths: list[str]) -> Any:
        return ds.dataset(paths, format="parquet").to_table(
            columns=list(ARROW_COLUMNS), filter=expr
        )

    full, full_s = _median_time(lambda: scan(files))

    def lakesieve_read() -> Any:
        plan = table.plan(q.where)
        return plan, table.read_plan_arrow(plan, columns=list(ARROW_COLUMNS))

    (plan, got), sieve_s = _median_time(lakesieve_read)

    def native_read() -> Any:
        keep = native.api(q)
        chosen = [p for p in files if os.path.basename(p) in keep]
        return len(chosen), scan(chosen)

    (n_native, nat), native_s = _median_time(native_read)
    want = _arrow_key(full)
    return {
        "repeats": ARROW_REPEATS,
        "rows": full.num_rows,
        "full_scan_rows_equal_spark": full.num_rows == want_rows,
        "full_scan_seconds": round(full_s, 4),
        "native": {
            "files": n_native,
            "seconds": round(native_s, 4),
            "equal": _arrow_key(nat) == want,
        },
        "lakesieve": {
            "files": plan.locations_selected,
            "seconds": round(sieve_s, 4),
            "equal": _arrow_key(got) == want and full.num_rows == want_rows,
            "speedup_vs_arrow_full": round(full_s / max(sieve_s, 1e-9), 2),
            "speedup_vs_arrow_native": round(native_s / max(sieve_s, 1e-9), 2),
        },
    }


class Reader:
    """Timed reads of one table; a selection of files already read is not read again."""

    def __init__(self, table: Any, spark: Any) -> None:
        self.table = table
        self.spark = spark
        self.base_plan = table.plan(None)
        self.cache: dict[tuple[str, frozenset[str]], tuple[tuple[int, int], float]] = {}

    def read_units(self, where: str, units: tuple[Any, ...]) -> tuple[tuple[int, int], float, bool]:
        """``(result, seconds, shared)``: the rows of ``units`` matching ``where``."""
        from lakesieve.expressions import bind

        key = (where, frozenset(u.location for u in units))
        if key in self.cache:
            res, secs = self.cache[key]
            return res, secs, True
        t0 = time.perf_counter()
        plan = dataclasses.replace(
            self.base_plan,
            units=tuple(units),
            bound=bind(where, self.table.schema(), self.table.path),
        )
        res = agg_rows(self.table.read_plan(plan, self.spark))
        secs = time.perf_counter() - t0
        self.cache[key] = (res, secs)
        return res, secs, False
