"""``lakesieve index``: build, list, describe, drop, refresh, compact, vacuum, check, repair."""

from __future__ import annotations

import argparse
import time
from typing import Any

import lakesieve.cli.output as output
from lakesieve.cli.support import AS_OF_HELP, FORMAT_HELP, TABLE_HELP, TEXT, open_args, parse_kv
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
            progress=output.step,
            force=getattr(args, "force", False),
        )
        if args.json:
            output.result_json(desc)
            return 0
        if desc["action"] == "up-to-date":
            output.result(
                f"index {desc['name']} ({desc['type']} on {desc['column']}) is up to date at "
                f"instant {desc['instant']}: {desc['size_bytes']} bytes; --force rebuilds it"
            )
            return 0
        output.result(
            f"built index {desc['name']} ({desc['type']} on {desc['column']}) at instant "
            f"{desc['instant']}: {desc['size_bytes']} bytes in {time.perf_counter() - started:.1f} s "
            "(Spark start-up included)"
        )
        repaired = desc.get("repaired") or []
        if repaired:
            output.result(
                f"repaired index {desc['name']}: removed {len(repaired)} broken state(s) "
                f"(first: {repaired[0]})"
            )
        return 0
    if args.index_cmd == "list":
        return _list(table, args)
    if args.index_cmd in ("check", "repair"):
        from lakesieve.cli.repair import run_check_or_repair

        return run_check_or_repair(table, args)
    if args.index_cmd == "describe":
        output.result_json(table.describe_index(args.name))
        return 0
    if args.index_cmd == "drop":
        table.drop_index(args.name)
        output.result(f"dropped index {args.name} from {table.path}")
        return 0
    if args.index_cmd in ("refresh", "compact", "vacuum"):
        return _maintain(table, args)
    raise OptionError(f"unknown index command {args.index_cmd!r}")


def _list(table: Any, args: argparse.Namespace) -> int:
    """``lakesieve index list``: every index with its instant, size (base + deltas) and health."""
    from lakesieve.maintenance.index_health import CORRUPT_FILE, OFF_TIMELINE, SIZES, index_health

    rows, problems = index_health(table)
    if args.json:
        output.result_json([r.to_dict() for r in rows])
    elif not rows:
        output.result(f"no indexes on {table.path}")
    else:
        output.result(
            f"{'name':<28} {'type':<8} {'column':<20} {'instant':<20} {'bytes':>10} "
            f"{'deltas':>6}  health"
        )
        for r in rows:
            output.result(
                f"{r.name:<28} {r.type!s:<8} {r.column!s:<20} {r.instant!s:<20} "
                f"{r.size_bytes:>10} {r.deltas:>6}  {r.health}"
            )
    notes = [f"{r.name}: {r.detail}" for r in rows if r.health in (CORRUPT_FILE, OFF_TIMELINE)]
    notes += [f"{p}; run `lakesieve index repair {table.path}`" for p in problems]
    for line in notes:
        output.warning(line)
    unhashed = [r.name for r in rows if r.verified == SIZES]
    if unhashed:
        output.notice(
            f"note: checksums of {', '.join(unhashed)} not verified (only file sizes; "
            f"`lakesieve index check {table.path}` verifies them)"
        )
    return 0


