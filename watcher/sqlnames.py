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
from collections.abc import Iterable, Mapping
from typing import TypeVar

from .errors import InvalidIdentifierError

T = TypeVar("T")

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


def find_name(named: Mapping[str, T], name: str) -> T | None:
    """The entry of ``named`` for the table (or column) ``name``; Spanner names ignore case.

    The one place a table is looked up by name: an exact match wins, then a match in another case.

    >>> find_name({"Singers": 1, "Albums": 2}, "SINGERS"), find_name({"Singers": 1}, "Songs")
    (1, None)
    """
    if name in named:
        return named[name]
    folded = name.casefold()
    return next((value for key, value in named.items() if key.casefold() == folded), None)


def has_name(names: Iterable[str], name: str) -> bool:
    """True when ``names`` holds ``name`` in any case.

    >>> has_name(["AuditLog"], "auditlog")
    True
    """
    return find_name(dict.fromkeys(names, True), name) is not None
