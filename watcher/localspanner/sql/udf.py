"""Registering Python functions in SQLite, and carrying their errors back to the caller.

SQLite reports any exception raised inside a user-defined function as the bare
"user-defined function raised exception". To give the client Spanner's message
(e.g. "division by zero"), a function calls :func:`fail`, which remembers the message
in a thread-local slot before raising; the executor picks it up with
:func:`take_error` when SQLite's error arrives. SQLite runs functions on the calling
thread, so the slot cannot mix up two statements.

Example:
    >>> import sqlite3
    >>> conn = sqlite3.connect(":memory:")
    >>> register(conn, [UdfSpec("ls_twice", 1, lambda x: fail("no") if x is None else 2 * x)])
    >>> conn.execute("SELECT ls_twice(21)").fetchone()
    (42,)
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

_slot = threading.local()


class UdfError(Exception):
    """Raised inside a SQL function; the message is what the client sees."""


def fail(message: str) -> NoReturn:
    """Abort the running SQL function with a client-visible message.

    >>> try:
    ...     fail("division by zero")
    ... except UdfError:
    ...     take_error()
    'division by zero'
    """
    _slot.message = message
    raise UdfError(message)


def fail_with(error: Exception) -> NoReturn:
    """Abort the running SQL function with a ready client-visible error (its code as well as its message).

    >>> try:
    ...     fail_with(ValueError("no"))
    ... except UdfError:
    ...     take_raised()
    ValueError('no')
    """
    _slot.error = error
    fail(str(error))


def take_raised() -> Exception | None:
    """The error given to :func:`fail_with` by the last failed SQL function on this thread (and forget it)."""
    error = getattr(_slot, "error", None)
    _slot.error = None
    return error


def take_error() -> str | None:
    """The message of the last failed SQL function on this thread (and forget it)."""
    message = getattr(_slot, "message", None)
    _slot.message = None
    return message


def clear_error() -> None:
    _slot.message = None
    _slot.error = None


@dataclass(frozen=True)
class UdfSpec:
    """One SQL function: SQLite name, argument count (-1: any), implementation."""

    name: str
    nargs: int
    fn: Callable[..., Any]
    deterministic: bool = True


def _guarded(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    # Any Python error inside a function becomes a message naming the function rather
    # than SQLite's anonymous "user-defined function raised exception".
    public = name.removeprefix("ls_").upper()

    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except UdfError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported to the client, never swallowed
            fail(f"Error evaluating {public}: {exc}")

    return call


def register(conn: sqlite3.Connection, specs: Sequence[UdfSpec]) -> None:
    """Install ``specs`` on ``conn`` (deterministic ones may appear in generated columns)."""
    for spec in specs:
        conn.create_function(spec.name, spec.nargs, _guarded(spec.name, spec.fn), deterministic=spec.deterministic)
