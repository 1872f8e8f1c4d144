"""INFORMATION_SCHEMA views as tables of rows computed from a catalog.

Each view is described as a :class:`~watcher.localspanner.schema.catalog.Table` (so the SQL
layer can type it like any table) and :func:`rows` computes its rows in stored form
(``values.py``: BOOL as 0/1, INT64 as int, STRING as str, NULL as None). The storage
layer materialises each view into the SQLite table named by :func:`sqlite_table_name`.
Names, types and values follow Spanner's GoogleSQL INFORMATION_SCHEMA; the user's
tables and views live in the schema ``''`` of catalog ``''`` (TABLES says ``BASE TABLE``
or ``VIEW``), and the INFORMATION_SCHEMA views themselves are not listed in TABLES.

A PostgreSQL-dialect database sees the same views in PostgreSQL's form (:data:`PG_VIEWS`,
:func:`views_of`): lower-case column names, its tables in the schema ``public``, BOOL columns as ``YES`` / ``NO``, types
spelled the PostgreSQL way in ``data_type`` and ``spanner_type`` (``bigint``,
``character varying(20)``, ``spanner.commit_timestamp``, ``bigint[]``) and expressions in
PostgreSQL syntax (:data:`PG_REWRITES`, applied by :func:`rows`).

Example:
    >>> from watcher.localspanner.schema.schema_updater import apply_statements
    >>> cat, _ = apply_statements(Catalog(), ["CREATE TABLE T (K INT64 NOT NULL) PRIMARY KEY (K)"])
    >>> rows(cat)["INDEX_COLUMNS"]
    [('', '', 'T', 'PRIMARY_KEY', 'PRIMARY_KEY', 'K', 1, 'ASC', 'NO', 'INT64')]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from ..change_streams import routine_information
from ..datamodel import types as T
from ..ddl import change_stream_options, sequence_options
from ..dialects import dialects, postgresql
from ..schema import database_options
from ..schema.catalog import Catalog, ChangeStream, Column, KeyPart, Table
from . import constraint_information, role_information, role_visibility

SCHEMA_NAME = "INFORMATION_SCHEMA"
_SQLITE_PREFIX = "_ls_information_schema_"
PRIMARY_KEY = "PRIMARY_KEY"
SEARCH_INDEX = "SEARCH"


def view_table(name: str, columns: str) -> Table:
    """A system view from ``"NAME TYPE, ..."``: every column nullable, as in Spanner's views (INFORMATION_SCHEMA, SPANNER_SYS)."""
    cols = []
    for spec in columns.split(","):
        col_name, type_text = spec.split()
        cols.append(Column(col_name, T.parse_type(type_text)))
    return Table(name, tuple(cols), ())


_CATALOG_COLS = "TABLE_CATALOG STRING(MAX), TABLE_SCHEMA STRING(MAX), TABLE_NAME STRING(MAX)"
_STREAM_COLS = "CHANGE_STREAM_CATALOG STRING(MAX), CHANGE_STREAM_SCHEMA STRING(MAX), CHANGE_STREAM_NAME STRING(MAX)"

