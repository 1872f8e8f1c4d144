"""Which columns of which base tables a query reads, resolved by scope as Spanner resolves names.

A column reference belongs to the nearest source that has it: a table of its own FROM, or
(correlated) of an enclosing query; a select-list alias, a CTE's or subquery's output column
and an UNNEST or STRUCT field are not base-table columns (what a CTE or subquery reads counts
where it reads it); of a DML statement, what its queries read (the target's own columns are left
to the caller, but a query's correlated reference to the target counts). ``*`` and ``t.*`` cover only the sources they name; hidden columns are
never in a ``*``. Names are case-insensitive. When a statement cannot be resolved (unknown
name, ambiguous column, anything sqlglot refuses) the answer is None, so the caller keeps a
coarser check rather than a wrong one.

Example:
    >>> from watcher.localspanner.sql.spanner_syntax import preprocess
    >>> from watcher.localspanner.sql.translator import parse
    >>> sql = "SELECT a.V FROM A a JOIN B b ON a.K = b.K ORDER BY a.K"
    >>> refs = columns_read(parse(preprocess(sql), sql), {"A": ["K", "V"], "B": ["K", "V"]})
    >>> {t: sorted(c) for t, c in sorted(refs.items())}
    {'A': ['K', 'V'], 'B': ['K']}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sqlglot import exp
from sqlglot.errors import SqlglotError
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, find_all_in_scope, traverse_scope

_EXPLICIT = "explicit_reference"


def columns_read(tree: exp.Expression, schema: Mapping[str, Iterable[str]],
                 hidden: Mapping[str, Iterable[str]] | None = None) -> dict[str, set[str]] | None:
    """{base table: columns read} of the parsed ``tree`` (left unchanged), in the spelling of ``schema``
    ({table or view: visible columns}; ``hidden``: columns a ``*`` leaves out); None when it cannot resolve.

    >>> from watcher.localspanner.sql.spanner_syntax import preprocess
    >>> from watcher.localspanner.sql.translator import parse
    >>> sql = "SELECT K AS V FROM T ORDER BY V"
    >>> columns_read(parse(preprocess(sql), sql), {"T": ["K", "V"]})
    {'T': {'K'}}
    >>> columns_read(parse(preprocess("SELECT X FROM T"), "SELECT X FROM T"), {"T": ["K"]}) is None
    True
    """
    hidden = hidden or {}
    names: dict[str, str] = {}
    columns: dict[str, dict[str, str]] = {}
    concealed: dict[str, set[str]] = {}
    for table, cols in schema.items():
        names[table.lower()] = table
        columns[table.lower()] = {c.lower(): c for c in cols}
        concealed[table.lower()] = {c.lower() for c in hidden.get(table, ())}
        columns[table.lower()].update({c.lower(): c for c in hidden.get(table, ())})
    copy = tree.copy()
    for table in copy.find_all(exp.Table):
        if table.args.get("db") or table.args.get("catalog"):
            return None  # INFORMATION_SCHEMA and the like: not in the schema given
    for ident in copy.find_all(exp.Identifier):
        ident.set("this", ident.name.lower())
        ident.set("quoted", False)
    for column in copy.find_all(exp.Column):
        column.meta[_EXPLICIT] = True
    sqlglot_schema = {t: {c: "STRING" for c in cols} for t, cols in columns.items()}
    try:
        qualified = qualify(copy, schema=sqlglot_schema, dialect="bigquery", validate_qualify_columns=True,
                            quote_identifiers=False, identify=False)
        scopes = list(traverse_scope(qualified))
    except (SqlglotError, KeyError, ValueError, TypeError, AttributeError):
        return None
    sourced = {id(s) for scope in scopes for s in scope.sources.values()}
    sourced |= {id(node) for scope in scopes for node, _ in scope.selected_sources.values()}
    target = _target(qualified)
    if any(id(t) not in sourced and t is not target for t in qualified.find_all(exp.Table)):
        return None  # a table in a query sqlglot's scopes leave out
    covered = {id(c) for scope in scopes for c in scope.columns}
    if any(id(c) not in covered and not _alias_reference(c) and c.find_ancestor(exp.Query) is not None
           for c in qualified.find_all(exp.Column)):
        return None  # a query sqlglot's scopes leave out (a DML statement's own columns are the caller's)
    read: dict[str, set[str]] = {}
    for scope in scopes:
        if any(isinstance(s, exp.Table) and s.name.lower() not in columns for s in scope.sources.values()):
            return None  # a table or view the schema does not know
        if isinstance(scope.expression, exp.Select) and any(
                isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))
                for e in scope.expression.expressions):
            return None  # a ``*`` sqlglot could not expand
        for column in scope.columns:
            found = _source(scope, column.table, qualified)
            if found is None:
                return None
            if not isinstance(found, exp.Table):
                continue  # a CTE, subquery, UNNEST or STRUCT field: counted where it reads
            table = found.name.lower()
            if table not in columns or column.name.lower() not in columns[table]:
                return None
            if column.name.lower() in concealed[table] and not column.meta.get(_EXPLICIT):
                if scope.parent is not None or scope.is_cte or scope.is_derived_table:
                    return None  # a hidden column a nested ``*`` took in: the statement fails anyway
                continue
            read.setdefault(names[table], set()).add(columns[table][column.name.lower()])
        for row in find_all_in_scope(scope.expression, exp.TableColumn):  # a range variable as a value: its row
            found = _source(scope, row.name, qualified)
            if found is None:
                return None
            if isinstance(found, exp.Table):
                table = found.name.lower()
                visible = set(columns[table].values()) - {columns[table][c] for c in concealed[table]}
                read.setdefault(names[table], set()).update(visible)
    return read


def _alias_reference(column: exp.Column) -> bool:
    """An unqualified name its SELECT's list gives as an alias (``ORDER BY v`` after ``k AS v``)."""
    node: exp.Expression = column
    while node.parent is not None and not isinstance(node.parent, exp.Select):
        node = node.parent
    select = node.parent
    return (not column.table and isinstance(select, exp.Select) and node.arg_key != "expressions"
            and column.name in select.named_selects)


def _source(scope: Scope, alias: str, root: exp.Expression) -> exp.Expression | Scope | None:
    """The source ``alias`` names in ``scope`` or, for a correlated reference, in an enclosing scope
    (a DML statement's target included)."""
    current: Scope | None = scope
    while current is not None:
        if alias in current.sources:
            return current.sources[alias]
        current = current.parent
    target = _target(root)
    if target is not None and alias in {target.alias_or_name, target.name}:
        return target
    return None


def _target(root: exp.Expression) -> exp.Table | None:
    """The table a DML statement writes."""
    target = root.this if isinstance(root, (exp.Insert, exp.Update, exp.Delete)) else None
    if isinstance(target, exp.Schema):
        target = target.this
    return target if isinstance(target, exp.Table) else None
