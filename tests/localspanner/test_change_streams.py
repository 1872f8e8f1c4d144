"""Change streams read through the official client: capture at commit, the read function, partitions.

A small reader (tests/change_stream_reader.py) follows Spanner's partition workflow: a query without a
token names the first partitions; each partition is read from its start; a child partition is
read only after every one of its parents finished.
"""

from __future__ import annotations

import base64
import datetime as dt
import os
import threading
import time
from collections import defaultdict

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_v1 import param_types

from tests.change_stream_reader import QUERY, TYPES, read_stream
from tests.change_stream_reader import query as _query

# Read at import (collection), before the shared fixtures point the variable at their own server.
_EXTERNAL = os.environ.get("SPANNER_EMULATOR_HOST")
TABLES = [
    "CREATE TABLE Singers (SingerId INT64 NOT NULL, FirstName STRING(MAX), LastName STRING(MAX), "
    "Score FLOAT64, Photo BYTES(MAX), Tags ARRAY<STRING(MAX)>) PRIMARY KEY (SingerId)",
    "CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, Title STRING(MAX)) "
    "PRIMARY KEY (SingerId, AlbumId), INTERLEAVE IN PARENT Singers ON DELETE CASCADE",
]
def _mods(records: list[dict], table: str = "Singers") -> list[tuple]:
    return [(r["mod_type"], m["keys"], m["new_values"], m["old_values"]) for r in records if r["table_name"] == table
            for m in r["mods"]]


def _now(db) -> dt.datetime:
    with db.snapshot() as snap:
        return list(snap.execute_sql("SELECT CURRENT_TIMESTAMP()"))[0][0]


def _writes(db) -> None:
    db.run_in_transaction(lambda t: t.insert("Singers", ("SingerId", "FirstName", "LastName", "Score", "Photo", "Tags"),
                                             [(1, "Ann", "Lee", 1.5, base64.b64encode(b"\x00\x01"), ["a", "b"]), (2, "Bo", "Ng", None, None, None)]))
    db.run_in_transaction(lambda t: t.update("Singers", ("SingerId", "FirstName"), [(1, "Anna")]), transaction_tag="app-update")
    db.run_in_transaction(lambda t: t.execute_update("DELETE FROM Singers WHERE SingerId = 2"))


def test_old_and_new_values_of_every_change_once_in_commit_order(make_database):
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    start = _now(db)
    _writes(db)
    records = read_stream(db, "S", start, _now(db))
    assert _mods(records) == [
        ("INSERT", {"SingerId": "1"}, {"FirstName": "Ann", "LastName": "Lee", "Score": 1.5, "Photo": "AAE=", "Tags": ["a", "b"]}, {}),
        ("INSERT", {"SingerId": "2"}, {"FirstName": "Bo", "LastName": "Ng", "Score": None, "Photo": None, "Tags": None}, {}),
        ("UPDATE", {"SingerId": "1"}, {"FirstName": "Anna"}, {"FirstName": "Ann"}),
        ("DELETE", {"SingerId": "2"}, {}, {"FirstName": "Bo", "LastName": "Ng", "Score": None, "Photo": None, "Tags": None}),
    ]
    assert [r["record_sequence"] for r in records[:1]] == ["00000000"]
    assert [r["transaction_tag"] for r in records if r["mod_type"] == "UPDATE"] == ["app-update"]
    assert {r["transaction_tag"] for r in records if r["mod_type"] != "UPDATE"} == {""}
    assert all(r["value_capture_type"] == "OLD_AND_NEW_VALUES" and r["is_system_transaction"] is False for r in records)
    assert records[0]["column_types"][0] == ("SingerId", {"code": "INT64"}, True, 1)
    assert ("Tags", {"code": "ARRAY", "array_element_type": {"code": "STRING"}}, False, 6) in records[0]["column_types"]


