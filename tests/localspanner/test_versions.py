"""Reads in the past: row versions kept for version_retention_period, through the official client."""

from __future__ import annotations

import datetime as dt
import os
import random
import threading
import time

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_v1 import param_types

DDL = [
    "CREATE TABLE Singers (SingerId INT64 NOT NULL, Name STRING(100), V INT64) PRIMARY KEY (SingerId)",
    "CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, Title STRING(MAX)) "
    "PRIMARY KEY (SingerId, AlbumId), INTERLEAVE IN PARENT Singers ON DELETE CASCADE",
    "CREATE NULL_FILTERED INDEX SingersByName ON Singers (Name) STORING (V)",
]

WRITERS = 8
OPS_PER_WRITER = 25
KEYS = 12


@pytest.fixture
def db(make_database):
    return make_database(DDL)


def _upsert(db, singer_id, name, v):
    with db.batch() as b:
        b.insert_or_update("Singers", ("SingerId", "Name", "V"), [(singer_id, name, v)])
    return b.committed


class History:
    """What was committed, with commit timestamps, replayed to the state at any time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.log: list[tuple[dt.datetime, str, tuple]] = []

    def add(self, ts, op, *args) -> None:
        with self.lock:
            self.log.append((ts, op, args))

    def state_at(self, t):
        singers: dict[int, tuple[str | None, int]] = {}
        albums: dict[tuple[int, int], str] = {}
        for ts, op, args in sorted(self.log, key=lambda e: e[0]):
            if ts > t:
                break
            if op == "upsert":
                sid, name, v = args
                singers[sid] = (name, v)
            elif op == "delete":
                singers.pop(args[0], None)
                for key in [k for k in albums if k[0] == args[0]]:
                    del albums[key]  # ON DELETE CASCADE
            elif op == "bump":
                if args[0] in singers:
                    name, v = singers[args[0]]
                    singers[args[0]] = (name, v + 1)
            elif op == "album":
                albums[(args[0], args[1])] = args[2]
            elif op == "rename":
                sid, name = args
                if sid in singers:
                    singers[sid] = (name, singers[sid][1])
        return singers, albums


def _writer(db, history: History, seed: int, errors: list) -> None:
    rng = random.Random(seed)
    try:
        for _ in range(OPS_PER_WRITER):
            sid = rng.randrange(KEYS)
            kind = rng.choice(["upsert", "upsert", "delete", "bump", "album", "rename", "batch"])
            if kind == "upsert":
                name = rng.choice([None, f"n{rng.randrange(100)}"])
                v = rng.randrange(1000)
                history.add(_upsert(db, sid, name, v), "upsert", sid, name, v)
            elif kind == "delete":
                with db.batch() as b:
                    b.delete("Singers", spanner.KeySet(keys=[[sid]]))
                history.add(b.committed, "delete", sid)
            elif kind in ("bump", "rename"):
                txns = []

                def work(txn, kind=kind, sid=sid, txns=txns):
                    txns.append(txn)
                    if kind == "bump":
                        txn.execute_update("UPDATE Singers SET V = V + 1 WHERE SingerId = @id",
                                           params={"id": sid}, param_types={"id": param_types.INT64})
                    else:
                        txn.batch_update([("UPDATE Singers SET Name = @n WHERE SingerId = @id",
                                           {"n": f"r{seed}", "id": sid}, {"n": param_types.STRING, "id": param_types.INT64})])

                db.run_in_transaction(work)
                history.add(txns[-1].committed, kind, *((sid,) if kind == "bump" else (sid, f"r{seed}")))
            elif kind == "album":
                aid, title = rng.randrange(3), f"t{rng.randrange(100)}"
                try:
                    with db.batch() as b:
                        b.insert_or_update("Albums", ("SingerId", "AlbumId", "Title"), [(sid, aid, title)])
                except exceptions.NotFound:
                    continue  # no such singer at commit: nothing was written
                history.add(b.committed, "album", sid, aid, title)
            else:
                sid2, v = (sid + 1) % KEYS, rng.randrange(1000)
                with db.batch() as b:  # two rows in one commit, one of them twice
                    b.insert_or_update("Singers", ("SingerId", "Name", "V"), [(sid, "b", v), (sid2, "b", v)])
                    b.update("Singers", ("SingerId", "V"), [(sid, v + 1)])
                history.add(b.committed, "upsert", sid, "b", v + 1)
                history.add(b.committed, "upsert", sid2, "b", v)
    except Exception as exc:  # pragma: no cover - reported by the test
        errors.append(exc)


def _check_at(db, history: History, t) -> None:
    singers, albums = history.state_at(t)
    want_rows = sorted([sid, name, v] for sid, (name, v) in singers.items())
    keys = [3, 5, 7, KEYS + 1]
    with db.snapshot(read_timestamp=t, multi_use=True) as snap:
        full = [list(r) for r in snap.read("Singers", ("SingerId", "Name", "V"), spanner.KeySet(all_=True))]
        some = [list(r) for r in snap.read("Singers", ("SingerId", "V"), spanner.KeySet(keys=[[k] for k in keys]))]
        by_name = [list(r) for r in snap.read("Singers", ("Name", "SingerId", "V"), spanner.KeySet(all_=True),
                                              index="SingersByName")]
        joined = [list(r) for r in snap.execute_sql(
            "SELECT s.SingerId, s.Name, a.AlbumId, a.Title FROM Singers AS s JOIN Albums AS a ON s.SingerId = a.SingerId "
            "ORDER BY s.SingerId, a.AlbumId")]
    assert full == want_rows, t
    assert some == [[k, singers[k][1]] for k in keys if k in singers]
    assert by_name == sorted([name, sid, v] for sid, (name, v) in singers.items() if name is not None)
    assert joined == sorted([sid, singers[sid][0], aid, title] for (sid, aid), title in albums.items())


def test_reads_in_the_past_match_the_committed_history_under_concurrent_writers(db):
    history = History()
    errors: list[Exception] = []
    threads = [threading.Thread(target=_writer, args=(db, history, seed, errors)) for seed in range(WRITERS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    stamps = sorted({ts for ts, _, _ in history.log})
    assert len(stamps) > WRITERS * OPS_PER_WRITER // 2
    rng = random.Random(7)
    picks = rng.sample(stamps, 15) + [stamps[0] - dt.timedelta(microseconds=1)]
    # between two commits too: a time no commit has
    picks += [a + (b - a) / 2 for a, b in zip(stamps[:5], stamps[1:6], strict=True) if b - a > dt.timedelta(microseconds=1)]
    for t in picks:
        _check_at(db, history, t)


def test_exact_staleness_and_single_use_bounds(db):
    t1 = _upsert(db, 1, "a", 1)
    time.sleep(0.5)
    _upsert(db, 1, "b", 2)
    stale = dt.datetime.now(dt.UTC) - (t1 + dt.timedelta(seconds=0.2))  # reads about 0.2 s after t1: before the second write
    with db.snapshot(exact_staleness=stale) as snap:
        assert list(snap.execute_sql("SELECT Name, V FROM Singers")) == [["a", 1]]
    with db.snapshot(read_timestamp=t1) as snap:
        assert list(snap.execute_sql("SELECT Name, V FROM Singers")) == [["a", 1]]
    # Bounded staleness reads at a timestamp that satisfies the bound: here, the newest data.
    with db.snapshot(min_read_timestamp=t1) as snap:
        assert list(snap.read("Singers", ("Name",), spanner.KeySet(all_=True))) == [["b"]]
    with db.snapshot(max_staleness=dt.timedelta(seconds=10)) as snap:
        assert list(snap.execute_sql("SELECT Name FROM Singers")) == [["b"]]


def test_every_read_kind_at_a_past_timestamp(db):
    with db.batch() as b:
        b.insert("Singers", ("SingerId", "Name", "V"), [(i, f"n{i}", i * 10) for i in range(6)])
        b.insert("Albums", ("SingerId", "AlbumId", "Title"), [(1, 1, "x"), (2, 1, "y")])
    t1 = b.committed
    with db.batch() as b:
        b.delete("Singers", spanner.KeySet(ranges=[spanner.KeyRange(start_closed=[0], end_open=[3])]))  # cascades Albums
        b.replace("Singers", ("SingerId", "Name"), [(4, "replaced")])
    db.execute_partitioned_dml("UPDATE Singers SET V = 0 WHERE SingerId >= 4")
    db.run_in_transaction(lambda txn: txn.execute_update("INSERT INTO Singers (SingerId, Name, V) VALUES (9, 'dml', 9)"))
    with db.mutation_groups() as groups:
        groups.group().insert("Singers", ("SingerId", "Name", "V"), [(10, "bw", 1)])
        groups.batch_write()
    with db.snapshot(read_timestamp=t1, multi_use=True) as snap:
        assert [list(r) for r in snap.execute_sql("SELECT SingerId, V FROM Singers WHERE V >= @v ORDER BY V DESC",
                                                  params={"v": 30}, param_types={"v": param_types.INT64})] == [[5, 50], [4, 40], [3, 30]]
        assert list(snap.execute_sql("SELECT COUNT(*), SUM(V) FROM Singers")) == [[6, 150]]
        assert list(snap.execute_sql("SELECT Name FROM Singers@{FORCE_INDEX=SingersByName} WHERE Name > 'n3'")) == [["n4"], ["n5"]]
        assert list(snap.execute_sql("SELECT Title FROM Albums WHERE SingerId IN (SELECT SingerId FROM Singers)"
                                     " ORDER BY Title")) == [["x"], ["y"]]
        ranged = snap.read("Singers", ("SingerId",), spanner.KeySet(ranges=[spanner.KeyRange(start_open=[1], end_closed=[3])]))
        assert list(ranged) == [[2], [3]]
        assert list(snap.read("Singers", ("SingerId", "Name"), spanner.KeySet(all_=True), limit=2)) == [[0, "n0"], [1, "n1"]]
        assert list(snap.read("Singers", ("Name",), spanner.KeySet(keys=[["n2"]]), index="SingersByName")) == [["n2"]]
    with db.snapshot(multi_use=True) as now:  # the present is untouched by the past
        assert list(now.execute_sql("SELECT SingerId, Name, V FROM Singers ORDER BY SingerId")) == [
            [3, "n3", 30], [4, "replaced", 0], [5, "n5", 0], [9, "dml", 9], [10, "bw", 1]]
        assert list(now.execute_sql("SELECT COUNT(*) FROM Albums")) == [[0]]


def test_multi_use_snapshot_in_the_past_stays_there_while_writes_happen(db):
    t1 = _upsert(db, 1, "a", 100)
    _upsert(db, 2, "b", 0)
    with db.snapshot(read_timestamp=t1, multi_use=True) as snap:
        first = list(snap.execute_sql("SELECT SUM(V), COUNT(*) FROM Singers"))
        for i in range(5):
            _upsert(db, 1, "a", 100 - i)
            _upsert(db, 10 + i, "x", 1)
        second = list(snap.execute_sql("SELECT SUM(V), COUNT(*) FROM Singers"))
        read = list(snap.read("Singers", ("SingerId", "V"), spanner.KeySet(all_=True)))
    assert first == second == [[100, 1]]
    assert read == [[1, 100]]


def test_a_read_before_the_retention_period_fails_as_on_spanner(db):
    _upsert(db, 1, "a", 1)
    old = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1, minutes=1)
    with pytest.raises(exceptions.FailedPrecondition, match=r"Read-only transaction timestamp .* has exceeded the maximum timestamp staleness"):
        with db.snapshot(read_timestamp=old) as snap:
            list(snap.execute_sql("SELECT * FROM Singers"))
    with pytest.raises(exceptions.FailedPrecondition, match="exceeded the maximum timestamp staleness"):
        with db.snapshot(exact_staleness=dt.timedelta(hours=2)) as snap:
            list(snap.read("Singers", ("SingerId",), spanner.KeySet(all_=True)))
    # A longer retention period makes the same read possible.
    db.update_ddl([f"ALTER DATABASE `{db.database_id}` SET OPTIONS (version_retention_period = '3h')"]).result(60)
    with db.snapshot(exact_staleness=dt.timedelta(hours=2)) as snap:
        assert list(snap.read("Singers", ("SingerId",), spanner.KeySet(all_=True))) == []


def test_version_retention_period_is_checked_and_printed_back(db):
    for bad in ("30m", "8d", "59m", "1w", "-1h", "abc"):
        with pytest.raises(exceptions.InvalidArgument, match="version_retention_period"):
            db.update_ddl([f"ALTER DATABASE `{db.database_id}` SET OPTIONS (version_retention_period = '{bad}')"]).result(60)
    assert not any("version_retention_period" in s for s in db.ddl_statements)
    for good in ("1h", "7d", "168h", "90m", "604800s"):
        db.update_ddl([f"ALTER DATABASE `{db.database_id}` SET OPTIONS (version_retention_period = '{good}')"]).result(60)
    db.reload()
    assert db.ddl_statements[-1] == f"ALTER DATABASE {db.database_id} SET OPTIONS (\n  version_retention_period = '604800s'\n)"
    db.update_ddl([f"ALTER DATABASE `{db.database_id}` SET OPTIONS (version_retention_period = NULL)"]).result(60)
    db.reload()
    assert not any("version_retention_period" in s for s in db.ddl_statements)


@pytest.mark.skipif(bool(os.environ.get("SPANNER_EMULATOR_HOST")), reason="starts its own local server")
def test_versions_survive_a_restart_with_a_data_dir(tmp_path, monkeypatch):
    from watcher.localspanner.server import LocalSpanner

    def open_db(server):
        monkeypatch.setenv("SPANNER_EMULATOR_HOST", server.emulator_host)
        instance = spanner.Client(project="versions-project").instance("versions-instance")
        return instance, instance.database("versions-db")

    data_dir = str(tmp_path / "data")
    with LocalSpanner(data_dir=data_dir) as server:
        instance, _ = open_db(server)
        instance.configuration_name = "projects/versions-project/instanceConfigs/emulator-config"
        instance.create().result(30)
        db = instance.database("versions-db", ddl_statements=DDL)
        db.create().result(60)
        t1 = _upsert(db, 1, "before", 1)
        _upsert(db, 1, "after", 2)
    with LocalSpanner(data_dir=data_dir) as server:
        _, db = open_db(server)
        with db.snapshot(read_timestamp=t1) as snap:
            assert list(snap.read("Singers", ("Name", "V"), spanner.KeySet(all_=True))) == [["before", 1]]
        _upsert(db, 2, "new", 3)  # capture works after the restart too
        with db.snapshot(read_timestamp=t1) as snap:
            assert list(snap.execute_sql("SELECT Name FROM Singers ORDER BY Name")) == [["before"]]


def test_past_reads_of_tables_with_a_nullable_key_part_or_no_key(make_database):
    # Mutations on these tables keep their row images by trigger, the others by a bulk copy: both must read back.
    db = make_database(["CREATE TABLE N (A INT64, B STRING(10), V INT64) PRIMARY KEY (A, B)",
                        "CREATE TABLE One (V INT64) PRIMARY KEY ()"])
    cols = ("A", "B", "V")
    times = []
    for v in range(3):
        with db.batch() as b:
            b.insert_or_update("N", cols, [(None, "x", v), (1, None, v), (2, "y", v)])
            b.insert_or_update("One", ("V",), [(v,)])
        times.append(b.committed)
    with db.batch() as b:
        b.delete("N", spanner.KeySet(keys=[[None, "x"]]))
        b.update("N", cols, [(1, None, 99)])
    for v, t in enumerate(times):
        with db.snapshot(read_timestamp=t, multi_use=True) as snap:
            assert sorted(snap.read("N", cols, spanner.KeySet(all_=True)), key=repr) == sorted(
                [[None, "x", v], [1, None, v], [2, "y", v]], key=repr)
            assert list(snap.read("N", ("V",), spanner.KeySet(keys=[[1, None]]))) == [[v]]
            assert list(snap.execute_sql("SELECT V FROM One")) == [[v]]
    with db.snapshot() as snap:
        assert sorted(snap.read("N", cols, spanner.KeySet(all_=True)), key=repr) == sorted([[1, None, 99], [2, "y", 2]], key=repr)


def test_a_key_read_in_the_past_finds_its_version_among_many_later_changes(db):
    with db.batch() as b:
        b.insert("Singers", ("SingerId", "Name", "V"), [(i, "start", 0) for i in range(50)])
    at = []
    for round_ in range(1, 11):  # every key changes in every commit
        with db.batch() as b:
            b.insert_or_update("Singers", ("SingerId", "V"), [(i, round_) for i in range(50)])
            b.update("Singers", ("SingerId", "Name"), [(7, f"r{round_}")])
        at.append(b.committed)
    for round_, t in enumerate(at, start=1):
        with db.snapshot(read_timestamp=t, multi_use=True) as snap:
            assert list(snap.read("Singers", ("SingerId", "Name", "V"), spanner.KeySet(keys=[[7], [8]]))) == [
                [7, f"r{round_}", round_], [8, "start", round_]]
            assert list(snap.execute_sql("SELECT COUNT(*), SUM(V) FROM Singers")) == [[50, 50 * round_]]
