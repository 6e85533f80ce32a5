"""Reading a few columns of read units through a format plugin's Spark reader.

Builds and refreshes need one column (and the location) of the rows they
read. Spark prunes columns of its own Parquet scans, but not of rows a
plugin produces in Python tasks (merge-on-read file slices, ``mapInArrow``
readers): there, asking ``TableFormat.read`` for the columns is what keeps
the tasks from decoding every column. Every plugin's ``read`` takes
``columns``; one that reads with a Spark scan narrows its frame with
:func:`select_columns`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lakesieve.contract.protocols import TableFormat
from lakesieve.model import LOCATION_COLUMN

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def read_columns(
    fmt: TableFormat,
    spark: SparkSession,
    units: Sequence[Any],
    instant: str | None,
    columns: Sequence[str],
    with_location: bool = True,
) -> DataFrame:
    """``columns`` (in that order, without repeats) of the rows of ``units``, and the location.

    Args:
        fmt: the table's format plugin.
        spark: the session.
        units: read units of the snapshot at ``instant``.
        instant: the instant read.
        columns: the columns wanted.
        with_location: add :data:`~lakesieve.model.LOCATION_COLUMN` last.
    """
    from pyspark.sql import functions as F

    wanted = list(dict.fromkeys(columns))
    frame = fmt.read(spark, units, instant, with_location, columns=wanted)
    names = [*wanted, LOCATION_COLUMN] if with_location else wanted
    return frame.select(*[F.col(f"`{n}`") for n in names])


def select_columns(
    frame: DataFrame, columns: Sequence[str] | None, with_location: bool, table_path: str
) -> DataFrame:
    """``frame`` narrowed to ``columns`` (and the location); unchanged when ``columns`` is ``None``.

    For plugins whose ``read`` is a Spark scan: Spark prunes the unselected
    columns from the scan itself.

    Raises:
        ColumnNotFoundError: a name in ``columns`` is not a column of ``frame``.
    """
    if columns is None:
        return frame
    from pyspark.sql import functions as F

    missing = [c for c in columns if c not in frame.columns]
    if missing:
        from lakesieve.errors import ColumnNotFoundError

        raise ColumnNotFoundError(f"table {table_path} has no column(s) {', '.join(missing)}")
    names = [*columns, LOCATION_COLUMN] if with_location else list(columns)
    return frame.select(*[F.col(f"`{n}`") for n in names])
