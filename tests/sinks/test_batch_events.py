"""BatchEvents (a batch's messages with its columns' encoders looked up once) makes exactly the messages
events.event makes of each change's staging record: key, value bytes, headers and change id, for random
changes of every column type, polled, versioned and from a change stream, in both formats; and a change
the staging record refuses fails with the staging record's own error. No broker."""

from __future__ import annotations

import datetime as dt
import random

import pytest

from tests.sinks.test_event_bytes import FLOATS, TYPES, _change
from watcher.capture.table_info import TableInfo
from watcher.errors import UnknownColumnTypeError
from watcher.model import Change, TableId, from_nanos
from watcher.sinks import events
from watcher.sinks.batch_events import BatchEvents
from watcher.sinks.topics import SourceNames

ORIGIN = events.Origin(SourceNames("p", "i", "d"), None, "server")
STREAM_ORIGIN = events.Origin(SourceNames("p", "i", "d"), "Stream", "server")
NOW = 1_750_000_000_123_456_789


def _expected(changes: list[Change], info: TableInfo, event_format: str, origin: events.Origin) -> list[events.Event]:
    return [events.event(c, events.staging_record(c, info.key_columns, info.column_types, watcher_id="w",
                                                  batch_id="b", seq=seq), event_format, origin, NOW)
            for seq, c in enumerate(changes)]


def _built(changes: list[Change], info: TableInfo, event_format: str, origin: events.Origin) -> list[events.Event]:
    build = BatchEvents(info, event_format, origin, NOW, watcher_id="w", batch_id="b")
    return [build.event(c, seq) for seq, c in enumerate(changes)]


@pytest.mark.parametrize("event_format", ["debezium", "record"])
@pytest.mark.parametrize("floats", [False, True], ids=["no-floats", "floats"])
@pytest.mark.parametrize("streamed", [False, True], ids=["polled", "change-stream"])
def test_a_batch_gives_the_messages_of_each_changes_staging_record(event_format, floats, streamed):
    rng = random.Random(f"batch{event_format}{floats}{streamed}")
    types = {**TYPES, **(FLOATS if floats else {})}
    info = TableInfo(TableId("T"), "", ("Id",), types)
    changes = [_change(rng, i, types, streamed) for i in range(300)]
    origin = STREAM_ORIGIN if streamed else ORIGIN
    assert _built(changes, info, event_format, origin) == _expected(changes, info, event_format, origin)


def test_versions_partial_rows_shared_commit_timestamps_and_several_type_sets_in_one_batch():
    types = {"A": "INT64", "B": "STRING", "Big": "INT64", "Amount": "NUMERIC", "Seen": "TIMESTAMP"}
    info = TableInfo(TableId("T"), "", ("A", "B"), types)
    at = from_nanos(1_700_000_000_123_456_789)
    narrower = {"A": "INT64", "B": "STRING(MAX)", "Seen": "TIMESTAMP"}
    changes = [
        Change("T", (1, "x"), {"A": 1, "B": "x", "Big": 2**62 + 1, "Seen": at}, at, column_types=types),
        Change("T", (1, "x"), {"A": 1, "B": "x", "Seen": at}, at, mod_type="UPDATE", version_seq=2,
               value_capture_type="NEW_VALUES", column_types=types),            # a history version, partial
        Change("T", (1, "x"), {"A": 1, "B": "x"}, at, mod_type="DELETE", version_seq=3, column_types=types),
        Change("T", (2, None), {"A": 2, "B": None, "Seen": from_nanos(5)}, at, column_types=narrower),
        Change("T", (3, "é"), {"A": 3, "B": "é", "Amount": None}, dt.datetime(2024, 5, 1, tzinfo=dt.UTC)),  # table's
        Change("T", (4, "q"), {"A": 4, "B": "q", "Seen": at}, at, shard=[1.5, 2], column_types=types),
    ]
    for event_format in ("debezium", "record"):
        assert _built(changes, info, event_format, ORIGIN) == _expected(changes, info, event_format, ORIGIN)


@pytest.mark.parametrize("row, column_types", [
    ({"Id": 1, "Extra": 5}, {"Id": "INT64"}),            # a column without a type
    ({"Id": 1, "Amount": "many"}, {"Id": "INT64", "Amount": "NUMERIC"}),
    ({"Id": "x"}, {"Id": "INT64"}),                      # a key its type refuses
    ({"Id": 1, "G": "POINT(1 2)"}, {"Id": "INT64", "G": "GEOGRAPHY"}),  # a type without a typed-JSON form
])
def test_a_change_staging_refuses_fails_with_the_staging_records_error(row, column_types):
    info = TableInfo(TableId("T"), "", ("Id",), column_types)
    change = Change("T", (row["Id"],), row, from_nanos(10**18), column_types=column_types)
    with pytest.raises(Exception) as expected:
        _expected([change], info, "debezium", ORIGIN)
    with pytest.raises(type(expected.value)) as got:
        _built([change], info, "debezium", ORIGIN)
    assert str(got.value) == str(expected.value)
    assert isinstance(expected.value, (UnknownColumnTypeError, ArithmeticError, TypeError))
