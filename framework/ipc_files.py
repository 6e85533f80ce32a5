"""Arrow IPC serialisation of index files, exactly as the index store writes them.

``describe`` reports ``size_bytes``, the bytes the stored files take; the
store (``lakesieve.store``) writes each table of a
:class:`~lakesieve.model.BuiltIndex` as an uncompressed Arrow IPC file, so
the size is measured by writing the tables the same way.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.ipc as ipc

__all__ = ["ipc_bytes", "ipc_size", "read_ipc", "stored_size"]


def ipc_bytes(table: pa.Table) -> bytes:
    """``table`` as the bytes of an Arrow IPC file (what the store writes)."""
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def read_ipc(data: bytes) -> pa.Table:
    """Decode the bytes of an Arrow IPC file."""
    return ipc.open_file(pa.py_buffer(data)).read_all()


def ipc_size(table: pa.Table) -> int:
    """Bytes of ``table`` written as an uncompressed Arrow IPC file (as the store does)."""
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return int(sink.getvalue().size)


def stored_size(files: Mapping[str, pa.Table]) -> int:
    """Bytes of all ``files`` once written as Arrow IPC files."""
    return sum(ipc_size(table) for table in files.values())
