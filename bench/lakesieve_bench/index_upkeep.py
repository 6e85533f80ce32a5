"""Index bytes after a refresh and after compaction, against a fresh build at the same instant.

Issue 40, item 1. For each table and each index type (sieve, zone map, Bloom,
exact) on the table's key column, one run:

1. builds the index at the table's latest instant;
2. upserts 1% of the rows as one commit;
3. refreshes the index with the table's refresh policy (the default
   :class:`~lakesieve.maintenance.refresh.RefreshPolicy` unless told
   otherwise), which folds the commit in as a delta or compacts on the way,
   and records the stored bytes of the newest state's whole chain (base and
   deltas, ``describe_index``'s ``size_bytes``);
4. builds a fresh index of the same type under another name at the same
   instant and records its bytes;
5. compares the locations the refreshed index and the fresh one select on
   point and range queries on the key (``Table.plan``);
6. compacts the refreshed index (``Table.compact``), records its bytes and
   compares its selections with the fresh build's again.

Further fresh builds (``fresh_repeats``) measure how far builds of the same
data at one instant differ in bytes. A selection equal to the fresh
build's is the expected outcome and a strict superset is allowed (more
locations read, never a wrong answer). An approximate index (Sieve, Bloom)
may also select other false positives than a fresh build of it; such
queries count under ``not_supersets``. What would be a correctness bug, a
selection lacking a location that truly holds a matching key (the fresh
exact index's selection), counts under ``misses_truth`` and makes the
command exit with status 1.

The tables:

* ``sf1``: a copy of the interleaved TPC-H lineitem SF1 Hudi table (64
  bucketed file groups, record key ``l_orderkey, l_linenumber``), indexed on
  ``l_orderkey``; the upsert rewrites every line of 1% of the orders (adding
  1 to ``l_quantity``), as the timeline suite's upserts do
  (:func:`lakesieve_bench.timeline.upsert_orders`): no key changes its location;
* ``sf1-inserts``: the same table, the upsert updating 2/3 of 1% of the
  orders that way and inserting 1/3 as new orders (:func:`~lakesieve_bench.upkeep_data.sf1_insert_upsert`;
  ``--insert-share`` sets the new orders' share, issue 54 measured 0.5);
* ``shuffled``: ``rows`` rows of a shuffled int64 key ``id`` (by default the
  row number's 64-bit hash, see :func:`~lakesieve_bench.upkeep_data.shuffled_key`; ``--keys lattice``
  for a multiplicative bijection) and two payload columns, written as a
  Hudi table of 64 file groups bucketed on ``id``; the upsert updates 2/3 of
  1% of the rows (random existing ids) and inserts 1/3 of 1% new ids.

Usage::

    python -m lakesieve_bench.index_upkeep --sf1-source bench-data/paths-sf1/hudi \\
        --fresh-builds 3 --workdir bench-data/upkeep --json docs/benchmarks/index-upkeep-sf1.json

(or ``lakesieve bench --suite upkeep`` with the same options).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lakesieve_bench.upkeep_data import (
    KEY_KINDS,
    Upsert,
    compare,
    copy_table,
    make_queries,
    selections,
    sf1_insert_upsert,
    sf1_upsert,
    shuffled_upsert,
    write_shuffled,
)

#: Index types measured, in report order.
INDEX_TYPES = ("sieve", "zonemap", "bloom", "exact")

#: Targets of issue 40, item 1: refreshed / fresh bytes at most this ...
REFRESH_TARGET = 1.25
#: ... and compacted bytes within this share of the fresh build's.
COMPACT_TARGET = 0.05


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- the measurement


def _bytes(table: Any, name: str) -> dict[str, Any]:
    """Stored bytes of ``name``'s newest state's chain, with its shape."""
    desc = table.describe_index(name)
    return {
        "size_bytes": int(desc["size_bytes"]),
        "deltas": desc.get("deltas", 0),
        "delta_rows": desc.get("delta_rows", 0),
        "instant": desc.get("instant"),
        "base_instant": desc.get("base_instant"),
        "details": desc.get("details", {}),
    }


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def run_table(
    spark: Any,
    table_path: Path,
    column: str,
    upsert: Upsert,
    index_types: tuple[str, ...] = INDEX_TYPES,
    points: int = 20,
    ranges: int = 5,
    seed: int = 42,
    policy: Any = None,
    label: str = "",
    fresh_builds: int = 2,
) -> dict[str, Any]:
    """Build, upsert, refresh, fresh-build and compact each index type on one table's ``column``.

    ``policy`` is the refresh policy (``None``: the default
    :class:`~lakesieve.maintenance.refresh.RefreshPolicy`). Returns the
    figures per index type: bytes built, refreshed, compacted and fresh,
    the ratios to the fresh build's, whether the issue's targets hold, and
    the selections of the refreshed and compacted index against the fresh one.
    ``fresh_builds`` fresh builds are made (at least one): the first is kept
    and compared, the bytes of all are listed (``fresh_repeats``) with their
    spread, since a build's bytes need not be the same twice.
    """
    from lakesieve.maintenance.refresh import RefreshPolicy
    from lakesieve.table import open as open_table

    policy = policy or RefreshPolicy()
    table = open_table(table_path, refresh_policy=policy)
    for definition in table.indexes():
        table.drop_index(definition.name)
    out: dict[str, Any] = {
        "path": str(table_path),
        "column": column,
        "policy": {k: getattr(policy, k) for k in ("max_deltas", "max_delta_rows")}
        | {"max_delta_share": str(policy.max_delta_share)},
        "built_instant": table.timeline()[-1].id,
        "locations": len(table.snapshot().locations),
    }
    per: dict[str, dict[str, Any]] = {}
    for itype in index_types:
        started = time.perf_counter()
        table.build_index(column, type=itype, name=itype, spark=spark)
        per[itype] = {
            "build_seconds": round(time.perf_counter() - started, 2),
            "built": _bytes(table, itype),
        }
        _say(f"[{label}] built {itype}: {per[itype]['built']['size_bytes']} bytes")

    commit = upsert(spark, table)
    changed = [int(k) for k in commit.pop("changed_keys", [])]
    out["upsert"] = commit
    out["instant"] = table.timeline()[-1].id
    _say(f"[{label}] upsert: {commit}")

    for itype in index_types:
        res = table.refresh(itype, spark=spark)[0]
        per[itype]["refresh"] = {
            "action": res.action,
            "seconds": round(res.seconds, 2),
            "delta_rows": res.delta_rows,
            "chain_length": res.chain_length,
            "locations_read": res.locations_read,
            "note": res.note,
        }
        per[itype]["refreshed"] = _bytes(table, itype)
        started = time.perf_counter()
        table.build_index(column, type=itype, name=f"{itype}_fresh", spark=spark)
        per[itype]["fresh_build_seconds"] = round(time.perf_counter() - started, 2)
        per[itype]["fresh"] = _bytes(table, f"{itype}_fresh")
        repeats = [per[itype]["fresh"]["size_bytes"]]
        for _ in range(fresh_builds - 1):  # the same data at the same instant, built again
            table.build_index(column, type=itype, name=f"{itype}_fresh_again", spark=spark)
            repeats.append(_bytes(table, f"{itype}_fresh_again")["size_bytes"])
            table.drop_index(f"{itype}_fresh_again")
        per[itype]["fresh_repeats"] = repeats
        per[itype]["fresh_spread"] = round(max(repeats) / min(repeats) - 1, 4)
        _say(
            f"[{label}] {itype}: refresh {res.action}, {per[itype]['refreshed']['size_bytes']} "
            f"bytes; fresh {per[itype]['fresh']['size_bytes']} bytes"
        )

    wheres = make_queries(spark, table, column, changed, points, ranges, seed)
    out["queries"] = wheres
    exact_name = "exact_fresh" if "exact" in index_types else "_truth_exact"
    if "exact" not in index_types:
        table.build_index(column, type="exact", name=exact_name, spark=spark)
    truth = selections(table, exact_name, wheres)
    for itype in index_types:
        fresh = selections(table, f"{itype}_fresh", wheres)
        per[itype]["answers_refreshed"] = compare(
            wheres, selections(table, itype, wheres), fresh, truth
        )
        res = table.compact(itype, spark=spark)[0]
        per[itype]["compact"] = {"action": res.action, "seconds": round(res.seconds, 2)}
        per[itype]["compacted"] = _bytes(table, itype)
        per[itype]["answers_compacted"] = compare(
            wheres, selections(table, itype, wheres), fresh, truth
        )
        fresh_b = per[itype]["fresh"]["size_bytes"]
        ref_r = _ratio(per[itype]["refreshed"]["size_bytes"], fresh_b)
        cmp_r = _ratio(per[itype]["compacted"]["size_bytes"], fresh_b)
        per[itype]["refreshed_over_fresh"] = ref_r
        per[itype]["compacted_over_fresh"] = cmp_r
        per[itype]["refresh_target_met"] = ref_r is not None and ref_r <= REFRESH_TARGET
        per[itype]["compact_target_met"] = cmp_r is not None and abs(cmp_r - 1) <= COMPACT_TARGET
        compacted_b = per[itype]["compacted"]["size_bytes"]
        per[itype]["compacted_within_fresh_range"] = (
            min(per[itype]["fresh_repeats"]) <= compacted_b <= max(per[itype]["fresh_repeats"])
        )
        for key in ("answers_refreshed", "answers_compacted"):
            if not per[itype][key]["covers_truth"]:
                _say(f"[{label}] !!! {itype} {key}: selections miss locations holding the key")
        _say(
            f"[{label}] {itype}: compact {res.action}, {per[itype]['compacted']['size_bytes']} "
            f"bytes; refreshed/fresh {ref_r}, compacted/fresh {cmp_r}"
        )
    out["indexes"] = per
    return out


def summary(figures: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per table and index type: the bytes, ratios, targets and answer checks."""
    rows = []
    for tname, tfig in figures["tables"].items():
        for itype, f in tfig["indexes"].items():
            rows.append(
                {
                    "table": tname,
                    "index": itype,
                    "built": f["built"]["size_bytes"],
                    "fresh": f["fresh"]["size_bytes"],
                    "fresh_repeats": f["fresh_repeats"],
                    "fresh_spread": f["fresh_spread"],
                    "compacted_within_fresh_range": f["compacted_within_fresh_range"],
                    "refreshed": f["refreshed"]["size_bytes"],
                    "refresh_action": f["refresh"]["action"],
                    "refreshed_deltas": f["refreshed"]["deltas"],
                    "compacted": f["compacted"]["size_bytes"],
                    "refreshed_over_fresh": f["refreshed_over_fresh"],
                    "compacted_over_fresh": f["compacted_over_fresh"],
                    "refresh_target_met": f["refresh_target_met"],
                    "compact_target_met": f["compact_target_met"],
                    "refreshed_equal": f"{f['answers_refreshed']['equal']}/"
                    f"{f['answers_refreshed']['queries']}",
                    "compacted_equal": f"{f['answers_compacted']['equal']}/"
                    f"{f['answers_compacted']['queries']}",
                    "refreshed_selected": f["answers_refreshed"]["selected_total"],
                    "compacted_selected": f["answers_compacted"]["selected_total"],
                    "fresh_selected": f["answers_refreshed"]["fresh_selected_total"],
                    "not_supersets": f["answers_refreshed"]["not_supersets"]
                    + f["answers_compacted"]["not_supersets"],
                    "misses_truth": f["answers_refreshed"]["misses_truth"]
                    + f["answers_compacted"]["misses_truth"],
                }
            )
    return rows


