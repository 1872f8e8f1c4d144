"""History-table mode: every version and every delete, with the right operation, in order, in GoogleSQL and
PostgreSQL databases alike (names double-quoted in the PostgreSQL DDL keep the GoogleSQL tables' case)."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import math

import pytest
from google.cloud.spanner_v1 import COMMIT_TIMESTAMP, KeySet, param_types
from google.cloud.spanner_v1.data_types import JsonObject

from tests.watcher.core_support import Collector, wait_until
from tests.watcher.core_support import run_with_history as run
from tests.watcher.dialect_support import DIALECT_NAMES, GOOGLE, database_maker
from watcher import MIN_TIMESTAMP, InMemoryCommitTimestampRepository
from watcher.capture.helper_tables.history import HistoryTable, HistoryWatcher, history_table_ddl
from watcher.dialects import POSTGRESQL
from watcher.errors import ConfigurationError, DdlError

DOCUMENTS_GOOGLE = """CREATE TABLE Documents (
    UserId INT64 NOT NULL,
    DocumentId STRING(36) NOT NULL,
    Contents STRING(MAX),
    Score NUMERIC,
    Blob BYTES(MAX),
    Day DATE,
    Tags ARRAY<STRING(MAX)>,
    Meta JSON,
    F FLOAT64,
    Big INT64,
    Updated TIMESTAMP OPTIONS (allow_commit_timestamp=true)
) PRIMARY KEY (UserId, DocumentId)"""
DOCUMENTS_POSTGRES = """CREATE TABLE "Documents" (
    "UserId" bigint NOT NULL,
    "DocumentId" varchar(36) NOT NULL,
    "Contents" varchar,
    "Score" numeric,
    "Blob" bytea,
    "Day" date,
    "Tags" varchar[],
    "Meta" jsonb,
    "F" double precision,
    "Big" bigint,
    "Updated" spanner.commit_timestamp,
    PRIMARY KEY ("UserId", "DocumentId")
)"""
DOCUMENTS = {GOOGLE: DOCUMENTS_GOOGLE, "PostgreSQL": DOCUMENTS_POSTGRES}
#: The statements the tests send themselves, in each dialect.
SQL = {
    GOOGLE: {
        "history": "SELECT DocumentId, Seq, Operation FROM DocumentsHistory ORDER BY Seq",
        "keys": "SELECT UserId, DocumentId FROM Documents WHERE Big > @min",
        "update": "UPDATE Documents SET Big = Big * 10, Updated = PENDING_COMMIT_TIMESTAMP() WHERE Big > @min",
        "delete": "DELETE FROM Documents WHERE DocumentId = 'x'",
        "insert": "INSERT INTO Documents (UserId, DocumentId, Contents) VALUES (4, 'z', 'new')",
        "min": "min",
    },
    "PostgreSQL": {
        "history": 'SELECT "DocumentId", "Seq", "Operation" FROM "DocumentsHistory" ORDER BY "Seq"',
        "keys": 'SELECT "UserId", "DocumentId" FROM "Documents" WHERE "Big" > $1',
        "update": ('UPDATE "Documents" SET "Big" = "Big" * 10, "Updated" = spanner.pending_commit_timestamp() '
                   'WHERE "Big" > $1'),
        "delete": """DELETE FROM "Documents" WHERE "DocumentId" = 'x'""",
        "insert": """INSERT INTO "Documents" ("UserId", "DocumentId", "Contents") VALUES (4, 'z', 'new')""",
        "min": "p1",
    },
}


@pytest.fixture(params=DIALECT_NAMES)
def dialect(request):
    return request.param


@pytest.fixture
def docs(make_database, dialect):
    db = database_maker(make_database, dialect)(extra=[DOCUMENTS[dialect]])
    history = HistoryTable.discover(db, "Documents")
    assert history.create(db) is True and history.create(db) is False
    return db, history


def watch(db, **kw):
    kw.setdefault("checkpoints", InMemoryCommitTimestampRepository())
    return HistoryWatcher(db, "Documents", poll_interval=0.01, initial_timestamp=MIN_TIMESTAMP, **kw)


def collect(db, n, **kw):
    got = Collector()
    with watch(db, **kw) as w:
        w.add_callback(got)
        got.wait_for(n)
        wait_until(lambda: w.stats()["last_poll_rows"] == 0)
    return got.changes


def test_ddl_puts_the_data_key_first_and_rejects_clashing_names():
    ddl = history_table_ddl("T", [("A", "INT64"), ("B", "STRING(10)", True)], history_table="TLog")
    assert ddl.startswith("CREATE TABLE `TLog` (") and "`B` STRING(10),\n" in ddl
    assert ddl.endswith("PRIMARY KEY (`A`, `B`, `CommitTimestamp`, `Seq`)")
    with pytest.raises(DdlError, match="Seq"):
        history_table_ddl("T", [("Seq", "INT64")])
    pg = history_table_ddl("T", [("A", "INT64"), ("B", "STRING(10)", True)], history_table="TLog", dialect=POSTGRESQL)
    assert pg.startswith('CREATE TABLE "TLog" (') and '"B" varchar(10),\n' in pg and '"NewValues" jsonb,\n' in pg
    assert pg.endswith('  PRIMARY KEY ("A", "B", "CommitTimestamp", "Seq")\n)')


def test_the_history_table_is_made_in_the_database_dialect(docs, dialect):
    db, history = docs
    assert history.dialect.name == dialect
    (ddl,) = [s for s in db.reload() or db.ddl_statements if "DocumentsHistory" in s]
    expected = {GOOGLE: ("allow_commit_timestamp", "NewValues JSON"),
                "PostgreSQL": ("spanner.commit_timestamp NOT NULL", "jsonb")}[dialect]
    assert all(text in ddl for text in expected), ddl


def test_every_operation_is_recorded_with_its_values_in_order(docs):
    db, history = docs
    cols = ["UserId", "DocumentId", "Contents", "Score", "Blob", "Day", "Tags", "Meta", "F", "Big", "Updated"]
    blob = base64.b64encode(b"\x00\xffbin")
    t1 = run(db, history, lambda h: h.insert(cols, [[1, "a", "v1", decimal.Decimal("12.50"), blob, dt.date(2024, 2, 29),
                                                     ["x", None], JsonObject({"k": [1, 2]}), math.nan, 2**62 + 1,
                                                     COMMIT_TIMESTAMP]]))
    t2 = run(db, history, lambda h: h.insert_or_update(["UserId", "DocumentId", "Contents"], [[1, "a", "v2"], [1, "b", "new"]]))
    t3 = run(db, history, lambda h: h.update(["UserId", "DocumentId", "F"], [[1, "b", -math.inf]]))
    t4 = run(db, history, lambda h: h.replace(["UserId", "DocumentId", "Contents"], [[1, "a", "replaced"], [2, "c", "fresh"]]))
    t5 = run(db, history, lambda h: h.delete([(1, "b"), (9, "missing")]))
    changes = collect(db, 7)
    assert [(c.mod_type, c.keys, c.commit_timestamp) for c in changes] == [
        ("INSERT", (1, "a"), t1),
        ("UPDATE", (1, "a"), t2), ("INSERT", (1, "b"), t2),
        ("UPDATE", (1, "b"), t3),
        ("UPDATE", (1, "a"), t4), ("INSERT", (2, "c"), t4),
        ("DELETE", (1, "b"), t5),
    ]
    first = changes[0]
    assert first.table == "Documents"
    assert first.row["Score"] == decimal.Decimal("12.50") and first.row["Blob"] == b"\x00\xffbin"
    assert first.row["Day"] == dt.date(2024, 2, 29) and first.row["Tags"] == ["x", None]
    assert first.row["Meta"] == {"k": [1, 2]} and math.isnan(first.row["F"]) and first.row["Big"] == 2**62 + 1
    assert first.row["Updated"] == t1  # the commit-timestamp placeholder, resolved
    assert changes[1].row == {"UserId": 1, "DocumentId": "a", "Contents": "v2"}
    assert changes[3].row["F"] == -math.inf
    assert changes[6].row == {"UserId": 1, "DocumentId": "b"}


def test_several_changes_of_one_key_in_one_transaction_stay_distinct_and_ordered(docs):
    db, history = docs
    cols = ["UserId", "DocumentId", "Contents"]

    def churn(h):
        h.insert_or_update(cols, [[5, "k", "one"]])
        h.insert_or_update(cols, [[5, "k", "two"]])
        h.delete([(5, "k")])
        h.delete([(5, "k")])  # already gone in this transaction: nothing to record
        h.insert(cols, [[5, "k", "three"]])
        assert history.writer(h.transaction) is h

    ts = run(db, history, churn)
    changes = collect(db, 4)
    assert [(c.mod_type, c.row.get("Contents")) for c in changes] == [
        ("INSERT", "one"), ("UPDATE", "two"), ("DELETE", None), ("INSERT", "three")]
    assert {c.commit_timestamp for c in changes} == {ts}
    with db.snapshot() as snap:
        assert list(snap.read("Documents", ["Contents"], KeySet(keys=[[5, "k"]]))) == [["three"]]


def test_aborted_attempts_leave_no_history_rows(docs, dialect, local_server):
    db, history = docs
    attempts = []

    def write(txn):
        attempts.append(txn)
        history.writer(txn).insert_or_update(["UserId", "DocumentId", "Contents"], [[1, "z", "v"], [1, "y", "w"]])

    local_server.faults.inject("Commit", "ABORTED", count=2)
    db.run_in_transaction(write)
    assert len(attempts) >= 3  # the client may also retry the inline begin of the first read
    with db.snapshot() as snap:
        rows = list(snap.execute_sql(SQL[dialect]["history"]))
    assert rows == [["z", 1, "INSERT"], ["y", 2, "INSERT"]]


def test_writer_checks_columns(docs):
    db, history = docs
    with pytest.raises(ConfigurationError, match="DocumentId"):
        run(db, history, lambda h: h.insert(["UserId", "Contents"], [[1, "x"]]))
    with pytest.raises(ConfigurationError, match="Nope"):
        run(db, history, lambda h: h.insert(["UserId", "DocumentId", "Nope"], [[1, "x", 1]]))


def test_watcher_resumes_from_its_checkpoint(docs):
    db, history = docs
    repo = InMemoryCommitTimestampRepository()
    run(db, history, lambda h: h.insert(["UserId", "DocumentId"], [[1, "a"]]))
    assert [c.mod_type for c in collect(db, 1, checkpoints=repo)] == ["INSERT"]
    run(db, history, lambda h: h.delete([(1, "a")]))
    assert [(c.mod_type, c.keys) for c in collect(db, 1, checkpoints=repo)] == [("DELETE", (1, "a"))]


def test_not_a_history_table(docs):
    db, _ = docs
    with pytest.raises(ConfigurationError, match="not a history table"):
        HistoryWatcher(db, "Other", history_table="Documents", checkpoints=InMemoryCommitTimestampRepository()).start()


def test_versions_carry_their_sequence_and_partial_updates_say_so(docs):
    db, history = docs

    def versions(h):
        h.insert(["UserId", "DocumentId", "Contents", "F"], [[3, "v", "one", 1.5]])
        h.update(["UserId", "DocumentId", "Contents"], [[3, "v", "two"]])
        h.replace(["UserId", "DocumentId", "Contents"], [[3, "v", "three"]])

    run(db, history, versions)
    changes = collect(db, 3)
    assert [(c.version_seq, c.mod_type, c.value_capture_type) for c in changes] == [
        (1, "INSERT", "NEW_ROW"), (2, "UPDATE", "NEW_VALUES"), (3, "UPDATE", "NEW_ROW")]
    assert changes[2].row["F"] is None and changes[2].row["Contents"] == "three"  # replace set the others to NULL


def test_dml_is_recorded_with_the_rows_it_left(docs, dialect):
    db, history = docs
    sql = SQL[dialect]
    bound = {sql["min"]: 1}
    types = {sql["min"]: param_types.INT64}
    run(db, history, lambda h: h.insert(["UserId", "DocumentId", "Contents", "Big"], [[4, "x", "a", 1], [4, "y", "b", 2]]))

    def dml(h):
        # The keys an UPDATE by condition will change, read first in the same transaction.
        found = [tuple(r) for r in h.transaction.execute_sql(sql["keys"], params=bound, param_types=types)]
        changed = h.execute_update(sql["update"], keys=found, params=bound, param_types=types,
                                   commit_timestamp_columns=["Updated"])
        assert changed == 1
        h.execute_update(sql["delete"], keys=[(4, "x")])
        h.execute_update(sql["insert"], keys=[(4, "z")])

    ts = run(db, history, dml)
    changes = collect(db, 5)[2:]  # one commit timestamp: delivered in key order
    assert [(c.mod_type, c.keys, c.value_capture_type) for c in changes] == [
        ("DELETE", (4, "x"), "NEW_ROW"), ("UPDATE", (4, "y"), "NEW_ROW"), ("INSERT", (4, "z"), "NEW_ROW")]
    assert changes[1].row["Big"] == 20 and changes[1].row["Contents"] == "b" and changes[1].row["Updated"] == ts
    assert changes[2].row["Contents"] == "new" and changes[2].row["Score"] is None


ADD_EXTRA = {GOOGLE: "ALTER TABLE Documents ADD COLUMN Extra INT64",
             "PostgreSQL": 'ALTER TABLE "Documents" ADD COLUMN "Extra" bigint'}
DROP_DOCUMENTS = {GOOGLE: "DROP TABLE Documents", "PostgreSQL": 'DROP TABLE "Documents"'}


def test_a_column_added_while_watching_is_typed_and_history_outlives_its_data_table(docs, dialect):
    db, history = docs
    got = Collector()
    with watch(db) as w:
        w.add_callback(got)
        run(db, history, lambda h: h.insert(["UserId", "DocumentId", "Big"], [[7, "a", 1]]))
        got.wait_for(1)
        db.update_ddl([ADD_EXTRA[dialect]]).result(60)
        grown = HistoryTable.discover(db, "Documents")  # the writer knows the columns it was made with
        assert grown.column_types["Extra"] == "INT64" and grown.dialect.name == dialect
        run(db, grown, lambda h: h.update(["UserId", "DocumentId", "Extra"], [[7, "a", 2**40]]))
        got.wait_for(2)
        assert w.failure is None
    added = got.changes[1]
    assert added.row == {"UserId": 7, "DocumentId": "a", "Extra": 2**40} and added.column_types["Extra"] == "INT64"
    assert added.value_capture_type == "NEW_VALUES"

    db.update_ddl([DROP_DOCUMENTS[dialect]]).result(60)
    changes = collect(db, 2)  # from the start again, the data table gone: values keep their JSON form
    assert [(c.mod_type, c.keys, c.value_capture_type) for c in changes] == [
        ("INSERT", (7, "a"), "NEW_ROW"), ("UPDATE", (7, "a"), "NEW_VALUES")]
    assert changes[1].row["Extra"] == 2**40 and set(changes[1].column_types) == {"UserId", "DocumentId"}


def test_a_postgresql_table_made_without_quotes_keeps_its_lower_case_names(make_database):
    db = database_maker(make_database, "PostgreSQL")(extra=["CREATE TABLE notes (id bigint NOT NULL, body varchar, "
                                                            "PRIMARY KEY (id))"])
    history = HistoryTable.discover(db, "notes")
    assert history.key_columns == ("id",) and history.create(db) is True
    run(db, history, lambda h: h.insert(["Id", "Body"], [[1, "x"]]))  # names as the writer's columns spell them
    got = Collector()
    with HistoryWatcher(db, "notes", poll_interval=0.01, initial_timestamp=MIN_TIMESTAMP,
                        checkpoints=InMemoryCommitTimestampRepository()) as w:
        w.add_callback(got)
        got.wait_for(1)
    assert [(c.mod_type, c.row) for c in got.changes] == [("INSERT", {"id": 1, "body": "x"})]
    with pytest.raises(ConfigurationError, match="notes has no column nope"):
        run(db, history, lambda h: h.insert(["id", "nope"], [[2, "y"]]))
