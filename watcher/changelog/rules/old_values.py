"""Old values (value_capture_type OLD_AND_NEW_VALUES): what a change replaced.

* UPDATE: the previous values of the columns whose value changed, keyed by column. Only
  columns present in both rows compare: a column added to the table since the previous
  row has no previous value, and one dropped since has no new value (the rows' own
  ``column_types`` tell which columns each was read with), so neither is an old value;
* DELETE: the whole previous row (when the key was live before), as it was staged;
* INSERT, UPSERT: ``{}``.

``new_values`` is always the full row after the change (for a DELETE: the row as last
staged, e.g. with its soft-delete flag set). Values compare by their typed-JSON text,
which is exact for every Spanner type.

How, in Spark SQL without per-column lambdas: a row's JSON text (compact, as Spark's JSON
reader copied it) is split into its ``"column":value`` entries by one regular expression
(:data:`ENTRY_PATTERN`; the split is checked by joining the entries back). When the
previous row has the same columns, an update's old values are the previous row's entries
that the new row does not have (a set difference in generated code), joined as they are.
Otherwise (columns added or dropped, or text the split does not reproduce) the rows are
parsed into maps and compared column by column, values rendered by type.

Where the session has the package's JVM function (:mod:`watcher.changelog.spark.jvm`), the fast path
is that function over the two rows' texts (:func:`jvm_fast_sql`): the same split, the same
difference, the same text, without carrying every row's entries through the window.

Example:
    >>> "array_except" in old_values_sql()
    True
"""

from __future__ import annotations

from .classify import sql_literal
from .typed_json import columns_json_sql

_STRING = r'"(?:[^"\\]|\\.)*+"'
#: One ``"column":value`` entry of a compact JSON object whose values are strings, scalars or flat arrays.
ENTRY_PATTERN = _STRING + r':(?:' + _STRING + r'|\[(?:[^\[\]"]|' + _STRING + r')*+\]|[^,{}\[\]":]++)'

#: The columns of both rows whose value differs (null-safe), in the previous row's order.
_CHANGED = ("filter(coalesce(map_keys(_prev_vals), array()), "
            "c -> map_contains_key(_vals, c) AND NOT (try_element_at(_prev_vals, c) <=> try_element_at(_vals, c)))")


def entries_sql(row_json: str) -> str:
    """SQL: the ``"column":value`` entries of a row's JSON object text, as an array of texts."""
    return f"regexp_extract_all({row_json}, {sql_literal(ENTRY_PATTERN)}, 0)"


def entries_ok_sql(entries: str, row_json: str) -> str:
    """SQL: the entries give back the row's text exactly (so the split is to be trusted)."""
    return f"concat('{{', array_join({entries}, ','), '}}') = {row_json}"


def entry_name_sql(entry: str) -> str:
    """SQL: an entry's column name, its opening quote kept, its closing one dropped: the text up
    to the first ``":`` after the opening quote (so a name may start with a colon).

    A name holding an escaped quote could end there too early, so only names without a
    backslash are to be trusted (:func:`trusted_names_sql`).

    >>> print(entry_name_sql("e"))
    concat('"', substring_index(substr(e, 2), '":', 1))
    """
    return f"concat('\"', substring_index(substr({entry}, 2), '\":', 1))"


def column_names_sql(entries: str) -> str:
    """SQL: the names of a row's columns in order (:func:`entry_name_sql`), joined into one text, from its entries."""
    return f"array_join(transform({entries}, e -> {entry_name_sql('e')}), ',')"


def trusted_names_sql(names: str) -> str:
    """SQL: ``names`` when no name holds a backslash, else null (such rows take the exact, slower path)."""
    return f"CASE WHEN instr({names}, '\\\\') = 0 THEN {names} END"


#: The previous row's entries that the new row does not have: its changed values when both rows have the same columns.
_CHANGED_ENTRIES = "array_except(_prev_entries, _entries)"
#: Both rows split exactly and have the same columns.
SAME_COLUMNS_SQL = "(_entries_ok AND _prev_entries_ok AND _columns = _prev_columns)"


#: An update's old values on the fast path, from the entries columns.
FAST_SQL = f"concat('{{', array_join({_CHANGED_ENTRIES}, ','), '}}')"


def jvm_fast_sql(function: str) -> str:
    """SQL: the JVM function ``function``'s old values of an update, null where the rows do not
    take the fast path (so that it also says whether they do).

    >>> jvm_fast_sql("f")
    'f(_prev_json, _json)'
    """
    return f"{function}(_prev_json, _json)"


def old_values_sql(fast: str = "_fast", fast_values: str = FAST_SQL) -> str:
    """SQL for old_values over the per-key window columns.

    Reads mod_type, _prev_json, _prev_deleted, ``fast`` (for updates: whether they take the fast
    path, by default :data:`SAME_COLUMNS_SQL` computed as _fast), ``fast_values`` (their old
    values then, by default from _prev_entries/_entries) and, when not fast, the maps
    _prev_vals/_vals/_types.
    """
    return (f"CASE WHEN mod_type = 'UPDATE' AND _prev_json IS NOT NULL THEN "
            f"CASE WHEN {fast} THEN {fast_values} "
            f"ELSE {columns_json_sql(_CHANGED, '_prev_vals', '_types')} END "
            f"WHEN mod_type = 'DELETE' AND _prev_json IS NOT NULL AND NOT _prev_deleted THEN _prev_json "
            f"ELSE '{{}}' END")
