"""GoogleSQL on SQLite: translation, SQL functions, and execution of queries and DML.

The public surface used by the rest of the server:
``register_functions``, ``translate_expression``, ``execute_query``, ``execute_dml``,
``is_dml``, ``describe``, ``DmlResult`` and ``PENDING_COMMIT_TIMESTAMP_SENTINEL``.
"""

from __future__ import annotations

from .dml import PENDING_COMMIT_TIMESTAMP_SENTINEL
from .execute import DmlResult, clear_cache, describe, execute_dml, execute_query, is_dml, register_functions
from .time_functions import set_statement_time
from .translator import translate_default_expression, translate_expression

__all__ = [
    "PENDING_COMMIT_TIMESTAMP_SENTINEL",
    "DmlResult",
    "clear_cache",
    "describe",
    "execute_dml",
    "execute_query",
    "is_dml",
    "register_functions",
    "set_statement_time",
    "translate_default_expression",
    "translate_expression",
]
