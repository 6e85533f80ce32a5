"""Writing a table copy-on-write, for format plugins with a writer of their own.

What ``lakesieve write`` does for every format that writes whole Parquet
files (the Delta and Iceberg plugins; the example plugin in
``examples/lakesieve-parquet-dir``), so that a new writer checks, lays out
and rewrites data the same way:

- **Checking the write.** :func:`normalise_mode` says what a write mode does
  (``append``, ``overwrite``, ``delete``, ``upsert``); :func:`check_bucket`
  refuses a bad bucketed write from the rows' Arrow schema alone (a plugin's
  ``check_write``); :func:`conform_frame` gives a frame exactly the table's
  columns and types; :func:`refuse_object_storage` refuses a write the
  format's writer can only do on a local disk.
- **Laying out files.** :class:`BucketLayout` says how a bucketed table
  spreads rows over files, :func:`resolve_layout` which layout a write
  follows (the table's own or the options'); :class:`FileLayout` says where
  one write's files go, and :func:`write_files` writes them from Spark tasks,
  one Parquet file per group, answering a :class:`WrittenFile` each.
- **Deletes and upserts by record key.** :func:`check_keys` refuses a write
  without its key columns, :func:`dedupe` keeps one row per key, and
  :func:`plan_rewrite` plans which files a delete or upsert replaces and
  what it writes.
"""

from __future__ import annotations

from lakesieve.files.bucket_layout import BucketLayout, resolve_layout
from lakesieve.files.parquet_writer import FileLayout, WrittenFile, write_files
from lakesieve.files.rewrite import check_keys, dedupe, plan_rewrite
from lakesieve.files.write_frame import (
    check_bucket,
    conform_frame,
    normalise_mode,
    refuse_object_storage,
)

__all__ = [
    "BucketLayout",
    "FileLayout",
    "WrittenFile",
    "check_bucket",
    "check_keys",
    "conform_frame",
    "dedupe",
    "normalise_mode",
    "plan_rewrite",
    "refuse_object_storage",
    "resolve_layout",
    "write_files",
]
