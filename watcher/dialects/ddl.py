"""The DDL the schema helpers print (:mod:`watcher.schema_tools.ddl`), in both dialects, as data.

The helpers keep one vocabulary of column types (GoogleSQL's names, as :mod:`.types` does) and one
shape of statement; what a dialect spells differently is looked up here by the dialect's name.

| | GoogleSQL | PostgreSQL |
|---|---|---|
| commit-timestamp column | ``TIMESTAMP OPTIONS (allow_commit_timestamp=true)`` | ``spanner.commit_timestamp`` |
| make one of a TIMESTAMP column | ``SET OPTIONS (allow_commit_timestamp=true)`` | ``TYPE spanner.commit_timestamp`` |
| generated column | ``INT64 AS (e) STORED`` | ``bigint GENERATED ALWAYS AS (e) STORED`` |
| fingerprint | ``FARM_FINGERPRINT(x)`` | ``spanner.farm_fingerprint(x)`` |
| a value as text | ``CAST(x AS STRING)`` | ``CAST(x AS varchar)`` |
| NULL-filtered index | ``CREATE NULL_FILTERED INDEX i ON t (a, b)`` | ``CREATE INDEX i ON t (a, b) WHERE a IS NOT NULL AND b IS NOT NULL`` |
| stored index columns | ``STORING (c)`` | ``INCLUDE (c)`` |
| primary key | after the column list | the list's last entry |
| change stream options | ``OPTIONS (...)`` | ``WITH (...)`` |
| string literal | ``'it\\'s'`` | ``'it''s'`` |

Example:
    >>> commit_timestamp_definition(POSTGRESQL, "LastUpdated", not_null=False)
    '"LastUpdated" spanner.commit_timestamp'
    >>> DDL_SQL[POSTGRESQL.name].fingerprint.format("x")
    'spanner.farm_fingerprint(x)'
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import DdlError
from .base import GOOGLE_SQL, POSTGRESQL, Dialect
from .types import ddl_type


@dataclass(frozen=True)
class DdlSql:
    """One dialect's spellings; every ``{name}`` is filled with quoted names or finished clauses."""

    #: A commit-timestamp column: ``{name}``, ``{not_null}`` (`` NOT NULL`` or ``""``).
    commit_timestamp_column: str
    #: ALTER TABLE text turning ``{column}`` of ``{table}`` into a commit-timestamp column, and back.
    set_commit_timestamp: str
    clear_commit_timestamp: str
    #: A stored generated column: ``{name}``, ``{type}``, ``{expression}``.
    generated_column: str
    #: The fingerprint function around ``{}``.
    fingerprint: str
    #: How a source column of each GoogleSQL type becomes text to fingerprint (``{}`` is the column).
    as_text: Mapping[str, str]
    #: CREATE TABLE: ``{exists}``, ``{table}``, ``{columns}`` (each ``  col,\\n``), ``{key}``.
    create_table: str
    #: The word between CREATE and INDEX of a NULL-filtered index, and the clause after the key it needs.
    null_filtered_kind: str
    null_filter: str
    #: The keyword before the stored columns of an index.
    storing: str
    #: A change stream's options clause around ``{}``.
    change_stream_options: str
    #: What escapes each character of a string literal that needs it.
    literal_escapes: Mapping[str, str]


_CAST_TO_TEXT = {"GoogleSQL": "CAST({} AS STRING)", "PostgreSQL": "CAST({} AS varchar)"}

