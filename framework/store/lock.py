"""The writers' lock of an index store: any number of writers together, or one repair alone.

Writers (build, refresh, compact, drop, vacuum, and every commit) hold a
shared lock on the empty file ``<index root>/_lock`` while they work;
``lakesieve index repair`` holds it exclusively, so it never swaps the log
under a running writer and no writer starts while it runs. Writers commit
to the log optimistically among themselves (see :mod:`lakesieve.store`);
the lock only keeps them apart from a repair.

The lock is ``flock(2)``: the kernel drops it when its holder's process
ends, however it ends, so the lock of a killed process never blocks anyone
(there is no pid to go stale). A thread that already holds the lock of a
root takes it again for free (a commit inside a build, a rebuild inside a
repair). Where the file system has no locks (some network file systems),
writers go on unlocked. Opening the lock file for writing, and the probes of
:func:`check_writable`, double as the cheap check that the root is writable
before any Spark work starts.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path

from lakesieve.errors import IndexCorruptError, StoreBusyError
from lakesieve.store.errors import write_error, write_new_file

try:
    import fcntl
except ImportError:  # pragma: no cover - not a POSIX system: no locking
    fcntl = None  # type: ignore[assignment]

#: The lock file under the index root.
LOCK_FILE = "_lock"
#: How long a writer waits for a running repair before giving up.
WAIT_SECONDS = 10.0
#: How long a repair waits for running writers before giving up.
REPAIR_WAIT_SECONDS = 1.0
_POLL_SECONDS = 0.05
_OPEN_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)

_local = threading.local()


def _held() -> set[str]:
    """The roots whose lock this thread holds."""
    held: set[str] | None = getattr(_local, "held", None)
    if held is None:
        held = _local.held = set()
    return held


def _busy_message(root: Path, exclusive: bool) -> str:
    if exclusive:
        return (
            f"another process is writing to the index store {root} (a build, refresh, compact, "
            "drop or vacuum); `lakesieve index repair` must run alone: run it again when that ends"
        )
    return (
        f"the index store {root} is being repaired by another process "
        "(`lakesieve index repair`); run this again when the repair ends"
    )


def _open_lock_file(path: Path) -> int:
    try:
        return os.open(path, _OPEN_FLAGS, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise IndexCorruptError(
                f"index path {path} is a symbolic link; lakesieve never follows links"
            ) from None
        raise write_error(exc, path) from None


def _same_file(fd: int, path: Path) -> bool:
    try:
        on_disk = os.lstat(path)
    except OSError:
        return False
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (on_disk.st_dev, on_disk.st_ino)


def _acquire(root: Path, exclusive: bool) -> int:
    """Open and lock ``root/_lock``; the open file (closing it releases the lock)."""
    path = root / LOCK_FILE
    deadline = time.monotonic() + (REPAIR_WAIT_SECONDS if exclusive else WAIT_SECONDS)
    while True:
        fd = _open_lock_file(path)
        if fcntl is None:
            return fd
        try:
            fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() >= deadline:
                raise StoreBusyError(_busy_message(root, exclusive)) from None
            time.sleep(_POLL_SECONDS)
            continue
        except OSError:
            return fd  # this file system has no locks: go on unlocked
        if _same_file(fd, path):
            return fd
        os.close(fd)  # the file was removed while we waited for it: lock the new one


def _release(fd: int, made_root: Path | None) -> None:
    """Unlock; a root this lock created and nothing else used is removed again."""
    try:
        if made_root is not None and fcntl is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if os.listdir(made_root) == [LOCK_FILE]:
                    os.unlink(made_root / LOCK_FILE)
                    os.rmdir(made_root)
    finally:
        os.close(fd)


def check_writable(folders: Iterable[Path]) -> None:
    """Create, write and remove a small file in each existing folder of ``folders``.

    Raises:
        StoreWriteError: a folder is read-only, full or forbidden to this user.
    """
    for folder in folders:
        if not folder.is_dir():
            continue
        probe = folder / f".tmp-probe-{uuid.uuid4().hex}"  # vacuum removes one a kill left in _log
        try:
            write_new_file(probe, b"lakesieve")
        except OSError as exc:
            raise write_error(exc, folder) from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(probe)


@contextlib.contextmanager
def store_lock(
    root: Path, exclusive: bool = False, create: bool = False, probe: Iterable[Path] = ()
) -> Iterator[None]:
    """Hold the writers' lock of the index root ``root`` while the block runs.

    Args:
        exclusive: lock out every other writer (repair), instead of only a repair.
        create: make ``root`` when it does not exist (a first build); without
            it a missing root is not locked (there is nothing to protect yet).
        probe: folders to check for writability once the lock is held.

    Raises:
        StoreBusyError: a repair holds the lock (past :data:`WAIT_SECONDS`), or,
            for ``exclusive``, a writer does (past :data:`REPAIR_WAIT_SECONDS`).
        StoreWriteError: the root, its lock file or a ``probe`` folder cannot be written.
    """
    key = os.path.abspath(root)
    held = _held()
    if key in held:
        yield
        return
    made: Path | None = None
    if not os.path.isdir(root):
        if not create:
            yield
            return
        try:
            os.makedirs(root)
            made = root
        except FileExistsError:
            pass
        except OSError as exc:
            raise write_error(exc, root) from None
    fd = _acquire(root, exclusive)
    held.add(key)
    try:
        check_writable(probe)
        yield
    finally:
        held.discard(key)
        _release(fd, made)
