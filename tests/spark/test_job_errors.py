"""A failed Spark job reaches the user as one line naming the index and the cause."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lakesieve
import pytest
from lakesieve.cli import main
from lakesieve.spark.job_errors import is_spark_failure, summarize

from tests.tables import make_rows, write_rows

# trimmed from a real failure (the exact index on l_partkey at TPC-H SF10)
MAX_RESULT = """An error occurred while calling o1208.getResult.
: org.apache.spark.SparkException: Exception thrown in awaitResult:
\tat org.apache.spark.util.SparkThreadUtils$.awaitResult(SparkThreadUtils.scala:70)
\tat py4j.ClientServerConnection.run(ClientServerConnection.java:108)
Caused by: org.apache.spark.SparkException: Job aborted due to stage failure: Total size of serialized results of 4 tasks (1340.2 MiB) is bigger than spark.driver.maxResultSize (1024.0 MiB)
\tat org.apache.spark.scheduler.DAGScheduler.$anonfun$abortStage$3(DAGScheduler.scala:4568)
"""


def test_summary_of_a_driver_limit() -> None:
    got = summarize(RuntimeError(MAX_RESULT))
    assert got == (
        "Total size of serialized results of 4 tasks (1340.2 MiB) is bigger than "
        "spark.driver.maxResultSize (1024.0 MiB)"
    )


def test_summary_of_a_java_exception_and_of_plain_text() -> None:
    text = (
        "An error occurred while calling o7.collect.\n"
        ": org.apache.spark.SparkException: Exception thrown\n"
        "\tat a.b.C.d(C.scala:1)\n"
        "Caused by: java.io.FileNotFoundException: /data/t/part-0.parquet (No such file or directory)\n"
    )
    assert (
        summarize(RuntimeError(text))
        == "FileNotFoundException: /data/t/part-0.parquet (No such file or directory)"
    )
    assert summarize(RuntimeError("first line\nsecond")) == "first line"
    assert summarize(RuntimeError("")) == "RuntimeError"
    assert len(summarize(RuntimeError("x" * 1000))) == 300


def test_summary_of_a_python_worker_failure(spark: Any) -> None:
    from pyspark.sql import functions as F

    boom = F.udf(lambda v: 1 // 0, "bigint")
    with pytest.raises(Exception) as caught:
        spark.range(3).select(boom("id")).collect()
    assert is_spark_failure(caught.value)
    assert summarize(caught.value).startswith("ZeroDivisionError: ")
    assert not is_spark_failure(ValueError("ours"))


def test_a_failing_build_job_is_one_line_and_changes_nothing(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lakesieve.plugins.hudi.plugin import HudiFormat
    from pyspark.sql import functions as F

    path = tmp_path / "t"
    write_rows(spark, path, make_rows(range(0, 60), 1), mode="bulk_insert", file_groups=2)
    before = lakesieve.open(path).store.read_log().version
    files_before = sorted(p.relative_to(path) for p in path.rglob("*"))
    real = HudiFormat.read
    boom = F.udf(lambda v: 1 // 0, "bigint")

    def failing_read(
        self: HudiFormat,
        spark: Any,
        units: Any,
        instant: Any,
        with_location: bool,
        *,
        columns: Any,
    ) -> Any:
        out = real(self, spark, units, instant, with_location, columns=columns)
        if with_location:
            out = out.withColumn("k", boom("k"))  # the build's job fails in a Python worker
        return out

    monkeypatch.setattr(HudiFormat, "read", failing_read)
    assert (
        main(["index", "build", str(path), "--column", "k", "--type", "exact", "--name", "k_boom"])
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    errors = [ln for ln in err if ln.startswith("lakesieve: error: ")]
    assert errors == [err[-1]] and "Traceback" not in "\n".join(err), (
        err
    )  # progress lines, then one error
    assert errors[0].startswith("lakesieve: error: index 'k_boom' (exact on k) of table ")
    assert "the build's Spark job failed: ZeroDivisionError: " in errors[0]
    monkeypatch.undo()
    assert lakesieve.open(path).store.read_log().version == before
    assert sorted(p.relative_to(path) for p in path.rglob("*")) == files_before
