"""The command line decides before Spark: bad names fail in one line, and no JVM is started.

The refusals run one after the other in one fresh interpreter, which asks
pyspark after each whether a SparkContext or its JVM gateway was ever
created (:mod:`tests.cli_probe`; ``test_cli_validation.py``'s probe also
proves it sees a start); the commands that succeed run alone. The
tables are real: a Hudi table written by lakesieve, a Delta table written by
delta-rs and an Iceberg table written by lakesieve.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from lakesieve.cli.output import error_line
from lakesieve.errors import LakesieveError, WriteError
from lakesieve.model import WriteOptions
from lakesieve.table import write

from tests.cli_probe import Probed, run_batch, run_one
from tests.tables import make_rows, write_rows

pytestmark = pytest.mark.spark


def _run(*argv: str) -> tuple[dict[str, Any], str, str]:
    probed = run_one(*argv)
    return probed.result, probed.out, probed.err


@pytest.fixture(scope="module")
def tables(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from deltalake import write_deltalake

    root = tmp_path_factory.mktemp("front")
    write_rows(spark, root / "hudi", make_rows(range(0, 60), 1), mode="bulk_insert", file_groups=2)
    data = pa.table({"id": pa.array(range(40), pa.int64()), "s": [f"v{i}" for i in range(40)]})
    write_deltalake(str(root / "delta"), data)
    write(
        root / "iceberg",
        spark.createDataFrame([(i, f"v{i}") for i in range(40)], "id bigint, s string"),
        format="iceberg",
        options=WriteOptions(mode="append"),
        spark=spark,
    )
    pq.write_table(data, root / "src.parquet")
    return {
        "hudi": root / "hudi",
        "delta": root / "delta",
        "iceberg": root / "iceberg",
        "root": root,
    }


def _tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


# (argv, words the one error line must hold); {hudi} {delta} {iceberg} {src} {new} are filled in
CASES: list[tuple[list[str], list[str]]] = [
    (
        ["write", "{new}", "--from", "{src}", "--format", "nosuch"],
        ["unknown table format 'nosuch'"],
    ),
    (["write", "{new}", "--from", "{root}/missing.parquet", "--format", "delta"], ["--from"]),
    (["write", "{new}", "--from", "{src}"], ["no table at", "--format"]),
    (["write", "{new}", "--from", "{src}", "--format", "delta"], ["--record-key", "--mode upsert"]),
    (
        ["write", "{new}", "--from", "{src}", "--format", "hudi", "--mode", "delete"],
        ["--mode delete"],
    ),
    (
        ["write", "{new}", "--from", "{src}", "--format", "iceberg", "--record-key", "nope"],
        ["--record-key", "'nope'", "columns: id, s"],
    ),
    (
        ["write", "{delta}", "--from", "{src}", "--mode", "insert", "--partition-by", "zz"],
        ["--partition-by", "'zz'"],
    ),
    (["explain", "{root}/nothing", "--where", "id = 1"], ["no table at"]),
    (["explain", "{delta}", "--where", "id = = 1"], ["id = = 1"]),
    (["explain", "{iceberg}", "--where", "nosuch = 1"], ["unknown column 'nosuch'"]),
    (["query", "{hudi}", "--where", "nosuch = 1", "--refresh"], ["unknown column 'nosuch'"]),
    (
        ["query", "{delta}", "--where", "id >= 0", "--engine", "arrow", "--max-mb", "0"],
        ["--max-mb 0", "--engine spark"],
    ),
    (
        ["index", "build", "{hudi}", "--column", "k", "--type", "nosuch"],
        ["unknown index type 'nosuch'"],
    ),
    (["index", "build", "{delta}", "--column", "zz"], ["--column", "unknown column 'zz'"]),
    (["index", "refresh", "{iceberg}", "--name", "nosuch"], ["no index 'nosuch'"]),
    (["index", "compact", "{hudi}", "--name", "nosuch"], ["no index 'nosuch'"]),
    (["index", "list", "{hudi}", "--format", "iceberg"], ["formats clash", "iceberg", "hudi"]),
    (["compare", "{delta}", "--column", "zz"], ["--column", "unknown column 'zz'"]),
    (["compare", "{delta}", "--column", "id", "--types", "sieve,nosuch"], ["--types", "'nosuch'"]),
    (["advise", "{iceberg}", "--column", "zz"], ["--column", "unknown column 'zz'"]),
]


def _fill(argv: list[str], tables: dict[str, Path]) -> list[str]:
    names = {**{k: str(v) for k, v in tables.items()}, "src": str(tables["root"] / "src.parquet")}
    names["new"] = str(tables["root"] / "new_table")
    return [a.format(**names) for a in argv]


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("lakesieve: error: "), err[-3000:]
    return lines[0]


PAIRS = [
    (a, b) for a in ("hudi", "delta", "iceberg") for b in ("hudi", "delta", "iceberg") if a != b
]


def _onto(tables: dict[str, Path], existing: str, given: str) -> list[str]:
    src = str(tables["root"] / "src.parquet")
    return ["write", str(tables[existing]), "--from", src, "--format", given, "--mode", "insert"]


@pytest.fixture(scope="module")
def refused(tables: dict[str, Path]) -> dict[str, Any]:
    """Every refusal of this module, run in one interpreter; the trees before and after."""
    commands = [_fill(argv, tables) for argv, _words in CASES]
    commands += [_onto(tables, existing, given) for existing, given in PAIRS]
    commands.append(["--version"])
    before = {k: _tree(v) for k, v in tables.items() if k != "root"}
    probed = run_batch(commands)
    return {
        "by_argv": {tuple(c): p for c, p in zip(commands, probed, strict=True)},
        "before": before,
        "after": {k: _tree(v) for k, v in tables.items() if k != "root"},
        "new_table": (tables["root"] / "new_table").exists(),
    }


@pytest.mark.parametrize(("argv", "words"), CASES, ids=[" ".join(c[0][:3]) for c in CASES])
def test_bad_names_fail_in_one_line_before_spark(
    tables: dict[str, Path], refused: dict[str, Any], argv: list[str], words: list[str]
) -> None:
    probed: Probed = refused["by_argv"][tuple(_fill(argv, tables))]
    assert probed.result == {"code": 2, "spark_started": False}, probed.err[-3000:]
    line = _one_error_line(probed.err)
    for word in words:
        assert word in line, line
    for api_name in ("WriteOptions", "max_bytes", "Table.read", "record_key"):
        assert api_name not in line, line
    assert probed.out == ""
    assert refused["after"] == refused["before"]
    assert not refused["new_table"]


@pytest.mark.parametrize(("existing", "given"), PAIRS, ids=[f"{b}-onto-{a}" for a, b in PAIRS])
def test_writing_one_format_onto_another_is_refused(
    tables: dict[str, Path], refused: dict[str, Any], existing: str, given: str
) -> None:
    probed: Probed = refused["by_argv"][tuple(_onto(tables, existing, given))]
    assert probed.result == {"code": 2, "spark_started": False}, probed.err[-3000:]
    line = _one_error_line(probed.err)
    assert "formats clash" in line and f"--format {given}" in line and f"a {existing} table" in line
    assert refused["after"][existing] == refused["before"][existing]


def test_version_prints_the_installed_version(refused: dict[str, Any]) -> None:
    probed: Probed = refused["by_argv"][("--version",)]
    assert probed.result == {"code": 0, "spark_started": False}, probed.err
    assert probed.out.strip() == f"lakesieve {version('lakesieve')}"


def test_errors_name_their_argument_as_data() -> None:
    """An error about one argument carries it; the CLI spells the flag, Python the keyword."""
    no_key = WriteError("no record key given ({argument})", argument="record_key")
    assert str(no_key) == "no record key given (record_key)"
    assert error_line(no_key) == "no record key given (--record-key)"
    big = LakesieveError(
        "more than {argument} for a driver-side read", argument="max_bytes", value=2**20
    )
    assert str(big) == "more than max_bytes=1048576 for a driver-side read"
    assert error_line(big) == "more than --max-mb 1 for a driver-side read"
    differs = WriteError("{argument} differs", argument="partition_by", value="x")
    assert (str(differs), error_line(differs)) == (
        "partition_by='x' differs",
        "--partition-by x differs",
    )
    # a message that names no argument is left as it is, braces and option-like words included
    plain = WriteError("column record_key_hash {k}; file_groups (--file-groups)")
    assert (
        error_line(plain) == str(plain) == "column record_key_hash {k}; file_groups (--file-groups)"
    )
    assert error_line(LakesieveError("first line\nsecond")) == "first line"


@pytest.mark.long  # CI: the same checks in test_heartbeat.py's real write
def test_write_prints_steps_on_stderr_and_only_json_on_stdout(tables: dict[str, Path]) -> None:
    target = tables["root"] / "written"
    src = str(tables["root"] / "src.parquet")
    argv = [
        "write",
        str(target),
        "--from",
        src,
        "--format",
        "delta",
        "--record-key",
        "id",
        "--json",
    ]
    result, out, err = _run(*argv)
    assert result == {"code": 0, "spark_started": True}, err[-3000:]
    doc = json.loads(out)  # stdout holds the result and nothing else
    assert doc["table"] == str(target) and doc["source_rows"] == 40 and doc["mode"] == "upsert"
    assert doc["spark_start_seconds"] > 0 and doc["write_seconds"] > 0
    assert "starting Spark ..." in err
    assert f"writing 40 rows from {src} to {target} (upsert) ..." in err
    assert "done in " in err and "Spark start-up" in err
    from deltalake import DeltaTable

    table = DeltaTable(str(target))
    assert str(table.version()) == doc["instant"]
    assert table.to_pyarrow_table().num_rows == 40
    assert table.metadata().configuration.get("lakesieve.recordKey") == "id"


def test_refresh_and_compact_with_nothing_to_do_start_no_spark(
    spark: Any, tables: dict[str, Path], tmp_path: Path
) -> None:
    """An index at the table's newest instant, with no deltas: neither command needs Spark."""
    import shutil

    from lakesieve.table import open as open_table

    path = tmp_path / "hudi"
    shutil.copytree(tables["hudi"], path)
    open_table(str(path)).build_index("k", "zonemap", name="k_zm", spark=spark)
    for command, words in (("refresh", "up to date"), ("compact", "nothing to compact")):
        result, out, err = _run("index", command, str(path))
        assert result == {"code": 0, "spark_started": False}, err[-3000:]
        assert "k_zm" in out and words in out, out


