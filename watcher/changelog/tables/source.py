"""The watched database a warehouse row came from: (project, instance, database).

Every changelog, state and watermark row names its source database, so that several watched
databases, with tables of the same names, share one warehouse. The staged batches do not carry
it (:mod:`watcher.staging.contract`): the job is told (``Changelog.source(...)``, the command
line's ``--source-project/--source-instance/--source-database``), and without that the names are
the embedded default database's, as the command line uses them.

Example:
    >>> DEFAULT_SOURCE
    Source(project='spanner-watcher', instance='local', database='watcher')
    >>> Source("p", "i", "d").where_sql("t.")
    "t.source_project = 'p' AND t.source_instance = 'i' AND t.source_database = 'd'"
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ConfigurationError

#: The source columns, in the tables' order.
COLUMNS = ("source_project", "source_instance", "source_database")


@dataclass(frozen=True)
class Source:
    """A watched database's names."""

    project: str
    instance: str
    database: str

    def __post_init__(self) -> None:
        for name, value in zip(("project", "instance", "database"), self.values(), strict=True):
            if not isinstance(value, str) or not value:
                raise ConfigurationError(f"source: {name} must be a non-empty name, got {value!r}")

    def values(self) -> tuple[str, str, str]:
        return (self.project, self.instance, self.database)

    def literals(self) -> dict[str, str]:
        """Column -> SQL string literal of its value."""
        return {column: sql_text(value) for column, value in zip(COLUMNS, self.values(), strict=True)}

    def where_sql(self, prefix: str = "") -> str:
        """SQL: the rows of this source (columns prefixed with ``prefix``, e.g. a MERGE's ``t.``)."""
        return " AND ".join(f"{prefix}{column} = {literal}" for column, literal in self.literals().items())

    def row(self) -> dict[str, str]:
        """The source columns as a row's values (for delta-rs writes)."""
        return dict(zip(COLUMNS, self.values(), strict=True))


def sql_text(value: str) -> str:
    """A Spark SQL string literal of ``value``.

    >>> sql_text("it's")
    "'it\\\\'s'"
    """
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


#: The embedded default database's names (``spanner-watcher local-spanner`` and the commands without options).
DEFAULT_SOURCE = Source("spanner-watcher", "local", "watcher")
