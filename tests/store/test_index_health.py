"""A damaged index file is shown by ``index list``, reported by ``index check`` and repaired by build and refresh.

Every test corrupts a real index (built by Spark on a real Hudi table, then
refreshed so that it is a base plus a delta) by flipping a byte in, truncating
or deleting one of its files, and drives the CLI as a user would.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import lakesieve
import pytest
from lakesieve.cli import main
from lakesieve.errors import LakesieveWarning
from lakesieve.maintenance.index_health import CHECKSUMS, CORRUPT_FILE, SIZES, index_health

from tests.tables import CHAINS, expected_from, make_rows, rows_by_location, sorted_rows, write_rows

pytestmark = pytest.mark.spark

WHERE = ("k IN (5, 150, 210)", "k BETWEEN 40 AND 60", "k = 220")


@pytest.fixture(scope="module")
def source(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Sieve and exact indexes on ``k``, each a base plus one delta at the table's latest instant."""
    path = tmp_path_factory.mktemp("health") / "t"
    write_rows(spark, path, make_rows(range(0, 600), 1), mode="bulk_insert", file_groups=6)
    table = lakesieve.open(path)
    table.build_index("k", type="sieve", spark=spark)
    table.build_index("k", type="exact", spark=spark)
    write_rows(spark, path, make_rows(range(600, 700), 2), mode="upsert")
    results = table.refresh(spark=spark, policy=CHAINS)
    assert sorted(r.action for r in results) == ["delta", "delta"]
    return path


