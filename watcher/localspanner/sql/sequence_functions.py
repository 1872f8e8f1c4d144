"""The sequence functions of GoogleSQL: GET_NEXT_SEQUENCE_VALUE, GET_INTERNAL_SEQUENCE_STATE, BIT_REVERSE.

``spanner_syntax.preprocess`` turns ``f(SEQUENCE name)`` into ``f('name')`` so sqlglot can
parse it; :func:`translate` checks that the sequence exists and emits a call of the SQLite
function that draws from (or reads) the database's counters (``sequences.py``), which the
engine makes available to the statements it runs. A query that draws a value must run in a
read/write transaction: :func:`check_can_draw` refuses it otherwise, before it runs.

Example:
    >>> from watcher.localspanner.schema.catalog import Catalog, Sequence
    >>> translate("GET_NEXT_SEQUENCE_VALUE", "s", Catalog(sequences=(Sequence("S"),)))
    "ls_sequence_next('S')"
"""

from __future__ import annotations

from typing import Any

from .. import errors
from ..schema.catalog import Catalog
from ..storage.sequences import active, bit_reverse
from .literals import sql_string
from .udf import UdfSpec, fail

#: GoogleSQL name -> SQLite function.
FUNCTIONS = {"GET_NEXT_SEQUENCE_VALUE": "ls_sequence_next", "GET_INTERNAL_SEQUENCE_STATE": "ls_sequence_state"}
_DRAWS = "ls_sequence_next("


def translate(function: str, name: str, catalog: Catalog) -> str:
    """The SQLite call for ``function(SEQUENCE name)``; NOT_FOUND for an unknown sequence."""
    seq = catalog.sequence(name)
    if seq is None:
        raise errors.sequence_not_found(name)
    return f"{FUNCTIONS[function]}({sql_string(seq.name)})"


def uses_sequences(sqlite_sql: str) -> bool:
    """Whether translated SQL calls a sequence function (its rows must be read where the counters are known)."""
    return "ls_sequence_" in sqlite_sql


def check_can_draw(sqlite_sql: str, statement: str) -> None:
    """Refuse a statement that draws sequence values outside a read/write transaction."""
    if _DRAWS in sqlite_sql:
        use = active()
        if use is None or not use.can_draw:
            raise errors.sequence_needs_read_write(statement)


def _next(name: str) -> int:
    use = active()
    if use is None or not use.can_draw:
        fail(errors.SEQUENCE_READ_WRITE_ONLY)
    seq = use.catalog.sequence(name)
    if seq is None:
        fail(errors.sequence_not_found(name).message)
    try:
        return use.counters.next_value(seq)
    except errors.SpannerError as exc:
        fail(exc.message)


def _state(name: str) -> Any:
    use = active()
    seq = use.catalog.sequence(name) if use is not None else None
    return use.counters.state(seq) if use is not None and seq is not None else None


def _bit_reverse(value: Any, preserve_sign: Any) -> Any:
    return None if value is None or preserve_sign is None else bit_reverse(int(value), bool(preserve_sign))


SPECS = (
    UdfSpec("ls_sequence_next", 1, _next, deterministic=False),
    UdfSpec("ls_sequence_state", 1, _state, deterministic=False),
    UdfSpec("ls_bit_reverse", 2, _bit_reverse),
)
