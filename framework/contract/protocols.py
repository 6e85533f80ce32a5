"""What a table format and an index type must provide, as typed protocols.

A format plugin answers :func:`lakesieve.contract.hookspecs.lakesieve_format_open`
with an object satisfying :class:`TableFormat`, bound to one table (it knows
the table's path and options). An index plugin answers
:func:`lakesieve.contract.hookspecs.lakesieve_index_types` with objects satisfying
:class:`IndexType`. The framework calls methods on these objects, so every
call is checked by the type checker, and a plugin needs no "is this mine?"
test anywhere except where it recognises a table.

The docstring of each method states its contract; the contract kits in
:mod:`lakesieve.testing` check an implementation against it. Optional
capabilities are protocols of their own (:class:`ReadsChangeImages`,
:class:`ChecksWrites`, :class:`HasTableId`, :class:`MultiPassBuild`,
:class:`ReadsParquetFiles`, :class:`NativeSkipping`), which the
framework checks with ``isinstance``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import pyarrow as pa
    from lakesieve.model import (
        BuiltIndex,
        ChangeImageFiles,
        Changes,
        Instant,
        KeyQuery,
        LookupResult,
        ReadUnit,
        Snapshot,
        WriteOptions,
    )
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


@runtime_checkable
class TableFormat(Protocol):
    """One table seen through its format plugin.

    Opening is cheap: an object may read nothing until a method needs it, and
    no method but :meth:`read` and :meth:`write` may start Spark.
    """

    @property
    def name(self) -> str:
        """The format's name (``"hudi"``, ``"delta"``, ...)."""

    @property
    def path(self) -> str:
        """Absolute path (or URI) of the table root."""

    @property
    def options(self) -> Mapping[str, str]:
        """Format-specific options (catalog settings, storage options)."""

    def timeline(self) -> list[Instant]:
        """Return the completed instants of the table, oldest first.

        Only completed instants count: requested, inflight, failed and
        rolled-back ones never appear. An empty table returns ``[]``.
        """

    def schema(self, instant: str | None) -> pa.Schema:
        """Return the table's Arrow schema at ``instant`` (latest when ``None``).

        Meta columns the format adds (Hudi's ``_hoodie_*``) are included if
        they are in the data files. Must not start Spark.
        """

    def snapshot(self, instant: str | None) -> Snapshot:
        """Return the read units visible at ``instant`` (latest when ``None``).

        One unit per location. Must not start Spark.
        """

    def changes(self, start: str | None, end: str) -> Changes:
        """Return the locations added, rewritten or removed by instants in ``(start, end]``.

        ``start`` of ``None`` means from the beginning of the timeline. Must
        be a superset of the truth: when in doubt, report a location as
        rewritten.
        """

    def read(
        self,
        spark: SparkSession,
        units: Sequence[ReadUnit],
        instant: str | None,
        with_location: bool,
        columns: Sequence[str] | None = None,
    ) -> DataFrame:
        """Return a Spark DataFrame of the rows in ``units`` as of ``instant``.

        Merges log files or applies deletes where the format needs it. With
        ``with_location`` the frame carries the location of each row in a
        string column named :data:`lakesieve.model.LOCATION_COLUMN`. With no
        units, return an empty frame with the table's schema.

        With ``columns``, the frame holds only those columns, in that order
        (and the location): a format that reads rows in Python tasks, where
        Spark cannot prune columns, then reads only those; one whose ``read``
        is a Spark scan can narrow its frame with
        :func:`lakesieve.contract.format_read.select_columns`.
        """

    def read_unit(
        self, unit: ReadUnit, instant: str | None, columns: Sequence[str] | None
    ) -> Iterator[pa.RecordBatch]:
        """Return the rows of one read unit as Arrow record batches, without Spark.

        Used inside Spark's Python workers by the ``lakesieve`` data source,
        which reopens the table there from its path, options and format name;
        so it must only need those and the unit.
        """

    def write(self, spark: SparkSession, df: DataFrame, options: WriteOptions) -> Instant:
        """Write ``df`` to the table as one commit and return the new instant.

        Optional in spirit: a format whose native library writes may still
        implement it so that tests, demos and benchmarks use one interface;
        one that cannot raises :class:`~lakesieve.errors.WriteError`. Creates
        the table when it does not exist. Raises
        :class:`~lakesieve.errors.WriteError` for bad input before anything
        is written.
        """

    def index_root(self) -> str | None:
        """Where lakesieve keeps this table's indexes by default; ``None`` for ``<table>/.lakesieve``.

        A format whose own maintenance (orphan-file removal, vacuum) would
        delete unknown files under the table root answers with a safe
        location.
        """