@pytest.mark.parametrize("capture, update_new, update_old, delete_old", [
    ("OLD_AND_NEW_VALUES", {"FirstName": "Anna"}, {"FirstName": "Ann"},
     {"FirstName": "Bo", "LastName": "Ng", "Score": None, "Photo": None, "Tags": None}),
    ("NEW_VALUES", {"FirstName": "Anna"}, {}, {}),
    ("NEW_ROW", {"FirstName": "Anna", "LastName": "Lee", "Score": 1.5, "Photo": "AAE=", "Tags": ["a", "b"]}, {}, {}),
    ("NEW_ROW_AND_OLD_VALUES", {"FirstName": "Anna", "LastName": "Lee", "Score": 1.5, "Photo": "AAE=", "Tags": ["a", "b"]},
     {"FirstName": "Ann"}, {"FirstName": "Bo", "LastName": "Ng", "Score": None, "Photo": None, "Tags": None}),
])
def test_each_value_capture_type(make_database, capture, update_new, update_old, delete_old):
    db = make_database(TABLES + [f"CREATE CHANGE STREAM S FOR Singers OPTIONS (value_capture_type = '{capture}')"])
    start = _now(db)
    _writes(db)
    records = read_stream(db, "S", start, _now(db))
    mods = _mods(records)
    assert [m[0] for m in mods] == ["INSERT", "INSERT", "UPDATE", "DELETE"]
    assert mods[0][3] == {} and mods[3][2] == {}
    assert mods[2][2:] == (update_new, update_old)
    assert mods[3][3] == delete_old
    assert {r["value_capture_type"] for r in records} == {capture}


def test_cascaded_deletes_of_interleaved_children_appear(make_database):
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    with db.batch() as b:
        b.insert("Singers", ("SingerId", "FirstName"), [(1, "Ann")])
        b.insert("Albums", ("SingerId", "AlbumId", "Title"), [(1, 10, "First"), (1, 11, "Second")])
    start = _now(db)
    with db.batch() as b:
        b.delete("Singers", spanner.KeySet(keys=[[1]]))
    records = read_stream(db, "S", start, _now(db))
    assert sorted(m[1]["AlbumId"] for m in _mods(records, "Albums") if m[0] == "DELETE") == ["10", "11"]
    assert [m[0] for m in _mods(records)] == ["DELETE"]
    assert len({r["server_transaction_id"] for r in records}) == 1
    assert {r["number_of_records_in_transaction"] for r in records} == {len(records)}
    assert sorted(r["record_sequence"] for r in records) == [f"{i:08d}" for i in range(len(records))]


def test_column_lists_and_exclude_options_filter(make_database):
    db = make_database(TABLES + [
        "CREATE CHANGE STREAM Names FOR Singers(FirstName)",
        "CREATE CHANGE STREAM Keys FOR Singers()",
        "CREATE CHANGE STREAM NoDeletes FOR Singers OPTIONS (exclude_delete = true, exclude_insert = true)",
    ])
    start = _now(db)
    _writes(db)
    db.run_in_transaction(lambda t: t.update("Singers", ("SingerId", "LastName"), [(1, "Lo")]))  # untracked by Names
    end = _now(db)
    names = _mods(read_stream(db, "Names", start, end))
    assert names == [("INSERT", {"SingerId": "1"}, {"FirstName": "Ann"}, {}),
                     ("INSERT", {"SingerId": "2"}, {"FirstName": "Bo"}, {}),
                     ("UPDATE", {"SingerId": "1"}, {"FirstName": "Anna"}, {"FirstName": "Ann"}),
                     ("DELETE", {"SingerId": "2"}, {}, {"FirstName": "Bo"})]
    keys = read_stream(db, "Keys", start, end)
    assert [(m[0], m[1], m[2], m[3]) for m in _mods(keys)] == [
        ("INSERT", {"SingerId": "1"}, {}, {}), ("INSERT", {"SingerId": "2"}, {}, {}), ("DELETE", {"SingerId": "2"}, {}, {})]
    assert {c[0] for r in keys for c in r["column_types"]} == {"SingerId"}
    assert [m[0] for m in _mods(read_stream(db, "NoDeletes", start, end))] == ["UPDATE", "UPDATE"]


def test_splits_and_merges_keep_every_change_once_in_key_order(make_database, churn):
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    start = _now(db)
    expected: dict[str, list[str]] = defaultdict(list)
    deadline = time.monotonic() + 1.5  # five churn periods: splits and merges
    n = 0
    while time.monotonic() < deadline:
        key = n % 7
        db.run_in_transaction(lambda t, k=key, v=n: t.insert_or_update("Singers", ("SingerId", "FirstName"), [(k, f"v{v}")]))
        expected[str(key)].append(f"v{n}")
        n += 1
    end = _now(db)
    records = read_stream(db, "S", start, end)
    seen: dict[str, list[str]] = defaultdict(list)
    for r in records:
        for m in r["mods"]:
            seen[m["keys"]["SingerId"]].append(m["new_values"]["FirstName"])
    assert seen == expected
    assert sorted({r["server_transaction_id"] for r in records}) == sorted(r["server_transaction_id"] for r in records)
    # Churn really happened: the stream split in two halves (one parent each), which merged into one child of two parents.
    level = [(token, parents, start) for token, parents in _query(db, "S", start, end, None)[0][2][0][2]]
    shapes = []
    for _ in range(3):
        level = [(child, parents, cp[0]) for token, _, at in level for rec in _query(db, "S", at, end, token)
                 for cp in rec[2] for child, parents in cp[2]]
        level = list({token: (token, parents, at) for token, parents, at in level}.values())
        shapes.append(sorted(len(parents) for _, parents, _ in level))
    assert [1, 1] in shapes and [2] in shapes


