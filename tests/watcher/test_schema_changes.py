"""The schema changes under a running DatabaseWatcher + StagingSink (DESIGN invariant 6).

Values are typed by the result set they were read with: a column added, dropped or widened
while watching is staged exactly from the first row read after the change. A change that
makes one table unwatchable fails that table alone, naming table and column.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from google.cloud.spanner_v1 import Interval, JsonObject

from tests.watcher.core_support import Collector, insert, wait_until
from watcher import (
    ColumnNotFoundError,
    DatabaseWatcher,
    FixedShardProvider,
    InMemoryCommitTimestampRepository,
    RetryPolicy,
    State,
    TableNotWatchableError,
)
from watcher.codec import decode_value
from watcher.staging.sink import StagingSink

T_DDL = ("CREATE TABLE T (Id INT64 NOT NULL, Name STRING(10), Sh INT64, "
         "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)")
U_DDL = "CREATE TABLE U (Id INT64 NOT NULL, Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)"

#: Column type added -> (value written, the type name its result set reports, the value as decoded from staging).
ADDED = {
    # The client writes BYTES given as base64; the watcher hands back the real bytes.
    "BYTES(MAX)": (base64.b64encode(b"\x00\xffhi"), "BYTES", b"\x00\xffhi"),
    "FLOAT64": (1.5, "FLOAT64", 1.5),
    "ARRAY<INT64>": ([1, 2**62 + 1, None], "ARRAY<INT64>", [1, 2**62 + 1, None]),
    "NUMERIC": (decimal.Decimal("12345678901234567890.123456789"), "NUMERIC",
                decimal.Decimal("12345678901234567890.123456789")),
    "JSON": (JsonObject({"a": [1, "x"]}), "JSON", {"a": [1, "x"]}),
    "TIMESTAMP": (dt.datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=dt.UTC), "TIMESTAMP",
                  DatetimeWithNanoseconds(2024, 5, 1, 10, 0, 0, 123456, tzinfo=dt.UTC)),
    "DATE": (dt.date(2024, 5, 1), "DATE", dt.date(2024, 5, 1)),
    "BOOL": (True, "BOOL", True),
    "STRING(MAX)": ("Zoë ✓", "STRING", "Zoë ✓"),
    "UUID": (uuid.UUID("7f3c8a1e-2b4d-4c6e-9a0b-1c2d3e4f5a6b"), "UUID", uuid.UUID("7f3c8a1e-2b4d-4c6e-9a0b-1c2d3e4f5a6b")),
    "FLOAT32": (0.1, "FLOAT32", 0.10000000149011612),  # stored with single precision
    "INTERVAL": (Interval(months=14, days=-3, nanos=1_500), "INTERVAL", Interval(months=14, days=-3, nanos=1_500)),
    "ARRAY<UUID>": ([uuid.UUID(int=5), None], "ARRAY<UUID>", [uuid.UUID(int=5), None]),
}


def _column(spanner_type: str) -> str:
    return "C_" + "".join(ch for ch in spanner_type if ch.isalnum())


@pytest.fixture
def db(make_database):
    return make_database([T_DDL, U_DDL])


@pytest.fixture
def running(tmp_path):
    made: list[DatabaseWatcher] = []

    def start(database: Any, **kwargs: Any) -> tuple[DatabaseWatcher, Collector]:
        w = DatabaseWatcher(database, poll_interval=0.005, checkpoints=InMemoryCommitTimestampRepository(),
                            retry_policy=RetryPolicy(initial=0.001, maximum=0.01), **kwargs)
        StagingSink(tmp_path / "staging", watcher_id="schema-test", fsync=False).attach(w)
        got = Collector()
        w.add_callback(got)
        made.append(w)
        w.start()
        return w, got

    yield start
    for w in made:
        w.stop(timeout=5)


def _staged(tmp_path: Path, table: str) -> dict[int, dict[str, Any]]:
    """The last staged record of every key of ``table``."""
    out: dict[int, dict[str, Any]] = {}
    for path in sorted((tmp_path / "staging" / f"table={table}").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            out[int(rec["keys"][0])] = rec
    return out


def _ddl(database: Any, statement: str) -> None:
    database.update_ddl([statement]).result(60)


def _write(database: Any, table: str, row: dict[str, Any]) -> None:
    insert(database, table, list(row), [list(row.values())])


def test_columns_added_while_watching_are_staged_with_their_real_types(db, running, tmp_path):
    w, got = running(db)
    _write(db, "T", {"Id": 0, "Name": "before"})
    got.wait_for(1)
    for n, (spanner_type, (value, _, _)) in enumerate(ADDED.items(), start=1):
        _ddl(db, f"ALTER TABLE T ADD COLUMN {_column(spanner_type)} {spanner_type}")
        _write(db, "T", {"Id": n, _column(spanner_type): value})
        got.wait_for(n + 1)
    assert w.failure is None and w.watchers["T"].failure is None
    staged = _staged(tmp_path, "T")
    assert _column("BYTES(MAX)") not in staged[0]["values"]  # read before the column existed
    for n, (spanner_type, (_, type_name, expected)) in enumerate(ADDED.items(), start=1):
        rec = staged[n]
        column = _column(spanner_type)
        assert rec["types"][column] == type_name, column
        decoded = decode_value(rec["types"][column], rec["values"][column])
        if type_name == "JSON":
            decoded = json.loads(decoded)
        assert decoded == expected, column
        # The change handed to the callbacks says the same.
        change = next(c for c in got.changes if c.keys == (n,))
        assert change.column_types[column] == type_name
    # Every column of the row is typed; columns added earlier are NULL, with their types.
    last = staged[len(ADDED)]
    assert set(last["types"]) == set(last["values"]) == {"Id", "Name", "Sh", "Ts", *map(_column, ADDED)}


def test_a_dropped_column_is_absent_from_later_records(db, running, tmp_path):
    w, got = running(db)
    _write(db, "T", {"Id": 1, "Name": "a", "Sh": 7})
    got.wait_for(1)
    _ddl(db, "ALTER TABLE T DROP COLUMN Sh")
    _write(db, "T", {"Id": 2, "Name": "b"})
    got.wait_for(2)
    staged = _staged(tmp_path, "T")
    assert staged[1]["values"]["Sh"] == "7" and staged[1]["types"]["Sh"] == "INT64"
    assert "Sh" not in staged[2]["values"] and "Sh" not in staged[2]["types"]
    assert w.watchers["T"].failure is None


def test_a_widened_string_column_keeps_its_long_values(db, running, tmp_path):
    w, got = running(db)
    _write(db, "T", {"Id": 1, "Name": "short"})
    got.wait_for(1)
    _ddl(db, "ALTER TABLE T ALTER COLUMN Name STRING(MAX)")
    long = "x" * 500
    _write(db, "T", {"Id": 2, "Name": long})
    got.wait_for(2)
    staged = _staged(tmp_path, "T")
    assert staged[2]["values"]["Name"] == long and staged[2]["types"]["Name"] == "STRING"
    assert w.watchers["T"].failure is None


UNWATCHABLE = {
    "commit-timestamp option removed": ("ALTER TABLE T ALTER COLUMN Ts SET OPTIONS (allow_commit_timestamp=null)",
                                        TableNotWatchableError, "Ts no longer has the option allow_commit_timestamp"),
    "commit-timestamp column dropped": ("ALTER TABLE T DROP COLUMN Ts", ColumnNotFoundError,
                                        "Column Ts not found in table T"),
    "shard column dropped": ("ALTER TABLE T DROP COLUMN Sh", ColumnNotFoundError,
                             "Column Sh not found in table T: .*the shard column"),
}


@pytest.mark.parametrize("change", list(UNWATCHABLE))
def test_an_unwatchable_table_fails_alone_while_the_others_keep_going(db, running, tmp_path, change):
    statement, error, message = UNWATCHABLE[change]
    w, got = running(db, shard_provider={"T": FixedShardProvider("Sh", [1])}, schema_check_interval=0.05)
    _write(db, "T", {"Id": 1, "Name": "a", "Sh": 1})
    _write(db, "U", {"Id": 1})
    got.wait_for(2)
    _ddl(db, statement)  # the next poll of T (or the periodic schema check) finds it out
    t = w.watchers["T"]
    wait_until(lambda: t.state == State.FAILED)
    assert isinstance(t.failure, error)
    assert t.failure.table == "T"
    assert pytest.raises(error, lambda: (_ for _ in ()).throw(t.failure)).match(message)
    # Permanent: the table's watcher does not retry, and nothing else stopped.
    polls = t.stats()["polls"]
    _write(db, "U", {"Id": 2})
    wait_until(lambda: (2,) in [c.keys for c in got.changes if c.table == "U"])
    assert 2 in _staged(tmp_path, "U")
    assert w.state == State.RUNNING and w.failure is None and w.watchers["U"].state == State.RUNNING
    assert t.stats()["polls"] == polls
