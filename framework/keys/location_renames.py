"""Moving index entries from one location name to another (for :class:`~lakesieve.contract.protocols.RenamesLocations`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["renamed_locations"]


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
