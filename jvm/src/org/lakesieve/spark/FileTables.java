package org.lakesieve.spark;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The file tables ({@link FileTable}) this driver has parsed, by the token of their JSON.
 *
 * <p>The planner sends a table instant's files once; each scan then names its token and the
 * positions it reads, so neither the list crosses py4j again nor its paths are parsed again.
 * The token is a digest of the JSON: one token, one content. The most recently used tables are
 * kept; a scan's answer holds its table, so a table dropped from here stays whole for it.
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
}
