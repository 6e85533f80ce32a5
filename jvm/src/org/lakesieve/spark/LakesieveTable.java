package org.lakesieve.spark;

import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** One lakesieve relation: its schema and options; each scan gets its own builder. */
final class LakesieveTable implements SupportsRead {
  private final StructType schema;
  private final Map<String, String> properties;

  LakesieveTable(StructType schema, Map<String, String> properties) {
    this.schema = schema;
    this.properties = new HashMap<>(properties);
  }

  @Override
  public String name() {
    String path = properties.getOrDefault("path", "");
    return "lakesieve " + path;
  }

  @Override
  public StructType schema() {
    return schema;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return EnumSet.of(TableCapability.BATCH_READ);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    Map<String, String> merged = new HashMap<>(properties);
    merged.putAll(options.asCaseSensitiveMap());
    return new LakesieveScanBuilder(schema, merged);
  }
}
