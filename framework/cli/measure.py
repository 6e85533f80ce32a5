"""``lakesieve bench``, ``demo``, ``compare`` and ``advise``: measured figures and advice."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from lakesieve.cli.support import open_args, print_json

#: what ``lakesieve bench`` prints when the benchmarks' distribution is not installed
BENCH_MESSAGE = (
    "lakesieve bench needs the benchmarks (lakesieve-bench): "
    "pip install -e ./bench, from the repository's root"
)


def _bench_installed() -> bool:
    """Whether the ``lakesieve_bench`` package (``bench/`` of the repository) can be imported."""
    import importlib.util

    try:
        return importlib.util.find_spec("lakesieve_bench") is not None
    except (ImportError, ValueError):
        return False


def cmd_bench(args: argparse.Namespace) -> int:
    """``lakesieve bench``: measured figures as JSON (see BENCHMARKS.md).

    The suites live in their own distribution, ``lakesieve-bench``; without it
    (or without the ``bench`` extra) the command says in one line what to install.
    """
    from lakesieve.demo import MissingExtraError, require_extra

    require_extra("lakesieve bench")
    if not _bench_installed():
        raise MissingExtraError(BENCH_MESSAGE)
    from lakesieve.cli.checks import validate_args
    from lakesieve_bench.runner import add_arguments, run, run_delegated

    status = run_delegated(list(args.bench_args))
    if status is not None:
        return status
    bench_parser = argparse.ArgumentParser(prog="lakesieve bench")
    add_arguments(bench_parser)
    bench_args = bench_parser.parse_args(args.bench_args)
    validate_args(bench_args)
    return run(bench_args)


def _compare_figures(args: argparse.Namespace) -> dict[str, Any]:
    from lakesieve.measure.compare import compare_indexes, parse_types

    table = open_args(args)
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
    """``lakesieve compare``: every index type on one column, measured on one seeded query set.

    With ``--html`` the self-contained report opens with advise's answer for
    ``--workload``; with ``--advise`` that answer is printed too (as the
    ``advice`` key with ``--json``).
    """
    from lakesieve.measure.advise import advise, parse_workload
    from lakesieve.measure.compare import format_table

    workload = parse_workload(getattr(args, "workload", None))  # checked before Spark starts
    if args.html:
        from lakesieve.demo import require_extra

        require_extra("lakesieve compare --html", modules=("matplotlib",), program=False)
    result = _compare_figures(args)
    if args.html:
        from lakesieve.measure.compare_report import write_html

        stated = workload if getattr(args, "workload", None) else None  # None: say "default"
        written = write_html(result, args.html, stated)
        print(f"report written to {written}", file=sys.stderr)
    advice = advise(result, workload) if getattr(args, "advise", False) else None
    if args.json:
        print_json({**result, "advice": advice} if advice is not None else result)
    else:
        print(format_table(result))
        if advice is not None:
            print(f"recommendation: {advice['reason']}")
    return 0


def _advise_figures(args: argparse.Namespace) -> dict[str, Any]:
    """The compare figures ``advise`` works on: read back with ``--from-json``, else measured."""
    from lakesieve.errors import LakesieveError
    from lakesieve.measure.advise import load_compare_json
    from lakesieve.measure.compare import parse_types

    if not args.from_json:
        if not args.table or not args.column:
            raise LakesieveError("advise needs TABLE and --column, or --from-json FILE")
        return _compare_figures(args)
    result = load_compare_json(args.from_json)
    if args.column and args.column != result["column"]:
        raise LakesieveError(
            f"--column {args.column!r} differs from the column {result['column']!r} of {args.from_json}"
        )
    wanted = parse_types(args.types)
    if wanted is not None:
        missing = [t for t in wanted if t not in result["types"]]
        if missing:
            raise LakesieveError(
                f"index type {missing[0]!r} is not in {args.from_json}; "
                f"it has {', '.join(result['types']) or 'none'}"
            )
        result = {**result, "types": {t: result["types"][t] for t in wanted}}
    return result


def cmd_advise(args: argparse.Namespace) -> int:
    """``lakesieve advise``: the index with the best pruning per byte for a workload mix.

    With ``--from-json`` the figures of an earlier ``lakesieve compare --json``
    are reused: nothing is built and Spark does not start.
    """
    import os

    from lakesieve.measure.advise import advise, parse_workload, toml_fragment

    workload = parse_workload(args.workload)
    result = _advise_figures(args)
    advice = advise(result, workload)
    if args.toml:
        where = args.table or str(result["table"])
        name = args.table_name or os.path.basename(os.path.normpath(where)) or "table"
        print(toml_fragment(name, advice), end="")
    else:
        print(advice["reason"])
    return 0
