"""Query parameters: their types (declared or inferred) and their values in stored form.

Clients may leave ``param_types`` out for some or all parameters; then the type comes
from what the statement does with the parameter (compared with a TIMESTAMP column, used
as LIMIT, ...) when the translator learned it, else from the wire value itself
(``values.infer_type``). A value that fits neither is a clear INVALID_ARGUMENT.

Example:
    >>> from watcher.localspanner.common.requests import Statement
    >>> types, declared, sig = parameter_types(Statement("SELECT @n", {"n": "5"}))
    >>> str(types["n"]), sorted(declared)
    ('INT64', [])
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .. import errors
from ..common.requests import Statement
from ..datamodel import values
from ..datamodel.types import SpannerType
from ..information import information_schema
from .context import INFORMATION_VIEW_PARAM_PREFIX, NOW_PARAM, SYSTEM_VIEW_PARAM_PREFIX, Context

Signature = tuple[tuple[str, str, bool], ...]
#: The rows (stored form) of a SPANNER_SYS table by name, computed when a query reads it.
SystemRows = Callable[[str], list[tuple]]


def parameter_types(statement: Statement) -> tuple[dict[str, SpannerType], frozenset[str], Signature]:
    """Types by lower-case name, the names whose type was declared, and a hashable signature."""
    declared = {name.lower(): t for name, t in statement.param_types.items()}
    types = dict(declared)
    for name, value in statement.params.items():
        low = name.lower()
        if low not in types:
            types[low] = values.infer_type(value)
    signature = tuple(sorted((n, str(t), n in declared) for n, t in types.items()))
    return types, frozenset(declared), signature


def bind(statement: Statement, ctx: Context, now_nanos: int, system_rows: SystemRows | None = None) -> dict[str, Any]:
    """The SQLite bindings (stored form) for the parameters the translation uses.

    ``system_rows`` gives the rows of the SPANNER_SYS tables the statement reads (None: it may read none).
    """
    wire_values = {name.lower(): (name, value) for name, value in statement.params.items()}
    out: dict[str, Any] = {}
    for low in ctx.used_params:
        if low not in wire_values:
            raise errors.unbound_parameter(statement.sql, low)
        name, wire = wire_values[low]
        out[low] = _stored(name, wire, ctx.param_types[low], ctx.expected.get(low) if low not in ctx.declared else None)
    if ctx.uses_now:
        out[NOW_PARAM] = values.nanos_to_stored(now_nanos)
    for view in sorted(ctx.system_views):
        if system_rows is None:
            raise errors.sql_unsupported(statement.sql, errors.feature_spanner_sys("SPANNER_SYS", view))
        out[SYSTEM_VIEW_PARAM_PREFIX + view] = json.dumps(system_rows(view))
    for view in sorted(ctx.information_views):  # as the statement's role sees them
        out[INFORMATION_VIEW_PARAM_PREFIX + view] = json.dumps(
            information_schema.view_rows(ctx.catalog, view, statement.database_role))
    return out


def _stored(name: str, wire: Any, declared_or_inferred: SpannerType, expected: SpannerType | None) -> Any:
    if expected is not None:
        try:
            return values.wire_to_stored(expected, wire)
        except values.ValueError_:
            pass  # lenient: fall back to the type the value suggests
    try:
        return values.wire_to_stored(declared_or_inferred, wire)
    except values.ValueError_:
        raise errors.bad_parameter(name, str(expected or declared_or_inferred), wire) from None
