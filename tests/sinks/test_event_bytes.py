"""The events' bytes are Python's compact JSON of their values, however they are written (orjson or not).

Random changes of every column type (INT64 at the 64-bit extremes, NUMERIC, BYTES, TIMESTAMP to
the nanosecond, FLOAT64 with small exponents, NaN and infinities, strings with quotes,
backslashes, control and non-BMP characters, JSON, arrays with nulls), polled and from a change
stream, in both event formats: each message's key and value must be byte for byte what Python's
encoder writes of the same JSON objects, and decode back to the change's typed values. No broker.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import random

import pytest
from google.api_core.datetime_helpers import DatetimeWithNanoseconds

from watcher.capture.table_info import TableInfo
from watcher.codec import decode_value
from watcher.model import Change, TableId, from_nanos
from watcher.sinks import compact_json, events
from watcher.sinks.kafka import KafkaSink

PYTHON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
CHARS = ['a', 'é', '"', '\\', '\n', '\t', '\x00', '\x1f', '\x7f', '\u2028', '😀', '/', ' ', '{']
TYPES = {"Id": "INT64", "Name": "STRING", "Big": "INT64", "Amount": "NUMERIC", "Blob": "BYTES", "Seen": "TIMESTAMP",
         "Day": "DATE", "Ok": "BOOL", "Info": "JSON", "Tags": "ARRAY<STRING>", "Nums": "ARRAY<INT64>"}
FLOATS = {"Score": "FLOAT64", "Scores": "ARRAY<FLOAT64>"}
FLOAT_VALUES = [1e-05, 1.5e-07, 0.1, -0.0, 1e16, 5e-324, 1.7976931348623157e308, float("nan"), float("inf"), 2.5]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(CHARS) for _ in range(rng.randrange(0, 8)))


def _value(rng: random.Random, spanner_type: str):
    if rng.random() < 0.1:
        return None
    return {
        "INT64": lambda: rng.choice([0, 1, -1, 2**53 + 1, 2**63 - 1, -2**63, rng.randrange(-2**63, 2**63)]),
        "STRING": lambda: _text(rng),
        "NUMERIC": lambda: decimal.Decimal(f"{rng.randrange(-10**29, 10**29)}.{rng.randrange(10**9):09d}"),
        "BYTES": lambda: rng.randbytes(rng.randrange(0, 40)),
        "TIMESTAMP": lambda: from_nanos(rng.randrange(0, 4 * 10**18)),
        "DATE": lambda: dt.date(rng.randrange(1, 10000), rng.randrange(1, 13), rng.randrange(1, 29)),
        "BOOL": lambda: rng.random() < 0.5,
        "JSON": lambda: json.dumps({_text(rng): [_text(rng), rng.randrange(10)]}, ensure_ascii=False),
        "ARRAY<STRING>": lambda: [_text(rng), None],
        "ARRAY<INT64>": lambda: [2**63 - 1, None, -5],
        "FLOAT64": lambda: rng.choice(FLOAT_VALUES),
        "ARRAY<FLOAT64>": lambda: [rng.choice(FLOAT_VALUES), None],
    }[spanner_type]()


def _change(rng: random.Random, i: int, types: dict[str, str], streamed: bool) -> Change:
    row = {c: _value(rng, t) for c, t in types.items()}
    row["Id"] = i
    commit = from_nanos(1_700_000_000_000_000_000 + rng.randrange(10**15))
    if not streamed:
        return Change("T", (i,), row, commit, shard=rng.choice([None, 3, [1, 2]]), read_timestamp=commit,
                      column_types=types)
    mod = rng.choice(["INSERT", "UPDATE", "DELETE"])
    old = None if mod == "INSERT" else {c: _value(rng, t) for c, t in types.items() if c != "Id"}
    if mod == "DELETE":
        row = {"Id": i}
    return Change("T", (i,), row, commit, read_timestamp=commit, mod_type=mod, column_types=types,
                  value_capture_type="OLD_AND_NEW_VALUES", old_values=old, server_transaction_id=_text(rng) + "tx",
                  record_sequence=f"{rng.randrange(100):08d}", mod_index=rng.randrange(3),
                  number_of_records_in_transaction=2, number_of_partitions_in_transaction=1, transaction_tag=_text(rng),
                  is_system_transaction=False, partition_token="p" + _text(rng), stream_watermark=commit)


@pytest.mark.parametrize("event_format", ["debezium", "record"])
@pytest.mark.parametrize("floats", [False, True], ids=["no-floats", "floats"])
@pytest.mark.parametrize("streamed", [False, True], ids=["polled", "change-stream"])
def test_keys_and_values_are_pythons_compact_json_byte_for_byte(event_format, floats, streamed):
    rng = random.Random(f"{event_format}{floats}{streamed}")
    types = {**TYPES, **(FLOATS if floats else {})}
    changes = [_change(rng, i, types, streamed) for i in range(300)]
    info = TableInfo(TableId("T"), "", ("Id",), dict(types))
    sink = KafkaSink("127.0.0.1:1", event_format=event_format, database="projects/p/instances/i/databases/d",
                     watcher_id="w", clock=lambda: 1_714_557_600_987_654_321)
    messages = sink.messages(changes, info)
    assert len(messages) == len(changes)
    for change, message in zip(changes, messages, strict=True):
        value = json.loads(message.value)
        assert message.value == PYTHON.encode(value).encode("utf-8")
        assert message.key == PYTHON.encode(json.loads(message.key)).encode("utf-8")
        row = value["values"] if event_format == "record" else (value["after"] or {})
        for column, typed in row.items():
            got = decode_value(types[column], typed)
            want = change.row[column]
            if types[column] == "BYTES" and want is not None:
                want = base64.b64decode(base64.b64encode(want))
            if isinstance(want, float) and want != want:
                assert got != got
            elif isinstance(want, DatetimeWithNanoseconds):
                assert got.rfc3339() == want.rfc3339()
            elif types[column] == "JSON" and want is not None:
                assert json.loads(got) == json.loads(want)
            elif types[column] == "ARRAY<FLOAT64>" and want is not None:
                assert [repr(v) for v in got] == [repr(v) for v in want]
            else:
                assert got == want, (column, got, want)


def test_floats_are_written_as_python_writes_them():
    """orjson writes 1e-05 as 0.00001: a value that may hold a float goes through Python's encoder."""
    value = {"x": [1e-05, 1.5e-07, 2.5, 1e16]}
    assert compact_json.dumps(value) == b'{"x":[1e-05,1.5e-07,2.5,1e+16]}'
    assert compact_json.may_hold_floats({"A": "INT64"}, [1, 2.5]) and not compact_json.may_hold_floats({"A": "STRING"}, 3)
    assert events.message_key({"table": "T", "keys": ["1", 1e-05]}) == b'{"table":"T","key":["1",1e-05]}'