DDL_SQL: dict[str, DdlSql] = {
    GOOGLE_SQL.name: DdlSql(
        commit_timestamp_column="{name} TIMESTAMP{not_null} OPTIONS (allow_commit_timestamp=true)",
        set_commit_timestamp="ALTER TABLE {table} ALTER COLUMN {column} SET OPTIONS (allow_commit_timestamp=true)",
        clear_commit_timestamp="ALTER TABLE {table} ALTER COLUMN {column} SET OPTIONS (allow_commit_timestamp=null)",
        generated_column="{name} {type} AS ({expression}) STORED",
        fingerprint="FARM_FINGERPRINT({})",
        as_text={"STRING": "{}", "BYTES": "TO_BASE64({})", "INT64": _CAST_TO_TEXT["GoogleSQL"],
                 "BOOL": _CAST_TO_TEXT["GoogleSQL"], "DATE": _CAST_TO_TEXT["GoogleSQL"]},
        create_table="CREATE TABLE {exists}{table} (\n{columns}) PRIMARY KEY ({key})",
        null_filtered_kind="NULL_FILTERED ",
        null_filter="",
        storing="STORING",
        change_stream_options="OPTIONS ({})",
        literal_escapes={"\\": "\\\\", "'": "\\'"},
    ),
    POSTGRESQL.name: DdlSql(
        commit_timestamp_column="{name} spanner.commit_timestamp{not_null}",
        set_commit_timestamp="ALTER TABLE {table} ALTER COLUMN {column} TYPE spanner.commit_timestamp",
        clear_commit_timestamp="ALTER TABLE {table} ALTER COLUMN {column} TYPE timestamptz",
        generated_column="{name} {type} GENERATED ALWAYS AS ({expression}) STORED",
        fingerprint="spanner.farm_fingerprint({})",
        # No BYTES: Spanner's PostgreSQL interface has no base64 text function a generated column may use.
        as_text={"STRING": "{}", "INT64": _CAST_TO_TEXT["PostgreSQL"], "BOOL": _CAST_TO_TEXT["PostgreSQL"],
                 "DATE": _CAST_TO_TEXT["PostgreSQL"]},
        create_table="CREATE TABLE {exists}{table} (\n{columns}  PRIMARY KEY ({key})\n)",
        null_filtered_kind="",
        null_filter=" WHERE {}",
        storing="INCLUDE",
        change_stream_options="WITH ({})",
        literal_escapes={"'": "''"},
    ),
}

#: GoogleSQL types whose length each dialect's DDL type adds back (GoogleSQL's names keep theirs;
#: PostgreSQL's ``varchar(200)`` does, ``bytea`` takes none).
_SIZED: dict[str, frozenset[str]] = {GOOGLE_SQL.name: frozenset(), POSTGRESQL.name: frozenset({"STRING"})}


def column_definition_type(dialect: Dialect, google: str) -> str:
    """A column's type, given by its GoogleSQL name, as ``dialect``'s CREATE TABLE writes it (lengths kept
    where the dialect has them).

    >>> column_definition_type(GOOGLE_SQL, "STRING(200)"), column_definition_type(POSTGRESQL, "STRING(200)")
    ('STRING(200)', 'varchar(200)')
    >>> column_definition_type(POSTGRESQL, "ARRAY<STRING(MAX)>"), column_definition_type(POSTGRESQL, "BYTES(10)")
    ('varchar[]', 'bytea')
    """
    written = ddl_type(dialect, google)
    element = google.strip().upper().removeprefix("ARRAY<").removesuffix(">")
    name, _, length = element.partition("(")
    length = length.rstrip(")").strip()
    if name.strip() in _SIZED[dialect.name] and length.isdigit():
        array = written.endswith("[]")
        return f"{written.removesuffix('[]')}({length})" + ("[]" if array else "")
    return written


#: PostgreSQL column type names a user may write -> the GoogleSQL names the helpers speak.
_FROM_POSTGRESQL = {
    "bigint": "INT64", "int8": "INT64", "boolean": "BOOL", "bool": "BOOL", "double precision": "FLOAT64",
    "float8": "FLOAT64", "real": "FLOAT32", "float4": "FLOAT32", "varchar": "STRING", "character varying": "STRING",
    "text": "STRING", "bytea": "BYTES", "numeric": "NUMERIC", "date": "DATE", "timestamptz": "TIMESTAMP",
    "timestamp with time zone": "TIMESTAMP", "jsonb": "JSON",
}
_PG_TYPE = re.compile(r"^\s*(?P<name>[a-z][a-z0-9 ]*?)\s*(?:\(\s*(?P<length>[1-9][0-9]{0,6})\s*\))?\s*(?P<array>\[\])?\s*$")


