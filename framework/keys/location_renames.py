"""Moving index entries from one location name to another (for :class:`~lakesieve.contract.protocols.RenamesLocations`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

__all__ = ["renamed_locations", "renamed_rows"]


def renamed_locations(names: Sequence[str], renames: Mapping[str, str]) -> list[str] | None:
    """``names`` with each old name of ``renames`` replaced by its new one, in place.

    ``None`` when the renames cannot apply: an old name is not among
    ``names``, a new name already is (and is not itself renamed away), or
    two old names would take one new name.
    """
    present = set(names)
    targets = list(renames.values())
    if len(set(targets)) != len(targets) or any(old not in present for old in renames):
        return None
    if any(new in present and new not in renames for new in targets):
        return None
    return [renames.get(name, name) for name in names]


def renamed_rows(
    locations: np.ndarray, table: pa.Table, renames: Mapping[str, str]
) -> tuple[np.ndarray, pa.Table] | None:
    """An index's location names and its one-row-per-location table, renamed alike.

    For index types that keep a name array beside a stored table with a
    ``location`` column in the same order (zone map, Bloom). ``None`` where
    :func:`renamed_locations` refuses the renames.
    """
    names = renamed_locations(locations.tolist(), renames)
    if names is None:
        return None
    at = table.schema.get_field_index("location")
    column = pa.array(names, pa.string())
    return np.array(names, dtype=object), table.set_column(at, table.schema.field(at), column)
