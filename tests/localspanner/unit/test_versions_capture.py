"""The commit-time capture API (versions.record_commit) a change-stream consumer builds on.

Through the official client a past read shows the versions; what one commit changed, as
RowChange records, has no client-visible form yet, so it is checked here on a storage.
"""

from __future__ import annotations

import pytest

from watcher.localspanner.database.schema_changes import load_catalog, write_schema_change
from watcher.localspanner.schema.schema_updater import apply_statement
from watcher.localspanner.storage import version_log, versions
from watcher.localspanner.storage.store import Storage

DDL = [
    "CREATE TABLE P (K INT64 NOT NULL, V STRING(MAX)) PRIMARY KEY (K)",
    "CREATE TABLE C (K INT64 NOT NULL, C INT64 NOT NULL) PRIMARY KEY (K, C), INTERLEAVE IN PARENT P ON DELETE CASCADE",
]


@pytest.fixture
def storage(tmp_path):
    s = Storage(str(tmp_path / "db.sqlite"))
    catalog = load_catalog(s)
    for statement in DDL:
        new, _ = apply_statement(catalog, statement)

        def commit() -> int:
            s.writer.execute("COMMIT")
            return 0

        write_schema_change(s, catalog, new, statement, commit)
        catalog = new
    s.catalog = catalog  # type: ignore[attr-defined]
    yield s
    s.close()


def _commit(storage, ts, *statements):
    conn = storage.writer
    conn.execute("BEGIN")
    for sql in statements:
        conn.execute(sql)
    changes = versions.record_commit(conn, storage.catalog, ts, collect=True)
    conn.execute("COMMIT")
    return sorted((c.table, c.key, c.mod_type, c.old, c.new, c.commit_nanos) for c in changes)


def test_each_commit_reports_its_row_changes_with_old_and_new_images(storage):
    assert _commit(storage, 10, "INSERT INTO P VALUES (1, 'a')", "INSERT INTO P VALUES (2, 'b')",
                   "INSERT INTO C VALUES (1, 7)") == [
        ("C", (1, 7), "INSERT", None, {"K": 1, "C": 7}, 10),
        ("P", (1,), "INSERT", None, {"K": 1, "V": "a"}, 10),
        ("P", (2,), "INSERT", None, {"K": 2, "V": "b"}, 10),
    ]
    # Two updates of one row in one commit: one change, from the row before the commit.
    assert _commit(storage, 20, "UPDATE P SET V = 'x' WHERE K = 1", "UPDATE P SET V = 'y' WHERE K = 1") == [
        ("P", (1,), "UPDATE", {"K": 1, "V": "a"}, {"K": 1, "V": "y"}, 20)]
    # A delete cascades to the interleaved child; a row inserted and deleted again changed nothing.
    assert _commit(storage, 30, "DELETE FROM P WHERE K = 1", "INSERT INTO P VALUES (3, 'c')", "DELETE FROM P WHERE K = 3") == [
        ("C", (1, 7), "DELETE", {"K": 1, "C": 7}, None, 30),
        ("P", (1,), "DELETE", {"K": 1, "V": "y"}, None, 30),
    ]


def test_a_rolled_back_transaction_leaves_no_versions_and_purge_drops_old_ones(storage):
    conn = storage.writer
    conn.execute("BEGIN")
    conn.execute("INSERT INTO P VALUES (5, 'gone')")
    conn.execute("ROLLBACK")
    assert _commit(storage, 40, "INSERT INTO P VALUES (6, 'kept')") == [("P", (6,), "INSERT", None, {"K": 6, "V": "kept"}, 40)]
    _commit(storage, 50, "UPDATE P SET V = 'new' WHERE K = 6")
    assert versions.latest_commit(conn, storage.catalog) == 50
    assert versions.purge(conn, storage.catalog, 45) == 1  # the version that ended at 40
    assert conn.execute('SELECT "K", "V", "_ls_to_ts" FROM "_ls_v_P"').fetchall() == [(6, "kept", 50)]


def _as_of(storage, ts):
    conn = storage.reader()
    try:
        conn.execute("BEGIN")
        versions.enter_past(conn, storage.catalog, ts)
        rows = sorted(conn.execute('SELECT "K", "V" FROM "P"').fetchall())
        versions.leave_past(conn)
        return rows
    finally:
        storage.release(conn)


