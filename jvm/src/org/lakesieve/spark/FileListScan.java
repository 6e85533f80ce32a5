package org.lakesieve.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScanBuilder;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark's Parquet scan of files the planner named with their sizes: no listing, no Spark job.
 *
 * <p>The planner's answer is data: {@code {"files": [[path, size], ...], "data": <the Spark
 * schema the files are read in>, "options": {...}}}. Spark's Parquet scan reads them through a
 * file index made from those statuses ({@link KnownFileIndex}), which lists nothing.
 */
final class FileListScan {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final long BLOCK_SIZE = 128L * 1024 * 1024;

  private FileListScan() {}

  static Path path(String text) {
    Path p = new Path(text);
    if (p.toUri().getScheme() == null) {
      return new Path("file", null, p.toUri().getPath());
    }
    return p;
  }

  /** The scan the answer describes, reading {@code required} with every trusted filter pushed. */
  static Scan of(String answer, StructType required, Filter[] filters, String description) {
    JsonNode node;
    try {
      node = MAPPER.readTree(answer);
    } catch (Exception e) {
      throw new IllegalStateException("lakesieve's planner answered no JSON for a file list", e);
    }
    StructType data = (StructType) DataType.fromJson(node.get("data").toString());
    Map<String, String> options = new HashMap<>();
    Iterator<Map.Entry<String, JsonNode>> fields = node.get("options").fields();
    while (fields.hasNext()) {
      Map.Entry<String, JsonNode> e = fields.next();
      options.put(e.getKey(), e.getValue().asText());
    }
    // the index lists nothing: its settings are only these (the file system settings of the
    // options, such as an uncached raw local file system, would make Spark build a file
    // system per path when it checks each path's ancestors); the scan reads with the options
    Map<String, String> indexOptions = new HashMap<>();
    indexOptions.put("recursiveFileLookup", "true"); // the files are the leaves
    List<FileStatus> statuses = new ArrayList<>();
    for (JsonNode file : node.get("files")) {
      Path p = path(file.get(0).asText());
      statuses.add(new FileStatus(file.get(1).asLong(), false, 1, BLOCK_SIZE, 0L, p));
    }
    SparkSession session = SparkSession.active();
    KnownFileIndex index =
        new KnownFileIndex(
            session,
            scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(indexOptions)),
            statuses);
    ParquetScanBuilder builder =
        ParquetScanBuilder.apply(session, index, data, data, new CaseInsensitiveStringMap(options));
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
