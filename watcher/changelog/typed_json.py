"""Typed JSON (watcher.codec's value form) rendered by Spark SQL expressions.

Spark parses a staged row into ``map<string, string>``: JSON strings arrive unquoted,
numbers, booleans and arrays as their JSON text. Which of the two a value was follows
from its Spanner type, so a value is turned back into JSON text by type: the kinds whose
typed JSON is not a string (BOOL, FLOAT, ARRAY) are written as they are, the others are
quoted. FLOAT64's ``NaN``/``Infinity``/``-Infinity`` are the strings among floats.
Everything stays in the JVM (no Python UDFs), which keeps the job fast.

Example:
    >>> "transform" in json_object_sql("vals", "column_types")
    True
"""

from __future__ import annotations

#: Spanner type prefixes whose typed JSON is written unquoted (the others are strings).
UNQUOTED_KINDS = ("BOOL", "FLOAT64", "FLOAT32", "ARRAY")
FLOAT_WORDS = ("NaN", "Infinity", "-Infinity")


def quote_sql(text: str) -> str:
    """SQL for ``text`` (an expression) as a JSON string literal."""
    return f"substring(to_json(array({text})), 2, length(to_json(array({text}))) - 2)"


def value_sql(value: str, spanner_type: str) -> str:
    """SQL for the JSON text of one typed-JSON value, given its Spanner type expression."""
    kind = f"upper(coalesce({spanner_type}, 'STRING'))"
    unquoted = " OR ".join(f"startswith({kind}, '{k}')" for k in UNQUOTED_KINDS)
    words = ", ".join(f"'{w}'" for w in FLOAT_WORDS)
    return (f"CASE WHEN {value} IS NULL THEN 'null' "
            f"WHEN ({unquoted}) AND NOT (startswith({kind}, 'FLOAT') AND {value} IN ({words})) THEN {value} "
            f"ELSE {quote_sql(value)} END")


def entries_json_sql(entries: str, key: str = "k", value: str = "v", spanner_type: str = "t") -> str:
    """SQL for a JSON object from an array of structs (name, value text, Spanner type)."""
    item = f"concat({quote_sql('e.' + key)}, ':', {value_sql('e.' + value, 'e.' + spanner_type)})"
    return f"concat('{{', array_join(transform({entries}, e -> {item}), ','), '}}')"


def json_object_sql(values_map: str, types_map: str) -> str:
    """SQL for the JSON object of a whole ``map<column, typed-JSON text>``, in map order."""
    entries = (f"transform(map_entries({values_map}), x -> named_struct('k', x.key, 'v', x.value, "
               f"'t', try_element_at({types_map}, x.key)))")
    return entries_json_sql(entries)


def keys_json_sql(key_columns: str, keys_array: str, types_map: str) -> str:
    """SQL for the primary key as a JSON object {column: value} in key order."""
    entries = (f"transform({key_columns}, (c, i) -> named_struct('k', c, 'v', try_element_at({keys_array}, i + 1), "
               f"'t', try_element_at({types_map}, c)))")
    return entries_json_sql(entries)
