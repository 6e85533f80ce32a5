"""Typed build options of index types (the sieve, zonemap, bloom and exact types use them).

Options arrive as strings (``lakesieve.toml``, the CLI, the Python API) or
already typed (a parameter dict handed back to a build). Each index type
declares its options as :class:`OptionSpec` values; :func:`parse_options`
checks them and fills in the defaults, so the dict it returns is the full,
JSON-serialisable parameter set that the index log records.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from lakesieve.errors import OptionError

__all__ = ["OptionSpec", "describe_options", "parse_options"]

#: Spellings of "no value: use the automatic default" for optional options.
AUTO = ("", "auto", "none", "default")


@dataclass(frozen=True)
class OptionSpec:
    """One option: its kind, allowed range, default and meaning.

    Attributes:
        kind: ``"integer"`` or ``"number"``.
        default: the value used when the option is absent (``None`` means
            "decided per location"; only for ``optional`` options).
        help: one line on what it does.
        low: smallest allowed value (``None``: no lower limit).
        low_inclusive: whether ``low`` itself is allowed.
        high: largest allowed value (``None``: no upper limit).
        high_inclusive: whether ``high`` itself is allowed.
        optional: whether ``"auto"`` (or an empty string) selects ``None``.
    """

    kind: Literal["integer", "number"]
    default: int | float | None
    help: str
    low: float | None = None
    low_inclusive: bool = True
    high: float | None = None
    high_inclusive: bool = True
    optional: bool = False

    def expects(self) -> str:
        """What the option accepts, in words."""
        what = "an integer" if self.kind == "integer" else "a number"
        limits = []
        if self.low is not None:
            limits.append(f"{'>=' if self.low_inclusive else '>'} {self.low:g}")
        if self.high is not None:
            limits.append(f"{'<=' if self.high_inclusive else '<'} {self.high:g}")
        text = what + (" " + " and ".join(limits) if limits else "")
        return text + (" or 'auto'" if self.optional else "")


def _convert(name: str, raw: Any, spec: OptionSpec, index_type: str) -> int | float | None:
    def wrong(why: str = "") -> OptionError:
        return OptionError(
            f"option {name!r} of index type {index_type!r} expects {spec.expects()}, "
            f"got {raw!r}{why}"
        )

    if raw is None or (isinstance(raw, str) and raw.strip().lower() in AUTO):
        if spec.optional:
            return None
        raise wrong()
    if isinstance(raw, bool):
        raise wrong()
    value: int | float
    if spec.kind == "integer":
        if isinstance(raw, int):
            value = raw
        elif isinstance(raw, str):
            try:
                value = int(raw.strip().replace("_", ""))
            except ValueError:
                raise wrong() from None
        else:
            raise wrong()
    else:
        if isinstance(raw, int | float):
            value = float(raw)
        elif isinstance(raw, str):
            try:
                value = float(raw.strip())
            except ValueError:
                raise wrong() from None
        else:
            raise wrong()
        if not math.isfinite(value):  # NaN or infinity: no option means either
            raise wrong(", which is not finite")
    if spec.low is not None and (value < spec.low if spec.low_inclusive else value <= spec.low):
        raise wrong()
    if spec.high is not None and (value > spec.high if spec.high_inclusive else value >= spec.high):
        raise wrong()
    return value


def parse_options(
    index_type: str, specs: Mapping[str, OptionSpec], options: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Check options and return every parameter, defaults filled in.

    Args:
        index_type: the index type (named in errors).
        specs: the index type's options.
        options: option name -> value (strings or typed values).

    Returns:
        Parameter name -> typed value, for every option in ``specs``.

    Raises:
        OptionError: an unknown option (naming it and listing the valid
            ones) or a value of the wrong kind or out of range (naming the
            option and what it expects).
    """
    out: dict[str, Any] = {name: spec.default for name, spec in specs.items()}
    for raw_name, raw in (options or {}).items():
        name = str(raw_name).strip().lower()
        spec = specs.get(name)
        if spec is None:
            valid = ", ".join(sorted(specs)) or "none (this index type takes no options)"
            raise OptionError(
                f"unknown option {raw_name!r} for index type {index_type!r}; valid options: {valid}"
            )
        out[name] = _convert(name, raw, spec, index_type)
    return out


def describe_options(specs: Mapping[str, OptionSpec]) -> str:
    """One line per option: name, default and meaning."""
    lines = []
    for name, spec in specs.items():
        default = "auto" if spec.default is None else f"{spec.default:g}"
        lines.append(f"{name} (default {default}): {spec.help}")
    return "\n".join(lines)
