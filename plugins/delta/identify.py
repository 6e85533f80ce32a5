"""Recognising a Delta table from its files."""

from __future__ import annotations

from lakesieve.sdk import paths

LOG_DIR = "_delta_log"


def is_delta_table(path: str) -> bool:
    """Whether ``<path>/_delta_log/`` exists; never raises."""
    try:
        fs, inner = paths.filesystem_and_path(paths.join(path, LOG_DIR))
        import pyarrow.fs as pafs

        return fs.get_file_info(inner).type == pafs.FileType.Directory
    except Exception:
        return False
