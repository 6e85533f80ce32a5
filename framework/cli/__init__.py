"""The ``lakesieve`` command line.

Bad input (unknown table, column, index type, option, malformed predicate)
prints one line ``lakesieve: error: ...`` and exits with status 2, without a
traceback and without touching the table or its indexes. Names are checked
before Spark starts (:mod:`lakesieve.cli.preflight`), so such a command fails
in the time it takes to read table metadata. Errors name command-line flags,
never the Python API's argument names. Results go to stdout; step lines and
Spark's progress bar go to stderr. A write the file system refuses (full,
read-only, forbidden) is one such line too, naming the path and the fix.

This module holds the argument parser and :func:`main`; the commands live in
:mod:`lakesieve.cli.table` (``write``, ``explain``, ``query``),
:mod:`lakesieve.cli.index` (``index ...``) and :mod:`lakesieve.cli.measure`
(``bench``, ``demo``, ``compare``, ``advise``).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence

from lakesieve.cli.index import cmd_index
from lakesieve.cli.measure import cmd_advise, cmd_bench, cmd_compare
from lakesieve.cli.support import cli_wording, installed_version
from lakesieve.cli.table import cmd_explain, cmd_query, cmd_write
from lakesieve.errors import LakesieveError
from lakesieve.store.errors import refused_write

EXIT_USAGE = 2


# ---------------------------------------------------------------- parser


def _cmd_demo(args: argparse.Namespace) -> int:
    """``lakesieve demo`` (the ``bench`` extra; imported only when run)."""
    from lakesieve.bench.demo import demo_command

    return demo_command(args)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``lakesieve`` command."""
    p = argparse.ArgumentParser(
        prog="lakesieve", description="Data-skipping indexes for Hudi, Iceberg and Delta tables."
    )
    p.add_argument("--version", action="version", version=f"lakesieve {installed_version()}")
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
    w.add_argument(
        "--bucket-rule",
        choices=["mod", "range"],
        help="Delta/Iceberg: how --bucket-column picks a row's file: mod (value mod "
        "--file-groups, the default) or range (contiguous key ranges fixed when the table "
        "is created, so range queries prune); the table keeps it for later writes",
    )
    w.add_argument("--precombine")
    w.add_argument("--table-name")
    w.add_argument("--write-option", action="append", metavar="K=V", help="format-specific option")
    w.add_argument("--json", action="store_true", help="print the commit as JSON")
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
    b.add_argument(
        "--force",
        action="store_true",
        help="rebuild even when the index is up to date (same definition, newest state at the "
        "instant, files verified); without it such an index is left as it is",
    )
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
        sp.add_argument(
            "--max-delta-share",
            type=float,
            default=0.2,
            help="compact once the deltas' bytes pass this share of the base's (default 0.2)",
        )
        sp.add_argument("--vacuum", action="store_true", help="vacuum after compacting")
    ck = isub.add_parser("check", help="verify the checksum of every index commit and data file")
    rp = isub.add_parser(
        "repair", help="move a damaged index log aside and keep every state that verifies"
    )
    for sp in (ck, rp):
        sp.add_argument("table")
        sp.add_argument("--json", action="store_true")
    ck.add_argument("--index", "--name", dest="index", help="check only this index")
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
    dm.add_argument(
        "--workdir", help="where to put the data, kept afterwards (default: a temporary folder)"
    )
    dm.add_argument(
        "--keep", action="store_true", help="keep the temporary folder (it is removed by default)"
    )
    dm.set_defaults(func=_cmd_demo)

    # the options of ``bench`` live with the suites (lakesieve.bench.runner, the
    # ``bench`` extra): its arguments are passed on and parsed by cmd_bench
    bn = sub.add_parser(
        "bench", help="run a benchmark suite and print its figures as JSON", add_help=False
    )
    bn.set_defaults(func=cmd_bench)

    cp = sub.add_parser("compare", help="build every index type on a column and compare them")
    ad = sub.add_parser("advise", help="recommend an index type for a workload mix")
    cp.add_argument("table")
    cp.add_argument("--column", required=True)
    ad.add_argument("table", nargs="?", help="the table (not needed with --from-json)")
    ad.add_argument("--column", help="the column (with --from-json: the one it was measured on)")
    for sp in (cp, ad):
        sp.add_argument("--types", help="index types, comma-separated (default: all installed)")
        sp.add_argument("--queries", type=int, default=200, help="queries per kind (default 200)")
        sp.add_argument("--seed", type=int, default=42)
        sp.add_argument("--no-e2e", action="store_true", help="skip the timed end-to-end reads")
        sp.add_argument("--format")
    cp.add_argument("--json", action="store_true")
    cp.add_argument("--html", metavar="PATH", help="write a self-contained HTML report here")
    cp.add_argument("--keep", action="store_true", help="keep the cmp_<column>_<type> indexes")
    cp.add_argument("--advise", action="store_true", help="also print the recommendation")
    cp.set_defaults(func=cmd_compare)
    for sp in (cp, ad):
        sp.add_argument(
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
        from lakesieve.cli.checks import validate_args
        from lakesieve.cli.preflight import preflight

        validate_args(args)  # every value, before a table is opened or Spark starts
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                # every name (table, format, column, index, predicate); still no Spark
                preflight(args)
                code = int(args.func(args) or 0)
            finally:
                for w in caught:
                    print(f"lakesieve: warning: {w.message}", file=sys.stderr)
        return code
    except LakesieveError as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        message = cli_wording(message)
        print(f"lakesieve: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:  # a write the file system refused outside the index store
        refused = refused_write(exc)
        if refused is None:
            raise
        print(f"lakesieve: error: {refused}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
