"""The wording of SQL translation errors: call sites in ``sql/`` pass names and types, not prose.

Each function returns the detail text that ``sql_invalid`` / ``sql_unsupported`` /
``sql_syntax_error`` wrap with the statement; ``SQL_*`` constants are fixed details.
``feature_*`` texts name what the local server does not support.

Example:
    >>> sql_invalid("SELECT 1 UNION ALL SELECT 1, 2", set_op_column_count("UNION ALL", 1, 2)).message
    'Queries in UNION ALL have mismatched column count: 1 and 2 [in statement: SELECT 1 UNION ALL SELECT 1, 2]'
    >>> sql_unsupported("SELECT ...", feature_join("NATURAL")).code.name
    'UNIMPLEMENTED'
"""

from __future__ import annotations

from collections.abc import Iterable

from .data import sql_invalid, sql_unsupported  # noqa: F401  (used by the doctest above)

# --- fixed details --------------------------------------------------------------------
SQL_ONE_STATEMENT = "expected exactly one statement"
SQL_ONE_SCALAR_EXPRESSION = "expected one scalar expression"
SQL_EXPECTED_QUERY = "Expected a query (SELECT); use ExecuteSql with a DML statement for INSERT/UPDATE/DELETE"
SQL_WITH_RECURSIVE = "WITH RECURSIVE"
SQL_STAR_EXCEPT_REPLACE = "SELECT * EXCEPT / REPLACE"
SQL_STAR_WITHOUT_FROM = "SELECT * must have a FROM clause"
SQL_ORDER_BY_AFTER_SET_OP = "ORDER BY expressions that are not output columns after a set operation"
SQL_JOIN_WITHOUT_FROM = "JOIN without FROM"
SQL_UNNEST_SEVERAL_ARRAYS = "UNNEST of several arrays"
SQL_SCALAR_SUBQUERY_COLUMNS = "Scalar subquery must have exactly one output column"
SQL_ARRAY_SUBQUERY_COLUMNS = "ARRAY subquery must have exactly one output column"
SQL_IN_SUBQUERY_COLUMNS = "Subquery of IN must have only one output column"
SQL_ARRAY_AGG_NEEDS_ARGUMENT = "ARRAY_AGG needs an argument"
SQL_DML_TARGET = "this DML target"
SQL_PENDING_COMMIT_TIMESTAMP_ARGS = "PENDING_COMMIT_TIMESTAMP() takes no arguments"
SQL_INSERT_NEEDS_COLUMNS = "INSERT needs a column list: INSERT INTO Table (col1, col2, ...) ..."
SQL_UPDATE_FROM = "UPDATE ... FROM"
SQL_THEN_RETURN_AGGREGATES = "THEN RETURN may not contain aggregates or subqueries"


# --- features the local server does not support ---------------------------------------
def feature_statements(kind: str) -> str:
    return f"{kind} statements"


def feature_select_as(kind: str) -> str:
    return f"SELECT AS {kind}"


def feature_all(keyword: str) -> str:
    return f"{keyword} ALL"


def feature_join(kind: object) -> str:
    return f"{kind} JOIN"


def feature_in_from(kind: str) -> str:
    return f"{kind} in FROM"


def feature_from_item(sql: str) -> str:
    return f"the FROM item {sql}"


def feature_spanner_sys(schema: object, name: object) -> str:
    return f"SPANNER_SYS tables ({schema}.{name})"


def feature_expressions(kind: str, sql: str) -> str:
    return f"{kind} expressions ({sql})"


def feature_path(sql: str) -> str:
    return f"the path {sql}"


def feature_function(name: str) -> str:
    return f"the function {name}"


def feature_sha2_length(length: object) -> str:
    return f"SHA2 with length {length}"


def feature_timestamp_units(digits: object) -> str:
    return f"timestamps from units of 10^-{digits} seconds"


def feature_subscripts(type_: object) -> str:
    return f"subscripts on {type_}"


def feature_node(kind: str, sql: str) -> str:
    return f"{kind} ({sql})"


def feature_type(sql: str) -> str:
    return f"the type {sql}"


def feature_is(sql: str) -> str:
    return f"IS {sql}"


# --- queries ----------------------------------------------------------------------------
def limit_not_int64(type_: object) -> str:
    return f"LIMIT and OFFSET expect INT64, got {type_}"


def set_op_column_count(op: str, left: int, right: int) -> str:
    return f"Queries in {op} have mismatched column count: {left} and {right}"


def set_op_incompatible_column(column: str | None, op: str, reason: object) -> str:
    return f"Column {column or '(unnamed)'} in {op} has incompatible types: {reason}"


def join_needs_condition(side: str) -> str:
    return f"{side} JOIN needs an ON or USING clause"


def view_reads_itself(view: str) -> str:
    return f"View {view} reads itself"


def unnest_not_array(type_: object) -> str:
    return f"Values referenced in UNNEST must be arrays, got {type_}"


