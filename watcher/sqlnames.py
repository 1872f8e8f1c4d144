"""Identifiers in generated SQL: validated, then back-quoted.

Every name that goes into a statement the watcher or the DDL helpers build passes through
:func:`quote_identifier`, so a hostile table or column name cannot change the statement.

Example:
    >>> quote_identifier("Singers")
    '`Singers`'
    >>> quote_identifier("x`; DROP TABLE t; --")
    Traceback (most recent call last):
    ...
    watcher.errors.InvalidIdentifierError: invalid identifier 'x`; DROP TABLE t; --': ...
"""

from __future__ import annotations

import re

from .errors import InvalidIdentifierError

#: Spanner's rule for table, column and index names.
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,127}$")


def validate_identifier(name: str, what: str = "identifier") -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidIdentifierError(
            f"invalid {what} {name!r}: Spanner names start with a letter and contain only letters, digits "
            "and underscores (at most 128 characters)"
        )
    return name


def quote_identifier(name: str, what: str = "identifier") -> str:
    return f"`{validate_identifier(name, what)}`"
