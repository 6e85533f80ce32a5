"""``lakesieve bench``: its options, and running the suite they name.

The suites: ``full`` (:mod:`lakesieve_bench.full`, the default), ``skeleton``
(:mod:`lakesieve_bench.skeleton`), ``formats`` (:mod:`lakesieve_bench.formats`)
and ``timeline`` (:mod:`lakesieve_bench.timeline`). Figures are printed as JSON,
reported as ratios and counts.

Three focused benches keep their own options and are reached through the same
command, so that every figure of BENCHMARKS.md has one ``lakesieve bench``
line: ``--suite build-cost`` (:mod:`lakesieve_bench.build_cost`, index builds
against a Spark sort), ``--suite spark-paths`` (:mod:`lakesieve_bench.spark_paths`,
``Table.read`` and the data source against a plain Spark read) and
``--suite sieve-layout`` (:mod:`lakesieve_bench.sieve_layout`, the
Sieve's stored size and warm lookups) and ``--suite upkeep``
(:mod:`lakesieve_bench.index_upkeep`, index bytes after refresh and after
compaction against a fresh build). Every argument after ``--suite NAME``
goes to that bench (``lakesieve bench --suite build-cost --help`` lists them).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from lakesieve_bench.formats import run_formats
from lakesieve_bench.skeleton import run_skeleton


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


SUITES = ("full", "skeleton", "formats", "timeline")

#: Suites with options of their own: name -> module whose ``main(argv)`` runs it.
DELEGATED = {
    "build-cost": "lakesieve_bench.build_cost",
    "spark-paths": "lakesieve_bench.spark_paths",
    "sieve-layout": "lakesieve_bench.sieve_layout",
    "upkeep": "lakesieve_bench.index_upkeep",
}


def delegated(argv: list[str]) -> tuple[str, list[str]] | None:
    """``(module, its arguments)`` when ``argv`` names a delegated suite, else ``None``.

    The suite is named as ``--suite NAME`` or ``--suite=NAME``; every other
    argument goes to the suite's own parser.
    """
    for i, arg in enumerate(argv):
        if arg == "--suite" and i + 1 < len(argv):
            name, rest = argv[i + 1], argv[:i] + argv[i + 2 :]
        elif arg.startswith("--suite="):
            name, rest = arg.split("=", 1)[1], argv[:i] + argv[i + 1 :]
        else:
            continue
        return (DELEGATED[name], rest) if name in DELEGATED else None
    return None


def run_delegated(argv: list[str]) -> int | None:
    """Run the delegated suite ``argv`` names (its exit status), or ``None`` when it names none."""
    import importlib

    found = delegated(argv)
    if found is None:
        return None
    module, rest = found
    status = importlib.import_module(module).main(rest)
    return int(status or 0)


def add_arguments(p: Any) -> None:
    """The options of ``lakesieve bench`` (shared by the CLI and ``python -m lakesieve_bench.runner``)."""
    p.add_argument(
        "--suite",
        default="full",
        choices=SUITES + tuple(DELEGATED),
        help="full (default): every format x layout x index type; skeleton / formats: earlier "
        "suites; timeline: refresh after upserts; build-cost / spark-paths / sieve-layout / upkeep: "
        "focused benches with options of their own (--suite NAME --help)",
    )
    p.add_argument(
        "--scale", type=float, default=None, help="TPC-H scale factor (default 1; --quick: 0.01)"
    )
    p.add_argument("--workdir", default="bench-data", help="where data and tables go")
    p.add_argument(
        "--queries",
        type=int,
        default=None,
        help="queries per kind (skeleton/formats: 200; full: 100 per kind and column; --quick: 10)",
    )
    p.add_argument("--seed", type=int, default=42)
    p.add_argument(
        "--commits", type=int, default=20, help="timeline suite: upsert commits (default 20)"
    )
    p.add_argument(
        "--table-types",
        default="cow,mor",
        help="timeline suite: comma-separated table kinds, of cow, mor and cow-cdc "
        "(copy-on-write logging change data) (default cow,mor)",
    )
    p.add_argument(
        "--upsert-column",
        default="l_quantity",
        choices=("l_quantity", "l_partkey"),
        help="timeline suite: the column each upsert adds 1 to (default l_quantity)",
    )
    p.add_argument(
        "--refresh-repeats",
        type=int,
        default=0,
        help="timeline suite: also time the first commit's l_partkey refresh and a full "
        "build this many times and report medians (default 0: off)",
    )
    p.add_argument("--json", dest="json_path", help="also write the figures to this file")
    p.add_argument(
        "--quick", action="store_true", help="full suite at SF 0.01 with fewer queries (minutes)"
    )
    p.add_argument(
        "--formats", help="full suite: comma-separated formats (default hudi,delta,iceberg)"
    )
    p.add_argument(
        "--layouts",
        help="full suite: comma-separated layouts (default sorted,interleaved,hashed,shipdate)",
    )
    p.add_argument(
        "--reuse-tables", action="store_true", help="full suite: keep tables an earlier run wrote"
    )
    p.add_argument("--charts", help="full suite: draw PNG charts into this folder")
    p.add_argument(
        "--from-json",
        metavar="FILE",
        help="full suite: do not run; redraw the charts and markdown from the figures in FILE",
    )
    p.add_argument(
        "--write-markdown",
        nargs="?",
        const="BENCHMARKS.md",
        default=None,
        metavar="FILE",
        help="full suite: rewrite the marked full-suite section of FILE (default BENCHMARKS.md) "
        "and draw the charts into docs/benchmarks/full unless --charts says otherwise",
    )


def _full_config(args: Any) -> Any:
    from lakesieve_bench.full import FullConfig, quick_config

    cfg = (
        quick_config(args.workdir, args.seed)
        if args.quick
        else FullConfig(workdir=args.workdir, seed=args.seed)
    )
    if args.scale is not None:
        cfg.scale = args.scale
    if args.queries is not None:
        cfg.queries = args.queries
    if args.formats:
        cfg.formats = tuple(f.strip() for f in args.formats.split(",") if f.strip())
    if args.layouts:
        cfg.layouts = tuple(x.strip() for x in args.layouts.split(",") if x.strip())
    cfg.reuse_tables = bool(args.reuse_tables)
    return cfg


def command_line(args: Any) -> str:
    """The command that reproduces a run with ``args``."""
    parts = [".venv/bin/lakesieve bench", f"--suite {args.suite}"]
    if args.quick:
        parts.append("--quick")
    if args.scale is not None:
        parts.append(f"--scale {args.scale:g}")
    if args.queries is not None:
        parts.append(f"--queries {args.queries}")
    if args.formats:
        parts.append(f"--formats {args.formats}")
    if args.layouts:
        parts.append(f"--layouts {args.layouts}")
    parts.append(f"--workdir {args.workdir}")
    return " ".join(parts)


def run(args: Any) -> int:
    """Run the suite ``args`` names; print its figures as JSON (and write what was asked)."""
    from lakesieve.errors import LakesieveError

    if args.suite != "full" and (
        args.quick or args.charts or args.write_markdown or args.formats or args.layouts
    ):
        raise LakesieveError(
            "--quick, --charts, --write-markdown, --formats and --layouts belong to --suite full"
        )
    scale = 1.0 if args.scale is None else args.scale
    queries = 200 if args.queries is None else args.queries
    if scale <= 0:
        raise LakesieveError(f"--scale must be positive, got {scale:g}")
    if args.suite == "formats":
        figures = run_formats(scale, args.workdir, queries)
    elif args.suite == "skeleton":
        figures = run_skeleton(scale, args.workdir, queries)
    elif args.suite == "timeline":
        from lakesieve_bench.timeline import TABLE_KINDS, run_timeline

        kinds = tuple(k.strip() for k in str(args.table_types).split(",") if k.strip())
        unknown = [k for k in kinds if k not in TABLE_KINDS]
        if unknown or not kinds:
            raise SystemExit(
                f"lakesieve bench: unknown --table-types {', '.join(unknown) or '(none)'} "
                f"(one or more of {', '.join(TABLE_KINDS)})"
            )
        figures = run_timeline(
            scale,
            args.workdir,
            commits=args.commits,
            points=queries,
            seed=args.seed,
            table_types=kinds,
            upsert_column=args.upsert_column,
            refresh_repeats=max(0, args.refresh_repeats),
        )
    else:
        from lakesieve_bench.full_run import run_full
        from lakesieve_bench.full_targets import to_text
        from lakesieve_bench.report import render_markdown, update_section, write_charts

        def partial(figs: dict[str, Any]) -> None:
            if args.json_path:
                Path(args.json_path).write_text(
                    json.dumps({**figs, "partial": True}, indent=2, default=str)
                )

        if args.from_json:
            try:
                figures = json.loads(Path(args.from_json).read_text())
            except (OSError, ValueError) as exc:
                raise LakesieveError(
                    f"--from-json {args.from_json!r} is not a readable figures file: {exc}"
                ) from exc
            if figures.get("suite") != "full":
                raise LakesieveError(f"--from-json {args.from_json!r} holds no full-suite figures")
            from lakesieve_bench.full_targets import targets

            figures["targets"] = targets(figures)  # derived: stated as this version states them
        else:
            figures = run_full(_full_config(args), checkpoint=partial)
            figures["command"] = command_line(args)
        charts = args.charts or ("docs/benchmarks/full" if args.write_markdown else None)
        try:
            if charts:
                figures["charts"] = write_charts(figures, charts)
            if args.write_markdown:
                update_section(
                    args.write_markdown, render_markdown(figures, figures["command"], charts)
                )
        except Exception as exc:  # the figures are still printed and written
            figures["report_error"] = f"{type(exc).__name__}: {exc}"
            _say(f"charts / markdown failed: {figures['report_error']}")
        _say(to_text(figures))
    text = json.dumps(figures, indent=2, default=str)
    print(text)
    if args.json_path and not (args.suite == "full" and args.from_json):
        Path(args.json_path).write_text(text)
    if (
        args.suite == "full"
        and not args.from_json
        and not figures.get("correctness", {}).get("ok", True)
    ):
        _say("the run found wrong rows, false negatives or failed layouts: see 'correctness'")
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m lakesieve_bench.runner [--suite full|skeleton|formats] ...``."""
    import argparse

    args = sys.argv[1:] if argv is None else argv
    status = run_delegated(args)
    if status is not None:
        return status
    p = argparse.ArgumentParser(prog="lakesieve bench")
    add_arguments(p)
    return run(p.parse_args(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
