"""Planning cost of a stale index: the change record checked against both snapshots.

Since issue 55, a query whose index state is older than the queried instant
lists the snapshot at the state's instant too (``TableView.changes`` checks
the format's change record against both snapshots), and hashes the queried
snapshot's locations against the state's record of what it has seen. This
measures ``Table.explain`` of a point query at the latest instant, with an
index built at an older one, against the same plan made the old way (the
format's change record alone, no seen-locations guard), interleaved in one
run: a fresh ``Table`` each time (cold: nothing cached) and one reused
``Table`` (warm: the view caches each instant's snapshot).

    .venv/bin/python bench/stale_planning.py [--format delta|iceberg] [--commits 32] [--reps 7]

Prints one JSON object: medians in milliseconds and new / old ratios.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa


def _write(root: Path, fmt: str, commits: int) -> str:
    """``commits`` appends of 4 files' worth of rows (Delta: one file each)."""
    path = root / "t"
    batches = [
        pa.table({"id": list(range(c * 100, c * 100 + 100)), "s": [f"v{c}"] * 100})
        for c in range(commits)
    ]
    if fmt == "delta":
        import deltalake

        for rows in batches:
            deltalake.write_deltalake(str(path), rows, mode="append")
        return str(path)
    from pyiceberg.catalog.sql import SqlCatalog

    side = root / "catalog"
    side.mkdir()
    catalog = SqlCatalog("b", uri=f"sqlite:///{side / 'c.db'}", warehouse=f"file://{side}")
    catalog.create_namespace("b")
    table = catalog.create_table(("b", "t"), schema=batches[0].schema, location=str(path))
    for rows in batches:
        table.append(rows)
    return str(path)


def _old_changes(self: Any, start: Any, end: Any) -> Any:
    return self.fmt.changes(start.id if start is not None else None, end.id)


def main() -> None:
    """Write the table, build at the fourth instant, time explain both ways."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", default="delta", choices=("delta", "iceberg"))
    parser.add_argument("--commits", type=int, default=32)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()

    import lakesieve
    from lakesieve.query.table_view import TableView
    from lakesieve.spark.session import get_spark
    from lakesieve.state.table_indexes import TableIndexes

    new_changes, new_unseen = TableView.changes, TableIndexes.unseen
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), args.format, args.commits)
        table = lakesieve.open(path)
        line = table.timeline()
        table.build_index("id", type="sieve", as_of=line[3].id, spark=get_spark())
        times: dict[str, list[float]] = {
            k: [] for k in ("new_cold", "old_cold", "new_warm", "old_warm")
        }
        warm = {"new": lakesieve.open(path), "old": lakesieve.open(path)}
        for _ in range(args.reps):
            for way in ("new", "old"):
                if way == "old":
                    TableView.changes = _old_changes  # type: ignore[method-assign]
                    TableIndexes.unseen = lambda self, *a: frozenset()  # type: ignore[method-assign]
                try:
                    started = time.perf_counter()
                    plan = lakesieve.open(path).explain("id = 150")
                    times[f"{way}_cold"].append(time.perf_counter() - started)
                    started = time.perf_counter()
                    warm_plan = warm[way].explain("id = 150")
                    times[f"{way}_warm"].append(time.perf_counter() - started)
                finally:
                    TableView.changes = new_changes  # type: ignore[method-assign]
                    TableIndexes.unseen = new_unseen  # type: ignore[method-assign]
                assert plan["selected"] == warm_plan["selected"]
        med = {k: round(statistics.median(v) * 1000, 1) for k, v in times.items()}
        print(
            json.dumps(
                {
                    "format": args.format,
                    "instants": len(line),
                    "index_instant": line[3].id,
                    "locations_total": plan["locations_total"],
                    "locations_selected": plan["locations_selected"],
                    "median_ms": med,
                    "cold_new_over_old": round(med["new_cold"] / med["old_cold"], 2),
                    "warm_new_over_old": round(med["new_warm"] / med["old_warm"], 2),
                }
            )
        )


if __name__ == "__main__":
    main()
