"""Change streams with ``partition_mode = 'MUTABLE_KEY_RANGE'``, through the official client.

Such a stream's read function returns one column, ``ChangeRecord``, a protobuf
``google.spanner.v1.ChangeStreamRecord`` (the client hands back its bytes); partitions live
on while key ranges move between them (partition start, event and end records).
"""

from __future__ import annotations

import datetime as dt
import time
from collections import defaultdict

import pytest
from google.api_core import exceptions
from google.cloud.spanner_v1 import param_types
from google.cloud.spanner_v1.types import ChangeStreamRecord

TABLES = ["CREATE TABLE Singers (SingerId INT64 NOT NULL, FirstName STRING(MAX), Score FLOAT64, Tags ARRAY<STRING(MAX)>) "
          "PRIMARY KEY (SingerId)"]
MUTABLE = "CREATE CHANGE STREAM S FOR ALL OPTIONS (partition_mode = 'MUTABLE_KEY_RANGE')"
#: The query as Spanner's own connectors send it for this mode.
QUERY = ("SELECT * FROM READ_S(start_timestamp => @start, end_timestamp => @end, partition_token => @token, "
         "heartbeat_milliseconds => @heartbeat, read_options => NULL)")
TYPES = {"start": param_types.TIMESTAMP, "end": param_types.TIMESTAMP, "token": param_types.STRING,
         "heartbeat": param_types.INT64}
PB = ChangeStreamRecord.pb()


def _now(db) -> dt.datetime:
    with db.snapshot() as snap:
        return list(snap.execute_sql("SELECT CURRENT_TIMESTAMP()"))[0][0]


def _records(db, start, end, token: str | None) -> list:
    with db.snapshot() as snap:
        rows = snap.execute_sql(QUERY, params={"start": start, "end": end, "token": token, "heartbeat": 1000},
                                param_types=TYPES)
        out = [PB.FromString(row[0]) for row in rows]
        assert [f.name for f in rows.fields] == ["ChangeRecord"]
        assert rows.fields[0].type_.proto_type_fqn == "google.spanner.v1.ChangeStreamRecord"
    return out


def _nanos(ts) -> int:
    return ts.ToNanoseconds()


def _read_all(db, start, end) -> dict[str, list]:
    """Every partition's records (partition token -> records), each partition read once from the
    start its partition start record gave."""
    first = _records(db, start, end, None)
    assert [r.WhichOneof("record") for r in first] == ["partition_start_record"]
    todo = [(t, start) for t in first[0].partition_start_record.partition_tokens]
    out: dict[str, list] = {}
    while todo:
        token, at = todo.pop(0)
        if token in out:
            continue
        out[token] = recs = _records(db, at, end, token)
        for r in recs:
            if r.WhichOneof("record") == "partition_start_record":
                begin = r.partition_start_record.start_timestamp.ToDatetime(dt.UTC)
                todo += [(t, begin) for t in r.partition_start_record.partition_tokens]
    return out


def test_partition_mode_is_schema_shown_and_checked(make_database):
    db = make_database(TABLES + [MUTABLE])
    db.reload()
    assert db.ddl_statements[-1] == "CREATE CHANGE STREAM S FOR ALL OPTIONS (\n  partition_mode = 'MUTABLE_KEY_RANGE'\n)"
    with db.snapshot() as snap:
        assert [list(r) for r in snap.execute_sql(
            "SELECT OPTION_NAME, OPTION_TYPE, OPTION_VALUE FROM INFORMATION_SCHEMA.CHANGE_STREAM_OPTIONS "
            "WHERE CHANGE_STREAM_NAME = 'S'")] == [["partition_mode", "STRING", "MUTABLE_KEY_RANGE"]]
    db.update_ddl(["ALTER CHANGE STREAM S SET OPTIONS (partition_mode = 'IMMUTABLE_KEY_RANGE')"]).result(60)
    db.reload()
    assert "partition_mode = 'IMMUTABLE_KEY_RANGE'" in db.ddl_statements[-1]
    statement = "CREATE CHANGE STREAM T FOR ALL OPTIONS (partition_mode = 'SOMETIMES')"
    with pytest.raises(exceptions.InvalidArgument) as info:
        db.update_ddl([statement]).result(60)
    assert "partition_mode" in info.value.message and "MUTABLE_KEY_RANGE" in info.value.message
    assert statement[:40] in info.value.message


