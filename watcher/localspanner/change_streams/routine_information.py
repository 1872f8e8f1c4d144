"""INFORMATION_SCHEMA.ROUTINES, ROUTINE_OPTIONS and PARAMETERS: the change streams' read functions.

The only routines a database has here are its change streams' read functions (no CREATE FUNCTION):
``READ_<stream>`` in GoogleSQL, ``spanner.read_json_<stream>`` and ``spanner.read_proto_bytes_<stream>``
in PostgreSQL, each with the parameters start_timestamp, end_timestamp, partition_token,
heartbeat_milliseconds and read_options. They are built in (ROUTINE_BODY ``EXTERNAL``), run with the
caller's rights (SECURITY_TYPE ``INVOKER``) and have no options. Columns are in the order of Spanner's
GoogleSQL views; rows are in stored form (``information_schema.py``), and a session with a database role
sees the functions it may EXECUTE (``role_visibility``).

Example:
    >>> from watcher.localspanner.schema.catalog import Catalog, ChangeStream
    >>> cat = Catalog(change_streams=(ChangeStream("S", all=True),))
    >>> [r[5] for r in routines(cat)], [(r[3], r[4], r[7]) for r in parameters(cat)][:2]
    (['READ_S'], [(1, 'start_timestamp', 'TIMESTAMP'), (2, 'end_timestamp', 'TIMESTAMP')])
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..datamodel import types as T
from ..dialects import dialects
from ..schema.catalog import Catalog
from ..schema.role_rules import read_functions
from .read_function import ARGUMENTS

_SPECIFIC = "SPECIFIC_CATALOG STRING(MAX), SPECIFIC_SCHEMA STRING(MAX), SPECIFIC_NAME STRING(MAX)"

VIEW_COLUMNS = {
    "ROUTINES": f"{_SPECIFIC}, ROUTINE_CATALOG STRING(MAX), ROUTINE_SCHEMA STRING(MAX), ROUTINE_NAME STRING(MAX), "
                "ROUTINE_TYPE STRING(MAX), DATA_TYPE STRING(MAX), ROUTINE_BODY STRING(MAX), "
                "ROUTINE_DEFINITION STRING(MAX), SECURITY_TYPE STRING(MAX), SPANNER_TYPE STRING(MAX)",
    "ROUTINE_OPTIONS": f"{_SPECIFIC}, OPTION_NAME STRING(MAX), OPTION_TYPE STRING(MAX), OPTION_VALUE STRING(MAX)",
    "PARAMETERS": f"{_SPECIFIC}, ORDINAL_POSITION INT64, PARAMETER_NAME STRING(MAX), DATA_TYPE STRING(MAX), "
                  "PARAMETER_DEFAULT STRING(MAX), SPANNER_TYPE STRING(MAX)",
}

#: The read functions' parameter types, in :data:`ARGUMENTS` order.
_TYPES = (T.TIMESTAMP, T.TIMESTAMP, T.STRING, T.INT64, T.parse_type("ARRAY<STRING(MAX)>"))
#: What a PostgreSQL read function returns, by its prefix (GoogleSQL's returns rows of ChangeRecord).
_PG_RETURNS = {"read_json_": "jsonb", "read_proto_bytes_": "bytea"}
_PG_FUNCTION_SCHEMA = "spanner"


def _functions(catalog: Catalog) -> Iterator[tuple[str, str]]:
    """(schema, name) of every read function."""
    pg = catalog.dialect == dialects.POSTGRESQL
    for s in catalog.change_streams:
        for name in read_functions(s.name, catalog.dialect):
            yield (_PG_FUNCTION_SCHEMA if pg else "", name)


def routines(catalog: Catalog) -> Iterator[tuple]:
    pg = catalog.dialect == dialects.POSTGRESQL
    for schema, name in _functions(catalog):
        returns = next((t for p, t in _PG_RETURNS.items() if name.startswith(p)), None) if pg else None
        yield ("", schema, name, "", schema, name, "FUNCTION", returns, "EXTERNAL", None, "INVOKER", returns)


def routine_options(catalog: Catalog) -> Iterator[tuple]:
    return iter(())


def parameters(catalog: Catalog) -> Iterator[tuple]:
    """PARAMETERS: each read function's five parameters, typed as its dialect spells types.

    >>> from watcher.localspanner.schema.catalog import ChangeStream
    >>> cat = Catalog(dialect="POSTGRESQL", change_streams=(ChangeStream("s", all=True),))
    >>> next(parameters(cat))
    ('', 'spanner', 'read_json_s', 1, 'start_timestamp', 'timestamp with time zone', None, 'timestamp with time zone')
    """
    pg = catalog.dialect == dialects.POSTGRESQL
    for schema, name in _functions(catalog):
        for pos, (argument, t) in enumerate(zip(ARGUMENTS, _TYPES, strict=True), 1):
            if pg:
                yield ("", schema, name, pos, argument, dialects.pg_data_type(t), None, dialects.pg_type_text(t))
            else:
                yield ("", schema, name, pos, argument, None, None, T.schema_type_text(t))


PRODUCERS: dict[str, Callable[[Catalog], Iterator[tuple]]] = {
    "ROUTINES": routines,
    "ROUTINE_OPTIONS": routine_options,
    "PARAMETERS": parameters,
}
assert PRODUCERS.keys() == VIEW_COLUMNS.keys()
