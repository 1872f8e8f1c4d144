"""Spanner's two SQL dialects and what differs between them, as data.

A database is created in GoogleSQL (``GOOGLE_STANDARD_SQL``) or PostgreSQL
(``POSTGRESQL``) and keeps its dialect for life. Inside the server everything is
GoogleSQL: a PostgreSQL database's DDL is parsed into the same nodes (``ddl/pg_parser.py``),
its queries are rewritten into GoogleSQL text (``postgresql.py``), and only what a
client sees back (GetDatabaseDdl, INFORMATION_SCHEMA) is spelled the PostgreSQL way.

:data:`TYPES` is the one type table: a GoogleSQL type code, its PostgreSQL spelling in DDL
(and GetDatabaseDdl), the other names PostgreSQL accepts for it, and what
``information_schema.columns.data_type`` says.

Example:
    >>> [str(pg_type(t)) for t in ("varchar(20)", "int8[]", "timestamptz")]
    ['STRING(20)', 'ARRAY<INT64>', 'TIMESTAMP']
    >>> pg_type_text(T.array_of(T.STRING)), pg_type_text(T.SpannerType(T.TypeCode.STRING, length=5))
    ('character varying[]', 'character varying(5)')
    >>> pg_identifier("singers"), pg_identifier("SingerId"), pg_identifier("order")
    ('singers', '"SingerId"', '"order"')
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import errors
from ..datamodel import types as T
from ..datamodel.types import SpannerType, TypeCode

GOOGLE_STANDARD_SQL = "GOOGLE_STANDARD_SQL"
POSTGRESQL = "POSTGRESQL"
#: The dialects, by the numbers of google.spanner.admin.database.v1.DatabaseDialect.
BY_NUMBER = {0: GOOGLE_STANDARD_SQL, 1: GOOGLE_STANDARD_SQL, 2: POSTGRESQL}
NUMBER = {GOOGLE_STANDARD_SQL: 1, POSTGRESQL: 2}
#: The database option (and metadata key) that records a database's dialect.
OPTION = "database_dialect"

#: The commit-timestamp column type of PostgreSQL DDL: a timestamptz column that allows commit timestamps.
COMMIT_TIMESTAMP_TYPE = "spanner.commit_timestamp"
#: The schema of a PostgreSQL database's own tables, as INFORMATION_SCHEMA shows it.
PG_SCHEMA = "public"


@dataclass(frozen=True)
class TypeSpelling:
    """One row of :data:`TYPES`."""

    code: TypeCode
    pg_name: str  # as GetDatabaseDdl prints it
    pg_aliases: tuple[str, ...]  # other spellings DDL and casts accept
    data_type: str  # information_schema.columns.data_type


TYPES: tuple[TypeSpelling, ...] = (
    TypeSpelling(TypeCode.BOOL, "boolean", ("bool",), "boolean"),
    TypeSpelling(TypeCode.INT64, "bigint", ("int8", "int", "integer"), "bigint"),
    TypeSpelling(TypeCode.FLOAT64, "double precision", ("float8", "float"), "double precision"),
    TypeSpelling(TypeCode.FLOAT32, "real", ("float4",), "real"),
    TypeSpelling(TypeCode.STRING, "character varying", ("varchar", "text"), "character varying"),
    TypeSpelling(TypeCode.BYTES, "bytea", (), "bytea"),
    TypeSpelling(TypeCode.NUMERIC, "numeric", ("decimal",), "numeric"),
    TypeSpelling(TypeCode.DATE, "date", (), "date"),
    TypeSpelling(TypeCode.TIMESTAMP, "timestamp with time zone", ("timestamptz",), "timestamp with time zone"),
    TypeSpelling(TypeCode.JSON, "jsonb", (), "jsonb"),
)
_BY_CODE = {t.code: t for t in TYPES}
_BY_NAME = {name: t for t in TYPES for name in (t.pg_name, *t.pg_aliases)}
#: Types whose PostgreSQL spelling takes a length: ``character varying(n)``.
_LENGTHS = frozenset({TypeCode.STRING})
_PG_TYPE = re.compile(r"\s*(?P<name>[a-z][a-z0-9_. ]*?)\s*(?:\(\s*(?P<length>\d+)\s*\))?\s*(?P<array>\[\s*\])?\s*\Z")
_PLAIN = re.compile(r"[a-z_][a-z0-9_]*\Z")
#: Words a PostgreSQL name must be double-quoted to use (PostgreSQL's reserved keywords).
PG_RESERVED = frozenset(
    """
    all analyse analyze and any array as asc asymmetric both case cast check collate column constraint create
    current_catalog current_date current_role current_time current_timestamp current_user default deferrable
    desc distinct do else end except false fetch for foreign from grant group having in initially intersect
    into lateral leading limit localtime localtimestamp not null offset on only or order placing primary
    references returning select session_user some symmetric table then to trailing true union unique user
    using variadic when where window with
    """.split()
)


def pg_type(text: str) -> SpannerType:
    """The type a PostgreSQL type name means (``bigint[]``, ``varchar(10)``, ``double precision``).

    >>> str(pg_type("character varying")), str(pg_type("double   precision"))
    ('STRING(MAX)', 'FLOAT64')

    Raises:
        SpannerError: INVALID_ARGUMENT naming the type when PostgreSQL Spanner has no such type.
    """
    m = _PG_TYPE.match(text.lower())
    name = " ".join(m.group("name").split()) if m else ""
    spelling = _BY_NAME.get(name)
    if m is None or spelling is None or (m.group("length") and spelling.code not in _LENGTHS):
        raise errors.pg_unknown_type(text)
    length = int(m.group("length")) if m.group("length") else None
    if length is not None and not 1 <= length <= T.MAX_STRING_LENGTH:
        raise errors.type_length_out_of_range(str(length), text, T.MAX_STRING_LENGTH)
    scalar = SpannerType(spelling.code, length=length) if length is not None else SpannerType(spelling.code)
    return T.array_of(scalar) if m.group("array") else scalar


def pg_type_text(t: SpannerType, *, commit_timestamp: bool = False) -> str:
    """The PostgreSQL spelling of ``t`` (``spanner.commit_timestamp`` for a commit-timestamp column)."""
    if commit_timestamp and t.code == TypeCode.TIMESTAMP:
        return COMMIT_TIMESTAMP_TYPE
    if t.code == TypeCode.ARRAY:
        assert t.element is not None
        return pg_type_text(t.element) + "[]"
    spelling = _BY_CODE.get(t.code)
    if spelling is None:
        raise errors.pg_type_not_in_dialect(str(t))
    return spelling.pg_name + (f"({t.length})" if t.length is not None and t.code in _LENGTHS else "")


def pg_data_type(t: SpannerType) -> str:
    """What ``information_schema.columns.data_type`` says for ``t`` (``ARRAY`` for any array).

    >>> pg_data_type(T.array_of(T.INT64)), pg_data_type(T.TIMESTAMP)
    ('ARRAY', 'timestamp with time zone')
    """
    if t.code == TypeCode.ARRAY:
        return "ARRAY"
    spelling = _BY_CODE.get(t.code)
    return spelling.data_type if spelling is not None else str(t)


def pg_identifier(name: str) -> str:
    """``name`` as PostgreSQL writes it: bare when it is lower case and not reserved, else double-quoted."""
    if _PLAIN.match(name) and name not in PG_RESERVED:
        return name
    return '"' + name.replace('"', '""') + '"'


def dialect_name(number: int) -> str:
    """The dialect a request's DatabaseDialect number names (0, unspecified, is GoogleSQL).

    >>> dialect_name(2), dialect_name(0)
    ('POSTGRESQL', 'GOOGLE_STANDARD_SQL')
    """
    found = BY_NUMBER.get(number)
    if found is None:
        raise errors.unknown_database_dialect(number)
    return found
