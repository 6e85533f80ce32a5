"""The ``lakesieve`` command line.

Bad input (unknown table, column, index type, option, malformed predicate)
prints one line ``lakesieve: error: ...`` and exits with status 2, without a
traceback and without touching the table or its indexes. Names are checked
before Spark starts (:mod:`lakesieve.cli.preflight`), so such a command fails
in the time it takes to read table metadata. Errors name command-line flags,
never the Python API's argument names. Results go to stdout; step lines and
Spark's progress bar go to stderr; where stderr is not a terminal, a line
every 10 seconds tells how far a long command's Spark job is
(:mod:`lakesieve.spark.heartbeat`). A write the file system refuses (full,
read-only, forbidden) is one such line too, naming the path and the fix. A
mistyped flag shows the sub-command's usage and the flag it most likely
meant (:mod:`lakesieve.cli.parser`).

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
from lakesieve.cli.parser import LakesieveParser, chosen_parser, unrecognized_message
from lakesieve.cli.support import add_location_options, cli_wording, installed_version
from lakesieve.cli.table import cmd_explain, cmd_query, cmd_write
from lakesieve.errors import LakesieveError
from lakesieve.spark.heartbeat import heartbeat
from lakesieve.store.errors import refused_write

EXIT_USAGE = 2


# ---------------------------------------------------------------- parser


def _cmd_demo(args: argparse.Namespace) -> int:
    """``lakesieve demo`` (the ``bench`` extra; imported only when run)."""
    from lakesieve.demo.run import demo_command

    return demo_command(args)


TABLE_HELP = "the table's folder or URL (s3://bucket/path...)"
FORMAT_HELP = "hudi, delta or iceberg (default: detected from the table's files)"
AS_OF_HELP = (
    "the table instant to use: Hudi instant time, Delta version or Iceberg snapshot id "
    "(default: the latest)"
)
WHERE_HELP = 'Spark SQL predicate on the table\'s columns, e.g. "k = 5" (required)'
#: the end of a ``--json`` flag's help
TEXT = " (default: text)"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``lakesieve`` command."""
    p = LakesieveParser(
        prog="lakesieve", description="Data-skipping indexes for Hudi, Iceberg and Delta tables."
    )
    p.add_argument(
        "--version",
        action="version",
        version=f"lakesieve {installed_version()}",
        help="print the installed version and exit",
    )
    sub = p.add_subparsers(dest="command", required=True)

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
    w.add_argument(
        "--bucket-rule",
        choices=["mod", "range"],
        help="Delta/Iceberg: how --bucket-column picks a row's file: mod (value mod "
        "--file-groups) or range (contiguous key ranges fixed when the table is created, "
        "so range queries prune); the table keeps it for later writes (default: the "
        "table's; mod for a new table)",
    )
    w.set_defaults(func=cmd_write)

    i = sub.add_parser(
        "index",
        help="build, list, describe, drop, refresh, compact, vacuum, check or repair indexes",
    )
    isub = i.add_subparsers(dest="index_cmd", required=True)
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
    lst = isub.add_parser("list", help="list the indexes of a table")
    lst.add_argument("table", help=TABLE_HELP)
    lst.add_argument("--json", action="store_true", help="print the list as JSON" + TEXT)
    d = isub.add_parser("describe", help="describe one index")
    d.add_argument("table", help=TABLE_HELP)
    d.add_argument("name", help="the index's name (see index list)")
    dr = isub.add_parser("drop", help="drop one index")
    dr.add_argument("table", help=TABLE_HELP)
    dr.add_argument("name", help="the index's name (see index list)")
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
    for sp in (b, lst, d, dr, rf, cm, va, ck, rp):
        sp.add_argument("--format", help=FORMAT_HELP)
    i.set_defaults(func=cmd_index)

    e = sub.add_parser("explain", help="show which locations a predicate selects (no Spark)")
    e.add_argument("table", help=TABLE_HELP)
    e.add_argument("--where", required=True, metavar="PREDICATE", help=WHERE_HELP)
    e.add_argument("--as-of", metavar="INSTANT", help=AS_OF_HELP)
    e.add_argument("--json", action="store_true", help="print the plan as JSON" + TEXT)
    e.add_argument("--format", help=FORMAT_HELP)
    e.set_defaults(func=cmd_explain)

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

    dm = sub.add_parser("demo", help="build a TPC-H Hudi table, index it and run queries")
    dm.add_argument("--scale", type=float, default=0.1, help="TPC-H scale factor (default 0.1)")
    dm.add_argument(
        "--workdir", help="where to put the data, kept afterwards (default: a temporary folder)"
    )
    dm.add_argument(
        "--keep", action="store_true", help="keep the temporary folder (it is removed by default)"
    )
    dm.set_defaults(func=_cmd_demo)

    # the options of ``bench`` live with the suites (lakesieve_bench.runner, the
    # lakesieve-bench distribution): its arguments are passed on and parsed by cmd_bench
    bn = sub.add_parser(
        "bench", help="run a benchmark suite and print its figures as JSON", add_help=False
    )
    bn.set_defaults(func=cmd_bench)

    cp = sub.add_parser("compare", help="build every index type on a column and compare them")
    ad = sub.add_parser("advise", help="recommend an index type for a workload mix")
    cp.add_argument("table", help=TABLE_HELP)
    cp.add_argument("--column", required=True, help="column to index and query (required)")
    ad.add_argument("table", nargs="?", help="the table (not needed with --from-json)")
    ad.add_argument(
        "--column",
        help="the column (required unless --from-json is given; with it: the one it was "
        "measured on)",
    )
    for sp in (cp, ad):
        sp.add_argument("--types", help="index types, comma-separated (default: all installed)")
        sp.add_argument(
            "--queries", type=int, default=200, help="queries per kind (default %(default)s)"
        )
        sp.add_argument(
            "--seed",
            type=int,
            default=42,
            help="seed of the random query set, the same seed drawing the same queries "
            "(default %(default)s)",
        )
        sp.add_argument(
            "--no-e2e",
            action="store_true",
            help="skip the timed end-to-end reads (default: time them)",
        )
        sp.add_argument("--format", help=FORMAT_HELP)
    cp.add_argument("--json", action="store_true", help="print the figures as JSON" + TEXT)
    cp.add_argument(
        "--html", metavar="PATH", help="write a self-contained HTML report here (default: none)"
    )
    cp.add_argument(
        "--keep",
        action="store_true",
        help="keep the cmp_<column>_<type> indexes (default: drop them afterwards)",
    )
    cp.add_argument(
        "--advise",
        action="store_true",
        help="also print the recommendation (default: the figures only)",
    )
    cp.set_defaults(func=cmd_compare)
    for sp in (cp, ad):
        sp.add_argument(
            "--workload", help="KIND=WEIGHT,... (default point=0.6,range_0.1pct=0.3,in=0.1)"
        )
    ad.add_argument(
        "--toml",
        action="store_true",
        help="print a lakesieve.toml fragment (default: the recommendation as text)",
    )
    ad.add_argument("--table-name", help="label under [tables] for --toml (default: folder name)")
    ad.add_argument(
        "--from-json",
        metavar="FILE",
        help="reuse the figures of compare --json instead of measuring (default: measure)",
    )
    ad.set_defaults(func=cmd_advise)
    add_location_options(p)
    return p


