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

This module puts the parser together and holds :func:`main`; each command
declares its flags beside its handler: :mod:`lakesieve.cli.table`
(``write``, ``explain``, ``query``), :mod:`lakesieve.cli.index` (``index
...``) and :mod:`lakesieve.cli.measure` (``bench``, ``demo``, ``compare``,
``advise``). Everything printed goes through :mod:`lakesieve.cli.output`.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Sequence

import lakesieve.cli.output as output
from lakesieve.cli.index import add_index
from lakesieve.cli.measure import add_bench, add_compare_and_advise, add_demo
from lakesieve.cli.parser import LakesieveParser, chosen_parser, unrecognized_message
from lakesieve.cli.support import add_location_options, installed_version
from lakesieve.cli.table import add_explain, add_query, add_write
from lakesieve.errors import LakesieveError
from lakesieve.spark.heartbeat import heartbeat
from lakesieve.store.errors import refused_write

EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``lakesieve`` command: each command adds its own flags."""
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
    add_write(sub)
    add_index(sub)
    add_explain(sub)
    add_query(sub)
    add_demo(sub)
    add_bench(sub)
    add_compare_and_advise(sub)
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
        output.notice(interrupted_line(args))
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
                        output.warning(str(w.message))
        return code
    except LakesieveError as exc:
        if interrupt.interrupted():
            raise
        output.error(output.error_line(exc))
        return EXIT_USAGE
    except OSError as exc:  # a write the file system refused outside the index store
        refused = refused_write(exc)
        if refused is None or interrupt.interrupted():
            raise
        output.error(str(refused))
        return EXIT_USAGE
