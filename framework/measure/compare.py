"""Compare index types on one column of one table: ``lakesieve compare``.

Every requested index type is built on the same snapshot (the latest instant)
under the name ``cmp_<column>_<type>`` (dropped again afterwards, folders
included, also when something fails, unless ``keep``); the same seeded query set is then
answered by each index alone (the planner's :func:`~lakesieve.query.planner.evaluate`
with only that index, timed without Spark), and the figures are reported per
type: build seconds, size and share of the column's compressed size, lookup
latency, locations selected per query kind and the overhead over ``exact``
(the ideal). Beside them, ``native``: the locations the table format's own
data skipping reads for the same queries, labelled with what computed it
(:mod:`lakesieve.measure.native`). Keys are sampled with Spark; the column is
never collected.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import random
import time
from typing import Any

from lakesieve.contract import registry
from lakesieve.contract.format_read import read_columns
from lakesieve.errors import LakesieveError, UnknownPluginError
from lakesieve.expressions import BoundColumn, bind, quote_ident, resolve_column, sql_literal
from lakesieve.maintenance.vacuum import TEMP_PREFIX
from lakesieve.measure.native import (
    choose_skipping,
    native_label,
    native_row,
    selection_counts,
)
from lakesieve.query.planner import evaluate
from lakesieve.state.in_use import IndexInUse

RANGE_FRACTIONS = {"range_0.01pct": 0.0001, "range_0.1pct": 0.001, "range_1pct": 0.01}
KINDS = ("point", "in", *RANGE_FRACTIONS, "range_low", "range_high")
IN_SIZE = 10
#: what each query kind asks, in the words of the report's glossary
KIND_MEANINGS = {
    "point": "an equality with one key sampled from the column: col = v",
    "in": f"a list of {IN_SIZE} keys sampled from the column: col IN (v1, ..., v{IN_SIZE})",
    "range_0.01pct": "a two-sided range col BETWEEN a AND b covering 0.01% of the keys",
    "range_0.1pct": "a two-sided range col BETWEEN a AND b covering 0.1% of the keys",
    "range_1pct": "a two-sided range col BETWEEN a AND b covering 1% of the keys",
    "range_low": "a one-sided range col <= v, v among the lowest 1% of the sampled distinct keys",
    "range_high": "a one-sided range col >= v, v among the highest 1% of the sampled distinct keys",
}
E2E_KINDS = ("point", "in", "range_0.1pct")

_NUMERIC = {"tinyint", "smallint", "int", "bigint", "float", "double"}


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))] if s else 0.0


def parse_types(text: str | None) -> list[str] | None:
    """``"sieve,bloom"`` -> ``["sieve", "bloom"]`` (``None`` for all installed types)."""
    if not text:
        return None
    return [t.strip() for t in text.split(",") if t.strip()]


def _check_types(types: list[str] | None) -> list[str]:
    installed = sorted(registry.index_type_names())
    if types is None:
        return installed
    unknown = [t for t in types if t not in installed]
    if unknown:
        raise UnknownPluginError(
            f"unknown index type {unknown[0]!r}; installed: {', '.join(installed) or 'none'}"
        )
    if not types:
        raise LakesieveError("no index type to compare")
    return list(dict.fromkeys(types))


def column_compressed_bytes(table: Any, snapshot: Any, column: str) -> tuple[int | None, str]:
    """Sum of the column's chunk sizes in the Parquet footers of the snapshot's base files.

    Returns ``(bytes, how)``; ``bytes`` is ``None`` when no footer could be read
    (non-local storage, non-Parquet files).
    """
    import os

    import pyarrow.parquet as pq

    total = 0
    read = 0
    missing = 0
    for unit in snapshot.units:
        if not unit.base_file:
            missing += 1
            continue
        path = unit.base_file
        if path.startswith("file://"):
            path = path[len("file://") :]
        if not os.path.isabs(path):
            path = os.path.join(table.path, path)
        try:
            meta = pq.ParquetFile(path).metadata
        except Exception:
            missing += 1
            continue
        read += 1
        for rg in range(meta.num_row_groups):
            group = meta.row_group(rg)
            for c in range(group.num_columns):
                chunk = group.column(c)
                if chunk.path_in_schema == column:
                    total += int(chunk.total_compressed_size)
    if read == 0:
        return None, "unknown (no Parquet base file footer readable)"
    how = f"parquet footers of {read} base files"
    if missing:
        how += f" ({missing} units without a readable base file not counted)"
    return total, how


def _key_value(col: BoundColumn, v: Any) -> Any:
    if col.spark_type in {"tinyint", "smallint", "int", "bigint"}:
        return int(v)
    return v


class _Queries:
    """The seeded query set: ``kind -> list of where strings``."""

    col: BoundColumn

    def _numeric_range(
        self,
        ident: str,
        rng: random.Random,
        a0: Any,
        b0: Any,
        frac: float,
        integral: bool,
        is_date: bool,
    ) -> str:
        """A two-sided range covering ``frac`` of the key domain ``[a0, b0]``."""
        va: Any
        vb: Any
        if integral:
            width = max(1, round((b0 - a0 + 1) * frac))
            a = rng.randint(a0, max(a0, b0 - width + 1))
            va, vb = a, a + width - 1
            if is_date:
                va, vb = dt.date.fromordinal(va), dt.date.fromordinal(vb)
        else:
            fwidth = (b0 - a0) * frac
            fa = rng.uniform(a0, max(a0, b0 - fwidth))
            va, vb = float(fa), float(fa + fwidth)
        return _range_where(ident, self.col, va, vb)

    def __init__(
        self, col: BoundColumn, sample: list[Any], lo: Any, hi: Any, n: int, seed: int
    ) -> None:
        self.col = col
        rng = random.Random(seed)
        ident = quote_ident(col.name)

        def lit(v: Any) -> str:
            return sql_literal(v, col)

        self.by_kind: dict[str, list[str]] = {k: [] for k in KINDS}
        self.range_how = ""
        if not sample:
            return
        for _ in range(n):
            self.by_kind["point"].append(f"{ident} = {lit(rng.choice(sample))}")
            picks = rng.sample(sample, min(IN_SIZE, len(sample)))
            self.by_kind["in"].append(f"{ident} IN ({', '.join(lit(v) for v in picks)})")
        kind = col.spark_type
        ordered = sorted(set(sample))
        if kind in _NUMERIC or kind == "date":
            is_date = kind == "date"
            a0 = lo.toordinal() if is_date else lo
            b0 = hi.toordinal() if is_date else hi
            integral = is_date or kind not in {"float", "double"}
            self.range_how = "fraction of the key domain [min, max]"
            for name, frac in RANGE_FRACTIONS.items():
                for _ in range(n):
                    self.by_kind[name].append(
                        self._numeric_range(ident, rng, a0, b0, frac, integral, is_date)
                    )
        else:
            self.range_how = "between sampled keys (fraction of the sampled distinct keys)"
            for name, frac in RANGE_FRACTIONS.items():
                step = max(1, round(len(ordered) * frac))
                for _ in range(n):
                    i = rng.randrange(len(ordered))
                    j = min(len(ordered) - 1, i + step)
                    self.by_kind[name].append(
                        f"{ident} BETWEEN {lit(ordered[i])} AND {lit(ordered[j])}"
                    )
        for _ in range(n):
            # one-sided ranges near either end of the domain (about 1% of the sampled keys)
            tail = max(1, len(ordered) // 100)
            self.by_kind["range_low"].append(f"{ident} <= {lit(ordered[rng.randrange(tail)])}")
            self.by_kind["range_high"].append(
                f"{ident} >= {lit(ordered[-1 - rng.randrange(tail)])}"
            )


def _range_where(ident: str, col: BoundColumn, va: Any, vb: Any) -> str:
    return f"{ident} BETWEEN {sql_literal(va, col)} AND {sql_literal(vb, col)}"


def compare_indexes(
    table: Any,
    column: str,
    types: list[str] | None = None,
    queries: int = 200,
    seed: int = 42,
    spark: Any = None,
    keep: bool = False,
    e2e: bool = True,
    progress: Any = None,
) -> dict[str, Any]:
    """Build each index type on ``column`` and measure it on one seeded query set.

    ``table`` is a :class:`~lakesieve.table.Table` or a path. ``queries`` is
    the number of queries per kind. Returns one JSON-ready dict (see the
    module docstring); ``types`` maps each type to its figures.

    Raises:
        ColumnNotFoundError: the table has no such column.
        UnknownPluginError: a type is not installed.
        LakesieveError: nothing to compare (empty table, bad counts).
    """
    from lakesieve.table import Table
    from lakesieve.table import open as open_table

    if not isinstance(table, Table):
        table = open_table(table)
    if queries < 1:
        raise LakesieveError(f"--queries must be at least 1, got {queries}")
    inst = table.resolve_instant(None)
    if inst is None:
        raise LakesieveError(f"table {table.path} has no completed instant to compare indexes on")
    schema = table.schema(inst.id)
    col = resolve_column(schema, column, table.path)
    types = _check_types(types)
    for t in types:  # every option/type check before Spark starts
        registry.index_type(t).validate({}, col.spark_type)
    say = progress or (lambda _msg: None)

    from lakesieve.spark.session import get_spark
    from pyspark.sql import functions as F

    spark = spark or get_spark()
    snapshot = table.snapshot(inst.id)
    locations = snapshot.locations
    total = len(snapshot.units)
    col_bytes, col_bytes_how = column_compressed_bytes(table, snapshot, col.name)

    # sample existing keys with Spark (never collect the column)
    say(f"sampling keys of {col.name} ...")
    frame = read_columns(table.view.fmt, spark, snapshot.units, inst.id, [col.name])
    keys = frame.select(F.col(col.name).alias("key")).where(F.col("key").isNotNull())
    stats = keys.agg(F.count(F.lit(1)), F.min("key"), F.max("key")).first()
    assert stats is not None  # an aggregate without grouping has one row
    rows, lo, hi = int(stats[0]), stats[1], stats[2]
    if rows == 0:
        raise LakesieveError(
            f"column {col.name!r} of table {table.path} has no non-null value to query"
        )
    want = max(4 * queries, 200)
    fraction = min(1.0, 2.0 * want / rows)
    sample = [
        _key_value(col, r[0])
        for r in keys.sample(fraction=fraction, seed=seed).limit(want).collect()
    ]
    if not sample:
        sample = [_key_value(col, r[0]) for r in keys.limit(want).collect()]
    qset = _Queries(col, sample, _key_value(col, lo), _key_value(col, hi), queries, seed)
    bound = {k: [bind(w, schema, table.path) for w in ws] for k, ws in qset.by_kind.items()}

    out: dict[str, Any] = {
        "table": table.path,
        "format": table.format,
        "column": col.name,
        "key_type": col.spark_type,
        "instant": inst.id,
        "locations_total": total,
        "rows": rows,
        "queries_per_kind": {k: len(v) for k, v in bound.items()},
        "seed": seed,
        "range_widths": qset.range_how,
        "column_compressed_bytes": col_bytes,
        "column_compressed_bytes_source": col_bytes_how,
        "lookup_timing": "planner evaluate() with only this index loaded, per query, no Spark",
        "examples": {k: v[0] for k, v in qset.by_kind.items() if v},
        "types": {},
    }
    say("native data skipping of the table format ...")
    skipping = choose_skipping(table.view.fmt, table.path, snapshot, inst.id, col)
    out["native"] = native_row(skipping, bound, locations)
    names: list[str] = []
    try:
        for t in types:
            name = f"{TEMP_PREFIX}{col.name}_{t}"
            say(f"building {t} index {name} ...")
            names.append(name)
            started = time.perf_counter()
            desc = table.build_index(col.name, type=t, name=name, spark=spark, as_of=inst.id)
            wall = time.perf_counter() - started
            definition = table.index(name)
            state = definition.latest()
            loaded = IndexInUse(definition, state, table.states.load(definition, state))
            size = int(desc.get("size_bytes") or 0)
            fig: dict[str, Any] = {
                "name": name,
                "size_bytes": size,
                "size_share_of_column": round(size / col_bytes, 4) if col_bytes else None,
                "build_seconds": round(float(desc.get("build_seconds") or wall), 3),
                "details": desc.get("details", {}),
            }
            lat: list[float] = []
            if bound["point"]:  # warm-up: the first lookup pays one-time decoding costs
                evaluate(bound["point"][0].node, {col.name: [loaded]})

            def timed(
                node: Any, loaded: IndexInUse = loaded, lat: list[float] = lat
            ) -> frozenset[str] | None:
                t0 = time.perf_counter()
                ans = evaluate(node, {col.name: [loaded]})
                lat.append((time.perf_counter() - t0) * 1000.0)
                return ans

            selected, answered_all = selection_counts(bound, locations, timed)
            fig["lookup_p50_ms"] = round(_pct(lat, 0.5), 4)
            fig["lookup_p99_ms"] = round(_pct(lat, 0.99), 4)
            fig["selected"] = selected
            fig["answered_all"] = answered_all
            out["types"][t] = fig
        ideal = out["types"].get("exact", {}).get("selected")
        for fig in [*out["types"].values(), out["native"]]:
            if ideal:
                fig["overhead_vs_exact"] = {
                    k: (round(v / ideal[k], 3) if ideal[k] else None)
                    for k, v in fig["selected"].items()
                }
        if e2e:
            out["end_to_end"] = _end_to_end(table, spark, qset, say)
    except BaseException:
        remove_temporary(table, names)
        raise
    if not keep:
        remove_temporary(table, names)
    out["kept_indexes"] = names if keep else []
    return out


def remove_temporary(table: Any, names: list[str]) -> None:
    """Drop the temporary indexes ``names`` and remove their folders under the index root.

    A build that failed between writing its files and committing them leaves
    a ``data/<name>`` folder no log entry names; once ``name`` is no longer
    defined in the log, its whole folder is removed (never through a link,
    never outside the index root).
    """
    store = table.store
    for name in names:
        with contextlib.suppress(LakesieveError, OSError):
            table.drop_index(name)
        try:
            defined = name in store.read_log().indexes
        except (LakesieveError, OSError):
            continue  # a damaged log: leave the files for `index repair` / `index vacuum`
        if not defined:
            store.remove_tree(store.data_dir / name)


def _end_to_end(table: Any, spark: Any, qset: _Queries, say: Any) -> list[dict[str, Any]]:
    """Three queries read through every compared index (the planner intersects them) vs a full scan."""
    checks = []
    for kind in E2E_KINDS:
        if not qset.by_kind[kind]:
            continue
        where = qset.by_kind[kind][0]
        say(f"end-to-end {kind}: {where[:80]}")
        plan = table.plan(where)
        t0 = time.perf_counter()
        got = table.read_plan(plan, spark).count()
        t_index = time.perf_counter() - t0
        t0 = time.perf_counter()
        want = table.full_read(spark, where=where).count()
        t_full = time.perf_counter() - t0
        checks.append(
            {
                "kind": kind,
                "where": where,
                "rows": got,
                "equal": got == want,
                "locations_read": plan.locations_selected,
                "locations_total": plan.locations_total,
                "indexed_seconds": round(t_index, 3),
                "full_scan_seconds": round(t_full, 3),
            }
        )
    return checks


def format_table(result: dict[str, Any]) -> str:
    """A readable text table of :func:`compare_indexes`' result."""
    types = list(result["types"])
    native = result.get("native")
    lines = [
        f"table {result['table']} ({result['format']}) column {result['column']} ({result['key_type']}) "
        f"at instant {result['instant']}: {result['locations_total']} locations, {result['rows']} rows",
        f"column compressed size: {result['column_compressed_bytes']} bytes "
        f"({result['column_compressed_bytes_source']})",
        "",
    ]
    width = max(16, *(len(t) + 2 for t in types)) if types else 16
    head = f"{'':<22}" + "".join(f"{t:>{width}}" for t in types)
    lines.append(head + (f"{'native*':>{width}}" if native else ""))

    def row(label: str, vals: list[Any]) -> None:
        lines.append(f"{label:<22}" + "".join(f"{v!s:>{width}}" for v in vals))

    figs = [result["types"][t] for t in types]
    dash = ["-"] if native else []
    row("size_bytes", [*(f["size_bytes"] for f in figs), *dash])
    row(
        "share of column",
        [
            (
                "-"
                if f["size_share_of_column"] is None
                else f"{100 * f['size_share_of_column']:.1f}%"
            )
            for f in figs
        ]
        + dash,
    )
    row("build_seconds", [*(f["build_seconds"] for f in figs), *dash])
    row("lookup p50 ms", [*(f["lookup_p50_ms"] for f in figs), *dash])
    row("lookup p99 ms", [*(f["lookup_p99_ms"] for f in figs), *dash])
    lines.append(
        "locations selected (avg)" + (" / overhead vs exact" if "exact" in result["types"] else "")
    )
    for kind in KINDS:
        vals = []
        for f in [*figs, *([native] if native else [])]:
            v = f["selected"].get(kind, "-")
            ov = f.get("overhead_vs_exact", {}).get(kind)
            vals.append(f"{v}" + (f" x{ov}" if ov is not None else ""))
        row(f"  {kind}", vals)
    if native:
        lines.append(f"* {native_label(native)}")
    for e in result.get("end_to_end", []):
        lines.append(
            f"end-to-end {e['kind']}: {e['rows']} rows, read {e['locations_read']}/{e['locations_total']} locations "
            f"in {e['indexed_seconds']}s vs full scan {e['full_scan_seconds']}s (equal: {e['equal']})"
        )
    return "\n".join(lines)
