package org.lakesieve.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

/**
 * The Parquet files of one table instant that Spark reads as they are, parsed once.
 *
 * <p>The planner's JSON is {@code {"files": [[path, size], ...], "data": <the Spark schema the
 * files are read in>, "options": {...}}}; a scan then names the files it reads by their
 * positions in {@code files} ({@link #select}). Immutable: scans running at once share it.
 */
final class FileTable {
  private static final ObjectMapper MAPPER = new ObjectMapper();
  private static final long BLOCK_SIZE = 128L * 1024 * 1024;

  final FileStatus[] statuses;
  final StructType data;
  final Map<String, String> options;

  private FileTable(FileStatus[] statuses, StructType data, Map<String, String> options) {
    this.statuses = statuses;
    this.data = data;
    this.options = options;
  }

  static Path path(String text) {
    Path p = new Path(text);
    if (p.toUri().getScheme() == null) {
      return new Path("file", null, p.toUri().getPath());
    }
    return p;
  }

  /** The table the planner's JSON describes. */
  static FileTable parse(String json) {
    JsonNode node;
    try {
      node = MAPPER.readTree(json);
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
    JsonNode files = node.get("files");
    FileStatus[] statuses = new FileStatus[files.size()];
    int i = 0;
    for (JsonNode file : files) {
      Path p = path(file.get(0).asText());
      statuses[i++] = new FileStatus(file.get(1).asLong(), false, 1, BLOCK_SIZE, 0L, p);
    }
    return new FileTable(statuses, data, Collections.unmodifiableMap(options));
  }

  /**
   * The statuses a selection names: positions in {@code files}, as ranges and single positions
   * separated by commas ({@code "0-9999"}, {@code "3,17-20"}; empty for none).
   */
  List<FileStatus> select(String selection) {
    List<FileStatus> out = new ArrayList<>();
    if (selection.isEmpty()) {
      return out;
    }
    for (String part : selection.split(",")) {
      int dash = part.indexOf('-');
      int from = Integer.parseInt(dash < 0 ? part : part.substring(0, dash));
      int to = dash < 0 ? from : Integer.parseInt(part.substring(dash + 1));
      if (from < 0 || to < from || to >= statuses.length) {
        throw new IllegalStateException(
            "lakesieve's planner selected files " + part + " of " + statuses.length);
      }
      for (int k = from; k <= to; k++) {
        out.add(statuses[k]);
      }
    }
    return out;
  }
}