@runtime_checkable
class LoadedIndex(Protocol):
    """An index state in memory, as :meth:`IndexType.load` returns it: it answers for itself.

    The planner asks it directly. An index type whose loaded object does not
    answer lookups (an older plugin) keeps ``lookup(index, query)`` and
    ``describe(index)`` on the type; the framework then asks the type
    (:func:`lakesieve.contract.loaded.answering`).
    """

    def lookup(self, query: KeyQuery) -> LookupResult:
        """Answer ``query`` with a superset of the locations holding a match.

        Return ``LookupResult.all()`` when this index cannot help (for example
        a Bloom filter asked for a range).
        """

    def describe(self) -> dict[str, Any]:
        """Size in bytes (``size_bytes``), entry counts and parameters."""


@runtime_checkable
class IndexType(Protocol):
    """One kind of index (``sieve``, ``zonemap``, ...): stateless, shared by every table."""

    @property
    def name(self) -> str:
        """The index type's name, unique across installed plugins."""

    def validate(self, options: Mapping[str, str], key_type: str) -> dict[str, Any]:
        """Parse and check build options for a column of Spark type ``key_type``.

        ``key_type`` is a Spark simple type string (``bigint``, ``date``,
        ``decimal(12,2)``, ``string``...). Return the full parameter dict
        (defaults filled in). Raise :class:`~lakesieve.errors.OptionError`
        naming the option, or
        :class:`~lakesieve.errors.UnsupportedKeyTypeError` naming the type.
        """

    def build(
        self,
        spark: SparkSession,
        relation: DataFrame,
        key_type: str,
        params: dict[str, Any],
        locations: Sequence[str] | None = None,
        rows_hint: int | None = None,
    ) -> BuiltIndex:
        """Build an index from ``relation``, a DataFrame of ``(key, location)`` rows.

        Keys repeat and may be null. The heavy work runs in Spark; never
        collect every key on the driver. The result must be small enough for
        the driver.

        ``locations`` (every location the relation may hold, perhaps more)
        and ``rows_hint`` (at least the relation's rows) are what the caller
        knows from the table's metadata, or ``None`` (the default); a build
        may use them to skip a pass over the rows but must stay correct when a
        row's location is not among them.

        An index type may declare ``input_passes`` (:class:`MultiPassBuild`;
        1 when absent): how many times its build reads ``relation``.
        """

    def load(self, built: BuiltIndex) -> LoadedIndex:
        """Turn stored index files back into an in-memory :class:`LoadedIndex`.

        Runs on the driver without Spark. Raise any exception for files that
        do not decode; the framework then falls back to a full scan with a
        warning.
        """

    def lookup(self, index: Any, query: KeyQuery) -> LookupResult:
        """``index.lookup(query)`` (:class:`IndexTypeBase`); an older type answers here instead."""

    def describe(self, index: Any) -> dict[str, Any]:
        """``index.describe()`` (:class:`IndexTypeBase`); an older type answers here instead."""

    def apply_delta(
        self, spark: SparkSession, index: Any, delta: DataFrame, params: dict[str, Any]
    ) -> BuiltIndex | None:
        """Fold one commit's changes into an index and return the new state.

        ``delta`` has rows ``(key, location, count)`` where ``count`` is
        positive for rows added and negative for rows removed at that
        location. Return ``None`` when this index type cannot fold changes;
        the framework then rebuilds the index from scratch instead.
        """

    def compact(self, spark: SparkSession, index: Any, params: dict[str, Any]) -> BuiltIndex | None:
        """Merge accumulated deltas into a new base; ``None`` if nothing to do."""


@runtime_checkable
class ReadsChangeImages(Protocol):
    """Optional for a :class:`TableFormat`: it reads the change images its ``changes`` name.

    A format whose :class:`~lakesieve.model.Changes` carries ``change_images``
    (files holding each changed record's before and after values, such as
    Hudi's change data) lets refresh read those instead of whole locations.
    """

    def read_change_images(
        self,
        spark: SparkSession,
        images: Mapping[str, ChangeImageFiles],
        column: str,
        key_type: Any,
    ) -> DataFrame | None:
        """``(key, location, count)`` rows of the changes in ``images``; ``None``: not for ``column``."""


