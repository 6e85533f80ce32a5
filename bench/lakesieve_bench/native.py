"""What each format's own statistics prune, for the full benchmark.

The "native" pruner of a format is the file selection its own Python library
makes from the statistics the format keeps:

- **Hudi**: ``hudi`` (hudi-rs 0.5.0) ``HudiTable.get_file_slices(HudiReadOptions(filters=...))``.
  Our tables have no metadata table (so no column-stats index); hudi-rs then
  prunes copy-on-write file slices with the min/max of the base files' Parquet
  footers, which it reads itself. It does not prune ``IN`` filters.
- **Delta**: ``deltalake`` ``DeltaTable.to_pyarrow_dataset().get_fragments(filter)``,
  whose fragments carry the per-file min/max of the ``add`` actions
  (``DeltaTable.get_add_actions()``); ``file_uris(partition_filters)`` uses
  partition values only.
- **Iceberg**: ``pyiceberg`` ``table.scan(row_filter).plan_files()`` (manifest
  lower/upper bounds).

Calling the library for thousands of queries costs seconds, so selections
are computed from a **model** of the same statistics (per-file min/max
intervals, read once from the format's metadata: hudi-rs's footers via
pyarrow, Delta ``add`` actions, Iceberg manifest bounds) and the model is
**checked** against the library itself on a sample of every query kind; a
kind where the two disagree is answered by the library for every query.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lakesieve_bench.queries import BenchQuery, from_domain, to_domain


def _base(path: str) -> str:
    return os.path.basename(path.rstrip("/"))


@dataclass
class NativeStats:
    """Per-file statistics of one table, and the format library that prunes with them.

    Attributes:
        format: the format name.
        how: what the pruner is, in words.
        files: data file names (base names), in a fixed order.
        bounds: ``column -> [(min, max) or None per file]`` in the integer domain.
        prunes_in: whether the library prunes ``IN`` lists with the statistics.
        api: the library call: a query -> the base names of the files it selects.
    """

    format: str
    how: str
    files: list[str]
    bounds: dict[str, list[tuple[int, int] | None]]
    prunes_in: bool
    api: Callable[[BenchQuery], set[str]]
    api_kinds: set[str] = field(default_factory=set)

    def model(self, q: BenchQuery) -> set[str]:
        """The files whose min/max interval may hold a match of ``q``."""
        if q.kind == "in" and not self.prunes_in:
            return set(self.files)
        per_file = self.bounds.get(q.column)
        if per_file is None:
            return set(self.files)
        out = set()
        for name, b in zip(self.files, per_file, strict=True):
            if b is None or any(a <= b[1] and b[0] <= z for a, z in q.intervals):
                out.add(name)
        return out

    def select(self, q: BenchQuery) -> set[str]:
        """The native selection: the library for kinds where the model was found to differ, else the model."""
        return self.api(q) if q.kind in self.api_kinds else self.model(q)

    def check(self, queries: dict[str, list[BenchQuery]], per_kind: int) -> dict[str, Any]:
        """Compare the model with the library on the first ``per_kind`` queries of every kind.

        Kinds with a mismatch are switched to the library (``api_kinds``).
        Returns ``{"checked": n, "mismatches": m, "library_kinds": [...], "library_ms_p50": t}``.
        """
        checked = mismatches = 0
        times: list[float] = []
        for kind, qs in queries.items():
            for q in qs[:per_kind]:
                t0 = time.perf_counter()
                got = self.api(q)
                times.append((time.perf_counter() - t0) * 1000.0)
                checked += 1
                if got != self.model(q):
                    mismatches += 1
                    self.api_kinds.add(kind)
        times.sort()
        return {
            "checked": checked,
            "mismatches": mismatches,
            "library_kinds": sorted(self.api_kinds),
            "library_ms_p50": round(times[len(times) // 2], 3) if times else None,
        }


def footer_bounds(paths: list[str], columns: list[str]) -> dict[str, list[tuple[int, int] | None]]:
    """Per file min/max of ``columns`` over the row-group statistics of its Parquet footer."""
    import pyarrow.parquet as pq

    out: dict[str, list[tuple[int, int] | None]] = {c: [] for c in columns}
    for path in paths:
        meta = pq.ParquetFile(path).metadata
        index = {meta.schema.column(i).path: i for i in range(meta.num_columns)}
        for c in columns:
            lo: int | None = None
            hi: int | None = None
            ok = c in index
            for rg in range(meta.num_row_groups if ok else 0):
                st = meta.row_group(rg).column(index[c]).statistics
                if st is None or not st.has_min_max:
                    ok = False
                    break
                a, b = to_domain(st.min), to_domain(st.max)
                lo = a if lo is None else min(lo, a)
                hi = b if hi is None else max(hi, b)
            out[c].append((lo, hi) if ok and lo is not None and hi is not None else None)
    return out


def _hudi(path: str, columns: list[str]) -> NativeStats:
    from hudi import HudiReadOptions, HudiTableBuilder

    table = HudiTableBuilder.from_base_uri(path).build()
    slices = table.get_file_slices()
    rel = [s.base_file_relative_path() for s in slices]
    files = [_base(p) for p in rel]
    bounds = footer_bounds([os.path.join(path, p) for p in rel], columns)

    def text(q: BenchQuery, v: int) -> str:
        val = from_domain(v, q.spark_type)
        return val.isoformat() if q.spark_type == "date" else str(val)

    def api(q: BenchQuery) -> set[str]:
        if q.kind == "in":
            filters = [(q.column, "IN", ",".join(text(q, v) for v in q.values))]
        elif q.kind == "point":
            filters = [(q.column, "=", text(q, q.values[0]))]
        elif q.kind == "range_low":
            filters = [(q.column, "<=", text(q, q.intervals[0][1]))]
        elif q.kind == "range_high":
            filters = [(q.column, ">=", text(q, q.intervals[0][0]))]
        else:
            a, b = q.intervals[0]
            filters = [(q.column, ">=", text(q, a)), (q.column, "<=", text(q, b))]
        got = table.get_file_slices(HudiReadOptions(filters=filters))
        return {_base(s.base_file_relative_path()) for s in got}

    how = (
        "hudi-rs 0.5.0 get_file_slices(filters): min/max of the base files' Parquet footers "
        "(no metadata-table column stats in these tables); IN lists not pruned"
    )
    return NativeStats("hudi", how, files, bounds, False, api)


def _delta(path: str, columns: list[str]) -> NativeStats:
    import pyarrow.dataset as ds
    from deltalake import DeltaTable

    table = DeltaTable(path)
    acts = table.get_add_actions(flatten=True)
    names = list(acts.column_names) if hasattr(acts, "column_names") else list(acts.schema.names)
    files = [_base(str(p)) for p in acts.column("path").to_pylist()]
    bounds: dict[str, list[tuple[int, int] | None]] = {}
    for c in columns:
        if f"min.{c}" not in names or f"max.{c}" not in names:
            continue
        los, his = acts.column(f"min.{c}").to_pylist(), acts.column(f"max.{c}").to_pylist()
        bounds[c] = [
            None if a is None or b is None else (to_domain(a), to_domain(b))
            for a, b in zip(los, his, strict=True)
        ]
    dataset = table.to_pyarrow_dataset()

    def api(q: BenchQuery) -> set[str]:
        f = ds.field(q.column)
        vals = [from_domain(v, q.spark_type) for v in q.values]
        if q.kind == "in":
            expr = f.isin(vals)
        elif q.kind == "point":
            expr = f == vals[0]
        elif q.kind == "range_low":
            expr = f <= from_domain(q.intervals[0][1], q.spark_type)
        elif q.kind == "range_high":
            expr = f >= from_domain(q.intervals[0][0], q.spark_type)
        else:
            a, b = q.intervals[0]
            expr = (f >= from_domain(a, q.spark_type)) & (f <= from_domain(b, q.spark_type))
        return {_base(fr.path) for fr in dataset.get_fragments(filter=expr)}

    how = (
        "deltalake get_add_actions() per-file min/max, as pruned by "
        "DeltaTable.to_pyarrow_dataset().get_fragments(filter)"
    )
    return NativeStats("delta", how, files, bounds, True, api)


def iceberg_table(path: str) -> Any:
    """The Iceberg table at ``path`` through pyiceberg alone, from its newest metadata file."""
    from pyiceberg.table import StaticTable

    def version(name: str) -> tuple[int, str]:
        head = name.split("-", 1)[0].split(".", 1)[0].lstrip("v")
        return (int(head) if head.isdigit() else -1, name)

    names = [n for n in os.listdir(os.path.join(path, "metadata")) if n.endswith(".metadata.json")]
    newest = max(names, key=version)
    return StaticTable.from_metadata(os.path.join(path, "metadata", newest))


def _iceberg(path: str, columns: list[str]) -> NativeStats:
    from pyiceberg import expressions
    from pyiceberg.conversions import from_bytes

    ex: Any = expressions
    table = iceberg_table(path)
    schema = table.schema()
    tasks = list(table.scan().plan_files())
    files = [_base(str(t.file.file_path)) for t in tasks]
    bounds: dict[str, list[tuple[int, int] | None]] = {}
    for c in columns:
        fld = schema.find_field(c)
        per: list[tuple[int, int] | None] = []
        for t in tasks:
            lo_b, hi_b = t.file.lower_bounds or {}, t.file.upper_bounds or {}
            if fld.field_id in lo_b and fld.field_id in hi_b:
                lo = from_bytes(fld.field_type, lo_b[fld.field_id])
                hi = from_bytes(fld.field_type, hi_b[fld.field_id])
                per.append((to_domain(lo), to_domain(hi)))
            else:
                per.append(None)
        bounds[c] = per

    def lit(q: BenchQuery, v: int) -> Any:
        return from_domain(v, q.spark_type).isoformat() if q.spark_type == "date" else int(v)

    def api(q: BenchQuery) -> set[str]:
        if q.kind == "in":
            expr = ex.In(q.column, {lit(q, v) for v in q.values})
        elif q.kind == "point":
            expr = ex.EqualTo(q.column, lit(q, q.values[0]))
        elif q.kind == "range_low":
            expr = ex.LessThanOrEqual(q.column, lit(q, q.intervals[0][1]))
        elif q.kind == "range_high":
            expr = ex.GreaterThanOrEqual(q.column, lit(q, q.intervals[0][0]))
        else:
            a, b = q.intervals[0]
            expr = ex.And(
                ex.GreaterThanOrEqual(q.column, lit(q, a)), ex.LessThanOrEqual(q.column, lit(q, b))
            )
        return {_base(str(t.file.file_path)) for t in table.scan(row_filter=expr).plan_files()}

    how = "pyiceberg scan(row_filter).plan_files(): manifest lower/upper bounds per data file"
    return NativeStats("iceberg", how, files, bounds, True, api)


def native_stats(fmt: str, path: str, columns: list[str]) -> NativeStats:
    """The native pruner of the table at ``path`` in format ``fmt``.

    Raises:
        ValueError: a format without a native pruner here.
    """
    makers = {"hudi": _hudi, "delta": _delta, "iceberg": _iceberg}
    if fmt not in makers:
        raise ValueError(
            f"no native statistics pruner for format {fmt!r}; known: {', '.join(makers)}"
        )
    return makers[fmt](os.path.abspath(path), columns)
