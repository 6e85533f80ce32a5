"""Recognising a Hudi table by its marker file."""

from __future__ import annotations

from lakesieve.plugins.hudi import storage

#: The file every Hudi table has, relative to the table root.
PROPERTIES_FILE = ".hoodie/hoodie.properties"


def is_hudi_table(path: str) -> bool:
    """Whether ``path`` is the root of a Hudi table.

    Looks only for ``.hoodie/hoodie.properties``; never raises, so that format
    detection can ask every plugin about any path.
    """
    try:
        fs, root = storage.resolve(path)
        return storage.is_file(fs, storage.join(root, PROPERTIES_FILE))
    except Exception:
        return False
