"""Helpers that build small Hudi tables with our writer and check pruned reads.

Shared by the end-to-end, CLI and data-source tests.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from lakesieve import registry
from lakesieve.model import WriteOptions
from lakesieve.predicate import bind, to_arrow
from lakesieve.table import Table, write

WORDS = ["amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "heath", "iris", "juniper"]


def make_rows(ids: Sequence[int], seed: int, version: int = 0) -> list[dict[str, Any]]:
    """Rows with a unique ``id``, a repeating key ``k = id // 3`` and typed columns."""
    rng = random.Random(seed)
    out = []
    for i in ids:
        out.append(
            {
                "id": i,
                "k": i // 3,
                "s": f"{WORDS[(i // 7) % len(WORDS)]}-{i // 50:04d}",
                "d": dt.date(2024, 1, 1) + dt.timedelta(days=(i // 20) % 365),
                "amount": round(rng.uniform(0, 1000), 2),
                "part": f"p{i % 3}",
                "version": version,
            }
        )
    return out


def df_of(spark: Any, rows: list[dict[str, Any]]) -> Any:
    """A Spark DataFrame with a fixed schema."""
    schema = "id bigint, k bigint, s string, d date, amount double, part string, version int"
    return spark.createDataFrame([tuple(r.values()) for r in rows], schema=schema)


def write_rows(spark: Any, path: Path, rows: list[dict[str, Any]], **kw: Any) -> str:
    """One commit of ``rows``; keyword arguments go to :class:`WriteOptions`."""
    kw.setdefault("record_key", ("id",))
    kw.setdefault("precombine", "version")
    return write(path, df_of(spark, rows), format="hudi", options=WriteOptions(**kw), spark=spark).id


def rows_by_location(table: Table, as_of: str | None = None) -> dict[str, pa.Table]:
    """Every location's rows at an instant, read unit by unit without Spark."""
    inst = table.resolve_instant(as_of)
    snapshot = table.snapshot(as_of)
    out: dict[str, pa.Table] = {}
    for unit in snapshot.units:
        batches = list(
            registry.call_first(
                "lakesieve_format_read_unit", "test", table=table.ref, unit=unit,
                instant=inst.id if inst else None, columns=None,
            )
        )
        tbl = pa.Table.from_batches(batches) if batches else None
        if tbl is not None:
            tbl = tbl.select([c for c in tbl.column_names if not c.startswith("_hoodie")])
            out[unit.location] = tbl
    return out


def true_locations(table: Table, where: str, by_loc: dict[str, pa.Table]) -> set[str]:
    """Locations holding at least one row matching ``where``."""
    bound = bind(where, table.schema())
    expr = to_arrow(bound)
    return {loc for loc, t in by_loc.items() if t.num_rows and t.filter(expr).num_rows}


def sorted_rows(df: Any, columns: Sequence[str] = ("id", "k", "s", "d", "amount", "part", "version")) -> list[tuple]:
    """Collect a Spark DataFrame's rows as sorted tuples of the given columns."""
    return sorted(tuple(r) for r in df.select(*columns).collect())
