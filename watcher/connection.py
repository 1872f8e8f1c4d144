"""Open a Cloud Spanner database the way a production job needs: credentials, endpoint, database role.

:func:`connect` gives a ``google.cloud.spanner_v1.database.Database`` for the watchers, built
with the official client and these settings:

* ``credentials_file``: a service-account (or other) key file; without it the application
  default credentials (``gcloud auth application-default login``, ``GOOGLE_APPLICATION_CREDENTIALS``,
  the metadata server);
* ``api_endpoint``: a ``HOST[:PORT]`` other than the global one (a regional or private endpoint);
* ``database_role``: the role every session is created with (fine-grained access control:
  the watcher then reads only what the role is granted);
* ``emulator_host``: an emulator (or ``spanner-watcher local-spanner``) reached without
  credentials instead of Cloud Spanner.

Nothing is sent until the database is used; a setting that cannot work raises
:class:`~watcher.errors.ConnectionSettingError` naming the argument (a missing credentials
file names its path).

Example:
    >>> connect("my-project", "my-instance", "my-db", emulator_host="localhost:9010",
    ...         database_role="watcher").database_role
    'watcher'
    >>> connect("my-project", "my-instance", "my-db", api_endpoint="https://spanner.googleapis.com")
    Traceback (most recent call last):
    ...
    watcher.errors.ConnectionSettingError: api_endpoint: 'https://spanner.googleapis.com' is not HOST[:PORT] (no scheme, no path; e.g. us-east1-spanner.googleapis.com:443)
"""

from __future__ import annotations

import json
import os
import re
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import ConnectionSettingError

if TYPE_CHECKING:
    from google.cloud.spanner_v1.database import Database

__all__ = ["ConnectionSettings", "check_database_role", "check_endpoint", "connect", "load_credentials", "settings_of",
           "spanner_client"]

_HOST_PORT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(:\d{1,5})?$")
#: A database role is a Spanner identifier (letters, digits, underscores, starting with a letter).
_ROLE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,127}$")


def check_endpoint(endpoint: str, setting: str = "api_endpoint") -> str:
    """``endpoint`` if it is ``HOST[:PORT]``, else ConnectionSettingError naming ``setting``.

    >>> check_endpoint("eu-spanner.googleapis.com:443")
    'eu-spanner.googleapis.com:443'
    """
    match = _HOST_PORT.match(endpoint.strip()) if isinstance(endpoint, str) else None
    if match is None or (match.group(2) is not None and not 0 < int(match.group(2)[1:]) < 65536):
        raise ConnectionSettingError(setting, f"{endpoint!r} is not HOST[:PORT] (no scheme, no path; e.g. "
                                              "us-east1-spanner.googleapis.com:443)")
    return endpoint.strip()


def check_database_role(role: str, setting: str = "database_role") -> str:
    """``role`` if it can name a database role, else ConnectionSettingError naming ``setting``.

    >>> check_database_role("analyst-1")
    Traceback (most recent call last):
    ...
    watcher.errors.ConnectionSettingError: database_role: 'analyst-1' is not a role name (letters, digits and underscores, starting with a letter)
    """
    if not isinstance(role, str) or not _ROLE.match(role):
        raise ConnectionSettingError(setting, f"{role!r} is not a role name (letters, digits and underscores, "
                                              "starting with a letter)")
    return role


