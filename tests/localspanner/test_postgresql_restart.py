"""A PostgreSQL-dialect database across a restart of the embedded server: dialect, schema and rows kept.

Starts its own server (``LocalSpanner`` with a data directory), so it is skipped when the run
targets another server through ``SPANNER_EMULATOR_HOST``; otherwise only the official client is used.
"""

from __future__ import annotations

import os

import pytest
from google.cloud import spanner
from google.cloud.spanner_admin_database_v1 import DatabaseDialect
from google.cloud.spanner_v1 import param_types

_EXTERNAL = os.environ.get("SPANNER_EMULATOR_HOST")
pytestmark = pytest.mark.skipif(bool(_EXTERNAL), reason="starts its own local server; SPANNER_EMULATOR_HOST is set")

PROJECT = "pg-restart-project"
INSTANCE = "pg-restart-instance"
DDL = [
    'CREATE TABLE singers (id bigint NOT NULL, "Name" varchar(20), at spanner.commit_timestamp, '
    "shard bigint GENERATED ALWAYS AS (mod(spanner.farm_fingerprint(\"Name\"), 7)) STORED, PRIMARY KEY (id))",
    "CREATE INDEX by_shard ON singers (shard, at) WHERE shard IS NOT NULL AND at IS NOT NULL",
]


def _database(server, monkeypatch, *, create: bool):
    monkeypatch.setenv("SPANNER_EMULATOR_HOST", server.emulator_host)
    instance = spanner.Client(project=PROJECT).instance(
        INSTANCE, configuration_name=f"projects/{PROJECT}/instanceConfigs/emulator-config", node_count=1)
    if create:
        instance.create().result(30)
    if not create:
        return instance.database("pg-kept")  # its dialect read from the server
    db = instance.database("pg-kept", database_dialect=DatabaseDialect.POSTGRESQL)
    db.create().result(60)
    db.update_ddl(DDL).result(60)
    return db


def test_a_postgresql_database_survives_a_restart(tmp_path, monkeypatch):
    from watcher.localspanner.server import LocalSpanner

    data_dir = str(tmp_path / "data")
    with LocalSpanner(data_dir=data_dir) as server:
        db = _database(server, monkeypatch, create=True)
        with db.batch() as batch:
            batch.insert("singers", ("id", "Name", "at"), [[1, "Ann", spanner.COMMIT_TIMESTAMP]])
        db.reload()
        ddl_before = list(db.ddl_statements)

    with LocalSpanner(data_dir=data_dir) as server:
        db = _database(server, monkeypatch, create=False)
        db.reload()
        assert db.database_dialect == DatabaseDialect.POSTGRESQL
        assert list(db.ddl_statements) == ddl_before
        with db.snapshot() as snap:
            rows = list(snap.execute_sql('SELECT "Name", at FROM singers WHERE id = $1', params={"p1": 1},
                                         param_types={"p1": param_types.INT64}))
        assert rows == [["Ann", batch.committed]]
