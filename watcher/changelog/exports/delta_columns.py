"""The changelog's Delta columns an export computes with: the source names, the exact commit timestamp.

The Delta table keeps the commit timestamp as a TIMESTAMP (microseconds) plus the nanoseconds of
its second (``commit_nanos``, :mod:`..tables.layout`); these SQL texts give back the exact value.

Example:
    >>> [column for _, column in SOURCE_COLUMNS]
    ['source_project', 'source_instance', 'source_database']
"""

from __future__ import annotations

from typing import Any

#: The source columns of every warehouse row, with the Selection field (and ``--source-*`` option) naming each.
SOURCE_COLUMNS: tuple[tuple[str, str], ...] = (("project", "source_project"), ("instance", "source_instance"),
                                               ("database", "source_database"))
#: The exact commit timestamp as RFC 3339 text with nine digits, UTC whatever the session's time zone.
EXACT_COMMIT_SQL = ("concat(date_format(to_utc_timestamp(commit_timestamp, current_timezone()), "
                    "\"yyyy-MM-dd'T'HH:mm:ss\"), '.', lpad(CAST(commit_nanos AS STRING), 9, '0'), 'Z')")
#: Nanoseconds since the epoch of the exact commit timestamp.
EPOCH_NANOS_SQL = "(unix_seconds(commit_timestamp) * 1000000000 + commit_nanos)"


def source_columns(frame: Any) -> list[str]:
    """The source columns ``frame`` has (none in a view of a warehouse written before they existed)."""
    have = set(frame.columns)
    return [column for _, column in SOURCE_COLUMNS if column in have]
