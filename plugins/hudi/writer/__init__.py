"""lakesieve's own Apache Hudi writer (copy-on-write and merge-on-read, table version 6).

The public entry is :func:`write_table` (with :data:`MODES` and
:data:`FAIL_BEFORE_COMMIT`), defined in :mod:`.run`. This package exposes them
lazily, so that importing one of its building blocks (for example
:mod:`.table_config` from the key generator) does not load Spark and the whole
write path.

Modules: ``run`` (one write, from checks to the completed instant),
``validate`` (options and schema checks), ``plan`` (routing rows to file
groups), ``task`` (the Spark task writing one file group), ``mor`` (log files
of merge-on-read tables), ``log_block`` (Hudi log blocks), ``commit`` (instant
times and commit metadata), ``rollback`` (undoing unfinished writes),
``timeline`` (the timeline as the writer sees it), ``schema`` (meta columns
and Avro schemas), ``avro`` (Avro containers), ``table_config``
(``hoodie.properties``), ``storage`` (file access).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lakesieve.plugins.hudi.writer.run import FAIL_BEFORE_COMMIT, MODES, write_table

__all__ = ["FAIL_BEFORE_COMMIT", "MODES", "write_table"]


def __getattr__(name: str) -> Any:
    """Load :mod:`.run` on first use of one of the public names."""
    if name in __all__:
        run = importlib.import_module("lakesieve.plugins.hudi.writer.run")
        return getattr(run, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
