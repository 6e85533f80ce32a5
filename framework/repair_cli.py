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
    from lakesieve.repair import check_store, repair

    if args.index_cmd == "check":
        report = check_store(table)
        if args.json:
            print_json(report)
        else:
            print(
                f"checked {report['commits']} commits and {report['states']} index states under {report['root']}"
            )
            for c in report["bad_commits"]:
                print(f"bad commit  {c['version']}: {c['problem']}")
            for s in report["bad_states"]:
                print(f"bad state   {s['index']}/{s['state_id']} @ {s['instant']}: {s['problem']}")
            for link in report["symlinks"]:
                print(f"symlink     {link} (lakesieve never follows it)")
            for folder in report["unreferenced_folders"]:
                print(f"unreferenced {folder} (`lakesieve index vacuum` removes it)")
            print(
                "ok"
                if report["ok"]
                else f"problems found; `lakesieve index repair {table.path}` fixes them"
            )
        return 0 if report["ok"] else 1
    result = repair(table, rebuild=args.rebuild)  # Spark starts only for a rebuild
    if args.json:
        print_json(result.to_dict())
        return 0
    if not result.changed:
        print(f"nothing to repair on {table.path}")
        return 0
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
