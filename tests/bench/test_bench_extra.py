"""The core runs without the ``bench`` extra; its commands say which extra they need.

Each check runs ``lakesieve`` in a fresh interpreter whose imports of
matplotlib, pandas and tpchgen fail (a ``sys.meta_path`` finder raises
ImportError for them), as on an install without ``lakesieve[bench]``. pandas
is a core dependency (pyspark's grouped Arrow functions, used by the Bloom
build, import it), but the commands checked here must not need it either.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

BLOCKED = ("matplotlib", "pandas", "tpchgen")

#: runs ``lakesieve`` with ``sys.argv[1:]`` under the block, then prints the blocked
#: modules found in ``sys.modules`` as the last line of stdout
_SCRIPT = """
import importlib.abc
import json
import sys

BLOCKED = __BLOCKED__


class _Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{name} is not installed")
        return None


sys.meta_path.insert(0, _Blocked())

import lakesieve
import lakesieve.cli

try:
    code = lakesieve.cli.main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)))
sys.exit(code)
""".replace("__BLOCKED__", repr(BLOCKED))

EXTRA_LINE = "needs the 'bench' extra: pip install 'lakesieve[bench]'"


def _run(*argv: str) -> tuple[int, list[str], str, list[str]]:
    """Run the CLI under the block: (exit status, stdout lines before the last, stderr, blocked modules loaded)."""
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT, *argv],
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = proc.stdout.splitlines()
    assert lines, proc.stderr
    return proc.returncode, lines[:-1], proc.stderr, json.loads(lines[-1])


@pytest.fixture(scope="module")
def delta_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small Delta table written by delta-rs (no Spark)."""
    from deltalake import write_deltalake

    path = tmp_path_factory.mktemp("noextra") / "t"
    rows = pa.table({"id": pa.array(range(20), pa.int64()), "k": pa.array(range(20), pa.int64())})
    write_deltalake(str(path), rows.slice(0, 10))
    write_deltalake(str(path), rows.slice(10), mode="append")
    return path


def test_the_block_works() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT.replace("import lakesieve.cli", "import pandas")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0 and "pandas is not installed" in proc.stderr


def test_help_imports_no_bench_module() -> None:
    code, out, err, loaded = _run("--help")
    assert code == 0, err
    assert any("demo" in line for line in out) and any("bench" in line for line in out)
    assert loaded == []


def test_core_commands_run_without_the_extra(delta_table: Path) -> None:
    code, out, err, loaded = _run("index", "list", str(delta_table))
    assert code == 0, err
    assert loaded == []
    code, out, err, loaded = _run("explain", str(delta_table), "--where", "k = 5", "--json")
    assert code == 0, err
    assert json.loads("\n".join(out))["locations_total"] == 2
    assert loaded == []
    code, out, err, loaded = _run(
        "query", str(delta_table), "--where", "k = 5", "--engine", "arrow"
    )
    assert code == 0, err
    assert [json.loads(line)["id"] for line in out] == [5]
    assert loaded == []


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (("demo",), "lakesieve demo"),
        (("bench", "--quick"), "lakesieve bench"),
        (
            ("compare", "no-such-table", "--column", "k", "--html", "r.html"),
            "lakesieve compare --html",
        ),
    ],
)
def test_bench_commands_name_the_extra(argv: tuple[str, ...], command: str) -> None:
    code, out, err, loaded = _run(*argv)
    assert code == 2
    assert err.strip().splitlines() == [f"lakesieve: error: {command} {EXTRA_LINE}"]
    assert out == []
    assert loaded == []


def test_bench_without_the_benchmarks_package_says_what_to_install() -> None:
    """The suites are their own distribution (``bench/``): without it ``lakesieve bench``
    says in one line how to install it, and the other commands do not need it."""
    script = _SCRIPT.replace(repr(BLOCKED), repr(("lakesieve_bench",)))
    proc = subprocess.run(
        [sys.executable, "-c", script, "bench", "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "lakesieve: error: lakesieve bench needs the benchmarks (lakesieve-bench): "
        "pip install -e ./bench, from the repository's root"
    ]
    assert proc.stdout.splitlines()[-1] == "[]"
