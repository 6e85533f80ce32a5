"""The index store of one table, which reads a log recorded for another table as empty.

A store keeps, from its first build, the fingerprint of the table it serves;
where the format gives a lifelong table identity (Delta's ``metaData`` id,
Iceberg's table UUID: :class:`~lakesieve.contract.protocols.HasTableId`) the
fingerprint is that identity. A table removed and written again at the same
path gets a new identity while its instants may repeat (Delta versions start
at 0 again), and the folder of indexes may survive the removal (a glob leaves
``.lakesieve`` behind; Iceberg keeps it beside the table). Such a store
answers as if it held no index, with a warning, so every read is a full one
until ``lakesieve index build`` starts the store anew (its ``table`` action
with the new identity clears the old definitions when the log is replayed).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping

from lakesieve.errors import LakesieveWarning
from lakesieve.files import paths
from lakesieve.store import IndexStore
from lakesieve.store.index_log import LogSnapshot, is_table_id
from lakesieve.store.object_index import ObjectIndexStore


class TableStore(IndexStore):
    """An :class:`IndexStore` that checks its log was recorded for this table.

    Args:
        root: the index root folder.
        table_id: the identity fingerprint of the table now at the path
            (:func:`~lakesieve.store.index_log.table_id_fingerprint`), or
            ``None`` where its format gives none; called at each log read.
    """

    def __init__(self, root: str | os.PathLike[str], table_id: Callable[[], str | None]) -> None:
        super().__init__(root)
        self.table_id = table_id

    def read_log(self, strict: bool = True) -> LogSnapshot:
        """:meth:`IndexStore.read_log`, with no index when the log is another table's."""
        snap = super().read_log(strict)
        if not is_table_id(snap.table_fingerprint):
            return snap  # no identity recorded (a format without one, or an older store)
        mine = self.table_id()
        if mine is None or mine == snap.table_fingerprint:
            return snap
        warnings.warn(
            f"index store {self.root} belongs to another table ({snap.table_fingerprint}; the "
            f"table there now is {mine}): its indexes are not used; `lakesieve index build` "
            "starts the store anew",
            LakesieveWarning,
            stacklevel=2,
        )
        return LogSnapshot(snap.version, {}, None, snap.problems)


class ObjectTableStore(TableStore, ObjectIndexStore):
    """A :class:`TableStore` on object storage (:class:`~lakesieve.store.object_index.ObjectIndexStore`).

    Args:
        root: the index root's URL.
        table_id: as for :class:`TableStore`.
        options: the store's options (``AWS_ENDPOINT_URL``...), over the environment's.
    """

    def __init__(
        self, root: str, table_id: Callable[[], str | None], options: Mapping[str, str]
    ) -> None:
        ObjectIndexStore.__init__(self, root, dict(options))
        self.table_id = table_id


def open_table_store(
    root: str | os.PathLike[str],
    table_id: Callable[[], str | None],
    options: Mapping[str, str] | None = None,
) -> TableStore:
    """The store at ``root``: a local folder (or ``file:`` URI), or an object-store URL.

    Raises:
        OptionError: an option the object store does not know, or it cannot be set up.
        ValueError: an unsupported URL scheme.
    """
    text = os.fspath(root)
    local = paths.local_path(text)
    if local is not None:
        return TableStore(local, table_id)
    return ObjectTableStore(text, table_id, options or {})
