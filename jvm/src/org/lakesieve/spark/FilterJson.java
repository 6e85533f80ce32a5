package org.lakesieve.spark;

import java.math.BigDecimal;
import java.time.Instant;
import java.time.LocalDate;
import org.apache.spark.sql.catalyst.util.DateTimeUtils;
import org.apache.spark.sql.sources.And;
import org.apache.spark.sql.sources.EqualTo;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.sources.GreaterThan;
import org.apache.spark.sql.sources.GreaterThanOrEqual;
import org.apache.spark.sql.sources.In;
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.IsNull;
import org.apache.spark.sql.sources.LessThan;
import org.apache.spark.sql.sources.LessThanOrEqual;
import org.apache.spark.sql.sources.Not;
import org.apache.spark.sql.sources.Or;

/**
 * Spark's pushed filters as JSON for the Python planner.
 *
 * <p>Each filter becomes {@code {"op": ..., "col": ..., "v": ...}} ({@code "and"}, {@code
 * "or"}, {@code "not"} nest with {@code "args"}); a filter this class cannot write exactly
 * becomes {@code null}, which the planner reads as "cannot prune on this". Values are typed as
 * Spark typed the literal: {@code {"t": "int"|"float"|"decimal"|"string"|"bool", "v": text}},
 * {@code {"t": "date", "v": days}}, {@code {"t": "timestamp", "v": microseconds since the
 * epoch}} (an instant).
 */
final class FilterJson {
  private FilterJson() {}

  /** Every filter as one JSON array. */
  static String array(Filter[] filters) {
    StringBuilder b = new StringBuilder("[");
    for (int i = 0; i < filters.length; i++) {
      if (i > 0) {
        b.append(',');
      }
      b.append(filter(filters[i]));
    }
    return b.append(']').toString();
  }

  /** Every filter as Spark prints it, as one JSON array of strings (for the scan's description). */
  static String texts(Filter[] filters) {
    StringBuilder b = new StringBuilder("[");
    for (int i = 0; i < filters.length; i++) {
      if (i > 0) {
        b.append(',');
      }
      b.append(Json.quote(filters[i].toString()));
    }
    return b.append(']').toString();
  }

  static String filter(Filter f) {
    if (f instanceof EqualTo) {
      EqualTo e = (EqualTo) f;
      return compare("=", e.attribute(), e.value());
    }
    if (f instanceof GreaterThan) {
      GreaterThan e = (GreaterThan) f;
      return compare(">", e.attribute(), e.value());
    }
    if (f instanceof GreaterThanOrEqual) {
      GreaterThanOrEqual e = (GreaterThanOrEqual) f;
      return compare(">=", e.attribute(), e.value());
    }
    if (f instanceof LessThan) {
      LessThan e = (LessThan) f;
      return compare("<", e.attribute(), e.value());
    }
    if (f instanceof LessThanOrEqual) {
      LessThanOrEqual e = (LessThanOrEqual) f;
      return compare("<=", e.attribute(), e.value());
    }
    if (f instanceof In) {
      In e = (In) f;
      StringBuilder b = new StringBuilder("[");
      Object[] values = e.values();
      for (int i = 0; i < values.length; i++) {
        String v = value(values[i]);
        if (v == null) {
          return "null";
        }
        if (i > 0) {
          b.append(',');
        }
        b.append(v);
      }
      b.append(']');
      return "{\"op\":\"in\",\"col\":" + Json.quote(e.attribute()) + ",\"v\":" + b + "}";
    }
    if (f instanceof IsNull) {
      return "{\"op\":\"isnull\",\"col\":" + Json.quote(((IsNull) f).attribute()) + "}";
    }
    if (f instanceof IsNotNull) {
      return "{\"op\":\"isnotnull\",\"col\":" + Json.quote(((IsNotNull) f).attribute()) + "}";
    }
    if (f instanceof And) {
      And a = (And) f;
      return "{\"op\":\"and\",\"args\":[" + filter(a.left()) + "," + filter(a.right()) + "]}";
    }
    if (f instanceof Or) {
      Or o = (Or) f;
      return "{\"op\":\"or\",\"args\":[" + filter(o.left()) + "," + filter(o.right()) + "]}";
    }
    if (f instanceof Not) {
      return "{\"op\":\"not\",\"args\":[" + filter(((Not) f).child()) + "]}";
    }
    return "null";
  }

  private static String compare(String op, String column, Object value) {
    String v = value(value);
    if (v == null) {
      return "null";
    }
    return "{\"op\":\"" + op + "\",\"col\":" + Json.quote(column) + ",\"v\":" + v + "}";
  }

  private static String typed(String type, String text) {
    return "{\"t\":\"" + type + "\",\"v\":" + Json.quote(text) + "}";
  }

  /** A filter value as typed JSON; {@code null} for a value this class cannot write exactly. */
  static String value(Object v) {
    if (v instanceof Boolean) {
      return typed("bool", v.toString());
    }
    if (v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long) {
      return typed("int", v.toString());
    }
    if (v instanceof Float) {
      return typed("float", Double.toString(((Float) v).doubleValue()));
    }
    if (v instanceof Double) {
      return typed("float", v.toString());
    }
    if (v instanceof BigDecimal) {
      return typed("decimal", ((BigDecimal) v).toPlainString());
    }
    if (v instanceof String) {
      return typed("string", (String) v);
    }
    if (v instanceof java.sql.Date) {
      return typed("date", Integer.toString(DateTimeUtils.fromJavaDate((java.sql.Date) v)));
    }
    if (v instanceof LocalDate) {
      return typed("date", Integer.toString(DateTimeUtils.localDateToDays((LocalDate) v)));
    }
    if (v instanceof java.sql.Timestamp) {
      return typed(
          "timestamp", Long.toString(DateTimeUtils.fromJavaTimestamp((java.sql.Timestamp) v)));
    }
    if (v instanceof Instant) {
      return typed("timestamp", Long.toString(DateTimeUtils.instantToMicros((Instant) v)));
    }
    return null; // binary, timestamp without zone, intervals, nulls: no pruning on them
  }
}
