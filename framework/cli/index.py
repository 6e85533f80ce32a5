"""``lakesieve index``: build, list, describe, drop, refresh, compact, vacuum, check, repair."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from lakesieve.cli.support import open_args, parse_kv, print_json
from lakesieve.errors import OptionError
from lakesieve.spark.session import PROGRESS


def cmd_index(args: argparse.Namespace) -> int:
    """``lakesieve index build|list|describe|drop``."""

    if args.index_cmd == "build":
        if getattr(args, "config", None):
            return _build_from_config(args)
        missing = [n for n, v in (("table", args.table), ("--column", args.column)) if v is None]
        if missing:
            raise OptionError(
                f"the following arguments are required: {', '.join(missing)} (or --config FILE)"
            )
        args.type = args.type or "sieve"
    table = open_args(args)
    if args.index_cmd == "build":
        started = time.perf_counter()
        desc = table.build_index(
            args.column,
            type=args.type,
            name=args.name,
            options=parse_kv(args.option),
            as_of=args.as_of,
            spark_conf=PROGRESS,
            progress=lambda msg: print(msg, file=sys.stderr, flush=True),
            force=getattr(args, "force", False),
        )
        if args.json:
            print_json(desc)
            return 0
        if desc["action"] == "up-to-date":
            print(
                f"index {desc['name']} ({desc['type']} on {desc['column']}) is up to date at "
                f"instant {desc['instant']}: {desc['size_bytes']} bytes; --force rebuilds it"
            )
            return 0
        print(
            f"built index {desc['name']} ({desc['type']} on {desc['column']}) at instant "
            f"{desc['instant']}: {desc['size_bytes']} bytes in {time.perf_counter() - started:.1f} s "
            "(Spark start-up included)"
        )
        repaired = desc.get("repaired") or []
        if repaired:
            print(
                f"repaired index {desc['name']}: removed {len(repaired)} broken state(s) "
                f"(first: {repaired[0]})"
            )
        return 0
    if args.index_cmd == "list":
        return _list(table, args)
    if args.index_cmd in ("check", "repair"):
        from lakesieve.cli.repair import run_check_or_repair

        return run_check_or_repair(table, args, print_json)
    if args.index_cmd == "describe":
        print_json(table.describe_index(args.name))
        return 0
    if args.index_cmd == "drop":
        table.drop_index(args.name)
        print(f"dropped index {args.name} from {table.path}")
        return 0
    if args.index_cmd in ("refresh", "compact", "vacuum"):
        return _maintain(table, args)
    raise OptionError(f"unknown index command {args.index_cmd!r}")


def _list(table: Any, args: argparse.Namespace) -> int:
    """``lakesieve index list``: every index with its instant, size (base + deltas) and health."""
    from lakesieve.maintenance.index_health import CORRUPT_FILE, OFF_TIMELINE, SIZES, index_health

    rows, problems = index_health(table)
    if args.json:
        print_json([r.to_dict() for r in rows])
    elif not rows:
        print(f"no indexes on {table.path}")
    else:
        print(
            f"{'name':<28} {'type':<8} {'column':<20} {'instant':<20} {'bytes':>10} "
            f"{'deltas':>6}  health"
        )
        for r in rows:
            print(
                f"{r.name:<28} {r.type!s:<8} {r.column!s:<20} {r.instant!s:<20} "
                f"{r.size_bytes:>10} {r.deltas:>6}  {r.health}"
            )
    notes = [f"{r.name}: {r.detail}" for r in rows if r.health in (CORRUPT_FILE, OFF_TIMELINE)]
    notes += [f"{p}; run `lakesieve index repair {table.path}`" for p in problems]
    for line in notes:
        print(f"lakesieve: warning: {line}", file=sys.stderr)
    unhashed = [r.name for r in rows if r.verified == SIZES]
    if unhashed:
        print(
            f"lakesieve: note: checksums of {', '.join(unhashed)} not verified (only file sizes; "
            f"`lakesieve index check {table.path}` verifies them)",
            file=sys.stderr,
        )
    return 0


def _maintain(table: Any, args: argparse.Namespace) -> int:
    """``lakesieve index refresh|compact|vacuum``."""
    from lakesieve.maintenance.refresh import RefreshPolicy

    if args.index_cmd == "vacuum":
        result = table.vacuum(grace_seconds=args.grace_seconds)
        if args.json:
            print_json(result.to_dict())
        else:
            print(
                f"vacuumed {table.path}: {len(result.states_removed)} index states, "
                f"{len(result.orphan_folders_removed)} unreferenced folders, "
                f"{len(result.empty_folders_removed)} empty leftover folders"
                + (
                    f", {len(result.repair_folders_removed)} interrupted repairs' folders"
                    if result.repair_folders_removed
                    else ""
                )
                + " removed"
            )
        return 0
    policy = RefreshPolicy(
        max_deltas=args.max_deltas,
        max_delta_rows=args.max_delta_rows,
        max_delta_share=args.max_delta_share,
        driver_max_mb=args.max_mb,
        vacuum_after_compaction=args.vacuum,
        vacuum_grace_seconds=args.grace_seconds if args.grace_seconds is not None else 3600.0,
    )
    what = f"index {args.name}" if args.name else "the indexes"
    print(f"{args.index_cmd}: {what} of {table.path} ...", file=sys.stderr, flush=True)
    started = time.perf_counter()
    # both start Spark only when there is work: an index behind the table, or deltas to fold
    if args.index_cmd == "refresh":
        results = table.refresh(args.name, policy=policy, spark_conf=PROGRESS)
    else:
        results = table.compact(args.name, policy=policy, spark_conf=PROGRESS)
    print(
        f"{args.index_cmd} done in {time.perf_counter() - started:.1f} s "
        + (
            "(Spark start-up included)"
            if any(r.engine == "spark" for r in results)
            else "(no Spark started)"
        ),
        file=sys.stderr,
        flush=True,
    )
    if args.json:
        print_json([r.to_dict() for r in results])
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
            + (
                f"{r.locations_from_change_data} from change data, "
                if r.locations_from_change_data
                else ""
            )
            + (f"{r.locations_from_logs} from log files alone, " if r.locations_from_logs else "")
            + (
                f"{r.locations_renamed} rewritten files followed to their new names, "
                if r.locations_renamed
                else ""
            )
            + f"{r.seconds:.1f}s"
            + (f" on {r.engine}" if r.engine else "")
            + (f" - {r.note}" if r.note else "")
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
        print_json(results)
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