@runtime_checkable
class ChecksWrites(Protocol):
    """Optional for a :class:`TableFormat`: it refuses a write before Spark starts.

    The command line asks it before ``lakesieve write`` starts Spark, with the
    incoming rows' schema and the write's options, so a write that
    :meth:`TableFormat.write` would refuse fails in the time it takes to read
    metadata. ``write`` still checks everything itself: the Python API gives it
    a Spark frame directly.
    """

    def check_write(self, schema: pa.Schema | None, options: WriteOptions) -> None:
        """Raise :class:`~lakesieve.errors.WriteError` for a write ``write`` would refuse.

        ``schema`` is the Arrow schema of the incoming rows as Spark reads
        them (a naive timestamp is Spark's ``TIMESTAMP_NTZ``, one with a zone
        its ``TIMESTAMP``), or ``None`` when it is not known. Reads table
        metadata only, writes nothing, never starts Spark, and refuses only
        what ``write`` would refuse, with the same one-line message; when in
        doubt it lets ``write`` decide.
        """


@runtime_checkable
class FoldsOnDriver(Protocol):
    """Optional for an :class:`IndexType`: it folds a small delta into an index without Spark.

    A refresh of a small change computes its delta on the driver
    (:mod:`lakesieve.maintenance.refresh.driver`); when the refresh policy
    folds the delta chain into a new base, an index type with this method
    does it in the same process, and no Spark session starts.
    """

    def apply_delta_arrow(
        self, index: Any, delta: pa.Table, params: dict[str, Any]
    ) -> BuiltIndex | None:
        """The index with ``delta`` folded in, as :meth:`IndexType.apply_delta` would fold it.

        ``delta`` has columns ``key`` (the Arrow type Spark hands the column
        over in), ``location`` (string) and ``count`` (int64): one row per
        ``(key, location)`` by Spark's equality (every NaN one key, ``-0.0``
        equal to ``0.0``, nulls one key), none summing to 0. Return ``None``
        where this fold needs Spark (the framework then folds with
        :meth:`IndexType.apply_delta`).
        """


@runtime_checkable
class RenamesLocations(Protocol):
    """Optional for an :class:`IndexType`: a location's entry can move to another name.

    Delta Lake and Iceberg rewrite a whole file to change a few of its rows:
    one location leaves the snapshot and another, holding mostly the same
    rows, enters it. A refresh on the driver pairs such files
    (:mod:`lakesieve.maintenance.refresh.pairs`) and keeps a delta of only
    the keys the new file gained and lost, with the pairs beside it (for
    every index type; lookups answer the base under the new names). When
    such a chain is folded, the base's entries move to their new names with
    this method before the delta is folded in, instead of every row of both
    files; a type without it is rebuilt.
    """

    def rename_locations(self, index: Any, renames: Mapping[str, str]) -> Any | None:
        """The loaded ``index`` with each old location's entry under its new name.

        ``None`` declines (a fold the policy must make then rebuilds the
        index; one it may make keeps the delta stored): where an old name
        has no entry, a new name already has one, or the index cannot
        rename. The result is handed to ``apply_delta_arrow`` or
        ``apply_delta``; it is never stored as it is, and ``index`` is left
        as it was.
        """


@runtime_checkable
class RebuildsLocations(Protocol):
    """Optional for an :class:`IndexType`: compaction gives it back what a build would have written.

    For an index type whose entry for a location depends only on that
    location's rows (a Bloom filter per location), folding a delta keeps a
    correct entry that a build would not write (a filter sized for the keys
    it first held, removed keys' bits kept: more false positives). Compaction
    asks such a type which locations' entries folds have changed
    (:meth:`inexact_locations`), reads those locations' rows at the
    compaction's instant, and folds them, every row counted ``+1``, into the
    index without those locations (:meth:`without_locations`), through
    :meth:`IndexType.apply_delta` or ``apply_delta_arrow``. A location a
    delta brings in whole is new to the fold and must come out as a build
    writes it; so the compacted index is the one a fresh build writes.
    """

    def inexact_locations(self, index: Any) -> list[str]:
        """Locations of the loaded ``index`` whose entry a fresh build would write differently.

        Every location a fold changed since its entry was built from all of
        its rows; a location the fold added whole is not among them.
        """

    def without_locations(self, index: Any, locations: Sequence[str]) -> Any:
        """The loaded ``index`` with no entry for ``locations`` (names it does not hold are ignored).

        The result is handed to ``apply_delta`` or ``apply_delta_arrow``
        with the rows of those locations; it is never stored as it is.
        """


