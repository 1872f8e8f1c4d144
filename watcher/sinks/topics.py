"""Which Kafka topic a table's changes go to: a template, and the database names it is filled from.

A template holds placeholders, as the Java Spanner Change Watcher's Kafka publisher spells
them: ``%table%``, ``%database%``, ``%instance%`` and ``%project%``. Debezium names a table's
topic ``<prefix>.<table>`` (its ``topic.prefix``); :func:`debezium_topic` gives that template.
Every placeholder is checked when the template is made, and every topic name when it is
filled (Kafka allows ASCII letters, digits, ``.``, ``_`` and ``-``, 249 characters at most).

Example:
    >>> names = SourceNames.parse("projects/p1/instances/i1/databases/orders")
    >>> TopicTemplate("%database%-%table%").topic("Singers", names)
    'orders-Singers'
    >>> TopicTemplate(debezium_topic("shop")).topic("Singers", names)
    'shop.Singers'
    >>> TopicTemplate("%tabel%")
    Traceback (most recent call last):
    ...
    watcher.errors.ConfigurationError: topic template '%tabel%': unknown placeholder %tabel% (known: %database%, %instance%, %project%, %table%)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError

#: What a placeholder stands for, by name.
PLACEHOLDERS = ("database", "instance", "project", "table")
#: The longest topic name Kafka accepts.
MAX_TOPIC_LENGTH = 249

_PLACEHOLDER = re.compile(r"%([A-Za-z_]+)%")
_LEGAL = re.compile(r"^[A-Za-z0-9._-]+$")
_DATABASE_PATH = re.compile(r"^projects/([^/]+)/instances/([^/]+)/databases/([^/]+)$")


@dataclass(frozen=True)
class SourceNames:
    """The database a watcher reads: project, instance and database ids (None where unknown)."""

    project: str | None = None
    instance: str | None = None
    database: str | None = None

    @staticmethod
    def parse(path: str) -> SourceNames:
        """Names from a database path (``projects/P/instances/I/databases/D``); a bare id is the database's.

        >>> SourceNames.parse("orders")
        SourceNames(project=None, instance=None, database='orders')
        """
        match = _DATABASE_PATH.match(path)
        if match is None:
            return SourceNames(database=path)
        return SourceNames(*match.groups())

    @staticmethod
    def of(database: Any) -> SourceNames:
        """Names of a ``google.cloud.spanner_v1.database.Database`` (its ``name``), a path, or None."""
        if database is None:
            return SourceNames()
        if isinstance(database, SourceNames):
            return database
        return SourceNames.parse(database if isinstance(database, str) else str(database.name))


def debezium_topic(prefix: str) -> str:
    """Debezium's topic of a table, ``<prefix>.<table>``, as a template.

    >>> debezium_topic("shop")
    'shop.%table%'
    """
    if not prefix:
        raise ConfigurationError("a Debezium topic prefix must not be empty")
    return f"{prefix}.%table%"


class TopicTemplate:
    """A topic name with placeholders (see the module docstring); filled per table by :meth:`topic`."""

    def __init__(self, template: str) -> None:
        if not template:
            raise ConfigurationError("the topic template must not be empty")
        unknown = [m for m in _PLACEHOLDER.findall(template) if m not in PLACEHOLDERS]
        if unknown:
            known = ", ".join(f"%{p}%" for p in PLACEHOLDERS)
            raise ConfigurationError(f"topic template {template!r}: unknown placeholder %{unknown[0]}% (known: {known})")
        self.template = template
        self.uses = frozenset(_PLACEHOLDER.findall(template))

    def topic(self, table: str, names: SourceNames) -> str:
        """The topic of ``table`` of the database ``names`` names; a name that is missing or not a legal
        topic is a ConfigurationError naming the template and the table."""
        values = {"table": table, "database": names.database, "instance": names.instance, "project": names.project}
        missing = [p for p in sorted(self.uses) if values[p] is None]
        if missing:
            raise ConfigurationError(f"topic template {self.template!r} needs the {missing[0]} name, but the sink does not "
                                     f"know it for table {table} (pass database= to the sink)")
        name = _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), self.template)
        if not _LEGAL.match(name) or len(name) > MAX_TOPIC_LENGTH or name in (".", ".."):
            raise ConfigurationError(f"topic template {self.template!r} gives {name!r} for table {table}: not a legal "
                                     f"Kafka topic name (ASCII letters, digits, '.', '_' and '-', at most {MAX_TOPIC_LENGTH})")
        return name

    def __repr__(self) -> str:
        return f"TopicTemplate({self.template!r})"
