package org.lakesieve.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.datasources.v2.parquet.ParquetScanBuilder;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The scan Spark runs for the frame the planner chose.
 *
 * <p>When the frame is a plain scan of Parquet files in the requested columns (no renaming, no
 * merging, no partition values), Spark's own Parquet scan reads those files directly, with
 * column pruning and row-group filter pushdown ({@link PrunedParquetScan}). Anything else (log
 * files merged in Python tasks, deletes applied, columns renamed) runs the frame's own plan
 * ({@link FrameScan}). Both read the same rows.
 */
final class Scans {
  private Scans() {}

  static Scan of(
      Dataset<Row> frame,
      StructType required,
      StructType tableSchema,
      Filter[] filters,
      String description) {
    checkFrame(frame.schema(), required);
    Scan parquet = parquetScan(frame, required, tableSchema, filters, description);
    return parquet != null ? parquet : new FrameScan(frame, required, description);
  }

  /** The frame must hold the required columns, in order, typed as declared: else no scan. */
  private static void checkFrame(StructType frame, StructType required) {
    StructField[] got = frame.fields();
    StructField[] want = required.fields();
    boolean same = got.length == want.length;
    for (int i = 0; same && i < want.length; i++) {
      same = got[i].name().equals(want[i].name()) && got[i].dataType().equals(want[i].dataType());
    }
    if (!same) {
      throw new IllegalStateException(
          "lakesieve's planner returned columns "
              + frame.simpleString()
              + " for a scan that needs "
              + required.simpleString());
    }
  }

  /** Spark's Parquet scan of the frame's files, or {@code null} when the frame is not plain. */
  private static Scan parquetScan(
      Dataset<Row> frame,
      StructType required,
      StructType tableSchema,
      Filter[] filters,
      String description) {
    LogicalPlan plan = frame.queryExecution().optimizedPlan();
    while (plan instanceof Project) {
      Project project = (Project) plan;
      for (NamedExpression e : CollectionConverters.asJava(project.projectList())) {
        if (!(e instanceof AttributeReference)) {
          return null;
        }
      }
      plan = project.child();
    }
    if (!(plan instanceof LogicalRelation)) {
      return null;
    }
    if (!(((LogicalRelation) plan).relation() instanceof HadoopFsRelation)) {
      return null;
    }
    HadoopFsRelation files = (HadoopFsRelation) ((LogicalRelation) plan).relation();
    if (!(files.fileFormat() instanceof ParquetFileFormat)
        || files.partitionSchema().nonEmpty()
        || files.bucketSpec().isDefined()
        || !(files.location() instanceof PartitioningAwareFileIndex)) {
      return null;
    }
    StructType data = files.dataSchema();
    for (StructField f : required.fields()) {
      DataType known = typeOf(data, f.name());
      if (known == null || !known.equals(f.dataType())) {
        return null;
      }
    }
    try {
      CaseInsensitiveStringMap options =
          new CaseInsensitiveStringMap(CollectionConverters.asJava(files.options()));
      ParquetScanBuilder builder =
          ParquetScanBuilder.apply(
              frame.sparkSession(),
              (PartitioningAwareFileIndex) files.location(),
              data,
              data,
              options);
      builder.pruneColumns(required);
      builder.pushedDataFilters_$eq(builder.pushDataFilters(trusted(filters, data)));
      Scan scan = builder.build();
      if (!sameColumns(scan.readSchema(), required)) {
        return null;
      }
      return new PrunedParquetScan(scan, description);
    } catch (RuntimeException | LinkageError e) {
      return null; // another Spark's internals: the frame's own plan reads the same rows
    }
  }

  /**
   * Filters Parquet's row-group statistics may skip on: none on floating-point columns, whose
   * statistics disagree with Spark SQL on NaN and -0.0.
   */
  static Filter[] trusted(Filter[] filters, StructType data) {
    List<Filter> out = new ArrayList<>();
    for (Filter f : filters) {
      boolean ok = true;
      for (String column : f.references()) {
        DataType t = typeOf(data, column);
        if (t == null || t instanceof FloatType || t instanceof DoubleType) {
          ok = false;
        }
      }
      if (ok) {
        out.add(f);
      }
    }
    return out.toArray(new Filter[0]);
  }

  private static DataType typeOf(StructType schema, String name) {
    for (StructField f : schema.fields()) {
      if (f.name().equals(name)) {
        return f.dataType();
      }
    }
    return null;
  }

  static boolean sameColumns(StructType got, StructType want) {
    if (got.fields().length != want.fields().length) {
      return false;
    }
    for (int i = 0; i < want.fields().length; i++) {
      StructField g = got.fields()[i];
      StructField w = want.fields()[i];
      if (!g.name().equals(w.name()) || !g.dataType().equals(w.dataType())) {
        return false;
      }
    }
    return true;
  }
}
