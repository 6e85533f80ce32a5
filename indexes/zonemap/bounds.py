"""Shortening the minimum and maximum of long string and binary keys.

A zone map only needs bounds: a lower bound no greater than every key of the
location and an upper bound no smaller. A prefix of the minimum is a lower
bound. A prefix of the maximum is not, but incrementing the last character
(or byte) of that prefix gives a value greater than the maximum (it agrees
with it up to that character, which is then larger), so it is an upper bound.
Strings are cut at a character boundary and compared by their UTF-8 bytes,
which order like code points.
"""

from __future__ import annotations

from typing import Any

_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = (0xD800, 0xDFFF)


def _str_prefix(value: str, limit: int) -> str:
    return value.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")


def lower_bound(value: Any, limit: int) -> Any:
    """A prefix of ``value`` (``str`` or ``bytes``) of at most ``limit`` bytes; ``limit`` 0 keeps it."""
    if limit <= 0 or value is None:
        return value
    if isinstance(value, str):
        return _str_prefix(value, limit)
    return bytes(value[:limit])


def upper_bound(value: Any, limit: int) -> tuple[Any, bool]:
    """A value ``>= value`` of about ``limit`` bytes, and whether it was shortened.

    Falls back to ``value`` itself when no shorter upper bound exists (every
    kept character is the largest code point, or every kept byte is 0xFF).
    """
    if limit <= 0 or value is None:
        return value, False
    if isinstance(value, str):
        if len(value.encode("utf-8", "surrogatepass")) <= limit:
            return value, False
        head = _str_prefix(value, limit)
        while head:
            code = ord(head[-1]) + 1
            if code <= _MAX_CODE_POINT:
                if _SURROGATES[0] <= code <= _SURROGATES[1]:
                    code = _SURROGATES[1] + 1
                return head[:-1] + chr(code), True
            head = head[:-1]
        return value, False
    raw = bytes(value)
    if len(raw) <= limit:
        return raw, False
    kept = raw[:limit].rstrip(b"\xff")
    if not kept:
        return raw, False
    return kept[:-1] + bytes([kept[-1] + 1]), True
