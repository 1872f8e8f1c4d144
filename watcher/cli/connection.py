"""Opening the database a command talks to: Cloud Spanner, an emulator, or the embedded local server.

Which one is :mod:`watcher.cli.database_choice`'s decision (flags, then the TOML file, then the
environment; nothing named is an error unless the command is embedded by default); this
module opens it:

* Cloud Spanner: through :func:`watcher.connection.connect`'s settings (credentials file or the
  application default credentials, endpoint, database role); the instance and the database
  must exist.
* an emulator (``SPANNER_EMULATOR_HOST``): the official one, or ``spanner-watcher
  local-spanner`` started on its own; a missing instance and database are created first, as
  the Java library's emulator helper does.
* the embedded local Spanner: started for the duration of the command (in a temporary folder
  unless a data folder is given), the instance and database created.

:func:`open_choice` is a context manager giving a :class:`SpannerTarget`; commands add the
options with :func:`add_arguments` and call :func:`open_from_args`.

Example:
    >>> with open_database(embedded=True) as target:          # doctest: +SKIP
    ...     target.kind, target.database.exists()
    ('embedded', True)
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError, ConnectionSettingError
from .database_choice import DEFAULTS, EMULATOR_ENV, DatabaseChoice, choose, flag_of

__all__ = ["EMULATOR_ENV", "SpannerTarget", "add_arguments", "database_by_name", "ensure_reachable", "open_choice",
           "open_database", "open_from_args"]

#: Names used on an emulator or the embedded server when the user gives none.
DEFAULT_PROJECT, DEFAULT_INSTANCE, DEFAULT_DATABASE = DEFAULTS["project"], DEFAULTS["instance"], DEFAULTS["database"]
#: Seconds to wait for an instance or database to be created.
CREATE_TIMEOUT = 120.0
#: Seconds to wait for a TCP connection to an emulator before calling it unreachable.
REACH_TIMEOUT = 3.0

#: kind -> (what it is, for messages; whether missing instance/database are created)
KINDS: dict[str, tuple[str, bool]] = {
    "spanner": ("Cloud Spanner", False),
    "emulator": ("the emulator at {host}", True),
    "embedded": ("the embedded local Spanner at {host}", True),
}


@dataclass(frozen=True)
class SpannerTarget:
    """An open connection: the client, instance and database objects, and what they are."""

    kind: str
    client: Any
    instance: Any
    database: Any
    host: str | None = None
    server: Any = None

    def describe(self) -> str:
        """One line: which database on which kind of Spanner.

        >>> SpannerTarget("emulator", None, None, type("D", (), {"name": "projects/p/instances/i/databases/d"})(),
        ...               host="localhost:9010").describe()
        'database projects/p/instances/i/databases/d on the emulator at localhost:9010'
        """
        return f"database {self.database.name} on {KINDS[self.kind][0].format(host=self.host)}"


def _client(choice: DatabaseChoice, host: str | None) -> Any:
    from ..connection import spanner_client

    try:
        return spanner_client(choice.project, credentials_file=choice.credentials_file, api_endpoint=choice.api_endpoint,
                              emulator_host=host)
    except ConnectionSettingError as exc:
        raise _as_option(exc) from None


def _as_option(exc: ConnectionSettingError) -> ConfigurationError:
    """The library's error about an argument, naming the command-line option instead."""
    try:
        flag = flag_of(exc.setting)
    except KeyError:
        return exc
    return ConfigurationError(f"{flag}: {exc.problem}")


def database_by_name(name: str, host: str | None) -> Any:
    """The database ``projects/P/instances/I/databases/D`` through a client of its own, without checks.

    Args:
        name: the database's full name (``Database.name``).
        host: the emulator (or local Spanner) address; None for Cloud Spanner (default credentials).

    Raises:
        ConfigurationError: a name of another form, or no credentials for Cloud Spanner.

    >>> database_by_name("watcher", "127.0.0.1:9010")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    watcher.errors.ConfigurationError: not a database's full name (projects/P/instances/I/databases/D): 'watcher'
    """
    parts = name.split("/")
    if len(parts) != 6 or parts[0::2] != ["projects", "instances", "databases"] or not all(parts[1::2]):
        raise ConfigurationError(f"not a database's full name (projects/P/instances/I/databases/D): {name!r}")
    choice = DatabaseChoice("emulator" if host else "spanner", parts[1], parts[3], parts[5], emulator_host=host)
    return _client(choice, host).instance(parts[3]).database(parts[5])


