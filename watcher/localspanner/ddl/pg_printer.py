"""GetDatabaseDdl of a PostgreSQL-dialect database: its catalog as PostgreSQL DDL.

The statements recreate the catalog when sent back through ``pg_parser`` (names
double-quoted only when they need it, types spelled by ``dialects.TYPES``, expressions
turned back from the catalog's GoogleSQL by ``postgresql.py``). The layout follows the
GoogleSQL printer's: one column per line, the primary key as the last element of the
list, the interleave clause after the closing parenthesis.

Example:
    >>> from watcher.localspanner.schema.catalog import Catalog
    >>> from watcher.localspanner.schema.schema_updater import apply_ddl
    >>> from watcher.localspanner.ddl.pg_parser import parse_pg_ddl
    >>> cat = apply_ddl(Catalog(), parse_pg_ddl('CREATE TABLE t (k bigint NOT NULL, "V" text, PRIMARY KEY (k))'))
    >>> print(print_pg_catalog(cat)[0])
    CREATE TABLE t (
      k bigint NOT NULL,
      "V" character varying,
      PRIMARY KEY(k)
    )
"""

from __future__ import annotations

from ..dialects.dialects import pg_identifier as q
from ..dialects.dialects import pg_type_text
from ..dialects.postgresql import expression_to_pg, statement_to_pg
from ..schema import database_options
from ..schema.catalog import Catalog, ChangeStream, CheckConstraint, Column, ForeignKey, Index, KeyPart, Sequence, Table, View
from . import constraint_parser, role_printer


def print_pg_catalog(catalog: Catalog) -> list[str]:
    """The statements that recreate ``catalog``: the sequences, tables in creation order, each followed
    by its indexes, then foreign keys to tables created later, the views, the change streams and the roles."""
    out: list[str] = [_create_sequence(s) for s in catalog.sequences]  # first: column defaults use them
    printed: set[str] = set()
    later: list[str] = []
    for table in catalog.tables:
        printed.add(table.name.lower())
        inline = tuple(fk for fk in table.foreign_keys if fk.referenced_table.lower() in printed)
        later.extend(f"ALTER TABLE {q(table.name)} ADD {_constraint(fk)}" for fk in table.foreign_keys if fk not in inline)
        out.append(_create_table(table, inline))
        out.extend(_create_index(index, table) for index in catalog.indexes_of(table.name))
    out.extend(later)
    out.extend(_create_view(v) for v in catalog.views)
    out.extend(_create_change_stream(s) for s in catalog.change_streams)
    out.extend(role_printer.role_statements(catalog, pg=True))
    return out


def print_pg_options(database: str, values: dict[str, str | None]) -> list[str]:
    """One ``ALTER DATABASE ... SET spanner.<option> = '<value>'`` per option set, in ``database_options.OPTIONS`` order.

    >>> print(*print_pg_options("my-db", {"version_retention_period": "2d", "default_leader": None}))
    ALTER DATABASE "my-db" SET spanner.version_retention_period = '2d'
    """
    return [f"ALTER DATABASE {q(database)} SET spanner.{name} = {_option_value(value)}"
            for name in database_options.OPTIONS if (value := values.get(name)) is not None]


def pg_column_definition(column: Column) -> str:
    """``name type [NOT NULL] [DEFAULT (e) | GENERATED ALWAYS AS (e) STORED]``."""
    parts = [q(column.name), pg_type_text(column.type, commit_timestamp=column.allow_commit_timestamp)]
    if column.not_null:
        parts.append("NOT NULL")
    if column.generated is not None:
        parts.append(f"GENERATED ALWAYS AS ({expression_to_pg(column.generated)}) STORED")
    elif column.default is not None:
        parts.append(f"DEFAULT ({expression_to_pg(column.default)})")
    return " ".join(parts)


def _key(parts: tuple[KeyPart, ...]) -> str:
    return ", ".join(q(p.column) + (" DESC" if p.descending else "") for p in parts)


def _constraint(c: CheckConstraint | ForeignKey) -> str:
    if isinstance(c, CheckConstraint):
        c = CheckConstraint(c.name, expression_to_pg(c.expression))
    return constraint_parser.print_element(c, q)


def _create_table(table: Table, foreign_keys: tuple[ForeignKey, ...]) -> str:
    elements = [pg_column_definition(c) for c in table.columns]
    constraints: tuple[CheckConstraint | ForeignKey, ...] = (*table.checks, *foreign_keys)
    elements += [_constraint(c) for c in constraints]
    elements.append(f"PRIMARY KEY({_key(table.primary_key)})")
    text = f"CREATE TABLE {q(table.name)} (\n" + "".join(f"  {e},\n" for e in elements[:-1]) + f"  {elements[-1]}\n)"
    if table.parent is not None:
        text += f" INTERLEAVE IN PARENT {q(table.parent)}" + (" ON DELETE CASCADE" if table.on_delete_cascade else "")
    if table.row_deletion_policy is not None:
        policy = table.row_deletion_policy
        text += f" TTL INTERVAL '{policy.days} days' ON {q(policy.column)}"
    return text


def _create_index(index: Index, table: Table) -> str:
    text = f"CREATE {'UNIQUE ' if index.unique else ''}INDEX {q(index.name)} ON {q(index.table)} ({_key(index.key)})"
    if index.storing:
        text += f" INCLUDE ({', '.join(q(c) for c in index.storing)})"
    if index.interleave_in is not None:
        text += f" INTERLEAVE IN {q(index.interleave_in)}"
    if index.null_filtered:
        nullable = [p.column for p in index.key if (c := table.column(p.column)) is not None and not c.not_null]
        if nullable:
            text += " WHERE " + " AND ".join(f"{q(c)} IS NOT NULL" for c in nullable)
    return text


def _create_sequence(seq: Sequence) -> str:
    words = [f"CREATE SEQUENCE {q(seq.name)}"]
    if seq.kind is not None:
        words.append(seq.kind.upper())
    if seq.skip_range_min is not None:
        words.append(f"SKIP RANGE {seq.skip_range_min} {seq.skip_range_max}")
    if seq.start_with_counter is not None:
        words.append(f"START COUNTER WITH {seq.start_with_counter}")
    return " ".join(words)


def _create_view(view: View) -> str:
    return f"CREATE VIEW {q(view.name)} SQL SECURITY {view.security} AS {statement_to_pg(view.definition)}"


def _option_value(value: str | bool) -> str:
    return str(value).lower() if isinstance(value, bool) else "'" + value.replace("'", "''") + "'"


def _create_change_stream(stream: ChangeStream) -> str:
    text = f"CREATE CHANGE STREAM {q(stream.name)}"
    if stream.all:
        text += " FOR ALL"
    elif stream.tables:
        tables = [q(t.table) + ("" if t.columns is None else f"({', '.join(q(c) for c in t.columns)})") for t in stream.tables]
        text += " FOR " + ", ".join(tables)
    if stream.options:
        text += " WITH (" + ", ".join(f"{name} = {_option_value(v)}" for name, v in stream.options) + ")"
    return text
