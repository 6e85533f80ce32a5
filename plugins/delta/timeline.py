"""The timeline of a Delta table: its committed versions.

An instant's ``id`` is the version as the user writes it (``"0"``, ``"1"``...),
its ``sort_key`` the version zero-padded to 20 digits, its ``action`` the
commit's operation in lower case (``write``, ``delete``, ``merge``,
``create table``...).
"""

from __future__ import annotations

from lakesieve.errors import InstantNotFoundError
from lakesieve.model import Instant, TableRef
from lakesieve.plugins.delta import tables


def sort_key(version: int) -> str:
    """The timeline sort key of a version."""
    return f"{version:020d}"


def instant_of(version: int, action: str = "") -> Instant:
    """The :class:`Instant` of one version."""
    return Instant(sort_key=sort_key(version), id=str(version), action=action)


def list_instants(table: TableRef) -> list[Instant]:
    """Every version delta-rs can still see in the log, oldest first."""
    dt = tables.open_table(table)
    out: dict[int, Instant] = {}
    for commit in dt.history():
        version = commit.get("version")
        if not isinstance(version, int) or version < 0:
            continue
        action = str(commit.get("operation") or "").lower()
        out[version] = instant_of(version, action)
    latest = dt.version()
    if latest >= 0 and latest not in out:
        out[latest] = instant_of(latest)
    return [out[v] for v in sorted(out)]


def resolve(table: TableRef, instant: str | None) -> int | None:
    """The version to read: ``instant`` checked against the table, or the latest one.

    Returns ``None`` for a table without any version.

    Raises:
        InstantNotFoundError: ``instant`` is not a version of the table.
    """
    latest = tables.open_table(table).version()
    if instant is None:
        return latest if latest >= 0 else None
    version = tables.parse_version(instant, table.path)
    if version > latest:
        raise InstantNotFoundError(
            f"version {version} is not a committed version of Delta table {table.path} "
            f"(latest: {latest})"
        )
    return version
