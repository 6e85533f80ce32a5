package org.lakesieve.spark;

import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.TableScan;
import org.apache.spark.sql.types.StructType;

/** The rows of a frame as a relation Spark scans (internal rows, no conversion). */
final class FrameRelation extends BaseRelation implements TableScan {
  private final SQLContext context;
  private final Dataset<Row> frame;
  private final StructType schema;
  private final String description;

  FrameRelation(SQLContext context, Dataset<Row> frame, StructType schema, String description) {
    this.context = context;
    this.frame = frame;
    this.schema = schema;
    this.description = description;
  }

  @Override
  public SQLContext sqlContext() {
    return context;
  }

  @Override
  public StructType schema() {
    return schema;
  }

  @Override
  public boolean needConversion() {
    return false; // buildScan hands Spark internal rows in exactly this schema
  }

  @Override
  @SuppressWarnings({"unchecked", "rawtypes"})
  public RDD<Row> buildScan() {
    return (RDD) frame.queryExecution().toRdd();
  }

  @Override
  public String toString() {
    return "lakesieve " + description;
  }
}
