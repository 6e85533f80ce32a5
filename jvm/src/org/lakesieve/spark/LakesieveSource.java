package org.lakesieve.spark;

import java.util.Map;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.read.format("lakesieve")}: a table read through lakesieve's indexes.
 *
 * <p>The schema and every scan's files come from lakesieve's Python planner on the driver
 * ({@link Planners}); Spark's own readers read the files.
 */
public final class LakesieveSource implements TableProvider, DataSourceRegister {
  @Override
  public String shortName() {
    return "lakesieve";
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    String answer = Planners.get().schema(Json.object(options.asCaseSensitiveMap()));
    return (StructType) DataType.fromJson(Answers.schemaOf(answer));
  }

  @Override
  public Table getTable(
      StructType schema, Transform[] partitioning, Map<String, String> properties) {
    return new LakesieveTable(schema, properties);
  }
}
