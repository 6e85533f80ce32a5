package org.lakesieve.spark;

import java.util.HashMap;
import java.util.Map;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScanBuilder;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark's Parquet scan of files the planner named with their sizes: no listing, no Spark job.
 *
 * <p>The files are positions in a {@link FileTable} the planner sent once for the table's
 * instant. Spark's Parquet scan reads them through a file index made from their statuses
 * ({@link KnownFileIndex}), which lists nothing.
 */
final class FileListScan {
  private FileListScan() {}

  /** The scan of {@code selection} in {@code table}, reading {@code required} with every trusted filter pushed. */
  static Scan of(
      FileTable table,
      String selection,
      StructType required,
      Filter[] filters,
      String description) {
    // the index lists nothing: its settings are only these (the file system settings of the
    // options, such as an uncached raw local file system, would make Spark build a file
    // system per path when it checks each path's ancestors); the scan reads with the options
    Map<String, String> indexOptions = new HashMap<>();
    indexOptions.put("recursiveFileLookup", "true"); // the files are the leaves
    SparkSession session = SparkSession.active();
    KnownFileIndex index =
        new KnownFileIndex(
            session,
            scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(indexOptions)),
            table.select(selection));
    StructType data = table.data;
    ParquetScanBuilder builder =
        ParquetScanBuilder.apply(
            session, index, data, data, new CaseInsensitiveStringMap(table.options));
    builder.pruneColumns(required);
    builder.pushedDataFilters_$eq(builder.pushDataFilters(Scans.trusted(filters, data)));
    Scan scan = builder.build();
    if (!Scans.sameColumns(scan.readSchema(), required)) {
      throw new IllegalStateException(
          "Spark's Parquet scan reads "
              + scan.readSchema().simpleString()
              + " for a lakesieve scan that needs "
              + required.simpleString());
    }
    return new PrunedParquetScan(scan, description);
  }
}
