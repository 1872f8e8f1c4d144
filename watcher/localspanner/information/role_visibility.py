"""The rows of INFORMATION_SCHEMA a session with a database role sees: the row filters of fine-grained access control.

A session without a role, and a role that is (directly or through others) a member of
``spanner_info_reader``, sees every row. Any other role sees, in each row-filtered view, only
the rows of the objects it may see through the privileges held by itself, by the roles it is a
member of, or by ``public`` (``roles.effective_roles``); the other rows are left out, not refused.
:data:`RULES` (GoogleSQL) and :data:`PG_RULES` (PostgreSQL, whose documentation filters some
views differently) say, for each filtered view, which of its columns name the object and which
:class:`Sight` decides whether the role sees it; a view without a rule is not filtered.

The tests (``Sight.test``):

* ``relation``: a table on which the role holds one of ``privileges``, or one of
  ``column_privileges`` on any of its columns; a view on which it holds SELECT (when SELECT is
  one of ``privileges``);
* ``column``: one of ``privileges`` on the column or on its whole table; a view's column when
  the role holds SELECT on the view;
* ``index``: one of ``privileges`` on the index's table, or one of ``column_privileges`` on
  every column of the index (key and stored columns; the key of ``PRIMARY_KEY``);
* ``object``: one of ``privileges`` on the object of ``kind`` (a view, a change stream, a sequence, a
  change stream's read function);
* ``grantee``: a privilege granted to the role or a role it is a member of, and (``public``) to ``public``;
* ``role``: the role, a role it is a member of, or ``public``;
* ``constraint``: a foreign key whose referencing table passes ``relation``.

Example:
    >>> from watcher.localspanner.schema.schema_updater import apply_statements
    >>> cat, _ = apply_statements(Catalog(), ["CREATE TABLE A (K INT64, V INT64) PRIMARY KEY (K)",
    ...     "CREATE TABLE B (K INT64) PRIMARY KEY (K)", "CREATE ROLE r", "GRANT SELECT(V) ON TABLE A TO ROLE r"])
    >>> names = ["TABLE_NAME", "COLUMN_NAME"]
    >>> visible(cat, "r", "COLUMNS", names, [("A", "K"), ("A", "V"), ("B", "K")])
    [('A', 'V')]
    >>> visible(cat, "", "COLUMNS", names, [("A", "K"), ("B", "K")])
    [('A', 'K'), ('B', 'K')]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..dialects import dialects
from ..schema import roles
from ..schema.catalog import Catalog

#: The privilege on a sequence (no GRANT makes one here, so a role sees no sequence).
USAGE, SEQUENCE = "USAGE", "SEQUENCE"
_ANY_TABLE = (roles.SELECT, roles.INSERT, roles.UPDATE, roles.DELETE)
_ANY_COLUMN = (roles.SELECT, roles.INSERT, roles.UPDATE)
_WRITE_TABLE = (roles.INSERT, roles.UPDATE, roles.DELETE)
_WRITE_COLUMN = (roles.INSERT, roles.UPDATE)
_PRIMARY_KEY = "PRIMARY_KEY"


@dataclass(frozen=True)
class Sight:
    """How a role sees the object a row is about: ``test`` (see the module) on the object named by ``columns``."""

    test: str
    columns: tuple[str, ...]
    privileges: tuple[str, ...] = ()
    column_privileges: tuple[str, ...] = ()
    kind: str = ""
    public: bool = True


_TABLE = Sight("relation", ("TABLE_NAME",), _ANY_TABLE, _ANY_COLUMN)
_COLUMN = Sight("column", ("TABLE_NAME", "COLUMN_NAME"), _ANY_COLUMN)
_STREAM = Sight("object", ("CHANGE_STREAM_NAME",), (roles.SELECT,), kind=roles.CHANGE_STREAM)
_SEQUENCE = Sight("object", ("NAME",), (USAGE,), kind=SEQUENCE)
_ROUTINE = Sight("object", ("SPECIFIC_NAME",), (roles.EXECUTE,), kind=roles.TABLE_FUNCTION)
_GRANTED = Sight("grantee", ("GRANTEE",))
_GRANTED_NOT_PUBLIC = Sight("grantee", ("GRANTEE",), public=False)

#: GoogleSQL: the row-filtered views of https://cloud.google.com/spanner/docs/information-schema.
RULES: dict[str, Sight] = {
    "TABLES": _TABLE,
    "COLUMNS": _COLUMN,
    "COLUMN_OPTIONS": _COLUMN,
    "COLUMN_PRIVILEGES": _COLUMN,
    "KEY_COLUMN_USAGE": _COLUMN,
    "TABLE_PRIVILEGES": Sight("relation", ("TABLE_NAME",), _ANY_TABLE),
    "INDEXES": Sight("index", ("TABLE_NAME", "INDEX_NAME"), _ANY_TABLE, _ANY_COLUMN),
    "INDEX_COLUMNS": Sight("index", ("TABLE_NAME", "INDEX_NAME"), _ANY_COLUMN, _ANY_COLUMN),
    "VIEWS": Sight("object", ("TABLE_NAME",), (roles.SELECT,), kind=roles.VIEW),
    "CHANGE_STREAMS": _STREAM,
    "CHANGE_STREAM_TABLES": _STREAM,
    "CHANGE_STREAM_COLUMNS": _STREAM,
    "CHANGE_STREAM_OPTIONS": _STREAM,
    "SEQUENCES": _SEQUENCE,
    "SEQUENCE_OPTIONS": _SEQUENCE,
    "ROUTINES": _ROUTINE,
    "ROUTINE_OPTIONS": _ROUTINE,
    "PARAMETERS": _ROUTINE,
    "ROLES": Sight("role", ("ROLE_NAME",)),
    "ROLE_GRANTEES": Sight("role", ("GRANTEE",)),
    "CHANGE_STREAM_PRIVILEGES": _GRANTED,
    "ROUTINE_PRIVILEGES": _GRANTED,
    "ROLE_TABLE_GRANTS": _GRANTED_NOT_PUBLIC,
    "ROLE_COLUMN_GRANTS": _GRANTED_NOT_PUBLIC,
    "ROLE_CHANGE_STREAM_GRANTS": _GRANTED_NOT_PUBLIC,
    "ROLE_ROUTINE_GRANTS": _GRANTED_NOT_PUBLIC,
}
#: PostgreSQL (https://cloud.google.com/spanner/docs/information-schema-pg): the privilege views show
#: what was granted to the role's roles; indexes, key columns, column options and sequences are not
#: filtered; constraints show for the tables the role may write.
PG_RULES: dict[str, Sight] = {
    **{view: sight for view, sight in RULES.items()
       if view not in {"INDEXES", "INDEX_COLUMNS", "KEY_COLUMN_USAGE", "COLUMN_OPTIONS", "SEQUENCES", "SEQUENCE_OPTIONS"}},
    "COLUMN_PRIVILEGES": _GRANTED,
    "TABLE_PRIVILEGES": _GRANTED,
    "ENABLED_ROLES": Sight("role", ("ROLE_NAME",)),
    "APPLICABLE_ROLES": Sight("role", ("GRANTEE",)),
    "TABLE_CONSTRAINTS": Sight("relation", ("TABLE_NAME",), _WRITE_TABLE, _WRITE_COLUMN),
    "REFERENTIAL_CONSTRAINTS": Sight("constraint", ("CONSTRAINT_NAME",), _WRITE_TABLE, _WRITE_COLUMN),
}


def rules_of(catalog: Catalog) -> dict[str, Sight]:
    """The row filters of ``catalog``'s dialect, keyed by upper-case view name."""
    return PG_RULES if catalog.dialect == dialects.POSTGRESQL else RULES


