"""Change streams read through the official client: capture at commit, the read function, partitions.

A small reader follows seed 000's workflow: a query without a token names the first
partitions; each partition is read from its start; a child partition is read only after
every one of its parents finished.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import threading
import time
from collections import defaultdict

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_v1 import param_types

TABLES = [
    "CREATE TABLE Singers (SingerId INT64 NOT NULL, FirstName STRING(MAX), LastName STRING(MAX), "
    "Score FLOAT64, Photo BYTES(MAX), Tags ARRAY<STRING(MAX)>) PRIMARY KEY (SingerId)",
    "CREATE TABLE Albums (SingerId INT64 NOT NULL, AlbumId INT64 NOT NULL, Title STRING(MAX)) "
    "PRIMARY KEY (SingerId, AlbumId), INTERLEAVE IN PARENT Singers ON DELETE CASCADE",
]
QUERY = ("SELECT ChangeRecord FROM READ_{stream}(start_timestamp => @start, end_timestamp => @end, "
         "partition_token => @token, heartbeat_milliseconds => @heartbeat)")
TYPES = {"start": param_types.TIMESTAMP, "end": param_types.TIMESTAMP, "token": param_types.STRING,
         "heartbeat": param_types.INT64}


def _query(db, stream: str, start, end, token, heartbeat: int = 1000) -> list:
    with db.snapshot() as snap:
        rows = snap.execute_sql(QUERY.format(stream=stream), params={"start": start, "end": end, "token": token,
                                                                      "heartbeat": heartbeat}, param_types=TYPES)
        return [row[0][0] for row in rows]


def read_stream(db, stream: str, start, end) -> list[dict]:
    """Every data change record in [start, end], partitions read as seed 000 says (children after all parents)."""
    out: list[dict] = []
    finished: set[str] = set()
    waiting: dict[str, tuple] = {}  # token -> (start, parents)
    for record in _query(db, stream, start, end, None):
        for cp in record[2]:
            for token, parents in cp[2]:
                waiting[token] = (cp[0], parents)
    while waiting:
        ready = [t for t, (_, parents) in waiting.items() if all(p in finished for p in parents)]
        assert ready, "a child partition whose parents never finish"
        for token in ready:
            part_start, _ = waiting.pop(token)
            for record in _query(db, stream, part_start, end, token):
                data, _heartbeats, children = record
                out.extend(_as_dict(d) for d in data)
                for cp in children:
                    for child, parents in cp[2]:
                        if child not in finished and child not in waiting:
                            waiting[child] = (cp[0], parents)
            finished.add(token)
    return out


_NAMES = ["commit_timestamp", "record_sequence", "server_transaction_id", "is_last_record_in_transaction_in_partition",
          "table_name", "column_types", "mods", "mod_type", "value_capture_type", "number_of_records_in_transaction",
          "number_of_partitions_in_transaction", "transaction_tag", "is_system_transaction"]


def _as_dict(values: list) -> dict:
    record = dict(zip(_NAMES, values, strict=True))
    record["mods"] = [{"keys": _j(k), "new_values": _j(n), "old_values": _j(o)} for k, n, o in record["mods"]]
    record["column_types"] = [(name, _j(t), pk, pos) for name, t, pk, pos in record["column_types"]]
    return record


def _j(value) -> dict:
    return json.loads(value.serialize()) if hasattr(value, "serialize") else (json.loads(value) if isinstance(value, str) else dict(value))


def _mods(records: list[dict], table: str = "Singers") -> list[tuple]:
    return [(r["mod_type"], m["keys"], m["new_values"], m["old_values"]) for r in records if r["table_name"] == table
            for m in r["mods"]]


def _now(db) -> dt.datetime:
    with db.snapshot() as snap:
        return list(snap.execute_sql("SELECT CURRENT_TIMESTAMP()"))[0][0]


@pytest.fixture
def churn(local_server):
    """Partitions split and merge every 0.3 s for one test (embedded server only)."""
    service = local_server.service
    before = service.change_stream_partition_churn_seconds
    service.change_stream_partition_churn_seconds = 0.3
    yield
    service.change_stream_partition_churn_seconds = before


def _writes(db) -> None:
    db.run_in_transaction(lambda t: t.insert("Singers", ("SingerId", "FirstName", "LastName", "Score", "Photo", "Tags"),
                                             [(1, "Ann", "Lee", 1.5, base64.b64encode(b"\x00\x01"), ["a", "b"]), (2, "Bo", "Ng", None, None, None)]))
    db.run_in_transaction(lambda t: t.update("Singers", ("SingerId", "FirstName"), [(1, "Anna")]))
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
    assert all(r["value_capture_type"] == "OLD_AND_NEW_VALUES" and r["is_system_transaction"] is False for r in records)
    assert records[0]["column_types"][0] == ("SingerId", {"code": "INT64"}, True, 1)
    assert ("Tags", {"code": "ARRAY", "array_element_type": {"code": "STRING"}}, False, 6) in records[0]["column_types"]
