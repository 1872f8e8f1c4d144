"""Every change exact while the world changes (invariant 6, the chaos test).

Writer threads insert, update and delete rows of tables holding a column of every Spanner
type (one of them with a composite key whose parts may be NULL) while a script thread adds
and drops columns and creates and drops whole tables. A DatabaseWatcher (tables=ALL, a small
LIMIT, the WITH query forced on, a short discovery interval) stages into a StagingSink. Then
the changelog job, reconcile of every surviving table (hard deletes are invisible to
polling), the job again; the current state must equal every surviving table's final content
value for value, and every staged record must be typed with its column's real type.

Seeded, so the choices repeat; the interleaving does not (threads), so nothing here asserts
timing. Run with unique and with shared commit timestamps (the shared run needs the
embedded server). Talks to Spanner only through the official client.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import pathlib
import random
import threading
import time
from typing import Any

import pytest
from google.cloud import spanner
from google.cloud.spanner_v1.data_types import JsonObject

from tests.conftest import AND_AUTO
from tests.watcher.core_support import wait_until
from watcher import DatabaseWatcher, InMemoryCommitTimestampRepository, State
from watcher.capture.row_values import column_types, real_bytes
from watcher.capture.shards import FixedShardProvider
from watcher.changelog import Changelog
from watcher.changelog.snapshots.reconcile import Reconcile
from watcher.codec import encode_row, timestamp_text
from watcher.model import MIN_TIMESTAMP
from watcher.staging.sink import StagingSink

pytestmark = [pytest.mark.usefixtures("each_engine"), pytest.mark.driver_declines("a float Spark writes differently (the writers' -1.25e+300)")]

SEED = 20261124
SCRIPT_STEPS = 24  # schema changes per mode: several of each kind, the writers writing until the last is done
#: Seconds the script pauses before each change: writes of many commits land between two changes.
SCRIPT_PAUSE = (0.1, 0.4)
WAIT_SECONDS = 240  # at most, for the writing threads on a loaded machine
WRITERS = 3
SHARDS = [0, 1, 2]

#: Every column every table has besides its key, with its type as a result set names it.
VALUE_COLUMNS = {"ShardId": "INT64", "F": "FLOAT64", "B": "BOOL", "S": "STRING", "By": "BYTES", "N": "NUMERIC",
                 "J": "JSON", "D": "DATE", "T": "TIMESTAMP", "AI": "ARRAY<INT64>", "AS": "ARRAY<STRING>",
                 "Ts": "TIMESTAMP"}
VALUE_DDL = ("ShardId INT64, F FLOAT64, B BOOL, S STRING(MAX), `By` BYTES(MAX), N NUMERIC, J JSON, D DATE, "
             "T TIMESTAMP, AI ARRAY<INT64>, `AS` ARRAY<STRING(MAX)>, Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)")
#: Column types the script adds, DDL -> result-set name.
EXTRA_TYPES = {"INT64": "INT64", "STRING(MAX)": "STRING", "BYTES(MAX)": "BYTES", "JSON": "JSON",
               "ARRAY<INT64>": "ARRAY<INT64>", "NUMERIC": "NUMERIC", "DATE": "DATE"}


def _ddl(table: str, composite: bool = False) -> str:
    if composite:  # nullable key parts: NULL is a value of a key part in Spanner
        return f"CREATE TABLE {table} (A INT64, K STRING(MAX), {VALUE_DDL}) PRIMARY KEY (A, K)"
    return f"CREATE TABLE {table} (Id INT64 NOT NULL, {VALUE_DDL}) PRIMARY KEY (Id)"


def _value(rng: random.Random, spanner_type: str) -> Any:
    if rng.random() < 0.15:
        return None
    match spanner_type:
        case "INT64":
            return rng.choice([0, -1, 2**62 + rng.randint(0, 99), rng.randint(-1000, 1000)])
        case "FLOAT64":
            return rng.choice([0.5, -1.25e300, rng.uniform(-1e6, 1e6)])
        case "BOOL":
            return rng.random() < 0.5
        case "STRING":
            return rng.choice(["", "é\u2603", "x" * rng.randint(1, 30), "quote\"s"])
        case "BYTES":
            # the client takes BYTES as base64 text
            return base64.b64encode(bytes(rng.randrange(256) for _ in range(rng.randint(0, 12))))
        case "NUMERIC":
            return decimal.Decimal(rng.randint(-10**15, 10**15)) / decimal.Decimal(10**9)
        case "JSON":
            return JsonObject({"k": rng.randint(0, 9), "list": [1, "two", None], "f": 1.5})
        case "DATE":
            return dt.date(2000, 1, 1) + dt.timedelta(days=rng.randint(0, 20000))
        case "TIMESTAMP":
            return dt.datetime(2020, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=rng.randint(0, 10**14))
        case "ARRAY<INT64>":
            return [rng.choice([None, rng.randint(-5, 5)]) for _ in range(rng.randint(0, 4))]
        case "ARRAY<STRING>":
            return [rng.choice([None, "a", "bc"]) for _ in range(rng.randint(0, 4))]
    raise AssertionError(spanner_type)


class World:
    """The tables that exist (writers pick from them) and the facts the assertions need."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.live: dict[str, threading.Lock] = {}  # table -> held while writing it (a drop waits for it)
        self.composite: set[str] = set()
        self.types: dict[str, dict[str, str]] = {}  # table -> column -> type, every column it ever had
        self.last_commit: dict[str, str] = {}
        self.dropped: set[str] = set()
        self.commits: list[str] = []
        self.errors: list[BaseException] = []

    def add(self, table: str, composite: bool = False) -> None:
        keys = {"A": "INT64", "K": "STRING"} if composite else {"Id": "INT64"}
        with self.lock:
            self.live[table] = threading.Lock()
            self.types[table] = {**keys, **VALUE_COLUMNS}
            if composite:
                self.composite.add(table)

    def committed(self, table: str, at: dt.datetime) -> None:
        with self.lock:
            text = timestamp_text(at)
            self.commits.append(text)
            self.last_commit[table] = max(self.last_commit.get(table, ""), text)


