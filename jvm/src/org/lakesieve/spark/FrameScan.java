package org.lakesieve.spark;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.connector.read.V1Scan;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.TableScan;
import org.apache.spark.sql.types.StructType;

/**
 * A scan that runs the planner's frame as it is: units that need merging (Hudi log files,
 * Iceberg delete files, Delta deletion vectors) read the way {@code Table.read} reads them, the
 * plain units of the same frame still through Spark's Parquet reader inside it.
 */
final class FrameScan implements V1Scan {
  private final Dataset<Row> frame;
  private final StructType schema;
  private final String selection;

  FrameScan(Dataset<Row> frame, StructType schema, String selection) {
    this.frame = frame;
    this.schema = schema;
    this.selection = selection;
  }

  @Override
  public StructType readSchema() {
    return schema;
  }

  @Override
  public String description() {
    return "[" + selection + "] merged read";
  }

  @Override
  @SuppressWarnings("unchecked")
  public <T extends BaseRelation & TableScan> T toV1TableScan(SQLContext context) {
    return (T) new FrameRelation(context, frame, schema, description());
  }
}
