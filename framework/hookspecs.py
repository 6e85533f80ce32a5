"""Every hook lakesieve calls, in one module (the pluggy/pytest way).

A plugin is a module (or object) with functions named like these hooks and
marked with :data:`lakesieve.hookimpl`. Built-in plugins are registered through
the ``lakesieve`` entry-point group exactly like third-party ones.

Dispatch by name: format hooks receive a :class:`~lakesieve.model.TableRef`
and index hooks an ``index_type`` string. A plugin answers only for its own
format or index type and returns ``None`` otherwise; for ``firstresult`` hooks
the first non-``None`` answer wins. The framework raises a clear error naming
the format or index type when no plugin answers.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import pyarrow as pa
    from lakesieve.model import (
        BuiltIndex,
        Changes,
        Instant,
        KeyQuery,
        LookupResult,
        ReadUnit,
        Snapshot,
        TableRef,
        WriteOptions,
    )
    from pyspark.sql import DataFrame, SparkSession

PROJECT = "lakesieve"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# ---------------------------------------------------------------------------
# format hooks: what a table format must answer
# ---------------------------------------------------------------------------


@hookspec
def lakesieve_format_names() -> list[str]:
    """Return the format names this plugin provides (e.g. ``["hudi"]``).

    Called once when plugins load; all answers are collected. Two plugins
    providing one name is an error naming both.
    """


@hookspec
def lakesieve_format_identify(path: str) -> str | None:
    """Return your format name if you can open the table at ``path``, else ``None``.

    Every plugin is asked and every answer collected; the framework refuses a
    table that two plugins claim. Must be cheap (look for marker files) and
    must not raise for paths that are not yours.
    """


@hookspec(firstresult=True)
def lakesieve_format_timeline(table: TableRef) -> list[Instant] | None:
    """Return the completed instants of ``table``, oldest first.

    Only completed instants count: requested, inflight, failed and rolled-back
    ones never appear. An empty table returns ``[]``.
    """


@hookspec(firstresult=True)
def lakesieve_format_schema(table: TableRef, instant: str | None) -> pa.Schema | None:
    """Return the table's Arrow schema at ``instant`` (latest when ``None``).

    Meta columns the format adds (Hudi's ``_hoodie_*``) are included if they
    are in the data files. Must not start Spark.
    """


@hookspec(firstresult=True)
def lakesieve_format_snapshot(table: TableRef, instant: str | None) -> Snapshot | None:
    """Return the read units visible at ``instant`` (latest when ``None``).

    One unit per location. Must not start Spark.
    """


@hookspec(firstresult=True)
def lakesieve_format_changes(table: TableRef, start: str | None, end: str) -> Changes | None:
    """Return the locations added, rewritten or removed by instants in ``(start, end]``.

    ``start`` of ``None`` means from the beginning of the timeline. Must be a
    superset of the truth: when in doubt, report a location as rewritten.
    """


@hookspec(firstresult=True)
def lakesieve_format_read(
    table: TableRef,
    spark: SparkSession,
    units: Sequence[ReadUnit],
    instant: str | None,
    with_location: bool,
) -> DataFrame | None:
    """Return a Spark DataFrame of the rows in ``units`` as of ``instant``.

    Merges log files or applies deletes where the format needs it. With
    ``with_location`` the frame carries the location of each row in a string
    column named :data:`lakesieve.model.LOCATION_COLUMN`. With no units, return
    an empty frame with the table's schema.
    """


@hookspec(firstresult=True)
def lakesieve_format_read_unit(
    table: TableRef, unit: ReadUnit, instant: str | None, columns: Sequence[str] | None
) -> Iterator[pa.RecordBatch] | None:
    """Return the rows of one read unit as Arrow record batches, without Spark.

    Used inside Spark's Python workers by the ``lakesieve`` data source, so it
    must only need the table path and the unit.
    """


@hookspec(firstresult=True)
def lakesieve_format_write(
    table: TableRef, spark: SparkSession, df: DataFrame, options: WriteOptions
) -> Instant | None:
    """Write ``df`` to ``table`` as one commit and return the new instant.

    Optional: formats whose native library writes may still implement it so
    that tests, demos and benchmarks use one interface. Creates the table when
    it does not exist. Raises :class:`~lakesieve.errors.WriteError` for bad input
    before anything is written.
    """


@hookspec(firstresult=True)
def lakesieve_format_index_root(table: TableRef) -> str | None:
    """Where lakesieve keeps this table's indexes by default, or ``None`` for ``<table>/.lakesieve``.

    A format whose own maintenance (orphan-file removal, vacuum) would delete
    unknown files under the table root answers with a safe location.
    """


# ---------------------------------------------------------------------------
# index hooks: what an index type must answer
# ---------------------------------------------------------------------------


@hookspec
def lakesieve_index_types() -> list[str]:
    """Return the index type names this plugin provides (e.g. ``["sieve"]``)."""


@hookspec(firstresult=True)
def lakesieve_index_validate(
    index_type: str, options: dict[str, str], key_type: str
) -> dict[str, Any] | None:
    """Parse and check build options for a column of Spark type ``key_type``.

    ``key_type`` is a Spark simple type string (``bigint``, ``date``,
    ``decimal(12,2)``, ``string``...). Return the full parameter dict (defaults
    filled in). Raise :class:`~lakesieve.errors.OptionError` naming the option,
    or :class:`~lakesieve.errors.UnsupportedKeyTypeError` naming the type.
    """


@hookspec(firstresult=True)
def lakesieve_index_build(
    index_type: str,
    spark: SparkSession,
    relation: DataFrame,
    key_type: str,
    params: dict[str, Any],
    locations: Sequence[str] | None,
    rows_hint: int | None,
) -> BuiltIndex | None:
    """Build an index from ``relation``, a DataFrame of ``(key, location)`` rows.

    Keys repeat and may be null. The heavy work runs in Spark; never collect
    every key on the driver. The result must be small enough for the driver.

    ``locations`` (every location the relation may hold, perhaps more) and
    ``rows_hint`` (at least the relation's rows) are what the caller knows
    from the table's metadata, or ``None``; a build may use them to skip a
    pass over the rows but must stay correct when a row's location is not
    among them. An implementation that has no use for them leaves them out
    of its signature.
    """


@hookspec(firstresult=True)
def lakesieve_index_load(index_type: str, built: BuiltIndex) -> Any | None:
    """Turn stored index files back into an in-memory object for lookups.

    Runs on the driver without Spark. Raise any exception for files that do
    not decode; the framework then falls back to a full scan with a warning.
    """


@hookspec(firstresult=True)
def lakesieve_index_lookup(index_type: str, index: Any, query: KeyQuery) -> LookupResult | None:
    """Answer ``query`` with a superset of the locations holding a match.

    Return ``LookupResult.all()`` when this index cannot help (for example a
    Bloom filter asked for a range).
    """


@hookspec(firstresult=True)
def lakesieve_index_describe(index_type: str, index: Any) -> dict[str, Any] | None:
    """Return size in bytes (``size_bytes``), entry counts and parameters."""


@hookspec(firstresult=True)
def lakesieve_index_apply_delta(
    index_type: str, spark: SparkSession, index: Any, delta: DataFrame, params: dict[str, Any]
) -> BuiltIndex | None:
    """Fold one commit's changes into an index and return the new state.

    ``delta`` has rows ``(key, location, count)`` where ``count`` is positive
    for rows added and negative for rows removed at that location. An index
    type that does not implement this hook is rebuilt from scratch instead.
    """


@hookspec(firstresult=True)
def lakesieve_index_compact(
    index_type: str, spark: SparkSession, index: Any, params: dict[str, Any]
) -> BuiltIndex | None:
    """Merge accumulated deltas into a new base; ``None`` if nothing to do."""