def _key(world: World, table: str, rng: random.Random) -> list[Any]:
    if table in world.composite:
        return [rng.choice([None, 1, 2, 3]), rng.choice([None, "x", "y"])]
    return [rng.randint(0, 30)]


def _writer(db: Any, world: World, rng: random.Random, done: threading.Event) -> None:
    try:
        while not done.is_set():
            with world.lock:
                table = rng.choice(sorted(world.live))
                table_lock = world.live[table]
            with table_lock:
                if table not in world.live:
                    continue  # dropped meanwhile
                key_columns = ["A", "K"] if table in world.composite else ["Id"]
                columns = [*key_columns, *VALUE_COLUMNS]
                with db.batch() as batch:
                    for _ in range(rng.randint(1, 3)):
                        key = _key(world, table, rng)
                        if rng.random() < 0.2:
                            batch.delete(table, spanner.KeySet(keys=[key]))
                        else:
                            values = [rng.choice(SHARDS) if c == "ShardId" else spanner.COMMIT_TIMESTAMP if c == "Ts"
                                      else _value(rng, t) for c, t in VALUE_COLUMNS.items()]
                            batch.insert_or_update(table, columns, [[*key, *values]])
                world.committed(table, batch.committed)
            time.sleep(rng.choice([0, 0, 0.002, 0.02]))
    except BaseException as exc:  # reported by the test
        world.errors.append(exc)


def _script(db: Any, world: World, rng: random.Random, done: threading.Event) -> None:
    """Adds and drops columns, creates and drops tables, one DDL statement at a time, then sets ``done``."""
    extras: dict[str, list[str]] = {}
    created = 0
    try:
        for _ in range(SCRIPT_STEPS):
            time.sleep(rng.uniform(*SCRIPT_PAUSE))
            with world.lock:
                tables = sorted(world.live)
            roll = rng.random()
            table = rng.choice(tables)
            if roll < 0.35:
                ddl_type = rng.choice(sorted(EXTRA_TYPES))
                column = f"X{len(world.commits)}_{rng.randint(0, 10**6)}"  # never reused
                db.update_ddl([f"ALTER TABLE {table} ADD COLUMN {column} {ddl_type}"]).result(60)
                with world.lock:
                    world.types[table][column] = EXTRA_TYPES[ddl_type]
                extras.setdefault(table, []).append(column)
                with world.live[table]:  # give some rows a value in the new column
                    if table not in world.live:
                        continue
                    key_columns = ["A", "K"] if table in world.composite else ["Id"]
                    with db.batch() as batch:
                        batch.insert_or_update(table, [*key_columns, "ShardId", column, "Ts"],
                                               [[*_key(world, table, rng), rng.choice(SHARDS),
                                                 _value(rng, EXTRA_TYPES[ddl_type]), spanner.COMMIT_TIMESTAMP]])
                    world.committed(table, batch.committed)
            elif roll < 0.55 and extras.get(table):
                column = extras[table].pop(rng.randrange(len(extras[table])))
                db.update_ddl([f"ALTER TABLE {table} DROP COLUMN {column}"]).result(60)
            elif roll < 0.8 or len(tables) < 3:
                created += 1
                name = f"Made{created}"
                composite = rng.random() < 0.3
                db.update_ddl([_ddl(name, composite)]).result(60)
                world.add(name, composite)
            else:
                victim = rng.choice([t for t in tables if t.startswith("Made")] or [None])
                if victim is None:
                    continue
                with world.lock:
                    table_lock = world.live.pop(victim)
                with table_lock:  # no write of it in flight
                    db.update_ddl([f"DROP TABLE {victim}"]).result(60)
                with world.lock:
                    world.dropped.add(victim)
    except BaseException as exc:  # reported by the test
        world.errors.append(exc)
    finally:
        done.set()


def _final_state(db: Any, table: str) -> tuple[list[str], dict[tuple, dict[str, Any]]]:
    """The table's rows, typed by the result set and encoded as the staging contract does."""
    with db.snapshot() as snap:
        results = snap.execute_sql(f"SELECT * FROM {table}")
        rows = list(results)
        types = column_types(results.fields) if results.fields else {}
        fields = list(results.fields or [])
    key_columns = ["A", "K"] if "K" in types else ["Id"]
    out = {}
    for row in rows:
        encoded = json.loads(json.dumps(encode_row(types, dict(zip(types, real_bytes(fields, list(row)), strict=True)))))
        out[tuple(json.dumps(encoded[c]) for c in key_columns)] = encoded
    return key_columns, out


