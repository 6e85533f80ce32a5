"""Everything the ``lakesieve`` command prints goes through here.

Results go to stdout (``--json`` output stays parseable there); step lines,
warnings and errors go to stderr, flushed at once. Errors arrive as data: a
:class:`~lakesieve.errors.LakesieveError` that names an argument carries its
Python API name and value, and :func:`error_line` spells it as the flag that
sets it, never by rewording the message's text.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from lakesieve.errors import LakesieveError

#: Python API argument -> the flag that sets it
FLAGS = {
    "record_key": "--record-key",
    "partition_by": "--partition-by",
    "table_type": "--table-type",
    "precombine": "--precombine",
    "table_name": "--table-name",
    "mode": "--mode",
    "file_groups": "--file-groups",
    "bucket_column": "--bucket-column",
    "max_bytes": "--max-mb",
}


def flag_spelling(argument: str, value: object) -> str:
    """An argument as the command line sets it: ``--record-key``, ``--max-mb 1``."""
    flag = FLAGS.get(argument)
    if flag is None:
        return argument if value is None else f"{argument}={value!r}"
    if value is None:
        return flag
    if argument == "max_bytes" and isinstance(value, int | float):
        return f"{flag} {value / 2**20:g}"
    return f"{flag} {value}"


def error_line(exc: LakesieveError) -> str:
    """The first line of ``exc``'s message, naming flags where it names an argument."""
    message = exc.spelled(flag_spelling) if exc.args else ""
    first = message.splitlines()[0] if message else ""
    return first or type(exc).__name__


def result(text: str = "", *, end: str = "\n") -> None:
    """One piece of a command's result, on stdout."""
    print(text, end=end)


def result_json(obj: Any) -> None:
    """A command's result as indented JSON with sorted keys, on stdout."""
    print(json.dumps(obj, indent=2, sort_keys=True, default=str))


def step(text: str) -> None:
    """A step line of a long command, on stderr, at once."""
    print(text, file=sys.stderr, flush=True)


def warning(text: str) -> None:
    """``lakesieve: warning: ...`` on stderr."""
    print(f"lakesieve: warning: {text}", file=sys.stderr, flush=True)


def error(text: str) -> None:
    """``lakesieve: error: ...`` on stderr."""
    print(f"lakesieve: error: {text}", file=sys.stderr, flush=True)


def notice(text: str) -> None:
    """``lakesieve: ...`` on stderr (an interrupt's one line)."""
    print(f"lakesieve: {text}", file=sys.stderr, flush=True)
