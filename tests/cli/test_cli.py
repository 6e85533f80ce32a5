"""The ``lakesieve`` command: forms, JSON output, and clean failures on bad input."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakesieve.cli import main

from tests.tables import df_of, expected_rows, make_rows, write_rows

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def cli_table(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "t"
    write_rows(spark, path, make_rows(range(0, 600), 1), mode="bulk_insert", file_groups=4)
    return path


def _log_version(path: Path) -> int:
    return lakesieve.open(path).store.read_log().version


def test_write_build_explain_query(
    spark: Any, cli_table: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "more.parquet"
    df_of(spark, make_rows(range(600, 700), 2)).write.parquet(str(src))
    assert (
        main(
            ["write", str(cli_table), "--from", str(src), "--record-key", "id", "--mode", "insert"]
        )
        == 0
    )
    assert main(["index", "build", str(cli_table), "--column", "k", "--type", "sieve"]) == 0
    capsys.readouterr()
    assert main(["explain", str(cli_table), "--where", "k = 5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("table_instant", "locations_total", "locations_selected", "indexes"):
        assert key in out
    idx = out["indexes"][0]
    assert {"name", "type", "column", "instant", "size_bytes"} <= set(idx)
    assert idx["type"] == "sieve" and idx["column"] == "k" and idx["size_bytes"] > 0
    assert 1 <= out["locations_selected"] < out["locations_total"]
    dest = tmp_path / "rows"
    assert main(["query", str(cli_table), "--where", "k = 5", "--output", str(dest)]) == 0
    got = sorted(r["id"] for r in spark.read.parquet(str(dest)).collect())
    assert got == [15, 16, 17]
    capsys.readouterr()
    assert main(["query", str(cli_table), "--where", "k = 5", "--engine", "arrow"]) == 0
    printed = capsys.readouterr()
    assert sorted(json.loads(line)["id"] for line in printed.out.splitlines()) == [15, 16, 17]
    assert "(arrow)" in printed.err
    arrow_dest = tmp_path / "rows.parquet"
    assert (
        main(
            [
                "query",
                str(cli_table),
                "--where",
                "k = 5",
                "--engine",
                "arrow",
                "--output",
                str(arrow_dest),
            ]
        )
        == 0
    )
    assert sorted(r["id"] for r in spark.read.parquet(str(arrow_dest)).collect()) == [15, 16, 17]
    capsys.readouterr()
    assert main(["index", "list", str(cli_table), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(r["name"], r["type"], r["column"]) for r in listed] == [("k_sieve", "sieve", "k")]


def _printed_ids(out: str) -> list[int]:
    return sorted(json.loads(line)["id"] for line in out.splitlines())


@pytest.mark.parametrize(
    "where", ["k = 5", "k BETWEEN 40 AND 60", "k >= 190", "id < 0", "k IS NULL OR k = 7"]
)
def test_auto_engine_reads_like_spark(
    spark: Any, cli_table: Path, tmp_path: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--engine auto`` (the default) picks Arrow for a small selection, Spark past --max-mb; same rows."""
    if not lakesieve.open(cli_table).indexes():
        assert main(["index", "build", str(cli_table), "--column", "k", "--type", "sieve"]) == 0
    capsys.readouterr()
    assert (
        main(["query", str(cli_table), "--where", where, "--limit", "100000", "--engine", "spark"])
        == 0
    )
    forced = capsys.readouterr()
    assert "(spark)" in forced.err
    assert main(["query", str(cli_table), "--where", where, "--limit", "100000"]) == 0
    auto = capsys.readouterr()
    assert "(auto: arrow)" in auto.err
    assert (
        main(["query", str(cli_table), "--where", where, "--limit", "100000", "--max-mb", "0"]) == 0
    )
    big = capsys.readouterr()
    plan = lakesieve.open(cli_table).plan(where)
    assert ("(auto: spark)" if plan.units else "(auto: arrow)") in big.err
    truth = [row[0] for row in expected_rows(spark, cli_table, where, columns=("id",))]
    assert _printed_ids(auto.out) == _printed_ids(forced.out) == _printed_ids(big.out) == truth
    dest = tmp_path / "out"
    dest.mkdir()
    (dest / "stale.parquet").write_bytes(b"left from an earlier run")
    assert main(["query", str(cli_table), "--where", where, "--output", str(dest)]) == 0
    assert "(auto: arrow)" in capsys.readouterr().err
    assert not (dest / "stale.parquet").exists(), (
        "the output folder is replaced, as Spark's overwrite does"
    )
    got = sorted(r["id"] for r in spark.read.parquet(str(dest)).collect())
    assert got == _printed_ids(forced.out)


