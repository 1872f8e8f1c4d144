"""Persistence across a restart of the embedded server, and no trace left without a data directory.

These tests start their own servers (``LocalSpanner``), so they are skipped when the run
targets another server through ``SPANNER_EMULATOR_HOST``. Everything else goes through the
official client.
"""

from __future__ import annotations

import base64
import os
import tempfile
from decimal import Decimal

import pytest
from google.cloud import spanner
from google.cloud.spanner_v1 import param_types

# Read at import (collection), before the shared fixtures point the variable at their own server.
_EXTERNAL = os.environ.get("SPANNER_EMULATOR_HOST")
pytestmark = pytest.mark.skipif(bool(_EXTERNAL), reason="starts its own local server; SPANNER_EMULATOR_HOST is set")

PROJECT = "persist-project"
INSTANCE = "persist-instance"
DDL = [
    """CREATE TABLE Singers (
        SingerId INT64 NOT NULL,
        Name STRING(100),
        Score NUMERIC,
        Photo BYTES(MAX),
        Tags ARRAY<STRING(MAX)>,
        Updated TIMESTAMP OPTIONS (allow_commit_timestamp=true)
    ) PRIMARY KEY (SingerId)""",
    "CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, Title STRING(MAX)) "
    "PRIMARY KEY (SingerId, AlbumId), INTERLEAVE IN PARENT Singers ON DELETE CASCADE",
    "CREATE NULL_FILTERED INDEX SingersByName ON Singers (Name) STORING (Score)",
]


def _client(server, monkeypatch):
    monkeypatch.setenv("SPANNER_EMULATOR_HOST", server.emulator_host)
    return spanner.Client(project=PROJECT)


def _snapshot_everything(db):
    with db.snapshot(multi_use=True) as snap:
        singers = [list(r) for r in snap.execute_sql("SELECT * FROM Singers ORDER BY SingerId")]
        albums = [list(r) for r in snap.read("Albums", ("SingerId", "AlbumId", "Title"), spanner.KeySet(all_=True))]
        by_name = [list(r) for r in snap.read("Singers", ("Name", "Score"), spanner.KeySet(all_=True),
                                               index="SingersByName")]
    return singers, albums, by_name


def test_everything_survives_a_restart(tmp_path, monkeypatch):
    from watcher.localspanner.server import LocalSpanner

    data_dir = str(tmp_path / "data")
    with LocalSpanner(data_dir=data_dir) as server:
        client = _client(server, monkeypatch)
        instance = client.instance(INSTANCE, configuration_name=f"projects/{PROJECT}/instanceConfigs/emulator-config",
                                   display_name="persisted", node_count=1)
        instance.create().result(30)
        db = instance.database("persisted-db", ddl_statements=DDL)
        db.create().result(60)
        db.update_ddl(["ALTER TABLE Singers ADD COLUMN Country STRING(2)"]).result(60)
        with db.batch() as b:
            b.insert("Singers", ("SingerId", "Name", "Score", "Photo", "Tags", "Updated", "Country"),
                     [(1, "Ann", Decimal("1.5"), base64.b64encode(b"\x00\x01"), ["a", None], spanner.COMMIT_TIMESTAMP, "US"),
                      (2, None, None, None, None, spanner.COMMIT_TIMESTAMP, None)])
            b.insert("Albums", ("SingerId", "AlbumId", "Title"), [(1, 10, "First"), (2, 20, "Second")])
        first_commit = b.committed
        db.run_in_transaction(lambda txn: txn.execute_update(
            "UPDATE Singers SET Updated = PENDING_COMMIT_TIMESTAMP(), Name = @n WHERE SingerId = 2",
            params={"n": "Bo"}, param_types={"n": param_types.STRING}))
        db.reload()
        ddl_before = list(db.ddl_statements)
        everything_before = _snapshot_everything(db)
        with db.batch() as b:
            b.delete("Singers", spanner.KeySet(keys=[[3]]))  # a commit with no effect still gets a timestamp
        last_commit = b.committed

    with LocalSpanner(data_dir=data_dir) as server:
        client = _client(server, monkeypatch)
        instance = client.instance(INSTANCE)
        assert instance.exists()
        instance.reload()
        assert instance.display_name == "persisted"
        assert [d.name.rsplit("/", 1)[-1] for d in instance.list_databases()] == ["persisted-db"]
        db = instance.database("persisted-db")
        db.reload()
        assert list(db.ddl_statements) == ddl_before
        assert any("Country" in s for s in ddl_before)
        everything_after = _snapshot_everything(db)
        assert everything_after == everything_before
        singers, albums, by_name = everything_after
        assert singers[0][5] == first_commit  # the commit timestamp itself survived
        assert singers[1][1] == "Bo" and singers[1][5] > first_commit
        assert albums == [[1, 10, "First"], [2, 20, "Second"]]
        assert by_name == [["Ann", Decimal("1.5")], ["Bo", None]]
        # The database keeps working, and commit timestamps keep increasing across the restart.
        with db.batch() as b:
            b.insert("Singers", ("SingerId", "Updated"), [(3, spanner.COMMIT_TIMESTAMP)])
        assert b.committed > last_commit
        with db.batch() as b:
            b.delete("Singers", spanner.KeySet(keys=[[1]]))  # cascades to Albums
        with db.snapshot() as snap:
            assert list(snap.execute_sql("SELECT COUNT(*) FROM Albums")) == [[1]]


