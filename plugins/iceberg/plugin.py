"""Hook implementations of the iceberg plugin (being written)."""
