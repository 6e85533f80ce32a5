"""Format-neutral handling of files: a table's data files, shared by the format plugins, and
the index files and footers the index types read and write.

- :mod:`.paths`: table roots and file paths (local paths or URIs);
- :mod:`.batches`: conforming and filtering Arrow record batches;
- :mod:`.arrow_schema`: plain Arrow types for schemas handed to Spark;
- :mod:`.spark_scan`: scanning Parquet data files with Spark's reader;
- :mod:`.parquet_writer`: writing a Spark frame as Parquet files from tasks;
- :mod:`.write_frame`: checking and conforming the frame of a write;
- :mod:`.rewrite`: planning copy-on-write deletes and upserts;
- :mod:`.ipc_files`: Arrow IPC serialisation of index files, as the index store writes them;
- :mod:`.orc_footer`: row counts and integer column statistics from an ORC file's footer.
"""
