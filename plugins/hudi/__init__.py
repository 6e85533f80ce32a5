"""Apache Hudi support for lakesieve.

The format hooks live in :mod:`lakesieve.plugins.hudi.plugin` (the module the
``lakesieve`` entry point loads). Reading goes through hudi-rs (the ``hudi``
package) for metadata and merge-on-read merging, and through Spark's Parquet
reader for base files; :mod:`lakesieve.plugins.hudi.writer` writes
copy-on-write tables.

Modules: ``identify`` (marker file), ``tables`` (opening tables, settings,
read schema), ``partitions`` (partition paths and values), ``timeline``
(completed instants), ``instant_touches`` and ``avro_container`` (what an
instant touched), ``changes`` (locations touched between instants),
``snapshot`` (read units), ``unit_reader`` (one unit as Arrow batches),
``spark_read`` (read units as a Spark DataFrame), ``storage`` (file access).
"""
