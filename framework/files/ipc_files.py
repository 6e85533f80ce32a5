"""Arrow IPC serialisation of index files, exactly as the index store writes them.

``describe`` reports ``size_bytes``, the bytes the stored files take; the
store (``lakesieve.store``) writes each table of a
:class:`~lakesieve.model.BuiltIndex` as an uncompressed Arrow IPC file, so
the size is measured by writing the tables the same way.

Files Spark itself writes into a state's folder (an exact index's key-range
partitions, :mod:`lakesieve.store.task_files`) are ORC instead; :func:`read_index_file`
decodes either kind by its leading magic bytes.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.ipc as ipc

__all__ = ["ORC_MAGIC", "ipc_bytes", "ipc_size", "read_index_file", "read_ipc", "stored_size"]

#: The bytes an ORC file starts with.
ORC_MAGIC = b"ORC"


def ipc_bytes(table: pa.Table) -> bytes:
    """``table`` as the bytes of an Arrow IPC file (what the store writes)."""
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def read_ipc(data: bytes) -> pa.Table:
    """Decode the bytes of an Arrow IPC file."""
    return ipc.open_file(pa.py_buffer(data)).read_all()


def read_index_file(data: bytes) -> pa.Table:
    """Decode an index file's bytes: ORC when they start with :data:`ORC_MAGIC`, else Arrow IPC.

    Raises:
        pyarrow.ArrowException, OSError, ValueError: the bytes do not decode.
    """
    if data[: len(ORC_MAGIC)] == ORC_MAGIC:
        from pyarrow import orc

        return orc.ORCFile(pa.BufferReader(data)).read()
    return read_ipc(data)


def decode_problem(data: bytes, path: object) -> str | None:
    """Why the index file at ``path`` does not decode (``None`` when it does)."""
    try:
        read_index_file(data)
    except (pa.ArrowException, OSError, ValueError) as exc:
        return f"index file {path} does not decode: {exc}"
    return None


def ipc_size(table: pa.Table) -> int:
    """Bytes of ``table`` written as an uncompressed Arrow IPC file (as the store does)."""
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return int(sink.getvalue().size)


def stored_size(files: Mapping[str, pa.Table]) -> int:
    """Bytes of all ``files`` once written as Arrow IPC files."""
    return sum(ipc_size(table) for table in files.values())