def unrecognized_name(name: str) -> str:
    return f"Unrecognized name: {name}"


# --- expressions, literals and types ------------------------------------------------------
def invalid_integer_literal(text: str) -> str:
    return f"Invalid integer literal: {text}"


def invalid_literal(text: str) -> str:
    return f"Invalid literal: {text}"


def numeric_literal_coercion(literal: object, reason: object) -> str:
    return f"Could not coerce literal {literal!r} to type NUMERIC: {reason}"


def literal_cast_failed(sql: str, target: object, reason: object) -> str:
    return f"Could not cast literal {sql} to type {target}: {reason}"


def invalid_cast(source: object, target: object) -> str:
    return f"Invalid cast from {source} to {target}"


def expects_bool(what: str, type_: object) -> str:
    return f"{what} expects BOOL, got {type_}"


def operator_signature(op: str, left: object, right: object) -> str:
    return f"No matching signature for operator {op} for argument types: {left}, {right}"


#: GoogleSQL's name of a comparison in "... is not defined for arguments of type": IN compares by equality,
#: and every ordering is checked as "Less than".
_COMPARISON_NAMES = {"=": "Equality", "IS": "Equality", "IN": "Equality", "NOT IN": "Equality",
                     "!=": "Inequality", "IS NOT": "Inequality"}


def comparison_undefined(op: str, type_: object) -> str:
    """The detail for a comparison of a type without equality or order (JSON).

    >>> comparison_undefined("<", "JSON")
    'Less than is not defined for arguments of type JSON'
    """
    return f"{_COMPARISON_NAMES.get(op, 'Less than')} is not defined for arguments of type {type_}"


def in_unnest_signature(subject: object, array: object) -> str:
    return f"No matching signature for operator IN UNNEST for argument types: {subject}, {array}"


def in_signature(subject: object, item: object) -> str:
    return f"No matching signature for operator IN for argument types: {subject}, {item}"


def negation_signature(type_: object) -> str:
    return f"No matching signature for operator - for argument type: {type_}"


def concat_signature(types: Iterable[object]) -> str:
    return f"No matching signature for CONCAT / || for argument types: {', '.join(str(t) for t in types)}"


def function_arity(function: str, count: int, expected: str) -> str:
    return f"No matching signature for function {function} for {count} argument(s); it takes {expected}"


def function_signature(function: str, types: Iterable[object]) -> str:
    return f"No matching signature for function {function} for argument types: {', '.join(str(t) for t in types)}"


def function_argument_constant(function: str, argument: str) -> str:
    return f"The {argument} of {function} must be a constant"


def date_signature(type_: object) -> str:
    return f"No matching signature for function DATE for argument type {type_}"


def no_common_supertype(what: str, reason: object) -> str:
    return f"No common supertype for {what}: {reason}"


def not_deterministic(function: str) -> str:
    return f"{function} is not deterministic and cannot be used here"


def struct_field_count(struct: object, fields: int, values: int) -> str:
    return f"STRUCT type {struct} has {fields} fields but {values} values were given"


def struct_field_type(field: str | None, struct: object, expected: object, got: object) -> str:
    return f"Field {field or '(anonymous)'} of {struct} expects {expected}, got {got}"


def field_access_on_non_struct(field: str, type_: object, sql: str) -> str:
    return f"Cannot access field {field} on a value of type {type_}: {sql}"


def field_not_found(field: str, struct: object) -> str:
    return f"Field name {field} does not exist in {struct}"


def field_ambiguous(field: str, struct: object) -> str:
    return f"Field name {field} is ambiguous in {struct}"


# --- DML ------------------------------------------------------------------------------------
def cannot_modify(schema: object, name: object) -> str:
    return f"Cannot modify {schema}.{name}"


def column_not_in_table(column: str, table: str) -> str:
    return f"Column {column} is not present in table {table}"


def key_column_not_writable(column: str) -> str:
    return f"Cannot UPDATE value on non-writable column: {column} (a primary key column)"


def value_not_assignable(type_: object, column: str, table: str, column_type: object) -> str:
    return f"Value has type {type_} which cannot be assigned to column {column} of table {table}, which has type {column_type}"


def insert_duplicate_column(column: str) -> str:
    return f"INSERT has columns with duplicate name: {column}"


def insert_column_count(has: int, expected: int) -> str:
    return f"Inserted row has wrong column count; has {has}, expected {expected}"


def dml_needs_where(verb: str) -> str:
    return f"{verb} must have a WHERE clause (use WHERE true to change every row)"


def invalid_set_item(sql: str) -> str:
    return f"Invalid SET item: {sql}"


def invalid_then_return(sql: str) -> str:
    return f"Invalid THEN RETURN clause: {sql}"


# --- name resolution (sql/scope.py) ---------------------------------------------------------
def ambiguous_column(name: str) -> str:
    return f"Column name {name} is ambiguous"


def name_not_found_inside(name: str, qualifier: str) -> str:
    return f"Name {name} not found inside {qualifier}"
