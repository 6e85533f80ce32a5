"""The delta overlay answers by Spark SQL's comparison rules (issue 15, class 6).

A refreshed index answers from its base plus the positive pairs of its delta
chain (:mod:`lakesieve.state.overlay`). These checks ask the overlay directly,
over every special value of each key type stored the way refresh stores a
delta (Arrow, typed as the column), and compare with the contract kit's
reference, which ``tests/indexes/test_index_contract.py`` checks against Spark SQL.
"""

from __future__ import annotations

import math
from typing import Any

import pyarrow as pa
import pytest
from lakesieve.files.ipc_files import ipc_bytes, ipc_size, read_ipc
from lakesieve.model import KeyQuery
from lakesieve.state.overlay import (
    DeltaOverlay,
    delta_of,
    follow_chain,
    moved_rows,
    renames_of,
    renames_table,
    stored_delta,
)
from lakesieve.testing.index_contract import (
    DEFAULT_KEY_TYPES,
    IndexContract,
    _arrow_type,
    special_values,
    true_locations,
)


class _Queries(IndexContract):
    """The kit's special queries, without an index type."""


def _overlay(
    key_type: str, rows: list[tuple[Any, str]], counts: list[int] | None = None
) -> DeltaOverlay:
    keys = pa.array([k for k, _ in rows], _arrow_type(key_type))
    delta = pa.table(
        {
            "key": keys,
            "location": pa.array([loc for _, loc in rows], pa.string()),
            "count": pa.array(counts or [1] * len(rows), pa.int64()),
        }
    )
    return DeltaOverlay.from_deltas([delta])


@pytest.mark.parametrize("key_type", DEFAULT_KEY_TYPES)
def test_overlay_covers_every_special_value(key_type: str) -> None:
    kit = _Queries()
    rows = [(v, f"loc-{i}") for i, v in enumerate(special_values(key_type))] + [(None, "nulls")]
    overlay = _overlay(key_type, rows)
    for query in kit.special_queries(key_type):
        got = overlay.locations(query)
        truth = true_locations(rows, query)
        assert got is not None, query
        assert truth <= got, (query, sorted(truth - got))


def test_overlay_nan_and_zeros_exactly() -> None:
    rows = [(math.nan, "nan"), (-0.0, "negzero"), (0.0, "zero"), (math.inf, "inf"), (1.0, "one")]
    for key_type in ("float", "double"):
        overlay = _overlay(key_type, rows)
        assert overlay.locations(KeyQuery("range", low=5.0, low_inclusive=False)) == {"nan", "inf"}
        assert overlay.locations(KeyQuery("range", low=math.inf)) == {"nan", "inf"}
        assert overlay.locations(KeyQuery("points", (math.nan,))) == {"nan"}
        assert overlay.locations(KeyQuery("points", (-0.0,))) == {"negzero", "zero"}
        assert overlay.locations(KeyQuery("points", (0.0,))) == {"negzero", "zero"}
        assert overlay.locations(KeyQuery("range", high=0.0, high_inclusive=False)) == frozenset()
        assert overlay.locations(KeyQuery("range", low=2.0, high=1.0)) == frozenset()


def test_overlay_float_column_against_doubles() -> None:
    """``f > 0.1`` compares in double: float32(0.1) = 0.10000000149 matches."""
    rows = [(0.10000000149011612, "f01"), (0.0, "zero")]
    overlay = _overlay("float", rows)
    assert "f01" in (overlay.locations(KeyQuery("range", low=0.1, low_inclusive=False)) or set())
    assert "f01" in (overlay.locations(KeyQuery("range", low=1e-50)) or set())
    big = overlay.locations(KeyQuery("range", low=1e300))
    assert big is not None and "zero" not in big


def test_overlay_ignores_removed_pairs() -> None:
    overlay = _overlay("double", [(math.nan, "gone"), (math.nan, "kept")], counts=[-1, 2])
    assert overlay.locations(KeyQuery("range", low=0.0)) == {"kept"}


# ------------------------------------------------------------------ moved locations


def _delta(rows: list[tuple[int, str, int]]) -> pa.Table:
    return pa.table(
        {
            "key": pa.array([k for k, _, _ in rows], pa.int64()),
            "location": pa.array([loc for _, loc, _ in rows], pa.string()),
            "count": pa.array([c for _, _, c in rows], pa.int64()),
        }
    )


def test_a_chain_moves_names_and_earlier_rows_along() -> None:
    """a -> b, then b -> c: the base's a answers as c, and the first delta's b rows are c's."""
    first = _delta([(1, "b", 1), (2, "b", -1), (3, "n", 1)])
    second = _delta([(4, "c", 1), (3, "n", -1)])
    deltas, moved = follow_chain([(first, {"a": "b"}), (None, {}), (second, {"b": "c"})])
    assert moved == {"a": "c", "b": "c"}
    assert [d.column("location").to_pylist() for d in deltas] == [["c", "c", "n"], ["c", "n"]]
    overlay = DeltaOverlay.from_states([(first, {"a": "b"}), (second, {"b": "c"})])
    assert overlay.moved(frozenset({"a", "x"})) == {"c", "x"}
    assert overlay.locations(KeyQuery("points", values=(1,))) == {"c"}
    assert overlay.locations(KeyQuery("points", values=(3,))) == frozenset()  # summed to 0
    assert overlay.locations(KeyQuery("points", values=(4,))) == {"c"}


def test_renames_files_round_trip_and_refuse_what_is_wrong() -> None:
    renames = {"s3://t/a.parquet": "s3://t/b.parquet", "x": "y"}
    assert renames_of(renames_table(renames)) == renames
    assert renames_of(None) == {}
    with pytest.raises(ValueError, match="lacks its columns"):
        renames_of(pa.table({"location": ["a"]}))
    with pytest.raises(ValueError, match="null"):
        renames_of(pa.table({"location": ["a"], "renamed_to": pa.array([None], pa.string())}))
    with pytest.raises(ValueError, match="twice"):
        renames_of(pa.table({"location": ["a", "a"], "renamed_to": ["b", "c"]}))
    rows = _delta([(1, "a", 1), (2, "z", 1)])
    assert moved_rows(rows, {"a": "b"}).column("location").to_pylist() == ["b", "z"]


def test_a_stored_delta_names_each_location_once_and_reads_back_as_strings() -> None:
    """A delta state stores its locations dictionary-encoded; readers get plain strings back.

    Deltas stored before (plain strings) read back unchanged, and the encoded file is
    smaller: a name is written once, not once per row.
    """
    names = [f"partition=1/file-group-{i % 4:04d}-0" for i in range(1000)]
    delta = pa.table(
        {
            "key": pa.array(range(1000), pa.int64()),
            "location": pa.array(names, pa.string()),
            "count": pa.array([1] * 1000, pa.int64()),
        }
    )
    stored = stored_delta(delta)
    assert pa.types.is_dictionary(stored.schema.field("location").type)
    assert len(stored.column("location").combine_chunks().dictionary) == 4
    assert ipc_size(stored) < ipc_size(delta) / 2
    back = delta_of(read_ipc(ipc_bytes(stored)))
    assert back is not None and back.equals(delta)
    assert delta_of(delta) is not None and delta_of(delta).equals(delta)  # stored before
    assert delta_of(None) is None
    assert stored_delta(stored).equals(stored)  # already encoded: kept as it is
