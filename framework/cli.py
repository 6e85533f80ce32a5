"""The ``lakesieve`` command line.

Bad input (unknown table, column, index type, option, malformed predicate)
prints one line ``lakesieve: error: ...`` and exits with status 2, without a
traceback and without touching the table or its indexes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from collections.abc import Sequence
from typing import Any

from lakesieve.errors import LakesieveError, OptionError

EXIT_USAGE = 2
#: Spark settings for long commands: show stage progress on stderr.
PROGRESS = {"spark.ui.showConsoleProgress": "true"}


def _csv(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    return tuple(v.strip() for v in value.split(",") if v.strip())


def _kv(items: Sequence[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        if "=" not in item:
            raise OptionError(f"option {item!r} is not KEY=VALUE")
        key, value = item.split("=", 1)
        out[key.strip()] = value.strip()
    return out


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, sort_keys=True, default=str))


# ---------------------------------------------------------------- commands


def cmd_write(args: argparse.Namespace) -> int:
    """``lakesieve write``: one commit from Parquet files."""
    import os

    from lakesieve.model import WriteOptions
    from lakesieve.session import get_spark
    from lakesieve.table import write

    if not os.path.exists(args.source):
        raise LakesieveError(f"--from {args.source!r} does not exist")
    if args.file_groups is not None and args.file_groups < 1:
        raise OptionError(f"--file-groups must be at least 1, got {args.file_groups}")
    options = WriteOptions(
        mode=args.mode,
        record_key=_csv(args.record_key),
        partition_by=_csv(args.partition_by),
        table_type=args.table_type,
        file_groups=args.file_groups,
        bucket_column=args.bucket_column,
        precombine=args.precombine,
        table_name=args.table_name,
        extra=_kv(args.write_option),
    )
    spark = get_spark(conf=PROGRESS)
    df = spark.read.parquet(args.source)
    started = time.perf_counter()
    inst = write(args.table, df, format=args.format, options=options, spark=spark)
    print(
        f"wrote commit {inst.id} ({inst.action}) to {args.table} in {time.perf_counter() - started:.1f}s"
    )
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    """``lakesieve index build|list|describe|drop``."""
    from lakesieve.table import open as open_table

    if args.index_cmd == "build":
        if getattr(args, "config", None):
            return _build_from_config(args)
        missing = [n for n, v in (("table", args.table), ("--column", args.column)) if v is None]
        if missing:
            raise OptionError(
                f"the following arguments are required: {', '.join(missing)} (or --config FILE)"
            )
        args.type = args.type or "sieve"
    table = open_table(args.table, format=args.format)
    if args.index_cmd == "build":
        started = time.perf_counter()
        desc = table.build_index(
            args.column,
            type=args.type,
            name=args.name,
            options=_kv(args.option),
            as_of=args.as_of,
            spark_conf=PROGRESS,
            progress=lambda msg: print(msg, file=sys.stderr, flush=True),
        )
        if args.json:
            _print_json(desc)
        else:
            print(
                f"built index {desc['name']} ({desc['type']} on {desc['column']}) at instant "
                f"{desc['instant']}: {desc['size_bytes']} bytes in {time.perf_counter() - started:.1f}s"
            )
        return 0
    if args.index_cmd == "list":
        return _list(table, args)
    if args.index_cmd in ("check", "repair"):
        from lakesieve.repair_cli import run_check_or_repair

        return run_check_or_repair(table, args, _print_json)
    if args.index_cmd == "describe":
        _print_json(table.describe_index(args.name))
        return 0
    if args.index_cmd == "drop":
        table.drop_index(args.name)
        print(f"dropped index {args.name} from {table.path}")
        return 0
    if args.index_cmd in ("refresh", "compact", "vacuum"):
        return _maintain(table, args)
    raise OptionError(f"unknown index command {args.index_cmd!r}")


def _list(table: Any, args: argparse.Namespace) -> int:
    """``lakesieve index list``: every index with its instant, size and health."""
    from lakesieve.repair import index_health

    rows, problems = index_health(table)
    if args.json:
        _print_json([r.to_dict() for r in rows])
    elif not rows:
        print(f"no indexes on {table.path}")
    else:
        print(f"{'name':<28} {'type':<8} {'column':<20} {'instant':<20} {'bytes':>10}  health")
        for r in rows:
            print(
                f"{r.name:<28} {r.type!s:<8} {r.column!s:<20} {r.instant!s:<20} {r.size_bytes:>10}  {r.health}"
            )
    for line in [
        f"{r.name}: {r.detail}" for r in rows if r.detail and r.health == "corrupt data file"
    ] + [f"{p}; run `lakesieve index repair {table.path}`" for p in problems]:
        print(f"lakesieve: warning: {line}", file=sys.stderr)
    return 0


def _maintain(table: Any, args: argparse.Namespace) -> int:
    """``lakesieve index refresh|compact|vacuum``."""
    from lakesieve.refresh import RefreshPolicy

    if args.index_cmd == "vacuum":
        result = table.vacuum(grace_seconds=args.grace_seconds)
        if args.json:
            _print_json(result.to_dict())
        else:
            print(
                f"vacuumed {table.path}: {len(result.states_removed)} index states, "
                f"{len(result.orphan_folders_removed)} unreferenced folders removed"
            )
        return 0
    policy = RefreshPolicy(
        max_deltas=args.max_deltas,
        max_delta_rows=args.max_delta_rows,
        vacuum_after_compaction=args.vacuum,
        vacuum_grace_seconds=args.grace_seconds if args.grace_seconds is not None else 3600.0,
    )
    from lakesieve.session import get_spark

    spark = get_spark(conf=PROGRESS)
    if args.index_cmd == "refresh":
        results = table.refresh(args.name, spark=spark, policy=policy)
    else:
        results = table.compact(args.name, spark=spark, policy=policy)
    if args.json:
        _print_json([r.to_dict() for r in results])
        return 0
    if not results:
        print(f"no indexes to {args.index_cmd} on {table.path}")
    for r in results:
        detail = (
            f"{r.from_instant} -> {r.to_instant}"
            if r.from_instant != r.to_instant
            else f"at {r.to_instant}"
        )
        print(
            f"{r.action:<18} {r.index} {detail}: {r.delta_rows} delta rows, "
            f"{r.locations_read} locations read, {r.locations_skipped_in_place} skipped (updated in place), "
            f"{r.seconds:.1f}s{' - ' + r.note if r.note else ''}"
        )
    return 0


def _build_from_config(args: argparse.Namespace) -> int:
    """``lakesieve index build --config FILE``: build the declared indexes that need it."""
    from lakesieve.config import build_declared, load_config

    given = [
        flag
        for flag, value in (
            ("TABLE", args.table),
            ("--column", args.column),
            ("--type", args.type),
            ("--name", args.name),
            ("--option", args.option),
            ("--as-of", args.as_of),
            ("--format", args.format),
        )
        if value
    ]
    if given:
        raise OptionError(
            f"--config cannot be combined with {', '.join(given)}; declare them in {args.config}"
        )
    config = load_config(args.config)
    results = build_declared(
        config, progress=lambda msg: print(msg, file=sys.stderr, flush=True), spark_conf=PROGRESS
    )
    if args.json:
        _print_json(results)
        return 0
    for r in results:
        what = f"index {r['index']} ({r['type']} on {r['column']}) of table {r['table']}"
        if r["action"] == "built":
            print(
                f"built {what} at instant {r['instant']}: {r['size_bytes']} bytes in "
                f"{r['seconds']:.1f}s ({r['reason']})"
            )
        else:
            print(f"up-to-date {what} at instant {r['instant']}")
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    """``lakesieve explain``: what a query would read; no Spark."""
    from lakesieve.table import open as open_table

    table = open_table(args.table, format=args.format)
    out = table.explain(args.where, as_of=args.as_of)
    if args.json:
        _print_json(out)
        return 0
    print(f"table      {out['table']} ({out['format']}) at instant {out['table_instant']}")
    print(f"predicate  {out['predicate_sql']}")
    print(
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
        print(
            f"index      {idx['name']} ({idx['type']} on {idx['column']} @ {idx['instant']}, "
            f"{idx['size_bytes']} bytes): {idx['status']}{extra}{stale}{reason}"
        )
    for w in out["warnings"]:
        print(f"warning    {w}")
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
    from lakesieve.table import open as open_table

    table = open_table(args.table, format=args.format)
    spark = None
    if args.refresh:
        from lakesieve.session import get_spark

        spark = get_spark()
        for r in table.refresh(spark=spark):
            print(
                f"index {r.index}: {r.action} ({r.from_instant} -> {r.to_instant})", file=sys.stderr
            )
    plan = table.plan(args.where, as_of=args.as_of)
    max_bytes = int(args.max_mb * 1024 * 1024) if args.max_mb is not None else None
    engine = _query_engine(args.engine, sum(u.size_bytes for u in plan.units), max_bytes)
    started = time.perf_counter()
    if engine == "arrow":
        import pyarrow.parquet as pq

        tbl = table.read_plan_arrow(plan, max_bytes=max_bytes)
        if args.output and args.engine == "arrow":
            pq.write_table(tbl, args.output)
            print(f"{tbl.num_rows} rows written to {args.output}")
        elif args.output:  # auto: the folder of part files a Spark run would have written
            _write_parquet_folder(tbl, args.output)
            print(f"{tbl.num_rows} rows written to {args.output}")
        else:
            for row in tbl.slice(0, args.limit).to_pylist():
                print(json.dumps(row, default=str, sort_keys=False))
    else:
        if spark is None:
            from lakesieve.session import get_spark

            spark = get_spark()
        df = table.read_plan(plan, spark)
        if args.output:
            df.write.mode("overwrite").parquet(args.output)
            rows = spark.read.parquet(args.output).count()
            print(f"{rows} rows written to {args.output}")
        else:
            rows_out = df.limit(args.limit).collect()
            for row in rows_out:
                print(json.dumps(row.asDict(), default=str, sort_keys=False))
    how = f"auto: {engine}" if args.engine == "auto" else engine
    print(
        f"read {plan.locations_selected} of {plan.locations_total} locations in "
        f"{time.perf_counter() - started:.2f}s ({how})",
        file=sys.stderr,
    )
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    """``lakesieve bench``: measured figures as JSON (see BENCHMARKS.md)."""
    from lakesieve.bench import require_extra

    require_extra("lakesieve bench")
    from lakesieve.bench.runner import add_arguments, run
    from lakesieve.cli_checks import validate_args

    bench_parser = argparse.ArgumentParser(prog="lakesieve bench")
    add_arguments(bench_parser)
    bench_args = bench_parser.parse_args(args.bench_args)
    validate_args(bench_args)
    return run(bench_args)


def cmd_demo(args: argparse.Namespace) -> int:
    """``lakesieve demo``: the main job on an embedded default."""
    from lakesieve.bench import require_extra

    require_extra("lakesieve demo")
    from lakesieve.bench.demo import run_demo

    return run_demo(scale=args.scale, workdir=args.workdir)


def _compare_figures(args: argparse.Namespace) -> dict[str, Any]:
    from lakesieve.compare import compare_indexes, parse_types
    from lakesieve.table import open as open_table

    table = open_table(args.table, format=args.format)
    return compare_indexes(
        table,
        args.column,
        types=parse_types(args.types),
        queries=args.queries,
        seed=args.seed,
        keep=getattr(args, "keep", False),
        e2e=not getattr(args, "no_e2e", False),
        progress=lambda msg: print(msg, file=sys.stderr, flush=True),
    )


def cmd_compare(args: argparse.Namespace) -> int:
    """``lakesieve compare``: every index type on one column, measured on one seeded query set."""
    from lakesieve.compare import format_table

    if args.html:
        from lakesieve.bench import require_extra

        require_extra("lakesieve compare --html", modules=("matplotlib",), program=False)
    result = _compare_figures(args)
    if args.html:
        from lakesieve.bench.compare_report import write_html

        written = write_html(result, args.html)
        print(f"report written to {written[0]} ({len(written) - 1} charts)", file=sys.stderr)
    if args.json:
        _print_json(result)
    else:
        print(format_table(result))
    return 0


def cmd_advise(args: argparse.Namespace) -> int:
    """``lakesieve advise``: the index with the best pruning per byte for a workload mix."""
    import os

    from lakesieve.advise import advise, parse_workload, toml_fragment

    workload = parse_workload(args.workload)
    if args.from_json:
        with open(args.from_json, encoding="utf-8") as fh:
            result = json.load(fh)
    else:
        result = _compare_figures(args)
    advice = advise(result, workload)
    if args.toml:
        name = args.table_name or os.path.basename(os.path.normpath(args.table)) or "table"
        print(toml_fragment(name, advice), end="")
    else:
        print(advice["reason"])
    return 0


# ---------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``lakesieve`` command."""
    p = argparse.ArgumentParser(
        prog="lakesieve", description="Data-skipping indexes for Hudi, Iceberg and Delta tables."
    )
    sub = p.add_subparsers(dest="command", required=True)

    w = sub.add_parser("write", help="write Parquet data to a table as one commit")
    w.add_argument("table")
    w.add_argument("--from", dest="source", required=True, help="Parquet file or folder")
    w.add_argument("--format", help="table format (detected for existing tables)")
    w.add_argument("--record-key", help="record key columns, comma-separated")
    w.add_argument("--partition-by", help="partition columns, comma-separated")
    w.add_argument(
        "--mode", default="upsert", choices=["bulk_insert", "insert", "upsert", "delete"]
    )
    w.add_argument("--table-type", default="cow", choices=["cow", "mor"])
    w.add_argument("--file-groups", type=int)
    w.add_argument("--bucket-column")
    w.add_argument("--precombine")
    w.add_argument("--table-name")
    w.add_argument("--write-option", action="append", metavar="K=V", help="format-specific option")
    w.set_defaults(func=cmd_write)

    i = sub.add_parser(
        "index",
        help="build, list, describe, drop, refresh, compact, vacuum, check or repair indexes",
    )
    isub = i.add_subparsers(dest="index_cmd", required=True)
    b = isub.add_parser(
        "build", help="build an index on a column, or the indexes a config declares"
    )
    b.add_argument("table", nargs="?")
    b.add_argument("--column", help="required unless --config is given")
    b.add_argument("--type", help="index type (default sieve)")
    b.add_argument(
        "--config", metavar="FILE", help="build the indexes declared in a lakesieve.toml"
    )
    b.add_argument("--name")
    b.add_argument("--option", action="append", metavar="K=V")
    b.add_argument("--as-of")
    b.add_argument("--json", action="store_true")
    lst = isub.add_parser("list", help="list the indexes of a table")
    lst.add_argument("table")
    lst.add_argument("--json", action="store_true")
    d = isub.add_parser("describe", help="describe one index")
    d.add_argument("table")
    d.add_argument("name")
    dr = isub.add_parser("drop", help="drop one index")
    dr.add_argument("table")
    dr.add_argument("name")
    rf = isub.add_parser(
        "refresh", help="bring indexes up to the latest instant, reading only what changed"
    )
    cm = isub.add_parser("compact", help="fold the deltas of indexes into a new base")
    va = isub.add_parser("vacuum", help="remove index states of instants the table no longer keeps")
    for sp in (rf, cm, va):
        sp.add_argument("table")
        sp.add_argument("--json", action="store_true")
        sp.add_argument(
            "--grace-seconds",
            type=float,
            default=None,
            help="keep unreferenced index files younger than this (default 3600)",
        )
    for sp in (rf, cm):
        sp.add_argument("--name", help="only this index (default: every index of the table)")
        sp.add_argument(
            "--max-deltas", type=int, default=8, help="compact past this many delta states"
        )
        sp.add_argument(
            "--max-delta-rows",
            type=int,
            default=1_000_000,
            help="compact past this many stored delta rows",
        )
        sp.add_argument("--vacuum", action="store_true", help="vacuum after compacting")
    ck = isub.add_parser("check", help="verify the checksum of every index commit and data file")
    rp = isub.add_parser(
        "repair", help="move a damaged index log aside and keep every state that verifies"
    )
    for sp in (ck, rp):
        sp.add_argument("table")
        sp.add_argument("--json", action="store_true")
    rp.add_argument(
        "--rebuild",
        action="store_true",
        help="rebuild (Spark) every index that lost its newest state, instead of dropping it",
    )
    for sp in (b, lst, d, dr, rf, cm, va, ck, rp):
        sp.add_argument("--format")
    i.set_defaults(func=cmd_index)

    e = sub.add_parser("explain", help="show which locations a predicate selects (no Spark)")
    e.add_argument("table")
    e.add_argument("--where", required=True)
    e.add_argument("--as-of")
    e.add_argument("--json", action="store_true")
    e.add_argument("--format")
    e.set_defaults(func=cmd_explain)

    q = sub.add_parser("query", help="read the rows matching a predicate")
    q.add_argument("table")
    q.add_argument("--where", required=True)
    q.add_argument("--as-of")
    q.add_argument("--output", help="write the rows as Parquet here")
    q.add_argument(
        "--refresh", action="store_true", help="bring the indexes up to date before planning"
    )
    q.add_argument("--limit", type=int, default=20, help="rows to print without --output")
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
        "arrow: refuse a query that selects more",
    )
    q.add_argument("--format")
    q.set_defaults(func=cmd_query)

    dm = sub.add_parser("demo", help="build a TPC-H Hudi table, index it and run queries")
    dm.add_argument("--scale", type=float, default=0.1, help="TPC-H scale factor (default 0.1)")
    dm.add_argument("--workdir", help="where to put the data (default: a temporary folder)")
    dm.set_defaults(func=cmd_demo)

    # the options of ``bench`` live with the suites (lakesieve.bench.runner, the
    # ``bench`` extra): its arguments are passed on and parsed by cmd_bench
    bn = sub.add_parser(
        "bench", help="run a benchmark suite and print its figures as JSON", add_help=False
    )
    bn.set_defaults(func=cmd_bench)

    cp = sub.add_parser("compare", help="build every index type on a column and compare them")
    ad = sub.add_parser("advise", help="recommend an index type for a workload mix")
    for sp in (cp, ad):
        sp.add_argument("table")
        sp.add_argument("--column", required=True)
        sp.add_argument("--types", help="index types, comma-separated (default: all installed)")
        sp.add_argument("--queries", type=int, default=200, help="queries per kind (default 200)")
        sp.add_argument("--seed", type=int, default=42)
        sp.add_argument("--no-e2e", action="store_true", help="skip the timed end-to-end reads")
        sp.add_argument("--format")
    cp.add_argument("--json", action="store_true")
    cp.add_argument("--html", metavar="PATH", help="write an HTML report with PNG charts here")
    cp.add_argument("--keep", action="store_true", help="keep the cmp_<column>_<type> indexes")
    cp.set_defaults(func=cmd_compare)
    ad.add_argument(
        "--workload", help="KIND=WEIGHT,... (default point=0.6,range_0.1pct=0.3,in=0.1)"
    )
    ad.add_argument("--toml", action="store_true", help="print a lakesieve.toml fragment")
    ad.add_argument("--table-name", help="label under [tables] for --toml (default: folder name)")
    ad.add_argument("--from-json", metavar="FILE", help="reuse the figures of compare --json")
    ad.set_defaults(func=cmd_advise)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lakesieve`` command."""
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if args.command == "bench":
        args.bench_args = rest
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        from lakesieve.cli_checks import validate_args

        validate_args(args)  # every value, before a table is opened or Spark starts
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            code = int(args.func(args) or 0)
        for w in caught:
            print(f"lakesieve: warning: {w.message}", file=sys.stderr)
        return code
    except LakesieveError as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"lakesieve: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
