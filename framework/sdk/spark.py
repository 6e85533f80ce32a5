"""Spark jobs of a plugin: sizing them, reaching object storage, scanning Parquet data files.

- **Sizing.** :func:`default_parallelism` is the session's task slots;
  :func:`dealt_for_slices` lays items out largest first, dealt round-robin
  over that many slices, so that each slice of a local relation gets a like
  share of large and small ones.
- **Object storage.** :func:`prepare` puts a table's storage settings on the
  session as Hadoop's S3A connector reads them (before a job reads the
  table), or says in one line what the Spark lacks.
- **Scanning data files** with Spark's own Parquet reader, for any format:
  :func:`parquet_reader` (``spark.read`` with the table's schema),
  :func:`decoded_file_name` (a row's file name, URL-decoded), with
  :data:`FILE_KEY` and :data:`ROW_KEY` the columns of a row's file and its
  position in it; :func:`deleted_frame` the (file, row) pairs of deleted
  rows, joined away from a scan; :func:`unique_name_rounds` splits read units
  so that file names are unique within each scan; :func:`empty_frame` is a
  scan of nothing with the table's columns. :data:`RAW_LOCAL_FILES` are the
  reader options that read local files without Hadoop's checksum files.
"""

from __future__ import annotations

from lakesieve.files.spark_scan import (
    FILE_KEY,
    RAW_LOCAL_FILES,
    ROW_KEY,
    decoded_file_name,
    deleted_frame,
    empty_frame,
    parquet_reader,
    unique_name_rounds,
)
from lakesieve.spark.object_storage import prepare
from lakesieve.spark.session import dealt_for_slices, default_parallelism

__all__ = [
    "FILE_KEY",
    "RAW_LOCAL_FILES",
    "ROW_KEY",
    "dealt_for_slices",
    "decoded_file_name",
    "default_parallelism",
    "deleted_frame",
    "empty_frame",
    "parquet_reader",
    "prepare",
    "unique_name_rounds",
]