def _run_without_spark(argv: list[str], expect: int = 0) -> subprocess.CompletedProcess[str]:
    """Run ``lakesieve <argv>`` in a child process that fails if it started a Spark session.

    The child must exit with ``expect``.
    """
    code = (
        "import sys\n"
        "from lakesieve.cli import main\n"
        f"rc = main({argv!r})\n"
        "from lakesieve.spark import session\n"
        "assert session._session is None, 'a Spark session was started'\n"
        "sys.exit(rc)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == expect, proc.stderr[-2000:]
    return proc


def test_auto_engine_needs_no_spark_for_a_selective_query(cli_table: Path) -> None:
    """A selective query from the command line plans and reads without starting Spark."""
    if not lakesieve.open(cli_table).indexes():
        assert main(["index", "build", str(cli_table), "--column", "k", "--type", "sieve"]) == 0
    proc = _run_without_spark(["query", str(cli_table), "--where", "k = 5"])
    assert _printed_ids(proc.stdout) == [15, 16, 17]
    assert "(auto: arrow)" in proc.stderr


def test_build_over_an_up_to_date_index_says_so_without_spark(
    cli_table: Path, tmp_path: Path
) -> None:
    """``index build`` of an index already at the latest instant leaves it; ``--force`` rebuilds."""
    if not lakesieve.open(cli_table).indexes():
        assert main(["index", "build", str(cli_table), "--column", "k", "--type", "sieve"]) == 0
    before = lakesieve.open(cli_table).index("k_sieve").latest()
    assert before is not None
    proc = _run_without_spark(["index", "build", str(cli_table), "--column", "k"])
    assert "index k_sieve (sieve on k) is up to date at instant" in proc.stdout
    assert "--force rebuilds it" in proc.stdout
    assert lakesieve.open(cli_table).index("k_sieve").latest() == before
    proc = _run_without_spark(["index", "build", str(cli_table), "--column", "k", "--json"])
    doc = json.loads(proc.stdout)
    assert doc["action"] == "up-to-date" and doc["instant"] == before.instant, doc
    assert lakesieve.open(cli_table).index("k_sieve").latest() == before
    # other options are another definition: rebuilt (and --force rebuilds the same one)
    args = ["index", "build", str(cli_table), "--column", "k", "--force", "--json"]
    assert main(args) == 0
    after = lakesieve.open(cli_table).index("k_sieve").latest()
    assert after is not None and after.state_id != before.state_id


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["explain", "{missing}", "--where", "k = 1"], "no table at"),
        (["explain", "{table}", "--where", "nope = 1"], "unknown column 'nope'"),
        (["explain", "{table}", "--where", "k = = 1"], "malformed predicate"),
        (
            ["explain", "{table}", "--where", "k = 1", "--as-of", "19990101000000000"],
            "instant '19990101000000000'",
        ),
        (
            ["index", "build", "{table}", "--column", "k", "--type", "quantum"],
            "unknown index type 'quantum'",
        ),
        (
            ["index", "build", "{table}", "--column", "nope", "--type", "sieve"],
            "unknown column 'nope'",
        ),
        (["index", "build", "{table}", "--column", "k", "--option", "bogus=1"], "bogus"),
        (["index", "describe", "{table}", "no_such_index"], "no index 'no_such_index'"),
        (["index", "drop", "{table}", "no_such_index"], "no index 'no_such_index'"),
        (
            ["explain", "{table}", "--where", "k = 1", "--format", "parquetish"],
            "unknown table format 'parquetish'",
        ),
        (
            ["query", "{table}", "--where", "k >= 0", "--engine", "arrow", "--max-mb", "0"],
            "more than --max-mb 0;",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(
    cli_table: Path,
    tmp_path: Path,
    argv: list[str],
    needle: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = _log_version(cli_table)
    files_before = sorted(p.relative_to(cli_table) for p in cli_table.rglob("*"))
    args = [a.format(table=cli_table, missing=tmp_path / "nothing") for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("lakesieve: error: ") and needle in err[0], err
    assert _log_version(cli_table) == before
    assert sorted(p.relative_to(cli_table) for p in cli_table.rglob("*")) == files_before


def test_bad_input_no_traceback_in_a_real_process(cli_table: Path) -> None:
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-m", "lakesieve.cli", "explain", str(cli_table), "--where", "k >"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("lakesieve: error: malformed predicate")


def test_query_and_explain_open_the_format_once_and_bind_once(
    cli_table: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command-line checks hand their opened table and plan on: one format detection, one bind."""
    from lakesieve import expressions
    from lakesieve import table as table_module
    from lakesieve.contract import registry

    opened: list[str] = []
    bound: list[str] = []
    real_open, real_bind = registry.open_format, table_module.bind

    def counted_open(*args: Any, **kwargs: Any) -> Any:
        opened.append(str(args[0]))
        return real_open(*args, **kwargs)

    def counted_bind(*args: Any, **kwargs: Any) -> Any:
        bound.append(str(args[0]))
        return real_bind(*args, **kwargs)

    monkeypatch.setattr(registry, "open_format", counted_open)
    monkeypatch.setattr(table_module, "bind", counted_bind)
    monkeypatch.setattr(expressions, "bind", counted_bind)
    for command in (
        ["query", str(cli_table), "--where", "k = 5", "--engine", "arrow"],
        ["explain", str(cli_table), "--where", "k = 5", "--json"],
    ):
        opened.clear()
        bound.clear()
        assert main(command) == 0
        assert capsys.readouterr().out
        assert len(opened) == 1, (command[0], opened)
        assert bound == ["k = 5"], (command[0], bound)


def test_explain_does_not_start_spark(cli_table: Path) -> None:
    code = (
        "import sys, json; from lakesieve.cli import main; rc = main(['explain', sys.argv[1], '--where', 'k = 3', '--json']);"
        "import pyspark.sql as s; assert s.SparkSession.getActiveSession() is None; sys.exit(rc)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(cli_table)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["locations_total"] == 4


# ------------------------------------------------ write refusals, before Spark starts


@pytest.fixture(scope="module")
def keyed_tables(
    spark: Any, cli_table: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """A Hudi, a Delta and an Iceberg table, each keeping the record key ``id``, under one root."""
    from deltalake import DeltaTable, write_deltalake
    from deltalake import Schema as DeltaSchema
    from lakesieve.model import WriteOptions
    from lakesieve.table import write

    root = tmp_path_factory.mktemp("keyed")
    data = pa.table({"id": pa.array(range(40), pa.int64()), "k": pa.array(range(40), pa.int64())})
    DeltaTable.create(
        str(root / "delta"),
        DeltaSchema.from_arrow(data.schema),
        configuration={"lakesieve.recordKey": "id"},
        raise_if_key_not_exists=False,
    )
    write_deltalake(str(root / "delta"), data, mode="append")
    options = WriteOptions(mode="insert", record_key=("id",))
    write(root / "iceberg", spark.createDataFrame(data.to_pandas()), "iceberg", options, spark)
    pq.write_table(data, root / "src.parquet")
    return {"hudi": cli_table, "delta": root / "delta", "iceberg": root / "iceberg", "root": root}


def _files(*roots: Path) -> list[str]:
    """Every path below ``roots`` with its size: what a refused write must leave as it was."""
    return sorted(f"{p} {p.stat().st_size}" for r in roots for p in r.rglob("*"))


def _refused(argv: list[str]) -> str:
    """The one error line of a command that must exit 2 without starting Spark."""
    proc = _run_without_spark(argv, expect=2)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("lakesieve: error: "), proc.stderr[-2000:]
    assert proc.stdout == ""
    return lines[0]


def _ntz_source(path: Path, int96: bool = False) -> Path:
    """A Parquet file whose ``ts`` column is a timestamp without a zone (or legacy INT96)."""
    stamps = pa.array([dt.datetime(2024, 1, 1, 12)] * 3, pa.timestamp("us"))
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "ts": stamps})
    pq.write_table(data, path, use_deprecated_int96_timestamps=int96)
    return path


@pytest.mark.parametrize("target", ["existing", "new"])
def test_hudi_write_of_timestamp_ntz_is_refused_before_spark(
    cli_table: Path, tmp_path: Path, target: str
) -> None:
    """A ``timestamp_ntz`` column bound for Hudi is refused from the source's footer, naming it."""
    table = cli_table if target == "existing" else tmp_path / "new_hudi"
    before = _files(cli_table)
    src = _ntz_source(tmp_path / "ntz.parquet")
    argv = ["write", str(table), "--from", str(src), "--mode", "insert", "--record-key", "id"]
    if target == "new":
        argv += ["--format", "hudi"]
    line = _refused(argv)
    assert f"Hudi table {table}" in line and "column 'ts' has type timestamp_ntz" in line, line
    assert _files(cli_table) == before
    assert not (tmp_path / "new_hudi").exists()


def test_int96_timestamps_are_instants_not_timestamp_ntz(tmp_path: Path) -> None:
    """Spark reads legacy INT96 timestamps as TIMESTAMP: the check before Spark must not refuse them."""
    from lakesieve.cli.preflight import source_schema
    from lakesieve.contract import registry
    from lakesieve.contract.protocols import ChecksWrites
    from lakesieve.errors import WriteError
    from lakesieve.model import WriteOptions

    int96 = source_schema(str(_ntz_source(tmp_path / "int96.parquet", int96=True)))
    naive = source_schema(str(_ntz_source(tmp_path / "ntz.parquet")))
    assert int96 is not None and int96.field("ts").type.tz == "UTC"
    assert naive is not None and naive.field("ts").type.tz is None
    stamps = pa.array([dt.datetime(2024, 1, 1)], pa.timestamp("us"))
    nested = pa.table({"st": pa.StructArray.from_arrays([stamps], ["t"])})
    pq.write_table(nested, tmp_path / "nested.parquet", use_deprecated_int96_timestamps=True)
    nested_schema = source_schema(str(tmp_path / "nested.parquet"))
    assert nested_schema is not None and nested_schema.field("st").type.field("t").type.tz == "UTC"
    fmt = registry.open_format(str(tmp_path / "new"), {"format": "hudi"})
    assert isinstance(fmt, ChecksWrites)
    options = WriteOptions(mode="insert", record_key=("id",))
    fmt.check_write(int96, options)
    with pytest.raises(WriteError, match="'ts' has type timestamp_ntz"):
        fmt.check_write(naive, options)
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize(
    ("fmt", "target"), [("delta", "new"), ("delta", "existing"), ("iceberg", "new")]
)
def test_file_groups_without_bucket_column_is_refused_before_spark(
    keyed_tables: dict[str, Path], tmp_path: Path, fmt: str, target: str
) -> None:
    """Delta and Iceberg need ``--bucket-column`` for ``--file-groups``; the refusal names both."""
    table = keyed_tables[fmt] if target == "existing" else tmp_path / f"new_{fmt}"
    before = _files(keyed_tables["root"])
    src = keyed_tables["root"] / "src.parquet"
    argv = ["write", str(table), "--from", str(src), "--mode", "insert", "--file-groups", "4"]
    if target == "new":
        argv += ["--format", fmt, "--record-key", "id"]
    line = _refused(argv)
    assert f"table {table}" in line and "(--file-groups) 4" in line, line
    assert "(--bucket-column)" in line, line
    assert _files(keyed_tables["root"]) == before
    assert not (tmp_path / f"new_{fmt}").exists()


@pytest.mark.parametrize(
    ("fmt", "stored"),
    [
        ("hudi", "the table's record key id"),
        ("delta", "the table's record key id (table property lakesieve.recordKey)"),
        ("iceberg", "the table's record key id (table property lakesieve.record-key)"),
    ],
)
def test_a_different_record_key_is_refused_before_spark(
    keyed_tables: dict[str, Path], fmt: str, stored: str
) -> None:
    """A ``--record-key`` other than the one the table keeps is refused from its metadata."""
    table = keyed_tables[fmt]
    before = _files(keyed_tables["root"], keyed_tables["hudi"])
    src = keyed_tables["root"] / "src.parquet"
    line = _refused(["write", str(table), "--from", str(src), "--record-key", "k"])
    assert f"table {table}" in line and "--record-key" in line and "k" in line, line
    assert f"differs from {stored}" in line, line
    assert _files(keyed_tables["root"], keyed_tables["hudi"]) == before


@pytest.mark.parametrize("fmt", ["delta", "iceberg"])
def test_check_write_refuses_what_the_writer_refuses(tmp_path: Path, fmt: str) -> None:
    """The check before Spark refuses bucket options and modes with the writer's own messages."""
    from lakesieve.contract import registry
    from lakesieve.contract.protocols import ChecksWrites
    from lakesieve.errors import WriteError
    from lakesieve.model import WriteOptions

    table = registry.open_format(str(tmp_path / "t"), {"format": fmt})
    assert isinstance(table, ChecksWrites)
    schema = pa.schema([("id", pa.int64()), ("s", pa.string())])
    cases = [
        (WriteOptions(mode="merge"), "unknown mode 'merge'"),
        (
            WriteOptions(mode="append", bucket_column="s", file_groups=2),
            "integer column, not string",
        ),
        (WriteOptions(mode="append", bucket_column="id"), r"needs file_groups \(--file-groups\)"),
        (WriteOptions(mode="append", file_groups=4), "needs an integer bucket_column"),
    ]
    for options, message in cases:
        with pytest.raises(WriteError, match=message):
            table.check_write(schema, options)
    with pytest.raises(WriteError, match="needs an integer bucket_column"):
        table.check_write(None, WriteOptions(mode="append", file_groups=4))  # schema unknown
    table.check_write(schema, WriteOptions(mode="append", bucket_column="id", file_groups=2))
    table.check_write(None, WriteOptions(mode="append", bucket_column="id", file_groups=2))
    assert not (tmp_path / "t").exists()
