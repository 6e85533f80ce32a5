"""The command line's index upkeep: ``index build``, an upsert, ``index refresh``, timed as a user runs them.

Tables (``--tables``): ``hudi-sf1``, a copy of a Hudi table (by default the
SF1 interleaved TPC-H table of the read-path benchmark, 64 bucketed file
groups) upserted with every line of 1% of the orders (``l_quantity`` + 1;
chosen at random, seeded), indexed on ``l_orderkey``; ``hudi-sf1-inserts``,
the same with a third of those orders moved to new order keys above the
largest (inserts, so that refresh has keys to read); ``delta`` and
``iceberg``, 1,000,000 rows with a shuffled ``int64`` ``id`` written by
``lakesieve write`` in 64 buckets on ``id``, upserted with 10,000 updated and
5,000 new rows (issue 40's table), indexed on ``id``. Per index type:

1. ``lakesieve index build`` twice (two indexes of the type), each its own
   process: wall time, Python and Spark start-up included;
2. one ``lakesieve write --mode upsert``;
3. ``lakesieve index refresh --name`` of the first index with the default
   policy (a small change is read and folded on the driver, no Spark) and of
   the second with ``--max-mb 0`` (Spark jobs), each its own process.

Reported: each wall time, the refresh's share of the median build (issue 40's
bar: at most 10%), the engine each refresh says it used, the locations
(files, file groups) of the snapshot after the upsert, and whether the two refreshed indexes select the
same locations on point and range queries.

Run: ``python -m lakesieve_bench.cli_upkeep --workdir bench-data --json out.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

TYPES = ("sieve", "zonemap", "bloom", "exact")
COLUMN = "l_orderkey"


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _cli(*argv: str) -> tuple[float, str]:
    """Run ``lakesieve argv`` as its own process; its wall time and stdout."""
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "lakesieve.cli", *argv], capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"lakesieve {' '.join(argv)} failed:\n{proc.stderr[-3000:]}")
    return seconds, proc.stdout


def _upsert_rows(table: Path, fraction: float, seed: int) -> pa.Table:
    """Every line of ``fraction`` of the orders, ``l_quantity`` + 1, from the table's base files.

    The table must hold one base file per file group (as written by a bulk
    insert): the rows are read from its Parquet files directly.
    """
    files = sorted(str(p) for p in table.glob("*.parquet"))
    rows = pq.read_table(files)
    rows = rows.select([c for c in rows.column_names if not c.startswith("_hoodie")])
    orders = pc.unique(rows.column(COLUMN)).to_numpy()
    rng = np.random.default_rng(seed)
    chosen = rng.choice(orders, size=max(1, int(len(orders) * fraction)), replace=False)
    picked = rows.filter(pc.is_in(rows.column(COLUMN), value_set=pa.array(chosen)))
    qty = picked.column("l_quantity")
    one = pa.scalar(1, qty.type) if pa.types.is_decimal(qty.type) else 1
    bumped = pc.cast(pc.add(qty, one), qty.type)
    return picked.set_column(picked.schema.get_field_index("l_quantity"), "l_quantity", bumped)


def _with_inserts(upsert: pa.Table, rows_max: int) -> pa.Table:
    """``upsert`` with its last third of orders moved to new order keys above ``rows_max``.

    The lines keep their columns (their ``bucket`` too, so they land in the
    file groups their copies came from): 2/3 of the orders are updated, 1/3
    are new.
    """
    keys = upsert.column(COLUMN).to_numpy()
    orders = np.unique(keys)
    moved = orders[len(orders) - len(orders) // 3 :]
    new_of = {int(k): rows_max + 1 + i for i, k in enumerate(moved.tolist())}
    shifted = np.array([new_of.get(int(k), int(k)) for k in keys], dtype=np.int64)
    at = upsert.schema.get_field_index(COLUMN)
    return upsert.set_column(at, COLUMN, pa.array(shifted, upsert.schema.field(at).type))


def _selections(path: Path, names: list[str], wheres: list[str]) -> dict[str, list[list[str]]]:
    from lakesieve.table import open as open_table

    table = open_table(str(path))
    out: dict[str, list[list[str]]] = {name: [] for name in names}
    for where in wheres:
        plan = table.plan(where)
        for item in plan.indexes:
            if item.definition.name in out:
                out[item.definition.name].append(sorted(item.selected) if item.answered else [])
    return out


def _shuffled_rows(rows: int, seed: int) -> pa.Table:
    """``rows`` rows with a shuffled ``int64`` key ``id`` (0 .. rows-1) and two payload columns."""
    rng = np.random.default_rng(seed)
    ids = rng.permutation(rows).astype(np.int64)
    return pa.table(
        {
            "id": pa.array(ids),
            "amount": pa.array(rng.random(rows)),
            "note": pa.array([f"n{i % 1000}" for i in range(rows)]),
        }
    )


def _shuffled_upsert(rows: int, updates: int, inserts: int, seed: int) -> pa.Table:
    """``updates`` random existing ids with new payloads and ``inserts`` new ids."""
    rng = np.random.default_rng(seed + 1)
    old = rng.choice(rows, size=updates, replace=False).astype(np.int64)
    new = np.arange(rows, rows + inserts, dtype=np.int64)
    ids = np.concatenate([old, new])
    return pa.table(
        {
            "id": pa.array(ids),
            "amount": pa.array(rng.random(len(ids))),
            "note": pa.array([f"u{i % 1000}" for i in range(len(ids))]),
        }
    )


def _measure(
    path: Path, column: str, types: tuple[str, ...], upsert: pa.Table, workdir: Path, seed: int
) -> dict[str, Any]:
    """Builds, the upsert and both refreshes of every type on the table at ``path``."""
    out: dict[str, Any] = {"types": {}}
    for typ in types:
        builds = []
        for name in (f"x_{typ}", f"y_{typ}"):
            seconds, _ = _cli(
                "index", "build", str(path), "--column", column, "--type", typ, "--name", name
            )
            builds.append(seconds)
            _say(f"index build {name}: {seconds:.1f} s")
        out["types"][typ] = {"build_seconds": [round(b, 2) for b in builds]}
    src = workdir / f"{path.name}_upsert.parquet"
    pq.write_table(upsert, src)
    seconds, _ = _cli("write", str(path), "--from", str(src), "--mode", "upsert")
    out["upsert_rows"], out["upsert_seconds"] = upsert.num_rows, round(seconds, 2)
    _say(f"upsert of {upsert.num_rows} rows: {seconds:.1f} s")
    rng = np.random.default_rng(seed + 2)
    keys = pc.unique(upsert.column(column)).to_numpy()
    points = [int(k) for k in rng.choice(keys, size=min(10, len(keys)), replace=False)]
    wheres = [f"{column} = {k}" for k in points] + [
        f"{column} BETWEEN {k} AND {k + 200}" for k in points[:3]
    ]
    for typ in types:
        entry = out["types"][typ]
        for name, extra, key in (
            (f"x_{typ}", [], "driver"),
            (f"y_{typ}", ["--max-mb", "0"], "spark"),
        ):
            seconds, text = _cli("index", "refresh", str(path), "--name", name, "--json", *extra)
            result = json.loads(text)[0]
            entry[f"refresh_{key}_seconds"] = round(seconds, 2)
            entry[f"refresh_{key}_engine"] = result["engine"]
            entry[f"refresh_{key}_action"] = result["action"]
            entry[f"refresh_{key}_locations_read"] = result["locations_read"]
            entry[f"refresh_{key}_locations_renamed"] = result.get("locations_renamed", 0)
            entry[f"refresh_{key}_delta_rows"] = result["delta_rows"]
            entry[f"refresh_{key}_share_of_build"] = round(
                seconds / statistics.median(entry["build_seconds"]), 4
            )
            _say(
                f"index refresh {name}{' --max-mb 0' if extra else ''}: {seconds:.1f} s "
                f"({result['engine']}, {result['action']}, {result['locations_read']} locations)"
            )
        chosen = _selections(path, [f"x_{typ}", f"y_{typ}"], wheres)
        entry["same_selections"] = chosen[f"x_{typ}"] == chosen[f"y_{typ}"]
    from lakesieve.table import open as open_table

    out["locations_after_upsert"] = open_table(str(path)).plan(None).locations_total
    return out


def run(
    source: Path,
    workdir: Path,
    tables: tuple[str, ...],
    types: tuple[str, ...],
    fraction: float,
    seed: int,
    rows: int = 1_000_000,
) -> dict[str, Any]:
    """The figures (see the module docstring), per table of ``tables``.

    ``hudi-sf1``: a copy of ``source`` with an upsert of ``fraction`` of the
    orders, indexed on ``l_orderkey``. ``delta`` and ``iceberg``: ``rows``
    rows with a shuffled ``id`` written by ``lakesieve write`` in 64 buckets
    on ``id``, then 10,000 updated and 5,000 new rows per million (issue
    40's table), indexed on ``id``.
    """
    out: dict[str, Any] = {"fraction": fraction, "tables": {}}
    for name in tables:
        path = workdir / f"cli_upkeep_{name.replace('-', '_')}"
        if path.exists():
            shutil.rmtree(path)
        if name in ("hudi-sf1", "hudi-sf1-inserts"):
            started = time.perf_counter()
            shutil.copytree(source, path, ignore=shutil.ignore_patterns(".lakesieve"))
            _say(f"copied {source} in {time.perf_counter() - started:.1f} s")
            upsert, column = _upsert_rows(path, fraction, seed), COLUMN
            if name == "hudi-sf1-inserts":
                files = sorted(str(p) for p in path.glob("*.parquet"))
                top = pc.max(pq.read_table(files, columns=[COLUMN]).column(COLUMN)).as_py()
                upsert = _with_inserts(upsert, int(top))
        elif name in ("delta", "iceberg"):
            src = workdir / f"cli_upkeep_{name}_rows.parquet"
            pq.write_table(_shuffled_rows(rows, seed), src)
            seconds, _ = _cli(
                "write", str(path), "--from", str(src), "--format", name, "--mode", "bulk_insert",
                "--record-key", "id", "--file-groups", "64", "--bucket-column", "id",
            )  # fmt: skip
            _say(f"wrote {name} table of {rows} rows in 64 buckets: {seconds:.1f} s")
            scale = rows // 1_000_000 or 1
            upsert, column = _shuffled_upsert(rows, 10_000 * scale, 5_000 * scale, seed), "id"
        else:
            raise ValueError(
                f"unknown table {name!r}: hudi-sf1, hudi-sf1-inserts, delta or iceberg"
            )
        figures = _measure(path, column, types, upsert, workdir, seed)
        figures["table"] = str(source) if name.startswith("hudi") else f"{rows} rows, 64 buckets"
        out["tables"][name] = figures
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line of the benchmark."""
    parser = argparse.ArgumentParser(prog="python -m lakesieve_bench.cli_upkeep")
    parser.add_argument(
        "--source",
        default="bench-data/paths-sf1/hudi",
        help="Hudi table to copy (default %(default)s)",
    )
    parser.add_argument(
        "--workdir", default="bench-data", help="folder of the copy (default %(default)s)"
    )
    parser.add_argument(
        "--types", default=",".join(TYPES), help="index types (default %(default)s)"
    )
    parser.add_argument(
        "--tables", default="hudi-sf1,delta,iceberg", help="tables (default %(default)s)"
    )
    parser.add_argument(
        "--fraction",
        type=float,
        default=0.01,
        help="share of the orders upserted (default %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=7, help="random seed (default %(default)s)")
    parser.add_argument("--json", help="write the figures here too (default: stdout only)")
    args = parser.parse_args(argv)
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    figures = run(
        Path(args.source),
        workdir,
        tuple(args.tables.split(",")),
        tuple(args.types.split(",")),
        args.fraction,
        args.seed,
    )
    text = json.dumps(figures, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
