"""``Table.read`` beside a plain Spark read of the same Parquet files (issue 53's unprunable query).

Run with ``python -m lakesieve_bench.read_parity TABLE [TABLE ...]`` on copies
of tables written by the formats' own writers (TPC-H lineitem with the
``l_key`` column of ``bench/peers``): every table is read by three ways in one
Spark session, interleaved (one run of each way in turn), ``--repeats`` times
after one warm-up run each, and the medians are reported as JSON:

- ``plain``: ``spark.read.parquet(<the data files of the plan>).where(<the
  query>).collect()``, the format-independent baseline (the formats' own
  Spark readers do not load in pyspark 4.3);
- ``table_read``: ``Table.read(spark, where=<the query>).collect()``;
- ``format_read``: the format plugin's ``read`` of the same units with the
  same predicate on top (what ``Table.read`` did before its plans of plain
  Parquet units became one scan of known files), for reference.

Two queries per table: ``unprunable`` (``l_linenumber = 7 AND l_shipmode =
'AIR'``: every file holds both values) and ``point_key`` (``l_key`` equal to
one key of the table, pruned by a Sieve index on ``l_key``; with
``--build-index`` one is built where the table has none). Every way must give
the same rows (compared as sorted ``l_key`` lists) before any time counts.
``parity`` is ``plain seconds / table_read seconds`` (1 or more: at least as
fast as the plain read).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

UNPRUNABLE = "l_linenumber = 7 AND l_shipmode = 'AIR'"
KEY = "l_key"


def _keys(rows: list[Any]) -> list[int]:
    return sorted(int(r[KEY]) for r in rows)


def _ways(spark: Any, table: Any, where: str) -> dict[str, Callable[[], list[Any]]]:
    """The three reads of ``where`` on ``table`` (each plans afresh, as a user's query does)."""
    from lakesieve.expressions import to_sql

    def plain() -> list[Any]:
        plan = table.plan(where)
        files = table.view.fmt.parquet_files(plan.units, plan.table_instant.id)
        if any(f is None for f in files):
            raise SystemExit(f"table {table.path}: a unit is not a plain Parquet file")
        return spark.read.parquet(*[f[0] for f in files]).where(where).collect()

    def table_read() -> list[Any]:
        return table.read(spark, where=where).collect()

    def format_read() -> list[Any]:
        plan = table.plan(where)
        frame = table.view.fmt.read(spark, plan.units, plan.table_instant.id, False)
        return frame.where(to_sql(plan.bound)).collect()

    return {"plain": plain, "table_read": table_read, "format_read": format_read}


def measure(spark: Any, path: str, repeats: int, build_index: bool) -> dict[str, Any]:
    """The medians of every way and query on the table at ``path``."""
    import lakesieve

    table = lakesieve.open(path)
    table.auto_refresh = False
    if not any(d.column == KEY for d in table.indexes()):
        if build_index:
            table.build_index(KEY, type="sieve", spark=spark)
    else:
        table.refresh(spark=spark)
    first = table.plan(None).units[0]
    key_frame = table.read(spark, where=f"{KEY} IS NOT NULL").select(KEY).limit(1)
    key = int(key_frame.collect()[0][0])
    out: dict[str, Any] = {"path": path, "format": table.format, "first_unit": first.location}
    for name, where in (("unprunable", UNPRUNABLE), ("point_key", f"{KEY} = {key}")):
        ways = _ways(spark, table, where)
        answers = {w: _keys(fn()) for w, fn in ways.items()}  # the warm-up runs
        if len({json.dumps(a) for a in answers.values()}) != 1:
            raise SystemExit(f"table {path}, {name}: the reads disagree")
        times: dict[str, list[float]] = {w: [] for w in ways}
        for _ in range(repeats):
            for w, fn in ways.items():
                started = time.perf_counter()
                fn()
                times[w].append(time.perf_counter() - started)
        medians = {w: statistics.median(t) for w, t in times.items()}
        plan = table.plan(where)
        out[name] = {
            "where": where,
            "rows": len(answers["plain"]),
            "units_read": len(plan.units),
            "seconds": {w: round(s, 3) for w, s in medians.items()},
            "runs": {w: [round(s, 3) for s in t] for w, t in times.items()},
            "parity": round(medians["plain"] / medians["table_read"], 2),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line: time the reads of each table and print JSON."""
    parser = argparse.ArgumentParser(prog="python -m lakesieve_bench.read_parity")
    parser.add_argument("tables", nargs="+", help="table roots (copies: an index may be built)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--build-index", action="store_true", help=f"build a Sieve index on {KEY} where none is"
    )
    parser.add_argument("--json", dest="json_path", help="also write the figures to this file")
    args = parser.parse_args(argv)
    from lakesieve.spark.session import get_spark

    spark = get_spark()
    report = {
        "tables": [measure(spark, p, args.repeats, args.build_index) for p in args.tables],
        "repeats": args.repeats,
        "cores": os.cpu_count(),
        "load": os.getloadavg(),
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
