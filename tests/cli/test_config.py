"""``lakesieve.toml``: declared indexes are built when missing or stale; bad configs fail early."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lakesieve
import pytest
from lakesieve.cli import main
from lakesieve.config import build_declared, load_config
from lakesieve.errors import LakesieveError

from tests.tables import make_rows, write_rows

pytestmark = pytest.mark.spark

GOOD = """
[spark]
master = "local[2]"
conf = {{ "spark.sql.shuffle.partitions" = "4" }}

[tables.t]
path = "{rel}"
format = "hudi"

[[tables.t.indexes]]
column = "k"
type = "sieve"
options = {{ target_fpr = 0.1 }}

[[tables.t.indexes]]
column = "amount"
type = "zonemap"
name = "amount_zm"
"""


def _listing(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.fixture(scope="module")
def bad_table(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cfgbad") / "t"
    write_rows(spark, path, make_rows(range(0, 300), 3), mode="bulk_insert", file_groups=3)
    return path


def test_declared_indexes_built_then_up_to_date_then_rebuilt_when_stale(
    spark: Any, tmp_path: Path
) -> None:
    table_path = tmp_path / "data" / "t"
    write_rows(spark, table_path, make_rows(range(0, 300), 1), mode="bulk_insert", file_groups=3)
    cfg = tmp_path / "lakesieve.toml"
    cfg.write_text(GOOD.format(rel="data/t"))  # relative to the config's folder

    config = load_config(cfg)
    assert config.spark.master == "local[2]" and config.spark.conf == {
        "spark.sql.shuffle.partitions": "4"
    }
    (tspec,) = config.tables
    assert tspec.path == str(table_path) and tspec.format == "hudi"
    assert [(i.name, i.type, i.column) for i in tspec.indexes] == [
        ("k_sieve", "sieve", "k"),
        ("amount_zm", "zonemap", "amount"),
    ]
    assert tspec.indexes[0].options == {"target_fpr": "0.1"}

    first = build_declared(config, spark=spark)
    assert [(r["index"], r["action"], r["reason"]) for r in first] == [
        ("k_sieve", "built", "missing"),
        ("amount_zm", "built", "missing"),
    ]
    table = lakesieve.open(table_path)
    latest = table.resolve_instant(None)
    assert latest is not None
    assert {d.name: d.latest().instant for d in table.indexes() if d.latest()} == {
        "k_sieve": latest.id,
        "amount_zm": latest.id,
    }
    assert table.index("k_sieve").params["target_fpr"] == pytest.approx(0.1)

    second = build_declared(load_config(cfg), spark=spark)
    assert [r["action"] for r in second] == ["up-to-date", "up-to-date"]

    new_instant = write_rows(spark, table_path, make_rows(range(300, 330), 2), mode="insert")
    third = build_declared(load_config(cfg), spark=spark)
    assert [r["action"] for r in third] == ["built", "built"]
    assert all(r["reason"].startswith("stale") and r["instant"] == new_instant for r in third)

    # changed options make the index stale too; the other stays up to date
    cfg.write_text(GOOD.format(rel="data/t").replace("target_fpr = 0.1", "target_fpr = 0.2"))
    fourth = build_declared(load_config(cfg), spark=spark)
    assert [(r["index"], r["action"], r.get("reason")) for r in fourth] == [
        ("k_sieve", "built", "options changed"),
        ("amount_zm", "up-to-date", None),
    ]


HEAD = '[tables.t]\npath = "{path}"\n'
IDX = '\n[[tables.t.indexes]]\ncolumn = "k"\ntype = "zonemap"\n'


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        pytest.param(
            HEAD + IDX + "\n[extra]\nx = 1\n", "extra: unknown key", id="unknown-top-level-key"
        ),
        pytest.param(
            HEAD + 'colour = "red"\n' + IDX, "tables.t.colour: unknown key", id="unknown-table-key"
        ),
        pytest.param(
            HEAD + IDX + 'colour = "red"\n',
            "tables.t.indexes[0].colour: unknown key",
            id="unknown-index-key",
        ),
        pytest.param(
            'tables = "t"\n', "tables: expected a table, got a string", id="wrong-kind-tables"
        ),
        pytest.param(
            "[tables]\nt = 5\n", "tables.t: expected a table, got a number", id="wrong-kind-table"
        ),
        pytest.param(
            "[tables.t]\npath = 5\n",
            "tables.t.path: expected a non-empty string, got a number",
            id="wrong-kind-path",
        ),
        pytest.param(
            HEAD + 'indexes = "k"\n',
            "tables.t.indexes: expected an array of tables",
            id="wrong-kind-indexes",
        ),
        pytest.param(
            HEAD + IDX + "options = { x = [1] }\n",
            "tables.t.indexes[0].options.x: expected a string, number or boolean",
            id="wrong-kind-option",
        ),
        pytest.param(
            "[spark]\nmaster = 1\n" + HEAD + IDX,
            "spark.master: expected a non-empty string",
            id="wrong-kind-master",
        ),
        pytest.param(
            HEAD + IDX + '\n[[tables.t.indexes]]\ncolumn = "k"\ntype = "quantum"\n',
            "tables.t.indexes[1].type: unknown index type 'quantum'",
            id="unknown-type",
        ),
        pytest.param(
            HEAD + 'format = "parquetish"\n' + IDX,
            "tables.t.format: unknown table format 'parquetish'",
            id="unknown-format",
        ),
        pytest.param(
            HEAD + IDX.replace('"k"', '"nope"'),
            "tables.t.indexes[0].column: unknown column 'nope'",
            id="unknown-column",
        ),
        pytest.param(
            HEAD
            + IDX
            + '\n[[tables.t.indexes]]\ncolumn = "k"\ntype = "sieve"\noptions = { min_run_keys = 2, target_fpr = 2.0 }\n',
            "tables.t.indexes[1].options.target_fpr:",
            id="bad-option-value",
        ),
        pytest.param(
            HEAD + IDX + "options = { bogus = 1 }\n",
            "tables.t.indexes[0].options.bogus: unknown option 'bogus'",
            id="unknown-option",
        ),
        pytest.param(
            '[tables.t]\nformat = "hudi"\n',
            "tables.t: missing required key 'path'",
            id="missing-path-key",
        ),
        pytest.param(
            '[tables.t]\npath = "no/such/dir"\n',
            "tables.t.path: expected an existing table root",
            id="path-does-not-exist",
        ),
        pytest.param(
            HEAD + IDX + IDX,
            "tables.t.indexes[1]: duplicate index name 'k_zonemap'",
            id="duplicate-default-names",
        ),
        pytest.param(
            HEAD + IDX + 'name = "x"\n' + IDX.replace("zonemap", "sieve") + 'name = "x"\n',
            "tables.t.indexes[1].name: duplicate index name 'x'",
            id="duplicate-names",
        ),
        pytest.param(HEAD + "[[tables.t.indexes]\n", "invalid TOML", id="invalid-toml"),
    ],
)
def test_bad_config_fails_with_one_line_before_building(
    bad_table: Path, tmp_path: Path, text: str, needle: str
) -> None:
    cfg = tmp_path / "lakesieve.toml"
    cfg.write_text(text.replace("{path}", str(bad_table)))
    before = _listing(bad_table)
    with pytest.raises(LakesieveError) as info:
        build_declared(load_config(cfg))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{cfg}: ") and needle in message, message
    assert _listing(bad_table) == before


def test_stored_index_of_another_type_is_refused(
    spark: Any, bad_table: Path, tmp_path: Path
) -> None:
    cfg = tmp_path / "lakesieve.toml"
    cfg.write_text(HEAD.replace("{path}", str(bad_table)) + IDX + 'name = "taken"\n')
    table = lakesieve.open(bad_table)
    table.build_index("k", type="sieve", name="taken", spark=spark)
    before = _listing(bad_table)
    with pytest.raises(
        LakesieveError, match=r"tables\.t\.indexes\[0\]: index 'taken' .* already exists as sieve"
    ):
        build_declared(load_config(cfg), spark=spark)
    assert _listing(bad_table) == before
    table.drop_index("taken")


def test_cli_config(bad_table: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "lakesieve.toml"
    cfg.write_text(HEAD.replace("{path}", str(bad_table)) + IDX.replace('"k"', '"nope"'))
    before = _listing(bad_table)
    assert main(["index", "build", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1
        and err[0].startswith("lakesieve: error: ")
        and "tables.t.indexes[0].column" in err[0]
    ), err
    assert main(["index", "build", str(bad_table), "--config", str(cfg)]) == 2
    assert "--config cannot be combined with TABLE" in capsys.readouterr().err
    assert main(["index", "build", str(bad_table)]) == 2
    assert "--column" in capsys.readouterr().err
    assert _listing(bad_table) == before


def test_cli_config_builds(spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table_path = tmp_path / "t"
    write_rows(spark, table_path, make_rows(range(0, 90), 5), mode="bulk_insert", file_groups=3)
    cfg = tmp_path / "lakesieve.toml"
    cfg.write_text('[tables.t]\npath = "t"\n' + IDX)
    assert main(["index", "build", "--config", str(cfg)]) == 0
    assert main(["index", "build", "--config", str(cfg)]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith("built index k_zonemap (zonemap on k) of table t at instant ")
    assert out[1].startswith("up-to-date index k_zonemap (zonemap on k) of table t at instant ")
