"""What a session's database role may do: the privilege checks of fine-grained access control.

A session created without a role has the database's full access (a principal with
database-level IAM access). With a role, every request needs privileges held by the role,
the roles it is a member of, or ``public`` (``roles.effective_roles``):

* Read: SELECT on each column read (a table-level grant covers them all);
* a query: SELECT on each table and view it names, at column level for the columns it
  reads when the role has no table-level grant, each column on the table it resolves to
  (``sql.column_refs``; by name on every table that has it where names cannot be resolved;
  ``*`` reads every visible column of the sources it covers); a view
  of SQL SECURITY INVOKER also needs what its own query needs; INFORMATION_SCHEMA is open
  to every role and SPANNER_SYS to members of ``spanner_sys_reader``;
* DML: INSERT on the columns inserted (INSERT OR UPDATE: UPDATE too), UPDATE on those set,
  DELETE on the table, and SELECT on the target's columns the statement reads (WHERE, values,
  THEN RETURN);
* mutations: insert INSERT, update UPDATE, insert_or_update both, replace INSERT and DELETE,
  delete DELETE; on the columns written (UPDATE: but the key, which only names the row);
* a change stream query: SELECT on the stream and EXECUTE on its read function.

Example:
    >>> from watcher.localspanner.schema.schema_updater import apply_statements
    >>> from watcher.localspanner.schema.catalog import Catalog
    >>> cat, _ = apply_statements(Catalog(), ["CREATE TABLE T (K INT64, V STRING(MAX)) PRIMARY KEY (K)",
    ...                                       "CREATE ROLE r", "GRANT SELECT(K) ON TABLE T TO ROLE r"])
    >>> check_statement(cat, "r", "SELECT K FROM T WHERE K > 0")
    >>> try:
    ...     check_statement(cat, "r", "SELECT V FROM T")
    ... except errors.SpannerError as exc:
    ...     print(exc.code.name, exc.message.split(":")[0])
    PERMISSION_DENIED Role r does not have required privileges on table T
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from sqlglot import exp

from . import errors
from .change_streams import pg_reads
from .change_streams.read_function import is_change_stream_read
from .change_streams.read_function import parse as parse_read
from .common.requests import Mutation, Statement
from .dialects import dialects
from .schema import roles
from .schema.catalog import Catalog
from .schema.role_rules import read_function
from .sql.column_refs import columns_read
from .sql.spanner_syntax import preprocess
from .sql.translator import parse

#: The privileges each mutation kind needs on the columns it writes (DELETE: on the table).
MUTATION_PRIVILEGES = {"insert": (roles.INSERT,), "update": (roles.UPDATE,),
                       "insert_or_update": (roles.INSERT, roles.UPDATE), "replace": (roles.INSERT, roles.DELETE),
                       "delete": (roles.DELETE,)}
_WITH_ACTION = re.compile(r"\s*WITH\s+ACTION(?:\s+AS\s+\w+)?\s*", re.IGNORECASE)
_OPEN_SCHEMA = "information_schema."
_SYS_SCHEMA = "spanner_sys."


def check_session_role(catalog: Catalog, role: str, database: str) -> None:
    """A session may take ``role`` only when the database has it.

    >>> check_session_role(Catalog(), "public", "d")
    >>> try:
    ...     check_session_role(Catalog(), "nobody", "d")
    ... except errors.SpannerError as exc:
    ...     print(exc.code.name)
    PERMISSION_DENIED
    """
    if role and catalog.role(role) is None:
        raise errors.session_role_not_found(role, database)


class _Checker:
    def __init__(self, catalog: Catalog, role: str) -> None:
        self.catalog = catalog
        self.role = role
        self.held = roles.effective_roles(catalog.memberships, role)

    def has(self, privilege: str, kind: str, name: str, column: str | None = None) -> bool:
        return roles.holds(self.catalog.grants, self.held, privilege, kind, name, column)

    def need(self, privilege: str, kind: str, name: str, columns: Iterable[str] | None = None) -> None:
        """``privilege`` on the object, or (``columns``) on each of them; a table-level grant covers all columns."""
        if self.has(privilege, kind, name):
            return
        if columns is None:
            raise errors.privilege_denied(self.role, privilege, kind, name)
        wanted = list(columns)
        for column in wanted:
            if not self.has(privilege, kind, name, column):
                raise errors.privilege_denied(self.role, privilege, kind, name, column)
        if not wanted and not any(g.privilege == privilege and g.kind == kind and g.name.lower() == name.lower()
                                  and g.grantee.lower() in self.held for g in self.catalog.grants):
            raise errors.privilege_denied(self.role, privilege, kind, name)


def check_read(catalog: Catalog, role: str, table: str, columns: Iterable[str]) -> None:
    """A Read of ``columns`` of ``table`` (an unknown table is left to the read itself).

    >>> from watcher.localspanner.schema.schema_updater import apply_statements
    >>> cat, _ = apply_statements(Catalog(), ["CREATE TABLE T (K INT64) PRIMARY KEY (K)", "CREATE ROLE r",
    ...                                       "GRANT SELECT ON TABLE T TO ROLE public"])
    >>> check_read(cat, "r", "t", ["k"])
    """
    found = catalog.table(table)
    if role and found is not None:
        names = [(found.column(c).name if found.column(c) is not None else c) for c in columns]  # type: ignore[union-attr]
        _Checker(catalog, role).need(roles.SELECT, roles.TABLE, found.name, names)


def check_mutations(catalog: Catalog, role: str, mutations: Iterable[Mutation]) -> None:
    """The mutations of a commit (unknown tables and columns are left to the commit).

    >>> from watcher.localspanner.schema.schema_updater import apply_statements
    >>> cat, _ = apply_statements(Catalog(), ["CREATE TABLE T (K INT64, V INT64) PRIMARY KEY (K)", "CREATE ROLE r",
    ...                                       "GRANT UPDATE(V) ON TABLE T TO ROLE r"])
    >>> check_mutations(cat, "r", [Mutation("update", "T", ("K", "V"))])
    """
    if not role:
        return
    checker = _Checker(catalog, role)
    for m in mutations:
        table = catalog.table(m.table)
        if table is None:
            continue
        written = [table.column(c).name if table.column(c) is not None else c for c in m.columns]  # type: ignore[union-attr]
        keys = {k.lower() for k in table.key_names}
        for privilege in MUTATION_PRIVILEGES.get(m.op, ()):
            if privilege == roles.DELETE:
                checker.need(privilege, roles.TABLE, table.name)
            else:  # an update names its row by the key, which it does not change
                checker.need(privilege, roles.TABLE, table.name,
                             [c for c in written if privilege == roles.INSERT or c.lower() not in keys])


def check_statement(catalog: Catalog, role: str, sql: str, original: str | None = None) -> None:
    """A query, DML statement or change stream query as the database runs it (GoogleSQL ``sql``);
    ``original`` is what a PostgreSQL database was sent. Syntax errors are left to the statement itself."""
    if not role:
        return
    checker = _Checker(catalog, role)
    if is_change_stream_read(sql):
        _check_stream_read(checker, sql, original)
        return
    pre = preprocess(sql)
    try:
        tree = parse(pre, sql)
    except errors.SpannerError:
        return
    _check_tree(checker, tree, upsert=pre.insert_mode == "UPDATE")
    if pre.then_return is not None and isinstance(tree, (exp.Insert, exp.Update, exp.Delete)):
        _check_returned(checker, tree, pre.then_return)


def _check_returned(checker: _Checker, tree: exp.Expression, returned: str) -> None:
    """``THEN RETURN [WITH ACTION [AS a]] exprs``: SELECT on the target's columns returned."""
    target = tree.find(exp.Table)
    if target is None or checker.catalog.table(target.name) is None:
        return
    exprs = _WITH_ACTION.sub("", returned, count=1)
    text = f"SELECT {exprs} FROM {checker.catalog.table(target.name).name} AS {target.alias_or_name}"  # type: ignore[union-attr]
    try:
        _check_tree(checker, parse(preprocess(text), text))
    except errors.SpannerError as exc:
        if exc.code == errors.Code.PERMISSION_DENIED:
            raise
        checker.need(roles.SELECT, roles.TABLE, target.name, [])


