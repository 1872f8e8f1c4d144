"""Change stream DDL: CREATE / ALTER / DROP CHANGE STREAM for the change-stream capture mode.

A change stream is what :class:`~watcher.capture.change_streams.watcher.ChangeStreamWatcher`
reads. What it tracks is ``ALL`` tables, a list of tables (each with all its
columns, a column list, or ``()`` for keys only), or nothing yet. Options are written only
when given, so Spanner's defaults (retention ``1d``, ``OLD_AND_NEW_VALUES``) stay its own.
Values are checked here as far as the statement's shape goes (names, the capture type, a
timespan such as ``36h``); the range of the retention is Spanner's to check.

Example:
    >>> print(create_change_stream("SingersStream", {"Singers": None, "Albums": ["Title"]},
    ...                            retention_period="36h", value_capture_type="NEW_ROW"))
    CREATE CHANGE STREAM `SingersStream` FOR `Singers`, `Albums`(`Title`) OPTIONS (retention_period = '36h', value_capture_type = 'NEW_ROW')
    >>> create_change_stream("Everything", ALL, exclude_delete=True)
    'CREATE CHANGE STREAM `Everything` FOR ALL OPTIONS (exclude_delete = true)'
    >>> print(create_change_stream("SingersStream", {"Singers": None}, retention_period="36h", dialect=POSTGRESQL))
    CREATE CHANGE STREAM "SingersStream" FOR "Singers" WITH (retention_period = '36h')
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Final

from ...dialects.base import GOOGLE_SQL, POSTGRESQL, Dialect  # noqa: F401 (POSTGRESQL: the doctests)
from ...dialects.ddl import DDL_SQL
from ...errors import DdlError
from .columns import quoted_column, quoted_table

#: ``tracking=ALL``: the stream watches every table and column, now and later.
ALL: Final = "ALL"
VALUE_CAPTURE_TYPES: Final = ("OLD_AND_NEW_VALUES", "NEW_ROW", "NEW_VALUES", "NEW_ROW_AND_OLD_VALUES")
_TIMESPAN = re.compile(r"[1-9]\d*[dhms]\Z")
_BOOL_OPTIONS: Final = ("exclude_insert", "exclude_update", "exclude_delete", "exclude_ttl_deletes", "allow_txn_exclusion")

#: Table name -> None (all its columns) or the columns to track ([] = keys only).
Tracking = Mapping[str, Sequence[str] | None]


def tracking_clause(tracking: str | Tracking | None, dialect: Dialect = GOOGLE_SQL) -> str:
    """The ``FOR ...`` clause; '' when the stream tracks nothing yet.

    >>> tracking_clause(ALL), tracking_clause({"Singers": [], "Albums": ["Title", "Year"]})
    ('FOR ALL', 'FOR `Singers`(), `Albums`(`Title`, `Year`)')
    >>> print(tracking_clause({"Albums": ["Title"]}, POSTGRESQL))
    FOR "Albums"("Title")
    """
    if tracking is None:
        return ""
    if isinstance(tracking, str):
        if tracking.upper() != ALL:
            raise DdlError(f"change stream tracking must be ALL or a mapping of table -> columns, got {tracking!r}")
        return "FOR ALL"
    if not tracking:
        raise DdlError("change stream tracks no table: give at least one table, ALL, or None for none yet")
    parts = []
    for table, columns in tracking.items():
        if isinstance(columns, str):
            raise DdlError(f"columns of table {table} must be a list of names, got the string {columns!r}")
        if columns is None:
            parts.append(quoted_table(table, dialect))
            continue
        lowered = [c.lower() for c in columns]
        if len(set(lowered)) != len(lowered):
            raise DdlError(f"table {table} lists a column twice in the change stream: {list(columns)}")
        parts.append(f"{quoted_table(table, dialect)}({', '.join(quoted_column(c, dialect) for c in columns)})")
    return "FOR " + ", ".join(parts)


def _options_clause(retention_period: str | None, value_capture_type: str | None, flags: Mapping[str, bool | None],
                    dialect: Dialect) -> str:
    options = []
    if retention_period is not None:
        if not _TIMESPAN.match(retention_period.strip().lower()):
            raise DdlError(f"invalid retention_period {retention_period!r}: use a whole number of days, hours, "
                           "minutes or seconds, e.g. '36h' or '7d'")
        options.append(f"retention_period = '{retention_period.strip().lower()}'")
    if value_capture_type is not None:
        capture = value_capture_type.upper()
        if capture not in VALUE_CAPTURE_TYPES:
            raise DdlError(f"invalid value_capture_type {value_capture_type!r}: one of {', '.join(VALUE_CAPTURE_TYPES)}")
        options.append(f"value_capture_type = '{capture}'")
    for name in _BOOL_OPTIONS:
        value = flags.get(name)
        if value is not None:
            options.append(f"{name} = {'true' if value else 'false'}")
    return DDL_SQL[dialect.name].change_stream_options.format(", ".join(options)) if options else ""


def create_change_stream(name: str, tracking: str | Tracking | None = ALL, *, retention_period: str | None = None,
                         value_capture_type: str | None = None, exclude_insert: bool | None = None,
                         exclude_update: bool | None = None, exclude_delete: bool | None = None,
                         exclude_ttl_deletes: bool | None = None, allow_txn_exclusion: bool | None = None,
                         dialect: Dialect = GOOGLE_SQL) -> str:
    """``CREATE CHANGE STREAM``; options left None are not written (Spanner's defaults apply).

    >>> create_change_stream("S", None)
    'CREATE CHANGE STREAM `S`'
    >>> create_change_stream("S", value_capture_type="sideways")
    Traceback (most recent call last):
    ...
    watcher.errors.DdlError: invalid value_capture_type 'sideways': one of OLD_AND_NEW_VALUES, NEW_ROW, NEW_VALUES, NEW_ROW_AND_OLD_VALUES
    """
    flags = {"exclude_insert": exclude_insert, "exclude_update": exclude_update, "exclude_delete": exclude_delete,
             "exclude_ttl_deletes": exclude_ttl_deletes, "allow_txn_exclusion": allow_txn_exclusion}
    parts = [f"CREATE CHANGE STREAM {dialect.quote(name, 'change stream')}",
             tracking_clause(tracking, dialect), _options_clause(retention_period, value_capture_type, flags, dialect)]
    return " ".join(p for p in parts if p)


def alter_change_stream_tracking(name: str, tracking: str | Tracking | None, *, dialect: Dialect = GOOGLE_SQL) -> str:
    """``ALTER CHANGE STREAM ... SET FOR ...``, or ``DROP FOR ALL`` when ``tracking`` is None.

    >>> alter_change_stream_tracking("S", {"Singers": None})
    'ALTER CHANGE STREAM `S` SET FOR `Singers`'
    >>> alter_change_stream_tracking("S", None)
    'ALTER CHANGE STREAM `S` DROP FOR ALL'
    >>> alter_change_stream_tracking("S", ALL, dialect=POSTGRESQL)
    'ALTER CHANGE STREAM "S" SET FOR ALL'
    """
    stream = dialect.quote(name, "change stream")
    if tracking is None:
        return f"ALTER CHANGE STREAM {stream} DROP FOR ALL"
    return f"ALTER CHANGE STREAM {stream} SET {tracking_clause(tracking, dialect)}"


def drop_change_stream(name: str, *, dialect: Dialect = GOOGLE_SQL) -> str:
    """``DROP CHANGE STREAM``.

    >>> drop_change_stream("S"), drop_change_stream("S", dialect=POSTGRESQL)
    ('DROP CHANGE STREAM `S`', 'DROP CHANGE STREAM "S"')
    """
    return f"DROP CHANGE STREAM {dialect.quote(name, 'change stream')}"
