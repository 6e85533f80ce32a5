package org.lakesieve.spark;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.classic.Dataset;

/**
 * The Python planner's answer for one scan, or an error: either the files to read with Spark's
 * Parquet reader (as data, {@link FileListScan}), or a frame that reads the chosen units.
 */
public final class ScanAnswer {
  private final Dataset<Row> frame;
  private final String files;
  private final String description;
  private final String error;

  private ScanAnswer(Dataset<Row> frame, String files, String description, String error) {
    this.frame = frame;
    this.files = files;
    this.description = description;
    this.error = error;
  }

  /** A frame holding exactly the rows of the chosen read units, in the requested columns. */
  public static ScanAnswer of(Dataset<Row> frame, String description) {
    return new ScanAnswer(frame, null, description, null);
  }

  /** The chosen units' Parquet files, read as they are (JSON, see {@link FileListScan}). */
  public static ScanAnswer ofFiles(String files, String description) {
    return new ScanAnswer(null, files, description, null);
  }

  /** A one-line error to report to the user instead of a scan. */
  public static ScanAnswer failure(String error) {
    return new ScanAnswer(null, null, null, error);
  }

  public String files() {
    return files;
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
