"""Typed JSON (watcher.codec's value form) in Spark SQL expressions.

The job keeps a staged row's JSON text as it was staged (Spark reads a JSON object or
array into a STRING column as its compact text), so ``new_values`` and single-column
``keys`` need no rendering. Where single values must be rendered again (old values, keys
of several columns), a value parsed into ``map<string, string>`` is turned back into
JSON text by its Spanner type: JSON strings arrive unquoted, numbers, booleans and arrays
as their JSON text, so the kinds whose typed JSON is not a string (BOOL, FLOAT, ARRAY) are
written as they are, the others are quoted. FLOAT64's ``NaN``/``Infinity``/``-Infinity``
are the strings among floats. Everything stays in the JVM (no Python UDFs).

The same rule in Python, for the driver engine and the Kafka sink (:func:`value_json`,
:func:`keys_json`), sits beside each SQL rendering it must equal.

Example:
    >>> "transform" in json_object_sql("vals", "column_types")
    True
    >>> staged_keys_sql("key_columns", "keys", "types").startswith("CASE WHEN size(key_columns) = 1")
    True
    >>> keys_json(["Id", "On"], ["7", "true"], '["7",true]', {"Id": "INT64", "On": "BOOL"})
    '{"Id":"7","On":true}'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..input.spark_json import quoted

#: Spanner type prefixes whose typed JSON is written unquoted (the others are strings).
UNQUOTED_KINDS = ("BOOL", "FLOAT64", "FLOAT32", "ARRAY")
FLOAT_WORDS = ("NaN", "Infinity", "-Infinity")
#: A string that JSON must escape (a quote, a backslash or a control character), as a SQL regex literal.
_NEEDS_ESCAPE = "'[\\\\x00-\\\\x1f\"\\\\\\\\]'"


def quote_sql(text: str) -> str:
    """SQL for ``text`` (an expression) as a JSON string literal.

    Most texts need no escaping and are just put in quotes; the others go through Spark's
    JSON writer (the one that wrote the staged text, so both agree on escapes).
    """
    escaped = f"substring(to_json(array({text})), 2, length(to_json(array({text}))) - 2)"
    return f"CASE WHEN {text} RLIKE {_NEEDS_ESCAPE} THEN {escaped} ELSE concat('\"', {text}, '\"') END"


def value_sql(value: str, spanner_type: str) -> str:
    """SQL for the JSON text of one typed-JSON value, given its Spanner type expression."""
    kind = f"upper(coalesce({spanner_type}, 'STRING'))"
    unquoted = " OR ".join(f"startswith({kind}, '{k}')" for k in UNQUOTED_KINDS)
    words = ", ".join(f"'{w}'" for w in FLOAT_WORDS)
    return (f"CASE WHEN {value} IS NULL THEN 'null' "
            f"WHEN ({unquoted}) AND NOT (startswith({kind}, 'FLOAT') AND {value} IN ({words})) THEN {value} "
            f"ELSE {quote_sql(value)} END")


def value_json(value: str | None, spanner_type: str | None) -> str:
    """The JSON text of one typed-JSON value as :func:`value_sql` renders it (``value`` as Spark's
    ``map<string, string>`` holds it; ``spanner_type`` ASCII, as the driver's readers check).

    >>> value_json("1.5", "FLOAT64"), value_json("NaN", "FLOAT64"), value_json("7", "int64"), value_json(None, "BOOL")
    ('1.5', '"NaN"', '"7"', 'null')
    """
    if value is None:
        return "null"
    kind = (spanner_type or "STRING").upper()
    if kind.startswith(UNQUOTED_KINDS) and not (kind.startswith("FLOAT") and value in FLOAT_WORDS):
        return value
    return quoted(value)


def entries_json_sql(entries: str, key: str = "k", value: str = "v", spanner_type: str = "t") -> str:
    """SQL for a JSON object from an array of structs (name, value text, Spanner type)."""
    item = f"concat({quote_sql('e.' + key)}, ':', {value_sql('e.' + value, 'e.' + spanner_type)})"
    return f"concat('{{', array_join(transform({entries}, e -> {item}), ','), '}}')"


def columns_json_sql(columns: str, values_map: str, types_map: str) -> str:
    """SQL for the JSON object of the ``columns`` (an array of names) of a row, values from ``values_map``.

    ``values_map`` and ``types_map`` should be columns, not expressions: the lambda reads them once per column.
    """
    item = (f"concat({quote_sql('c')}, ':', "
            f"{value_sql(f'try_element_at({values_map}, c)', f'try_element_at({types_map}, c)')})")
    return f"concat('{{', array_join(transform({columns}, c -> {item}), ','), '}}')"


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


def staged_keys_sql(key_columns: str, keys_text: str, types_text: str) -> str:
    """SQL for the primary key as a JSON object, from the staged key array's JSON text.

    A single-column key (the common case) is the array's one element as staged, with its
    column name; keys of several columns are split and rendered by type (:func:`keys_json_sql`).
    ``types_text`` is the staged ``types`` object as JSON text.
    """
    element = f"substring({keys_text}, 2, length({keys_text}) - 2)"
    single = f"concat('{{', {quote_sql(f'{key_columns}[0]')}, ':', {element}, '}}')"
    several = keys_json_sql(key_columns, f"from_json({keys_text}, 'array<string>')",
                            f"from_json({types_text}, 'map<string,string>')")
    return f"CASE WHEN size({key_columns}) = 1 THEN {single} ELSE {several} END"


def keys_json(key_columns: Sequence[str], elements: Sequence[str | None], keys_text: str,
              types: Mapping[str, str | None]) -> str:
    """The primary key as a JSON object text, as :func:`staged_keys_sql` renders it: ``elements`` are the
    staged key array's elements as ``from_json(..., 'array<string>')`` gives them, ``keys_text`` its JSON text.

    >>> keys_json(["Id"], [], '["7"]', {})
    '{"Id":"7"}'
    """
    if len(key_columns) == 1:
        return "{" + quoted(key_columns[0]) + ":" + keys_text[1:-1] + "}"
    return "{" + ",".join(quoted(column) + ":" + value_json(elements[i] if i < len(elements) else None, types.get(column))
                          for i, column in enumerate(key_columns)) + "}"
