"""BigQuery CDC rows: the changed row plus ``_CHANGE_TYPE`` and ``_CHANGE_SEQUENCE_NUMBER``.

``_CHANGE_TYPE`` is ``DELETE`` for deletions and ``UPSERT`` for everything else (INSERT,
UPDATE and the changelog's own UPSERT). ``_CHANGE_SEQUENCE_NUMBER`` follows BigQuery's
format: up to four sections of at most 16 hex digits separated by ``/``,
compared section by section as unsigned numbers. It is ``<commit nanos>/<record_sequence>``
in hex: the nanoseconds since the epoch of the exact commit timestamp, then the record's
place in its transaction group, so the later change of a key always wins. The number comes from
the change alone, not from the export, so the order holds across incremental exports: a change that
reached the changelog in a later run with an older commit timestamp gets the smaller number, and
BigQuery keeps the newer version; a row exported twice carries the same number (an idempotent upsert).

Change-stream rows export the same way: every version is a row, a hard DELETE (its row holds
the key) a ``DELETE``, and the record's place in its transaction (the stream's order) the second
section. BigQuery's CDC rows have no column for a transaction or for old values, so the stream's transaction fields and old values stay in the
changelog and the Datastream export.

Example:
    >>> format_sequence_number(1714557600123456789, 2)
    '17CB550D9E4E0D15/2'
    >>> compare_sequence_numbers("77", "7B"), compare_sequence_numbers("FFF/B", "FFF/ABC")
    (-1, -1)
    >>> compare_sequence_numbers("BA/FFFFFFFF", "ABC"), compare_sequence_numbers("FFF/ABC", "ABC")
    (-1, 1)
"""

from __future__ import annotations

import re
from typing import Any

from ...errors import ChangelogError
from ..io.fs import NO_CHECKSUMS
from .delta_columns import source_columns

MAX_SECTIONS = 4
SECTION_DIGITS = 16
_SECTION = re.compile(r"^[0-9A-Fa-f]{1,16}$")
CHANGE_TYPES = {"INSERT": "UPSERT", "UPDATE": "UPSERT", "UPSERT": "UPSERT", "DELETE": "DELETE"}

#: Exact nanoseconds since the epoch of the 9-digit commit_timestamp text.
COMMIT_NANOS_SQL = ("(unix_seconds(cast(commit_timestamp AS timestamp)) * 1000000000 "
                    "+ cast(substring(commit_timestamp, 21, 9) AS bigint))")
SEQUENCE_NUMBER_SQL = f"concat(hex({COMMIT_NANOS_SQL}), '/', hex(record_sequence))"
CHANGE_TYPE_SQL = "CASE WHEN mod_type = 'DELETE' THEN 'DELETE' ELSE 'UPSERT' END"
#: The folder of each table's files in an export (``table_name=<table>``).
FOLDER = "table_name"


def format_sequence_number(*sections: int) -> str:
    """Sections (unsigned, < 2**64) as a _CHANGE_SEQUENCE_NUMBER."""
    if not 1 <= len(sections) <= MAX_SECTIONS:
        raise ChangelogError(f"a _CHANGE_SEQUENCE_NUMBER has 1 to {MAX_SECTIONS} sections, got {len(sections)}")
    for s in sections:
        if not 0 <= s < 1 << 64:
            raise ChangelogError(f"a _CHANGE_SEQUENCE_NUMBER section must be an unsigned 64-bit number, got {s}")
    return "/".join(format(s, "X") for s in sections)


def parse_sequence_number(text: str) -> tuple[int, ...]:
    """The sections of a _CHANGE_SEQUENCE_NUMBER (upper or lower case hex)."""
    parts = text.split("/")
    if not 1 <= len(parts) <= MAX_SECTIONS or not all(_SECTION.match(p) for p in parts):
        raise ChangelogError(f"not a _CHANGE_SEQUENCE_NUMBER (1 to {MAX_SECTIONS} sections of 1 to "
                             f"{SECTION_DIGITS} hex digits separated by '/'): {text!r}")
    return tuple(int(p, 16) for p in parts)


def compare_sequence_numbers(a: str, b: str) -> int:
    """-1, 0 or 1 as BigQuery orders ``a`` against ``b`` (the greater one is the newer record)."""
    left, right = parse_sequence_number(a), parse_sequence_number(b)
    return (left > right) - (left < right)


def bigquery_rows(changelog: Any) -> Any:
    """Changelog rows (the changelog view's columns) as BigQuery CDC rows: table_name, _CHANGE_TYPE,
    _CHANGE_SEQUENCE_NUMBER, row (JSON), after the source columns when the rows have them.

    ``row`` is the full row (typed JSON values) with the two pseudo-columns added.
    """
    from pyspark.sql import functions as F

    pseudo = ("concat('\"_CHANGE_TYPE\":\"', _CHANGE_TYPE, '\",\"_CHANGE_SEQUENCE_NUMBER\":\"', "
              "_CHANGE_SEQUENCE_NUMBER, '\"}')")
    row = (f"concat(substring(new_values, 1, length(new_values) - 1), "
           f"CASE WHEN new_values = '{{}}' THEN '' ELSE ',' END, {pseudo})")
    return (changelog
            .withColumn("_CHANGE_TYPE", F.expr(CHANGE_TYPE_SQL))
            .withColumn("_CHANGE_SEQUENCE_NUMBER", F.expr(SEQUENCE_NUMBER_SQL))
            .select(*source_columns(changelog), "table_name", "keys", "commit_timestamp", "_CHANGE_TYPE",
                    "_CHANGE_SEQUENCE_NUMBER", F.expr(row).alias("row")))


def lines(changelog: Any) -> Any:
    """The rows as the folder export writes them: the source columns, :data:`FOLDER` and the line (``value``)."""
    return bigquery_rows(changelog).selectExpr(*source_columns(changelog), f"table_name AS {FOLDER}", "row AS value")


def write(changelog: Any, path: str) -> None:
    """Write all the rows as JSON lines, one folder per table (``table_name=<T>/part-*.txt``), replacing ``path``
    (the incremental export into a folder is :mod:`.folder_target`'s)."""
    bigquery_rows(changelog).select("table_name", "row").write.options(**NO_CHECKSUMS).mode("overwrite").partitionBy("table_name").text(path)
