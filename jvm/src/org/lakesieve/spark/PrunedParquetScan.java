package org.lakesieve.spark;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.types.StructType;

/** Spark's own Parquet scan of the selected files, described with lakesieve's selection. */
final class PrunedParquetScan implements SupportsReportStatistics {
  private final Scan inner;
  private final String selection;

  PrunedParquetScan(Scan inner, String selection) {
    this.inner = inner;
    this.selection = selection;
  }

  @Override
  public StructType readSchema() {
    return inner.readSchema();
  }

  @Override
  public String description() {
    return "[" + selection + "] " + inner.description();
  }

  @Override
  public Batch toBatch() {
    return inner.toBatch();
  }

  @Override
  public ColumnarSupportMode columnarSupportMode() {
    return inner.columnarSupportMode();
  }

  @Override
  public CustomMetric[] supportedCustomMetrics() {
    return inner.supportedCustomMetrics();
  }

  @Override
  public CustomTaskMetric[] reportDriverMetrics() {
    return inner.reportDriverMetrics();
  }

  @Override
  public Statistics estimateStatistics() {
    if (inner instanceof SupportsReportStatistics) {
      return ((SupportsReportStatistics) inner).estimateStatistics();
    }
    return new Statistics() {
      @Override
      public java.util.OptionalLong sizeInBytes() {
        return java.util.OptionalLong.empty();
      }

      @Override
      public java.util.OptionalLong numRows() {
        return java.util.OptionalLong.empty();
      }
    };
  }

  @Override
  public String toString() {
    return description();
  }
}
