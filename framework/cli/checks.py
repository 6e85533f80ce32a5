"""Checks of command-line arguments that run before any table is opened or Spark starts.

argparse checks types; these check values: index names must be plain names,
numbers must be finite and in range. A bad value raises
:class:`~lakesieve.errors.OptionError` (one line naming the flag), which the
CLI prints and turns into exit status 2 before any Spark job or write.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from lakesieve.errors import OptionError
from lakesieve.store.index_log import check_name

#: flag -> (smallest allowed value, whether the smallest value itself is allowed)
_BOUNDS: dict[str, tuple[float, bool]] = {
    "grace_seconds": (0.0, True),
    "max_deltas": (0.0, True),
    "max_delta_rows": (0.0, True),
    "max_delta_share": (0.0, True),
    "max_mb": (0.0, True),
    "rebuild_share": (0.0, True),
    "limit": (0.0, True),
    "queries": (1.0, True),
    "scale": (0.0, False),
    "file_groups": (1.0, True),
    "commits": (1.0, True),
}


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def _check_number(dest: str, value: Any) -> None:
    low, inclusive = _BOUNDS[dest]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise OptionError(f"{_flag(dest)} must be a finite number, got {value!r}")
    if value < low or (value == low and not inclusive):
        bound = f">= {low:g}" if inclusive else f"> {low:g}"
        raise OptionError(f"{_flag(dest)} must be {bound}, got {value!r}")


def validate_args(args: argparse.Namespace) -> None:
    """Check every value of a parsed command line; raise on the first bad one.

    Raises:
        OptionError: a number out of range or not finite, an index name that is not
            a plain name, or an ``--option`` that is not ``KEY=VALUE``.
    """
    values = vars(args)
    for dest in _BOUNDS:
        if values.get(dest) is not None:
            _check_number(dest, values[dest])
    name = values.get("name")
    if values.get("command") == "index" and name is not None:
        try:
            check_name(name, "index name")
        except Exception as exc:
            raise OptionError(f"--name: {exc}") from None
    for item in values.get("option") or []:
        if "=" not in item or not item.split("=", 1)[0].strip():
            raise OptionError(f"--option {item!r} is not KEY=VALUE")
