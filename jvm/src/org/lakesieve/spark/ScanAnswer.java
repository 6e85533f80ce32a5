package org.lakesieve.spark;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.classic.Dataset;

/**
 * The Python planner's answer for one scan, or an error: either the files to read with Spark's
 * Parquet reader (as data: positions in a {@link FileTable}, see {@link FileTables}), or a frame
 * that reads the chosen units.
 */
public final class ScanAnswer {
  private final Dataset<Row> frame;
  private final FileTable table;
  private final String files;
  private final String selection;
  private final String description;
  private final String error;

  private ScanAnswer(
      Dataset<Row> frame,
      FileTable table,
      String files,
      String selection,
      String description,
      String error) {
    this.frame = frame;
    this.table = table;
    this.files = files;
    this.selection = selection;
    this.description = description;
    this.error = error;
  }

  /** A frame holding exactly the rows of the chosen read units, in the requested columns. */
  public static ScanAnswer of(Dataset<Row> frame, String description) {
    return new ScanAnswer(frame, null, null, null, description, null);
  }

  /** The files at {@code selection}'s positions of {@code table} (token {@code token}), read as they are. */
  static ScanAnswer ofSelection(
      FileTable table, String token, String selection, String description) {
    return new ScanAnswer(null, table, token + ":" + selection, selection, description, null);
  }

  /** A one-line error to report to the user instead of a scan. */
  public static ScanAnswer failure(String error) {
    return new ScanAnswer(null, null, null, null, null, error);
  }

  /** The files read as they are, as text ({@code <table token>:<selection>}); {@code null} for a frame. */
  public String files() {
    return files;
  }

  FileTable table() {
    return table;
  }

  String selection() {
    return selection;
  }

  public Dataset<Row> frame() {
    return frame;
  }

  public String description() {
    return description;
  }

  public String error() {
    return error;
  }
}
