"""Ctrl-C in a command: one line on stderr and exit 130, whatever Spark was doing.

PySpark's own handler of ``SIGINT`` (installed when a session starts) calls
into the JVM to cancel the running jobs, from inside the Python call that
was waiting on the JVM: py4j refuses the reentrant call and logs each
failure with a traceback, and a terminal's Ctrl-C reaches the JVM too, so
the calls after it fail as well (about 48 lines). The command line keeps its
own handler instead: it stops py4j's logging and raises
``KeyboardInterrupt`` where the main thread is; whatever exception that
becomes on its way up, :func:`interrupted` tells :func:`lakesieve.cli.main`
to print one line. Nothing half-done is committed: an index becomes visible
only through its commit, written last.
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType

_hit = threading.Event()


def _handler(signum: int, frame: FrameType | None) -> None:
    _hit.set()
    logging.disable(logging.CRITICAL)  # py4j logs every call the interrupt cuts short
    raise KeyboardInterrupt


def install(spark: object | None = None) -> None:
    """Make Ctrl-C the command line's (again, after a session started: a start hook)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _handler)


def interrupted() -> bool:
    """Whether Ctrl-C was pressed during this command."""
    return _hit.is_set()
