"""Writes to a read-only, full or forbidden index root fail in one line, early, leaving no temporary file.

Most tests make the writes below the index root fail with the errno a
read-only (``EROFS``), full (``ENOSPC``) or forbidden (``EACCES``, ``EPERM``)
file system gives (tests run as root, for whom ``chmod`` denies nothing).
The last test mounts a small tmpfs where the machine allows it and checks
the same on a really full, then really read-only, file system. Every command
must fail before Spark would start (``get_spark`` raises in these tests).
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lakesieve
import pyarrow as pa
import pytest
from lakesieve import table
from lakesieve.cli import main
from lakesieve.errors import StoreWriteError
from lakesieve.maintenance import index_build
from lakesieve.model import BuiltIndex
from lakesieve.store import IndexStore
from lakesieve.store.errors import job_write_error
from lakesieve.store.task_files import write_task_file

from tests.store_helpers import (
    FailingWrites,
    add_index,
    delta_table,
    state_folders_on_disk,
    temp_files,
)

CODES = {
    errno.EROFS: "read-only",
    errno.ENOSPC: "no space left",
    errno.EACCES: "permission denied",
    errno.EPERM: "not permitted",
}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Delta table at version 1 with index ``k_sieve`` at version 0 (a refresh has work)."""
    path = delta_table(tmp_path_factory.mktemp("write_errors") / "t")
    add_index(lakesieve.open(path).store, "k_sieve")
    delta_table(path, mode="append", start=100)
    return path


@pytest.fixture
def table_path(source: Path, tmp_path: Path) -> Path:
    dest = tmp_path / "t"
    shutil.copytree(source, dest)
    return dest


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting Spark fails the test: every check here must come before it."""

    def refuse(**kw: Any) -> Any:
        raise AssertionError("Spark was started before the store was found unwritable")

    monkeypatch.setattr(index_build, "get_spark", refuse)
    monkeypatch.setattr(table, "get_spark", refuse)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _one_line_error(capsys: Any, code: int) -> str:
    """The one error line on stderr (a command's own step line may precede it), checked."""
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("lakesieve: ")]
    assert len(lines) == 1 and lines[0].startswith("lakesieve: error: "), err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2, err
    assert CODES[code] in lines[0].lower(), lines[0]
    return lines[0]


@pytest.mark.parametrize("code", list(CODES))
@pytest.mark.parametrize(
    "argv",
    [
        ["index", "build", "{t}", "--column", "id"],
        ["index", "refresh", "{t}"],
        ["index", "vacuum", "{t}", "--grace-seconds", "0"],
        ["index", "drop", "{t}", "k_sieve"],
    ],
    ids=["build", "refresh", "vacuum", "drop"],
)
def test_a_write_command_on_an_unwritable_root_fails_in_one_line_before_spark(
    table_path: Path,
    argv: list[str],
    code: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: Any,
    no_spark: None,
) -> None:
    root = table_path / ".lakesieve"
    before = _snapshot(root)
    FailingWrites(monkeypatch, root, code, after_bytes=0 if code == errno.ENOSPC else -1)
    capsys.readouterr()
    assert main([a.format(t=table_path) for a in argv]) == 2
    line = _one_line_error(capsys, code)
    assert str(root) in line
    monkeypatch.undo()
    assert _snapshot(root) == before
    assert temp_files(root) == []


def test_a_commit_on_a_read_only_root_names_the_log_and_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = IndexStore(tmp_path / ".lakesieve")
    add_index(store, "k_sieve")
    writes = FailingWrites(monkeypatch, store.log_dir, errno.EROFS)
    with pytest.raises(StoreWriteError) as caught:
        store.commit([{"op": "drop", "index": "k_sieve"}], 1)
    assert writes.failures
    message = str(caught.value)
    assert str(store.log_dir) in message and "read-only" in message and "\n" not in message
    monkeypatch.undo()
    assert temp_files(store.root) == []
    assert set(store.read_log().indexes) == {"k_sieve"}


def test_a_disk_filling_up_while_index_files_are_written_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = IndexStore(tmp_path / ".lakesieve")
    add_index(store, "k_sieve")
    before = state_folders_on_disk(store.root)
    writes = FailingWrites(monkeypatch, store.root, errno.ENOSPC, after_bytes=4096)
    big = BuiltIndex({"blocks": pa.table({"lo": list(range(50_000))})}, {})
    with pytest.raises(StoreWriteError, match="no space left") as caught:
        store.write_files("k_sieve", big)
    assert writes.failures and str(store.root / "data" / "k_sieve") in str(caught.value)
    monkeypatch.undo()
    assert temp_files(store.root) == []
    assert state_folders_on_disk(store.root) == before


def test_a_task_file_that_cannot_be_written_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "state"
    folder.mkdir()
    FailingWrites(monkeypatch, folder, errno.ENOSPC, after_bytes=100)
    with pytest.raises(OSError) as caught:
        write_task_file(str(folder), "part-00000", pa.table({"k": list(range(10_000))}))
    assert caught.value.errno == errno.ENOSPC
    monkeypatch.undo()
    assert list(folder.iterdir()) == []


def test_a_spark_job_that_ran_out_of_space_in_the_store_reads_as_a_store_write_error() -> None:
    folder = "/t/.lakesieve/data/k"
    python = (
        "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
        '  File "/x/partitions.py", line 287, in write_partitions\n'
        f"OSError: [Errno 28] No space left on device: '{folder}/1-a/.part-00000.tmp'\n"
    )
    error = job_write_error(python, folder)
    assert isinstance(error, StoreWriteError)
    assert str(error) == f"cannot write index files in {folder}: " + (
        "no space left on the device; free some space there and run this again"
    )
    read_only = f"java.io.IOException: Read-only file system: file:{folder}/1-a/part-0.orc"
    assert "read-only" in str(job_write_error(read_only, folder))
    # Spark's own scratch space filling up is not the index store's
    scratch = "java.io.IOException: No space left on device: /tmp/blockmgr-1/0c/shuffle_0_1.data"
    assert job_write_error(scratch, folder) is None
    assert job_write_error("ValueError: bad key in " + folder, folder) is None


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs mounted at ``tmp_path/mnt``, where the machine lets the tests mount one."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def test_a_really_full_then_read_only_file_system(
    small_tmpfs: Path, source: Path, capsys: Any, no_spark: None
) -> None:
    path = small_tmpfs / "t"
    shutil.copytree(source, path)
    root = path / ".lakesieve"
    filler = small_tmpfs / "filler"
    with open(filler, "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    for argv in (["index", "build", str(path), "--column", "id"], ["index", "refresh", str(path)]):
        capsys.readouterr()
        assert main(argv) == 2
        assert str(root) in _one_line_error(capsys, errno.ENOSPC)
    assert temp_files(root) == []
    os.unlink(filler)
    remount = subprocess.run(["mount", "-o", "remount,ro", str(small_tmpfs)], capture_output=True)
    assert remount.returncode == 0, remount.stderr
    for argv in (
        ["index", "build", str(path), "--column", "id"],
        ["index", "vacuum", str(path), "--grace-seconds", "0"],
        ["index", "repair", str(path)],
    ):
        capsys.readouterr()
        code = main(argv)
        assert code == 2
        assert str(root) in _one_line_error(capsys, errno.EROFS)
    assert {d.name for d in lakesieve.open(path).indexes()} == {"k_sieve"}
