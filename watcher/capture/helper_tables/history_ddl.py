"""The history table of a data table: its name, columns and CREATE TABLE statement, in either dialect.

See :mod:`watcher.capture.helper_tables.history` for the mode these tables serve.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...dialects import GOOGLE_SQL, Dialect
from ...dialects.ddl import DDL_SQL, column_definition_type, commit_timestamp_definition
from ...errors import DdlError

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
                      history_table: str | None = None, dialect: Dialect = GOOGLE_SQL) -> str:
    """The CREATE TABLE statement of the history table of ``table``, in ``dialect``.

    ``key_columns`` are the data table's primary-key columns as (name, Spanner type) or
    (name, Spanner type, nullable), the types by their GoogleSQL names.

    >>> print(history_table_ddl("Documents", [("UserId", "INT64"), ("DocumentId", "INT64")]))
    CREATE TABLE `DocumentsHistory` (
      `UserId` INT64 NOT NULL,
      `DocumentId` INT64 NOT NULL,
      `CommitTimestamp` TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true),
      `Seq` INT64 NOT NULL,
      `Operation` STRING(6) NOT NULL,
      `NewValues` JSON,
    ) PRIMARY KEY (`UserId`, `DocumentId`, `CommitTimestamp`, `Seq`)
    >>> from watcher.dialects import POSTGRESQL
    >>> print(history_table_ddl("Documents", [("DocumentId", "STRING(36)")], dialect=POSTGRESQL))
    CREATE TABLE "DocumentsHistory" (
      "DocumentId" varchar(36) NOT NULL,
      "CommitTimestamp" spanner.commit_timestamp NOT NULL,
      "Seq" bigint NOT NULL,
      "Operation" varchar(6) NOT NULL,
      "NewValues" jsonb,
      PRIMARY KEY ("DocumentId", "CommitTimestamp", "Seq")
    )
    """
    name = history_table or history_table_name(table)
    if not key_columns:
        raise DdlError(f"Table {table} has no primary-key columns to build a history table from")
    clash = {c.upper() for c in HISTORY_COLUMNS} & {k[0].upper() for k in key_columns}
    if clash:
        raise DdlError(f"Key column(s) {', '.join(sorted(clash))} of table {table} clash with the history columns "
                       f"{', '.join(HISTORY_COLUMNS)}")

    def column(column_name: str, google: str, nullable: bool = False) -> str:
        return (f"  {dialect.quote(column_name, 'key column')} {column_definition_type(dialect, google)}"
                f"{'' if nullable else ' NOT NULL'},\n")

    lines = [column(k[0], k[1], len(k) > 2 and bool(k[2])) for k in key_columns]  # type: ignore[misc]
    lines += [
        f"  {commit_timestamp_definition(dialect, COMMIT_TIMESTAMP_COLUMN, not_null=True)},\n",
        column(SEQUENCE_COLUMN, "INT64"),
        column(OPERATION_COLUMN, "STRING(6)"),
        column(NEW_VALUES_COLUMN, "JSON", nullable=True),
    ]
    key = ", ".join(dialect.quote(c) for c in [*(k[0] for k in key_columns), COMMIT_TIMESTAMP_COLUMN, SEQUENCE_COLUMN])
    return DDL_SQL[dialect.name].create_table.format(exists="", table=dialect.quote(name, "history table"),
                                                     columns="".join(lines), key=key)
