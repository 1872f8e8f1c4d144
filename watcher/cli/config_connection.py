"""The connection and request keys of the ``watch`` configuration: ``[database]``, and ``[watch]``'s
request tags, priority and lag bound.

::

    [database]                     # each name: this, else SPANNER_PROJECT / SPANNER_INSTANCE / SPANNER_DATABASE
    project = "my-project"
    instance = "my-instance"
    database = "my-database"
    credentials = "key.json"       # a key file (relative to this file's folder); default: application default credentials
    endpoint = "us-east1-spanner.googleapis.com:443"   # default: the client's global endpoint
    database_role = "watcher"      # fine-grained access control: the role of every session
    embedded = true                # the embedded local Spanner instead (the default when nothing is named is an error)
    data_dir = "spanner-data"      # embedded local Spanner only: keep its databases here (implies embedded)

    [watch]
    priority = "low"               # low, medium or high for polls and stream reads (default: Spanner's, high)
    request_tag = "orders-cdc"     # on every statement (default "spanner-watcher")
    transaction_tag = "orders-cp"  # on every checkpoint write (default "spanner-watcher-checkpoint")
    max_lag = 300                  # /healthz answers 503 once a table's lag passes this many seconds

A command-line flag wins over its key here (``--project``, ``--credentials``, ``--endpoint``,
``--database-role``, ``--embedded``, ``--data-dir``, ``--priority``, ``--request-tag``,
``--transaction-tag``, ``--max-lag``).

Example:
    >>> from watcher.cli.config import parse_config
    >>> cfg = parse_config('[watch]\\npriority = "low"\\nmax_lag = 60', "w.toml")
    >>> cfg.requests.priority, cfg.max_lag
    ('LOW', 60.0)
    >>> parse_config('[watch]\\npriority = "urgent"', "w.toml")
    Traceback (most recent call last):
    ...
    watcher.cli.config.ConfigError: w.toml: watch.priority: expected "low", "medium" or "high", got 'urgent' (line 2)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError, ConnectionSettingError
from ..request_settings import DEFAULT_REQUEST_TAG, DEFAULT_TRANSACTION_TAG, PRIORITIES, RequestSettings

if TYPE_CHECKING:
    from .config import _Reader

DATABASE_KEYS = ("project", "instance", "database", "data_dir", "embedded", "credentials", "endpoint", "database_role")
#: The [watch] keys read here.
REQUEST_KEYS = ("priority", "request_tag", "transaction_tag", "max_lag")


@dataclass(frozen=True)
class DatabaseSettings:
    """The ``[database]`` table (all None: the environment decides, see :mod:`watcher.cli.database_choice`).

    Fields are named as the TOML keys, which :func:`~watcher.cli.database_choice.choose` reads.
    """

    project: str | None = None
    instance: str | None = None
    database: str | None = None
    data_dir: Path | None = None
    embedded: bool = False
    credentials: Path | None = None
    endpoint: str | None = None
    database_role: str | None = None


def read_database(r: _Reader, value: Any) -> DatabaseSettings:
    """The ``[database]`` table, checked."""
    from ..connection import check_database_role, check_endpoint

    section = r.section("database", value, DATABASE_KEYS)
    names = {k: r.text(f"database.{k}", section[k]) if k in section else None for k in ("project", "instance", "database")}
    embedded = section.get("embedded", False)
    if not isinstance(embedded, bool):
        raise r.fail("database.embedded", f"expected true or false, got {r.kind(embedded)}")
    checked: dict[str, str | None] = {}
    for key, check in (("endpoint", check_endpoint), ("database_role", check_database_role)):
        checked[key] = None
        if key in section:
            try:
                checked[key] = check(r.text(f"database.{key}", section[key]))
            except ConnectionSettingError as exc:
                raise r.fail(f"database.{key}", exc.problem) from None
    return DatabaseSettings(
        names["project"], names["instance"], names["database"],
        data_dir=r.path("database.data_dir", section["data_dir"]) if "data_dir" in section else None,
        embedded=embedded,
        credentials=r.path("database.credentials", section["credentials"]) if "credentials" in section else None,
        endpoint=checked["endpoint"], database_role=checked["database_role"])


def read_requests(r: _Reader, watch: dict[str, Any]) -> tuple[RequestSettings, float | None]:
    """``[watch]``'s priority and tags as RequestSettings, and its ``max_lag`` (None: no bound)."""
    priority = watch.get("priority")
    if priority is not None and (not isinstance(priority, str) or priority.upper() not in PRIORITIES):
        shown = repr(priority) if isinstance(priority, str) else r.kind(priority)
        raise r.fail("watch.priority", f"expected \"low\", \"medium\" or \"high\", got {shown}")
    tags = {key: r.text(f"watch.{key}", watch[key]) if key in watch else default
            for key, default in (("request_tag", DEFAULT_REQUEST_TAG), ("transaction_tag", DEFAULT_TRANSACTION_TAG))}
    try:
        settings = RequestSettings(priority, tags["request_tag"], tags["transaction_tag"])
    except ConfigurationError as exc:  # a tag Spanner would refuse; the message starts with the tag's name
        key = next((k for k in tags if str(exc).startswith(k)), "request_tag")
        raise r.fail(f"watch.{key}", str(exc)) from None
    max_lag = watch.get("max_lag")
    if max_lag is not None:
        max_lag = r.number("watch.max_lag", max_lag, minimum=0.0)
        if max_lag <= 0:
            raise r.fail("watch.max_lag", "must be more than 0 seconds")
    return settings, max_lag
