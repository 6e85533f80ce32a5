"""Table services for Hudi tables written by lakesieve (table version 6).

- :func:`compact` — merge-on-read: merge each file slice's logs into a new base file;
- :func:`cluster` — rewrite file groups sorted by a column (``replacecommit``);
- :func:`clean` — delete slices and replaced file groups that the last commits no longer read;
- :func:`write_failed` — a write that stops half-way (files and inflight instant
  left behind), for tests of failure handling;
- :func:`rollback_failed` — undo every such unfinished write, recording ``rollback`` instants.

Each returns the new :class:`~lakesieve.sdk.Instant`, or ``None`` when there was
nothing to do, and raises a one-line :class:`~lakesieve.sdk.WriteError` on bad input.
"""

from __future__ import annotations

from dataclasses import replace

from lakesieve.plugins.hudi.services.clean import clean
from lakesieve.plugins.hudi.services.cluster import cluster
from lakesieve.plugins.hudi.services.common import open_table_state
from lakesieve.plugins.hudi.services.compact import compact
from lakesieve.plugins.hudi.writer import FAIL_BEFORE_COMMIT, write_table
from lakesieve.plugins.hudi.writer.rollback import rollback_pending
from lakesieve.sdk import Instant, WriteOptions
from pyspark.sql import DataFrame, SparkSession

__all__ = ["clean", "cluster", "compact", "rollback_failed", "write_failed"]


def write_failed(spark: SparkSession, path: str, df: DataFrame, options: WriteOptions) -> Instant:
    """Run a write that fails just before it completes, as a crashed writer would.

    Its data and log files, markers and requested/inflight instant files stay;
    no completed instant file is written, so no reader shows its rows.

    Returns:
        The instant left inflight.
    """
    extra = dict(options.extra or {})
    extra[FAIL_BEFORE_COMMIT] = "true"
    return write_table(spark, path, df, replace(options, extra=extra))


def rollback_failed(path: str) -> Instant | None:
    """Roll back every write of the table at ``path`` that started but never completed.

    Deletes their files and instant files and records one completed
    ``rollback`` instant per rolled-back write.

    Returns:
        The last rollback instant, or ``None`` when no write was pending.

    Raises:
        WriteError: there is no Hudi table at ``path``.
    """
    table = open_table_state(path, "roll back")
    created = rollback_pending(table.storage, table.state)
    if not created:
        return None
    return Instant(sort_key=created[-1], id=created[-1], action="rollback")
