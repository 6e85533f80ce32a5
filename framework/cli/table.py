"""``lakesieve write``, ``explain`` and ``query``: table data in and out."""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import lakesieve.cli.output as output
from lakesieve.cli.support import (
    AS_OF_HELP,
    FORMAT_HELP,
    TABLE_HELP,
    TEXT,
    WHERE_HELP,
    Steps,
    open_args,
)
from lakesieve.errors import OptionError
from lakesieve.spark.session import PROGRESS


def cmd_write(args: argparse.Namespace) -> int:
    """``lakesieve write``: one commit from Parquet files.

    The arguments were checked before this runs (:mod:`lakesieve.cli.preflight`);
    step lines go to stderr, the commit (one line, or JSON with ``--json``) to stdout.
    """
    from lakesieve.cli.preflight import source_rows, write_options
    from lakesieve.table import table_root, write

    if args.file_groups is not None and args.file_groups < 1:
        raise OptionError(f"--file-groups must be at least 1, got {args.file_groups}")
    options = write_options(args)
    steps = Steps()
    spark, spark_s = steps.spark(PROGRESS)
    df = spark.read.parquet(args.source)
    rows = source_rows(args.source)
    what = f"{rows:,} rows" if rows is not None else "the rows"
    steps.say(f"writing {what} from {args.source} to {args.table} ({args.mode}) ...")
    started = time.perf_counter()
    inst = write(args.table, df, format=args.format, options=options, spark=spark)
    write_s = time.perf_counter() - started
    steps.say(
        f"done in {steps.elapsed():.1f} s (Spark start-up {spark_s:.1f} s, write {write_s:.1f} s)"
    )
    if args.json:
        output.result_json(
            {
                "table": table_root(args.table),
                "instant": inst.id,
                "action": inst.action,
                "mode": args.mode,
                "source_rows": rows,
                "write_seconds": round(write_s, 3),
                "spark_start_seconds": round(spark_s, 3),
            }
        )
    else:
        output.result(
            f"wrote commit {inst.id} ({inst.action}) to {args.table} in {write_s:.1f} s "
            f"(the write itself; Spark start-up {spark_s:.1f} s not included)"
        )
    return 0


def _opened(args: argparse.Namespace) -> tuple[Any, Any]:
    """The table and plan the command-line checks made (``args.opened``), else the table opened now."""
    opened = getattr(args, "opened", None)
    if opened is not None:
        return opened.table, opened.plan

    return open_args(args), None


def cmd_explain(args: argparse.Namespace) -> int:
    """``lakesieve explain``: what a query would read; no Spark."""
    from lakesieve.query.query_plan import explain_plan

    table, plan = _opened(args)
    if plan is None:
        plan = table.plan(args.where, as_of=args.as_of)
    out = explain_plan(plan, table.path, table.format, args.where, args.as_of)
    if args.json:
        output.result_json(out)
        return 0
    output.result(f"table      {out['table']} ({out['format']}) at instant {out['table_instant']}")
    output.result(f"predicate  {out['predicate_sql']}")
    output.result(
        f"locations  {out['locations_selected']} of {out['locations_total']} selected "
        f"({out['bytes_selected']} of {out['bytes_total']} bytes)"
    )
    for idx in out["indexes"]:
        extra = f", selected {idx['locations_selected']}" if "locations_selected" in idx else ""
        stale = (
            f", stale (+{idx['locations_added_for_staleness']} changed locations)"
            if idx.get("stale")
            else ""
        )
        reason = f" - {idx['reason']}" if "reason" in idx else ""
        output.result(
            f"index      {idx['name']} ({idx['type']} on {idx['column']} @ {idx['instant']}, "
            f"{idx['size_bytes']} bytes): {idx['status']}{extra}{stale}{reason}"
        )
    for w in out["warnings"]:
        output.result(f"warning    {w}")
    return 0


def _query_engine(requested: str, selected_bytes: int, max_bytes: int | None) -> str:
    """The engine a query runs on: ``auto`` reads on the driver when the selected bytes allow it."""
    if requested != "auto":
        return requested
    return "arrow" if max_bytes is None or selected_bytes <= max_bytes else "spark"