def test_past_reads_are_the_same_before_and_after_the_recent_log_is_compacted(storage):
    # Images split between the by-key versions table and the recent log, then all in the versions table.
    _commit(storage, 10, "INSERT INTO P VALUES (1, 'a')", "INSERT INTO P VALUES (2, 'b')")
    _commit(storage, 20, "UPDATE P SET V = 'a2' WHERE K = 1")
    conn = storage.writer
    conn.execute("BEGIN")
    assert version_log.compact(conn, storage.catalog) == 3
    conn.execute("COMMIT")
    _commit(storage, 30, "UPDATE P SET V = 'a3' WHERE K = 1", "DELETE FROM P WHERE K = 2", "INSERT INTO P VALUES (3, 'c')")
    _commit(storage, 40, "UPDATE P SET V = 'c2' WHERE K = 3")
    expected = {5: [], 10: [(1, "a"), (2, "b")], 25: [(1, "a2"), (2, "b")], 30: [(1, "a3"), (3, "c")],
                40: [(1, "a3"), (3, "c2")]}
    assert {ts: _as_of(storage, ts) for ts in expected} == expected
    conn.execute("BEGIN")
    assert version_log.compact(conn, storage.catalog) == 4  # 3 images of commit 30, 1 of commit 40
    conn.execute("COMMIT")
    assert conn.execute('SELECT count(*) FROM "_ls_vl_P"').fetchone() == (0,)
    assert {ts: _as_of(storage, ts) for ts in expected} == expected


def test_past_reads_and_purge_across_many_generations_of_the_by_key_versions(storage, monkeypatch):
    # Two images per generation: every compaction after the first opens a new one.
    monkeypatch.setattr(version_log, "GENERATION_IMAGES", 2)
    conn = storage.writer
    expected: dict[int, list[tuple[int, str]]] = {5: []}
    state: dict[int, str] = {}
    for i in range(1, 9):
        ts = i * 10
        key, value = i % 3, f"v{i}"
        verb = f"UPDATE P SET V = '{value}' WHERE K = {key}" if key in state else f"INSERT INTO P VALUES ({key}, '{value}')"
        statements = [verb] + ([f"DELETE FROM P WHERE K = {(i + 1) % 3}"] if i == 5 else [])
        _commit(storage, ts, *statements)
        state[key] = value
        if i == 5:
            state.pop((i + 1) % 3, None)
        expected[ts] = sorted(state.items())
        conn.execute("BEGIN")
        version_log.compact(conn, storage.catalog)
        conn.execute("COMMIT")
    gens = conn.execute('SELECT gen, max_ts, images FROM "_ls_vg_P" ORDER BY gen').fetchall()
    assert len(gens) >= 3 and [g[0] for g in gens] == list(range(len(gens)))
    assert sum(g[2] for g in gens) == conn.execute('SELECT count(*) FROM "_ls_v_P"').fetchone()[0]
    assert {ts: _as_of(storage, ts) for ts in expected} == expected
    # A purge drops the images and the generations entirely before the cutoff; later reads still see their rows.
    conn.execute("BEGIN")
    versions.purge(conn, storage.catalog, 45)
    conn.execute("COMMIT")
    assert conn.execute('SELECT min(max_ts) FROM "_ls_vg_P"').fetchone()[0] > 45
    assert conn.execute('SELECT count(*) FROM "_ls_v_P" WHERE "_ls_to_ts" <= 45').fetchone() == (0,)
    assert {ts: _as_of(storage, ts) for ts in expected if ts >= 45} == {ts: v for ts, v in expected.items() if ts >= 45}


def test_a_versions_table_from_before_generations_is_upgraded_with_its_images(storage):
    _commit(storage, 10, "INSERT INTO P VALUES (1, 'a')", "INSERT INTO P VALUES (2, 'b')")
    _commit(storage, 20, "UPDATE P SET V = 'a2' WHERE K = 1", "DELETE FROM P WHERE K = 2")
    conn = storage.writer
    conn.execute("BEGIN")
    version_log.compact(conn, storage.catalog)
    # The layout a data directory written before generations has: no generation column or table.
    for sql in ('DROP INDEX "_ls_v_P_by_gen_key"', 'DROP TABLE "_ls_vg_P"', 'ALTER TABLE "_ls_v_P" DROP COLUMN "_ls_gen"',
                'CREATE INDEX "_ls_v_P_by_key" ON "_ls_v_P" ("K", "_ls_to_ts")'):
        conn.execute(sql)
    versions.sync_storage(conn, storage.catalog)
    conn.execute("COMMIT")
    assert conn.execute('SELECT gen, max_ts, images FROM "_ls_vg_P"').fetchall() == [(0, 20, 4)]
    _commit(storage, 30, "UPDATE P SET V = 'a3' WHERE K = 1")
    expected = {5: [], 10: [(1, "a"), (2, "b")], 20: [(1, "a2")], 30: [(1, "a3")]}
    assert {ts: _as_of(storage, ts) for ts in expected} == expected