def markdown_table(figures: dict[str, Any]) -> str:
    """The summary as a markdown table (bytes, ratios to the first fresh build, answers)."""
    lines = [
        "| table | index | built | fresh (all builds) | refreshed (action) | compacted "
        "| refreshed / fresh | compacted / fresh | answers equal (refreshed, compacted) "
        "| misses truth |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in summary(figures):
        fresh = ", ".join(f"{b:,}" for b in r["fresh_repeats"])
        lines.append(
            f"| {r['table']} | {r['index']} | {r['built']:,} | {fresh} "
            f"| {r['refreshed']:,} ({r['refresh_action']}) | {r['compacted']:,} "
            f"| {r['refreshed_over_fresh']} | {r['compacted_over_fresh']} "
            f"| {r['refreshed_equal']}, {r['compacted_equal']} | {r['misses_truth']} |"
        )
    return "\n".join(lines) + "\n"


def run(
    sf1_source: str | None,
    workdir: str,
    rows: int = 1_000_000,
    file_groups: int = 64,
    fraction: float = 0.01,
    points: int = 20,
    ranges: int = 5,
    seed: int = 42,
    tables: tuple[str, ...] = ("sf1", "sf1-inserts", "shuffled"),
    index_types: tuple[str, ...] = INDEX_TYPES,
    checkpoint: Callable[[dict[str, Any]], None] | None = None,
    fresh_builds: int = 2,
    keys: str = "hash",
    insert_share: float = 1 / 3,
) -> dict[str, Any]:
    """The figures of the ``tables`` (the SF1 ones copy ``sf1_source``, never changing it).

    ``checkpoint`` is called with the figures so far after each table;
    ``keys`` is the shuffled table's key kind (:func:`~lakesieve_bench.upkeep_data.shuffled_key`);
    ``insert_share`` the share of new orders in the ``sf1-inserts`` upsert.
    """
    from lakesieve.spark.session import get_spark

    spark = get_spark()
    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    out: dict[str, Any] = {
        "suite": "upkeep",
        "fraction": fraction,
        "insert_share": insert_share,
        "seed": seed,
        "points": points,
        "ranges": ranges,
        "targets": {"refreshed_over_fresh_max": REFRESH_TARGET, "compacted_within": COMPACT_TARGET},
        "tables": {},
    }
    for name in tables:
        t0 = time.perf_counter()
        if name in ("sf1", "sf1-inserts"):
            if not sf1_source:
                raise SystemExit(
                    f"the {name} table needs --sf1-source (the interleaved SF1 Hudi table)"
                )
            path = copy_table(sf1_source, work / name)
            upsert = (
                sf1_upsert(fraction, seed)
                if name == "sf1"
                else sf1_insert_upsert(fraction, seed, insert_share)
            )
            fig = run_table(
                spark,
                path,
                "l_orderkey",
                upsert,
                index_types,
                points,
                ranges,
                seed,
                label=name,
                fresh_builds=fresh_builds,
            )
            fig["source"] = str(sf1_source)
        elif name == "shuffled":
            path = write_shuffled(spark, work / "shuffled", rows, file_groups, keys)
            fig = run_table(
                spark,
                path,
                "id",
                shuffled_upsert(rows, fraction, seed, keys),
                index_types,
                points,
                ranges,
                seed,
                label=name,
                fresh_builds=fresh_builds,
            )
            fig["rows"] = rows
            fig["file_groups"] = file_groups
            fig["keys"] = keys
        else:
            raise SystemExit(f"unknown table {name!r} (sf1, sf1-inserts, shuffled)")
        fig["seconds"] = round(time.perf_counter() - t0, 1)
        out["tables"][name] = fig
        if checkpoint is not None:
            checkpoint({**out, "partial": True})
    out["seconds"] = round(time.perf_counter() - started, 1)
    out["summary"] = summary(out)
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line entry point (``lakesieve bench --suite upkeep``)."""
    p = argparse.ArgumentParser(
        prog="lakesieve bench --suite upkeep", description=__doc__.splitlines()[0]
    )
    p.add_argument("--sf1-source", help="the interleaved SF1 Hudi table (copied into --workdir)")
    p.add_argument("--workdir", default="bench-data/upkeep")
    p.add_argument(
        "--tables", default="sf1,sf1-inserts,shuffled", help="of sf1, sf1-inserts, shuffled"
    )
    p.add_argument("--index-types", default=",".join(INDEX_TYPES))
    p.add_argument("--rows", type=int, default=1_000_000, help="rows of the shuffled table")
    p.add_argument("--file-groups", type=int, default=64, help="file groups of the shuffled table")
    p.add_argument("--fraction", type=float, default=0.01, help="share of rows (orders) upserted")
    p.add_argument(
        "--insert-share",
        type=float,
        default=1 / 3,
        help="share of new orders in the sf1-inserts upsert (the rest are updated)",
    )
    p.add_argument("--points", type=int, default=20)
    p.add_argument("--ranges", type=int, default=5)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--keys", default="hash", choices=KEY_KINDS, help="the shuffled table's keys")
    p.add_argument(
        "--fresh-builds", type=int, default=2, help="fresh builds per index type (bytes spread)"
    )
    p.add_argument("--json", dest="json_path")
    args = p.parse_args(argv)

    def partial(figs: dict[str, Any]) -> None:
        if args.json_path:
            Path(args.json_path).write_text(json.dumps(figs, indent=1, default=str) + "\n")

    figures = run(
        args.sf1_source,
        args.workdir,
        rows=args.rows,
        file_groups=args.file_groups,
        fraction=args.fraction,
        points=args.points,
        ranges=args.ranges,
        seed=args.seed,
        tables=tuple(t for t in args.tables.split(",") if t),
        index_types=tuple(t for t in args.index_types.split(",") if t),
        checkpoint=partial,
        fresh_builds=max(1, args.fresh_builds),
        keys=args.keys,
        insert_share=args.insert_share,
    )
    figures["command"] = "python -m lakesieve_bench.index_upkeep " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    text = json.dumps(figures, indent=1, default=str)
    print(text)
    if args.json_path:
        Path(args.json_path).write_text(text + "\n")
    for row in figures["summary"]:
        _say(json.dumps(row))
    bad = [r for r in figures["summary"] if r["misses_truth"]]
    if bad:
        _say(f"!!! selections missing locations that hold the key: {bad}")
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
