"""Build parameters of the Sieve index: defaults, meaning and parsing.

Options arrive as strings (from ``lakesieve.toml``, the CLI or the Python
API); :func:`parse_options` turns them into typed values with the defaults
filled in, through the option system every index type shares
(:func:`~lakesieve.sdk.parse_options`). Every parameter is described in
:data:`OPTIONS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from lakesieve.sdk import OptionSpec
from lakesieve.sdk import parse_options as shared_parse_options

INDEX_TYPE = "sieve"


@dataclass(frozen=True)
class SieveParams:
    """Typed build parameters and their defaults (see :data:`OPTIONS` for their meaning)."""

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
        return cls(**parse_options({k: v for k, v in (params or {}).items() if k in OPTIONS}))


#: The defaults, as :class:`SieveParams` declares them.
_DEFAULTS = SieveParams()

#: Every option of the Sieve: its kind, allowed range, default and meaning.
OPTIONS: dict[str, OptionSpec] = {
    "min_run_keys": OptionSpec(
        "integer",
        _DEFAULTS.min_run_keys,
        "a run of at least this many consecutive distinct keys with the same location set "
        "becomes its own segment with a single block (short gaps between such runs are "
        "bridged by the neighbouring segments when their locations cover the gap)",
        low=1,
    ),
    "min_keys_per_block": OptionSpec(
        "integer",
        _DEFAULTS.min_keys_per_block,
        "size floor for volatile segments: the block width is never so small that a "
        "segment has fewer than this many distinct keys per block on average",
        low=1,
    ),
    "target_fpr": OptionSpec(
        "number",
        _DEFAULTS.target_fpr,
        "false-positive target of a volatile segment: the share of locations a point "
        "lookup of an indexed key selects that do not hold the key; the widest block "
        "width meeting it is chosen",
        low=0.0,
        high=1.0,
        high_inclusive=False,
    ),
    "size_weight": OptionSpec(
        "number",
        _DEFAULTS.size_weight,
        "when no affordable width meets target_fpr, the width minimising "
        "log2(locations selected per point) + size_weight * (location entries / distinct "
        "keys) is chosen: an entry per key must halve the selected locations size_weight "
        "times; larger values favour a smaller index",
        low=0.0,
    ),
    "max_segment_keys": OptionSpec(
        "integer",
        _DEFAULTS.max_segment_keys,
        "size cap of a volatile segment, in distinct keys (each gets its own block width)",
        low=1,
    ),
    "budget_entries": OptionSpec(
        "integer",
        _DEFAULTS.budget_entries,
        "location entries the whole index may spend on blocks finer than the "
        "min_keys_per_block floor (shared over partitions and volatile segments by "
        "distinct keys), so small tables and cheap layouts get finer blocks",
        low=0,
    ),
    "partition_pairs": OptionSpec(
        "integer",
        _DEFAULTS.partition_pairs,
        "target rows handed to one Spark partition of the segmentation walk "
        "((key, location) pairs for small key domains, rows with a key otherwise); "
        "bounds the memory of one Python worker",
        low=1000,
    ),
}


def parse_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Parse options into the full, typed parameter dict (the shared option parser).

    Args:
        options: option name -> value (strings, or already typed numbers).

    Returns:
        Every parameter, defaults filled in.

    Raises:
        OptionError: an unknown option (naming it and listing the valid ones)
            or a value of the wrong kind, not finite or out of range (naming
            the option and what it expects).
    """
    return shared_parse_options(INDEX_TYPE, OPTIONS, options)
