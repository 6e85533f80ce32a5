"""Record keys and partition paths, computed as Spark columns the way Hudi's key generators do.

- ``SimpleKeyGenerator``: one record key field, its value as a string; one
  partition field.
- ``ComplexKeyGenerator``: record key ``field1:value1,field2:value2`` (even for
  a single field), null values written ``__null__`` and empty ones
  ``__empty__``; partition values joined by ``/``.
- ``NonpartitionedKeyGenerator``: like simple for one key field, like complex
  for several; the partition path is empty.

A partition value that is null or empty becomes ``__HIVE_DEFAULT_PARTITION__``;
hive-style paths are ``field=value``. A record key that Hudi would refuse
(null or empty simple key, all-null complex key) comes out as SQL ``NULL``,
which the writer reports as an error.
"""

from __future__ import annotations

from dataclasses import dataclass

from lakesieve.plugins.hudi.writer.table_config import COMPLEX_KEYGEN, NONPARTITIONED_KEYGEN
from pyspark.sql import Column
from pyspark.sql import functions as F

DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
NULL_KEY_PART = "__null__"
EMPTY_KEY_PART = "__empty__"


@dataclass(frozen=True)
class KeySpec:
    """How one table derives record keys and partition paths.

    Attributes:
        record_key: record key fields, in order.
        partition_by: partition fields, in order (empty: not partitioned).
        keygen: Hudi key generator class name.
        hive_style: whether partition folders are ``field=value``.
    """

    record_key: tuple[str, ...]
    partition_by: tuple[str, ...]
    keygen: str
    hive_style: bool

    @property
    def complex_key(self) -> bool:
        """Whether record keys are written as ``field:value`` pairs."""
        if self.keygen == COMPLEX_KEYGEN:
            return True
        return self.keygen == NONPARTITIONED_KEYGEN and len(self.record_key) > 1

    @property
    def partitioned(self) -> bool:
        """Whether the table has partition folders."""
        return bool(self.partition_by) and self.keygen != NONPARTITIONED_KEYGEN

    def record_key_column(self) -> Column:
        """Spark column of ``_hoodie_record_key`` (``NULL`` where Hudi would refuse the key)."""
        if not self.complex_key:
            value = F.col(self.record_key[0]).cast("string")
            return F.when(value.isNull() | (value == ""), F.lit(None)).otherwise(value)
        parts = []
        all_missing = F.lit(True)
        for name in self.record_key:
            value = F.col(name).cast("string")
            missing = value.isNull() | (value == "")
            all_missing = all_missing & missing
            shown = (
                F.when(value.isNull(), F.lit(NULL_KEY_PART))
                .when(value == "", F.lit(EMPTY_KEY_PART))
                .otherwise(value)
            )
            parts.append(F.concat(F.lit(f"{name}:"), shown))
        return F.when(all_missing, F.lit(None)).otherwise(F.concat_ws(",", *parts))

    def partition_path_column(self) -> Column:
        """Spark column of ``_hoodie_partition_path``."""
        if not self.partitioned:
            return F.lit("")
        parts = []
        for name in self.partition_by:
            value = F.col(name).cast("string")
            value = F.when(value.isNull() | (value == ""), F.lit(DEFAULT_PARTITION)).otherwise(
                value
            )
            parts.append(F.concat(F.lit(f"{name}="), value) if self.hive_style else value)
        return F.concat_ws("/", *parts)
