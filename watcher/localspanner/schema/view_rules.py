"""Views in the schema: CREATE [OR REPLACE] VIEW, DROP VIEW, and keeping existing views valid.

A view's query is analysed when the view is created (it must translate against the
catalog, every output column must have a name) and again after every change to the
tables: a change that would break a view's query is refused, as Spanner refuses
dropping or altering what a view depends on. Queries over a view inline its
definition (``sql/translator.py``), so a view has no storage of its own.

Example:
    >>> from watcher.localspanner.schema.schema_updater import apply_statements
    >>> cat, _ = apply_statements(Catalog(), [
    ...     "CREATE TABLE T (K INT64, V STRING(MAX)) PRIMARY KEY (K)",
    ...     "CREATE VIEW W SQL SECURITY INVOKER AS SELECT T.K, T.V FROM T WHERE T.V IS NOT NULL",
    ... ])
    >>> [(c.name, str(c.type)) for c in cat.view("w").columns], cat.view("w").depends_on
    ([('K', 'INT64'), ('V', 'STRING(MAX)')], ('T',))
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

from sqlglot import exp

from .. import errors
from ..ddl import nodes
from ..sql.spanner_syntax import preprocess
from ..sql.translator import parse, translate_query
from .catalog import Catalog, View, ViewColumn


class _Context(Protocol):
    """What a rule needs of the schema updater's statement context."""

    catalog: Catalog
    statement: str

    def check_new_name(self, kind: str, name: str) -> None: ...

    def wrap(self, error: errors.SpannerError) -> errors.SpannerError: ...


class _Invalid(Exception):
    """Why a view's query is not valid over a catalog (turned into the statement's error by the caller)."""


def analyse(catalog: Catalog, statement: str, name: str, definition: str, security: str) -> View:
    """The view ``name`` as ``definition`` defines it over ``catalog``; raises when the query is not valid."""
    try:
        return _analyse(catalog, name, definition, security)
    except _Invalid as exc:
        raise errors.view_query_invalid(statement, name, str(exc)) from None


def _analyse(catalog: Catalog, name: str, definition: str, security: str) -> View:
    try:
        query = translate_query(definition, catalog)
    except errors.SpannerError as exc:
        raise _Invalid(exc.message) from None
    for position, column in enumerate(query.columns, 1):
        if not column.name:
            raise _Invalid(errors.view_column_unnamed(position, name))
    depends = _depends_on(catalog, definition)
    if name.lower() in _closure(catalog, depends):
        raise _Invalid(errors.view_would_read_itself(name))
    columns = tuple(ViewColumn(c.name, c.type) for c in query.columns)
    return View(name, definition, security, columns, depends)


def _depends_on(catalog: Catalog, definition: str) -> tuple[str, ...]:
    """The tables and views (declared names) the query reads, in first-mention order."""
    tree = parse(preprocess(definition), definition)
    ctes = {c.alias.lower() for c in tree.find_all(exp.CTE)}
    out: list[str] = []
    for t in tree.find_all(exp.Table):
        if t.db or t.name.lower() in ctes:
            continue
        found = catalog.table(t.name) or catalog.view(t.name)
        if found is not None and found.name not in out:
            out.append(found.name)
    return tuple(out)


def _closure(catalog: Catalog, names: tuple[str, ...]) -> set[str]:
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name.lower() in seen:
            continue
        seen.add(name.lower())
        view = catalog.view(name)
        if view is not None:
            todo.extend(view.depends_on)
    return seen


def create(ctx: _Context, node: nodes.CreateView) -> Catalog:
    catalog = ctx.catalog
    existing = catalog.view(node.name)
    if existing is None or not node.or_replace:
        ctx.check_new_name("view", node.name)
    view = analyse(catalog, ctx.statement, existing.name if existing else node.name, node.definition, node.security)
    if existing is None:
        views = (*catalog.views, view)
    else:
        views = tuple(view if v is existing else v for v in catalog.views)
    new = dataclasses.replace(catalog, version=catalog.version + 1, views=views)
    return refresh(ctx.statement, new)


def drop(ctx: _Context, node: nodes.DropView) -> Catalog:
    view = ctx.catalog.view(node.name)
    if view is None:
        raise ctx.wrap(errors.view_not_found(node.name))
    check_no_dependents(ctx.catalog, ctx.statement, "VIEW", view.name)
    views = tuple(v for v in ctx.catalog.views if v is not view)
    return dataclasses.replace(ctx.catalog, version=ctx.catalog.version + 1, views=views)


def check_no_dependents(catalog: Catalog, statement: str, kind: str, name: str) -> None:
    """Refuse to drop a table or view that a view reads."""
    users = [v.name for v in catalog.views_using(name)]
    if users:
        raise errors.view_dependents_block(statement, kind, name, users)


def refresh(statement: str, catalog: Catalog) -> Catalog:
    """``catalog`` with every view analysed again over it (types may have changed); refuses a broken view."""
    if not catalog.views:
        return catalog
    views: list[View] = []
    for view in catalog.views:
        try:
            views.append(_analyse(catalog, view.name, view.definition, view.security))
        except _Invalid as exc:
            raise errors.view_broken_by(statement, view.name, str(exc)) from None
    return dataclasses.replace(catalog, views=tuple(views))