def test_records_are_protobuf_with_values_by_column_index(make_database):
    db = make_database(TABLES + [MUTABLE])
    start = _now(db)
    db.run_in_transaction(lambda t: t.insert("Singers", ("SingerId", "FirstName", "Score", "Tags"),
                                             [(1, "Ann", 1.5, ["a"])]))
    db.run_in_transaction(lambda t: t.update("Singers", ("SingerId", "FirstName"), [(1, "Anna")]),
                          transaction_tag="app")
    parts = _read_all(db, start, _now(db))
    assert len(parts) == 1  # no churn: one partition, never ending
    data = [r.data_change_record for r in next(iter(parts.values())) if r.WhichOneof("record") == "data_change_record"]
    assert [d.mod_type for d in data] == [PB.DataChangeRecord.ModType.INSERT, PB.DataChangeRecord.ModType.UPDATE]
    insert, update = data
    names = [c.name for c in insert.column_metadata]
    assert names == ["SingerId", "FirstName", "Score", "Tags"] and insert.column_metadata[0].is_primary_key
    assert insert.column_metadata[3].type_.array_element_type.code == param_types.STRING.code
    values = {names[v.column_metadata_index]: v.value for v in insert.mods[0].new_values}
    assert (values["FirstName"].string_value, values["Score"].number_value) == ("Ann", 1.5)
    assert [v.string_value for v in values["Tags"].list_value.values] == ["a"]
    assert [(names[v.column_metadata_index], v.value.string_value) for v in insert.mods[0].keys] == [("SingerId", "1")]
    old = {update.column_metadata[v.column_metadata_index].name: v.value.string_value for v in update.mods[0].old_values}
    assert old == {"FirstName": "Ann"} and update.transaction_tag == "app"
    assert update.value_capture_type == PB.DataChangeRecord.ValueCaptureType.OLD_AND_NEW_VALUES
    assert insert.commit_timestamp.ToNanoseconds() < update.commit_timestamp.ToNanoseconds()


def test_an_idle_partition_sends_heartbeats_and_a_bad_token_is_refused(make_database):
    db = make_database(TABLES + [MUTABLE])
    start = _now(db)
    parts = _read_all(db, start, start + dt.timedelta(seconds=1.5))  # runs until then: a heartbeat after 1 s
    kinds = [r.WhichOneof("record") for r in next(iter(parts.values()))]
    assert set(kinds) == {"heartbeat_record"}
    with pytest.raises(exceptions.InvalidArgument) as info:
        _records(db, start, None, "csp1.nonsense")
    assert "partition_token" in info.value.message


def test_key_ranges_move_between_partitions_and_every_change_comes_once(make_database, churn):
    """Under churn keys move out of the long-lived partition into new ones and back; each move is
    told on both sides at one timestamp, a key's records lie on the side holding it, and reading
    each partition once gives every change once, in commit order per key."""
    db = make_database(TABLES + [MUTABLE])
    start = _now(db)
    expected: dict[str, list[str]] = defaultdict(list)
    deadline, n = time.monotonic() + 1.5, 0  # five churn periods
    while time.monotonic() < deadline:
        key = n % 7
        db.run_in_transaction(lambda t, k=key, v=n: t.insert_or_update("Singers", ("SingerId", "FirstName"), [(k, f"v{v}")]))
        expected[str(key)].append(f"v{n}")
        n += 1
    end = _now(db)
    parts = _read_all(db, start, end)
    assert len(parts) >= 3, "churn moved no key range"
    moves_in, moves_out, ended = set(), set(), set()
    seen: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
    holders: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for token, recs in parts.items():
        for r in recs:
            kind = r.WhichOneof("record")
            if kind == "partition_event_record":
                e = r.partition_event_record
                assert e.partition_token == token
                moves_in |= {(s.source_partition_token, token, _nanos(e.commit_timestamp)) for s in e.move_in_events}
                moves_out |= {(token, d.destination_partition_token, _nanos(e.commit_timestamp)) for d in e.move_out_events}
            elif kind == "partition_end_record":
                assert r is recs[-1] and r.partition_end_record.partition_token == token
                ended.add(token)
            elif kind == "data_change_record":
                d = r.data_change_record
                for mod in d.mods:
                    key = mod.keys[0].value.string_value
                    seen[key].append((_nanos(d.commit_timestamp), mod.new_values[0].value.string_value, token))
                    holders[token].append((_nanos(d.commit_timestamp), key))
    assert moves_in == moves_out and moves_in, "every move is told by its source and its destination"
    assert ended and all(any(m[0] == t for m in moves_out) for t in ended)
    assert {k: [v for _, v, _ in sorted(vs)] for k, vs in seen.items()} == expected
    # A partition that ended held its keys only between its move-in and its move-out.
    for token in ended:
        came = min(at for src, dst, at in moves_in if dst == token)
        went = max(at for src, dst, at in moves_out if src == token)
        assert all(came <= at < went for at, _ in holders[token])
    # Within a partition, records come in timestamp order, events before data at one timestamp.
    for recs in parts.values():
        stamps = []
        for r in recs:
            kind = r.WhichOneof("record")
            if kind == "data_change_record":
                stamps.append((_nanos(r.data_change_record.commit_timestamp), r.data_change_record.record_sequence))
            elif kind == "partition_event_record":
                stamps.append((_nanos(r.partition_event_record.commit_timestamp), r.partition_event_record.record_sequence))
        assert stamps == sorted(stamps)
