"""Arrow batches and schemas, for format plugins' readers on the driver.

:func:`plain_schema` is an Arrow schema with the plain string, binary and
list types (no large or view types, no field metadata): the schema a format
plugin answers for a table, whatever its files' writers used.

A unit reader (``TableFormat.read_unit``) reads a data file's record batches
and answers them in the table's schema, without the rows deleted since:

- :func:`project` narrows the table's schema to the columns asked for (all of
  it for ``None``), in that order;
- :func:`conform` selects, orders and casts a batch's columns to that schema
  (the columns a file lacks as nulls, or as a constant such as a partition
  value);
- :func:`keep_mask` says which rows of a batch survive a file's sorted
  deleted row positions.
"""

from __future__ import annotations

from lakesieve.files.arrow_schema import plain_schema
from lakesieve.files.batches import conform, keep_mask, project

__all__ = ["conform", "keep_mask", "plain_schema", "project"]
