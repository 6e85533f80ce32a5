"""Spark-free tables with hand-made index states, and a file system that fails on demand.

The store tests of faults and races need a real table (the CLI opens one) but
no Spark: :func:`delta_table` writes a small Delta table with delta-rs, and
:func:`add_index` commits an index state whose files are real Arrow IPC files
(``index list`` and ``index check`` verify them) at one of its versions.
:class:`FailingWrites` makes every write below one folder fail with an
``OSError`` of a chosen errno, the way a read-only or full file system does,
while the rest of the machine is left alone (tests run as root, so ``chmod``
alone would not deny a write).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from lakesieve.model import BuiltIndex
from lakesieve.store import IndexStore
from lakesieve.store.index_log import add_state_action


def delta_table(
    path: Path, rows: int = 12, mode: Literal["error", "append"] = "error", start: int = 0
) -> Path:
    """A Delta table at ``path`` (columns ``id``, ``k``, ``s``); ``mode="append"`` adds a version."""
    ids = list(range(start, start + rows))
    table = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "k": pa.array([i // 3 for i in ids], pa.int64()),
            "s": pa.array([f"s{i % 4}" for i in ids], pa.string()),
        }
    )
    write_deltalake(str(path), table, mode=mode)
    return path


def delta_sort_key(version: int) -> str:
    """The timeline sort key of Delta version ``version``."""
    return f"{version:020d}"


def add_index(
    store: IndexStore,
    name: str,
    column: str = "k",
    version: int = 0,
    type: str = "sieve",
    rows: int = 2,
) -> str:
    """Commit index ``name`` (defined if new) with one state at Delta version ``version``; its state id."""
    built = BuiltIndex(
        {"blocks": pa.table({"lo": list(range(rows)), "hi": list(range(1, rows + 1))})},
        {"n": rows},
    )
    state_id, files = store.write_files(name, built)

    def actions(snap: Any) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if name not in snap.indexes:
            out.append(
                {
                    "op": "define",
                    "index": name,
                    "type": type,
                    "column": column,
                    "key_type": "bigint",
                    "params": {},
                }
            )
        out.append(
            add_state_action(
                name, state_id, str(version), delta_sort_key(version), files, built.meta
            )
        )
        return out

    store.commit_with_retry(actions)
    return state_id


def state_folders_on_disk(root: Path) -> set[str]:
    """Every ``<index>/<state id>`` folder under ``root/data``."""
    data = root / "data"
    if not data.is_dir():
        return set()
    return {f"{i.name}/{s.name}" for i in data.iterdir() if i.is_dir() for s in i.iterdir()}


def temp_files(root: Path) -> list[str]:
    """Temporary files any writer left anywhere below ``root`` (``.tmp`` names, probes included)."""
    if not root.exists():
        return []
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".tmp" in p.name
    )


_STRERROR = {
    errno.EROFS: "Read-only file system",
    errno.ENOSPC: "No space left on device",
    errno.EACCES: "Permission denied",
    errno.EPERM: "Operation not permitted",
}


class FailingWrites:
    """Make writes below ``folder`` fail with ``OSError(code)``, like a read-only or full disk.

    Creating, opening for writing, renaming or linking anything below the
    folder fails at once; with ``after_bytes`` set, files may be created and
    the failure comes once that many bytes were written to them (a disk that
    fills up in the middle of a file). Reads and everything outside the
    folder work as usual.
    """

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, folder: Path, code: int, after_bytes: int = -1
    ) -> None:
        self.folder = str(folder.resolve())
        self.code = code
        self.after_bytes = after_bytes
        self.written = 0
        self.failures = 0
        real_open, real_write = os.open, os.write
        wrap = self._wrap

        def fake_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: Any = None) -> int:
            writing = flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC)
            if writing and self.after_bytes < 0 and self._below(path):
                self._fail(path)
            return real_open(path, flags, mode, dir_fd=dir_fd)

        def fake_write(fd: int, data: Any) -> int:
            if self.after_bytes >= 0 and self._fd_below(fd):
                if self.written + len(data) > self.after_bytes:
                    self._fail(os.readlink(f"/proc/self/fd/{fd}"))
                self.written += len(data)
            return real_write(fd, data)

        monkeypatch.setattr(os, "open", fake_open)
        monkeypatch.setattr(os, "write", fake_write)
        for name in ("mkdir", "rename", "replace", "link"):
            monkeypatch.setattr(os, name, wrap(getattr(os, name)))

    def _below(self, path: Any) -> bool:
        try:
            full = os.path.abspath(os.fspath(path))
        except TypeError:
            return False
        return full == self.folder or full.startswith(self.folder + os.sep)

    def _fd_below(self, fd: int) -> bool:
        try:
            return self._below(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            return False

    def _fail(self, path: Any) -> None:
        self.failures += 1
        raise OSError(self.code, _STRERROR.get(self.code, os.strerror(self.code)), os.fspath(path))

    def _wrap(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def fake(src: Any, *args: Any, **kw: Any) -> Any:
            targets = [src, *(a for a in args if isinstance(a, (str, os.PathLike)))]
            if self.after_bytes < 0 and any(self._below(t) for t in targets):
                self._fail(src)
            return real(src, *args, **kw)

        return fake
