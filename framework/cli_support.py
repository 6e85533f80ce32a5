"""What the ``lakesieve`` commands share: option values, JSON output, Spark settings."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from lakesieve.errors import OptionError

#: Spark settings for long commands: show stage progress on stderr.
PROGRESS = {"spark.ui.showConsoleProgress": "true"}


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


def print_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON with sorted keys."""
    print(json.dumps(obj, indent=2, sort_keys=True, default=str))
