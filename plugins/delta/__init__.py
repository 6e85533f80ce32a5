"""The Delta Lake format plugin (``delta``): table metadata through delta-rs, data through Spark."""
