package org.lakesieve.spark;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The file tables ({@link FileTable}) this driver has parsed, by the token of their JSON.
 *
 * <p>The planner sends a table instant's files once; each scan then names its token and the
 * positions it reads, so neither the list crosses py4j again nor its paths are parsed again.
 * The token is a digest of the JSON: one token, one content. The most recently used tables are
 * kept; a scan's answer holds its table, so a table dropped from here stays whole for it.
 *
 * <p>{@code Table.read} asks for the same files as a DataFrame ({@link #frame}): Spark's own
 * Parquet scan (a file source relation, as {@code spark.read.parquet} makes) over a file index
 * made from the statuses, so nothing is listed when the frame is made.
 */
public final class FileTables {
  private static final int KEPT = 32;
  private static final Map<String, FileTable> TABLES =
      new LinkedHashMap<String, FileTable>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, FileTable> eldest) {
          return size() > KEPT;
        }
      };

  private FileTables() {}

  /** A scan of the selected files of the table {@code token} names; {@code null}: not known. */
  public static ScanAnswer answer(String token, String selection, String description) {
    FileTable table;
    synchronized (TABLES) {
      table = TABLES.get(token);
    }
    return table == null ? null : ScanAnswer.ofSelection(table, token, selection, description);
  }

  /** Parse and keep the table {@code json} describes, and answer a scan of its selected files. */
  public static ScanAnswer load(String token, String json, String selection, String description) {
    FileTable table = FileTable.parse(json);
    synchronized (TABLES) {
      TABLES.put(token, table);
    }
    return ScanAnswer.ofSelection(table, token, selection, description);
  }

  /**
   * A DataFrame of the selected files of the table {@code token} names, read by Spark's Parquet
   * scan with nothing listed; {@code null}: the table is not known here.
   */
  public static Dataset<Row> frame(SparkSession session, String token, String selection) {
    FileTable table;
    synchronized (TABLES) {
      table = TABLES.get(token);
    }
    return table == null ? null : frameOf(session, table, selection);
  }

  /** Parse and keep the table {@code json} describes, and a DataFrame of its selected files. */
  public static Dataset<Row> loadFrame(
      SparkSession session, String token, String json, String selection) {
    FileTable table = FileTable.parse(json);
    synchronized (TABLES) {
      TABLES.put(token, table);
    }
    return frameOf(session, table, selection);
  }

  private static Dataset<Row> frameOf(SparkSession session, FileTable table, String selection) {
    // the index lists nothing, so it needs no file system settings (see FileListScan); the
    // relation's options are the read's (the raw local file system among them)
    Map<String, String> indexOptions = new HashMap<>();
    indexOptions.put("recursiveFileLookup", "true"); // the files are the leaves
    KnownFileIndex index =
        new KnownFileIndex(
            session,
            scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(indexOptions)),
            table.select(selection));
    HadoopFsRelation relation =
        HadoopFsRelation.apply(
            index,
            new StructType(),
            table.data.asNullable(), // as spark.read.parquet reads a given schema
            Option.empty(),
            new ParquetFileFormat(),
            scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(table.options)),
            session);
    return session.baseRelationToDataFrame(relation);
  }
}
