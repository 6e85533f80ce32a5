"""Build parameters of the Sieve index: defaults, meaning and parsing.

Options arrive as strings (from ``lakesieve.toml``, the CLI or the Python
API); :func:`parse_options` turns them into typed values with the defaults
filled in. Every parameter is described in :data:`PARAMS`, which is also what
``describe`` reports.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from lakesieve.errors import OptionError

INDEX_TYPE = "sieve"


@dataclass(frozen=True)
class SieveParams:
    """Typed build parameters (see :data:`PARAMS` for their meaning)."""

    min_run_keys: int = 16
    min_keys_per_block: int = 32
    target_fpr: float = 0.05
    size_weight: float = 6.0
    max_segment_keys: int = 100_000
    budget_entries: int = 16_384
    partition_pairs: int = 1_000_000

    def to_dict(self) -> dict[str, Any]:
        """The parameters as a JSON-serialisable dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, params: Mapping[str, Any] | None) -> SieveParams:
        """Typed parameters from a (possibly partial, possibly string-valued) dict."""
        return cls(**parse_options({k: v for k, v in (params or {}).items() if k in PARAMS}))


@dataclass(frozen=True)
class _Spec:
    kind: str  # "integer" or "number"
    low: float
    low_inclusive: bool
    high: float | None
    help: str


#: Every option: its kind, allowed range and meaning.
PARAMS: dict[str, _Spec] = {
    "min_run_keys": _Spec(
        "integer",
        1,
        True,
        None,
        "a run of at least this many consecutive distinct keys with the same location set "
        "becomes its own segment with a single block (short gaps between such runs are "
        "bridged by the neighbouring segments when their locations cover the gap)",
    ),
    "min_keys_per_block": _Spec(
        "integer",
        1,
        True,
        None,
        "size floor for volatile segments: the block width is never so small that a "
        "segment has fewer than this many distinct keys per block on average",
    ),
    "target_fpr": _Spec(
        "number",
        0.0,
        True,
        1.0,
        "false-positive target of a volatile segment: the share of locations a point "
        "lookup of an indexed key selects that do not hold the key; the widest block "
        "width meeting it is chosen",
    ),
    "size_weight": _Spec(
        "number",
        0.0,
        True,
        None,
        "when no affordable width meets target_fpr, the width minimising "
        "log2(locations selected per point) + size_weight * (location entries / distinct "
        "keys) is chosen: an entry per key must halve the selected locations size_weight "
        "times; larger values favour a smaller index",
    ),
    "max_segment_keys": _Spec(
        "integer",
        1,
        True,
        None,
        "size cap of a volatile segment, in distinct keys (each gets its own block width)",
    ),
    "budget_entries": _Spec(
        "integer",
        0,
        True,
        None,
        "location entries the whole index may spend on blocks finer than the "
        "min_keys_per_block floor (shared over partitions and volatile segments by "
        "distinct keys), so small tables and cheap layouts get finer blocks",
    ),
    "partition_pairs": _Spec(
        "integer",
        1000,
        True,
        None,
        "target rows handed to one Spark partition of the segmentation walk "
        "((key, location) pairs for small key domains, rows with a key otherwise); "
        "bounds the memory of one Python worker",
    ),
}

_DEFAULTS = SieveParams().to_dict()


def describe_options() -> str:
    """One line per option: name, default and meaning."""
    return "\n".join(
        f"{name} (default {_DEFAULTS[name]}): {spec.help}" for name, spec in PARAMS.items()
    )


def _expected(name: str, spec: _Spec) -> str:
    what = "an integer" if spec.kind == "integer" else "a number"
    low = f"{'>=' if spec.low_inclusive else '>'} {spec.low:g}"
    high = f" and < {spec.high:g}" if spec.high is not None else ""
    return f"option {name!r} of index type {INDEX_TYPE!r} expects {what} {low}{high}"


def _parse_value(name: str, raw: Any, spec: _Spec) -> int | float:
    if isinstance(raw, bool):
        raise OptionError(f"{_expected(name, spec)}, got {raw!r}")
    convert: Callable[[str], float] = int if spec.kind == "integer" else float
    value: int | float
    if isinstance(raw, int | float) and not (spec.kind == "integer" and isinstance(raw, float)):
        value = convert(str(raw)) if spec.kind == "integer" else float(raw)
    elif isinstance(raw, str):
        try:
            value = convert(raw.strip())
        except ValueError:
            raise OptionError(f"{_expected(name, spec)}, got {raw!r}") from None
    else:
        raise OptionError(f"{_expected(name, spec)}, got {raw!r}")
    if not math.isfinite(value):  # NaN or infinity: no option means either
        raise OptionError(f"{_expected(name, spec)} (finite), got {raw!r}")
    too_low = value < spec.low if spec.low_inclusive else value <= spec.low
    too_high = spec.high is not None and value >= spec.high
    if too_low or too_high:
        raise OptionError(f"{_expected(name, spec)}, got {raw!r}")
    return value


def parse_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Parse string options into the full, typed parameter dict.

    Args:
        options: option name -> value (strings, or already typed numbers).

    Returns:
        Every parameter, defaults filled in.

    Raises:
        OptionError: an unknown option (naming it and listing the valid ones)
            or a value of the wrong kind or out of range (naming the option
            and what it expects).
    """
    out = dict(_DEFAULTS)
    for raw_name, raw in options.items():
        name = str(raw_name).strip().lower()
        spec = PARAMS.get(name)
        if spec is None:
            raise OptionError(
                f"unknown option {raw_name!r} for index type {INDEX_TYPE!r}; "
                f"valid options: {', '.join(sorted(PARAMS))}"
            )
        out[name] = _parse_value(name, raw, spec)
    return out