def ensure_reachable(host: str | None, timeout: float = REACH_TIMEOUT) -> None:
    """Fail fast, saying what to do, when the emulator at ``host`` does not answer.

    (The client would otherwise retry for minutes before giving up.) ``None`` (Cloud Spanner) passes.

    >>> ensure_reachable("127.0.0.1:1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    watcher.errors.ConfigurationError: cannot reach the Spanner emulator at 127.0.0.1:1 (SPANNER_EMULATOR_HOST): ...
    """
    if not host:
        return
    name, _, port = host.rpartition(":")
    try:
        with socket.create_connection((name.strip("[]") or "localhost", int(port)), timeout=timeout):
            return
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc) or type(exc).__name__
    raise ConfigurationError(f"cannot reach the Spanner emulator at {host} ({EMULATOR_ENV}): {reason}; start one "
                             f"(spanner-watcher local-spanner), or unset {EMULATOR_ENV} and pass --embedded to use "
                             "the embedded local Spanner")


def _ensure(instance: Any, database: Any, create: bool, where: str, dialect: Any = None) -> None:
    if not instance.exists():
        if not create:
            raise ConfigurationError(f"instance {instance.name} does not exist on {where}; create it first")
        instance.create().result(CREATE_TIMEOUT)
    if not database.exists():
        if not create:
            raise ConfigurationError(f"database {database.name} does not exist on {where}; create it first "
                                     "(gcloud spanner databases create ...)")
        if dialect is None:
            database.create().result(CREATE_TIMEOUT)
        else:  # another object creates it: ``database`` learns the dialect from the database (a reload)
            instance.database(database.database_id, database_dialect=dialect.database_dialect).create().result(CREATE_TIMEOUT)
    if dialect is not None:
        from ..dialects import dialect_of

        found = dialect_of(database)
        if found is not dialect:
            raise ConfigurationError(f"database {database.name} is a {found.name} database, not {dialect.name}")


@contextlib.contextmanager
def open_choice(choice: DatabaseChoice, *, create: bool = True, dialect: Any = None) -> Iterator[SpannerTarget]:
    """Open the database ``choice`` names (see the module docstring).

    ``create=False``: a missing instance or database is an error on an emulator too (a target
    to write into must exist, not appear empty). ``dialect`` (a :class:`~watcher.dialects.Dialect`):
    a database created here is of that dialect, and an existing one must be.

    Raises:
        ConfigurationError: a database that does not exist on Cloud Spanner, an unreachable emulator,
            a data folder that is not a folder, or a connection setting that cannot work (naming its option).
    """
    if choice.database_role is not None:
        from ..connection import check_database_role

        try:
            check_database_role(choice.database_role)
        except ConnectionSettingError as exc:
            raise _as_option(exc) from None
    if choice.kind == "spanner":
        yield _open(choice, None, None, dialect=dialect)
        return
    if choice.kind == "emulator":
        ensure_reachable(choice.emulator_host)
        yield _open(choice, choice.emulator_host, None, create, dialect)
        return
    data_dir = choice.data_dir
    if data_dir is not None and os.path.exists(data_dir) and not os.path.isdir(data_dir):
        raise ConfigurationError(f"--data-dir {data_dir} exists and is not a folder: name a folder (it is created "
                                 "when missing)")
    from ..localspanner.server import LocalSpanner

    with LocalSpanner(data_dir) as server:
        yield _open(choice, server.emulator_host, server, create, dialect)


