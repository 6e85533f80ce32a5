package org.lakesieve.spark;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.classic.Dataset;

/** The Python planner's answer for one scan: a frame to read and what was chosen, or an error. */
public final class ScanAnswer {
  private final Dataset<Row> frame;
  private final String description;
  private final String error;

  private ScanAnswer(Dataset<Row> frame, String description, String error) {
    this.frame = frame;
    this.description = description;
    this.error = error;
  }

  /** A frame holding exactly the rows of the chosen read units, in the requested columns. */
  public static ScanAnswer of(Dataset<Row> frame, String description) {
    return new ScanAnswer(frame, description, null);
  }

  /** A one-line error to report to the user instead of a scan. */
  public static ScanAnswer failure(String error) {
    return new ScanAnswer(null, null, error);
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
