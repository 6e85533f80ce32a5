"""Answering key queries from the delta states stacked on an index's base.

An index refreshed incrementally is a base state (built or compacted by its
index type) plus a chain of delta states, each the net ``(key, location,
count)`` changes of some commits. Until the chain is compacted, lookups ask
the base and add every location whose summed count over the chain is
positive for a matching key:

* truth at the chain's instant = base truth + summed delta, per (key, location);
* a pair still present has a base count above zero (so the base, a superset
  of its own truth, answers it) or a positive summed delta (so the overlay
  does): no false negatives;
* negative sums are ignored: a location emptied by deletes stays in the base
  answer until compaction folds the delta in (more locations, never fewer).

A delta state may also say that files moved: Delta Lake and Iceberg rewrite
a whole file to change a few of its rows, and a refresh that pairs the old
file with the new one (:mod:`lakesieve.maintenance.refresh.pairs`) stores
the pair in a ``renames`` file beside the delta, whose rows are then only
the keys the new file gained and lost. Lookups give the base's answer under
the new names (:meth:`DeltaOverlay.moved`), and an earlier delta's rows take
the names later states moved them to (:func:`follow_chain`): the new file
holds the old one's keys but those the delta removes, and every key it
gained is a positive pair, so nothing is lost.

Keys are compared by Spark SQL's rules. Keys of every type that
:mod:`lakesieve.keys.mapping` maps injectively (integers, booleans, dates,
timestamps, decimals up to 18 digits, float and double) are compared as the
integers that mapping gives, the one mapping every index type's build uses:
NaN equals NaN and sorts above +inf, ``-0.0`` equals ``0.0``, and a query
value that is not a value of the column (a double between two floats) is
widened to its neighbours. Arrow's own comparisons would say ``NaN > 5`` is
false and could hash ``-0.0`` apart from ``0.0``, losing rows a refresh
added. Strings, binaries and wider decimals are compared with Arrow compute
in the column's Arrow type (bytewise, as Spark orders them). Any value the
overlay cannot compare makes it answer "every location" — a slower, still
exact read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from lakesieve.expressions import spark_type_of
from lakesieve.keys.key_arrays import map_keys_arrow
from lakesieve.keys.mapping import is_injective, map_bound, map_key, supported
from lakesieve.model import KeyQuery

#: Columns of a stored delta.
DELTA_COLUMNS = ("key", "location", "count")

#: Name of the file a delta state stores.
DELTA_FILE = "delta"


def stored_delta(delta: pa.Table) -> pa.Table:
    """``delta`` as a delta state stores it: its columns, each location name stored once.

    A delta holds a row per changed ``(key, location)`` but names few
    locations (those the commits touched), so the ``location`` column is
    dictionary-encoded: each row holds a 32-bit index, each name is written
    once. The store writes Arrow IPC uncompressed, where a name repeated per
    row cost most of a delta's bytes (SF1 interleaved Hudi, 7,576 rows of new
    keys: 459 KB with the names repeated, 8.6% of the exact index's base).
    :func:`delta_of` reads either form back.
    """
    table = delta.select(list(DELTA_COLUMNS))
    at = table.schema.get_field_index("location")
    locations = table.column(at)
    if not pa.types.is_dictionary(locations.type):
        locations = pc.dictionary_encode(locations.combine_chunks().cast(pa.string()))
    return table.set_column(at, pa.field("location", locations.type), locations)


def delta_of(stored: pa.Table | None) -> pa.Table | None:
    """A stored delta file with plain ``location`` strings (``None`` for none).

    Reads what :func:`stored_delta` writes and the plain-string deltas stored
    before it, so every reader of a chain sees one schema.
    """
    if stored is None:
        return None
    table = stored.select(list(DELTA_COLUMNS))
    at = table.schema.get_field_index("location")
    if pa.types.is_dictionary(table.schema.field(at).type):
        table = table.set_column(
            at, pa.field("location", pa.string()), table.column(at).cast(pa.string())
        )
    return table


#: Name of a delta state's file of moved locations (rows ``location``, ``renamed_to``).
RENAMES_FILE = "renames"

#: Columns of a stored renames file.
RENAMES_COLUMNS = ("location", "renamed_to")


def renames_table(renames: Mapping[str, str]) -> pa.Table:
    """``renames`` (old name to new name) as the table a delta state stores."""
    olds = sorted(renames)
    return pa.table(
        {
            RENAMES_COLUMNS[0]: pa.array(olds, pa.string()),
            RENAMES_COLUMNS[1]: pa.array([renames[o] for o in olds], pa.string()),
        }
    )


def renames_of(table: pa.Table | None) -> dict[str, str]:
    """A stored renames file as old name to new name (``{}`` for none).

    Raises:
        ValueError: the file lacks its columns, holds a null, or moves one name twice.
    """
    if table is None:
        return {}
    if not set(RENAMES_COLUMNS) <= set(table.column_names):
        raise ValueError(f"a renames file lacks its columns {list(RENAMES_COLUMNS)}")
    olds = table.column(RENAMES_COLUMNS[0]).to_pylist()
    news = table.column(RENAMES_COLUMNS[1]).to_pylist()
    if any(not isinstance(v, str) for v in (*olds, *news)):
        raise ValueError("a renames file holds a null or non-string name")
    if len(set(olds)) != len(olds):
        raise ValueError("a renames file moves one location twice")
    return dict(zip(olds, news, strict=True))


def moved_rows(delta: pa.Table, renames: Mapping[str, str]) -> pa.Table:
    """A delta's rows with each old location name replaced by its new one."""
    if not delta.num_rows or not renames:
        return delta
    # one lookup per distinct name, not per row (a stored chain may hold millions of rows)
    encoded = delta.column("location").combine_chunks().cast(pa.string()).dictionary_encode()
    names = pa.array([renames.get(n, n) for n in encoded.dictionary.to_pylist()], pa.string())
    at = delta.schema.get_field_index("location")
    return delta.set_column(at, pa.field("location", pa.string()), names.take(encoded.indices))


