package org.lakesieve.spark;

/**
 * The Python planner this driver asks, registered by {@code lakesieve.spark_source.register}.
 *
 * <p>One per JVM: a PySpark driver runs one Python process per JVM.
 */
public final class Planners {
  private static volatile ScanPlanner planner;

  private Planners() {}

  /** Make {@code p} the planner every lakesieve scan of this JVM asks. */
  public static void register(ScanPlanner p) {
    planner = p;
  }

  /** Forget the registered planner (its Python process is going away). */
  public static void unregister() {
    planner = null;
  }

  /** Whether a planner is registered. */
  public static boolean registered() {
    return planner != null;
  }

  /** The registered planner; a one-line error when this driver has none. */
  static ScanPlanner get() {
    ScanPlanner p = planner;
    if (p == null) {
      throw new UnsupportedOperationException(
          "format('lakesieve') needs lakesieve's Python planner in this Spark driver: start "
              + "the session with lakesieve.get_spark(), or call "
              + "lakesieve.spark_source.register(spark) from PySpark (the spark-sql CLI, the "
              + "Thrift server and Spark Connect servers have no Python driver)");
    }
    return p;
  }
}
