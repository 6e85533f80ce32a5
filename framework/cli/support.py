"""What the ``lakesieve`` commands share: option values, JSON output, Spark settings."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

from lakesieve.errors import OptionError

#: help texts the commands share
TABLE_HELP = "the table's folder or URL (s3://bucket/path...)"
FORMAT_HELP = "hudi, delta or iceberg (default: detected from the table's files)"
AS_OF_HELP = (
    "the table instant to use: Hudi instant time, Delta version or Iceberg snapshot id "
    "(default: the latest)"
)
WHERE_HELP = 'Spark SQL predicate on the table\'s columns, e.g. "k = 5" (required)'
#: the end of a ``--json`` flag's help
TEXT = " (default: text)"


def parse_csv(value: str | None) -> tuple[str, ...]:
    """The non-empty items of a comma-separated option value."""
    if not value:
        return ()
    return tuple(v.strip() for v in value.split(",") if v.strip())


def parse_kv(items: Sequence[str] | None) -> dict[str, str]:
    """``KEY=VALUE`` option values as a dict; anything else is an :class:`OptionError`."""
    out: dict[str, str] = {}
    for item in items or []:
        if "=" not in item:
            raise OptionError(f"option {item!r} is not KEY=VALUE")
        key, value = item.split("=", 1)
        out[key.strip()] = value.strip()
    return out


def installed_version() -> str:
    """The version of the installed ``lakesieve`` distribution (``unknown`` when not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lakesieve")
    except PackageNotFoundError:
        return "unknown"


class Steps:
    """Short step lines on stderr for a long command: what starts, and how long it took.

    stdout is left to the command's result, so ``--json`` output stays parseable.
    """

    def __init__(self) -> None:
        self.started = time.perf_counter()

    def say(self, message: str) -> None:
        """Print one step line on stderr, at once."""
        import lakesieve.cli.output as output

        output.step(message)

    def elapsed(self) -> float:
        """Seconds since the command started."""
        return time.perf_counter() - self.started

    def spark(self, conf: dict[str, str] | None = None) -> tuple[Any, float]:
        """Start (or reuse) the Spark session; returns it and the seconds a start took (0 on reuse)."""
        from lakesieve.spark.session import get_spark

        if "pyspark" in sys.modules:
            from pyspark.sql import SparkSession

            if SparkSession.getActiveSession() is not None:
                return get_spark(conf=conf), 0.0
        t0 = time.perf_counter()
        self.say("starting Spark ...")
        spark = get_spark(conf=conf)
        took = time.perf_counter() - t0
        self.say(f"Spark ready in {took:.1f} s")
        return spark, took


def add_location_options(parser: argparse.ArgumentParser) -> None:
    """``--index-root`` and ``--storage-option`` on every command that reads a TABLE argument."""
    actions = getattr(parser, "_actions", [])
    for action in actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                add_location_options(sub)
    if parser.prog.endswith(" write") or not any(
        a.dest == "table" and not a.option_strings for a in actions
    ):
        return  # ``write`` writes local tables only, for now
    parser.add_argument(
        "--index-root",
        metavar="DIR",
        help="where the table's indexes live (default: <table>/.lakesieve): a local folder "
        "or an object-store URL (s3://...)",
    )
    parser.add_argument(
        "--storage-option",
        action="append",
        metavar="KEY=VALUE",
        help="a storage option of a table on object storage (AWS_ENDPOINT_URL, AWS_REGION...), "
        "repeatable; without it, the standard AWS_* variables alone",
    )


def open_args(args: argparse.Namespace, table: str | None = None) -> Any:
    """The table a command names, with its ``--format``, ``--index-root`` and ``--storage-option``."""
    from lakesieve.spark.object_storage import STORAGE_PREFIX
    from lakesieve.table import open as open_table

    storage = parse_kv(getattr(args, "storage_option", None))
    options = {STORAGE_PREFIX + k: v for k, v in storage.items()}
    return open_table(
        table if table is not None else args.table,
        format=getattr(args, "format", None),
        index_root=getattr(args, "index_root", None),
        options=options or None,
    )