def check_batch(catalog: Catalog, role: str, run: list[Statement], sent: list[Statement],
                refused: errors.SpannerError | None) -> tuple[list[Statement], errors.SpannerError | None]:
    """A batch DML request as ``dialect_statements.batch_in_dialect`` gave it (``run``, ``refused``), cut at
    its first statement the role may not run: that one runs as empty text and its refusal is the batch's,
    so the statements before it run, as on Spanner.

    >>> from watcher.localspanner.schema.schema_updater import apply_statements
    >>> cat, _ = apply_statements(Catalog(), ["CREATE TABLE T (K INT64) PRIMARY KEY (K)", "CREATE ROLE r",
    ...                                       "GRANT UPDATE, SELECT ON TABLE T TO ROLE r"])
    >>> sent = [Statement("UPDATE T SET K = 1 WHERE TRUE"), Statement("DELETE FROM T WHERE TRUE")]
    >>> run, refused = check_batch(cat, "r", sent, sent, None)
    >>> [s.sql for s in run], refused.code.name
    (['UPDATE T SET K = 1 WHERE TRUE', ''], 'PERMISSION_DENIED')
    """
    if not role:
        return run, refused
    for i, (statement, written) in enumerate(zip(run, sent, strict=False)):
        if not statement.sql:
            break
        try:
            check_statement(catalog, role, statement.sql, written.sql)
        except errors.SpannerError as exc:
            return [*run[:i], dataclasses.replace(statement, sql="")], exc
    return run, refused


def _check_stream_read(checker: _Checker, sql: str, original: str | None) -> None:
    try:
        stream_name = parse_read(Statement(sql)).stream
    except errors.SpannerError:
        return
    stream = checker.catalog.change_stream(stream_name)
    if stream is None:
        return
    checker.need(roles.SELECT, roles.CHANGE_STREAM, stream.name)
    function = pg_reads.read_function(original) if original is not None else None
    if checker.catalog.dialect == dialects.POSTGRESQL and function is not None:
        name = function.prefix + stream.name
    else:
        name = read_function(stream.name, checker.catalog.dialect)
    checker.need(roles.EXECUTE, roles.TABLE_FUNCTION, name)


