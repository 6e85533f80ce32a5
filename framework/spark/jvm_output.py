"""What the driver JVM prints: lakesieve's log4j 2 settings, and a filter on its stderr.

A plain pyspark start prints a dozen lines before any work: the JVM's
``WARNING: Using incubator modules``, Spark's "Using Spark's default log4j
profile" and "Setting default log level" banners, and start-up warnings
(a hostname that resolves to a loopback address, no native Hadoop library).
None of them asks the user to do anything.

**log4j 2.** The JVM lakesieve starts reads ``log4j2.properties`` of this
package (through ``LOG4J_CONFIGURATION_FILE``): everything at ``ERROR`` from
the first line on, except the loggers of
:data:`lakesieve.spark.session.WARN_LOGGERS`, kept at ``WARN`` ("Initial job
has not accepted any resources", a lost task). A configuration of the user's
own wins: a ``-D...configurationFile`` among the driver's Java options, a
``LOG4J_CONFIGURATION_FILE`` already set, or a ``log4j2.*`` file in Spark's
conf folder (:func:`user_log4j_config`).

**The JVM's stderr.** The incubator warning comes from the JVM itself, before
any logging: no setting turns it off. The driver JVM's stderr is therefore a
pipe that a thread copies to this process's stderr (:func:`forward`), leaving
out the lines that start with one of :data:`NOISE_PREFIXES`. Everything else
passes unchanged, byte for byte, a partial line (Spark's progress bar, drawn
with carriage returns) as soon as it can no longer be one of them.
"""

from __future__ import annotations

import os
import re
import select
import threading
from collections.abc import Mapping
from pathlib import Path

#: The environment variable log4j 2 reads its configuration file from.
LOG4J_ENV = "LOG4J_CONFIGURATION_FILE"

#: Spark settings whose Java options may name a log4j configuration of the user's.
JAVA_OPTION_SETTINGS = ("spark.driver.extraJavaOptions", "spark.driver.defaultJavaOptions")

#: Environment variables that may carry Java options for the driver JVM.
JAVA_OPTION_VARIABLES = (
    "PYSPARK_SUBMIT_ARGS",
    "SPARK_SUBMIT_OPTS",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
)

#: Lines of the driver JVM's stderr that are left out: the JVM's own notice that
#: Spark uses the vector API, and Spark's banners of a start on its default log4j
#: profile (printed only when lakesieve's settings were not used).
NOISE_PREFIXES: tuple[bytes, ...] = (
    b"WARNING: Using incubator modules:",
    b"Using Spark's default log4j profile:",
    b'Setting default log level to "',
    b"To adjust logging level use sc.setLogLevel(",
)

#: A line's bytes up to and including its end (``\n`` or ``\r``), or the rest of the data.
_PIECE = re.compile(rb"[^\r\n]*[\r\n]?")

#: Seconds a partial line that might still become a noise line is held back.
HOLD_SECONDS = 0.2


def log4j_config_path() -> Path:
    """The log4j 2 configuration shipped in this package."""
    return Path(__file__).resolve().with_name("log4j2.properties")


def user_log4j_config(settings: Mapping[str, str], environ: Mapping[str, str]) -> bool:
    """Whether the user names a log4j configuration of their own for the driver JVM.

    That is ``LOG4J_CONFIGURATION_FILE`` in the environment, a ``configurationFile``
    system property among the driver's Java options (:data:`JAVA_OPTION_SETTINGS`,
    :data:`JAVA_OPTION_VARIABLES`), or a ``log4j2.*`` file in Spark's conf folder
    (``SPARK_CONF_DIR``, else ``SPARK_HOME/conf``), which Spark puts on the class path.
    """
    if environ.get(LOG4J_ENV):
        return True
    options = [settings.get(k, "") for k in JAVA_OPTION_SETTINGS]
    options += [environ.get(k, "") for k in JAVA_OPTION_VARIABLES]
    if any("configurationfile" in o.lower() for o in options):
        return True
    conf_dir = environ.get("SPARK_CONF_DIR") or (
        os.path.join(environ["SPARK_HOME"], "conf") if environ.get("SPARK_HOME") else ""
    )
    return bool(conf_dir) and any(Path(conf_dir).glob("log4j2.*"))


