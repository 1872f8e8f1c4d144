"""Which database a command talks to, from its options, its TOML file and the environment.

Each name is taken from the first place that gives it: the command-line flag, then the TOML
``[database]`` table (``watch`` only), then the environment::

    --project   [database] project    SPANNER_PROJECT
    --instance  [database] instance   SPANNER_INSTANCE
    --database  [database] database   SPANNER_DATABASE

Then, in this order:

* ``--embedded`` (or ``[database] embedded = true``, or a data folder: ``--data-dir`` /
  ``[database] data_dir``): the embedded local Spanner, started for the command;
* ``SPANNER_EMULATOR_HOST`` set: that emulator (names not given get defaults);
* all three names: Cloud Spanner, with ``--credentials`` (else the application default
  credentials), ``--endpoint`` and ``--database-role``;
* some names: an error naming the missing ones;
* nothing: an error naming what to give. A scheduled job that lost its settings must not
  quietly watch an empty temporary database; ``demo``, ``local-spanner`` and ``bench`` are
  embedded by default instead.

Example:
    >>> choose({"project": "p", "instance": "i", "database": "d"}, env={}).kind
    'spanner'
    >>> choose({}, env={"SPANNER_EMULATOR_HOST": "localhost:9010", "SPANNER_DATABASE": "orders"}).database
    'orders'
    >>> choose({}, env={})
    Traceback (most recent call last):
    ...
    watcher.cli.database_choice.NoDatabaseError: no database named: give --project, --instance and --database (or set SPANNER_PROJECT, SPANNER_INSTANCE and SPANNER_DATABASE), set SPANNER_EMULATOR_HOST to use an emulator, or pass --embedded for a temporary embedded local Spanner
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError

EMULATOR_ENV = "SPANNER_EMULATOR_HOST"
#: name -> (flag, TOML key of [database], environment variable)
NAMES: dict[str, tuple[str, str, str]] = {
    "project": ("--project", "project", "SPANNER_PROJECT"),
    "instance": ("--instance", "instance", "SPANNER_INSTANCE"),
    "database": ("--database", "database", "SPANNER_DATABASE"),
}
#: Names used on an emulator or the embedded server when the user gives none.
DEFAULTS = {"project": "spanner-watcher", "instance": "local", "database": "watcher"}
#: Connection settings -> (flag, TOML key of [database]); only for Cloud Spanner except the role.
SETTINGS: dict[str, tuple[str, str]] = {
    "credentials_file": ("--credentials", "credentials"),
    "api_endpoint": ("--endpoint", "endpoint"),
    "database_role": ("--database-role", "database_role"),
}
#: Settings an emulator or the embedded server cannot take.
CLOUD_ONLY = ("credentials_file", "api_endpoint")


class NoDatabaseError(ConfigurationError):
    """Nothing names a database, and the command does not default to the embedded server."""


@dataclass(frozen=True)
class DatabaseChoice:
    """A resolved choice: ``kind`` is ``spanner``, ``emulator`` or ``embedded``."""

    kind: str
    project: str
    instance: str
    database: str
    emulator_host: str | None = None
    data_dir: str | None = None
    credentials_file: str | None = None
    api_endpoint: str | None = None
    database_role: str | None = None


def flag_of(setting: str) -> str:
    """The command-line flag of a connection setting or name (for messages).

    >>> flag_of("credentials_file"), flag_of("database")
    ('--credentials', '--database')
    """
    return SETTINGS[setting][0] if setting in SETTINGS else NAMES[setting][0]


def choose(flags: Mapping[str, Any], toml: Any = None, env: Mapping[str, str] | None = None, *,
           embedded_by_default: bool = False) -> DatabaseChoice:
    """Resolve the choice (see the module docstring).

    Args:
        flags: the parsed options by name (project, instance, database, embedded, data_dir,
            credentials_file, api_endpoint, database_role); missing or None: not given.
        toml: the ``[database]`` settings of a configuration file (a ``DatabaseSettings``), or None.
        env: the environment (default ``os.environ``).
        embedded_by_default: with nothing named, the embedded server rather than an error.

    Raises:
        NoDatabaseError: nothing names a database.
        ConfigurationError: names missing for Cloud Spanner, or settings that exclude each other.
    """
    import os

    env = os.environ if env is None else env

    def pick(name: str, toml_key: str, env_name: str | None = None) -> Any:
        value = flags.get(name)
        if value in (None, "", False) and toml is not None:
            value = getattr(toml, toml_key, None)
        if value in (None, "", False) and env_name is not None:
            value = env.get(env_name) or None
        return None if value in ("", False) else value

    names = {name: pick(name, key, var) for name, (_, key, var) in NAMES.items()}
    settings = {name: pick(name, key) for name, (_, key) in SETTINGS.items()}
    settings = {name: str(value) if value is not None else None for name, value in settings.items()}
    data_dir = pick("data_dir", "data_dir")
    host = env.get(EMULATOR_ENV) or None
    embedded = bool(pick("embedded", "embedded")) or data_dir is not None
    named = any(names.values())
    if embedded and host is not None:
        why = "--data-dir" if data_dir is not None and not pick("embedded", "embedded") else "--embedded"
        raise ConfigurationError(f"{why} asks for the embedded local Spanner, but {EMULATOR_ENV}={host} names an "
                                 f"emulator: unset {EMULATOR_ENV}, or leave {why} out")
    if not embedded and host is None and not named and embedded_by_default:
        embedded = True
    if embedded or host is not None:
        where = "the embedded local Spanner" if embedded else f"the emulator ({EMULATOR_ENV})"
        for setting in CLOUD_ONLY:
            if settings[setting] is not None:
                raise ConfigurationError(f"{flag_of(setting)} is for Cloud Spanner, not {where}: leave it out")
        filled = {name: value or DEFAULTS[name] for name, value in names.items()}
        return DatabaseChoice("embedded" if embedded else "emulator", **filled, emulator_host=host,
                              data_dir=str(data_dir) if data_dir is not None else None, **settings)
    if not named:
        raise NoDatabaseError(_nothing_named(toml is not None))
    missing = [NAMES[name][0] for name, value in names.items() if not value]
    if missing:
        variables = ", ".join(NAMES[name][2] for name, value in names.items() if not value)
        raise ConfigurationError(f"{', '.join(missing)} missing: Cloud Spanner needs --project, --instance and "
                                 f"--database (or {variables}; or set {EMULATOR_ENV} to use an emulator)")
    return DatabaseChoice("spanner", **names, **settings)


def _nothing_named(with_toml: bool) -> str:
    project, instance, database = (var for _, _, var in NAMES.values())
    toml = ", or project, instance and database in the configuration's [database] table" if with_toml else ""
    return (f"no database named: give --project, --instance and --database (or set {project}, {instance} and "
            f"{database}{toml}), set {EMULATOR_ENV} to use an emulator, or pass --embedded for a temporary embedded "
            "local Spanner")
