"""Committing files to an Iceberg table through pyiceberg: appends, overwrites and row deltas.

Appends and file replacements use pyiceberg's own snapshot producers
(``fast_append`` and ``overwrite``). pyiceberg 0.12 cannot commit delete
files (its deletes rewrite data files), so a **row delta** -- position delete
files, optionally with new data files, in one snapshot -- is a small
producer built on pyiceberg's fast append: the new data files go in a data
manifest as usual, the delete files in a manifest of content ``deletes``
(one per partition spec), and every manifest of the parent snapshot is kept.
The snapshot's operation is ``delete`` without new data, ``overwrite`` with.
Delete files need format version 2 or later. Each commit can set table
properties in the same metadata update (the writer records the record key
that way, without an extra snapshot).
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyiceberg.manifest import (
    DataFile,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestWriterV2,
)
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update.snapshot import _FastAppendFiles

if TYPE_CHECKING:
    from pyiceberg.table import Table, Transaction
    from pyiceberg.typedef import Properties


class _DeleteManifestWriter(ManifestWriterV2):
    """A format-version 2 manifest writer for delete files (manifest content ``deletes``)."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


class _RowDelta(_FastAppendFiles):
    """A fast append that also adds position delete files in delete manifests."""

    def __init__(
        self,
        operation: Operation,
        transaction: Transaction,
        io: Any,
        delete_files: Sequence[DataFile],
        snapshot_properties: Properties | None = None,
    ) -> None:
        super().__init__(
            operation,
            transaction,
            io,
            commit_uuid=uuid.uuid4(),
            snapshot_properties=dict(snapshot_properties or {}),
        )
        self._delete_files = list(delete_files)

    def _manifests(self) -> list[ManifestFile]:
        manifests = super()._manifests()
        by_spec: dict[int, list[DataFile]] = defaultdict(list)
        for delete_file in self._delete_files:
            by_spec[int(delete_file.spec_id or 0)].append(delete_file)
        for spec_id, files in by_spec.items():
            writer = _DeleteManifestWriter(
                spec=self.spec(spec_id),
                schema=self.schema(),
                output_file=self.new_manifest_output(),
                snapshot_id=self._snapshot_id,
                avro_compression=self._compression,
            )
            with writer:
                for delete_file in files:
                    writer.add_entry(
                        ManifestEntry.from_args(
                            status=ManifestEntryStatus.ADDED,
                            snapshot_id=self._snapshot_id,
                            sequence_number=None,
                            file_sequence_number=None,
                            data_file=delete_file,
                        )
                    )
            manifests.append(writer.to_manifest_file())
        return manifests

    def _summary(self, snapshot_properties: Any = None) -> Any:
        # The summary counts what ``_added_data_files`` holds (pyiceberg's
        # collector knows position delete files); count the delete files too.
        data = self._added_data_files
        self._added_data_files = [*data, *self._delete_files]
        try:
            return super()._summary(snapshot_properties or {})
        finally:
            self._added_data_files = data


def _set(tx: Transaction, properties: Mapping[str, str] | None) -> None:
    """Table properties changed in the same metadata commit as the snapshot."""
    if properties:
        tx.set_properties(dict(properties))


def append(
    table: Table, data_files: Sequence[DataFile], properties: Mapping[str, str] | None = None
) -> None:
    """Commit ``data_files`` as one ``append`` snapshot (setting ``properties`` with it)."""
    with table.transaction() as tx:
        _set(tx, properties)
        with tx.update_snapshot().fast_append() as producer:
            for data_file in data_files:
                producer.append_data_file(data_file)


def replace(
    table: Table,
    removed: Sequence[DataFile],
    added: Sequence[DataFile],
    properties: Mapping[str, str] | None = None,
) -> None:
    """Commit one ``overwrite`` snapshot removing ``removed`` and adding ``added`` files."""
    with table.transaction() as tx:
        _set(tx, properties)
        with tx.update_snapshot().overwrite() as producer:
            for data_file in removed:
                producer.delete_data_file(data_file)
            for data_file in added:
                producer.append_data_file(data_file)


def row_delta(
    table: Table,
    delete_files: Sequence[DataFile],
    added: Sequence[DataFile],
    properties: Mapping[str, str] | None = None,
) -> None:
    """Commit position ``delete_files`` and new data files ``added`` as one snapshot."""
    operation = Operation.OVERWRITE if added else Operation.DELETE
    with table.transaction() as tx:
        _set(tx, properties)
        producer = _RowDelta(operation, tx, table.io, delete_files)
        for data_file in added:
            producer.append_data_file(data_file)
        producer.commit()
