package org.lakesieve.spark;

import java.util.Map;

/** The few JSON pieces the data source writes (strings and objects of strings). */
final class Json {
  private Json() {}

  /** {@code s} as a JSON string literal. */
  static String quote(String s) {
    StringBuilder b = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"':
          b.append("\\\"");
          break;
        case '\\':
          b.append("\\\\");
          break;
        case '\n':
          b.append("\\n");
          break;
        case '\r':
          b.append("\\r");
          break;
        case '\t':
          b.append("\\t");
          break;
        default:
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
      }
    }
    return b.append('"').toString();
  }

  /** A map of strings as a JSON object. */
  static String object(Map<String, String> map) {
    StringBuilder b = new StringBuilder("{");
    boolean first = true;
    for (Map.Entry<String, String> e : map.entrySet()) {
      if (!first) {
        b.append(',');
      }
      first = false;
      b.append(quote(e.getKey())).append(':').append(quote(e.getValue()));
    }
    return b.append('}').toString();
  }
}
