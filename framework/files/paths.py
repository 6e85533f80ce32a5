"""Paths and file systems for table roots that are local paths or URIs.

A table root is either a local path (``/data/t``) or a URI (``file:///data/t``,
``s3://bucket/t``). Relative paths inside a table always use ``/``.
"""

from __future__ import annotations

import os
from urllib.parse import unquote, urlparse

import pyarrow.fs as pafs


def is_uri(path: str) -> bool:
    """Whether ``path`` carries a scheme (``s3://``, ``file:/``...), not a Windows drive."""
    scheme = urlparse(path).scheme
    return len(scheme) > 1


def local_path(path: str) -> str | None:
    """The local path behind ``path`` (a plain path or a ``file:`` URI), else ``None``."""
    if not is_uri(path):
        return path
    parsed = urlparse(path)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    return None


def join(root: str, rel: str) -> str:
    """``root`` and a relative path joined with one ``/``; an absolute ``rel`` is kept."""
    if is_uri(rel) or rel.startswith("/"):
        return rel
    return root.rstrip("/") + "/" + rel.lstrip("/")


def filesystem_and_path(path: str) -> tuple[pafs.FileSystem, str]:
    """A pyarrow file system and the path inside it for a local path or URI."""
    local = local_path(path)
    if local is not None:
        return pafs.LocalFileSystem(), os.path.abspath(local)
    fs, inner = pafs.FileSystem.from_uri(path)
    return fs, inner


def relative_to(root: str, path: str) -> str:
    """``path`` relative to ``root`` when it lies under it, else ``path`` itself.

    Both may be local paths or URIs; ``file:`` URIs and plain paths compare
    equal, and percent-escapes in URIs are decoded first.
    """
    root_local, path_local = local_path(root), local_path(path)
    if root_local is not None and path_local is not None:
        base = os.path.abspath(root_local).rstrip("/") + "/"
        full = os.path.abspath(path_local)
        return full[len(base) :] if full.startswith(base) else path
    base_uri = unquote(root).rstrip("/") + "/"
    plain = unquote(path)
    return plain[len(base_uri) :] if plain.startswith(base_uri) else path


def file_name(path: str) -> str:
    """The last component of a relative path or URI."""
    return path.rstrip("/").rsplit("/", 1)[-1]
