"""Format-neutral handling of a table's data files, shared by the format plugins.

- :mod:`.paths`: table roots and file paths (local paths or URIs);
- :mod:`.batches`: conforming and filtering Arrow record batches;
- :mod:`.arrow_schema`: plain Arrow types for schemas handed to Spark;
- :mod:`.spark_scan`: scanning Parquet data files with Spark's reader;
- :mod:`.parquet_writer`: writing a Spark frame as Parquet files from tasks;
- :mod:`.write_frame`: checking and conforming the frame of a write;
- :mod:`.rewrite`: planning copy-on-write deletes and upserts.
"""