VIEWS: dict[str, Table] = {
    v.name: v
    for v in (
        view_table("SCHEMATA", "CATALOG_NAME STRING(MAX), SCHEMA_NAME STRING(MAX), EFFECTIVE_TIMESTAMP INT64"),
        view_table("DATABASE_OPTIONS", "CATALOG_NAME STRING(MAX), SCHEMA_NAME STRING(MAX), OPTION_NAME STRING(MAX), "
              "OPTION_TYPE STRING(MAX), OPTION_VALUE STRING(MAX)"),
        view_table("TABLES", f"{_CATALOG_COLS}, TABLE_TYPE STRING(MAX), PARENT_TABLE_NAME STRING(MAX), "
              "ON_DELETE_ACTION STRING(MAX), SPANNER_STATE STRING(MAX), INTERLEAVE_TYPE STRING(MAX), "
              "ROW_DELETION_POLICY_EXPRESSION STRING(MAX)"),
        view_table("COLUMNS", f"{_CATALOG_COLS}, COLUMN_NAME STRING(MAX), ORDINAL_POSITION INT64, "
              "COLUMN_DEFAULT STRING(MAX), DATA_TYPE STRING(MAX), IS_NULLABLE STRING(MAX), SPANNER_TYPE STRING(MAX), "
              "IS_GENERATED STRING(MAX), GENERATION_EXPRESSION STRING(MAX), IS_STORED STRING(MAX), "
              "SPANNER_STATE STRING(MAX)"),
        view_table("COLUMN_OPTIONS", f"{_CATALOG_COLS}, COLUMN_NAME STRING(MAX), OPTION_NAME STRING(MAX), "
              "OPTION_TYPE STRING(MAX), OPTION_VALUE STRING(MAX)"),
        view_table("INDEXES", f"{_CATALOG_COLS}, INDEX_NAME STRING(MAX), INDEX_TYPE STRING(MAX), "
              "PARENT_TABLE_NAME STRING(MAX), IS_UNIQUE BOOL, IS_NULL_FILTERED BOOL, INDEX_STATE STRING(MAX), "
              "SPANNER_IS_MANAGED BOOL"),
        view_table("INDEX_COLUMNS", f"{_CATALOG_COLS}, INDEX_NAME STRING(MAX), INDEX_TYPE STRING(MAX), "
              "COLUMN_NAME STRING(MAX), ORDINAL_POSITION INT64, COLUMN_ORDERING STRING(MAX), "
              "IS_NULLABLE STRING(MAX), SPANNER_TYPE STRING(MAX)"),
        *(view_table(name, columns) for name, columns in constraint_information.VIEW_COLUMNS.items()),
        view_table("VIEWS", f"{_CATALOG_COLS}, VIEW_DEFINITION STRING(MAX), SECURITY_TYPE STRING(MAX)"),
        view_table("CHANGE_STREAMS", f"{_STREAM_COLS}, ALL BOOL"),
        view_table("CHANGE_STREAM_TABLES", f"{_STREAM_COLS}, {_CATALOG_COLS}, ALL_COLUMNS BOOL"),
        view_table("CHANGE_STREAM_COLUMNS", f"{_STREAM_COLS}, {_CATALOG_COLS}, COLUMN_NAME STRING(MAX)"),
        view_table("CHANGE_STREAM_OPTIONS", f"{_STREAM_COLS}, OPTION_NAME STRING(MAX), OPTION_TYPE STRING(MAX), "
              "OPTION_VALUE STRING(MAX)"),
        view_table("SEQUENCES", "CATALOG STRING(MAX), SCHEMA STRING(MAX), NAME STRING(MAX), DATA_TYPE STRING(MAX)"),
        view_table("SEQUENCE_OPTIONS", "CATALOG STRING(MAX), SCHEMA STRING(MAX), NAME STRING(MAX), "
              "OPTION_NAME STRING(MAX), OPTION_TYPE STRING(MAX), OPTION_VALUE STRING(MAX)"),
        *(view_table(name, columns) for name, columns in role_information.VIEW_COLUMNS.items()),
        *(view_table(name, columns) for name, columns in routine_information.VIEW_COLUMNS.items()),
    )
}

def _pg_view_column(c: Column) -> Column:
    """A view column as a PostgreSQL database has it: lower-case, a BOOL one as 'YES' / 'NO' text."""
    return dataclasses.replace(c, name=c.name.lower(), type=T.STRING if c.type.code == T.TypeCode.BOOL else c.type)


#: A PostgreSQL database's views in stored form: GoogleSQL's, but for PostgreSQL's privilege and role views.
PG_STORED: dict[str, Table] = {
    **VIEWS, **{name: view_table(name, columns) for name, columns in role_information.PG_VIEW_COLUMNS.items()}}
#: A PostgreSQL database's views: the tables of :data:`PG_STORED` under lower-case column names (SQLite's
#: names ignore case).
PG_VIEWS: dict[str, Table] = {
    name: Table(name.lower(), tuple(_pg_view_column(c) for c in view.columns), ()) for name, view in PG_STORED.items()
}


def views_of(catalog: Catalog) -> dict[str, Table]:
    """The views as ``catalog``'s dialect names them, keyed by upper-case view name."""
    return PG_VIEWS if catalog.dialect == dialects.POSTGRESQL else VIEWS


def stored_views(catalog: Catalog) -> dict[str, Table]:
    """The views of ``catalog``'s dialect in stored form (upper-case columns, BOOL kept), keyed by view name.

    >>> "ENABLED_ROLES" in stored_views(Catalog()), "ENABLED_ROLES" in stored_views(Catalog(dialect="POSTGRESQL"))
    (False, True)
    """
    return PG_STORED if catalog.dialect == dialects.POSTGRESQL else VIEWS


def _producers(catalog: Catalog) -> dict[str, Callable[[Catalog], Iterator[tuple]]]:
    return _PG_PRODUCERS if catalog.dialect == dialects.POSTGRESQL else _PRODUCERS


_YES_NO = {True: "YES", False: "NO"}
_ON_DELETE = {True: "CASCADE", False: "NO ACTION"}


