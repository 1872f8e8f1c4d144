"""Column types in both dialects: INFORMATION_SCHEMA's SPANNER_TYPE of a PostgreSQL database read as the
GoogleSQL name the rest of the watcher speaks, and GoogleSQL names written as PostgreSQL DDL types.

A watcher keeps one vocabulary of types (GoogleSQL's: ``INT64``, ``STRING(200)``, ``ARRAY<INT64>``), so
what it learns from a PostgreSQL database reads the same downstream. A PostgreSQL commit-timestamp
column (``spanner.commit_timestamp``) is a ``TIMESTAMP``.

| PostgreSQL SPANNER_TYPE | GoogleSQL |
|---|---|
| ``bigint`` | ``INT64`` |
| ``character varying(200)`` / ``character varying`` | ``STRING(200)`` / ``STRING(MAX)`` |
| ``timestamp with time zone``, ``spanner.commit_timestamp`` | ``TIMESTAMP`` |
| ``bigint[]`` | ``ARRAY<INT64>`` |

Example:
    >>> google_type("character varying(200)"), google_type("spanner.commit_timestamp"), google_type("bigint[]")
    ('STRING(200)', 'TIMESTAMP', 'ARRAY<INT64>')
    >>> postgresql_type("STRING(MAX)"), postgresql_type("TIMESTAMP")
    ('varchar', 'timestamptz')
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from google.cloud.spanner_v1 import param_types

from ..errors import ConfigurationError
from .base import GOOGLE_SQL, POSTGRESQL, Dialect

#: PostgreSQL type names (as SPANNER_TYPE prints them, no length) -> GoogleSQL names.
_FROM_POSTGRESQL = {
    "bigint": "INT64", "boolean": "BOOL", "double precision": "FLOAT64", "real": "FLOAT32",
    "character varying": "STRING", "text": "STRING", "bytea": "BYTES", "numeric": "NUMERIC", "date": "DATE",
    "timestamp with time zone": "TIMESTAMP", "spanner.commit_timestamp": "TIMESTAMP", "jsonb": "JSON",
    "uuid": "UUID", "interval": "INTERVAL", "oid": "INT64",
}
#: GoogleSQL names that carry a length (MAX when PostgreSQL gives none).
_SIZED = {"STRING", "BYTES"}
#: GoogleSQL names -> the PostgreSQL DDL type of a column (lengths dropped: varchar, bytea take any).
_TO_POSTGRESQL = {
    "INT64": "bigint", "BOOL": "boolean", "FLOAT64": "double precision", "FLOAT32": "real", "STRING": "varchar",
    "BYTES": "bytea", "NUMERIC": "numeric", "DATE": "date", "TIMESTAMP": "timestamptz", "JSON": "jsonb",
}
_SPANNER_TYPE = re.compile(r"^(?P<name>[a-z._ ]+?)\s*(\((?P<length>\d+)\))?(?P<array>\[\])?$")


def google_type(spanner_type: str) -> str:
    """A PostgreSQL database's SPANNER_TYPE as the GoogleSQL type name (unknown names upper-cased as they are).

    >>> google_type("bytea"), google_type("numeric"), google_type("jsonb[]")
    ('BYTES(MAX)', 'NUMERIC', 'ARRAY<JSON>')
    """
    found = _SPANNER_TYPE.match(spanner_type.strip().lower())
    name = _FROM_POSTGRESQL.get(found.group("name")) if found else None
    if found is None or name is None:
        return spanner_type.upper()
    if name in _SIZED:
        name = f"{name}({found.group('length') or 'MAX'})"
    return f"ARRAY<{name}>" if found.group("array") else name


def postgresql_type(google: str) -> str:
    """The PostgreSQL DDL type of a GoogleSQL column type (a ConfigurationError names one it has none for).

    >>> postgresql_type("BYTES(MAX)"), postgresql_type("ARRAY<INT64>")
    ('bytea', 'bigint[]')
    """
    text = google.strip().upper()
    if text.startswith("ARRAY<") and text.endswith(">"):
        return postgresql_type(text[6:-1]) + "[]"
    name = text.split("(", 1)[0]
    if name not in _TO_POSTGRESQL:
        raise ConfigurationError(f"no PostgreSQL type for the column type {google!r}")
    return _TO_POSTGRESQL[name]


#: How each dialect's SPANNER_TYPE reads as a GoogleSQL type name.
_READERS: dict[str, Callable[[str], str]] = {GOOGLE_SQL.name: str, POSTGRESQL.name: google_type}
#: Parameter types that differ from GoogleSQL's in a dialect (PostgreSQL's numeric and jsonb).
_PARAM_TYPES: dict[str, dict[str, Any]] = {
    GOOGLE_SQL.name: {},
    POSTGRESQL.name: {"NUMERIC": param_types.PG_NUMERIC, "JSON": param_types.PG_JSONB},
}


def column_type(dialect: Dialect, spanner_type: str) -> str:
    """INFORMATION_SCHEMA's SPANNER_TYPE in ``dialect`` as the GoogleSQL type name.

    >>> column_type(GOOGLE_SQL, "STRING(MAX)"), column_type(POSTGRESQL, "character varying")
    ('STRING(MAX)', 'STRING(MAX)')
    """
    return _READERS[dialect.name](spanner_type)


def dialect_param_type(dialect: Dialect, google: str, default: Any) -> Any:
    """The client parameter type for a value of the GoogleSQL type ``google`` in ``dialect`` (``default`` when
    the dialects agree).

    >>> dialect_param_type(POSTGRESQL, "NUMERIC", param_types.NUMERIC) == param_types.PG_NUMERIC
    True
    """
    return _PARAM_TYPES[dialect.name].get(google.split("(", 1)[0].strip().upper(), default)


#: How each dialect writes a GoogleSQL type name in DDL.
_DDL_TYPES: dict[str, Callable[[str], str]] = {GOOGLE_SQL.name: str, POSTGRESQL.name: postgresql_type}


def ddl_type(dialect: Dialect, google: str) -> str:
    """A column type given by its GoogleSQL name, as ``dialect``'s DDL writes it.

    >>> ddl_type(GOOGLE_SQL, "STRING(MAX)"), ddl_type(POSTGRESQL, "STRING(MAX)")
    ('STRING(MAX)', 'varchar')
    """
    return _DDL_TYPES[dialect.name](google)
