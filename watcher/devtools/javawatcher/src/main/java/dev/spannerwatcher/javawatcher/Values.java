package dev.spannerwatcher.javawatcher;

import com.google.cloud.ByteArray;
import com.google.cloud.Date;
import com.google.cloud.Timestamp;
import com.google.cloud.spanner.StructReader;
import com.google.cloud.spanner.Type;
import com.google.cloud.spanner.Value;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import java.math.BigDecimal;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/** Spanner values from the JSON config (typed shard values) and to the JSON output (row values). */
final class Values {
  private static final DateTimeFormatter RFC3339_NANOS =
      DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSSSSS'Z'").withZone(ZoneOffset.UTC);

  private Values() {}

  /**
   * A typed value from its JSON form: {@code type} is a Spanner type name (BOOL, INT64, FLOAT64,
   * NUMERIC, STRING, JSON, BYTES as base64, DATE, TIMESTAMP as RFC 3339) or ARRAY&lt;one of them&gt;.
   */
  static Value parse(String type, JsonElement json) {
    if (type.startsWith("ARRAY<") && type.endsWith(">")) {
      String element = type.substring(6, type.length() - 1);
      JsonArray items = json.getAsJsonArray();
      switch (element) {
        case "BOOL": return Value.boolArray(list(items, JsonElement::getAsBoolean));
        case "INT64": return Value.int64Array(list(items, JsonElement::getAsLong));
        case "FLOAT64": return Value.float64Array(list(items, JsonElement::getAsDouble));
        case "NUMERIC": return Value.numericArray(list(items, e -> new BigDecimal(e.getAsString())));
        case "STRING": return Value.stringArray(list(items, JsonElement::getAsString));
        case "JSON": return Value.jsonArray(list(items, JsonElement::getAsString));
        case "BYTES": return Value.bytesArray(list(items, e -> ByteArray.fromBase64(e.getAsString())));
        case "DATE": return Value.dateArray(list(items, e -> Date.parseDate(e.getAsString())));
        case "TIMESTAMP":
          return Value.timestampArray(list(items, e -> Timestamp.parseTimestamp(e.getAsString())));
        default: throw new IllegalArgumentException("unsupported array element type " + element);
      }
    }
    switch (type) {
      case "BOOL": return Value.bool(json.getAsBoolean());
      case "INT64": return Value.int64(json.getAsLong());
      case "FLOAT64": return Value.float64(json.getAsDouble());
      case "NUMERIC": return Value.numeric(new BigDecimal(json.getAsString()));
      case "STRING": return Value.string(json.getAsString());
      case "JSON": return Value.json(json.getAsString());
      case "BYTES": return Value.bytes(ByteArray.fromBase64(json.getAsString()));
      case "DATE": return Value.date(Date.parseDate(json.getAsString()));
      case "TIMESTAMP": return Value.timestamp(Timestamp.parseTimestamp(json.getAsString()));
      default: throw new IllegalArgumentException("unsupported shard type " + type);
    }
  }

  private static <T> List<T> list(JsonArray items, Function<JsonElement, T> element) {
    List<T> out = new ArrayList<>();
    for (JsonElement item : items) {
      out.add(item.isJsonNull() ? null : element.apply(item));
    }
    return out;
  }

  /** RFC 3339 in UTC with all nine fractional digits (Timestamp.toString drops trailing zeros). */
  static String rfc3339(Timestamp ts) {
    return RFC3339_NANOS.format(Instant.ofEpochSecond(ts.getSeconds(), ts.getNanos()));
  }

  /** All columns of a row by name. */
  static JsonObject row(StructReader row) {
    JsonObject out = new JsonObject();
    for (int i = 0; i < row.getColumnCount(); i++) {
      out.add(row.getType().getStructFields().get(i).getName(), column(row, i));
    }
    return out;
  }

  /**
   * A column's JSON form: INT64 and FLOAT64 as numbers (non-finite FLOAT64 as text), NUMERIC, JSON,
   * DATE and TIMESTAMP as text, BYTES as base64, arrays as lists; the inverse of {@link #parse}.
   * (Typed getters: this client's getValue does not read every type.)
   */
  static JsonElement column(StructReader row, int i) {
    if (row.isNull(i)) {
      return JsonNull.INSTANCE;
    }
    Type type = row.getColumnType(i);
    switch (type.getCode()) {
      case BOOL: return new JsonPrimitive(row.getBoolean(i));
      case INT64: return new JsonPrimitive(row.getLong(i));
      case FLOAT64: return number(row.getDouble(i));
      case NUMERIC: return new JsonPrimitive(row.getBigDecimal(i).toPlainString());
      case STRING: return new JsonPrimitive(row.getString(i));
      case JSON: return new JsonPrimitive(row.getJson(i));
      case BYTES: return new JsonPrimitive(row.getBytes(i).toBase64());
      case DATE: return new JsonPrimitive(row.getDate(i).toString());
      case TIMESTAMP: return new JsonPrimitive(rfc3339(row.getTimestamp(i)));
      case ARRAY: return array(row, i, type.getArrayElementType());
      default: throw new IllegalArgumentException("cannot print a column of type " + type);  // no table has one
    }
  }

  private static JsonElement number(Double d) {
    return d.isNaN() || d.isInfinite() ? new JsonPrimitive(d.toString()) : new JsonPrimitive(d);
  }

  private static JsonArray array(StructReader row, int i, Type element) {
    switch (element.getCode()) {
      case BOOL: return jsonList(row.getBooleanList(i), JsonPrimitive::new);
      case INT64: return jsonList(row.getLongList(i), JsonPrimitive::new);
      case FLOAT64: return jsonList(row.getDoubleList(i), Values::number);
      case NUMERIC: return jsonList(row.getBigDecimalList(i), n -> new JsonPrimitive(n.toPlainString()));
      case STRING: return jsonList(row.getStringList(i), JsonPrimitive::new);
      case JSON: return jsonList(row.getJsonList(i), JsonPrimitive::new);
      case BYTES: return jsonList(row.getBytesList(i), b -> new JsonPrimitive(b.toBase64()));
      case DATE: return jsonList(row.getDateList(i), d -> new JsonPrimitive(d.toString()));
      case TIMESTAMP: return jsonList(row.getTimestampList(i), t -> new JsonPrimitive(rfc3339(t)));
      default: return jsonList(row.getStructList(i), s -> new JsonPrimitive(s.toString()));
    }
  }

  private static <T> JsonArray jsonList(List<T> items, Function<T, JsonElement> element) {
    JsonArray out = new JsonArray();
    for (T item : items) {
      out.add(item == null ? JsonNull.INSTANCE : element.apply(item));
    }
    return out;
  }
}
