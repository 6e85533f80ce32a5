"""lakesieve format plugin for a plain folder of Parquet files (a worked example).

See ``docs/writing-a-format-plugin.md`` in the lakesieve repository.
"""

from __future__ import annotations

__all__ = ["FORMAT", "MARKER"]

#: The format name this plugin provides.
FORMAT = "parquetdir"

#: The file whose presence in a folder makes it a ``parquetdir`` table.
MARKER = "_lakesieve_parquet_dir"
