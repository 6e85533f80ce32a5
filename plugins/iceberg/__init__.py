"""The Apache Iceberg format plugin (``iceberg``): metadata through pyiceberg, data through Spark."""
