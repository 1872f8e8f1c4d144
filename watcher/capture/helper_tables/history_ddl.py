"""The history table of a data table: its name, columns and CREATE TABLE statement.

See :mod:`watcher.capture.helper_tables.history` for the mode these tables serve.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import DdlError
from ...sqlnames import quote_identifier

COMMIT_TIMESTAMP_COLUMN = "CommitTimestamp"
SEQUENCE_COLUMN = "Seq"
OPERATION_COLUMN = "Operation"
NEW_VALUES_COLUMN = "NewValues"
HISTORY_COLUMNS = (COMMIT_TIMESTAMP_COLUMN, SEQUENCE_COLUMN, OPERATION_COLUMN, NEW_VALUES_COLUMN)


def history_table_name(table: str) -> str:
    """The default history table of ``table``.

    >>> history_table_name("Documents")
    'DocumentsHistory'
    """
    return f"{table}History"


def history_table_ddl(table: str, key_columns: Sequence[tuple[str, str] | tuple[str, str, bool]], *,
                      history_table: str | None = None) -> str:
    """The CREATE TABLE statement of the history table of ``table``.

    ``key_columns`` are the data table's primary-key columns as (name, Spanner type) or
    (name, Spanner type, nullable).

    >>> print(history_table_ddl("Documents", [("UserId", "INT64"), ("DocumentId", "INT64")]))
    CREATE TABLE `DocumentsHistory` (
      `UserId` INT64 NOT NULL,
      `DocumentId` INT64 NOT NULL,
      `CommitTimestamp` TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true),
      `Seq` INT64 NOT NULL,
      `Operation` STRING(6) NOT NULL,
      `NewValues` JSON
    ) PRIMARY KEY (`UserId`, `DocumentId`, `CommitTimestamp`, `Seq`)
    """
    name = history_table or history_table_name(table)
    if not key_columns:
        raise DdlError(f"Table {table} has no primary-key columns to build a history table from")
    clash = {c.upper() for c in HISTORY_COLUMNS} & {k[0].upper() for k in key_columns}
    if clash:
        raise DdlError(f"Key column(s) {', '.join(sorted(clash))} of table {table} clash with the history columns "
                       f"{', '.join(HISTORY_COLUMNS)}")
    lines = []
    for column in key_columns:
        nullable = len(column) > 2 and column[2]  # type: ignore[misc]
        lines.append(f"  {quote_identifier(column[0], 'key column')} {column[1]}{'' if nullable else ' NOT NULL'}")
    lines += [
        f"  {quote_identifier(COMMIT_TIMESTAMP_COLUMN)} TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true)",
        f"  {quote_identifier(SEQUENCE_COLUMN)} INT64 NOT NULL",
        f"  {quote_identifier(OPERATION_COLUMN)} STRING(6) NOT NULL",
        f"  {quote_identifier(NEW_VALUES_COLUMN)} JSON",
    ]
    key = ", ".join(quote_identifier(c) for c in [*(k[0] for k in key_columns), COMMIT_TIMESTAMP_COLUMN, SEQUENCE_COLUMN])
    return f"CREATE TABLE {quote_identifier(name, 'history table')} (\n" + ",\n".join(lines) + f"\n) PRIMARY KEY ({key})"
