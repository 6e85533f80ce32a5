package org.lakesieve.spark;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.execution.WholeStageCodegenExec$;
import org.apache.spark.sql.execution.datasources.parquet.ParquetUtils$;
import org.apache.spark.sql.internal.SQLConf;
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

  /**
   * Whether Spark's Parquet reader gives this scan columnar batches, decided from the schema and
   * the session's settings exactly as its reader factory decides it ({@code
   * ParquetPartitionReaderFactory.supportColumnarReads}: the vectorized reader supports the
   * schema, whole-stage code generation is on and the schema has not too many fields). Left to
   * the partitions ({@code PARTITION_DEFINED}), Spark would build the reader factory, and
   * broadcast the Hadoop configuration, while it plans.
   */
  @Override
  public ColumnarSupportMode columnarSupportMode() {
    try {
      SQLConf conf = SQLConf.get();
      StructType schema = inner.readSchema();
      boolean columnar =
          ParquetUtils$.MODULE$.isBatchReadSupportedForSchema(conf, schema)
              && conf.wholeStageEnabled()
              && !WholeStageCodegenExec$.MODULE$.isTooManyFields(conf, schema);
      return columnar ? ColumnarSupportMode.SUPPORTED : ColumnarSupportMode.UNSUPPORTED;
    } catch (RuntimeException | LinkageError e) {
      return inner.columnarSupportMode(); // another Spark's internals: let the partitions say
    }
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
