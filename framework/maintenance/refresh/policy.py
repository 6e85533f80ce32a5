"""The policy of refresh: when deltas are folded, read on the driver, or skipped for a build."""

from __future__ import annotations

import math
from dataclasses import dataclass

from lakesieve.errors import LakesieveError


@dataclass(frozen=True)
class RefreshPolicy:
    """When refresh folds deltas into a new base.

    Attributes:
        max_deltas: compact once the chain would hold more delta states.
        max_delta_rows: compact once the chain's stored delta rows would exceed this.
        max_delta_share: compact once the chain's delta bytes would exceed this
            share of its base's bytes (a delta holds one entry per changed
            ``(key, location)``, which for a compact index such as Sieve or a
            zone map is soon larger than the whole base); ``inf`` never
            compacts on bytes.
        vacuum_after_compaction: run vacuum after each compaction.
        vacuum_grace_seconds: files no state names are kept this long.
        driver_max_mb: a delta whose reads come to at most about this many
            MiB (the columns it reads of the locations it touches) is read on
            the driver with Arrow, and folded there where the index type can:
            no Spark session starts (0: always Spark).
        rebuild_share: a delta that must be folded by Spark and holds at least
            this share of the table's rows (a rewrite that moved rows between
            all files: every row once removed, once added) is not folded: the
            index is built afresh, which reads the table once (``inf``: never).
    """

    max_deltas: int = 8
    max_delta_rows: int = 1_000_000
    max_delta_share: float = 0.2
    vacuum_after_compaction: bool = False
    vacuum_grace_seconds: float = 3600.0
    driver_max_mb: float = 256.0
    rebuild_share: float = 1.0

    def __post_init__(self) -> None:
        if self.max_deltas < 0:
            raise LakesieveError(f"refresh option max_deltas must be >= 0, got {self.max_deltas}")
        if self.max_delta_rows < 0:
            raise LakesieveError(
                f"refresh option max_delta_rows must be >= 0, got {self.max_delta_rows}"
            )
        if math.isnan(self.max_delta_share) or self.max_delta_share < 0:
            raise LakesieveError(
                f"refresh option max_delta_share must be a number >= 0 (inf: never), got {self.max_delta_share}"
            )
        if math.isnan(self.driver_max_mb) or self.driver_max_mb < 0:
            raise LakesieveError(
                f"refresh option driver_max_mb must be a number >= 0 (0: always Spark), got {self.driver_max_mb}"
            )
        if math.isnan(self.rebuild_share) or self.rebuild_share < 0:
            raise LakesieveError(
                f"refresh option rebuild_share must be a number >= 0 (inf: never), got {self.rebuild_share}"
            )
        if not math.isfinite(self.vacuum_grace_seconds) or self.vacuum_grace_seconds < 0:
            raise LakesieveError(
                f"refresh option vacuum_grace_seconds must be a finite number >= 0, got {self.vacuum_grace_seconds}"
            )

    def large_delta(self, delta_rows: int, table_rows: int | None) -> str | None:
        """Why a delta of ``delta_rows`` is built afresh rather than folded; ``None``: fold it.

        ``table_rows`` is the table's row count at the instant (``None``: not
        known, never built afresh for size).
        """
        if not table_rows or delta_rows < self.rebuild_share * table_rows:
            return None
        return (
            f"the delta held {delta_rows:,} rows, {delta_rows / table_rows:.2f}x the table's "
            f"{table_rows:,} (rebuild_share {self.rebuild_share:g}): built afresh instead of folded"
        )