def test_an_open_query_delivers_a_commit_quickly_and_heartbeats(make_database):
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    start = _now(db)
    token = _query(db, "S", start, None, None)[0][2][0][2][0][0]
    arrived: list[tuple[float, list]] = []
    committed: list[float] = []

    def reader() -> None:
        with db.snapshot() as snap:
            rows = snap.execute_sql(QUERY.format(stream="S"), params={"start": start, "end": None, "token": token,
                                                                       "heartbeat": 1000}, param_types=TYPES)
            for row in rows:
                arrived.append((time.monotonic(), row[0][0]))
                if row[0][0][0]:
                    return

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    time.sleep(1.3)  # long enough for one heartbeat
    committed.append(time.monotonic())
    db.run_in_transaction(lambda t: t.insert("Singers", ("SingerId", "FirstName"), [(5, "Eve")]))
    thread.join(10)
    assert not thread.is_alive()
    heartbeats = [rec for _, rec in arrived if rec[1]]
    assert heartbeats, "no heartbeat while idle"
    at, data = next((at, rec) for at, rec in arrived if rec[0])
    assert data[0][0][6][0][0] is not None
    assert at - committed[0] < 1.0  # commit -> record (the commit call itself included)


def test_records_survive_a_restart(tmp_path, monkeypatch):
    from watcher.localspanner.server import LocalSpanner

    if _EXTERNAL:
        pytest.skip("starts its own local server; SPANNER_EMULATOR_HOST is set")
    data_dir = str(tmp_path / "data")
    with LocalSpanner(data_dir=data_dir) as server:
        db = _database(server, monkeypatch, create=True)
        start = _now(db)
        _writes(db)
        before = read_stream(db, "S", start, _now(db))
    with LocalSpanner(data_dir=data_dir) as server:
        db = _database(server, monkeypatch, create=False)
        db.run_in_transaction(lambda t: t.update("Singers", ("SingerId", "LastName"), [(1, "Lo")]))
        after = read_stream(db, "S", start, _now(db))
    assert after[:len(before)] == before and len(after) == len(before) + 1
    assert _mods(after)[-1][2:] == ({"LastName": "Lo"}, {"LastName": "Lee"})


