"""Debezium's change-event envelope, as its Spanner connector writes it, in JSON without schemas.

An event is ``{"before", "after", "source", "op", "ts_ms", "ts_us", "ts_ns", "transaction"}``:
``op`` is ``c`` (INSERT), ``u`` (UPDATE) or ``d`` (DELETE); ``ts_*`` is when the sink built the
event; ``transaction`` is null (no transaction metadata topic). ``source`` carries Debezium's
common fields (``version``, ``connector`` = ``spanner``, ``name``, ``ts_ms``/``ts_us``/``ts_ns`` =
the commit timestamp, ``snapshot``, ``db``, ``sequence`` = the record sequence) and the Spanner
connector's own (:data:`SPANNER_SOURCE_FIELDS`), null where the capture mode does not know them
(a polled row has no transaction id); two more give what milliseconds and a parsed number lose:
``commit_timestamp`` (RFC 3339, nine fractional digits) and ``record_sequence`` (as Spanner gives it).

Values are typed as the changelog types them (:mod:`watcher.codec`: INT64 and NUMERIC as decimal
text, BYTES as base64, TIMESTAMP to the nanosecond), not as Kafka Connect's JSON converter would
(INT64 as a JSON number loses precision beyond 2**53 in most JSON readers).

What each capture mode gives:

* change streams: the stream's mod type; ``before`` = the key plus the old values the stream's
  value capture type carries (a DELETE's every tracked column with OLD_AND_NEW_VALUES or
  NEW_ROW_AND_OLD_VALUES; the changed columns of an UPDATE), null for an INSERT; ``after`` as read.
* history tables: their mod type; a DELETE's ``before`` is its key.
* polled tables: a poll reads rows, not a log, so it cannot tell an INSERT from an UPDATE: the
  event is an ``u`` (the row as it now stands) with ``before`` null; the changelog classifies the
  row later against the key's previous row.

Example:
    >>> op_of(None), op_of("INSERT"), op_of("DELETE")
    ('u', 'c', 'd')
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import __version__
from ..model import Change, timestamp_nanos
from .topics import SourceNames

#: Debezium's op by mod type; a polled row (no mod type) is an update of what the key held.
OPS: Mapping[str | None, str] = {"INSERT": "c", "UPDATE": "u", "DELETE": "d", None: "u"}
#: What ``source.connector`` says: Debezium consumers tell the Spanner connector's events by it.
CONNECTOR = "spanner"
#: What ``source.version`` says.
VERSION = f"spanner-watcher-{__version__}"
#: The Spanner connector's fields of ``source`` after Debezium's common ones, in its order.
SPANNER_SOURCE_FIELDS = (
    "project_id", "instance_id", "database_id", "change_stream_name", "table", "server_transaction_id",
    "low_watermark", "read_at_timestamp", "number_records_in_transaction", "transaction_tag", "system_transaction",
    "value_capture_type", "partition_token", "mod_number", "is_last_record_in_transaction_in_partition",
    "number_of_partitions_in_transaction",
)


def op_of(mod_type: str | None) -> str:
    """Debezium's ``op`` of a change's mod type (None: a polled row)."""
    return OPS[mod_type.upper() if mod_type is not None else None]


def _millis(ts: Any) -> int | None:
    return timestamp_nanos(ts) // 1_000_000 if ts is not None else None


def _sequence(record_sequence: str | None) -> str | None:
    """The record sequence as Debezium writes it (a number's text: ``00000003`` -> ``3``)."""
    if record_sequence is None:
        return None
    return str(int(record_sequence)) if record_sequence.isdigit() else record_sequence


def source_fields(names: SourceNames, *, server_name: str, stream: str | None) -> dict[str, Any]:
    """The ``source`` block's fields that one batch's changes share, in the block's order; the others are
    None here and are filled per change by :func:`source_of` (so a batch works the shared ones out once)."""
    return {
        "version": VERSION, "connector": CONNECTOR, "name": server_name,
        "ts_ms": None, "snapshot": "false", "db": names.database or "",
        "sequence": None, "ts_us": None, "ts_ns": None,
        "project_id": names.project, "instance_id": names.instance, "database_id": names.database,
        "change_stream_name": stream, "table": None, "server_transaction_id": None,
        "low_watermark": None, "read_at_timestamp": None,
        "number_records_in_transaction": None,
        "transaction_tag": None, "system_transaction": None,
        "value_capture_type": None,
        "partition_token": None, "mod_number": None,
        "is_last_record_in_transaction_in_partition": None,
        "number_of_partitions_in_transaction": None,
        "commit_timestamp": None, "record_sequence": None,
    }


def source_of(shared: Mapping[str, Any], change: Change, commit_timestamp: str) -> dict[str, Any]:
    """The ``source`` block of ``change``: ``shared`` (:func:`source_fields`) with the change's own fields;
    ``commit_timestamp`` is its staging record's text (nine fractional digits)."""
    nanos = timestamp_nanos(change.commit_timestamp)
    out = dict(shared)
    out["ts_ms"], out["ts_us"], out["ts_ns"] = nanos // 1_000_000, nanos // 1_000, nanos
    out["sequence"] = _sequence(change.record_sequence)
    out["table"], out["server_transaction_id"] = change.table, change.server_transaction_id
    out["low_watermark"], out["read_at_timestamp"] = _millis(change.stream_watermark), _millis(change.read_timestamp)
    out["number_records_in_transaction"] = change.number_of_records_in_transaction
    out["transaction_tag"], out["system_transaction"] = change.transaction_tag, change.is_system_transaction
    out["value_capture_type"], out["partition_token"] = change.value_capture_type, change.partition_token
    out["mod_number"] = change.mod_index
    out["number_of_partitions_in_transaction"] = change.number_of_partitions_in_transaction
    out["commit_timestamp"], out["record_sequence"] = commit_timestamp, change.record_sequence
    return out


def source(change: Change, record: Mapping[str, Any], names: SourceNames, *, server_name: str,
           stream: str | None) -> dict[str, Any]:
    """The ``source`` block of ``change`` (``record``: its staging record, for the exact texts)."""
    return source_of(source_fields(names, server_name=server_name, stream=stream), change, record["commit_timestamp"])


def envelope(change: Change, record: Mapping[str, Any], names: SourceNames, *, server_name: str,
             stream: str | None, now_nanos: int, shared: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The event of ``change``; ``record`` is its staging record (values already typed JSON), or the part of it
    the event reads (``mod_type``, ``key_columns``, ``keys``, ``values``, ``old_values``, ``commit_timestamp``);
    ``shared``: the batch's :func:`source_fields` when worked out already."""
    op = op_of(record["mod_type"])
    keys = dict(zip(record["key_columns"], record["keys"], strict=True))
    old = record.get("old_values")
    if op == "d":
        before: dict[str, Any] | None = {**keys, **record["values"], **(old or {})}
    elif op == "u" and old is not None:
        before = {**keys, **old}
    else:
        before = None
    return {
        "before": before,
        "after": None if op == "d" else dict(record["values"]),
        "source": (source(change, record, names, server_name=server_name, stream=stream) if shared is None
                   else source_of(shared, change, record["commit_timestamp"])),
        "op": op,
        "ts_ms": now_nanos // 1_000_000, "ts_us": now_nanos // 1_000, "ts_ns": now_nanos,
        "transaction": None,
    }