def _small_change(spark: Any, fmt: str, path: Path) -> None:
    """One small commit: a few updated and new rows (Hudi upsert; Delta and Iceberg append)."""
    if fmt == "hudi":
        write_rows(spark, path, make_rows([*range(10, 14), *range(200, 204)], 7), mode="upsert")
    elif fmt == "delta":
        from deltalake import write_deltalake

        more = pa.table({"id": pa.array([5, 500, 501], pa.int64()), "s": ["u5", "n500", "n501"]})
        write_deltalake(str(path), more, mode="append")
    else:
        write(
            path,
            spark.createDataFrame([(5, "u5"), (500, "n500")], "id bigint, s string"),
            options=WriteOptions(mode="append"),
            spark=spark,
        )


@pytest.mark.parametrize(
    # CI: Hudi and Iceberg (Delta's driver refresh is in CI through the differential share)
    "fmt",
    ["hudi", pytest.param("delta", marks=pytest.mark.long), "iceberg"],
)
def test_refresh_and_compact_of_a_small_change_start_no_spark(
    spark: Any, tables: dict[str, Path], tmp_path: Path, fmt: str
) -> None:
    """A small commit is read and folded on the driver: no JVM, and the indexes answer the truth.

    Truth: each location's rows as the format's own reader returns them
    (hudi-rs, delta-rs, pyiceberg), filtered by Spark SQL.
    """
    import shutil

    from lakesieve.table import open as open_table

    from tests.tables import rows_by_location, true_locations_each

    path = tmp_path / fmt
    if fmt == "iceberg":  # its metadata names the table's absolute location: write a new one
        write(
            path,
            spark.createDataFrame([(i, f"v{i}") for i in range(40)], "id bigint, s string"),
            format="iceberg",
            options=WriteOptions(mode="append"),
            spark=spark,
        )
    else:
        shutil.copytree(tables[fmt], path)
    column = "k" if fmt == "hudi" else "id"
    table = open_table(str(path))
    types = ("sieve", "zonemap", "bloom", "exact")
    for typ in types:
        table.build_index(column, typ, name=f"x_{typ}", spark=spark)
    _small_change(spark, fmt, path)
    result, out, err = _run("index", "refresh", str(path), "--json")
    assert result == {"code": 0, "spark_started": False}, err[-3000:]
    done = {r["index"]: r for r in json.loads(out)}
    assert {done[f"x_{t}"]["engine"] for t in types} == {"driver"}, done
    assert {done[f"x_{t}"]["action"] for t in types} <= {"delta", "compacted"}, done
    assert "(no Spark started)" in err, err[-2000:]
    # compaction of the three types that fold on the driver (exact's ORC rebuilds with Spark)
    for typ in types[:3]:
        result, out, err = _run("index", "compact", str(path), "--name", f"x_{typ}", "--json")
        assert result == {"code": 0, "spark_started": False}, err[-3000:]
        assert json.loads(out)[0]["action"] in {"compacted", "nothing to compact"}, out
    table = open_table(str(path))
    keys = [5, 11, 13, 200, 203, 500, 501, 7, 1000] if fmt == "hudi" else [5, 7, 500, 501, 39]
    wheres = [f"{column} = {k}" for k in keys] + [f"{column} BETWEEN 30 AND 45", f"{column} > 499"]
    truths = true_locations_each(spark, wheres, rows_by_location(table))
    for where, truth in truths.items():
        for typ in types:
            item = next(i for i in table.plan(where).indexes if i.definition.name == f"x_{typ}")
            assert not item.error, (typ, where, item.error)
            assert item.answered or " = " not in where, (typ, where)  # Bloom answers points only
            if item.answered:
                assert truth <= set(item.selected), (typ, where, truth - set(item.selected))
    assert any(truths.values())
