"""``lakesieve bench``, ``demo``, ``compare`` and ``advise``: measured figures and advice."""

from __future__ import annotations

import argparse
from typing import Any

import lakesieve.cli.output as output
from lakesieve.cli.support import FORMAT_HELP, TABLE_HELP, TEXT, open_args

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
        progress=output.step,
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
        output.step(f"report written to {written}")
    advice = advise(result, workload) if getattr(args, "advise", False) else None
    if args.json:
        output.result_json({**result, "advice": advice} if advice is not None else result)
    else:
        output.result(format_table(result))
        if advice is not None:
            output.result(f"recommendation: {advice['reason']}")
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
        output.result(toml_fragment(name, advice), end="")
    else:
        output.result(advice["reason"])
    return 0


# ---------------------------------------------------------------- flags


def _cmd_demo(args: argparse.Namespace) -> int:
    """``lakesieve demo`` (the ``bench`` extra; imported only when run)."""
    from lakesieve.demo.run import demo_command

    return demo_command(args)


def add_demo(sub: Any) -> None:
    """``lakesieve demo``'s flags."""
    dm = sub.add_parser("demo", help="build a TPC-H Hudi table, index it and run queries")
    dm.add_argument("--scale", type=float, default=0.1, help="TPC-H scale factor (default 0.1)")
    dm.add_argument(
        "--workdir", help="where to put the data, kept afterwards (default: a temporary folder)"
    )
    dm.add_argument(
        "--keep", action="store_true", help="keep the temporary folder (it is removed by default)"
    )
    dm.set_defaults(func=_cmd_demo)


def add_bench(sub: Any) -> None:
    """``lakesieve bench``: its flags live with the suites and are parsed by :func:`cmd_bench`."""

    # the options of ``bench`` live with the suites (lakesieve_bench.runner, the
    # lakesieve-bench distribution): its arguments are passed on and parsed by cmd_bench
    bn = sub.add_parser(
        "bench", help="run a benchmark suite and print its figures as JSON", add_help=False
    )
    bn.set_defaults(func=cmd_bench)


def add_compare_and_advise(sub: Any) -> None:
    """``lakesieve compare`` and ``advise`` share their workload's flags."""
    cp = sub.add_parser("compare", help="build every index type on a column and compare them")
    ad = sub.add_parser("advise", help="recommend an index type for a workload mix")
    cp.add_argument("table", help=TABLE_HELP)
    cp.add_argument("--column", required=True, help="column to index and query (required)")
    ad.add_argument("table", nargs="?", help="the table (not needed with --from-json)")
    ad.add_argument(
        "--column",
        help="the column (required unless --from-json is given; with it: the one it was "
        "measured on)",
    )
    for sp in (cp, ad):
        sp.add_argument("--types", help="index types, comma-separated (default: all installed)")
        sp.add_argument(
            "--queries", type=int, default=200, help="queries per kind (default %(default)s)"
        )
        sp.add_argument(
            "--seed",
            type=int,
            default=42,
            help="seed of the random query set, the same seed drawing the same queries "
            "(default %(default)s)",
        )
        sp.add_argument(
            "--no-e2e",
            action="store_true",
            help="skip the timed end-to-end reads (default: time them)",
        )
        sp.add_argument("--format", help=FORMAT_HELP)
    cp.add_argument("--json", action="store_true", help="print the figures as JSON" + TEXT)
    cp.add_argument(
        "--html", metavar="PATH", help="write a self-contained HTML report here (default: none)"
    )
    cp.add_argument(
        "--keep",
        action="store_true",
        help="keep the cmp_<column>_<type> indexes (default: drop them afterwards)",
    )
    cp.add_argument(
        "--advise",
        action="store_true",
        help="also print the recommendation (default: the figures only)",
    )
    cp.set_defaults(func=cmd_compare)
    for sp in (cp, ad):
        sp.add_argument(
            "--workload", help="KIND=WEIGHT,... (default point=0.6,range_0.1pct=0.3,in=0.1)"
        )
    ad.add_argument(
        "--toml",
        action="store_true",
        help="print a lakesieve.toml fragment (default: the recommendation as text)",
    )
    ad.add_argument("--table-name", help="label under [tables] for --toml (default: folder name)")
    ad.add_argument(
        "--from-json",
        metavar="FILE",
        help="reuse the figures of compare --json instead of measuring (default: measure)",
    )
    ad.set_defaults(func=cmd_advise)
