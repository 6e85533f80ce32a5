"""Known locations as 64-bit hash codes in a build's shuffles, turned into ids in the tasks.

A build's relation names each row's location with a long string. Where the
caller knows the locations (the framework always does: the snapshot's), each
row's name can travel through a shuffle as ``xxhash64(location)`` — a per-row
hash computed by Spark, with no join — and a Python task turns the codes back
into location ids (positions in the sorted names) with one ``searchsorted``.

Measured on SF1 lineitem (6M rows, 64 locations), a shuffle carrying codes
costs about 1 s less than the broadcast join of
:func:`lakesieve.keys.location_ids.with_location_ids` that replaces names by ids.

Two things the join handles and codes do not, so a build using codes must
fall back to the join when either happens:

* two of the names share a code (:meth:`LocationCodes.of` returns ``None``);
* a row's location is not among the names (or is null: Spark's ``xxhash64``
  of a null is its seed, 42): the task sees a code it does not know
  (:meth:`LocationCodes.ids_of` reports it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from lakesieve.keys.xxhash64 import spark_xxhash64

if TYPE_CHECKING:
    from pyspark.sql import Column

#: Name of the code column builds put beside the key.
CODE_COLUMN = "code"


def code_column(location: str = "location") -> Column:
    """The Spark expression coding a location column (cast to string first)."""
    from pyspark.sql import functions as F

    return F.xxhash64(F.col(location).cast("string"))


def distinct_codes(codes: Sequence[int]) -> bool:
    """Whether no two of ``codes`` are equal (names sharing a code cannot travel as codes)."""
    return len(set(codes)) == len(codes)


@dataclass(frozen=True)
class LocationCodes:
    """The codes of known locations and the id each stands for.

    Attributes:
        names: the locations, sorted and distinct; a location's id is its position.
        codes: the distinct codes, ascending (int64).
        code_ids: the id of each code (int32), aligned with ``codes``.
    """

    names: tuple[str, ...]
    codes: np.ndarray
    code_ids: np.ndarray

    @classmethod
    def of(cls, names: Sequence[str]) -> LocationCodes | None:
        """Codes of ``names`` (``None``: no names, two share a code, or one is not UTF-8).

        Each is what Spark's :func:`code_column` gives the name, computed here
        without a job (:func:`lakesieve.keys.xxhash64.spark_xxhash64`).
        """
        distinct = sorted(set(names))
        if not distinct:
            return None
        try:
            code_of = {n: spark_xxhash64(n) for n in distinct}
        except UnicodeEncodeError:  # a name no UTF-8 spells (a lone surrogate): use the join
            return None
        return cls.from_codes(code_of, distinct)

    @classmethod
    def from_codes(cls, code_of: Mapping[str, int], names: Sequence[str]) -> LocationCodes | None:
        """From each name's code; ``None`` when two names share one.

        Args:
            code_of: the code of every name in ``names``.
            names: the locations, sorted and distinct (their order gives the ids).
        """
        if not distinct_codes(list(code_of.values())):
            return None
        by_code = sorted(names, key=code_of.__getitem__)
        ids = {name: i for i, name in enumerate(names)}
        return cls(
            names=tuple(names),
            codes=np.array([code_of[n] for n in by_code], dtype=np.int64),
            code_ids=np.array([ids[n] for n in by_code], dtype=np.int32),
        )

    @classmethod
    def by_position(cls, names: Sequence[str]) -> LocationCodes:
        """Codes that are the ids themselves (for rows given ids by a join)."""
        n = len(names)
        return cls(
            names=tuple(names),
            codes=np.arange(n, dtype=np.int64),
            code_ids=np.arange(n, dtype=np.int32),
        )

    def ids_of(self, codes_in: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Location ids of ``codes_in`` and which of them are known codes.

        Returns:
            ``(ids, known)``: int32 ids (meaningless where not known) and a
            bool mask of the codes that are some name's.
        """
        codes_in = np.asarray(codes_in, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.codes, codes_in), len(self.codes) - 1)
        known = self.codes[at] == codes_in
        return self.code_ids[at], known
