"""Writing the index store's files, and one-line errors when the disk refuses.

Every file the store writes goes through :func:`write_new_file` (or
:func:`replace_file`): plain ``os.open``/``os.write`` calls that remove the
half-written file again when a write fails, so a full disk leaves no
temporary file behind. An ``OSError`` of a store write becomes a
:class:`~lakesieve.errors.StoreWriteError` through :func:`write_error`: one
line naming the path, what the file system said and what to do about it
(the CLI prints it and exits 2). :func:`job_write_error` does the same for
a Spark job whose tasks could not write their index files.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from pathlib import Path

from lakesieve.errors import StoreWriteError

#: What to do, by errno.
_ADVICE = {
    errno.ENOSPC: "no space left on the device; free some space there and run this again",
    errno.EDQUOT: "disk quota exceeded; free some space there and run this again",
    errno.EROFS: "the file system is read-only; mount it read-write and run this again",
    errno.EACCES: "permission denied; make it writable by this user and run this again",
    errno.EPERM: "operation not permitted; make it writable by this user and run this again",
}

#: How a Spark job's error text names those errnos (Python workers and the JVM).
_JOB_TEXTS = (
    (re.compile(r"\[Errno 28\]|No space left on device", re.I), errno.ENOSPC),
    (re.compile(r"\[Errno 122\]|Disk quota exceeded", re.I), errno.EDQUOT),
    (re.compile(r"\[Errno 30\]|Read-only file system", re.I), errno.EROFS),
    (re.compile(r"\[Errno 13\]|Permission denied", re.I), errno.EACCES),
    (re.compile(r"\[Errno 1\]|Operation not permitted", re.I), errno.EPERM),
)

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
_CHUNK = 1 << 20


def advice(code: int | None, strerror: str | None = None) -> str:
    """What the file system said, and what to do, for ``errno`` ``code``."""
    if code in _ADVICE:
        return _ADVICE[code]
    return f"{(strerror or 'the write failed').lower()}; fix that and run this again"


def write_error(exc: OSError, path: str | os.PathLike[str]) -> StoreWriteError:
    """The one-line error of a store write to ``path`` that failed with ``exc``."""
    return StoreWriteError(f"cannot write {path}: {advice(exc.errno, exc.strerror)}")


def refused_write(exc: OSError) -> StoreWriteError | None:
    """``exc`` as a one-line error when the file system refused a write (full, read-only, forbidden)."""
    if exc.errno not in _ADVICE:
        return None
    where = exc.filename if exc.filename is not None else "a file"
    return write_error(exc, where)


def job_write_error(text: str, folder: str | os.PathLike[str]) -> StoreWriteError | None:
    """A failed Spark job's error ``text`` as a :class:`StoreWriteError`, when it failed writing below ``folder``.

    Only a line that names a refused write and a path below ``folder``
    counts (a Python task's ``OSError`` names both): a full disk elsewhere
    (Spark's own scratch space) is not the index store's. ``None`` otherwise.
    """
    where = os.fspath(folder)
    for line in text.splitlines():
        if where not in line:
            continue
        for pattern, code in _JOB_TEXTS:
            if pattern.search(line):
                return StoreWriteError(f"cannot write index files in {where}: {advice(code)}")
    return None


def write_new_file(path: str | os.PathLike[str], data: bytes) -> None:
    """Create ``path`` (it must not exist, nor be a link) holding ``data``.

    Raises:
        OSError: as the file system reports it; a half-written file is removed first.
    """
    fd = os.open(path, _FLAGS, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view[:_CHUNK]) :]
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    os.close(fd)


def replace_file(path: Path, tmp: Path, data: bytes) -> None:
    """Write ``data`` to ``tmp`` and rename it over ``path``; ``tmp`` never outlives a failure.

    Raises:
        OSError: as the file system reports it.
    """
    try:
        write_new_file(tmp, data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