def sqlite_table_name(view: str) -> str:
    """The SQLite table holding a view's rows.

    >>> sqlite_table_name("tables")
    '_ls_information_schema_TABLES'
    """
    return _SQLITE_PREFIX + view.upper()


def rows(catalog: Catalog) -> dict[str, list[tuple]]:
    """Every view's rows for ``catalog``, keyed like :data:`VIEWS`, each tuple in the view's column order."""
    return {name: view_rows(catalog, name) for name in _producers(catalog)}


def view_rows(catalog: Catalog, view: str, role: str = "") -> list[tuple]:
    """The rows of ``view`` (a key of :data:`VIEWS`) a session with ``role`` sees (``role_visibility``).

    >>> cat = Catalog(roles=("r",), tables=(Table("T", (Column("K", T.INT64),), (KeyPart("K"),)),))
    >>> len(view_rows(cat, "TABLES")), len(view_rows(cat, "TABLES", "r"))
    (1, 0)
    """
    names = [c.name for c in stored_views(catalog)[view].columns]
    found = role_visibility.visible(catalog, role, view, names, list(_producers(catalog)[view](catalog)))
    if catalog.dialect == dialects.POSTGRESQL:
        return [_pg_row(catalog, view, row) for row in found if not _pg_left_out(view, row)]
    return found


# --- the PostgreSQL form ----------------------------------------------------------------------

#: Columns naming the schema of a user's object: ``''`` in GoogleSQL, ``public`` in PostgreSQL.
PG_SCHEMA_COLUMNS = frozenset({"TABLE_SCHEMA", "SCHEMA_NAME", "CONSTRAINT_SCHEMA", "UNIQUE_CONSTRAINT_SCHEMA",
                               "CHANGE_STREAM_SCHEMA", "SCHEMA"})
#: System schemas' names as PostgreSQL writes them.
_PG_SCHEMA_NAMES = {"": dialects.PG_SCHEMA, SCHEMA_NAME: SCHEMA_NAME.lower(), "SPANNER_SYS": "spanner_sys"}


def _pg_column(catalog: Catalog, table: str, column: str) -> Column | None:
    found = catalog.table(table)
    return found.column(column) if found is not None else None


def _pg_type(catalog: Catalog, row: dict[str, object], text: object) -> object:
    c = _pg_column(catalog, str(row["TABLE_NAME"]), str(row["COLUMN_NAME"]))
    if c is not None:
        return dialects.pg_type_text(c.type, commit_timestamp=c.allow_commit_timestamp)
    return dialects.pg_type_text(T.parse_type(str(text))) if text else text


def _pg_data_type(catalog: Catalog, row: dict[str, object], _: object) -> object:
    c = _pg_column(catalog, str(row["TABLE_NAME"]), str(row["COLUMN_NAME"]))
    return dialects.pg_data_type(c.type) if c is not None else row["DATA_TYPE"]


def _pg_expression(catalog: Catalog, row: dict[str, object], text: object) -> object:
    return postgresql.expression_to_pg(str(text)) if text is not None else None


#: (view, column) -> how a PostgreSQL database shows the value (given the catalog and the whole row).
PG_REWRITES: dict[tuple[str, str], Callable[[Catalog, dict[str, object], object], object]] = {
    ("COLUMNS", "SPANNER_TYPE"): _pg_type,
    ("COLUMNS", "DATA_TYPE"): _pg_data_type,
    ("COLUMNS", "COLUMN_DEFAULT"): _pg_expression,
    ("COLUMNS", "GENERATION_EXPRESSION"): _pg_expression,
    ("INDEX_COLUMNS", "SPANNER_TYPE"): _pg_type,
    ("CHECK_CONSTRAINTS", "CHECK_CLAUSE"): _pg_expression,
    ("DATABASE_OPTIONS", "OPTION_VALUE"): lambda catalog, row, value: (
        catalog.dialect if row["OPTION_NAME"] == dialects.OPTION else value),
    # A change stream's read function is spanner.read_json_<stream> in PostgreSQL.
    ("ROUTINE_PRIVILEGES", "SPECIFIC_SCHEMA"): lambda catalog, row, value: "spanner",
    ("ROLE_ROUTINE_GRANTS", "SPECIFIC_SCHEMA"): lambda catalog, row, value: "spanner",
}


#: (view, column) -> values whose rows a PostgreSQL database does not have: its commit-timestamp
#: columns say so by their type (``spanner.commit_timestamp``), not by a column option.
PG_LEFT_OUT: dict[tuple[str, str], frozenset[object]] = {
    ("COLUMN_OPTIONS", "OPTION_NAME"): frozenset({"allow_commit_timestamp"}),
}


