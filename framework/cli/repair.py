"""The ``lakesieve index check`` and ``lakesieve index repair`` commands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any


def run_check_or_repair(
    table: Any, args: argparse.Namespace, print_json: Callable[[Any], None]
) -> int:
    """Run ``check`` (exit 1 when a problem is found) or ``repair`` (exit 0) on ``table``."""
    from lakesieve.maintenance.repair import check_store, repair

    if args.index_cmd == "check":
        report = check_store(table, getattr(args, "index", None))
        if args.json:
            print_json(report)
        else:
            _print_check(report, table.path)
        return 0 if report["ok"] else 1
    result = repair(table, rebuild=args.rebuild)  # Spark starts only for a rebuild
    if args.json:
        print_json(result.to_dict())
        return 0
    if not result.changed:
        print(f"nothing to repair on {table.path}")
        return 0
    if result.log_put_back_from:
        print(f"put the index log back from {result.log_put_back_from} (an interrupted repair)")
    if result.damaged_log_moved_to:
        print(f"moved the damaged index log to {result.damaged_log_moved_to}")
    for line in result.commits_skipped:
        print(f"skipped     {line}")
    for line in result.states_dropped:
        print(f"dropped     state {line}")
    for name in result.indexes_dropped:
        print(f"dropped     index {name} (no state left; `lakesieve index build` makes it again)")
    for name in result.indexes_rebuilt:
        print(f"rebuilt     index {name}")
    print(f"repaired {table.path}: {result.states_kept} index states kept", file=sys.stderr)
    return 0


def _print_check(report: dict[str, Any], path: str) -> None:
    """The text form of ``lakesieve index check``: one line per index, then the store's own problems."""
    print(
        f"checked {report['commits']} commits, {report['states']} index states and "
        f"{report['files']} files ({report['bytes']} bytes) under {report['root']}"
    )
    for row in report["indexes"]:
        what = f"{row['states']} states, {row['files']} files, {row['bytes']} bytes"
        if row["ok"]:
            print(f"{row['name']:<28} ok       {what}")
            continue
        bad = row["bad_states"]
        first = bad[0]["problem"] if bad else row.get("problem", "")
        more = f" (+{len(bad) - 1} more broken states)" if len(bad) > 1 else ""
        print(f"{row['name']:<28} BROKEN   {what}: {first}{more}")
    for c in report["bad_commits"]:
        print(f"bad commit  {c['version']}: {c['problem']}")
    for link in report["symlinks"]:
        print(f"symlink     {link} (lakesieve never follows it)")
    for folder in report["unreferenced_folders"]:
        print(f"unreferenced {folder} (`lakesieve index vacuum` removes it)")
    print(
        "ok"
        if report["ok"]
        else f"problems found; `lakesieve index build` rebuilds a broken index, "
        f"`lakesieve index repair {path}` fixes the log"
    )
