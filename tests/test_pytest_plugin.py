"""lakesieve's pytest plugin is found through its ``pytest11`` entry point and does its job."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_examples_option_reaches_the_kits(pytester: pytest.Pytester) -> None:
    """``--lakesieve-examples`` sets the variable the kits read, in a fresh pytest process."""
    pytester.makepyfile(
        """
        import os

        def test_sees_the_count():
            assert os.environ["LAKESIEVE_CONTRACT_EXAMPLES"] == "7"
        """
    )
    result = pytester.runpytest_subprocess("--lakesieve-examples", "7", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_session_fixture_and_marker_are_offered(pytester: pytest.Pytester) -> None:
    """A plugin author's suite gets ``lakesieve_spark`` and the ``spark`` marker without a conftest."""
    fixtures = pytester.runpytest_subprocess("--fixtures", "-p", "no:cacheprovider")
    fixtures.stdout.fnmatch_lines(["*lakesieve_spark*", "*One SparkSession for the test run*"])
    markers = pytester.runpytest_subprocess("--markers", "-p", "no:cacheprovider")
    markers.stdout.fnmatch_lines(["*spark: needs a SparkSession*"])


def test_examples_option_refuses_zero(pytester: pytest.Pytester) -> None:
    """A count below one is a usage error naming the option."""
    result = pytester.runpytest_subprocess("--lakesieve-examples", "0", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--lakesieve-examples must be at least 1*"])
