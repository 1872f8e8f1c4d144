"""The commit-time capture API (versions.record_commit) a change-stream consumer builds on.

Through the official client a past read shows the versions; what one commit changed, as
RowChange records, has no client-visible form yet, so it is checked here on a storage.
"""

from __future__ import annotations

import pytest

from watcher.localspanner import version_log, versions
from watcher.localspanner.schema_changes import load_catalog, write_schema_change
from watcher.localspanner.schema_updater import apply_statement
from watcher.localspanner.storage import Storage

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