def _staged_records(staging: str) -> list[dict[str, Any]]:
    return [json.loads(line) for f in sorted(pathlib.Path(staging).rglob("*.jsonl"))
            for line in f.read_text().splitlines() if line]


@AND_AUTO
def test_every_change_exact_while_the_world_changes(spark, make_database, tmp_path, commit_timestamps):
    db = make_database([_ddl("Plain"), _ddl("Pairs", composite=True)])
    staging, warehouse = str(tmp_path / "staging"), str(tmp_path / "warehouse")
    world = World()
    world.add("Plain")
    world.add("Pairs", composite=True)

    sink = StagingSink(staging, fsync=False)
    watcher = DatabaseWatcher(db, checkpoints=InMemoryCommitTimestampRepository(), poll_interval=0.05, limit=5,
                              fallback_to_with_query_seconds=0, discover_interval=0.5,
                              initial_timestamp=MIN_TIMESTAMP, shard_provider=FixedShardProvider("ShardId", SHARDS))
    sink.attach(watcher)
    with_query_polls = []
    watcher.add_poll_listener(lambda record: with_query_polls.append(record.using_with_query))
    watcher.start()
    try:
        done = threading.Event()
        threads = [threading.Thread(target=_writer, args=(db, world, random.Random(SEED + i), done))
                   for i in range(WRITERS)]
        threads.append(threading.Thread(target=_script, args=(db, world, random.Random(SEED - 1), done)))
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=WAIT_SECONDS)
        done.set()  # the writers stop even if the script hung
        assert not any(t.is_alive() for t in threads)
        assert world.errors == []
        surviving = sorted(world.live)

        def lagging() -> dict[str, Any]:
            """What keeps the watcher from having caught up, by table (empty once it has)."""
            watchers = dict(watcher.watchers)
            behind: dict[str, Any] = {t: "not watched" for t in set(surviving) - set(watchers)}
            behind.update({t: "still watched after its drop" for t in set(watchers) - set(surviving)})
            for t in set(surviving) & set(watchers):
                mark = watchers[t].stats()["watermark"]
                if t in world.last_commit and (mark is None or timestamp_text(mark) < world.last_commit[t]):
                    behind[t] = (mark and timestamp_text(mark), world.last_commit[t], watchers[t].state,
                                 watchers[t].failure, watchers[t].stats())
            return behind

        try:
            wait_until(lambda: not lagging(), timeout=180, interval=0.1)
        except AssertionError:
            raise AssertionError(f"the watcher did not catch up: {lagging()}") from None
        assert watcher.failure is None and watcher.state == State.RUNNING
        # Only dropped tables' watchers ended (a table created and dropped between two looks was never watched).
        assert set(watcher.dropped) <= world.dropped
        assert {t: (w.failure, w.state) for t, w in watcher.watchers.items()} == {
            t: (None, State.RUNNING) for t in watcher.watchers}
        assert set(watcher.watchers) == set(surviving)
    finally:
        watcher.stop()
    assert any(with_query_polls)  # the WITH query was what polled
    if commit_timestamps == "shared":
        assert len(set(world.commits)) < len(world.commits)

    # Every staged record is typed by its column's real type: no STRING fallback.
    records = _staged_records(staging)
    assert records
    wrong = [(r["table"], c, t, world.types[r["table"]].get(c)) for r in records for c, t in r["types"].items()
             if world.types[r["table"]].get(c) != t]
    assert wrong == []

    assert Changelog(spark).staging(staging).warehouse(warehouse).run().quarantined == []
    reconciled = {t: Reconcile(spark, db).table(t).staging(staging).warehouse(warehouse).run() for t in surviving}
    assert Changelog(spark).staging(staging).warehouse(warehouse).run().quarantined == []

    state: dict[str, dict[tuple, dict[str, Any]]] = {}
    for r in spark.sql("SELECT table_name, keys, new_values FROM current_state").collect():
        keys = json.loads(r.keys)
        state.setdefault(r.table_name, {})[tuple(json.dumps(v) for v in keys.values())] = json.loads(r.new_values)
    for table in surviving:
        _, final = _final_state(db, table)
        recorded = state.get(table, {})
        assert set(recorded) == set(final), (table, reconciled[table], [
            (r.keys, r.mod_type, r.read_method, r.commit_timestamp) for r in spark.sql(
                "SELECT keys, mod_type, read_method, commit_timestamp FROM changelog WHERE table_name = "
                f"'{table}' AND keys LIKE '%null%' ORDER BY keys, commit_timestamp").collect()])
        for key, row in final.items():
            # A dropped column's old value stays in the changelog; a column added after the row's
            # last write was never polled with it (adding a column moves no commit timestamp): NULL.
            got = {c: recorded[key].get(c) for c in row}
            assert got == row, (table, key)
