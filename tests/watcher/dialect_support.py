"""The test tables in both dialects, and databases of either dialect made through the official client.

Names are double-quoted in the PostgreSQL DDL, so tables and columns keep the case the GoogleSQL
tables have and the same writers (mutations naming ``T``, ``Id``, ``Ts``) serve both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from google.cloud.spanner_admin_database_v1 import DatabaseDialect

from tests.watcher.core_support import C_DDL, T_DDL

GOOGLE, POSTGRES = "GoogleSQL", "PostgreSQL"
DIALECT_NAMES = (GOOGLE, POSTGRES)

#: Each test table's DDL in each dialect.
TABLES: dict[str, dict[str, str]] = {
    GOOGLE: {
        "T": T_DDL,
        "C": C_DDL,
        "U": ("CREATE TABLE U (Id INT64 NOT NULL, Name STRING(MAX), "
              "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"),
        "S": ("CREATE TABLE S (Id INT64 NOT NULL, Name STRING(MAX), "
              "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true), "
              "Shard INT64 AS (MOD(FARM_FINGERPRINT(CAST(Id AS STRING)), 7)) STORED) PRIMARY KEY (Id)"),
        "S_IDX": "CREATE NULL_FILTERED INDEX Idx_S_Shard_Ts ON S (Shard, Ts)",
        "NOTS": "CREATE TABLE NoTs (Id INT64 NOT NULL, Ts TIMESTAMP) PRIMARY KEY (Id)",
    },
    POSTGRES: {
        "T": 'CREATE TABLE "T" ("Id" bigint NOT NULL, "Name" varchar, "Ts" spanner.commit_timestamp, PRIMARY KEY ("Id"))',
        "C": ('CREATE TABLE "C" ("A" bigint NOT NULL, "B" varchar, "V" bigint, "Ts" spanner.commit_timestamp, '
              'PRIMARY KEY ("A", "B"))'),
        "U": 'CREATE TABLE "U" ("Id" bigint NOT NULL, "Name" varchar, "Ts" spanner.commit_timestamp, PRIMARY KEY ("Id"))',
        "S": ('CREATE TABLE "S" ("Id" bigint NOT NULL, "Name" varchar, "Ts" spanner.commit_timestamp, '
              '"Shard" bigint GENERATED ALWAYS AS (mod(spanner.farm_fingerprint(CAST("Id" AS varchar)), 7)) STORED, '
              'PRIMARY KEY ("Id"))'),
        "S_IDX": ('CREATE INDEX "Idx_S_Shard_Ts" ON "S" ("Shard", "Ts") '
                  'WHERE "Shard" IS NOT NULL AND "Ts" IS NOT NULL'),
        "NOTS": 'CREATE TABLE "NoTs" ("Id" bigint NOT NULL, "Ts" timestamptz, PRIMARY KEY ("Id"))',
    },
}

#: ALTER TABLE T ADD COLUMN Extra, a string column, in each dialect.
ADD_EXTRA = {GOOGLE: "ALTER TABLE T ADD COLUMN Extra STRING(MAX)", POSTGRES: 'ALTER TABLE "T" ADD COLUMN "Extra" varchar'}


def database_maker(make_database: Callable[..., Any], dialect: str) -> Callable[..., Any]:
    """A function ``(*table names) -> database`` of ``dialect`` holding those test tables."""

    def make(*tables: str, extra: Iterable[str] = ()) -> Any:
        ddl = [TABLES[dialect][t] for t in tables] + list(extra)
        if dialect == GOOGLE:
            return make_database(ddl)
        db = make_database((), database_dialect=DatabaseDialect.POSTGRESQL)
        if ddl:
            db.update_ddl(ddl).result(120)
        return db

    return make
