"""Which Iceberg delete files lakesieve applies, and reading position deletes without Spark.

Honoured: **position delete files in Parquet** (the ``file_path``/``pos``
rows of the spec), applied on every read path.

Refused with :class:`~lakesieve.plugins.iceberg.errors.IcebergFeatureError`
naming the table and the kind, rather than return deleted rows:
equality delete files, position delete files in Avro or ORC, and
deletion vectors (format version 3, Puffin files).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from lakesieve.plugins.iceberg.errors import IcebergFeatureError
from lakesieve.plugins.iceberg.snapshot import POSITION, parse_delete_entry
from lakesieve.sdk import ReadUnit, paths
from lakesieve.sdk.keys import unique_ints

#: Columns of a position delete file.
FILE_PATH = "file_path"
POS = "pos"

_CACHE_SIZE = 32
_cache: OrderedDict[str, pa.Table] = OrderedDict()
_lock = threading.Lock()


def position_delete_paths(units: Sequence[ReadUnit], table_path: str) -> list[str]:
    """The Parquet position delete files of ``units``, refusing every other delete kind.

    Raises:
        IcebergFeatureError: a unit has an equality delete file, a position
            delete file not in Parquet, or a deletion vector.
    """
    out: dict[str, None] = {}
    for unit in units:
        for text in unit.delete_files:
            kind, fmt, path = parse_delete_entry(text)
            if kind == POSITION and fmt == "parquet":
                out[path] = None
                continue
            what = (
                "deletion vectors (Puffin)"
                if fmt == "puffin"
                else f"{kind} delete files in {fmt.upper()}"
            )
            raise IcebergFeatureError(
                f"Iceberg table {table_path} has {what} (e.g. {path}), which lakesieve cannot "
                "apply; refusing to read it rather than return deleted rows"
            )
    return list(out)


def _delete_table(path: str, storage: Mapping[str, str] | None = None) -> pa.Table:
    with _lock:
        if path in _cache:
            _cache.move_to_end(path)
            return _cache[path]
    fs, inner = paths.filesystem_and_path(path, storage)
    with fs.open_input_file(inner) as handle:
        table = pq.read_table(handle, columns=[FILE_PATH, POS])
    with _lock:
        _cache[path] = table
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return table


def deleted_positions(
    data_file_path: str, delete_paths: Sequence[str], storage: Mapping[str, str] | None = None
) -> np.ndarray:
    """Sorted unique row positions of ``data_file_path`` deleted by the given position delete files.

    ``storage``: the table's storage options (an object store's endpoint, keys...).
    """
    parts = []
    for path in delete_paths:
        table = _delete_table(path, storage)
        mask = pc.equal(
            table.column(FILE_PATH), pa.scalar(data_file_path, table.schema.field(FILE_PATH).type)
        )
        parts.append(table.filter(mask).column(POS).to_numpy())
    if not parts:
        return np.empty(0, dtype=np.int64)
    return unique_ints(np.concatenate(parts).astype(np.int64))
