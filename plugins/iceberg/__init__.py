"""The iceberg plugin."""
