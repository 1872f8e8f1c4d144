"""Which Spanner a command talks to: real Spanner, an emulator, or the embedded local server.

* ``--project/--instance/--database`` without ``SPANNER_EMULATOR_HOST``: real Spanner, with
  the application's default credentials; the instance and the database must exist.
* ``SPANNER_EMULATOR_HOST`` set: that emulator (the official one, or ``spanner-watcher
  local-spanner`` started on its own); a missing instance and database are created first, as
  the Java library's emulator helper does. Names not given get defaults.
* neither: the embedded local Spanner is started for the duration of the command (in a
  temporary folder unless ``data_dir`` is given) and the instance and database are created.

:func:`open_database` is a context manager giving a :class:`SpannerTarget`; commands add
the options with :func:`add_arguments` and call :func:`open_from_args`.

Example:
    >>> with open_database() as target:          # doctest: +SKIP
    ...     target.kind, target.database.exists()  # without SPANNER_EMULATOR_HOST: the embedded default
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

from ..errors import ConfigurationError

EMULATOR_ENV = "SPANNER_EMULATOR_HOST"
#: Names used on an emulator or the embedded server when the user gives none.
DEFAULT_PROJECT = "spanner-watcher"
DEFAULT_INSTANCE = "local"
DEFAULT_DATABASE = "watcher"
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


def _client(project: str, host: str | None) -> Any:
    from google.cloud import spanner

    if host is None:
        from google.auth.exceptions import DefaultCredentialsError

        try:
            return spanner.Client(project=project)
        except DefaultCredentialsError:
            raise ConfigurationError(
                "no Google Cloud credentials found for real Spanner: run `gcloud auth application-default login` "
                f"(or set GOOGLE_APPLICATION_CREDENTIALS), or set {EMULATOR_ENV} to use an emulator") from None
    from google.auth.credentials import AnonymousCredentials

    # Anonymous credentials with an endpoint make the client talk plain gRPC to that host, without
    # touching the process environment (other threads may use another Spanner).
    return spanner.Client(project=project, credentials=AnonymousCredentials(), client_options={"api_endpoint": host},
                          disable_builtin_metrics=True)


def database_by_name(name: str, host: str | None) -> Any:
    """The database ``projects/P/instances/I/databases/D`` through a client of its own, without checks.

    Args:
        name: the database's full name (``Database.name``).
        host: the emulator (or local Spanner) address; None for real Spanner.

    Raises:
        ConfigurationError: a name of another form, or no credentials for real Spanner.

    >>> database_by_name("watcher", "127.0.0.1:9010")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    watcher.errors.ConfigurationError: not a database's full name (projects/P/instances/I/databases/D): 'watcher'
    """
    parts = name.split("/")
    if len(parts) != 6 or parts[0::2] != ["projects", "instances", "databases"] or not all(parts[1::2]):
        raise ConfigurationError(f"not a database's full name (projects/P/instances/I/databases/D): {name!r}")
    return _client(parts[1], host).instance(parts[3]).database(parts[5])


def ensure_reachable(host: str | None, timeout: float = REACH_TIMEOUT) -> None:
    """Fail fast, saying what to do, when the emulator at ``host`` does not answer.

    (The client would otherwise retry for minutes before giving up.) ``None`` (real Spanner) passes.

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
                             f"(spanner-watcher local-spanner) or unset {EMULATOR_ENV} to use the embedded local Spanner")


def _ensure(instance: Any, database: Any, create: bool, where: str) -> None:
    if not instance.exists():
        if not create:
            raise ConfigurationError(f"instance {instance.name} does not exist on {where}; create it first")
        instance.create().result(CREATE_TIMEOUT)
    if not database.exists():
        if not create:
            raise ConfigurationError(f"database {database.name} does not exist on {where}; create it first "
                                     "(gcloud spanner databases create ...)")
        database.create().result(CREATE_TIMEOUT)


@contextlib.contextmanager
def open_database(project: str | None = None, instance: str | None = None, database: str | None = None, *,
                  data_dir: str | None = None) -> Iterator[SpannerTarget]:
    """Open the database the arguments and the environment point at (see the module docstring).

    Args:
        project, instance, database: the names; all three are needed for real Spanner.
        data_dir: for the embedded server, a folder that keeps its databases (default: a
            temporary folder, deleted when the context ends).

    Raises:
        ConfigurationError: names missing for real Spanner, a database that does not exist there, an
            unreachable emulator, or a ``data_dir`` that is not a folder.
    """
    # The client reads SPANNER_EMULATOR_HOST itself, so the choice must follow the real environment.
    host = os.environ.get(EMULATOR_ENV) or None
    given = {"--project": project, "--instance": instance, "--database": database}
    if host is None and any(given.values()):
        missing = [flag for flag, value in given.items() if not value]
        if missing:
            raise ConfigurationError(f"{', '.join(missing)} missing: real Spanner needs --project, --instance and "
                                     f"--database (or set {EMULATOR_ENV} to use an emulator)")
        yield _open("spanner", project, instance, database, None, None)  # type: ignore[arg-type]
        return
    names = (project or DEFAULT_PROJECT, instance or DEFAULT_INSTANCE, database or DEFAULT_DATABASE)
    if host is not None:
        ensure_reachable(host)
        yield _open("emulator", *names, host, None)
        return
    if data_dir is not None and os.path.exists(data_dir) and not os.path.isdir(data_dir):
        raise ConfigurationError(f"--data-dir {data_dir} exists and is not a folder: name a folder (it is created "
                                 "when missing)")
    from ..localspanner.server import LocalSpanner

    with LocalSpanner(data_dir) as server:
        yield _open("embedded", *names, server.emulator_host, server)


def _open(kind: str, project: str, instance_id: str, database_id: str, host: str | None, server: Any) -> SpannerTarget:
    client = _client(project, host)
    where, create = KINDS[kind][0].format(host=host), KINDS[kind][1]
    if create:  # what an emulator needs to create the instance, should it be missing
        instance = client.instance(instance_id, configuration_name=f"projects/{project}/instanceConfigs/emulator-config",
                                   display_name=instance_id, node_count=1)
    else:
        instance = client.instance(instance_id)
    database = instance.database(database_id)
    _ensure(instance, database, create, where)
    return SpannerTarget(kind, client, instance, database, host, server)


# --- command-line options ----------------------------------------------------------------------------

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--project/--instance/--database`` and ``--data-dir`` to a subcommand's parser."""
    group = parser.add_argument_group(
        "database", f"Real Spanner with all three names; with {EMULATOR_ENV} set, that emulator (the instance and "
                    "database are created when missing); with neither, the embedded local Spanner, started for this "
                    "command.")
    group.add_argument("--project", help="Google Cloud project")
    group.add_argument("--instance", help="Spanner instance id")
    group.add_argument("--database", help="database id")
    group.add_argument("--data-dir", metavar="DIR", default=None,
                       help="embedded local Spanner only: keep its databases in DIR (default: a temporary folder, "
                            "deleted when the command ends)")


def open_from_args(args: argparse.Namespace) -> contextlib.AbstractContextManager[SpannerTarget]:
    """:func:`open_database` with the options :func:`add_arguments` added."""
    return open_database(args.project, args.instance, args.database, data_dir=args.data_dir)