def _maintain(table: Any, args: argparse.Namespace) -> int:
    """``lakesieve index refresh|compact|vacuum``."""
    from lakesieve.maintenance.refresh import RefreshPolicy

    if args.index_cmd == "vacuum":
        result = table.vacuum(grace_seconds=args.grace_seconds)
        if args.json:
            output.result_json(result.to_dict())
        else:
            output.result(
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
        rebuild_share=getattr(args, "rebuild_share", RefreshPolicy.rebuild_share),
        vacuum_after_compaction=args.vacuum,
        vacuum_grace_seconds=args.grace_seconds if args.grace_seconds is not None else 3600.0,
    )
    what = f"index {args.name}" if args.name else "the indexes"
    output.step(f"{args.index_cmd}: {what} of {table.path} ...")
    started = time.perf_counter()
    # both start Spark only when there is work: an index behind the table, or deltas to fold
    if args.index_cmd == "refresh":
        results = table.refresh(args.name, policy=policy, spark_conf=PROGRESS)
    else:
        results = table.compact(args.name, policy=policy, spark_conf=PROGRESS)
    output.step(
        f"{args.index_cmd} done in {time.perf_counter() - started:.1f} s "
        + (
            "(Spark start-up included)"
            if any(r.engine == "spark" for r in results)
            else "(no Spark started)"
        )
    )
    if args.json:
        output.result_json([r.to_dict() for r in results])
        return 0
    if not results:
        output.result(f"no indexes to {args.index_cmd} on {table.path}")
    for r in results:
        detail = (
            f"{r.from_instant} -> {r.to_instant}"
            if r.from_instant != r.to_instant
            else f"at {r.to_instant}"
        )
        output.result(
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
    results = build_declared(config, progress=output.step, spark_conf=PROGRESS)
    if args.json:
        output.result_json(results)
        return 0
    for r in results:
        what = f"index {r['index']} ({r['type']} on {r['column']}) of table {r['table']}"
        if r["action"] == "built":
            output.result(
                f"built {what} at instant {r['instant']}: {r['size_bytes']} bytes in "
                f"{r['seconds']:.1f}s ({r['reason']})"
            )
        else:
            output.result(f"up-to-date {what} at instant {r['instant']}")
    return 0


# ---------------------------------------------------------------- flags


def add_index(sub: Any) -> None:
    """``lakesieve index``'s sub-commands and their flags."""
    i = sub.add_parser(
        "index",
        help="build, list, describe, drop, refresh, compact, vacuum, check or repair indexes",
    )
    isub = i.add_subparsers(dest="index_cmd", required=True)
    _add_build(isub)
    _add_browse(isub)
    _add_maintain(isub)
    _add_check_and_repair(isub)
    for sp in isub.choices.values():
        sp.add_argument("--format", help=FORMAT_HELP)
    i.set_defaults(func=cmd_index)


def _add_build(isub: Any) -> None:
    """``index build``'s flags."""
    b = isub.add_parser(
        "build", help="build an index on a column, or the indexes a config declares"
    )
    b.add_argument("table", nargs="?", help=TABLE_HELP + " (required unless --config is given)")
    b.add_argument("--column", help="column to index (required unless --config is given)")
    b.add_argument(
        "--type", help="index type: sieve, zonemap, bloom, exact or a plugin's (default sieve)"
    )
    b.add_argument(
        "--config",
        metavar="FILE",
        help="build the indexes declared in a lakesieve.toml that need it (default: none)",
    )
    b.add_argument("--name", help="index name (default: COLUMN_TYPE, e.g. k_sieve)")
    b.add_argument(
        "--option",
        action="append",
        metavar="K=V",
        help="index type option, repeatable (default: the type's defaults)",
    )
    b.add_argument("--as-of", metavar="INSTANT", help=AS_OF_HELP)
    b.add_argument(
        "--force",
        action="store_true",
        help="rebuild even when the index is up to date (same definition, newest state at the "
        "instant, files verified); without it such an index is left as it is",
    )
    b.add_argument("--json", action="store_true", help="print the new index as JSON" + TEXT)


def _add_browse(isub: Any) -> None:
    """``index list``, ``describe`` and ``drop``."""
    lst = isub.add_parser("list", help="list the indexes of a table")
    lst.add_argument("table", help=TABLE_HELP)
    lst.add_argument("--json", action="store_true", help="print the list as JSON" + TEXT)
    d = isub.add_parser("describe", help="describe one index")
    d.add_argument("table", help=TABLE_HELP)
    d.add_argument("name", help="the index's name (see index list)")
    dr = isub.add_parser("drop", help="drop one index")
    dr.add_argument("table", help=TABLE_HELP)
    dr.add_argument("name", help="the index's name (see index list)")


def _add_maintain(isub: Any) -> None:
    """``index refresh``, ``compact`` and ``vacuum``."""
    rf = isub.add_parser(
        "refresh", help="bring indexes up to the latest instant, reading only what changed"
    )
    cm = isub.add_parser("compact", help="fold the deltas of indexes into a new base")
    va = isub.add_parser("vacuum", help="remove index states of instants the table no longer keeps")
    for sp in (rf, cm, va):
        sp.add_argument("table", help=TABLE_HELP)
        sp.add_argument("--json", action="store_true", help="print the results as JSON" + TEXT)
        sp.add_argument(
            "--grace-seconds",
            type=float,
            default=None,
            help="keep unreferenced index files younger than this (default 3600)",
        )
    for sp in (rf, cm):
        sp.add_argument("--name", help="only this index (default: every index of the table)")
        sp.add_argument(
            "--max-deltas",
            type=int,
            default=8,
            help="compact past this many delta states (default %(default)s)",
        )
        sp.add_argument(
            "--max-delta-rows",
            type=int,
            default=1_000_000,
            help="compact past this many stored delta rows (default %(default)s)",
        )
        sp.add_argument(
            "--max-delta-share",
            type=float,
            default=0.2,
            help="compact once the deltas' bytes pass this share of the base's "
            "(default %(default)s)",
        )
        sp.add_argument(
            "--max-mb",
            type=float,
            default=256.0,
            help="read and fold the changes on the driver with Arrow, without starting Spark, "
            "when the columns read of the locations they touch come to at most about this "
            "many MiB; 0: always Spark (default %(default)g)",
        )
        sp.add_argument(
            "--vacuum", action="store_true", help="vacuum after compacting (default: no vacuum)"
        )
    rf.add_argument(
        "--rebuild-share",
        type=float,
        default=1.0,
        help="build an index afresh instead of folding a delta by Spark when the delta holds this "
        "share of the table's rows or more (default %(default)g)",
    )


def _add_check_and_repair(isub: Any) -> None:
    """``index check`` and ``repair``."""
    ck = isub.add_parser("check", help="verify the checksum of every index commit and data file")
    rp = isub.add_parser(
        "repair",
        help="replace a damaged index log (moved aside on a disk, reset on object storage), "
        "keeping every state that verifies",
    )
    for sp in (ck, rp):
        sp.add_argument("table", help=TABLE_HELP)
        sp.add_argument("--json", action="store_true", help="print the report as JSON" + TEXT)
    ck.add_argument(
        "--index",
        "--name",
        dest="index",
        help="check only this index (default: every index of the table)",
    )
    rp.add_argument(
        "--rebuild",
        action="store_true",
        help="rebuild (Spark) every index that lost its newest state, instead of dropping it "
        "(default: drop it)",
    )