def quiet_logging_env(settings: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """Environment variables that give the driver JVM lakesieve's log4j 2 settings.

    Empty when the user names a configuration of their own (:func:`user_log4j_config`)
    or the package's file is missing.
    """
    path = log4j_config_path()
    if user_log4j_config(settings, environ) or not path.is_file():
        return {}
    return {LOG4J_ENV: str(path)}


def is_noise(line: bytes) -> bool:
    """Whether a line of the JVM's stderr is one of :data:`NOISE_PREFIXES`."""
    return line.lstrip(b"\r").startswith(NOISE_PREFIXES)


class NoiseFilter:
    """Removes noise lines from a byte stream fed to it in pieces of any size.

    The start of each line is held back only while it could still begin one of
    :data:`NOISE_PREFIXES`; from the first byte that rules them out the line passes
    as it arrives. Lines end at ``\\n`` and at ``\\r`` (Spark redraws its progress
    bar after a carriage return).
    """

    def __init__(self) -> None:
        self._pending = b""  # the start of the current line, held back
        self._passing = False  # the current line is known not to be noise

    def feed(self, data: bytes) -> bytes:
        """The part of ``data`` (after what was fed before) that can be written now."""
        out = bytearray()
        for match in _PIECE.finditer(data):
            piece = match.group()
            if not piece:
                continue
            complete = piece.endswith((b"\n", b"\r"))
            if self._passing:
                out += piece
            else:
                self._pending += piece
                if complete:
                    if not is_noise(self._pending):
                        out += self._pending
                    self._pending = b""
                elif not self._may_be_noise(self._pending):
                    out += self._pending
                    self._pending = b""
                    self._passing = True
            if complete:
                self._passing = False
        return bytes(out)

    def held(self) -> bool:
        """Whether a line start is held back that is not (yet) known to be noise."""
        return bool(self._pending) and not is_noise(self._pending)

    def release(self) -> bytes:
        """Give up holding the current line start: it is written; a noise line is dropped."""
        pending, self._pending = self._pending, b""
        if is_noise(pending):
            return b""
        self._passing = bool(pending)
        return pending

    @staticmethod
    def _may_be_noise(start: bytes) -> bool:
        text = start.lstrip(b"\r")
        return any(p.startswith(text) or text.startswith(p) for p in NOISE_PREFIXES)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


def pump(source: int, target: int, hold_seconds: float = HOLD_SECONDS) -> None:
    """Copy ``source`` to ``target`` through a :class:`NoiseFilter` until end of file.

    A line start held back for ``hold_seconds`` without more data is written. Closes
    ``source``; errors writing ``target`` (a closed terminal) end the copy quietly.
    """
    noise = NoiseFilter()
    try:
        while True:
            if noise.held():
                ready, _, _ = select.select([source], [], [], hold_seconds)
                if not ready:
                    _write_all(target, noise.release())
                    continue
            data = os.read(source, 65536)
            if not data:
                _write_all(target, noise.release())
                return
            _write_all(target, noise.feed(data))
    except OSError:
        return
    finally:
        os.close(source)


def forward(target: int = 2) -> tuple[int, threading.Thread]:
    """A pipe whose data a daemon thread copies to ``target`` without the noise lines.

    Returns the pipe's write end, to hand to the child process (and close here once
    it has started), and the thread.
    """
    read_end, write_end = os.pipe()
    thread = threading.Thread(
        target=pump, args=(read_end, target), name="lakesieve-jvm-stderr", daemon=True
    )
    thread.start()
    return write_end, thread
