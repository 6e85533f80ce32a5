"""A table's file layout: which file (bucket) each row of a bucketed write goes to.

The Delta and the Iceberg plugins write a bucketed table (``file_groups = N``
with an integer ``bucket_column``) as one file per (partition, bucket), and
remember the layout in a table property, so that later writes that do not
repeat the options keep it (an upsert then rewrites only the files of the
buckets it touches, and the table keeps its N files). Two rules pick a row's
bucket from its integer value ``v`` of the bucket column:

- ``mod`` (the default): ``v mod N`` with Python's sign rule (``-1 mod 8`` is
  7), so every bucket holds keys spread over the whole key range;
- ``range``: contiguous key ranges, one per file, so range predicates can
  prune. The ``N - 1`` boundaries ``b_1 <= ... <= b_{N-1}`` are fixed by the
  write that creates the table (or an overwrite that names the layout), from
  Spark's approximate quantiles (``percentile_approx``) of that write's rows,
  and stored with the layout; the bucket of ``v`` is the number of
  boundaries ``<= v`` (``v < b_1`` is bucket 0, ``v >= b_{N-1}`` bucket
  N-1). Later keys outside the first write's range go to the first or the
  last file. Equal boundaries (few distinct values) leave buckets empty.

Under both rules a null value is in bucket 0.
"""

from __future__ import annotations

import bisect
import json
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lakesieve.errors import WriteError
from lakesieve.files.write_frame import bucket_of, bucket_value
from lakesieve.model import WriteOptions

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

#: The bucket rules a layout can follow.
RULES = ("mod", "range")

#: ``percentile_approx`` accuracy for range boundaries (relative error 1/accuracy).
QUANTILE_ACCURACY = 10_000


class LayoutWarning(UserWarning):
    """A table is written without a file layout: indexes will have little to skip."""


