package org.lakesieve.spark;

import java.util.Map;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;

/**
 * One scan of a lakesieve relation: Spark's pushed filters and required columns in, a scan of
 * the files lakesieve's planner chose out.
 *
 * <p>A new builder per scan, so nothing one query pushed is seen by another. Index pruning is
 * per location, not per row: every filter is handed back to Spark to evaluate above the scan.
 */
final class LakesieveScanBuilder implements SupportsPushDownFilters, SupportsPushDownRequiredColumns {
  private final StructType schema;
  private final Map<String, String> options;
  private StructType required;
  private Filter[] pushed = new Filter[0];

  LakesieveScanBuilder(StructType schema, Map<String, String> options) {
    this.schema = schema;
    this.options = options;
    this.required = schema;
  }

  @Override
  public Filter[] pushFilters(Filter[] filters) {
    this.pushed = filters.clone();
    return filters; // Spark applies every filter again: the index only narrows the files
  }

  @Override
  public Filter[] pushedFilters() {
    return pushed.clone();
  }

  @Override
  public void pruneColumns(StructType requiredSchema) {
    this.required = requiredSchema;
  }

  @Override
  public Scan build() {
    String request =
        "{\"options\":"
            + Json.object(options)
            + ",\"filters\":"
            + FilterJson.array(pushed)
            + ",\"shown\":"
            + FilterJson.texts(pushed)
            + ",\"schema\":"
            + required.json()
            + "}";
    ScanAnswer answer = Planners.get().plan(request);
    if (answer == null) {
      throw new IllegalStateException("lakesieve's planner gave no answer for this scan");
    }
    if (answer.error() != null) {
      throw new IllegalArgumentException(answer.error());
    }
    if (answer.table() != null) {
      return FileListScan.of(
          answer.table(), answer.selection(), required, pushed, answer.description());
    }
    return Scans.of(answer.frame(), required, schema, pushed, answer.description());
  }
}