def google_type_name(text: str) -> str | None:
    """A column type written the PostgreSQL way as its GoogleSQL name; None for anything else.

    >>> google_type_name("varchar(200)"), google_type_name("bigint[]"), google_type_name("bytea")
    ('STRING(200)', 'ARRAY<INT64>', 'BYTES(MAX)')
    >>> google_type_name("INT64") is None, google_type_name("varchar(200); DROP") is None
    (True, True)
    """
    found = _PG_TYPE.match(text.lower()) if isinstance(text, str) else None
    name = _FROM_POSTGRESQL.get(found.group("name")) if found else None
    if found is None or name is None:
        return None
    if name in ("STRING", "BYTES"):
        name = f"{name}({found.group('length') or 'MAX'})"
    elif found.group("length"):
        return None
    return f"ARRAY<{name}>" if found.group("array") else name


def commit_timestamp_definition(dialect: Dialect, name: str, *, not_null: bool) -> str:
    """A commit-timestamp column's definition.

    >>> commit_timestamp_definition(GOOGLE_SQL, "Ts", not_null=True)
    '`Ts` TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true)'
    """
    return DDL_SQL[dialect.name].commit_timestamp_column.format(name=dialect.quote(name, "column"),
                                                                not_null=" NOT NULL" if not_null else "")


def string_literal(dialect: Dialect, text: str) -> str:
    """A string literal of ``dialect`` holding exactly ``text`` (control characters refused).

    >>> string_literal(GOOGLE_SQL, "it's"), string_literal(POSTGRESQL, "it's")
    ("'it\\\\'s'", "'it''s'")
    """
    if not isinstance(text, str) or any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise DdlError(f"invalid literal {text!r}: control characters are not allowed")
    escapes = DDL_SQL[dialect.name].literal_escapes
    return "'" + "".join(escapes.get(c, c) for c in text) + "'"


def as_text(dialect: Dialect, source_type: str, column_sql: str, column: str) -> str:
    """The text ``dialect`` fingerprints for source column ``column`` (quoted: ``column_sql``) of ``source_type``.

    >>> as_text(POSTGRESQL, "INT64", '"Id"', "Id")
    'CAST("Id" AS varchar)'
    >>> as_text(POSTGRESQL, "BYTES", '"Pic"', "Pic")
    Traceback (most recent call last):
    ...
    watcher.errors.DdlError: shard source column Pic is BYTES: in a PostgreSQL database a shard can be computed from BOOL, DATE, INT64, STRING columns
    """
    forms = DDL_SQL[dialect.name].as_text
    if source_type not in forms:
        raise DdlError(f"shard source column {column} is {source_type}: in a {dialect.name} database a shard can be "
                       f"computed from {', '.join(sorted(forms))} columns")
    return forms[source_type].format(column_sql)


def null_filtered_index(dialect: Dialect, *, exists: str, name: str, table: str, columns: Sequence[str],
                        storing: Sequence[str]) -> str:
    """CREATE INDEX that leaves out rows with a NULL in any of ``columns`` (all names quoted already).

    >>> null_filtered_index(POSTGRESQL, exists="", name='"I"', table='"T"', columns=['"A"', '"B"'], storing=['"C"'])
    'CREATE INDEX "I" ON "T" ("A", "B") INCLUDE ("C") WHERE "A" IS NOT NULL AND "B" IS NOT NULL'
    >>> null_filtered_index(GOOGLE_SQL, exists="", name="`I`", table="`T`", columns=["`A`"], storing=[])
    'CREATE NULL_FILTERED INDEX `I` ON `T` (`A`)'
    """
    sql = DDL_SQL[dialect.name]
    conditions = " AND ".join(f"{c} IS NOT NULL" for c in columns)
    return index(dialect, kind=sql.null_filtered_kind, exists=exists, name=name, table=table, columns=columns,
                 storing=storing) + sql.null_filter.format(conditions)


def index(dialect: Dialect, *, kind: str = "", exists: str, name: str, table: str, columns: Sequence[str],
          storing: Sequence[str]) -> str:
    """CREATE ``kind``INDEX over ``columns``, storing ``storing`` (names quoted already).

    >>> index(POSTGRESQL, exists="IF NOT EXISTS ", name='"I"', table='"T"', columns=['"A"'], storing=[])
    'CREATE INDEX IF NOT EXISTS "I" ON "T" ("A")'
    """
    text = f"CREATE {kind}INDEX {exists}{name} ON {table} ({', '.join(columns)})"
    if storing:
        text += f" {DDL_SQL[dialect.name].storing} ({', '.join(storing)})"
    return text