def open_database(project: str | None = None, instance: str | None = None, database: str | None = None, *,
                  data_dir: str | None = None, embedded: bool = False, credentials_file: str | None = None,
                  api_endpoint: str | None = None,
                  database_role: str | None = None, dialect: Any = None) -> contextlib.AbstractContextManager[SpannerTarget]:
    """:func:`open_choice` of the names and settings given, the environment filling in (see
    :func:`~watcher.cli.database_choice.choose`; nothing named is an error unless ``embedded``)."""
    return open_choice(choose({"project": project, "instance": instance, "database": database, "data_dir": data_dir,
                               "embedded": embedded, "credentials_file": credentials_file,
                               "api_endpoint": api_endpoint, "database_role": database_role}), dialect=dialect)


def _open(choice: DatabaseChoice, host: str | None, server: Any, create: bool = True, dialect: Any = None) -> SpannerTarget:
    client = _client(choice, host)
    kind = choice.kind
    where, create = KINDS[kind][0].format(host=host), KINDS[kind][1] and create
    if create:  # what an emulator needs to create the instance, should it be missing
        instance = client.instance(choice.instance, display_name=choice.instance, node_count=1,
                                   configuration_name=f"projects/{choice.project}/instanceConfigs/emulator-config")
    else:
        instance = client.instance(choice.instance)
    database = instance.database(choice.database, database_role=choice.database_role)
    _ensure(instance, database, create, where, dialect)
    return SpannerTarget(kind, client, instance, database, host, server)


# --- command-line options ----------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser, *, embedded_by_default: bool = False) -> None:
    """Add the database options (names, ``--embedded``, ``--data-dir``, credentials, endpoint, role)."""
    fallback = ("with nothing named, the embedded local Spanner, started for this command" if embedded_by_default else
                "with nothing named the command stops: pass --embedded for the embedded local Spanner")
    group = parser.add_argument_group(
        "database", "Cloud Spanner with all three names (each from its flag, else the configuration's [database] "
                    f"table, else SPANNER_PROJECT, SPANNER_INSTANCE, SPANNER_DATABASE); with {EMULATOR_ENV} set, "
                    f"that emulator (the instance and database are created when missing); {fallback}.")
    group.add_argument("--project", help="Google Cloud project id (else SPANNER_PROJECT)")
    group.add_argument("--instance", help="Spanner instance id (else SPANNER_INSTANCE)")
    group.add_argument("--database", help="database id (else SPANNER_DATABASE)")
    if not embedded_by_default:
        group.add_argument("--embedded", action="store_true", default=False,
                           help="use the embedded local Spanner, started for this command (its databases are "
                                "deleted when it ends unless --data-dir keeps them)")
    group.add_argument("--data-dir", metavar="DIR", default=None,
                       help="embedded local Spanner: keep its databases in DIR (implies --embedded; default: a "
                            "temporary folder, deleted when the command ends)")
    group.add_argument("--credentials", dest="credentials_file", metavar="FILE", default=None,
                       help="Cloud Spanner: a service-account (or other Google) key file (default: the application "
                            "default credentials: gcloud auth application-default login, GOOGLE_APPLICATION_CREDENTIALS)")
    group.add_argument("--endpoint", dest="api_endpoint", metavar="HOST[:PORT]", default=None,
                       help="Cloud Spanner: the API endpoint to call, e.g. a regional one "
                            "(us-east1-spanner.googleapis.com:443; default: the client's global endpoint)")
    group.add_argument("--database-role", metavar="ROLE", default=None,
                       help="the database role of every session (fine-grained access control; default: none, the "
                            "credentials' own permissions)")


def choice_from_args(args: argparse.Namespace, toml: Any = None, *, embedded_by_default: bool = False) -> DatabaseChoice:
    """The :class:`DatabaseChoice` of the options :func:`add_arguments` added (and a TOML ``[database]``)."""
    return choose(vars(args), toml, embedded_by_default=embedded_by_default)


def open_from_args(args: argparse.Namespace, toml: Any = None) -> contextlib.AbstractContextManager[SpannerTarget]:
    """:func:`open_choice` of :func:`choice_from_args`."""
    return open_choice(choice_from_args(args, toml))

