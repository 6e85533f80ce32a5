"""The session time zone that timestamp literals without a zone are read in.

Spark SQL reads ``'2024-01-31 10:00:00'``, ``TIMESTAMP '2024-01-31 10:00'``,
a ``DATE`` literal and a ``TIMESTAMP_NTZ`` literal compared with a timestamp
(instant) column as a wall-clock time in the session's time zone
(``spark.sql.session.timeZone``). Binding does the same: the zone is held in
a context variable, set by :func:`session_time_zone` around a bind, and is
UTC otherwise (the zone of lakesieve's own session). Wall times that a zone
skips (a daylight-saving gap) or repeats (an overlap) map as Java's
``ZonedDateTime.of`` maps them, which Python's ``fold=0`` matches: a gap time
moves forward by the gap, an overlap time takes the earlier offset.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache

from lakesieve.errors import OptionError

#: Spark's setting that names the zone
TIME_ZONE_KEY = "spark.sql.session.timeZone"

_ZONE: ContextVar[str] = ContextVar("lakesieve_session_time_zone", default="UTC")
_OFFSET = re.compile(r"^(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$")
_UTC_NAMES = frozenset({"UTC", "Z", "GMT", "ETC/UTC", "ETC/GMT", "UCT", "ZULU", "UNIVERSAL"})


@lru_cache(maxsize=64)
def zone_info(name: str) -> dt.tzinfo:
    """The ``tzinfo`` of a Spark time zone name: a region (``Europe/Berlin``), ``UTC`` or an offset.

    Raises:
        OptionError: a name that is neither (the setting is named).
    """
    text = name.strip()
    if text.upper() in _UTC_NAMES:
        return dt.UTC
    m = _OFFSET.match(text)
    if m:
        sign = -1 if m.group(1) == "-" else 1
        hours, minutes, seconds = int(m.group(2)), int(m.group(3) or 0), int(m.group(4) or 0)
        delta = dt.timedelta(hours=hours, minutes=minutes, seconds=seconds)
        return dt.UTC if not delta else dt.timezone(sign * delta)
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise OptionError(
            f"{TIME_ZONE_KEY} = {name!r} is not a time zone lakesieve can read "
            "(a region such as Europe/Berlin, UTC, or an offset such as +05:30)"
        ) from None


@contextmanager
def session_time_zone(name: str | None) -> Iterator[None]:
    """Read zone-less timestamp literals in ``name`` (UTC when ``None``) inside the block.

    Raises:
        OptionError: ``name`` is not a time zone.
    """
    zone_info(name or "UTC")  # refuse a bad name before anything is bound
    token = _ZONE.set(name or "UTC")
    try:
        yield
    finally:
        _ZONE.reset(token)


def current_zone() -> dt.tzinfo:
    """The zone zone-less timestamp literals are read in now."""
    return zone_info(_ZONE.get())


def zone_is_utc() -> bool:
    """Whether the current zone is UTC (then wall times and instants coincide)."""
    return current_zone() is dt.UTC


def wall_to_utc(wall: dt.datetime) -> dt.datetime:
    """A naive wall-clock time in the current zone as a naive UTC instant."""
    zone = current_zone()
    if zone is dt.UTC:
        return wall
    return wall.replace(tzinfo=zone, fold=0).astimezone(dt.UTC).replace(tzinfo=None)
