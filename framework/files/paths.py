"""Paths and file systems for table roots that are local paths or URIs.

A table root is either a local path (``/data/t``) or a URI (``file:///data/t``,
``s3://bucket/t``). Relative paths inside a table always use ``/``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from urllib.parse import unquote, urlparse

import pyarrow.fs as pafs

#: a table's storage options (``AWS_ENDPOINT_URL``...) while its format plugin
#: recognises it (:func:`storage_scope`); file systems opened then use them
_STORAGE: ContextVar[Mapping[str, str] | None] = ContextVar("lakesieve_storage", default=None)


@contextlib.contextmanager
def storage_scope(storage: Mapping[str, str]) -> Iterator[None]:
    """Let :func:`filesystem_and_path` use ``storage`` while the block runs (in this thread)."""
    token = _STORAGE.set(dict(storage))
    try:
        yield
    finally:
        _STORAGE.reset(token)


def _s3_filesystem(storage: Mapping[str, str]) -> pafs.FileSystem | None:
    """pyarrow's S3 file system as the ``AWS_*`` settings in ``storage`` say; ``None`` if none."""
    values = {k.upper(): str(v) for k, v in storage.items() if k.upper().startswith("AWS_")}
    if not values:
        return None
    endpoint = values.get("AWS_ENDPOINT_URL_S3") or values.get("AWS_ENDPOINT_URL")
    kwargs: dict[str, str] = {}
    if endpoint:
        parsed = urlparse(endpoint)
        kwargs["endpoint_override"] = parsed.netloc or endpoint
        kwargs["scheme"] = parsed.scheme or "https"
    region = values.get("AWS_REGION") or values.get("AWS_DEFAULT_REGION")
    if region:
        kwargs["region"] = region
    if values.get("AWS_ACCESS_KEY_ID") and values.get("AWS_SECRET_ACCESS_KEY"):
        kwargs["access_key"] = values["AWS_ACCESS_KEY_ID"]
        kwargs["secret_key"] = values["AWS_SECRET_ACCESS_KEY"]
        if values.get("AWS_SESSION_TOKEN"):
            kwargs["session_token"] = values["AWS_SESSION_TOKEN"]
    return pafs.S3FileSystem(**kwargs) if kwargs else None


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


def filesystem_and_path(
    path: str, storage: Mapping[str, str] | None = None
) -> tuple[pafs.FileSystem, str]:
    """A pyarrow file system and the path inside it for a local path or URI.

    ``storage`` (a table's storage options; by default those of the
    :func:`storage_scope` in force) wins over the environment for ``s3://``.
    """
    local = local_path(path)
    if local is not None:
        return pafs.LocalFileSystem(), os.path.abspath(local)
    parsed = urlparse(path)
    if parsed.scheme.lower() in ("s3", "s3a"):
        fs = _s3_filesystem((_STORAGE.get() or {}) if storage is None else storage)
        if fs is not None:
            return fs, f"{parsed.netloc}{parsed.path}".rstrip("/")
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