def _database(server, monkeypatch, *, create: bool):
    monkeypatch.setenv("SPANNER_EMULATOR_HOST", server.emulator_host)
    client = spanner.Client(project="cs-project")
    instance = client.instance("cs-instance", configuration_name="projects/cs-project/instanceConfigs/emulator-config",
                               node_count=1)
    db = instance.database("cs-db", ddl_statements=TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    if create:
        instance.create().result(30)
        db.create().result(60)
    return db


def _bad(db, sql: str, params: dict | None = None, types: dict | None = None, *, snapshot_kwargs: dict | None = None):
    with pytest.raises(exceptions.GoogleAPICallError) as info:
        with db.snapshot(**(snapshot_kwargs or {})) as snap:
            list(snap.execute_sql(sql, params=params, param_types=types))
    return info.value


def test_bad_arguments_name_what_is_wrong(make_database):
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    now = _now(db)
    q = "SELECT ChangeRecord FROM READ_S(@start, NULL, NULL, {hb})"
    e = _bad(db, q.format(hb=10), {"start": now}, {"start": param_types.TIMESTAMP})
    assert isinstance(e, exceptions.InvalidArgument) and "heartbeat_milliseconds" in e.message
    e = _bad(db, q.format(hb=300_001), {"start": now}, {"start": param_types.TIMESTAMP})
    assert isinstance(e, exceptions.InvalidArgument) and "heartbeat_milliseconds" in e.message
    e = _bad(db, q.format(hb=1000), {"start": now - dt.timedelta(days=2)}, {"start": param_types.TIMESTAMP})
    assert isinstance(e, exceptions.OutOfRange) and "start_timestamp" in e.message
    e = _bad(db, q.format(hb=1000), {"start": now - dt.timedelta(hours=1)}, {"start": param_types.TIMESTAMP})
    assert isinstance(e, exceptions.OutOfRange) and "did not exist" in e.message
    e = _bad(db, "SELECT ChangeRecord FROM READ_S(@start, NULL, 'nonsense', 1000)", {"start": now},
             {"start": param_types.TIMESTAMP})
    assert isinstance(e, exceptions.InvalidArgument) and "partition_token" in e.message
    token = _query(db, "S", now, now, None)[0][2][0][2][0][0]
    e = _bad(db, "SELECT ChangeRecord FROM READ_S(start_timestamp => @start, partition_token => @t, "
             "heartbeat_milliseconds => 1000, read_options => ['x'])",
             {"start": now, "t": token}, {"start": param_types.TIMESTAMP, "t": param_types.STRING})
    assert isinstance(e, exceptions.InvalidArgument) and "read_options" in e.message
    e = _bad(db, "SELECT ChangeRecord FROM READ_S(end_timestamp => @start, heartbeat_milliseconds => 1000)",
             {"start": now}, {"start": param_types.TIMESTAMP})
    assert isinstance(e, exceptions.InvalidArgument) and "start_timestamp" in e.message
    e = _bad(db, "SELECT ChangeRecord FROM READ_Nope(@start, NULL, NULL, 1000)", {"start": now},
             {"start": param_types.TIMESTAMP})
    assert isinstance(e, exceptions.InvalidArgument) and "READ_Nope" in e.message
    e = _bad(db, q.format(hb=1000), {"start": now}, {"start": param_types.TIMESTAMP}, snapshot_kwargs={"multi_use": True})
    assert isinstance(e, exceptions.InvalidArgument) and "single-use" in e.message


def test_a_start_outside_the_retention_period_is_out_of_range(tmp_path, monkeypatch):
    """With the server's wall clock driven by the test: two days after the stream was created, a
    read from its creation time is outside the one-day retention; one from an hour ago is not."""
    from watcher.localspanner.server import LocalSpanner

    if _EXTERNAL:
        pytest.skip("starts its own local server; SPANNER_EMULATOR_HOST is set")
    offset = [0]
    with LocalSpanner(now_nanos=lambda: time.time_ns() + offset[0]) as server:
        db = _database(server, monkeypatch, create=True)
        created = _now(db)
        _writes(db)
        offset[0] = 2 * 86_400 * 10**9
        now = _now(db)
        e = _bad(db, "SELECT ChangeRecord FROM READ_S(@start, NULL, NULL, 1000)", {"start": created},
                 {"start": param_types.TIMESTAMP})
        assert isinstance(e, exceptions.OutOfRange) and "retention period" in e.message
        db.run_in_transaction(lambda t: t.update("Singers", ("SingerId", "LastName"), [(1, "Lo")]))
        assert _mods(read_stream(db, "S", now - dt.timedelta(hours=1), _now(db))) == [
            ("UPDATE", {"SingerId": "1"}, {"LastName": "Lo"}, {"LastName": "Lee"})]


def test_dropping_the_database_ends_open_queries_with_not_found(make_database):
    db = make_database(TABLES + ["CREATE CHANGE STREAM S FOR ALL"])
    start = _now(db)
    tokens = [t for t, _ in _query(db, "S", start, None, None)[0][2][0][2]]
    outcomes: list[object] = []

    def reader(token: str) -> None:
        try:
            with db.snapshot() as snap:
                rows = snap.execute_sql(QUERY.format(stream="S"), params={"start": start, "end": None, "token": token,
                                                                           "heartbeat": 1000}, param_types=TYPES)
                for _ in rows:
                    pass
            outcomes.append("ended without an error")
        except Exception as exc:  # what the client raises is the point of the test
            outcomes.append(exc)

    threads = [threading.Thread(target=reader, args=(t,), daemon=True) for t in tokens]
    for t in threads:
        t.start()
    for i in range(20):  # commits keep the readers busy reading while the database goes
        db.run_in_transaction(lambda t, i=i: t.insert("Singers", ("SingerId", "FirstName"), [(100 + i, "x")]))
    db.drop()
    for t in threads:
        t.join(15)
    assert not any(t.is_alive() for t in threads)
    assert len(outcomes) == len(tokens)
    assert all(isinstance(o, exceptions.NotFound) for o in outcomes), outcomes
    assert all("Database not found" in str(o) for o in outcomes)