@runtime_checkable
class HasTableId(Protocol):
    """Optional for a :class:`TableFormat`: an identity the table keeps for its whole life.

    The index store records it at the first build and uses no index recorded
    under another identity: a table removed and written again at the same
    path (its instants may repeat, as Delta versions do) never answers from
    the indexes of the table that was there before.
    """

    def table_id(self) -> str | None:
        """The table's identity (Delta: the ``metaData`` id; Iceberg: the table UUID).

        The same for every instant of one table, different for another table
        at the same path; ``None`` when the table records none. Reads metadata
        only; never starts Spark.
        """


@runtime_checkable
class ReadsParquetFiles(Protocol):
    """Optional for a :class:`TableFormat`: which read units are Parquet files Spark reads as they are.

    ``format("lakesieve")`` hands such files to Spark's own Parquet scan as
    data (no listing, no DataFrame per scan); every other unit keeps the
    format's :meth:`TableFormat.read` (a scan selecting any such unit reads
    all its units that way).
    """

    def parquet_files(
        self, units: Sequence[ReadUnit], instant: str | None
    ) -> list[tuple[str, int] | None]:
        """Per unit of the snapshot at ``instant``, its data file and exact size, or ``None``.

        A file (an absolute path or URI) qualifies only when Spark's Parquet
        reader, reading it by column name in :meth:`spark_schema`'s types,
        gives exactly the rows :meth:`TableFormat.read` gives for the unit:
        no log files to merge, no deletes to apply, no renamed or mapped
        columns, no column whose values live outside the file. The size must
        be the file's exact length. Reads metadata only; never starts Spark.
        """

    def spark_schema(
        self, spark: SparkSession, instant: str | None, units: Sequence[ReadUnit]
    ) -> StructType | None:
        """The Spark schema :meth:`TableFormat.read` gives ``units`` at ``instant`` (every column).

        ``None`` when the format cannot say without reading the rows.
        """


@runtime_checkable
class SkipsFiles(Protocol):
    """Which locations a format's own data skipping reads, for key queries on one column.

    What :meth:`NativeSkipping.native_skipping` returns: the format's planning
    (or the statistics it plans with) for one column at one instant, asked one
    :class:`~lakesieve.model.KeyQuery` at a time, as the planner asks an index.
    """

    @property
    def source(self) -> str:
        """One line naming exactly what answers (the library, the statistics it reads)."""

    @property
    def approximation(self) -> bool:
        """``False`` only where the answer is the format's own planning code, not a model of it."""

    def lookup(self, query: KeyQuery) -> LookupResult:
        """The locations the format's skipping reads for ``query``: never one fewer than hold a match.

        A match is decided by Spark SQL (NULLs never match a comparison, NaN
        is above every number and equal to itself, ``-0.0 = 0.0``, strings
        by their UTF-8 bytes). ``LookupResult.all()`` where it cannot say.
        """


@runtime_checkable
class NativeSkipping(Protocol):
    """Optional for a :class:`TableFormat`: the files its own data skipping would read.

    ``lakesieve compare`` reports, beside the index types, how many locations
    the table format itself reads for the same queries. A format without this
    method gets the framework's model: minimum and maximum from the Parquet
    footers of each location's base file (:mod:`lakesieve.measure.native`).
    """

    def native_skipping(self, instant: str | None, column: str, key_type: str) -> SkipsFiles | None:
        """The format's skipping for ``column`` (Spark type ``key_type``) at ``instant``.

        ``None`` where the format has nothing better than the framework's
        footer model for this column. Reads metadata only; never starts Spark.
        """


@runtime_checkable
class MultiPassBuild(Protocol):
    """Optional for an :class:`IndexType`: its build reads the relation ``input_passes`` times.

    With 2 or more, the framework caches a relation that is costly to compute
    (rows merged in Python tasks) before the build and releases it after.
    """

    input_passes: int
