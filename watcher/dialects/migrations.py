"""The statements of the migration runner's own tables in both dialects (the tracking table and its lock
table), and which dialect a migration file is written in.

A GoogleSQL database keeps the names as the runner writes them (``SPANNER_WATCHER_MIGRATIONS``,
``FOLDER_ID``, ...); a PostgreSQL database gets them in lower case, as the checkpoint table does
(:func:`watcher.dialects.checkpoints.checkpoint_name`), with PostgreSQL's types and a
``spanner.commit_timestamp`` APPLIED_AT.

Migration files are applied as written, so a file must be in the database's dialect:
:func:`written_in` tells from the spellings only one dialect has (``STRING(MAX)``, back-quoted names,
``) PRIMARY KEY``, ... against ``varchar``, ``bigint``, ``spanner.commit_timestamp``, ...).

Example:
    >>> print(tracking_table_sql(POSTGRESQL, "SPANNER_WATCHER_MIGRATIONS"))
    CREATE TABLE "spanner_watcher_migrations" (
      "folder_id" varchar NOT NULL,
      "version" bigint NOT NULL,
      "name" varchar NOT NULL,
      "checksum" varchar NOT NULL,
      "applied_at" spanner.commit_timestamp NOT NULL,
      PRIMARY KEY ("folder_id", "version")
    )
    >>> written_in("CREATE TABLE A (K INT64) PRIMARY KEY (K)"), written_in('CREATE TABLE a (k bigint PRIMARY KEY)')
    (GoogleSQL, PostgreSQL)
"""

from __future__ import annotations

import re

from google.cloud.spanner_v1 import param_types

from .base import GOOGLE_SQL, POSTGRESQL, Dialect, Statement
from .checkpoints import checkpoint_name, create_table_sql

#: The tracking table's columns (name, GoogleSQL type, NOT NULL), key and commit-timestamp column.
TRACKING_COLUMNS = (("FOLDER_ID", "STRING(MAX)", True), ("VERSION", "INT64", True), ("NAME", "STRING(MAX)", True),
                    ("CHECKSUM", "STRING(MAX)", True), ("APPLIED_AT", "TIMESTAMP", True))
TRACKING_KEY = ("FOLDER_ID", "VERSION")
#: The lock table's columns and key.
LOCK_COLUMNS = (("LOCK_ID", "STRING(MAX)", True), ("OWNER", "STRING(MAX)", True),
                ("ACQUIRED_AT", "TIMESTAMP", True), ("EXPIRES_AT", "TIMESTAMP", True))
LOCK_KEY = ("LOCK_ID",)

#: Spellings only one dialect's DDL has, by dialect (matched outside string literals, ignoring case).
_ONLY_IN: dict[str, tuple[str, ...]] = {
    GOOGLE_SQL.name: (r"`", r"\bINT64\b", r"\bFLOAT(32|64)\b", r"\bSTRING\s*\(", r"\bBYTES\s*\(", r"\bARRAY\s*<",
                      r"\ballow_commit_timestamp\s*=", r"\bNULL_FILTERED\b", r"\)\s*PRIMARY\s+KEY\b",
                      r"(?<!\.)\bFARM_FINGERPRINT\s*\("),
    POSTGRESQL.name: (r"\bvarchar\b", r"\bbigint\b", r"\btimestamptz\b", r"\bbytea\b", r"\bjsonb\b",
                      r"\bdouble\s+precision\b", r"\bspanner\.commit_timestamp\b", r"\bspanner\.farm_fingerprint\b",
                      r"\bGENERATED\s+ALWAYS\b", r"\bcharacter\s+varying\b"),
}
_STRING_LITERAL = re.compile(r"'(?:[^'\\]|\\.|'')*'")


def name_in(dialect: Dialect, name: str) -> str:
    """A runner table's (or column's) name in ``dialect``.

    >>> name_in(GOOGLE_SQL, "SPANNER_WATCHER_MIGRATIONS_LOCK"), name_in(POSTGRESQL, "OWNER")
    ('SPANNER_WATCHER_MIGRATIONS_LOCK', 'owner')
    """
    return checkpoint_name(dialect, name)


def tracking_table_sql(dialect: Dialect, table: str) -> str:
    """CREATE TABLE of the tracking table named ``table``.

    >>> tracking_table_sql(GOOGLE_SQL, "M").splitlines()[-2:]
    ['  `APPLIED_AT` TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true),', ') PRIMARY KEY (`FOLDER_ID`, `VERSION`)']
    """
    return create_table_sql(dialect, table, TRACKING_COLUMNS, TRACKING_KEY, ("APPLIED_AT",))


def lock_table_sql(dialect: Dialect, table: str) -> str:
    """CREATE TABLE IF NOT EXISTS of the lock table named ``table`` (two first runs may create it at once).

    >>> lock_table_sql(POSTGRESQL, "M_LOCK").splitlines()[0]
    'CREATE TABLE IF NOT EXISTS "m_lock" ('
    """
    return create_table_sql(dialect, table, LOCK_COLUMNS, LOCK_KEY).replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1)


def applied_sql(dialect: Dialect, table: str, folder_id: str) -> Statement:
    """The applied migrations of one folder: VERSION, NAME, CHECKSUM, APPLIED_AT, by version.

    >>> print(applied_sql(POSTGRESQL, "M", "app").sql)
    SELECT "version", "name", "checksum", "applied_at" FROM "m" WHERE "folder_id" = $1 ORDER BY "version"
    """
    def q(name: str) -> str:
        return dialect.quote(name_in(dialect, name))

    sql = (f"SELECT {q('VERSION')}, {q('NAME')}, {q('CHECKSUM')}, {q('APPLIED_AT')} "
           f"FROM {dialect.quote(name_in(dialect, table), 'migrations table')} "
           f"WHERE {q('FOLDER_ID')} = @folder ORDER BY {q('VERSION')}")
    return dialect.bind(sql, {"folder": folder_id}, {"folder": param_types.STRING})


def written_in(sql: str) -> Dialect | None:
    """The dialect ``sql`` is written in, when only one dialect's spellings appear in it (else None).

    >>> written_in("INSERT INTO T (A) VALUES ('STRING(MAX)')") is None
    True
    """
    text = _STRING_LITERAL.sub("''", sql)
    found = [d for d in (GOOGLE_SQL, POSTGRESQL)
             if any(re.search(pattern, text, re.IGNORECASE) for pattern in _ONLY_IN[d.name])]
    return found[0] if len(found) == 1 else None