def filters(catalog: Catalog, role: str) -> bool:
    """True when a session with ``role`` sees INFORMATION_SCHEMA filtered (a role, not a member of ``spanner_info_reader``).

    >>> filters(Catalog(roles=("r",)), "r"), filters(Catalog(), "")
    (True, False)
    """
    return bool(role) and roles.INFO_READER not in roles.effective_roles(catalog.memberships, role)


def visible(catalog: Catalog, role: str, view: str, names: Sequence[str], rows: list[tuple]) -> list[tuple]:
    """The ``rows`` of ``view`` (columns ``names``, upper-case) a session with ``role`` sees."""
    sight = rules_of(catalog).get(view.upper())
    if sight is None or not filters(catalog, role):
        return rows
    seer = _Seer(catalog, role)
    at = [list(names).index(c) for c in sight.columns]
    return [row for row in rows if seer.sees(sight, [row[i] for i in at])]


class _Seer:
    def __init__(self, catalog: Catalog, role: str) -> None:
        self.catalog = catalog
        self.held = roles.effective_roles(catalog.memberships, role)

    def holds(self, privileges: Sequence[str], kind: str, name: str, column: str | None = None) -> bool:
        return any(roles.holds(self.catalog.grants, self.held, p, kind, name, column) for p in privileges)

    def sees(self, sight: Sight, named: list[object]) -> bool:
        return bool(getattr(self, "_" + sight.test)(sight, *[str(v) if v is not None else "" for v in named]))

    def _relation(self, sight: Sight, name: str) -> bool:
        table = self.catalog.table(name)
        if table is None:
            return roles.SELECT in sight.privileges and self.holds((roles.SELECT,), roles.VIEW, name)
        return self.holds(sight.privileges, roles.TABLE, table.name) or any(
            g.column is not None and g.kind == roles.TABLE and g.name.lower() == table.name.lower()
            and g.privilege in sight.column_privileges and g.grantee.lower() in self.held for g in self.catalog.grants)

    def _column(self, sight: Sight, table: str, column: str) -> bool:
        if self.catalog.table(table) is None:
            return self.holds((roles.SELECT,), roles.VIEW, table)
        return self.holds(sight.privileges, roles.TABLE, table, column)

    def _index(self, sight: Sight, table: str, index: str) -> bool:
        if self.holds(sight.privileges, roles.TABLE, table):
            return True
        columns = self._index_columns(table, index)
        return bool(columns) and all(self.holds(sight.column_privileges, roles.TABLE, table, c) for c in columns)

    def _index_columns(self, table_name: str, index: str) -> list[str]:
        table = self.catalog.table(table_name)
        if table is None:
            return []
        if index == _PRIMARY_KEY:
            return [p.column for p in table.primary_key]
        for i in self.catalog.indexes_of(table.name):
            if i.name == index:
                return [p.column for p in i.key] + list(i.storing)
        for s in self.catalog.search_indexes_of(table.name):
            if s.name == index:
                return list(s.columns) + list(s.storing)
        return []

    def _object(self, sight: Sight, name: str) -> bool:
        return self.holds(sight.privileges, sight.kind, name)

    def _grantee(self, sight: Sight, grantee: str) -> bool:
        low = grantee.lower()
        return low in self.held and (sight.public or low != roles.PUBLIC)

    def _role(self, sight: Sight, name: str) -> bool:
        return name.lower() in self.held

    def _constraint(self, sight: Sight, name: str) -> bool:
        for t in self.catalog.tables:
            if any(fk.name == name for fk in t.foreign_keys):
                return self._relation(sight, t.name)
        return False