def _pg_left_out(view: str, row: tuple) -> bool:
    names = [c.name for c in PG_STORED[view].columns]
    return any(row[names.index(column)] in values for (v, column), values in PG_LEFT_OUT.items() if v == view)


def _pg_row(catalog: Catalog, view: str, row: tuple) -> tuple:
    columns = PG_STORED[view].columns
    named = dict(zip([c.name for c in columns], row, strict=True))
    out = []
    for column, (name, value) in zip(columns, named.items(), strict=True):
        if name in PG_SCHEMA_COLUMNS and isinstance(value, str):
            value = _PG_SCHEMA_NAMES.get(value, value)
        if column.type.code == T.TypeCode.BOOL and value is not None:
            value = _YES_NO[bool(value)]
        rewrite = PG_REWRITES.get((view, name))
        out.append(rewrite(catalog, named, value) if rewrite is not None else value)
    return tuple(out)


# --- producers, one per view -----------------------------------------------------------------

def _schemata(catalog: Catalog) -> Iterator[tuple]:
    for schema in ("", SCHEMA_NAME, "SPANNER_SYS"):
        yield ("", schema, None)


def _database_options(catalog: Catalog) -> Iterator[tuple]:
    # The dialect is what clients ask first (the Java client's getDialect() queries this view).
    yield ("", "", dialects.OPTION, "STRING", dialects.GOOGLE_STANDARD_SQL)
    if catalog.default_sequence_kind is not None:
        yield ("", "", "default_sequence_kind", "STRING", catalog.default_sequence_kind)
    for name, value in catalog.database_options:
        yield ("", "", name, database_options.option_type(name), value)


def _tables(catalog: Catalog) -> Iterator[tuple]:
    for t in catalog.tables:
        interleaved = t.parent is not None
        yield ("", "", t.name, "BASE TABLE", t.parent,
               _ON_DELETE[t.on_delete_cascade] if interleaved else None, "COMMITTED",
               "IN PARENT" if interleaved else None,
               t.row_deletion_policy.expression if t.row_deletion_policy is not None else None)
    for v in catalog.views:
        yield ("", "", v.name, "VIEW", None, None, None, None, None)


def _views(catalog: Catalog) -> Iterator[tuple]:
    for v in catalog.views:
        yield ("", "", v.name, v.definition, v.security)


def _columns(catalog: Catalog) -> Iterator[tuple]:
    for t in catalog.tables:
        for pos, c in enumerate(t.columns, 1):
            stored = None if c.generated is None else _YES_NO[c.stored]
            default = None if c.identity is not None else c.default  # an identity column's DEFAULT is internal
            yield ("", "", t.name, c.name, pos, default, None, _YES_NO[not c.not_null], T.schema_type_text(c.type),
                   "ALWAYS" if c.is_generated else "NEVER", c.generated, stored, "COMMITTED")
    for v in catalog.views:  # a view's columns are listed too, every one nullable
        for pos, vc in enumerate(v.columns, 1):
            yield ("", "", v.name, vc.name, pos, None, None, "YES", str(vc.type) if vc.type else None,
                   "NEVER", None, None, None)


def _column_options(catalog: Catalog) -> Iterator[tuple]:
    for t in catalog.tables:
        for c in t.commit_timestamp_columns:
            yield ("", "", t.name, c.name, "allow_commit_timestamp", "BOOL", "TRUE")


def _indexes(catalog: Catalog) -> Iterator[tuple]:
    for t in catalog.tables:
        yield ("", "", t.name, PRIMARY_KEY, PRIMARY_KEY, t.parent or "", 1, 0, None, 0)
        for i in catalog.indexes_of(t.name):
            yield ("", "", t.name, i.name, "INDEX", i.interleave_in or "", int(i.unique), int(i.null_filtered),
                   "READ_WRITE", 0)
        for s in catalog.search_indexes_of(t.name):
            yield ("", "", t.name, s.name, SEARCH_INDEX, "", 0, 0, "READ_WRITE", 0)


def _index_columns(catalog: Catalog) -> Iterator[tuple]:
    for t in catalog.tables:
        yield from _key_rows(t, PRIMARY_KEY, PRIMARY_KEY, t.primary_key, (), null_filtered=False)
        for i in catalog.indexes_of(t.name):
            yield from _key_rows(t, i.name, "INDEX", i.key, i.storing, null_filtered=i.null_filtered)
        for s in catalog.search_indexes_of(t.name):
            yield from _key_rows(t, s.name, SEARCH_INDEX, tuple(KeyPart(c) for c in s.columns), s.storing,
                                 null_filtered=False)


