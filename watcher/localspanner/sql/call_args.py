"""The arguments of a function call as the function's handlers see them.

:class:`CallTranslator` is the base of the function handler classes: it lists a call's
arguments in GoogleSQL's order (sqlglot keeps them under named keys, an anonymous call
under ``expressions``) and checks their count against the function's row.

Example:
    >>> import sqlglot
    >>> node = sqlglot.parse_one("ARRAY_SLICE(a, 1, 2)", read="bigquery")
    >>> [e.sql() for e in positional(node, "this", "start", "end")]
    ['a', '1', '2']
"""

from __future__ import annotations

from sqlglot import exp

from .. import errors
from .function_table import Function
from .operators import OperatorTranslator


def positional(node: exp.Expression, *keys: str) -> list[exp.Expression]:
    """``node``'s arguments under ``keys`` in order (a list key spreads); an anonymous call's as written."""
    if isinstance(node, exp.Anonymous):
        return list(node.expressions)
    out: list[exp.Expression] = []
    for key in keys:
        value = node.args.get(key)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, exp.Expression):
                out.append(item.expression if isinstance(item, exp.Kwarg) else item)  # name => value by position
    return out


class CallTranslator(OperatorTranslator):
    """Shared by the function handler classes."""

    def check_arity(self, row: Function, count: int) -> None:
        """INVALID_ARGUMENT naming the function when ``count`` arguments do not fit its row."""
        low, high = row.arity
        if count < low or (high is not None and count > high):
            raise self.ctx.invalid(errors.function_arity(row.name, count, row.arity_text))
