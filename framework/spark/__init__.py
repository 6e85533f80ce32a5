"""The Spark execution layer: the session lakesieve runs its jobs in, and Spark helpers.

- :mod:`.session`: the one place that owns the SparkSession (``LAKESIEVE_*`` settings);
- :mod:`.job_errors`: one readable line from a failed Spark job.
"""
