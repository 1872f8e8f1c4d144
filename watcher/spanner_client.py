"""What the watcher asks of google-cloud-spanner beyond calling it: the one place that knows the client.

Everything here uses the client's public API, except :func:`emulator_host`, which the client
keeps no public accessor for; ``tests/watcher/test_spanner_client.py`` fails when a client
release changes any of it, and pyproject.toml bounds the client's versions to those tested.

Example:
    >>> database_path("projects/p/instances/i/databases/d")
    ('p', 'i', 'd')
"""

from __future__ import annotations

import os
import re
from typing import Any

from .errors import ConfigurationError

EMULATOR_ENV = "SPANNER_EMULATOR_HOST"
_DATABASE_NAME = re.compile(r"^projects/([^/]+)/instances/([^/]+)/databases/([^/]+)$")


def read_timestamp(results: Any) -> Any:
    """The read timestamp a read-only query ran at, from its result set's metadata; None if the server sent none.

    Works for a single-use snapshot's query and for the first query of a multi-use snapshot
    (which begins its transaction): both ask the server to return the read timestamp. Read it
    after the rows, when the metadata has arrived.
    """
    metadata = getattr(results, "metadata", None)
    transaction = getattr(metadata, "transaction", None) if metadata is not None else None
    ts = getattr(transaction, "read_timestamp", None) if transaction is not None else None
    if ts is None or (ts.timestamp() == 0 and not getattr(ts, "nanosecond", 0)):
        return None  # an unset Timestamp message reads as the epoch
    return ts


def strong_read_timestamp(snapshot: Any, request_options: dict[str, Any] | None = None) -> Any:
    """Begin ``snapshot`` (a multi-use read-only snapshot not yet used) with a query, and return its read timestamp.

    The query is the transaction's first, so the server fixes the timestamp now and reports it;
    it carries ``request_options`` (the caller's request tag).
    """
    results = snapshot.execute_sql("SELECT 1", request_options=request_options)
    list(results)
    return read_timestamp(results)


def database_path(name: str) -> tuple[str, str, str]:
    """Project, instance and database of a database's full name (``Database.name``).

    >>> database_path("databases/d")
    Traceback (most recent call last):
    ...
    watcher.errors.ConfigurationError: 'databases/d' is not a database name of the form projects/P/instances/I/databases/D
    """
    match = _DATABASE_NAME.match(name or "")
    if match is None:
        raise ConfigurationError(f"{name!r} is not a database name of the form projects/P/instances/I/databases/D")
    project, instance, database = match.groups()
    return project, instance, database


def emulator_host(database: Any) -> str | None:
    """The emulator (or embedded server) address the database's client talks to; None for Cloud Spanner.

    The client keeps it privately (set from SPANNER_EMULATOR_HOST, or from an ``api_endpoint``
    given with anonymous credentials); the environment variable is the fallback.
    """
    instance = getattr(database, "_instance", None)
    client = getattr(instance, "_client", None)
    host = getattr(client, "_emulator_host", None)
    return host or os.environ.get(EMULATOR_ENV) or None
