"""A line on stderr every few seconds while a long step runs, for logs and pipes.

On a terminal a long ``lakesieve`` command shows Spark's progress bar. Where
stderr is a file or a pipe (a CI log, a scheduler's capture) the bar is off,
and a step that runs for minutes would print nothing between its first line
and its last: no way to tell a slow job from a hung one. A
:class:`Heartbeat` prints one line every :data:`DEFAULT_INTERVAL` seconds
while its step runs::

    write: no Spark session yet, 10 s
    index build: 3 of 8 tasks done, 20 s
    index build: no Spark job running, 30 s

The task counts are those of the Spark stages running at that moment
(:func:`running_tasks`, from Spark's status tracker); while Spark starts,
between jobs, or on a Spark Connect session they are absent
(:func:`spark_status`). The first line
comes one interval after the step starts, so a quick step prints none, and
none comes after the step ends (:meth:`Heartbeat.stop`, or leaving
:func:`heartbeat`).

``LAKESIEVE_HEARTBEAT_SECONDS`` sets the interval; ``0`` turns the lines off.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

#: Seconds between two heartbeat lines, unless ``LAKESIEVE_HEARTBEAT_SECONDS`` says otherwise.
DEFAULT_INTERVAL = 10.0

INTERVAL_ENV = "LAKESIEVE_HEARTBEAT_SECONDS"


@dataclass(frozen=True)
class TaskCount:
    """Tasks of the Spark stages running at one moment."""

    done: int
    total: int


def running_tasks(spark: Any) -> TaskCount | None:
    """The tasks of ``spark``'s active stages, done and in all; ``None`` when none runs.

    ``None`` also where Spark cannot say: a Spark Connect session (no status
    tracker) or a session being stopped.
    """
    try:
        tracker = spark.sparkContext.statusTracker()
        stages = [tracker.getStageInfo(i) for i in tracker.getActiveStageIds()]
    except Exception:
        return None
    stages = [s for s in stages if s is not None]
    if not stages:
        return None
    return TaskCount(
        done=sum(int(s.numCompletedTasks) for s in stages),
        total=sum(int(s.numTasks) for s in stages),
    )


NO_SESSION = "no Spark session yet"
NO_JOB = "no Spark job running"


def spark_status(spark: Any | None) -> str:
    """How far ``spark``'s work is: ``"N of M tasks done"``, :data:`NO_JOB` or :data:`NO_SESSION`."""
    if spark is None:
        return NO_SESSION
    tasks = running_tasks(spark)
    if tasks is None:
        return NO_JOB
    return f"{tasks.done} of {tasks.total} tasks done"


def heartbeat_line(label: str, status: str, seconds: float) -> str:
    """One heartbeat line: ``"label: status, T s"``."""
    return f"{label}: {status}, {seconds:.0f} s"


class Heartbeat:
    """Prints :func:`heartbeat_line` every ``interval`` seconds from :meth:`start` to :meth:`stop`.

    Args:
        label: what runs (the command, e.g. ``index build``).
        status: called for each line; how far the work is (:func:`spark_status`).
        write: prints one line.
        interval: seconds between lines, and before the first.
        clock: monotonic seconds.
    """

    def __init__(
        self,
        label: str,
        status: Callable[[], str],
        write: Callable[[str], None],
        interval: float = DEFAULT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.interval = interval
        self._status = status
        self._write = write
        self._clock = clock
        self._started = clock()
        self._next = self._started + interval
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def due_in(self) -> float:
        """Seconds until the next line is due (0 or less: due now)."""
        return self._next - self._clock()

    def beat(self) -> str | None:
        """The line due now, if one is, and the time of the next; ``None`` when none is due.

        A line is due once ``interval`` seconds have passed since the last (or the
        start); lines missed while the caller was late are not made up.
        """
        now = self._clock()
        if now < self._next:
            return None
        while self._next <= now:
            self._next += self.interval
        return heartbeat_line(self.label, self._status(), now - self._started)

    def _run(self) -> None:
        while not self._stopped.wait(max(0.0, self.due_in())):
            line = self.beat()
            if line is not None and not self._stopped.is_set():
                try:
                    self._write(line)
                except (OSError, ValueError):  # stderr closed, or its reader gone
                    return

    def start(self) -> Heartbeat:
        """Start printing, from a daemon thread."""
        self._thread = threading.Thread(target=self._run, name="lakesieve-heartbeat", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop printing; no line is printed after this returns."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()


def interval_from(environ: Mapping[str, str]) -> float:
    """The interval ``LAKESIEVE_HEARTBEAT_SECONDS`` sets (0: no heartbeat), else the default."""
    raw = environ.get(INTERVAL_ENV, "").strip()
    if not raw:
        return DEFAULT_INTERVAL
    try:
        return max(0.0, float(raw))
    except ValueError:
        return DEFAULT_INTERVAL


def wanted(terminal: bool, bar: bool, interval: float) -> bool:
    """Whether a step prints heartbeat lines: not on a terminal, not beside Spark's bar."""
    return not terminal and not bar and interval > 0


def _print_line(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextlib.contextmanager
def heartbeat(label: str) -> Iterator[Heartbeat | None]:
    """Heartbeat lines for the step run inside, from lakesieve's Spark session once it runs.

    Nothing is printed when stderr is a terminal, when ``LAKESIEVE_SPARK_CONF`` turns
    Spark's progress bar on anyway, or when ``LAKESIEVE_HEARTBEAT_SECONDS`` is 0.
    Starts no Spark session of its own.
    """
    from lakesieve.spark import session

    bar = session.progress_setting(
        {session.PROGRESS_KEY: "true"}, session.conf_from_env(), terminal=False
    )
    interval = interval_from(os.environ)
    if not wanted(session.stderr_is_terminal(), bar == "true", interval):
        yield None
        return

    def status() -> str:
        return spark_status(session.running_session())

    beat = Heartbeat(label, status, _print_line, interval).start()
    try:
        yield beat
    finally:
        beat.stop()
