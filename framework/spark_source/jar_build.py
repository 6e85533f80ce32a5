"""Compiling the data source's Java sources into a jar, cached per pyspark version and source hash.

The sources live in the ``lakesieve.jvm`` folder (``jvm/`` in the
repository). :func:`jar` compiles them with the JDK's ``javac`` against the
jars inside the installed pyspark wheel (``<pyspark>/jars/*``) — no Maven, no
binary without its source — and writes
``<cache>/lakesieve-spark-<pyspark version>-<hash>.jar``, where ``<cache>`` is
``LAKESIEVE_JAR_CACHE``, else ``$XDG_CACHE_HOME/lakesieve``, else
``~/.cache/lakesieve``. A jar is written under a temporary name and renamed
into place, so processes compiling at once never see half a jar.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import zipfile
from importlib import resources
from pathlib import Path

from lakesieve.errors import LakesieveError

_SERVICE = "META-INF/services/org.apache.spark.sql.sources.DataSourceRegister"
_lock = threading.Lock()


class JvmSourceError(LakesieveError):
    """The JVM data source could not be built (no ``javac``, or compilation failed)."""


def _sources_root() -> Path:
    """The folder holding ``src/`` and ``META-INF/``."""
    return Path(str(resources.files("lakesieve.jvm")))


def _source_files(root: Path) -> list[Path]:
    return sorted((root / "src").rglob("*.java"))


def _pyspark() -> tuple[str, Path]:
    import pyspark

    return pyspark.__version__, Path(pyspark.__file__).parent / "jars"


def _cache_dir() -> Path:
    explicit = os.environ.get("LAKESIEVE_JAR_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lakesieve"


def _javac() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").is_file():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def javac_available() -> bool:
    """Whether a ``javac`` is on ``PATH`` (or in ``JAVA_HOME``)."""
    return _javac() is not None


def source_hash() -> str:
    """A hash of every source file's name and content, and of the service registration."""
    root = _sources_root()
    digest = hashlib.sha256()
    for path in [*_source_files(root), root / _SERVICE]:
        digest.update(str(path.relative_to(root)).encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def jar() -> str:
    """The path of the data source's jar, compiling it first when no cached jar matches.

    Raises:
        JvmSourceError: no ``javac`` (a JDK 17 is needed), or the sources do not compile
            against the installed pyspark.
    """
    version, spark_jars = _pyspark()
    target = _cache_dir() / f"lakesieve-spark-{version}-{source_hash()}.jar"
    with _lock:
        if target.is_file():
            return str(target)
        javac = _javac()
        if javac is None:
            raise JvmSourceError(
                "javac was not found (install a JDK 17, or set JAVA_HOME): "
                "spark.read.format('lakesieve') needs it once to compile its Spark data source; "
                "Table.read, read_arrow and the command line work without it"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        _compile(javac, spark_jars, target)
    return str(target)


def _compile(javac: str, spark_jars: Path, target: Path) -> None:
    root = _sources_root()
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as work:
        classes = Path(work) / "classes"
        command = [
            javac,
            "--release",
            "17",
            "-nowarn",
            "-encoding",
            "UTF-8",
            "-d",
            str(classes),
            "-cp",
            str(spark_jars / "*"),
            *[str(p) for p in _source_files(root)],
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            first = next(
                (line for line in done.stderr.splitlines() if "error" in line),
                done.stderr.strip()[:300],
            )
            raise JvmSourceError(
                f"compiling lakesieve's Spark data source against pyspark {_pyspark()[0]} "
                f"failed: {first}"
            )
        partial = Path(work) / "partial.jar"
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
            out.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
            out.write(root / _SERVICE, _SERVICE)
            for path in sorted(classes.rglob("*.class")):
                out.write(path, str(path.relative_to(classes)))
        os.replace(partial, target)
