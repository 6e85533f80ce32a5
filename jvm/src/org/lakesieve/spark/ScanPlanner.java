package org.lakesieve.spark;

/**
 * What lakesieve's Python planner answers for the JVM data source.
 *
 * <p>A Python object implements this interface through py4j's callback server
 * (registered with {@link Planners#register}). Every decision about formats,
 * indexes and predicate semantics is made there; the JVM side only carries
 * options and filters in and a frame to read out.
 */
public interface ScanPlanner {
  /**
   * The table's schema for these options.
   *
   * @param optionsJson the data source options as a JSON object
   * @return a JSON object: {@code {"schema": <Spark StructType JSON>}} or {@code {"error": "..."}}
   */
  String schema(String optionsJson);

  /**
   * What one scan reads.
   *
   * @param requestJson a JSON object with {@code options}, {@code filters} (see
   *     {@link FilterJson}) and {@code schema} (the Spark schema JSON of the columns the query
   *     needs)
   * @return the frame to read and the scan's description, or an error
   */
  ScanAnswer plan(String requestJson);
}
