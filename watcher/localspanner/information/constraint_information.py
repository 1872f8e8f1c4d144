"""The INFORMATION_SCHEMA views of constraints, computed from a catalog.

TABLE_CONSTRAINTS lists each table's primary key (``PK_<table>``), a CHECK per NOT NULL
column (``CK_IS_NOT_NULL_<table>_<column>``), its CHECK constraints and foreign keys, and
the UNIQUE constraint that backs a foreign key whose referenced columns are not the
referenced table's primary key. CHECK_CONSTRAINTS, REFERENTIAL_CONSTRAINTS,
KEY_COLUMN_USAGE and CONSTRAINT_COLUMN_USAGE follow; rows are in stored form
(``information_schema.py``).

Example:
    >>> from watcher.localspanner.schema.schema_updater import apply_statements
    >>> cat, _ = apply_statements(Catalog(), [
    ...     "CREATE TABLE P (Id INT64 NOT NULL) PRIMARY KEY (Id)",
    ...     "CREATE TABLE C (Id INT64 NOT NULL, PId INT64, CONSTRAINT FK_P FOREIGN KEY (PId) REFERENCES P (Id)) PRIMARY KEY (Id)",
    ... ])
    >>> list(referential_constraints(cat))
    [('', '', 'FK_P', '', '', 'PK_P', 'SIMPLE', 'NO ACTION', 'NO ACTION', 'COMMITTED')]
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from ..ddl.expressions import referenced_names
from ..schema.catalog import Catalog, ForeignKey, Table

VIEW_COLUMNS = {
    "TABLE_CONSTRAINTS": "CONSTRAINT_CATALOG STRING(MAX), CONSTRAINT_SCHEMA STRING(MAX), CONSTRAINT_NAME STRING(MAX), "
                         "TABLE_CATALOG STRING(MAX), TABLE_SCHEMA STRING(MAX), TABLE_NAME STRING(MAX), "
                         "CONSTRAINT_TYPE STRING(MAX), IS_DEFERRABLE STRING(MAX), INITIALLY_DEFERRED STRING(MAX), "
                         "ENFORCED STRING(MAX)",
    "CHECK_CONSTRAINTS": "CONSTRAINT_CATALOG STRING(MAX), CONSTRAINT_SCHEMA STRING(MAX), CONSTRAINT_NAME STRING(MAX), "
                         "CHECK_CLAUSE STRING(MAX), SPANNER_STATE STRING(MAX)",
    "REFERENTIAL_CONSTRAINTS": "CONSTRAINT_CATALOG STRING(MAX), CONSTRAINT_SCHEMA STRING(MAX), "
                               "CONSTRAINT_NAME STRING(MAX), UNIQUE_CONSTRAINT_CATALOG STRING(MAX), "
                               "UNIQUE_CONSTRAINT_SCHEMA STRING(MAX), UNIQUE_CONSTRAINT_NAME STRING(MAX), "
                               "MATCH_OPTION STRING(MAX), UPDATE_RULE STRING(MAX), DELETE_RULE STRING(MAX), "
                               "SPANNER_STATE STRING(MAX)",
    "KEY_COLUMN_USAGE": "CONSTRAINT_CATALOG STRING(MAX), CONSTRAINT_SCHEMA STRING(MAX), CONSTRAINT_NAME STRING(MAX), "
                        "TABLE_CATALOG STRING(MAX), TABLE_SCHEMA STRING(MAX), TABLE_NAME STRING(MAX), "
                        "COLUMN_NAME STRING(MAX), ORDINAL_POSITION INT64, POSITION_IN_UNIQUE_CONSTRAINT INT64",
    "CONSTRAINT_COLUMN_USAGE": "TABLE_CATALOG STRING(MAX), TABLE_SCHEMA STRING(MAX), TABLE_NAME STRING(MAX), "
                               "COLUMN_NAME STRING(MAX), CONSTRAINT_CATALOG STRING(MAX), "
                               "CONSTRAINT_SCHEMA STRING(MAX), CONSTRAINT_NAME STRING(MAX)",
}


def pk_constraint_name(table: str) -> str:
    return f"PK_{table}"


def not_null_constraint_name(table: str, column: str) -> str:
    return f"CK_IS_NOT_NULL_{table}_{column}"


def _is_key(catalog: Catalog, fk: ForeignKey) -> bool:
    referenced = catalog.table(fk.referenced_table)
    return referenced is not None and [c.lower() for c in fk.referenced_columns] == [c.lower() for c in referenced.key_names]


def unique_constraint_name(catalog: Catalog, fk: ForeignKey) -> str:
    """The constraint the referenced columns satisfy: the primary key, or the foreign key's backing UNIQUE one."""
    if _is_key(catalog, fk):
        return pk_constraint_name(fk.referenced_table)
    digest = hashlib.sha256("\0".join((fk.referenced_table, *fk.referenced_columns)).encode()).hexdigest()[:16].upper()
    return f"IX_{fk.referenced_table}_BY_{digest}_U"