def _key_rows(table: Table, index: str, kind: str, key: tuple[KeyPart, ...], storing: tuple[str, ...],
              *, null_filtered: bool) -> Iterator[tuple]:
    for pos, part in enumerate(key, 1):
        c = _column(table, part.column)
        yield ("", "", table.name, index, kind, c.name, pos, "DESC" if part.descending else "ASC",
               _YES_NO[not (c.not_null or null_filtered)], T.schema_type_text(c.type))
    for name in storing:
        c = _column(table, name)
        yield ("", "", table.name, index, kind, c.name, None, None, _YES_NO[not c.not_null], T.schema_type_text(c.type))


def _column(table: Table, name: str) -> Column:
    column = table.column(name)
    assert column is not None, f"{table.name}.{name} missing from the catalog"
    return column


def _watched_tables(catalog: Catalog, stream: ChangeStream) -> Iterator[tuple[Table, tuple[str, ...] | None]]:
    """Each table the stream watches, with the columns named for it (None: all columns)."""
    if stream.all:
        yield from ((t, None) for t in catalog.tables)
        return
    for tracked in stream.tables:
        table = catalog.table(tracked.table)
        assert table is not None, f"change stream {stream.name} tracks missing table {tracked.table}"
        yield table, tracked.columns


def _change_streams(catalog: Catalog) -> Iterator[tuple]:
    for s in catalog.change_streams:
        yield ("", "", s.name, int(s.all))


def _change_stream_tables(catalog: Catalog) -> Iterator[tuple]:
    for s in catalog.change_streams:
        for table, columns in _watched_tables(catalog, s):
            yield ("", "", s.name, "", "", table.name, int(columns is None))


def _change_stream_columns(catalog: Catalog) -> Iterator[tuple]:
    # The non-key columns a stream tracks: those named, or all of them for a table it
    # watches whole (key columns are always part of a change record, so they are not listed).
    for s in catalog.change_streams:
        for table, columns in _watched_tables(catalog, s):
            names = columns if columns is not None else [c.name for c in table.columns if c.name not in table.key_names]
            for name in names:
                yield ("", "", s.name, "", "", table.name, name)


def _change_stream_options(catalog: Catalog) -> Iterator[tuple]:
    for s in catalog.change_streams:
        for name, value in s.options:
            text = str(value).upper() if isinstance(value, bool) else value
            yield ("", "", s.name, name, change_stream_options.SPECS[name].type, text)


def _sequences(catalog: Catalog) -> Iterator[tuple]:
    # Only the sequences made with CREATE SEQUENCE: an identity column's sequence is not listed.
    for s in catalog.sequences:
        yield ("", "", s.name, "INT64")


def _sequence_options(catalog: Catalog) -> Iterator[tuple]:
    for s in catalog.sequences:
        kind = s.kind or catalog.default_sequence_kind
        if kind is not None:
            yield ("", "", s.name, "sequence_kind", "STRING", kind)
        for name, value in sequence_options.options_of(s):
            if name != "sequence_kind":
                yield ("", "", s.name, name, "INT64", str(value))


_PRODUCERS: dict[str, Callable[[Catalog], Iterator[tuple]]] = {
    "SCHEMATA": _schemata,
    "DATABASE_OPTIONS": _database_options,
    "TABLES": _tables,
    "COLUMNS": _columns,
    "COLUMN_OPTIONS": _column_options,
    "INDEXES": _indexes,
    "INDEX_COLUMNS": _index_columns,
    "TABLE_CONSTRAINTS": constraint_information.table_constraints,
    "CHECK_CONSTRAINTS": constraint_information.check_constraints,
    "REFERENTIAL_CONSTRAINTS": constraint_information.referential_constraints,
    "KEY_COLUMN_USAGE": constraint_information.key_column_usage,
    "CONSTRAINT_COLUMN_USAGE": constraint_information.constraint_column_usage,
    "VIEWS": _views,
    "CHANGE_STREAMS": _change_streams,
    "CHANGE_STREAM_TABLES": _change_stream_tables,
    "CHANGE_STREAM_COLUMNS": _change_stream_columns,
    "CHANGE_STREAM_OPTIONS": _change_stream_options,
    "SEQUENCES": _sequences,
    "SEQUENCE_OPTIONS": _sequence_options,
    **role_information.PRODUCERS,
    **routine_information.PRODUCERS,
}
assert _PRODUCERS.keys() == VIEWS.keys()
_PG_PRODUCERS = {**_PRODUCERS, **role_information.PG_PRODUCERS}
assert _PG_PRODUCERS.keys() == PG_STORED.keys()
