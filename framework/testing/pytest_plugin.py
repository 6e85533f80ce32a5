"""lakesieve's pytest plugin: what a plugin's own test suite needs to run the contract kits.

Installed with lakesieve and loaded by pytest through the ``pytest11`` entry
point, so a format plugin or index type that subclasses
:class:`~lakesieve.testing.FormatContract` or
:class:`~lakesieve.testing.IndexContract` needs no ``conftest.py`` of its own:

- the ``lakesieve_spark`` fixture: one ``local[2]`` SparkSession for the whole
  test run (a project's own session-scoped ``spark`` fixture wins when it has
  one);
- ``--lakesieve-examples N``: run every kit's property tests with ``N``
  randomised examples instead of the few derandomised ones a CI run draws
  (the same as ``LAKESIEVE_CONTRACT_EXAMPLES=N``);
- the ``spark`` marker, which the kits put on their tests.

Nothing here imports pyspark until a test asks for a session.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

#: The environment variable the kits read for the number of examples.
EXAMPLES_VARIABLE = "LAKESIEVE_CONTRACT_EXAMPLES"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--lakesieve-examples``."""
    group = parser.getgroup("lakesieve", "lakesieve contract kits")
    group.addoption(
        "--lakesieve-examples",
        type=int,
        default=None,
        metavar="N",
        help="randomised examples per property test of the lakesieve contract kits",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``spark`` marker and hand ``--lakesieve-examples`` to the kits."""
    config.addinivalue_line("markers", "spark: needs a SparkSession (slower)")
    examples = config.getoption("--lakesieve-examples", default=None)
    if examples is not None:
        if examples < 1:
            raise pytest.UsageError("--lakesieve-examples must be at least 1")
        os.environ[EXAMPLES_VARIABLE] = str(examples)


def start_local_spark() -> Any:
    """A ``local[2]`` session with few shuffle partitions, the kits' default."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from lakesieve.spark.session import get_spark

    return get_spark(
        master="local[2]",
        conf={"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "4"},
    )


@pytest.fixture(scope="session")
def lakesieve_spark() -> Iterator[Any]:
    """One SparkSession for the test run, stopped at its end."""
    session = start_local_spark()
    yield session
    from lakesieve.spark.session import stop_spark

    stop_spark()


def kit_spark(request: pytest.FixtureRequest) -> Any:
    """The session a kit uses: the project's ``spark`` fixture, else ``lakesieve_spark``.

    Without this plugin loaded (``-p no:lakesieve``), a session is started here.
    """
    for name in ("spark", "lakesieve_spark"):
        try:
            return request.getfixturevalue(name)
        except pytest.FixtureLookupError:
            continue
    return start_local_spark()
