"""File access for the Hudi writer, the same on the driver and inside Spark tasks.

The writer touches a table only through :class:`TableStorage`: a table root
(a local path, ``file://`` URI or any URI pyarrow's filesystems understand)
and paths relative to it, always separated by ``/``. A storage object holds
only strings, so it pickles cheaply into Spark tasks, which build their own
pyarrow filesystem on first use.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import pyarrow.fs as pafs


def _split_uri(base: str) -> tuple[pafs.FileSystem, str, str]:
    """Return ``(filesystem, root path in it, root as a URI for Spark)``."""
    if "://" in base:
        if base.startswith("file://"):
            local = os.path.abspath(base[len("file://") :])
            return pafs.LocalFileSystem(), local, "file://" + local
        fs, root = pafs.FileSystem.from_uri(base)
        return fs, root.rstrip("/"), base.rstrip("/")
    local = os.path.abspath(base)
    return pafs.LocalFileSystem(), local, "file://" + local


class TableStorage:
    """Relative-path file operations under one table root.

    Attributes:
        base: the table path exactly as the caller gave it.
        root: the table root inside its filesystem (absolute).
        uri: the table root as a URI, for Spark readers.
    """

    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/") or base
        _fs, self.root, self.uri = _split_uri(self.base)
        self._fs: pafs.FileSystem | None = _fs

    def __getstate__(self) -> dict[str, Any]:
        return {"base": self.base, "root": self.root, "uri": self.uri}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.base = state["base"]
        self.root = state["root"]
        self.uri = state["uri"]
        self._fs = None

    @property
    def fs(self) -> pafs.FileSystem:
        """The pyarrow filesystem holding the table."""
        if self._fs is None:
            self._fs = _split_uri(self.base)[0]
        return self._fs

    def full(self, rel: str) -> str:
        """Path of ``rel`` inside the filesystem."""
        return f"{self.root}/{rel}" if rel else self.root

    def spark_path(self, rel: str) -> str:
        """URI of ``rel`` for Spark's readers."""
        return f"{self.uri}/{rel}" if rel else self.uri

    def exists(self, rel: str) -> bool:
        """Whether a file or folder exists at ``rel``."""
        return self.fs.get_file_info(self.full(rel)).type != pafs.FileType.NotFound

    def is_file(self, rel: str) -> bool:
        """Whether a plain file exists at ``rel``."""
        return self.fs.get_file_info(self.full(rel)).type == pafs.FileType.File

    def size(self, rel: str) -> int:
        """Size of the file at ``rel`` in bytes."""
        return int(self.fs.get_file_info(self.full(rel)).size or 0)

    def makedirs(self, rel: str) -> None:
        """Create the folder ``rel`` and its parents."""
        self.fs.create_dir(self.full(rel), recursive=True)

    def read_bytes(self, rel: str) -> bytes:
        """Whole content of the file at ``rel``."""
        with self.fs.open_input_stream(self.full(rel)) as stream:
            return bytes(stream.read())

    def write_bytes(self, rel: str, data: bytes) -> None:
        """Create or replace the file at ``rel`` (parent folders are created)."""
        parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
        if parent:
            self.makedirs(parent)
        with self.fs.open_output_stream(self.full(rel)) as stream:
            stream.write(data)

    def write_atomic(self, rel: str, data: bytes, tmp_rel: str) -> None:
        """Write ``data`` to ``tmp_rel`` first, then move it to ``rel``."""
        self.write_bytes(tmp_rel, data)
        self.fs.move(self.full(tmp_rel), self.full(rel))

    def list_names(self, rel: str) -> list[str]:
        """Names of the entries directly inside folder ``rel`` (empty if missing)."""
        selector = pafs.FileSelector(self.full(rel), allow_not_found=True, recursive=False)
        return [info.base_name for info in self.fs.get_file_info(selector)]

    def list_files_recursive(self, rel: str) -> list[str]:
        """Paths (relative to ``rel``) of every file below folder ``rel``."""
        top = self.full(rel)
        selector = pafs.FileSelector(top, allow_not_found=True, recursive=True)
        out = []
        for info in self.fs.get_file_info(selector):
            if info.type == pafs.FileType.File:
                out.append(info.path[len(top) :].lstrip("/"))
        return out

    def delete_file(self, rel: str) -> None:
        """Delete the file at ``rel`` if it exists."""
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(self.full(rel))

    def delete_dir(self, rel: str) -> None:
        """Delete folder ``rel`` with its content if it exists."""
        if self.exists(rel):
            self.fs.delete_dir(self.full(rel))
