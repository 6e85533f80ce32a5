"""Java sources of lakesieve's Spark data source (``spark.read.format("lakesieve")``).

Not Python: this folder ships the ``.java`` files and the service registration
that :mod:`lakesieve.spark_source.jar_build` compiles with ``javac`` against the
installed pyspark's jars, once per pyspark version and source hash.
"""
