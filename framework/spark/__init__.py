"""The Spark execution layer: the session lakesieve runs its jobs in, and Spark helpers.

- :mod:`.session`: the one place that owns the SparkSession (``LAKESIEVE_*`` settings);
- :mod:`.jvm_output`: the driver JVM's log4j 2 settings and the filter on its stderr;
- :mod:`.heartbeat`: a line every few seconds while a long step runs (no terminal);
- :mod:`.job_errors`: one readable line from a failed Spark job.
"""
