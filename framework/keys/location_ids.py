"""Known locations as small integer ids in a build's shuffles, and back to names.

A build's relation names each row's location with a long string. Where the
caller knows the locations (the framework always does: the snapshot's), a
broadcast join replaces the name by its position in the sorted name list
(``loc_id``), so shuffles carry a number; a location not among them keeps its
name (``loc_name``, null for the known ones), so nothing is lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def with_location_ids(frame: DataFrame, names: Sequence[str], keep: Sequence[str]) -> DataFrame:
    """``keep`` columns of ``frame``, then ``loc_id`` and ``loc_name`` for its ``location``.

    ``names`` must be sorted and distinct: ``loc_id`` is a name's position in them.
    """
    from pyspark.sql import functions as F

    location = F.col("location").cast("string").alias("location")
    rows = frame.select(*keep, location)
    if not names:
        return rows.select(
            *keep, F.lit(None).cast("int").alias("loc_id"), F.col("location").alias("loc_name")
        )
    ids = frame.sparkSession.createDataFrame(list(enumerate(names)), "loc_id int, location string")
    joined = rows.join(F.broadcast(ids), "location", "left")
    spelled = F.when(F.col("loc_id").isNull(), F.col("location"))
    return joined.select(*keep, "loc_id", spelled.alias("loc_name"))


def location_names(table: pa.Table, names: Sequence[str]) -> pa.Array:
    """The location of each row: ``names[loc_id]``, or ``loc_name`` where the id is null.

    A row with neither has a null location.
    """
    ids = table.column("loc_id").combine_chunks()
    spelled = table.column("loc_name").combine_chunks().cast(pa.string())
    if not names:
        return spelled
    known = pc.take(pa.array(list(names), pa.string()), ids.cast(pa.int64()))
    return pc.if_else(pc.is_null(ids), spelled, known)
