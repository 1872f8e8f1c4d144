"""Which changelog rows an export (or a view) takes: source database, tables, commit time.

A warehouse holds the changes of several watched databases, each row naming its source
(``source_project``, ``source_instance``, ``source_database``), so same-named tables of two
databases stay apart. A :class:`Selection` keeps the rows of one source (any of the three names
may be left open), of some tables, committed after a timestamp; it renders to one SQL condition
over the changelog's Delta columns, so it applies to a Delta read (and prunes its files) as well
as to a view's frame. :func:`source_filter` is the source part alone, for the views.

An export target remembers the selection it was made with (:meth:`Selection.as_dict`): an
increment of another selection would leave holes or repeats in it.

Example:
    >>> Selection(database="orders", tables=("Singers",)).where_sql()
    "source_database = 'orders' AND table_name IN ('Singers')"
    >>> Selection(since="2024-05-01T10:00:00.5+02:00").since
    '2024-05-01T08:00:00.500000000Z'
    >>> Selection().where_sql()
    'true'
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from . import errors
from .delta_columns import EXACT_COMMIT_SQL, SOURCE_COLUMNS

_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$")


def sql_text(value: str) -> str:
    """A Spark SQL string literal.

    >>> print(sql_text("it's a \\\\ b"))
    'it\\'s a \\\\ b'
    """
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def exact_timestamp(text: str, option: str = "--since") -> str:
    """An RFC 3339 timestamp as the changelog's exact text: UTC, nine fractional digits.

    >>> exact_timestamp("2024-05-01T10:00:00Z")
    '2024-05-01T10:00:00.000000000Z'
    """
    match = _RFC3339.match(text.strip()) if isinstance(text, str) else None
    if not match:
        raise errors.bad_timestamp(option, text)
    day, clock, fraction, zone = match.groups()
    try:
        when = dt.datetime.fromisoformat(f"{day}T{clock}{'+00:00' if zone in 'Zz' else zone}").astimezone(dt.UTC)
    except ValueError:
        raise errors.bad_timestamp(option, text) from None
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + (fraction or "").ljust(9, "0") + "Z"


@dataclass(frozen=True)
class Selection:
    """Rows of one source database (names left None match any), of ``tables`` (empty: all),
    committed after ``since`` (exact text; any RFC 3339 form is accepted and normalized)."""

    project: str | None = None
    instance: str | None = None
    database: str | None = None
    tables: tuple[str, ...] = field(default=())
    since: str | None = None

    def __post_init__(self) -> None:
        for name, _ in SOURCE_COLUMNS:
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise errors.bad_source_name(name, value)
        if isinstance(self.tables, str) or not all(isinstance(t, str) and t for t in self.tables):
            raise errors.bad_tables(self.tables)
        object.__setattr__(self, "tables", tuple(sorted(set(self.tables))))
        if self.since is not None:
            object.__setattr__(self, "since", exact_timestamp(self.since))

    def source_sql(self) -> list[str]:
        """The conditions on the source columns (none for an open source)."""
        return [f"{column} = {sql_text(getattr(self, name))}" for name, column in SOURCE_COLUMNS
                if getattr(self, name) is not None]

    def where_sql(self, *, exact_commit: str | None = None) -> str:
        """One SQL condition over the changelog's Delta columns (``exact_commit``: SQL of the exact
        commit text, which ``since`` is compared with; by default the Delta columns give it).

        >>> Selection(since="2024-05-01T10:00:00.000000001Z").where_sql(exact_commit="c")
        "commit_timestamp >= TIMESTAMP'2024-05-01 10:00:00.000000+00:00' AND c > '2024-05-01T10:00:00.000000001Z'"
        """
        parts = self.source_sql()
        if self.tables:
            parts.append(f"table_name IN ({', '.join(sql_text(t) for t in self.tables)})")
        if self.since is not None:
            floor = f"{self.since[:10]} {self.since[11:26]}+00:00"  # microseconds: the Delta column's precision
            parts.append(f"commit_timestamp >= TIMESTAMP'{floor}'")
            parts.append(f"{exact_commit or EXACT_COMMIT_SQL} > {sql_text(self.since)}")
        return " AND ".join(parts) or "true"

    def as_dict(self) -> dict[str, Any]:
        """The selection as a target records it (JSON).

        >>> Selection(instance="i").as_dict()
        {'project': None, 'instance': 'i', 'database': None, 'tables': [], 'since': None}
        """
        return {"project": self.project, "instance": self.instance, "database": self.database,
                "tables": list(self.tables), "since": self.since}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Selection:
        return cls(data.get("project"), data.get("instance"), data.get("database"), tuple(data.get("tables") or ()),
                   data.get("since"))

    def describe(self) -> str:
        """The selection in the export command's words.

        >>> Selection(database="d", tables=("A", "B")).describe()
        '--source-database d --table A --table B'
        """
        words = [f"--source-{name} {getattr(self, name)}" for name, _ in SOURCE_COLUMNS if getattr(self, name)]
        words += [f"--table {t}" for t in self.tables]
        if self.since:
            words.append(f"--since {self.since}")
        return " ".join(words) or "everything"


def source_filter(frame: Any, project: str | None = None, instance: str | None = None,
                  database: str | None = None) -> Any:
    """``frame`` (any warehouse table or view with the source columns) kept to one source database.

    Names left None match any; with all None the frame comes back as it is.

    >>> source_filter("frame")
    'frame'
    """
    conditions = Selection(project, instance, database).source_sql()
    return frame.where(" AND ".join(conditions)) if conditions else frame