def command_label(args: argparse.Namespace) -> str:
    """The command's words, as heartbeat lines name it: ``write``, ``index build``."""
    sub = getattr(args, "index_cmd", None) if args.command == "index" else None
    return f"{args.command} {sub}" if sub else str(args.command)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lakesieve`` command."""
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if args.command == "bench":
        args.bench_args = rest
    elif rest:  # the sub-command's usage, and the flag a mistyped one meant
        chosen = chosen_parser(parser, args)
        chosen.error(unrecognized_message(chosen, rest))
    from lakesieve.cli import interrupt
    from lakesieve.spark.session import on_session_start

    interrupt.install()
    on_session_start(interrupt.install)  # PySpark sets its own handler when a session starts
    try:
        return _run(args)
    except BaseException as exc:
        if isinstance(exc, SystemExit) or not (
            isinstance(exc, KeyboardInterrupt) or interrupt.interrupted()
        ):
            raise
        # whatever the interrupt became on its way up (a py4j error: the JVM got it too)
        print(f"lakesieve: {interrupted_line(args)}", file=sys.stderr)
        return 130


def interrupted_line(args: argparse.Namespace) -> str:
    """What Ctrl-C left behind, in one line: a commit is written last, so no half of one shows."""
    label = command_label(args)
    if label in ("write", "index build"):
        return f"{label} interrupted; nothing was committed"
    return f"{label} interrupted; each index is as its last finished commit left it"


def _run(args: argparse.Namespace) -> int:
    """Check ``args``, then run the command; a bad input is one line on stderr and exit 2."""
    from lakesieve.cli import interrupt

    try:
        from lakesieve.cli.checks import validate_args
        from lakesieve.cli.preflight import preflight

        validate_args(args)  # every value, before a table is opened or Spark starts
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                # every name (table, format, column, index, predicate); still no Spark
                preflight(args)
                with heartbeat(command_label(args)):  # a line every 10 s where no bar is drawn
                    code = int(args.func(args) or 0)
            finally:
                if not interrupt.interrupted():
                    for w in caught:
                        print(f"lakesieve: warning: {w.message}", file=sys.stderr)
        return code
    except LakesieveError as exc:
        if interrupt.interrupted():
            raise
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        message = cli_wording(message)
        print(f"lakesieve: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:  # a write the file system refused outside the index store
        refused = refused_write(exc)
        if refused is None or interrupt.interrupted():
            raise
        print(f"lakesieve: error: {refused}", file=sys.stderr)
        return EXIT_USAGE