def _backing(catalog: Catalog) -> dict[str, tuple[Table, tuple[str, ...]]]:
    """The backing UNIQUE constraints by name: referenced table and columns."""
    out: dict[str, tuple[Table, tuple[str, ...]]] = {}
    for t in catalog.tables:
        for fk in t.foreign_keys:
            referenced = catalog.table(fk.referenced_table)
            if referenced is not None and not _is_key(catalog, fk):
                out.setdefault(unique_constraint_name(catalog, fk), (referenced, fk.referenced_columns))
    return out


def table_constraints(catalog: Catalog) -> Iterator[tuple]:
    for t in catalog.tables:
        yield ("", "", pk_constraint_name(t.name), "", "", t.name, "PRIMARY KEY", "NO", "NO", "YES")
        for c in t.columns:
            if c.not_null:
                yield ("", "", not_null_constraint_name(t.name, c.name), "", "", t.name, "CHECK", "NO", "NO", "YES")
        for check in t.checks:
            yield ("", "", check.name, "", "", t.name, "CHECK", "NO", "NO", "YES")
        for fk in t.foreign_keys:
            yield ("", "", fk.name, "", "", t.name, "FOREIGN KEY", "NO", "NO", "YES" if fk.enforced else "NO")
    for name, (table, _) in _backing(catalog).items():
        yield ("", "", name, "", "", table.name, "UNIQUE", "NO", "NO", "YES")


def check_constraints(catalog: Catalog) -> Iterator[tuple]:
    for t in catalog.tables:
        for c in t.columns:
            if c.not_null:
                yield ("", "", not_null_constraint_name(t.name, c.name), f"{c.name} IS NOT NULL", "COMMITTED")
        for check in t.checks:
            yield ("", "", check.name, check.expression, "COMMITTED")


def referential_constraints(catalog: Catalog) -> Iterator[tuple]:
    for t in catalog.tables:
        for fk in t.foreign_keys:
            delete_rule = "CASCADE" if fk.on_delete_cascade else "NO ACTION"
            yield ("", "", fk.name, "", "", unique_constraint_name(catalog, fk), "SIMPLE", "NO ACTION", delete_rule,
                   "COMMITTED")


def key_column_usage(catalog: Catalog) -> Iterator[tuple]:
    for t in catalog.tables:
        for pos, part in enumerate(t.primary_key, 1):
            yield ("", "", pk_constraint_name(t.name), "", "", t.name, part.column, pos, None)
        for fk in t.foreign_keys:
            for pos, column in enumerate(fk.columns, 1):
                yield ("", "", fk.name, "", "", t.name, column, pos, pos)
    for name, (table, columns) in _backing(catalog).items():
        for pos, column in enumerate(columns, 1):
            yield ("", "", name, "", "", table.name, column, pos, None)


def constraint_column_usage(catalog: Catalog) -> Iterator[tuple]:
    """Columns each constraint uses; for a foreign key, the referenced columns."""
    for t in catalog.tables:
        for part in t.primary_key:
            yield ("", "", t.name, part.column, "", "", pk_constraint_name(t.name))
        for c in t.columns:
            if c.not_null:
                yield ("", "", t.name, c.name, "", "", not_null_constraint_name(t.name, c.name))
        for check in t.checks:
            for ref in referenced_names(check.expression):
                column = t.column(ref)
                if column is not None:
                    yield ("", "", t.name, column.name, "", "", check.name)
        for fk in t.foreign_keys:
            for referenced in fk.referenced_columns:
                yield ("", "", fk.referenced_table, referenced, "", "", fk.name)
    for name, (table, columns) in _backing(catalog).items():
        for used in columns:
            yield ("", "", table.name, used, "", "", name)