def follow_chain(
    states: Sequence[tuple[pa.Table | None, Mapping[str, str]]],
) -> tuple[list[pa.Table], dict[str, str]]:
    """A chain's deltas under the names of its newest state, and where each moved name went.

    Args:
        states: each delta state's delta (``None``: none) and renames, oldest first.

    Returns:
        The deltas, each location under the name the last state that moved
        it gave it, and every moved name (first name to last name).
    """
    deltas: list[pa.Table] = []
    moved: dict[str, str] = {}
    for delta, renames in states:
        if renames:
            moved = {old: renames.get(now, now) for old, now in moved.items()}
            for old, new in renames.items():
                moved.setdefault(old, new)
            deltas = [moved_rows(d, renames) for d in deltas]
        if delta is not None:
            deltas.append(delta)
    return deltas, moved


def net_delta(deltas: Sequence[pa.Table]) -> pa.Table:
    """Sum several deltas per (key, location) and drop the pairs that cancel out."""
    tables = [t.select(list(DELTA_COLUMNS)) for t in deltas if t.num_rows]
    if not tables:
        if deltas:
            return deltas[0].select(list(DELTA_COLUMNS)).slice(0, 0)
        return pa.table(
            {
                "key": pa.array([], pa.int64()),
                "location": pa.array([], pa.string()),
                "count": pa.array([], pa.int64()),
            }
        )
    joined = pa.concat_tables(tables, promote_options="default")
    summed = joined.group_by(["key", "location"], use_threads=False).aggregate([("count", "sum")])
    summed = summed.rename_columns(["key", "location", "count"]).select(list(DELTA_COLUMNS))
    return summed.filter(pc.not_equal(summed["count"], 0))


