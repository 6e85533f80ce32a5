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
import org.apache.spark.sql.execution.datasources.FileStatusCache;
import org.apache.spark.sql.execution.datasources.InMemoryFileIndex;
import org.apache.spark.sql.execution.datasources.PartitionSpec;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScanBuilder;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Spark's Parquet scan of files the planner named with their sizes: no listing, no Spark job.
 *
 * <p>The planner's answer is data: {@code {"files": [[path, size], ...], "data": <the Spark
 * schema the files are read in>, "options": {...}}}. Spark's own file index is handed the
 * statuses through a file status cache that already knows every file, so it never asks the
 * file system (nor starts a job to) list them.
 */
final class FileListScan {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final long BLOCK_SIZE = 128L * 1024 * 1024;

  private FileListScan() {}

  /** A file status cache that knows each file of the scan by its path, and nothing else. */
  private static final class KnownFiles extends FileStatusCache {
    private final Map<Path, FileStatus> byPath;

    KnownFiles(Map<Path, FileStatus> byPath) {
      this.byPath = byPath;
    }

    @Override
    public Option<FileStatus[]> getLeafFiles(Path path) {
      FileStatus status = byPath.get(path);
      return status == null ? Option.empty() : Option.apply(new FileStatus[] {status});
    }

    @Override
    public void putLeafFiles(Path path, FileStatus[] files) {}

    @Override
    public void invalidateAll() {}
  }

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
    options.put("recursiveFileLookup", "true"); // the files are the leaves: no partition discovery
    List<Path> roots = new ArrayList<>();
    Map<Path, FileStatus> statuses = new HashMap<>();
    for (JsonNode file : node.get("files")) {
      Path p = path(file.get(0).asText());
      roots.add(p);
      statuses.put(p, new FileStatus(file.get(1).asLong(), false, 1, BLOCK_SIZE, 0L, p));
    }
    SparkSession session = SparkSession.active();
    InMemoryFileIndex index =
        new InMemoryFileIndex(
            session,
            CollectionConverters.asScala(roots).toList(),
            scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(options)),
            Option.apply(data),
            new KnownFiles(statuses),
            Option.apply(PartitionSpec.emptySpec()),
            Option.empty());
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
