"""The wording of schema-change validation errors (``schema_updater``): call sites pass names and types.

Each function returns the detail text that ``ddl_invalid`` wraps with the statement.

Example:
    >>> ddl_invalid("DROP TABLE Singers", drop_table_with_indexes("Singers", ["SingersByName"])).message
    'Schema change rejected: Cannot drop table Singers: it has indexes (SingersByName); drop them first (statement: DROP TABLE Singers)'
"""

from __future__ import annotations

from collections.abc import Iterable

from .schema import ddl_invalid  # noqa: F401  (used by the doctest above)

SCHEMA_CREATE_DATABASE_IN_UPDATE = (
    "CREATE DATABASE is only allowed as the create statement of CreateDatabase, not in a schema update"
)
SCHEMA_ALTER_DATABASE_IN_UPDATER = (
    "ALTER DATABASE sets database options; the database engine applies it, not the schema updater"
)
#: Why a child's key column does not match its parent's (completed by ``interleave_key_mismatch``).
KEY_DIFFERENT_NAME = "has a different name"
KEY_DIFFERENT_ORDER = "has a different sort order"
KEY_DIFFERENT_NULLABILITY = "has a different nullability"


def key_different_type(mine: object, theirs: object) -> str:
    return f"has type {mine}, not {theirs}"


def invalid_name(kind: str, name: str, max_length: int) -> str:
    return (
        f"Invalid {kind} name {name!r}: names start with a letter, hold only letters, digits and '_', "
        f"and have at most {max_length} characters"
    )


# --- columns ---------------------------------------------------------------------------
def struct_column(where: str, type_: object) -> str:
    return f"Column {where} has type {type_}: STRUCT columns are not allowed"


def commit_timestamp_option_type(where: str, type_: object) -> str:
    return f"Column {where} has type {type_}: allow_commit_timestamp is only allowed on TIMESTAMP columns"


def generated_unknown_reference(where: str, ref: str) -> str:
    return f"Generated column {where} references unknown column {ref}"


def generated_references_itself(where: str) -> str:
    return f"Generated column {where} cannot reference itself"


def default_references_column(where: str, ref: str) -> str:
    return f"The DEFAULT of column {where} cannot reference column {ref}"


def duplicate_column(where: str) -> str:
    return f"Duplicate column name {where}"


def too_many_columns(table: str, count: int, limit: int) -> str:
    return f"Table {table} has {count} columns; at most {limit} are allowed"


def columns_full(table: str, limit: int) -> str:
    return f"Table {table} already has {limit} columns"


def not_null_without_default(where: str) -> str:
    return f"Cannot add NOT NULL column {where} to an existing table without a DEFAULT"


def drop_key_column(where: str) -> str:
    return f"Cannot drop key column {where}"


def drop_column_used_by_index(where: str, index: str) -> str:
    return f"Cannot drop column {where}: index {index} uses it"


def drop_column_used_by_generated(where: str, column: str) -> str:
    return f"Cannot drop column {where}: generated column {column} uses it"


def generated_with_default(where: str) -> str:
    return f"Column {where} is generated, so it cannot have a DEFAULT"


def alter_generated_column(where: str) -> str:
    return f"Column {where} is generated; drop and add it to change it"


def column_type_change(where: str, old: object, new: object) -> str:
    return f"Cannot change the type of column {where} from {old} to {new}"


def key_column_change(where: str) -> str:
    return f"Cannot change the type or nullability of key column {where}"


# --- keys --------------------------------------------------------------------------------
def primary_key_subject(table: str) -> str:
    """The subject of the key errors below for a table's primary key."""
    return f"The primary key of table {table}"


def index_subject(index: str) -> str:
    return f"Index {index}"


def key_unknown_column(subject: str, column: str, table: str) -> str:
    return f"{subject} names column {column}, which table {table} does not have"


def key_column_twice(subject: str, where: str) -> str:
    return f"{subject} names column {where} twice"


def key_column_not_keyable(subject: str, where: str, type_: object) -> str:
    return f"{subject} cannot use column {where} of type {type_} as a key"


def too_many_key_columns(subject: str, count: int, limit: int) -> str:
    return f"{subject} has {count} key columns; at most {limit} are allowed"


# --- tables and interleaving -----------------------------------------------------------------
def interleave_too_deep(table: str, depth: int, limit: int) -> str:
    return f"Table {table} would be interleaved {depth} levels deep; at most {limit} are allowed"


def interleave_key_prefix(table: str, parent: str, parent_key: Iterable[str]) -> str:
    return (
        f"Table {table} is interleaved in {parent}, so its primary key must start with "
        f"{parent}'s key ({', '.join(parent_key)})"
    )


def interleave_key_mismatch(column: str, problem: str, parent_column: str) -> str:
    """``column`` and ``parent_column`` qualified (``Table.Column``); ``problem`` a ``KEY_*`` text."""
    return (
        f"Key column {column} {problem} than parent key column {parent_column}: "
        f"an interleaved table's key must start with its parent's key"
    )


def drop_table_with_indexes(table: str, indexes: Iterable[str]) -> str:
    return f"Cannot drop table {table}: it has indexes ({', '.join(indexes)}); drop them first"


def drop_table_with_children(table: str, child: str) -> str:
    return f"Cannot drop table {table}: table {child} is interleaved in it"


# --- indexes ---------------------------------------------------------------------------------
def index_without_key(index: str) -> str:
    return f"Index {index} needs at least one key column"


def index_stores_unknown_column(index: str, column: str, table: str) -> str:
    return f"Index {index} stores column {column}, which table {table} does not have"


def index_stores_key_column(index: str, where: str) -> str:
    return f"Index {index} cannot store key column {where}: it is in the index already"


def index_stores_column_twice(index: str, where: str) -> str:
    return f"Index {index} stores column {where} twice"


def index_interleave_not_ancestor(index: str, table: str, parent: str) -> str:
    return f"Index {index} on {table} cannot be interleaved in {parent}: it is not {table} or one of its ancestors"


def index_interleave_key_prefix(index: str, parent: str, parent_key: Iterable[str]) -> str:
    return f"Index {index} is interleaved in {parent}, so its key must start with {parent}'s key ({', '.join(parent_key)})"
