"""Every watcher kind is a Watcher and works through that interface alone.

One test suite, parametrized over the four kinds (a table, a database, change sets, a history
table), against the real server through the official client.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from google.cloud.spanner_v1 import COMMIT_TIMESTAMP

from tests.watcher.core_support import T_DDL, Collector, wait_until
from watcher import (
    MIN_TIMESTAMP,
    ChangeSetWatcher,
    DatabaseWatcher,
    HistoryTable,
    HistoryWatcher,
    InMemoryCommitTimestampRepository,
    StagingSink,
    State,
    TableNotFoundError,
    TableWatcher,
    Watcher,
    WatcherGroup,
)
from watcher.capture.helper_tables.change_sets import (
    change_set_column_ddl,
    change_sets_table_ddl,
    run_in_change_set_transaction,
)

OPTIONS: dict[str, Any] = {"poll_interval": 0.01, "initial_timestamp": MIN_TIMESTAMP}
PLAIN = "CREATE TABLE {} (Id INT64 NOT NULL, Name STRING(MAX)) PRIMARY KEY (Id)"


@dataclass(frozen=True)
class Kind:
    """How to make a database for one watcher kind, the watcher, and a write it must see."""

    name: str
    table: str
    ddl: Callable[[], list[str]]
    build: Callable[[Any], Watcher]
    write: Callable[[Any, int, str], None]
    prepare: Callable[[Any], None] = lambda db: None


def _write_t(db: Any, key: int, name: str) -> None:
    with db.batch() as batch:
        batch.insert("T", ["Id", "Name", "Ts"], [[key, name, COMMIT_TIMESTAMP]])


def _write_orders(db: Any, key: int, name: str) -> None:
    run_in_change_set_transaction(db, lambda txn, cs: txn.insert("Orders", ["Id", "Name", "CHANGE_SET_ID"],
                                                                 [[key, name, cs]]))


def _write_docs(db: Any, key: int, name: str) -> None:
    history = HistoryTable.discover(db, "Docs")
    db.run_in_transaction(lambda txn: history.writer(txn).insert(["Id", "Name"], [[key, name]]))


def _store() -> InMemoryCommitTimestampRepository:
    return InMemoryCommitTimestampRepository()


KINDS = [
    Kind("table", "T", lambda: [T_DDL], lambda db: TableWatcher(db, "T", checkpoints=_store(), **OPTIONS), _write_t),
    Kind("database", "T", lambda: [T_DDL],
         lambda db: DatabaseWatcher(db, include=["T"], checkpoints=_store(), **OPTIONS), _write_t),
    Kind("change set", "Orders", lambda: [change_sets_table_ddl(), PLAIN.format("Orders"), *change_set_column_ddl("Orders")],
         lambda db: ChangeSetWatcher(db, ["Orders"], checkpoints=_store(), **OPTIONS), _write_orders),
    Kind("history", "Docs", lambda: [PLAIN.format("Docs")],
         lambda db: HistoryWatcher(db, "Docs", checkpoints=_store(), **OPTIONS), _write_docs,
         prepare=lambda db: HistoryTable.discover(db, "Docs").create(db)),
    Kind("group", "T", lambda: [T_DDL, PLAIN.format("Docs")],
         lambda db: WatcherGroup([TableWatcher(db, "T", checkpoints=_store(), **OPTIONS),
                                  HistoryWatcher(db, "Docs", checkpoints=_store(), **OPTIONS)]), _write_t,
         prepare=lambda db: HistoryTable.discover(db, "Docs").create(db)),
]


@pytest.fixture(params=KINDS, ids=[k.name for k in KINDS])
def kind(request: Any) -> Kind:
    return request.param


@pytest.fixture
def db(kind: Kind, make_database: Any) -> Any:
    database = make_database(kind.ddl())
    kind.prepare(database)
    return database


def test_every_kind_is_a_watcher_exported_from_the_package(kind: Kind, db: Any) -> None:
    w = kind.build(db)
    assert isinstance(w, Watcher)
    assert w.state == State.NEW and w.failure is None and w.table_infos() == []


def test_a_change_arrives_through_the_iterator_and_the_callbacks(kind: Kind, db: Any, tmp_path: Any) -> None:
    w = kind.build(db)
    kind.write(db, 1, "before anyone listened")
    with w:
        assert w.state == State.RUNNING
        time.sleep(0.2)  # many poll intervals: an iterator not yet asked for a change must miss nothing
        changes = w.changes(timeout=10)
        first = next(changes)
        changes.close()  # the change was handled: it is not delivered again
        assert (first.table, first.keys, first.row["Name"]) == (kind.table, (1,), "before anyone listened")

        got, batches, polls = Collector(), [], []
        w.add_callback(got)
        w.add_batch_callback(batches.append)
        w.add_poll_listener(polls.append)
        sink = StagingSink(tmp_path, fsync=False)
        sink.attach(w)
        kind.write(db, 2, "two")
        got.wait_for(1)
        wait_until(lambda: sink.records_written >= 1)

        assert got.keys() == [(2,)] and got.changes[0].row["Name"] == "two"
        assert [[c.keys for c in b] for b in batches] == [[(2,)]]
        assert polls and all(p.seconds >= 0 for p in polls) and any(p.rows == 1 for p in polls)
        info = w.table_info(kind.table.lower())  # names are found in any case
        assert info.key_columns == ("Id",) and info.column_types["Name"] == "STRING(MAX)"
        with pytest.raises(TableNotFoundError):
            w.table_info("NoSuchTable")
        staged = [json.loads(line) for f in tmp_path.rglob("*.jsonl") for line in f.read_text().splitlines()]
        assert [(r["table"], r["key_columns"], r["values"]["Name"]) for r in staged] == [(kind.table, ["Id"], "two")]

        figures = w.poll_stats()
        assert figures and figures[0]["polls"] >= 1 and figures[0]["state"] == "running"
        assert w.stats()
        text = w.prometheus()
        assert "# TYPE spanner_watcher_polls_total counter" in text and "spanner_watcher_running{" in text
    assert w.state == State.STOPPED and w.failure is None


def test_an_iterator_ends_when_the_watcher_stops(kind: Kind, db: Any) -> None:
    w = kind.build(db)
    ended = threading.Event()
    seen: list[Any] = []

    def consume() -> None:
        seen.extend(c.keys for c in w.changes())
        ended.set()

    w.start()
    try:
        consumer = threading.Thread(target=consume, daemon=True)
        consumer.start()
        kind.write(db, 5, "five")
        wait_until(lambda: seen == [(5,)])
    finally:
        w.stop()
    assert ended.wait(10)
    w.start()  # started again, it resumes where it stood
    try:
        kind.write(db, 6, "six")
        changes = w.changes(timeout=10)
        assert next(changes).keys == (6,)  # five was handled before the stop: not delivered again
        changes.close()
    finally:
        w.stop()


def test_one_iterator_over_a_database_watcher_gets_every_table_once(make_database: Any) -> None:
    db = make_database([PLAIN.replace("Name STRING(MAX)", "Name STRING(MAX), Ts TIMESTAMP OPTIONS "
                                                          "(allow_commit_timestamp=true)").format(t) for t in "AB"])
    for table in "AB":
        with db.batch() as batch:
            batch.insert(table, ["Id", "Name", "Ts"], [[i, table, COMMIT_TIMESTAMP] for i in range(20)])
    w = DatabaseWatcher(db, checkpoints=_store(), **OPTIONS)
    got: list[tuple[str, tuple[Any, ...]]] = []
    with w:
        for change in w.changes(timeout=5):
            got.append((change.table, change.keys))
            if len(got) == 40:
                break
    assert sorted(got) == sorted((t, (i,)) for t in "AB" for i in range(20))
