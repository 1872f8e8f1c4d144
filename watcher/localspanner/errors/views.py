"""Errors of views: their DDL, the objects they depend on, and attempts to write them."""

from __future__ import annotations

from .base import Code, SpannerError, _clip, failed_precondition, invalid_argument


def view_missing_security(statement: str, view: str) -> SpannerError:
    """Spanner has no default SQL SECURITY: ``CREATE VIEW v AS ...`` alone is refused."""
    return invalid_argument(
        f"Error parsing Spanner DDL statement: {_clip(statement)} : View {view} is missing the SQL SECURITY clause "
        "(SQL SECURITY INVOKER or SQL SECURITY DEFINER)"
    )


def view_not_found(view: str) -> SpannerError:
    return SpannerError(Code.NOT_FOUND, f"View not found: {view}")


def view_query_invalid(statement: str, view: str, detail: str) -> SpannerError:
    return invalid_argument(f"Error analyzing the definition of view {view}: {detail} (statement: {_clip(statement)})")


def view_dependents_block(statement: str, kind: str, name: str, views: list[str]) -> SpannerError:
    """Dropping (or changing) an object that views still read."""
    return failed_precondition(
        f"Cannot drop {kind} {name} on which there are dependent views: {', '.join(views)} (statement: {_clip(statement)})"
    )


def view_broken_by(statement: str, view: str, detail: str) -> SpannerError:
    return failed_precondition(
        f"Schema change would break view {view}: {detail} (statement: {_clip(statement)})"
    )


def view_written(view: str, *, in_sql: bool) -> SpannerError:
    """A mutation (NOT_FOUND, like any unknown table) or a DML statement (INVALID_ARGUMENT) naming a view."""
    message = f"Table not found: {view} ({view} is a view, and views cannot be written)"
    return invalid_argument(message) if in_sql else SpannerError(Code.NOT_FOUND, message)


def view_column_unnamed(position: int, view: str) -> str:
    """Detail for ``view_query_invalid``: a view column needs a name."""
    return f"column {position} of view {view} has no name; give it one with AS"


def view_would_read_itself(view: str) -> str:
    """Detail for ``view_query_invalid``: the view is part of a cycle."""
    return f"view {view} would read itself"