def _check_tree(checker: _Checker, tree: exp.Expression, *, upsert: bool = False) -> None:
    catalog = checker.catalog
    ctes = {c.alias.lower() for c in tree.find_all(exp.CTE)}
    tables = [t for t in tree.find_all(exp.Table) if t.name.lower() not in ctes]
    target = tables[0] if isinstance(tree, (exp.Insert, exp.Update, exp.Delete)) and tables else None
    written = _written_columns(tree)
    star = _selects_star(tree)
    resolved = _columns_read(catalog, tree)
    for t in tables:
        low = f"{t.db}.{t.name}".lower() if t.db else t.name.lower()
        if low.startswith(_OPEN_SCHEMA):
            continue
        if low.startswith(_SYS_SCHEMA):
            if roles.SYS_READER not in checker.held:
                raise errors.system_view_denied(checker.role, f"{t.db}.{t.name}" if t.db else t.name)
            continue
        table, view = catalog.table(t.name), catalog.view(t.name)
        if view is not None and table is None:
            checker.need(roles.SELECT, roles.VIEW, view.name)
            if view.security.upper() == "INVOKER":
                _check_tree(checker, parse(preprocess(view.definition), view.definition))
            continue
        if table is None:
            continue
        if resolved is not None:
            read = sorted(resolved.get(table.name, ()))
            if t is target:
                own = _columns_named(tree, table, {t.alias_or_name.lower(), table.name.lower()}, outside_queries=True)
                read += [c for c in own if c.lower() not in written and c not in read]
        else:
            qualifiers = {t.alias_or_name.lower(), table.name.lower()}
            read = [c for c in _columns_named(tree, table, qualifiers) if t is not target or c.lower() not in written]
            if star and t is not target:
                read = [c.name for c in table.columns if not c.hidden]
        if t is target:
            _check_target(checker, tree, table.name, written, upsert)
            if read:
                checker.need(roles.SELECT, roles.TABLE, table.name, read)
        else:
            checker.need(roles.SELECT, roles.TABLE, table.name, read)


def _check_target(checker: _Checker, tree: exp.Expression, table: str, written: set[str], upsert: bool) -> None:
    found = checker.catalog.table(table)
    assert found is not None
    names = [found.column(c).name if found.column(c) is not None else c for c in written]  # type: ignore[union-attr]
    if isinstance(tree, exp.Delete):
        checker.need(roles.DELETE, roles.TABLE, table)
    elif isinstance(tree, exp.Insert):
        checker.need(roles.INSERT, roles.TABLE, table, names)
        if upsert:  # INSERT OR UPDATE changes the rows that exist: UPDATE on what it writes but the key
            keys = {k.lower() for k in found.key_names}
            checker.need(roles.UPDATE, roles.TABLE, table, [c for c in names if c.lower() not in keys])
    else:
        checker.need(roles.UPDATE, roles.TABLE, table, names)


def _columns_read(catalog: Catalog, tree: exp.Expression) -> dict[str, set[str]] | None:
    """{table: columns} the statement reads, each column resolved to its table by scope (a DML target's
    own columns aside); None when names cannot be resolved, which leaves the coarser check by name."""
    schema: dict[str, list[str]] = {v.name: [c.name for c in v.columns] for v in catalog.views}
    schema.update({t.name: [c.name for c in t.columns if not c.hidden] for t in catalog.tables})
    hidden = {t.name: [c.name for c in t.columns if c.hidden] for t in catalog.tables}
    return columns_read(tree, schema, hidden)


def _written_columns(tree: exp.Expression) -> set[str]:
    """The columns an INSERT lists or an UPDATE sets, lower-cased."""
    if isinstance(tree, exp.Insert) and isinstance(tree.this, exp.Schema):
        return {i.name.lower() for i in tree.this.expressions}
    if isinstance(tree, exp.Update):
        return {e.this.name.lower() for e in tree.expressions if isinstance(e, exp.EQ) and isinstance(e.this, exp.Column)}
    return set()


def _selects_star(tree: exp.Expression) -> bool:
    """True when a SELECT list has ``*`` or ``t.*`` (not ``COUNT(*)``)."""
    for select in tree.find_all(exp.Select):
        for e in select.expressions:
            if isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star)):
                return True
    return False


def _columns_named(tree: exp.Expression, table, qualifiers: set[str], *,  # type: ignore[no-untyped-def]
                   outside_queries: bool = False) -> list[str]:
    """The columns of ``table`` the statement names, unqualified or qualified by its alias or name
    (``outside_queries``: only where no subquery is, as a DML statement names its target's columns)."""
    out: list[str] = []
    for c in tree.find_all(exp.Column):
        if (c.table and c.table.lower() not in qualifiers) or (outside_queries and c.find_ancestor(exp.Query) is not None):
            continue
        column = table.column(c.name) if c.name != "*" else None
        if column is not None and column.name not in out:
            out.append(column.name)
    return out
