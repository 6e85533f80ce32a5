"""Recognising an Iceberg table from its files, and finding its newest metadata file.

A table root holds ``metadata/<n>-<uuid>.metadata.json`` (catalog-managed
tables, pyiceberg and Java alike) or ``metadata/v<n>.metadata.json``
(Hadoop tables); either may be gzip-compressed (``.gz.metadata.json``). The
newest is the one with the highest ``<n>``, ties broken by modification time.
"""

from __future__ import annotations

import re

import pyarrow.fs as pafs
from lakesieve.sdk import paths

METADATA_DIR = "metadata"
_METADATA_RE = re.compile(r"^v?(\d+)(?:-[^./]*)?(?:\.gz)?\.metadata\.json$")


def metadata_files(path: str) -> list[tuple[int, int, str]]:
    """``(version, mtime ns, full path)`` of every metadata file under ``<path>/metadata``."""
    fs, inner = paths.filesystem_and_path(paths.join(path, METADATA_DIR))
    infos = fs.get_file_info(pafs.FileSelector(inner, allow_not_found=True))
    out = []
    for info in infos:
        if info.type != pafs.FileType.File:
            continue
        match = _METADATA_RE.match(info.base_name)
        if match:
            out.append((int(match.group(1)), int(info.mtime_ns or 0), info.path))
    return out


def latest_metadata_file(path: str) -> str | None:
    """The newest metadata file of the table at ``path`` (in ``path``'s own form), or ``None``."""
    files = metadata_files(path)
    if not files:
        return None
    _, _, found = max(files)
    name = found.rsplit("/", 1)[-1]
    return paths.join(path, f"{METADATA_DIR}/{name}")


def is_iceberg_table(path: str) -> bool:
    """Whether ``<path>/metadata/*.metadata.json`` exists; never raises."""
    try:
        return bool(metadata_files(path))
    except Exception:
        return False