@dataclass(frozen=True)
class BucketLayout:
    """How a bucketed table spreads rows over files.

    Attributes:
        column: the integer column whose value picks each row's bucket.
        buckets: the number of buckets ``N`` (``--file-groups``).
        rule: ``"mod"`` or ``"range"``.
        bounds: for ``range``, the ascending boundaries (at most ``N - 1``).
    """

    column: str
    buckets: int
    rule: str = "mod"
    bounds: tuple[int, ...] = ()

    def describe(self) -> str:
        """The layout in words, for messages: ``8 buckets of id mod 8``."""
        how = (
            f"{self.column} mod {self.buckets}"
            if self.rule == "mod"
            else f"ranges of {self.column}"
        )
        return f"{self.buckets} buckets of {how}"

    def to_text(self) -> str:
        """The layout as the JSON text a table property keeps."""
        doc: dict[str, object] = {"column": self.column, "buckets": self.buckets, "rule": self.rule}
        if self.rule == "range":
            doc["bounds"] = list(self.bounds)
        return json.dumps(doc, separators=(",", ":"))

    @classmethod
    def from_text(cls, text: str, where: str) -> BucketLayout:
        """The layout a table property keeps.

        Raises:
            WriteError: the text is not a layout (naming ``where`` it was found).
        """
        try:
            doc = json.loads(text)
            column, buckets = doc["column"], doc["buckets"]
            rule = doc.get("rule", "mod")
            bounds = tuple(doc.get("bounds") or ())
            ok = (
                isinstance(column, str)
                and isinstance(buckets, int)
                and buckets >= 1
                and rule in RULES
                and all(isinstance(b, int) and not isinstance(b, bool) for b in bounds)
                and len(bounds) < buckets
                and list(bounds) == sorted(bounds)
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            ok = False
        if not ok:
            raise WriteError(f"{where} does not hold a file layout lakesieve wrote: {text[:80]!r}")
        return cls(column, buckets, rule, bounds if rule == "range" else ())

    def bucket(self, value: int | None) -> int:
        """The bucket of one value (the rule :meth:`value` applies in Spark)."""
        if value is None:
            return 0
        if self.rule == "range":
            return bisect.bisect_right(self.bounds, value)
        return value % self.buckets

    def value(self) -> Column:
        """The bucket of each row, as a Spark column (an ``int``)."""
        from pyspark.sql import functions as F

        if self.rule == "mod":
            return bucket_value(self.column, self.buckets).cast("int")
        col = F.col(f"`{self.column}`").cast("bigint")
        out = F.when(col.isNull(), F.lit(0))
        for i, bound in enumerate(self.bounds):
            out = out.when(col < F.lit(bound), F.lit(i))
        return out.otherwise(F.lit(len(self.bounds))).cast("int")


def range_bounds(frame: DataFrame, column: str, buckets: int, table_path: str) -> tuple[int, ...]:
    """Boundaries of ``buckets`` contiguous key ranges from Spark's approximate quantiles of ``frame``.

    Raises:
        WriteError: the frame has no non-null value in ``column``.
    """
    from pyspark.sql import functions as F

    if buckets == 1:
        return ()
    probs = [i / buckets for i in range(1, buckets)]
    quantile = F.percentile_approx(F.col(f"`{column}`").cast("bigint"), probs, QUANTILE_ACCURACY)
    found = frame.select(quantile.alias("q")).first()
    values = None if found is None else found["q"]
    if not values:
        raise WriteError(
            f"cannot write table {table_path}: bucket rule range (--bucket-rule) takes its key "
            f"ranges from the rows of this write, which has no non-null value in {column!r}"
        )
    return tuple(sorted(int(v) for v in values))


@dataclass(frozen=True)
class ResolvedLayout:
    """The layout a write follows, and what the table property must now keep.

    Attributes:
        layout: the layout of this write (``None``: files follow Spark's partitions).
        remember: the property text to store with this write (``None``: unchanged).
    """

    layout: BucketLayout | None
    remember: str | None = None


def resolve_layout(
    options: WriteOptions,
    frame: DataFrame,
    *,
    table_path: str,
    format_name: str,
    mode: str,
    stored: str | None,
    has_data: bool,
    property_name: str,
) -> ResolvedLayout:
    """The layout of a write: the table's own, or the one the options name.

    A write without layout options follows the layout the table keeps. Options
    naming the table's layout are accepted; a different one is refused,
    except by an overwrite (which replaces every file, so it may lay the
    table out anew). A table without a layout learns the first one named; the
    range rule only on a write that creates the table or overwrites it (its
    ranges come from that write's rows). A write with no layout at all warns
    once (:class:`LayoutWarning`).

    Args:
        options: the write's options (``file_groups``, ``bucket_column``, ``bucket_rule``).
        frame: the rows written (the bucket column is checked in it).
        table_path: named in messages.
        format_name: ``Delta``, ``Iceberg``..., named in messages.
        mode: what the write does (``append``, ``overwrite``, ``delete``, ``upsert``).
        stored: the table property's text (``None``: the table keeps no layout).
        has_data: whether the table exists with data files (or commits) already.
        property_name: the table property, named in messages.

    Raises:
        WriteError: a bad rule, a layout other than the table's, or a range
            rule on a table that already has data; nothing is written then.
    """
    rule = options.bucket_rule
    if rule is not None and rule not in RULES:
        raise WriteError(
            f"cannot write {format_name} table {table_path}: unknown bucket rule {rule!r} "
            f"(--bucket-rule); use one of {', '.join(RULES)}"
        )
    kept = BucketLayout.from_text(stored, f"table property {property_name}") if stored else None
    given = bucket_of(options, frame, table_path)
    if given is None:
        if rule is not None and (kept is None or kept.rule != rule):
            raise WriteError(
                f"cannot write {format_name} table {table_path}: bucket rule {rule!r} "
                "(--bucket-rule) needs bucket_column (--bucket-column) and file_groups "
                "(--file-groups)"
                + (f"; the table's layout is {kept.describe()}" if kept is not None else "")
            )
        if kept is not None:
            bucket_of(
                WriteOptions(bucket_column=kept.column, file_groups=kept.buckets), frame, table_path
            )
            return ResolvedLayout(kept)
        warnings.warn(
            f"{format_name} table {table_path} is written without a file layout "
            "(--file-groups with --bucket-column): its files follow Spark's partitions, "
            "so indexes will have little to skip",
            LayoutWarning,
            stacklevel=3,
        )
        return ResolvedLayout(None)
    column, buckets = given
    if kept is not None and (column, buckets, rule or kept.rule) == (
        kept.column,
        kept.buckets,
        kept.rule,
    ):
        return ResolvedLayout(kept)
    rule = rule or "mod"
    asked = BucketLayout(column, buckets, rule)
    if kept is not None and mode != "overwrite":
        raise WriteError(
            f"cannot {mode} {format_name} table {table_path}: layout {asked.describe()} "
            f"(--file-groups/--bucket-column/--bucket-rule) differs from the table's layout "
            f"{kept.describe()} (table property {property_name}); leave these options out to "
            "keep it, or overwrite the table to change it"
        )
    if rule == "range":
        if has_data and mode != "overwrite":
            raise WriteError(
                f"cannot {mode} {format_name} table {table_path}: bucket rule range "
                "(--bucket-rule) fixes its key ranges when the table is created or overwritten, "
                "and this table already has data without that layout"
            )
        asked = BucketLayout(
            column, buckets, rule, range_bounds(frame, column, buckets, table_path)
        )
    return ResolvedLayout(asked, asked.to_text())
