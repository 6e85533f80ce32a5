package org.lakesieve.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/** Reading the Python planner's JSON answers. */
final class Answers {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private Answers() {}

  /** The schema JSON of a {@link ScanPlanner#schema} answer; its error as an exception. */
  static String schemaOf(String answer) {
    JsonNode node;
    try {
      node = MAPPER.readTree(answer);
    } catch (Exception e) {
      throw new IllegalStateException("lakesieve's planner answered no JSON: " + answer, e);
    }
    if (node.hasNonNull("error")) {
      throw new IllegalArgumentException(node.get("error").asText());
    }
    return node.get("schema").toString();
  }
}