def load_credentials(path: str | os.PathLike[str], setting: str = "credentials_file") -> Any:
    """The credentials in the key file at ``path``: a service-account key or an authorized-user file
    (``gcloud auth application-default login`` writes one). Other kinds (workload identity
    federation, impersonation) are read by the application default credentials instead: point
    ``GOOGLE_APPLICATION_CREDENTIALS`` at them and give no file here.

    Raises:
        ConnectionSettingError: naming ``setting`` and the path, when the file is missing, unreadable
            or not such a file.

    >>> load_credentials("/no/such/key.json")
    Traceback (most recent call last):
    ...
    watcher.errors.ConnectionSettingError: credentials_file: /no/such/key.json: no such file
    """
    name = os.fspath(path)
    if not os.path.exists(name):
        raise ConnectionSettingError(setting, f"{name}: no such file")
    if os.path.isdir(name):
        raise ConnectionSettingError(setting, f"{name}: is a folder, not a key file")
    try:
        with open(name, encoding="utf-8") as f:
            info = json.load(f)
    except OSError as exc:
        raise ConnectionSettingError(setting, f"{name}: cannot read it ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise ConnectionSettingError(setting, f"{name}: not a Google credentials file (not JSON: {exc})") from None
    kind = info.get("type") if isinstance(info, dict) else None
    loader = _LOADERS.get(kind) if isinstance(kind, str) else None
    if loader is None:
        raise ConnectionSettingError(setting, f"{name}: not a Google credentials file of a kind read here (type "
                                              f"{kind!r}; expected {' or '.join(map(repr, _LOADERS))}; point "
                                              "GOOGLE_APPLICATION_CREDENTIALS at other kinds)")
    try:
        return loader(info)
    except (ValueError, KeyError) as exc:
        raise ConnectionSettingError(setting, f"{name}: not a Google credentials file ({exc})") from None


def _service_account(info: dict[str, Any]) -> Any:
    from google.oauth2 import service_account

    return service_account.Credentials.from_service_account_info(info)


def _authorized_user(info: dict[str, Any]) -> Any:
    from google.oauth2 import credentials

    return credentials.Credentials.from_authorized_user_info(info)


#: The key file's "type" -> how its credentials are built.
_LOADERS = {"service_account": _service_account, "authorized_user": _authorized_user}


def spanner_client(project: str, *, credentials_file: str | os.PathLike[str] | None = None,
                   api_endpoint: str | None = None, emulator_host: str | None = None) -> Any:
    """A ``google.cloud.spanner.Client`` for ``project`` with these settings (see the module docstring).

    Raises:
        ConnectionSettingError: a setting that cannot work, or no application default credentials.

    >>> spanner_client("p", emulator_host="localhost:9010", credentials_file="key.json")
    Traceback (most recent call last):
    ...
    watcher.errors.ConnectionSettingError: credentials_file: an emulator takes no credentials; leave it out, or connect to Cloud Spanner (no emulator_host)
    """
    from google.cloud import spanner

    _check_name("project", project)
    if emulator_host is not None:
        for setting, value in (("credentials_file", credentials_file), ("api_endpoint", api_endpoint)):
            if value is not None:
                what = "credentials" if setting == "credentials_file" else "other endpoint"
                raise ConnectionSettingError(setting, f"an emulator takes no {what}; leave it out, or connect to "
                                                      "Cloud Spanner (no emulator_host)")
        from google.auth.credentials import AnonymousCredentials

        # Anonymous credentials with an endpoint: plain gRPC to that host, without touching the
        # process environment (other threads may use another Spanner).
        return spanner.Client(project=project, credentials=AnonymousCredentials(),
                              client_options={"api_endpoint": check_endpoint(emulator_host, "emulator_host")},
                              disable_builtin_metrics=True)
    options = {"api_endpoint": check_endpoint(api_endpoint)} if api_endpoint is not None else None
    credentials = load_credentials(credentials_file) if credentials_file is not None else None
    if credentials is None:
        from google.auth.exceptions import DefaultCredentialsError

        try:
            return spanner.Client(project=project, client_options=options)
        except DefaultCredentialsError:
            raise ConnectionSettingError(
                "credentials_file", "none given and no application default credentials found: run `gcloud auth "
                                    "application-default login`, set GOOGLE_APPLICATION_CREDENTIALS, or name a key "
                                    "file") from None
    return spanner.Client(project=project, credentials=credentials, client_options=options)


def connect(project: str, instance: str, database: str, *, credentials_file: str | os.PathLike[str] | None = None,
            api_endpoint: str | None = None, database_role: str | None = None,
            emulator_host: str | None = None) -> Database:
    """The database ``projects/<project>/instances/<instance>/databases/<database>``.

    Args:
        project, instance, database: the names (ids, not full paths).
        credentials_file: a key file; None: the application default credentials.
        api_endpoint: ``HOST[:PORT]`` of the Spanner API; None: the client's default.
        database_role: the database role of every session (fine-grained access control); None: none.
        emulator_host: ``HOST:PORT`` of an emulator, reached without credentials (then
            ``credentials_file`` and ``api_endpoint`` must be None).

    Returns:
        A ``google.cloud.spanner_v1.database.Database``; nothing is sent until it is used, so a
        missing database shows at its first request (``database.exists()`` checks).

    Raises:
        ConnectionSettingError: naming the argument that cannot work.
    """
    _check_name("instance", instance)
    _check_name("database", database)
    if database_role is not None:
        check_database_role(database_role)
    client = spanner_client(project, credentials_file=credentials_file, api_endpoint=api_endpoint,
                            emulator_host=emulator_host)
    opened = client.instance(instance).database(database, database_role=database_role)
    _OPENED[id(opened)] = ConnectionSettings(None if credentials_file is None else os.fspath(credentials_file), api_endpoint)
    weakref.finalize(opened, _OPENED.pop, id(opened), None)
    return opened


@dataclass(frozen=True)
class ConnectionSettings:
    """What :func:`connect` was given beyond the names and the role, for processes that open the database again
    (Spark tasks of backfill and reconcile): they need the same key file (at the same path) and endpoint."""

    credentials_file: str | None = None
    api_endpoint: str | None = None


#: Databases :func:`connect` opened (by id: the client's Database is not hashable) -> their settings;
#: an entry goes with its database.
_OPENED: dict[int, ConnectionSettings] = {}


def settings_of(database: Database) -> ConnectionSettings:
    """The settings :func:`connect` opened ``database`` with; none for a database opened otherwise.

    >>> settings_of(connect("p", "i", "d", emulator_host="localhost:9010"))
    ConnectionSettings(credentials_file=None, api_endpoint=None)
    """
    return _OPENED.get(id(database)) or ConnectionSettings()


def _check_name(setting: str, value: Any) -> None:
    if not isinstance(value, str) or not value.strip() or "/" in value:
        raise ConnectionSettingError(setting, f"expected an id like 'my-{setting}', got {value!r}")
