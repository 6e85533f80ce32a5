"""File-system access for the Hudi plugin's own reads (timeline listing, footers).

hudi-rs does its own I/O; this module covers the few files the plugin reads
itself. Local paths and any URI that ``pyarrow.fs`` understands
(``file://``, ``s3://``, ``gs://``, ``hdfs://`` with the matching pyarrow
build) are supported; credentials come from the environment, as pyarrow
resolves them.
"""

from __future__ import annotations

import os

import pyarrow.fs as pafs


def resolve(path: str) -> tuple[pafs.FileSystem, str]:
    """Return the file system holding ``path`` and the path inside it.

    Args:
        path: a local path or a URI.
    """
    if "://" in path:
        fs, inner = pafs.FileSystem.from_uri(path)
        return fs, inner.rstrip("/") or "/"
    return pafs.LocalFileSystem(), os.path.abspath(path)


def join(root: str, relative: str) -> str:
    """Join a table root (path or URI) and a path relative to it."""
    return f"{root.rstrip('/')}/{relative.lstrip('/')}"


def is_file(fs: pafs.FileSystem, path: str) -> bool:
    """Whether ``path`` is an existing plain file."""
    return bool(fs.get_file_info(path).type == pafs.FileType.File)


def list_names(fs: pafs.FileSystem, directory: str) -> list[str]:
    """Names of the plain files directly inside ``directory`` (empty when absent)."""
    selector = pafs.FileSelector(directory, allow_not_found=True, recursive=False)
    return sorted(
        info.base_name for info in fs.get_file_info(selector) if info.type == pafs.FileType.File
    )


def read_bytes(fs: pafs.FileSystem, path: str) -> bytes:
    """The whole content of a (small) file."""
    with fs.open_input_stream(path) as stream:
        return bytes(stream.read())
