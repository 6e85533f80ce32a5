"""The ``lakesieve index check`` and ``lakesieve index repair`` commands."""

from __future__ import annotations

import argparse
from typing import Any

import lakesieve.cli.output as output


def run_check_or_repair(table: Any, args: argparse.Namespace) -> int:
    """Run ``check`` (exit 1 when a problem is found) or ``repair`` (exit 0) on ``table``."""
    from lakesieve.maintenance.repair import check_store, repair

    if args.index_cmd == "check":
        report = check_store(table, getattr(args, "index", None))
        if args.json:
            output.result_json(report)
        else:
            _print_check(report, table.path)
        return 0 if report["ok"] else 1
    result = repair(table, rebuild=args.rebuild)  # Spark starts only for a rebuild
    if args.json:
        output.result_json(result.to_dict())
        return 0
    if not result.changed:
        output.result(f"nothing to repair on {table.path}")
        return 0
    if result.log_put_back_from:
        output.result(
            f"put the index log back from {result.log_put_back_from} (an interrupted repair)"
        )
    if result.damaged_log_moved_to:
        output.result(f"moved the damaged index log to {result.damaged_log_moved_to}")
    for line in result.commits_skipped:
        output.result(f"skipped     {line}")
    for line in result.states_dropped:
        output.result(f"dropped     state {line}")
    for name in result.indexes_dropped:
        output.result(
            f"dropped     index {name} (no state left; `lakesieve index build` makes it again)"
        )
    for name in result.indexes_rebuilt:
        output.result(f"rebuilt     index {name}")
    output.step(f"repaired {table.path}: {result.states_kept} index states kept")
    return 0


def _print_check(report: dict[str, Any], path: str) -> None:
    """The text form of ``lakesieve index check``: one line per index, then the store's own problems."""
    output.result(
        f"checked {report['commits']} commits, {report['states']} index states and "
        f"{report['files']} files ({report['bytes']} bytes) under {report['root']}"
    )
    for row in report["indexes"]:
        what = f"{row['states']} states, {row['files']} files, {row['bytes']} bytes"
        if row["ok"]:
            output.result(f"{row['name']:<28} ok       {what}")
            continue
        bad = row["bad_states"]
        first = bad[0]["problem"] if bad else row.get("problem", "")
        more = f" (+{len(bad) - 1} more broken states)" if len(bad) > 1 else ""
        output.result(f"{row['name']:<28} BROKEN   {what}: {first}{more}")
    for c in report["bad_commits"]:
        output.result(f"bad commit  {c['version']}: {c['problem']}")
    for link in report["symlinks"]:
        output.result(f"symlink     {link} (lakesieve never follows it)")
    for folder in report["unreferenced_folders"]:
        output.result(f"unreferenced {folder} (`lakesieve index vacuum` removes it)")
    output.result(
        "ok"
        if report["ok"]
        else f"problems found; `lakesieve index build` rebuilds a broken index, "
        f"`lakesieve index repair {path}` fixes the log"
    )
