"""Refresh after a ``MERGE`` that rewrote every file: the default policy against the fold of before.

Takes a Delta table written by ``bench/peers/run`` (its last version is the
1% upsert, a ``MERGE`` by Delta's Spark that rewrote every file), copies it
twice without that version, builds lakesieve's indexes of the side by side
(Sieve on ``l_key``, Bloom on ``r``) at the version before the merge, puts the
merge back, and refreshes one copy with the default policy and the other with
``rebuild_share=inf`` (every delta folded, as before the rule existed)::

    .venv/bin/python bench/peers/refresh_after_merge.py prep  TABLE WORKDIR
    .venv/bin/python bench/peers/refresh_after_merge.py new   TABLE WORKDIR
    .venv/bin/python bench/peers/refresh_after_merge.py fold  TABLE WORKDIR

Each step prints one JSON line (build seconds, or the refresh results and
seconds); run the steps as separate processes, one after the other.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import time
from pathlib import Path

import lakesieve
from lakesieve.maintenance.refresh import RefreshPolicy
from lakesieve.spark.session import get_spark

INDEXES = (("l_key", "sieve"), ("r", "bloom"))
QUERIES = ("l_key = 39746850", "r = 347926181992")


def _last_version(table: Path) -> list[Path]:
    """The log files of the table's newest version (the merge)."""
    logs = sorted((table / "_delta_log").glob("*.json"))
    stem = logs[-1].stem
    return sorted((table / "_delta_log").glob(f"{stem}.*"))


def prep(source: Path, work: Path, spark: object) -> dict[str, float]:
    """Two copies of ``source`` with indexes built at the version before its last."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    first = work / "new"
    shutil.copytree(source, first, ignore=shutil.ignore_patterns(".lakesieve"))
    aside = work / "merge-log"
    aside.mkdir()
    moved = _last_version(first)
    for f in moved:
        shutil.move(str(f), aside / f.name)
    table = lakesieve.open(str(first))
    seconds = {}
    for column, kind in INDEXES:
        started = time.perf_counter()
        table.build_index(column, type=kind, spark=spark)
        seconds[f"build_{kind}"] = time.perf_counter() - started
    for f in moved:
        shutil.move(str(aside / f.name), first / "_delta_log" / f.name)
    shutil.copytree(first, work / "fold")
    return seconds


def refresh(work: Path, mode: str, spark: object) -> dict[str, object]:
    """Refresh the copy of ``mode``; the results, the seconds and what two queries select."""
    policy = RefreshPolicy(rebuild_share=math.inf) if mode == "fold" else RefreshPolicy()
    table = lakesieve.open(str(work / mode))
    started = time.perf_counter()
    results = table.refresh(spark=spark, policy=policy)
    seconds = time.perf_counter() - started
    selected = {}
    for where in QUERIES:
        plan = table.plan(where)
        selected[where] = [
            (i.definition.name, len(i.selected) if i.answered else None) for i in plan.indexes
        ]
    return {
        "mode": mode,
        "seconds": seconds,
        "results": [r.to_dict() for r in results],
        "selected": selected,
    }


def main() -> None:
    """``prep``, ``new`` or ``fold`` (see the module docstring)."""
    step, source, work = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    spark = get_spark(conf={"spark.driver.memory": "6g"})
    out = prep(source, work, spark) if step == "prep" else refresh(work, step, spark)
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