@dataclass
class DeltaOverlay:
    """The positive (key, location) pairs of a delta chain, and the locations it moved, for lookups.

    Attributes:
        positive: rows ``(key, location)`` whose summed count is above zero.
        rows: rows of the summed delta (positive and negative), for describe.
        renames: locations the chain moved, old name to the newest state's name.
    """

    positive: pa.Table
    rows: int
    renames: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_deltas(
        cls, deltas: Sequence[pa.Table], renames: Mapping[str, str] | None = None
    ) -> DeltaOverlay:
        """Sum the chain's deltas (already under the newest names) into an overlay."""
        net = net_delta(deltas)
        positive = net.filter(pc.greater(net["count"], 0)).select(["key", "location"])
        return cls(positive, net.num_rows, dict(renames or {}))

    @classmethod
    def from_states(
        cls, states: Sequence[tuple[pa.Table | None, Mapping[str, str]]]
    ) -> DeltaOverlay:
        """The overlay of a chain's delta states (delta and renames each, oldest first)."""
        deltas, moved = follow_chain(states)
        return cls.from_deltas(deltas, moved)

    def moved(self, locations: frozenset[str] | set[str]) -> frozenset[str]:
        """The base's answer ``locations`` under the names the chain moved them to."""
        if not self.renames:
            return frozenset(locations)
        return frozenset(self.renames.get(loc, loc) for loc in locations)

    def locations(self, query: KeyQuery) -> frozenset[str] | None:
        """Locations with a positive summed count for a key matching ``query``; ``None`` = all."""
        if self.positive.num_rows == 0:
            return frozenset()
        keys = self.positive["key"]
        try:
            mask = _matches(keys, query)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            return None
        if mask is None:
            return None
        chosen = self.positive["location"].filter(mask)
        return frozenset(str(v) for v in pc.unique(chosen).to_pylist())


def _scalar(value: Any, type_: pa.DataType) -> pa.Scalar:
    if pa.types.is_timestamp(type_) and getattr(value, "tzinfo", None) is None and type_.tz:
        import datetime as dt

        value = value.replace(tzinfo=dt.UTC)
    return pa.scalar(value, type=type_)


def _mapped_key_type(type_: pa.DataType) -> str | None:
    """The Spark key type whose integer mapping compares ``type_``'s values exactly, if any."""
    key_type = spark_type_of(type_)
    return key_type if supported(key_type) and is_injective(key_type) else None


def _mapped_matches(keys: pa.ChunkedArray, query: KeyQuery, key_type: str) -> Any:
    """``query`` over the keys' integer mapping (the one the index builds use)."""
    mapped = map_keys_arrow(keys, key_type)
    if query.kind == "points":
        values = [map_key(v, key_type) for v in query.values if v is not None]
        if not values:
            return pa.array([False] * len(keys))
        return pc.fill_null(pc.is_in(mapped, value_set=pa.array(values, pa.int64())), False)
    mask: Any = pc.is_valid(mapped)
    if query.low is not None:
        low, exact = map_bound(query.low, key_type)
        cmp = pc.greater if exact and not query.low_inclusive else pc.greater_equal
        mask = pc.and_kleene(mask, cmp(mapped, pa.scalar(low, pa.int64())))
    if query.high is not None:
        high, exact = map_bound(query.high, key_type)
        cmp = pc.less if exact and not query.high_inclusive else pc.less_equal
        mask = pc.and_kleene(mask, cmp(mapped, pa.scalar(high, pa.int64())))
    return pc.fill_null(mask, False)


def _matches(keys: pa.ChunkedArray, query: KeyQuery) -> Any:
    if query.kind == "is_null":
        return pc.is_null(keys)
    key_type = _mapped_key_type(keys.type)
    if key_type is not None and query.kind in ("points", "range"):
        return _mapped_matches(keys, query, key_type)
    if query.kind == "points":
        values = [v for v in query.values if v is not None]
        if not values:
            return pa.array([False] * len(keys))
        value_set = pa.array([_scalar(v, keys.type).as_py() for v in values], type=keys.type)
        return pc.fill_null(pc.is_in(keys, value_set=value_set), False)
    if query.kind == "range":
        mask: Any = pc.is_valid(keys)
        if query.low is not None:
            low = _scalar(query.low, keys.type)
            cmp = pc.greater_equal if query.low_inclusive else pc.greater
            mask = pc.and_kleene(mask, cmp(keys, low))
        if query.high is not None:
            high = _scalar(query.high, keys.type)
            cmp = pc.less_equal if query.high_inclusive else pc.less
            mask = pc.and_kleene(mask, cmp(keys, high))
        return pc.fill_null(mask, False)
    return None
