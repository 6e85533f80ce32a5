"""An index's files, for index types: their stored size, and files Spark tasks write.

- **Sizes and encoding.** The store writes an index's driver files as
  uncompressed Arrow IPC: :func:`ipc_size` and :func:`stored_size` give their
  bytes before they are written (what ``describe`` reports), :func:`read_ipc`
  decodes such bytes.
- **Files written by Spark tasks.** An index whose files can be computed one
  partition at a time has its tasks write them into the new state's folder,
  so that the driver holds only a manifest. The framework opens a
  :class:`StagingArea` around ``IndexType.build`` (:func:`current_staging`
  finds it; :func:`local_staging` is a temporary one for a build run
  without a table, as the test kits do). A task writes a file with
  :func:`write_task_file` (or :func:`ipc_file_bytes` for its bytes) and
  returns its record; the build returns the records, :func:`with_paths`
  names them relative to the index root, and :func:`read_back` reads a
  local area's files back as tables. Files whose names start with
  :data:`ON_DEMAND_PREFIX` are read only when a query needs them (through
  :attr:`~lakesieve.sdk.BuiltIndex.fetch`); :data:`ORC_SUFFIX` marks files
  Spark's own ORC writer wrote.
- **ORC footers.** :func:`read_file_stats` reads an ORC file's row count and
  integer column statistics from its footer alone (:class:`OrcFooterError`
  when it cannot).
"""

from __future__ import annotations

from lakesieve.files.ipc_files import ipc_size, read_ipc, stored_size
from lakesieve.files.orc_footer import OrcFooterError, read_file_stats
from lakesieve.store.task_files import (
    ON_DEMAND_PREFIX,
    ORC_SUFFIX,
    StagingArea,
    current_staging,
    ipc_file_bytes,
    local_staging,
    read_back,
    with_paths,
    write_task_file,
)

__all__ = [
    "ON_DEMAND_PREFIX",
    "ORC_SUFFIX",
    "OrcFooterError",
    "StagingArea",
    "current_staging",
    "ipc_file_bytes",
    "ipc_size",
    "local_staging",
    "read_back",
    "read_file_stats",
    "read_ipc",
    "stored_size",
    "with_paths",
    "write_task_file",
]
