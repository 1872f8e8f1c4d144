"""Change streams into the changelog against a ground truth, with the watching process killed at random.

Writer threads commit random inserts, updates and deletes (deleting a singer cascades to its
interleaved albums) on three tables, mutations and DML mixed, and log each transaction: the
commit timestamp from the client's commit response and its mods. The embedded server splits
and merges the stream's partitions every 0.3 s. A real watching process
(tests/changelog/stream_staging_child.py: ChangeStreamWatcher + StagingSink, progress in
Spanner) is killed with SIGKILL at 20 random points and started again. The changelog job over
the staging folder must then hold every committed version exactly once, deletes at their commit
timestamps, old values equal to the previous version, one transaction group per writer
transaction with the same members, and a current state equal to each table's final content.

Seeded, so the choices repeat; the interleaving does not (threads and kills).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from google.cloud import spanner

from tests.conftest import INSTANCE, PROJECT
from tests.watcher.core_support import wait_until
from watcher.changelog import Changelog
from watcher.codec import encode_value, timestamp_text

pytestmark = [pytest.mark.usefixtures("each_engine"), pytest.mark.driver_declines("change-stream records")]

ROOT = Path(__file__).resolve().parents[2]
SEED = 1414
KILLS = 20
WRITERS = 2
PROGRESS_TABLE = "WATCHER_CHANGE_STREAM_PARTITIONS"

DDL = [
    "CREATE TABLE Singers (SingerId INT64 NOT NULL, Name STRING(MAX), Score INT64) PRIMARY KEY (SingerId)",
    "CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, Title STRING(MAX)) "
    "PRIMARY KEY (SingerId, AlbumId), INTERLEAVE IN PARENT Singers ON DELETE CASCADE",
    "CREATE TABLE Venues (VenueId INT64 NOT NULL, City STRING(MAX), Seats INT64) PRIMARY KEY (VenueId)",
    "CREATE CHANGE STREAM S FOR ALL",
]
#: Table -> (key columns, value columns), every column with its type.
TABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "Singers": (("SingerId",), ("Name", "Score")),
    "Albums": (("SingerId", "AlbumId"), ("Title",)),
    "Venues": (("VenueId",), ("City", "Seats")),
}
TYPES = {"SingerId": "INT64", "AlbumId": "INT64", "VenueId": "INT64", "Name": "STRING", "Score": "INT64",
         "Title": "STRING", "City": "STRING", "Seats": "INT64"}

Key = tuple[int, ...]
Row = dict[str, Any]


@dataclass
class Mod:
    """One mutation a writer asked for (a cascade's deletes are not mods: the replay derives them)."""

    table: str
    key: Key
    op: str  # insert / update / delete
    values: Row  # the value columns written (insert: all of them; update: some)


@dataclass
class Transaction:
    commit: Any
    mods: list[Mod]


@dataclass
class Version:
    table: str
    key: Key
    commit: str
    mod_type: str
    row: Row | None  # the whole row after the commit; None: deleted
    old: Row  # the previous values of the columns written (a DELETE: of every value column)


@dataclass
class Writer:
    """A writer thread's keys (disjoint from the other writers') and what it believes they hold."""

    number: int
    rng: random.Random
    rows: dict[str, dict[Key, Row]] = field(default_factory=lambda: {t: {} for t in TABLES})
    log: list[Transaction] = field(default_factory=list)
    counter: int = 0

    def fresh(self, column: str) -> Any:
        """A value never written before (an update always changes what it writes)."""
        self.counter += 1
        n = self.number * 1_000_000 + self.counter
        return n if TYPES[column] == "INT64" else f"{column[0]}{n}"

    def plan(self) -> list[Mod]:
        """One to three mods on distinct rows; albums only of singers that exist and that no other mod touches."""
        mods: list[Mod] = []
        touched: set[tuple[str, Key]] = set()
        singers_touched: set[int] = set()
        base = self.number * 100
        for _ in range(self.rng.randint(1, 3)):
            table = self.rng.choice(list(TABLES))
            if table == "Albums":
                parents = [k[0] for k in self.rows["Singers"] if k[0] not in singers_touched]
                if not parents:
                    continue
                key: Key = (self.rng.choice(parents), self.rng.randrange(3))
            else:
                key = (base + self.rng.randrange(6),)
            if (table, key) in touched or (table == "Singers" and any(t == "Albums" and k[0] == key[0]
                                                                     for t, k in touched)):
                continue
            mods.append(self._mod(table, key))
            touched.add((table, key))
            if table == "Singers":
                singers_touched.add(key[0])
        return mods

    def _mod(self, table: str, key: Key) -> Mod:
        columns = TABLES[table][1]
        if key not in self.rows[table]:
            return Mod(table, key, "insert", {c: None if self.rng.random() < 0.2 else self.fresh(c) for c in columns})
        if self.rng.random() < 0.3:
            return Mod(table, key, "delete", {})
        written = self.rng.sample(columns, self.rng.randint(1, len(columns)))
        return Mod(table, key, "update", {c: self.fresh(c) for c in written})

    def apply(self, mods: list[Mod]) -> None:
        for m in mods:
            if m.op == "delete":
                del self.rows[m.table][m.key]
                if m.table == "Singers":
                    for k in [k for k in self.rows["Albums"] if k[0] == m.key[0]]:
                        del self.rows["Albums"][k]
            else:
                self.rows[m.table][m.key] = {**self.rows[m.table].get(m.key, {}), **m.values}


def commit_batch(db, mods: list[Mod]) -> Any:
    with db.batch() as b:
        for m in mods:
            keys = TABLES[m.table][0]
            if m.op == "delete":
                b.delete(m.table, spanner.KeySet(keys=[list(m.key)]))
            else:
                getattr(b, m.op)(m.table, (*keys, *m.values), [(*m.key, *m.values.values())])
    return b.committed


def _literal(value: Any) -> str:
    return "NULL" if value is None else str(value) if isinstance(value, int) else f"'{value}'"


def _where(table: str, key: Key) -> str:
    return " AND ".join(f"{c} = {v}" for c, v in zip(TABLES[table][0], key, strict=True))


def dml(m: Mod) -> str:
    if m.op == "insert":
        columns = [*TABLES[m.table][0], *m.values]
        values = [*m.key, *m.values.values()]
        return f"INSERT INTO {m.table} ({', '.join(columns)}) VALUES ({', '.join(map(_literal, values))})"
    if m.op == "update":
        sets = ", ".join(f"{c} = {_literal(v)}" for c, v in m.values.items())
        return f"UPDATE {m.table} SET {sets} WHERE {_where(m.table, m.key)}"
    return f"DELETE FROM {m.table} WHERE {_where(m.table, m.key)}"


def commit_dml(db, mods: list[Mod]) -> Any:
    used: list[Any] = []

    def work(t) -> None:
        used.append(t)
        for m in mods:
            assert t.execute_update(dml(m)) == 1
    db.run_in_transaction(work)
    return used[-1].committed  # the attempt that committed


def write(db, writer: Writer, stop: threading.Event) -> None:
    while not stop.is_set():
        mods = writer.plan()
        if not mods:
            continue
        commit = (commit_dml if writer.rng.random() < 0.3 else commit_batch)(db, mods)
        assert commit is not None
        writer.apply(mods)
        writer.log.append(Transaction(commit, mods))
        stop.wait(writer.rng.uniform(0.05, 0.2))


def replay(transactions: list[Transaction]) -> tuple[list[Version], list[list[tuple[str, Key]]], dict]:
    """The versions, the members of each transaction and the final rows, replaying the log in commit order."""
    rows: dict[str, dict[Key, Row]] = {t: {} for t in TABLES}
    versions: list[Version] = []
    members: list[list[tuple[str, Key]]] = []
    for tx in sorted(transactions, key=lambda t: t.commit):
        commit = timestamp_text(tx.commit)
        mine: list[tuple[str, Key]] = []

        def delete(table: str, key: Key, commit: str = commit, mine: list = mine) -> None:
            before = rows[table].pop(key)
            versions.append(Version(table, key, commit, "DELETE", None, dict(before)))
            mine.append((table, key))

        for m in tx.mods:
            if m.op == "delete":
                if m.table == "Singers":  # the cascade: the singer's albums go in the same transaction
                    for k in sorted(k for k in rows["Albums"] if k[0] == m.key[0]):
                        delete("Albums", k)
                delete(m.table, m.key)
                continue
            before = rows[m.table].get(m.key)
            after = {**(before or {}), **m.values}
            old = {} if before is None else {c: before[c] for c in m.values}
            versions.append(Version(m.table, m.key, commit, "INSERT" if before is None else "UPDATE", after, old))
            rows[m.table][m.key] = after
            mine.append((m.table, m.key))
        members.append(mine)
    return versions, members, rows


def typed(table: str, key: Key, row: Row | None = None) -> dict[str, Any]:
    """A key and row as the changelog's typed JSON holds them."""
    keys = dict(zip(TABLES[table][0], key, strict=True))
    return {c: encode_value(TYPES[c], v) for c, v in {**keys, **(row or {})}.items()}


def staged_versions(staging: Path) -> set[tuple[str, str, str]]:
    """(table, keys, commit timestamp) of every complete staged record."""
    out = set()
    for path in staging.glob("table=*/*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            out.add((r["table"], json.dumps(r["keys"]), r["commit_timestamp"]))
    return out


def changelog_key(r: Any) -> tuple[str, Key]:
    return r.table_name, tuple(int(v) for v in json.loads(r.keys).values())


def table_contents(db) -> dict[tuple[str, Key], dict[str, Any]]:
    out = {}
    with db.snapshot(multi_use=True) as snap:
        for table, (keys, values) in TABLES.items():
            for r in snap.execute_sql(f"SELECT {', '.join((*keys, *values))} FROM {table}"):
                key = tuple(r[:len(keys)])
                out[(table, key)] = typed(table, key, dict(zip(values, r[len(keys):], strict=True)))
    return out


def test_killed_stream_watcher_stages_a_changelog_equal_to_the_ground_truth(spark, make_database, tmp_path, churn):
    db = make_database(DDL)
    staging, warehouse = tmp_path / "staging", tmp_path / "warehouse"
    rng = random.Random(SEED)
    with db.snapshot() as snap:
        start = list(snap.execute_sql("SELECT CURRENT_TIMESTAMP()"))[0][0]

    def spawn() -> subprocess.Popen:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        return subprocess.Popen([sys.executable, "-m", "tests.changelog.stream_staging_child", PROJECT, INSTANCE,
                                 db.database_id, "S", str(staging), start.isoformat(), "chaos"],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def batches() -> int:
        return len(list(staging.glob("table=*/*.jsonl")))

    writers = [Writer(n + 1, random.Random(SEED + n)) for n in range(WRITERS)]
    stop = threading.Event()
    threads = [threading.Thread(target=write, args=(db, w, stop)) for w in writers]
    for t in threads:
        t.start()
    try:
        for kill in range(KILLS):
            before = batches()
            proc = spawn()
            try:
                if kill % 2:  # at a random time after it started (during its start-up, or a batch)
                    time.sleep(rng.uniform(0.3, 2.0))
                else:  # once it staged something, a moment later
                    wait_until(lambda b=before, p=proc: batches() > b or p.poll() is not None, 120, 0.01)  # a child starts slowly on a loaded machine
                    time.sleep(rng.uniform(0.0, 0.3))
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    transactions = [tx for w in writers for tx in w.log]
    versions, members, final_rows = replay(transactions)
    want = {(v.table, json.dumps(list(typed(v.table, v.key).values())), v.commit) for v in versions}
    final = spawn()
    try:
        wait_until(lambda: staged_versions(staging) >= want or final.poll() is not None, 120, 0.2)
        assert final.poll() is None, final.stderr.read().decode() if final.stderr else ""
    finally:
        final.send_signal(signal.SIGKILL)
        final.wait(10)
        # The server notices a killed reader at its next heartbeat (1 s); let it before the database is dropped.
        time.sleep(2.5)
    assert staged_versions(staging) >= want, "versions never staged after the restarts"

    result = Changelog(spark).staging(str(staging)).warehouse(str(warehouse)).run()
    assert result.quarantined == []
    rows = spark.sql("SELECT * FROM changelog").collect()
    assert PROGRESS_TABLE not in {r.table_name for r in rows}  # the watcher's own writes are not changes

    # Every committed version exactly once, at its commit timestamp, with its mod type, whole row and old values.
    got = Counter((*changelog_key(r), r.commit_timestamp) for r in rows)
    assert [v for v, n in got.items() if n > 1] == []
    by_version = {(*changelog_key(r), r.commit_timestamp): r for r in rows}
    assert sorted(by_version, key=repr) == sorted(((v.table, v.key, v.commit) for v in versions), key=repr)
    for v in versions:
        r = by_version[(v.table, v.key, v.commit)]
        assert r.mod_type == v.mod_type, v
        assert json.loads(r.new_values) == typed(v.table, v.key, v.row), v
        assert json.loads(r.old_values) == {c: encode_value(TYPES[c], x) for c, x in v.old.items()}, v
        assert r.read_method == "change_stream" and r.value_capture_type == "OLD_AND_NEW_VALUES"

    # Transaction groups are the writers' transactions, members and counts.
    groups: dict[str, list[Any]] = {}
    for r in rows:
        groups.setdefault(r.server_transaction_id, []).append(r)
    assert sorted(sorted(map(changelog_key, g)) for g in groups.values()) == sorted(map(sorted, members))
    for g in groups.values():
        assert len({r.transaction_group for r in g}) == 1 and len({r.commit_timestamp for r in g}) == 1
        assert {r.number_of_records_in_group for r in g} == {len(g)}

    # The current state is each table's final content, which is what the writers believe they left.
    state = {changelog_key(r): json.loads(r.new_values)
             for r in spark.sql("SELECT table_name, keys, new_values FROM current_state").collect()}
    assert state == table_contents(db)
    assert state == {(t, k): typed(t, k, row) for t, rows_ in final_rows.items() for k, row in rows_.items()}
    deletes = sum(v.mod_type == "DELETE" for v in versions)
    cascaded = sum(1 for tx in transactions for m in tx.mods if m.op == "delete") < deletes
    print(f"\nchange stream ground truth: {len(transactions)} transactions, {len(versions)} versions "
          f"({deletes} deletes, cascades: {cascaded}), {KILLS} kills, {result.duplicates_dropped} duplicates dropped")