def test_dropped_database_stays_dropped_after_restart(tmp_path, monkeypatch):
    from watcher.localspanner.server import LocalSpanner

    data_dir = str(tmp_path / "data")
    with LocalSpanner(data_dir=data_dir) as server:
        instance = _client(server, monkeypatch).instance(
            INSTANCE, configuration_name=f"projects/{PROJECT}/instanceConfigs/emulator-config")
        instance.create().result(30)
        keep = instance.database("keep-db", ddl_statements=DDL[:1])
        keep.create().result(60)
        gone = instance.database("gone-db", ddl_statements=DDL[:1])
        gone.create().result(60)
        gone.drop()
    with LocalSpanner(data_dir=data_dir) as server:
        instance = _client(server, monkeypatch).instance(INSTANCE)
        assert [d.name.rsplit("/", 1)[-1] for d in instance.list_databases()] == ["keep-db"]
        assert not instance.database("gone-db").exists()


def test_without_data_dir_nothing_outlives_the_server(tmp_path, monkeypatch):
    from watcher.localspanner.server import LocalSpanner

    scratch = tmp_path / "tmp"
    cwd = tmp_path / "cwd"
    scratch.mkdir()
    cwd.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # where mkdtemp() puts things
    monkeypatch.chdir(cwd)
    with LocalSpanner() as server:
        instance = _client(server, monkeypatch).instance(
            INSTANCE, configuration_name=f"projects/{PROJECT}/instanceConfigs/emulator-config")
        instance.create().result(30)
        db = instance.database("temp-db", ddl_statements=DDL[:1])
        db.create().result(60)
        with db.batch() as b:
            b.insert("Singers", ("SingerId", "Name"), [(1, "x")])
        assert any(scratch.iterdir())  # the data lives in the temporary folder while running
    assert list(scratch.iterdir()) == []
    assert list(cwd.iterdir()) == []

    # A new server without a data directory starts empty.
    with LocalSpanner() as server:
        assert not _client(server, monkeypatch).instance(INSTANCE).exists()
    assert list(scratch.iterdir()) == []


def _downgrade_to_without_rowid(data_dir: str, table: str) -> None:
    """Store ``table`` as a data directory written before rowid tables has it (WITHOUT ROWID)."""
    import glob
    import sqlite3

    (path,) = glob.glob(os.path.join(data_dir, "databases", "*", "*.sqlite"))
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        sql, = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
        assert "WITHOUT ROWID" not in sql and "INTEGER NOT NULL" in sql
        indexes = [r[0] for r in conn.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? "
                                              "AND sql IS NOT NULL", (table,))]
        conn.execute("PRAGMA foreign_keys=OFF")
        conn.execute("BEGIN")
        conn.execute(sql.replace(f'"{table}"', '"_old_layout"', 1).replace("INTEGER NOT NULL", "NOT NULL", 1) + " WITHOUT ROWID")
        conn.execute(f'INSERT INTO "_old_layout" SELECT * FROM "{table}"')
        conn.execute(f'DROP TABLE "{table}"')
        conn.execute(f'ALTER TABLE "_old_layout" RENAME TO "{table}"')
        for index in indexes:
            conn.execute(index)
        conn.execute("COMMIT")
    finally:
        conn.close()


def test_a_data_directory_with_the_older_table_layout_keeps_working(tmp_path, monkeypatch):
    """Tables keyed by one INT64 column were WITHOUT ROWID tables before; opened now, they are
    rebuilt as rowid tables with their rows, indexes and interleaving intact."""
    from watcher.localspanner.server import LocalSpanner

    data_dir = str(tmp_path / "data")
    with LocalSpanner(data_dir=data_dir) as server:
        instance = _client(server, monkeypatch).instance(
            INSTANCE, configuration_name=f"projects/{PROJECT}/instanceConfigs/emulator-config", display_name="old", node_count=1)
        instance.create().result(30)
        db = instance.database("old-layout", ddl_statements=DDL)
        db.create().result(60)
        with db.batch() as b:
            b.insert("Singers", ("SingerId", "Name", "Score"), [(1, "Ann", Decimal("1")), (2, "Bo", Decimal("2"))])
            b.insert("Albums", ("SingerId", "AlbumId", "Title"), [(1, 10, "First"), (2, 20, "Second")])
        before = _snapshot_everything(db)
    _downgrade_to_without_rowid(data_dir, "Singers")
    with LocalSpanner(data_dir=data_dir) as server:
        db = _client(server, monkeypatch).instance(INSTANCE).database("old-layout")
        assert _snapshot_everything(db) == before
        with db.batch() as b:
            b.insert_or_update("Singers", ("SingerId", "Name", "Score"), [(3, "Cy", Decimal("3")), (1, "Ann", Decimal("9"))])
        with pytest.raises(Exception, match="SingerId must not be NULL"):
            with db.batch() as b:
                b.insert("Singers", ("SingerId", "Name"), [(None, "Nobody")])
        with db.batch() as b:
            b.delete("Singers", spanner.KeySet(keys=[[2]]))  # cascades to its album
        singers, albums, by_name = _snapshot_everything(db)
        assert [r[:2] for r in singers] == [[1, "Ann"], [3, "Cy"]]
        assert albums == [[1, 10, "First"]]
        assert by_name == [["Ann", Decimal("9")], ["Cy", Decimal("3")]]
    import glob
    import sqlite3

    (path,) = glob.glob(os.path.join(data_dir, "databases", "*", "*.sqlite"))
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        sql, = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'Singers'").fetchone()
    finally:
        conn.close()
    assert "WITHOUT ROWID" not in sql  # upgraded when the database opened
