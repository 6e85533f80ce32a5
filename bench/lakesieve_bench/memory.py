"""Peak driver memory of an index build and of lookups, measured.

- A **build** is measured in the running driver: the peak of Python
  allocations during the build (``tracemalloc``) and the growth of the
  process's peak resident set over its resident set before the build (Linux
  ``VmHWM``, reset through ``/proc/self/clear_refs`` first). The JVM half of
  the driver is a separate process bounded by ``spark.driver.memory``; its
  peak resident set since start (driver and local executors together) is
  reported when its process id is known.
- **Lookups** are measured in a fresh Python process (``python -m
  lakesieve_bench.memory``) without Spark. The table is opened and one
  query on an unindexed column planned first (format libraries, schema,
  index log). The first indexed plan ("cold") also imports the index type's
  libraries; then a fresh table object loads the index again and plans every
  query ("warm"): its peak resident set minus its resident set before, and
  the ``tracemalloc`` peak, are the index's own cost.

``ru_maxrss`` is not used: Linux carries it across ``fork``/``exec``, so a
child started by a large parent reports the parent's peak.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def _status_bytes(field: str, pid: str = "self") -> int | None:
    """A ``kB`` field of ``/proc/<pid>/status`` in bytes (``None`` where there is no such file)."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _rss_bytes() -> int:
    got = _status_bytes("VmRSS")
    return (
        got if got is not None else int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    )


def _reset_peak() -> None:
    """Reset the process's peak resident set to its current one (Linux; ignored elsewhere)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def _peak_bytes() -> int:
    got = _status_bytes("VmHWM")
    return (
        got if got is not None else int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
    )


def jvm_peak_bytes(spark: Any) -> int | None:
    """Peak resident set of the local JVM behind ``spark`` since it started (``None`` when unknown)."""
    try:
        pid = str(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    except Exception:
        return None
    return _status_bytes("VmHWM", pid)


def measure(fn: Callable[[], T]) -> tuple[T, dict[str, int]]:
    """Run ``fn`` and return its result with ``python_heap_peak_bytes`` and ``rss_peak_growth_bytes``."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    _reset_peak()
    before_rss = _rss_bytes()
    base, _ = tracemalloc.get_traced_memory()
    try:
        result = fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not was_tracing:
            tracemalloc.stop()
    return result, {
        "python_heap_peak_bytes": max(0, peak - base),
        "rss_before_bytes": before_rss,
        "rss_peak_growth_bytes": max(0, _peak_bytes() - before_rss),
    }


def lookup_memory(table_path: str, wheres: list[str], timeout: float = 300.0) -> dict[str, Any]:
    """Peak memory of loading a table's indexes and planning ``wheres``, in a fresh process.

    Returns the child's JSON figures, or ``{"error": ...}`` when it failed.
    """
    cmd = [sys.executable, "-m", "lakesieve_bench.memory", "--table", table_path]
    for w in wheres:
        cmd += ["--where", w]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"lookup memory probe ran past {timeout:.0f} s"}
    if done.returncode != 0:
        tail = (done.stderr or "").strip().splitlines()[-1:] or ["no output"]
        return {"error": f"lookup memory probe failed: {tail[0]}"}
    try:
        out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return out
    except (ValueError, IndexError):
        return {"error": "lookup memory probe printed no JSON"}


def _probe(table_path: str, wheres: list[str]) -> dict[str, Any]:
    from lakesieve.table import open as open_table

    after_imports = _rss_bytes()

    def opened() -> Any:
        # everything a plan does but loading an index: format libraries, schema, index log
        table = open_table(table_path)
        indexed = {d.column for d in table.indexes()}
        other = next(
            (n for n in table.schema().names if n not in indexed and n.isidentifier()), None
        )
        table.plan(f"{other} IS NULL" if other else None)
        return table

    # cold: the first indexed plan also imports the index type's libraries
    table = opened()
    _reset_peak()
    cold_before = _rss_bytes()
    tracemalloc.start()
    if wheres:
        table.plan(wheres[0])
    _, cold_heap = tracemalloc.get_traced_memory()
    cold_growth = max(0, _peak_bytes() - cold_before)
    # warm: a fresh table object loads the index again and answers every query
    table = opened()
    _reset_peak()
    before = _rss_bytes()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    started = time.perf_counter()
    selected = [table.plan(w).locations_selected for w in wheres]
    seconds = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "queries": len(wheres),
        "rss_after_imports_bytes": after_imports,
        "rss_after_table_open_bytes": before,
        "rss_peak_growth_bytes": max(0, _peak_bytes() - before),
        "python_heap_peak_bytes": max(0, int(peak - base)),
        "cold_first_lookup_rss_growth_bytes": cold_growth,
        "cold_first_lookup_python_heap_bytes": int(cold_heap),
        "seconds": round(seconds, 3),
        "locations_selected": selected,
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m lakesieve_bench.memory --table PATH --where W [--where W ...]``: print one JSON line."""
    p = argparse.ArgumentParser(prog="python -m lakesieve_bench.memory")
    p.add_argument("--table", required=True)
    p.add_argument("--where", action="append", default=[])
    args = p.parse_args(argv)
    # import what a lookup needs before the baseline, so the growth is the index's
    import lakesieve.query.planner
    import lakesieve.table  # noqa: F401
    from lakesieve.contract import registry

    registry.index_type_names()
    print(json.dumps(_probe(args.table, args.where)))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
