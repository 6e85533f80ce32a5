"""``lakesieve bench``, ``demo``, ``compare`` and ``advise``: measured figures and advice."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from lakesieve.cli_support import print_json


def cmd_bench(args: argparse.Namespace) -> int:
    """``lakesieve bench``: measured figures as JSON (see BENCHMARKS.md)."""
    from lakesieve.bench import require_extra

    require_extra("lakesieve bench")
    from lakesieve.bench.runner import add_arguments, run
    from lakesieve.cli_checks import validate_args

    bench_parser = argparse.ArgumentParser(prog="lakesieve bench")
    add_arguments(bench_parser)
    bench_args = bench_parser.parse_args(args.bench_args)
    validate_args(bench_args)
    return run(bench_args)


def cmd_demo(args: argparse.Namespace) -> int:
    """``lakesieve demo``: the main job on an embedded default."""
    from lakesieve.bench import require_extra

    require_extra("lakesieve demo")
    from lakesieve.bench.demo import run_demo

    return run_demo(scale=args.scale, workdir=args.workdir)


def _compare_figures(args: argparse.Namespace) -> dict[str, Any]:
    from lakesieve.compare import compare_indexes, parse_types
    from lakesieve.table import open as open_table

    table = open_table(args.table, format=args.format)
    return compare_indexes(
        table,
        args.column,
        types=parse_types(args.types),
        queries=args.queries,
        seed=args.seed,
        keep=getattr(args, "keep", False),
        e2e=not getattr(args, "no_e2e", False),
        progress=lambda msg: print(msg, file=sys.stderr, flush=True),
    )


def cmd_compare(args: argparse.Namespace) -> int:
    """``lakesieve compare``: every index type on one column, measured on one seeded query set."""
    from lakesieve.compare import format_table

    if args.html:
        from lakesieve.bench import require_extra

        require_extra("lakesieve compare --html", modules=("matplotlib",), program=False)
    result = _compare_figures(args)
    if args.html:
        from lakesieve.bench.compare_report import write_html

        written = write_html(result, args.html)
        print(f"report written to {written[0]} ({len(written) - 1} charts)", file=sys.stderr)
    if args.json:
        print_json(result)
    else:
        print(format_table(result))
    return 0


def cmd_advise(args: argparse.Namespace) -> int:
    """``lakesieve advise``: the index with the best pruning per byte for a workload mix."""
    import os

    from lakesieve.advise import advise, parse_workload, toml_fragment

    workload = parse_workload(args.workload)
    if args.from_json:
        with open(args.from_json, encoding="utf-8") as fh:
            result = json.load(fh)
    else:
        result = _compare_figures(args)
    advice = advise(result, workload)
    if args.toml:
        name = args.table_name or os.path.basename(os.path.normpath(args.table)) or "table"
        print(toml_fragment(name, advice), end="")
    else:
        print(advice["reason"])
    return 0
