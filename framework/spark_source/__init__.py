"""``spark.read.format("lakesieve")`` and ``USING lakesieve``: Spark SQL pruned by lakesieve.

A small DataSource V2 source written in Java (``jvm/`` in the repository,
compiled on first use by :func:`jar`) asks lakesieve's Python planner, on the
driver and once per scan, which files can hold matching rows, through a py4j
callback (:mod:`lakesieve.spark_source.planner`). Spark's own Parquet reader
then reads only those files, with column pruning and filter pushdown, and
applies every filter itself; units that need merging (Hudi log files, Iceberg
delete files, Delta deletion vectors) are read the way ``Table.read`` reads
them. ``explain()`` shows the selection in the scan's description.

A session from :func:`lakesieve.get_spark` is set up already. Any other
classic PySpark session needs the jar before it starts and the planner once
it runs::

    from pyspark.sql import SparkSession
    from lakesieve import spark_source

    spark = SparkSession.builder.config("spark.jars", spark_source.jar()).getOrCreate()
    spark_source.register(spark)

Where the driver has no Python (the spark-sql CLI, the Thrift server, a Spark
Connect server) the source answers with a one-line error; Spark Connect
clients get the Python data source under the ``lakesieve`` name instead
(:mod:`lakesieve.python_source`).
"""

from __future__ import annotations

from lakesieve.spark_source.jar_build import JvmSourceError, jar, javac_available
from lakesieve.spark_source.planner import register, registered

__all__ = ["JvmSourceError", "jar", "javac_available", "register", "registered"]