def _write_parquet_folder(tbl: Any, folder: str) -> None:
    """Write ``tbl`` as Spark's ``mode("overwrite")`` would: ``folder`` replaced by one part file."""
    import shutil

    import pyarrow.parquet as pq

    if os.path.isdir(folder):
        shutil.rmtree(folder)
    elif os.path.exists(folder):
        os.remove(folder)
    os.makedirs(folder)
    pq.write_table(tbl, os.path.join(folder, "part-00000-lakesieve.parquet"))


def cmd_query(args: argparse.Namespace) -> int:
    """``lakesieve query``: read the matching rows through the indexes.

    ``--engine auto`` (the default) plans first, without Spark, and reads the
    selected locations on the driver with Arrow when they hold at most
    ``--max-mb``; a plan the indexes could not narrow that far runs as a
    Spark job. ``spark`` and ``arrow`` force one engine (``arrow`` refuses a
    plan over ``--max-mb``).
    """
    table, plan = _opened(args)
    spark: Any = None
    if args.refresh:  # starts Spark only when an index is behind the table
        output.step(f"refreshing the indexes of {table.path} ...")
        for r in table.refresh(spark_conf=PROGRESS):
            output.step(f"index {r.index}: {r.action} ({r.from_instant} -> {r.to_instant})")
        plan = None  # the indexes moved on: plan again
    if plan is None:
        plan = table.plan(args.where, as_of=args.as_of)
    max_bytes = int(args.max_mb * 1024 * 1024) if args.max_mb is not None else None
    selected = sum(u.size_bytes for u in plan.units)
    engine = _query_engine(args.engine, selected, max_bytes)
    if engine == "arrow" and max_bytes is not None and selected > max_bytes:
        raise OptionError(
            f"--engine arrow: the query selects {plan.locations_selected} locations "
            f"({selected / 2**20:.1f} MiB), more than --max-mb {args.max_mb:g}; "
            "raise --max-mb or use --engine spark"
        )
    spark_s = None
    if engine != "arrow":
        spark, spark_s = Steps().spark(PROGRESS)
    started = time.perf_counter()
    if engine == "arrow":
        import pyarrow.parquet as pq

        tbl = table.read_plan_arrow(plan, max_bytes=max_bytes)
        if args.output and args.engine == "arrow":
            pq.write_table(tbl, args.output)
            output.result(f"{tbl.num_rows} rows written to {args.output}")
        elif args.output:  # auto: the folder of part files a Spark run would have written
            _write_parquet_folder(tbl, args.output)
            output.result(f"{tbl.num_rows} rows written to {args.output}")
        else:
            for row in tbl.slice(0, args.limit).to_pylist():
                output.result(json.dumps(row, default=str, sort_keys=False))
    else:
        df = table.read_plan(plan, spark)
        if args.output:
            df.write.mode("overwrite").parquet(args.output)
            rows = spark.read.parquet(args.output).count()
            output.result(f"{rows} rows written to {args.output}")
        else:
            rows_out = df.limit(args.limit).collect()
            for row in rows_out:
                output.result(json.dumps(row.asDict(), default=str, sort_keys=False))
    how = f"auto: {engine}" if args.engine == "auto" else engine
    spark_note = "" if not spark_s else f"; Spark start-up {spark_s:.1f} s not included"
    output.step(
        f"planned in {plan.plan_ms:.0f} ms; read {plan.locations_selected} of "
        f"{plan.locations_total} locations in {time.perf_counter() - started:.2f} s "
        f"({how}){spark_note}"
    )
    return 0


# ---------------------------------------------------------------- flags