@pytest.fixture
def table_path(source: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "table"
    shutil.copytree(source, dest)
    return dest


def _run(argv: list[str], capsys: Any) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _list(path: Path, capsys: Any) -> dict[str, dict[str, Any]]:
    code, out, _ = _run(["index", "list", str(path), "--json"], capsys)
    assert code == 0
    return {r["name"]: r for r in json.loads(out)}


def _files_of(path: Path, name: str, role: str) -> Path:
    """The data file of the base (``role='base'``) or of the delta under index ``name``'s newest state."""
    table = lakesieve.open(path)
    definition = table.index(name)
    head = definition.latest()
    assert head is not None
    chain = definition.chain(head)
    assert len(chain) == 2, "the fixture makes a base and one delta"
    state = chain[0] if role == "base" else chain[1]
    assert state.files
    return table.store.root / state.files[0].path


def _damage(file: Path, how: str) -> None:
    if how == "flip":
        raw = bytearray(file.read_bytes())
        raw[len(raw) // 2] ^= 0xFF
        file.write_bytes(bytes(raw))
    elif how == "truncate":
        file.write_bytes(file.read_bytes()[: file.stat().st_size // 2])
    else:
        file.unlink()


def _store_digest(path: Path) -> dict[str, str]:
    root = path / ".lakesieve"
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _assert_prunes_exactly(spark: Any, path: Path) -> None:
    """Every index is used without a warning, prunes, and the pruned read equals Spark SQL over a full read."""
    table = lakesieve.open(path)
    by_loc = rows_by_location(table)
    for where in WHERE:
        with warnings.catch_warnings():
            warnings.simplefilter("error", LakesieveWarning)
            explained = table.explain(where)
            got = sorted_rows(table.read(spark, where=where))
        assert [i["status"] for i in explained["indexes"]] == ["used", "used"], where
        assert explained["locations_selected"] < explained["locations_total"], where
        assert got == expected_from(spark, by_loc, where), where
        assert got, where


def test_list_sizes_an_index_as_its_base_plus_its_deltas(table_path: Path, capsys: Any) -> None:
    rows = _list(table_path, capsys)
    table = lakesieve.open(table_path)
    for name in ("k_sieve", "k_exact"):
        definition = table.index(name)
        head = definition.latest()
        assert head is not None
        base, delta = definition.chain(head)
        row = rows[name]
        assert row["health"] == "ok" and row["verified"] == CHECKSUMS
        assert row["deltas"] == 1
        assert row["base_bytes"] == base.size_bytes > 0
        assert row["delta_bytes"] == delta.size_bytes > 0
        assert row["size_bytes"] == base.size_bytes + delta.size_bytes
        assert row["size_bytes"] == table.describe_index(name)["size_bytes"]
    code, out, _ = _run(["index", "list", str(table_path)], capsys)
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("k_exact "))
    assert str(rows["k_exact"]["size_bytes"]) in line.split() and line.split()[-1] == "ok"


@pytest.mark.parametrize(
    ("role", "how"), [("delta", "flip"), ("base", "truncate"), ("delta", "delete")]
)
def test_a_damaged_file_is_listed_checked_and_refresh_rebuilds_it(
    spark: Any, table_path: Path, capsys: Any, role: str, how: str
) -> None:
    victim = _files_of(table_path, "k_exact", role)
    _damage(victim, how)
    t = str(table_path)

    rows = _list(table_path, capsys)
    assert rows["k_exact"]["health"] == CORRUPT_FILE
    assert str(victim) in rows["k_exact"]["detail"]
    assert rows["k_sieve"]["health"] == "ok"
    _, _, err = _run(["index", "list", t], capsys)
    assert "k_exact" in err and str(victim) in err

    before = _store_digest(table_path)
    code, out, _ = _run(["index", "check", t], capsys)
    assert code == 1
    broken = [x for x in out.splitlines() if x.startswith("k_exact ")]
    assert len(broken) == 1 and "BROKEN" in broken[0] and str(victim) in broken[0]
    assert any(x.startswith("k_sieve ") and " ok " in x for x in out.splitlines())
    assert _run(["index", "check", t, "--index", "k_sieve"], capsys)[0] == 0
    code, out, _ = _run(["index", "check", t, "--index", "k_exact", "--json"], capsys)
    report = json.loads(out)
    assert code == 1 and [r["name"] for r in report["indexes"]] == ["k_exact"]
    assert {s["kind"] for s in report["bad_states"]} == (
        {"delta"} if role == "delta" else {"base", "delta"}
    )
    assert _store_digest(table_path) == before, "check must not change the store"

    with pytest.warns(LakesieveWarning, match="k_exact"):
        lakesieve.open(table_path).plan(WHERE[0])

    code, out, _ = _run(["index", "refresh", t], capsys)
    assert code == 0
    exact_line = next(x for x in out.splitlines() if " k_exact " in f" {x} ")
    assert "up to date" not in exact_line
    assert exact_line.startswith("rebuilt") and "was broken" in exact_line
    assert "up to date" in next(x for x in out.splitlines() if " k_sieve " in f" {x} ")

    rows = _list(table_path, capsys)
    assert {n: r["health"] for n, r in rows.items()} == {"k_sieve": "ok", "k_exact": "ok"}
    assert rows["k_exact"]["deltas"] == 0
    assert _run(["index", "check", t], capsys)[0] == 0
    _assert_prunes_exactly(spark, table_path)


@pytest.mark.parametrize(
    ("role", "how"), [("base", "flip"), ("delta", "truncate"), ("base", "delete")]
)
def test_build_over_a_broken_index_repairs_it(
    spark: Any, table_path: Path, capsys: Any, role: str, how: str
) -> None:
    victim = _files_of(table_path, "k_sieve", role)
    _damage(victim, how)
    assert _list(table_path, capsys)["k_sieve"]["health"] == CORRUPT_FILE

    code, out, _ = _run(["index", "build", str(table_path), "--column", "k"], capsys)
    assert code == 0
    assert "repaired index k_sieve" in out and str(victim) in out

    assert _list(table_path, capsys)["k_sieve"]["health"] == "ok"
    code, out, _ = _run(["index", "check", str(table_path), "--json"], capsys)
    assert code == 0 and json.loads(out)["ok"]
    assert not victim.parent.exists(), "the broken state's files are removed"
    _assert_prunes_exactly(spark, table_path)


def test_a_large_index_is_listed_by_file_sizes_only(table_path: Path, capsys: Any) -> None:
    """Past the hashing budget ``list`` still sees a truncated file (by size) and says what it skipped."""
    table = lakesieve.open(table_path)
    rows = {r.name: r for r in index_health(table, checksum_budget=0)[0]}
    assert {r.verified for r in rows.values()} == {SIZES}
    assert {r.health for r in rows.values()} == {"ok"}
    victim = _files_of(table_path, "k_exact", "delta")
    _damage(victim, "truncate")
    rows = {r.name: r for r in index_health(table, checksum_budget=0)[0]}
    assert rows["k_exact"].health == CORRUPT_FILE and "bytes" in rows["k_exact"].detail
    assert rows["k_sieve"].health == "ok"


def test_build_from_a_config_rebuilds_a_broken_index(
    spark: Any, table_path: Path, tmp_path: Path, capsys: Any
) -> None:
    """A declared index whose files fail is not "up-to-date": ``build --config`` rebuilds and repairs it."""
    cfg = tmp_path / "lakesieve.toml"
    cfg.write_text(
        f'[tables.t]\npath = "{table_path}"\n'
        '[[tables.t.indexes]]\ncolumn = "k"\ntype = "sieve"\n'
        '[[tables.t.indexes]]\ncolumn = "k"\ntype = "exact"\n'
    )
    victim = _files_of(table_path, "k_exact", "delta")
    _damage(victim, "flip")
    code, out, _ = _run(["index", "build", "--config", str(cfg)], capsys)
    assert code == 0
    lines = out.splitlines()
    assert any(x.startswith("up-to-date index k_sieve") for x in lines)
    exact = next(x for x in lines if "index k_exact" in x)
    assert exact.startswith("built") and "broken" in exact and str(victim) in exact
    assert {n: r["health"] for n, r in _list(table_path, capsys).items()} == {
        "k_sieve": "ok",
        "k_exact": "ok",
    }
    assert _run(["index", "check", str(table_path)], capsys)[0] == 0
    _assert_prunes_exactly(spark, table_path)


#: runs ``lakesieve`` with ``sys.argv[1:]``, then prints whether a Spark JVM was started
_NO_SPARK_SCRIPT = """
import json
import sys

from lakesieve.cli import main

code = main(sys.argv[1:])
started = False
if "pyspark" in sys.modules:
    from pyspark import SparkContext

    started = SparkContext._gateway is not None
sys.stdout.flush()
print(json.dumps(started))
sys.exit(code)
"""


def _run_fresh(*argv: str) -> tuple[int, str, bool]:
    """Run the CLI in a fresh interpreter: exit status, stdout before the last line, whether Spark started."""
    proc = subprocess.run(
        [sys.executable, "-c", _NO_SPARK_SCRIPT, *argv],
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = proc.stdout.splitlines()
    assert lines, proc.stderr
    return proc.returncode, "\n".join(lines[:-1]), json.loads(lines[-1])


def test_list_and_check_find_a_damaged_file_without_starting_spark(table_path: Path) -> None:
    victim = _files_of(table_path, "k_sieve", "base")
    _damage(victim, "flip")
    code, out, started = _run_fresh("index", "list", str(table_path), "--json")
    assert code == 0 and not started
    assert {r["name"]: r["health"] for r in json.loads(out)} == {
        "k_sieve": CORRUPT_FILE,
        "k_exact": "ok",
    }
    code, out, started = _run_fresh("index", "check", str(table_path))
    assert code == 1 and not started
    assert str(victim) in next(x for x in out.splitlines() if x.startswith("k_sieve "))


def test_an_index_of_another_table_is_listed_and_rebuilt_by_refresh(
    spark: Any, source: Path, tmp_path: Path, capsys: Any
) -> None:
    """Index files copied next to another table: its instants are not on that table's timeline."""
    other = tmp_path / "other"
    write_rows(spark, other, make_rows(range(0, 300), 5), mode="bulk_insert", file_groups=3)
    shutil.copytree(source / ".lakesieve", other / ".lakesieve")
    rows = _list(other, capsys)
    assert {n: r["health"] for n, r in rows.items()} == {
        "k_sieve": "not on timeline",
        "k_exact": "not on timeline",
    }
    assert "another table" in rows["k_exact"]["detail"]
    code, out, _ = _run(["index", "refresh", str(other)], capsys)
    assert code == 0 and "up to date" not in out
    assert {n: r["health"] for n, r in _list(other, capsys).items()} == {
        "k_sieve": "ok",
        "k_exact": "ok",
    }
    table = lakesieve.open(other)
    by_loc = rows_by_location(table)
    for where in WHERE[:2]:
        assert sorted_rows(table.read(spark, where=where)) == expected_from(spark, by_loc, where)
