"""A table's paths and storage, for format plugins: local paths and object-storage URIs alike.

A table root is a local path or a URI (``s3://bucket/t``, ``file:/...``).
:func:`join`, :func:`relative_to` and :func:`file_name` work on both;
:func:`local_path` is the local path behind one (else ``None``),
:func:`is_uri` says which it is, and :func:`filesystem_and_path` gives the
pyarrow file system to read it with. A table's storage settings
(credentials, endpoint) travel in its options under :data:`STORAGE_PREFIX`:
:func:`storage_of` takes them out, :func:`aws_settings` completes them from
the environment's standard ``AWS_*`` variables.

Plugins import the module and call through it, as ``paths.join(root, rel)``.
"""

from __future__ import annotations

from lakesieve.files.paths import (
    file_name,
    filesystem_and_path,
    is_uri,
    join,
    local_path,
    relative_to,
)
from lakesieve.spark.object_storage import STORAGE_PREFIX, aws_settings, storage_of

__all__ = [
    "STORAGE_PREFIX",
    "aws_settings",
    "file_name",
    "filesystem_and_path",
    "is_uri",
    "join",
    "local_path",
    "relative_to",
    "storage_of",
]