def add_write(sub: Any) -> None:
    """``lakesieve write``'s flags."""
    w = sub.add_parser("write", help="write Parquet data to a table as one commit")
    w.add_argument("table", help=TABLE_HELP + " (created when --format is given)")
    w.add_argument(
        "--from",
        dest="source",
        required=True,
        help="Parquet file or folder of Parquet files to write (required)",
    )
    w.add_argument(
        "--format",
        help="hudi, delta or iceberg (default: detected from the existing table; "
        "needed to create one)",
    )
    w.add_argument(
        "--record-key",
        help="record key columns, comma-separated (default: the table's; needed to create one)",
    )
    w.add_argument(
        "--partition-by",
        help="partition columns, comma-separated (default: the table's; a new table is "
        "not partitioned)",
    )
    w.add_argument(
        "--mode",
        default="upsert",
        choices=["bulk_insert", "insert", "upsert", "delete"],
        help="upsert replaces rows of the same key; insert and bulk_insert add rows "
        "(bulk_insert into new file groups); delete removes the keys given (default %(default)s)",
    )
    w.add_argument(
        "--table-type",
        default="cow",
        choices=["cow", "mor"],
        help="Hudi table type of a new table: cow (copy on write) or mor (merge on read) "
        "(default %(default)s)",
    )
    w.add_argument(
        "--precombine",
        metavar="COLUMN",
        help="column whose largest value wins among rows of one key "
        "(default: the table's; else the last row wins)",
    )
    w.add_argument(
        "--table-name",
        help="name recorded in a new table's properties (default: the folder's name)",
    )
    w.add_argument(
        "--write-option",
        action="append",
        metavar="K=V",
        help="format-specific option, repeatable (default: none)",
    )
    w.add_argument(
        "--json", action="store_true", help="print the commit as JSON (default: one line of text)"
    )
    _add_write_layout(w)
    w.set_defaults(func=cmd_write)


def _add_write_layout(w: argparse.ArgumentParser) -> None:
    """``lakesieve write``'s flags of the files' layout: file groups and buckets."""
    w.add_argument(
        "--file-groups",
        type=int,
        metavar="N",
        help="file groups per partition of a bulk insert or a bucketed table "
        "(default: from the data's size; the table's buckets)",
    )
    w.add_argument(
        "--bucket-column",
        metavar="COLUMN",
        help="column whose value picks each row's file group, by --bucket-rule "
        "(default: the table's; none, not bucketed, for a new table)",
    )
    w.add_argument(
        "--bucket-rule",
        choices=["mod", "range"],
        help="Delta/Iceberg: how --bucket-column picks a row's file: mod (value mod "
        "--file-groups) or range (contiguous key ranges fixed when the table is created, "
        "so range queries prune); the table keeps it for later writes (default: the "
        "table's; mod for a new table)",
    )


def add_explain(sub: Any) -> None:
    """``lakesieve explain``'s flags."""
    e = sub.add_parser("explain", help="show which locations a predicate selects (no Spark)")
    e.add_argument("table", help=TABLE_HELP)
    e.add_argument("--where", required=True, metavar="PREDICATE", help=WHERE_HELP)
    e.add_argument("--as-of", metavar="INSTANT", help=AS_OF_HELP)
    e.add_argument("--json", action="store_true", help="print the plan as JSON" + TEXT)
    e.add_argument("--format", help=FORMAT_HELP)
    e.set_defaults(func=cmd_explain)


def add_query(sub: Any) -> None:
    """``lakesieve query``'s flags."""
    q = sub.add_parser("query", help="read the rows matching a predicate")
    q.add_argument("table", help=TABLE_HELP)
    q.add_argument("--where", required=True, metavar="PREDICATE", help=WHERE_HELP)
    q.add_argument("--as-of", metavar="INSTANT", help=AS_OF_HELP)
    q.add_argument(
        "--output",
        metavar="PATH",
        help="write the rows as Parquet here (default: print them as JSON lines)",
    )
    q.add_argument(
        "--refresh",
        action="store_true",
        help="bring the indexes up to date before planning (default: use them as they are)",
    )
    q.add_argument(
        "--limit",
        type=int,
        default=20,
        help="rows to print without --output (default %(default)s)",
    )
    q.add_argument(
        "--engine",
        choices=("auto", "spark", "arrow"),
        default="auto",
        help="auto (default): read the selected locations on the driver with Arrow when they hold "
        "at most --max-mb, else run a Spark job; spark or arrow: always that engine",
    )
    q.add_argument(
        "--max-mb",
        type=float,
        default=256.0,
        help="auto: the most MiB of selected locations read on the driver; "
        "arrow: refuse a query that selects more (default %(default)g)",
    )
    q.add_argument("--format", help=FORMAT_HELP)
    q.set_defaults(func=cmd_query)
