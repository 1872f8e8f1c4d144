package watcher.changelog.spark.jvm;

import java.util.Arrays;
import java.util.HashSet;
import org.apache.spark.sql.api.java.UDF2;

/**
 * The old values of an UPDATE whose row and previous row have the same columns, as Spark SQL's
 * old_values fast path computes them (watcher/changelog/rules/old_values.py), at a fraction of its cost.
 *
 * <p>Both rows are split into their "column":value entries by the same rule as that path's
 * regular expression (ENTRY_PATTERN), entry after entry from the opening brace to the closing
 * one. The result is the previous row's entries that the new row does not have, without repeats,
 * in the previous row's order, joined into an object. It is null, and the caller compares the
 * rows as maps, exactly where the SQL path leaves its fast path: a row the rule does not split
 * whole, a column name holding a backslash, or rows whose column names differ.
 */
public final class OldValues implements UDF2<String, String, String> {
  private static final long serialVersionUID = 1L;
  private static final int[] NONE = new int[0];

  @Override
  public String call(String previous, String current) {
    if (previous == null || current == null) {
      return null;
    }
    int[] before = entries(previous);
    int[] after = entries(current);
    if (before == null || after == null || before.length != after.length) {
      return null;
    }
    HashSet<String> now = new HashSet<>();
    for (int j = 0; j < after.length; j += 3) {
      int length = before[j + 1] - before[j];
      if (after[j + 1] - after[j] != length
          || !previous.regionMatches(before[j], current, after[j], length)) {
        return null;
      }
      now.add(current.substring(after[j], after[j + 2]));
    }
    StringBuilder out = new StringBuilder(previous.length()).append('{');
    HashSet<String> taken = new HashSet<>();
    for (int j = 0; j < before.length; j += 3) {
      String entry = previous.substring(before[j], before[j + 2]);
      if (!now.contains(entry) && taken.add(entry)) {
        if (taken.size() > 1) {
          out.append(',');
        }
        out.append(entry);
      }
    }
    return out.append('}').toString();
  }

  /**
   * The entries of a compact JSON object text, three ints each (start, end of the name, end),
   * or null when the text is not a brace-enclosed, comma-separated run of entries.
   */
  static int[] entries(String text) {
    int n = text.length();
    if (n < 2 || text.charAt(0) != '{' || text.charAt(n - 1) != '}') {
      return null;
    }
    if (n == 2) {
      return NONE;
    }
    int[] spans = new int[48];
    int k = 0;
    int i = 1;
    while (true) {
      int start = i;
      int nameEnd = string(text, i);
      if (nameEnd < 0 || nameEnd >= n || text.charAt(nameEnd) != ':') {
        return null;
      }
      for (int p = start; p < nameEnd; p++) {
        if (text.charAt(p) == '\\') {
          return null;
        }
      }
      int end = value(text, nameEnd + 1);
      if (end < 0 || end >= n) {
        return null;
      }
      if (k + 3 > spans.length) {
        spans = Arrays.copyOf(spans, spans.length * 2);
      }
      spans[k++] = start;
      spans[k++] = nameEnd;
      spans[k++] = end;
      char next = text.charAt(end);
      if (next == '}') {
        return end == n - 1 ? Arrays.copyOf(spans, k) : null;
      }
      if (next != ',') {
        return null;
      }
      i = end + 1;
    }
  }

  /** The end of the value starting at i: a string, a flat array or a scalar; -1 if none is there. */
  private static int value(String text, int i) {
    int n = text.length();
    if (i >= n) {
      return -1;
    }
    char c = text.charAt(i);
    if (c == '"') {
      return string(text, i);
    }
    if (c == '[') {
      // Anything but brackets and quotes, or whole strings, up to the closing bracket.
      for (int j = i + 1; j < n; ) {
        char d = text.charAt(j);
        if (d == ']') {
          return j + 1;
        }
        if (d == '[') {
          return -1;
        }
        if (d == '"') {
          j = string(text, j);
          if (j < 0) {
            return -1;
          }
        } else {
          j++;
        }
      }
      return -1;
    }
    int j = i;
    while (j < n && ",{}[]\":".indexOf(text.charAt(j)) < 0) {
      j++;
    }
    return j > i ? j : -1;
  }

  /**
   * The end (after the closing quote) of the string starting at i, -1 if none: a backslash takes
   * the next character with it unless that is a line terminator, which the pattern's dot refuses.
   */
  private static int string(String text, int i) {
    int n = text.length();
    if (i >= n || text.charAt(i) != '"') {
      return -1;
    }
    for (int j = i + 1; j < n; ) {
      char c = text.charAt(j);
      if (c == '"') {
        return j + 1;
      }
      if (c == '\\') {
        if (j + 1 >= n || isLineTerminator(text.charAt(j + 1))) {
          return -1;
        }
        j += 2;
      } else {
        j++;
      }
    }
    return -1;
  }

  private static boolean isLineTerminator(char c) {
    return c == '\n' || c == '\r' || c == '\u0085' || c == '\u2028' || c == '\u2029';
  }
}
