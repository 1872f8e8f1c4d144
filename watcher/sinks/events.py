"""A change as a Kafka message: its key, its value in the sink's event format, and its headers.

Every format starts from the change's staging record (:func:`watcher.staging.contract.change_record`),
so values are typed exactly as the staging files and the changelog type them. The formats
(:data:`FORMATS`):

* ``debezium``: Debezium's change-event envelope (:mod:`.debezium`), for existing Debezium consumers;
* ``record``: the staging record itself, one JSON object (:data:`watcher.staging.contract.FIELDS`):
  a staged batch file's line, field for field, so a consumer reads exactly what the changelog reads.

The key is ``{"table": <table>, "key": [<key values as typed JSON, in primary-key order>]}``
(compact JSON), so every change of one key goes to one partition, in the order produced.
A DELETE may be followed by a tombstone (same key, no value, no headers), as Debezium does by
default, so that a compacted topic forgets the key. The headers (:data:`HEADERS`) name the change without parsing the value: ``change_id`` is the
changelog's change id (:func:`watcher.changelog.rules.dedup.change_id` over the key as the
changelog renders it), so a consumer de-duplicates by it exactly as the changelog does.

Example:
    >>> import datetime as dt
    >>> c = Change("Singers", (7,), {"SingerId": 7, "Name": "x"}, dt.datetime(2024, 5, 1, tzinfo=dt.UTC),
    ...            column_types={"SingerId": "INT64", "Name": "STRING"})
    >>> rec = staging_record(c, ["SingerId"], {}, watcher_id="w", batch_id="b", seq=0)
    >>> message_key(rec), change_id(rec)
    (b'{"table":"Singers","key":["7"]}', '90d5704dcac3673ddb0cfc4a2437cc00')
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..changelog.input import Ineligible
from ..changelog.input.spark_json import fast_copied
from ..changelog.input.staged import keys_json
from ..changelog.rules.dedup import change_id as changelog_change_id
from ..errors import ConfigurationError
from ..model import Change
from ..staging import contract
from . import compact_json, debezium
from .topics import SourceNames

#: The header names, in the order they are written.
HEADERS = ("change_id", "commit_timestamp", "table", "mod_type", "event_format")
#: The ``mod_type`` header of a polled row, which cannot tell an INSERT from an UPDATE (the changelog's word for it).
UPSERT = "UPSERT"


@dataclass(frozen=True)
class Origin:
    """Who delivered a batch: the database's names, the change stream (None when polled), the server name."""

    names: SourceNames
    stream: str | None
    server_name: str


@dataclass(frozen=True)
class Event:
    """One message: key, value and headers, and the change's id and table for errors and reports."""

    key: bytes
    value: bytes | None  # None: a tombstone
    headers: tuple[tuple[str, bytes], ...]
    change_id: str

    @property
    def is_delete(self) -> bool:
        return dict(self.headers).get("mod_type") == b"DELETE"

    def tombstone(self) -> Event:
        """The key's tombstone after a delete: no value (a compacted topic then drops the key) and, as
        Debezium's, no headers (so a consumer de-duplicating by ``change_id`` never takes it for the delete)."""
        return Event(self.key, None, (), self.change_id)


#: One format: (change, its staging record, origin, now in nanoseconds) -> the value's JSON object.
Format = Callable[[Change, Mapping[str, Any], Origin, int], Mapping[str, Any]]


def _debezium(change: Change, record: Mapping[str, Any], origin: Origin, now_nanos: int) -> Mapping[str, Any]:
    return debezium.envelope(change, record, origin.names, server_name=origin.server_name, stream=origin.stream,
                             now_nanos=now_nanos)


def _record(change: Change, record: Mapping[str, Any], origin: Origin, now_nanos: int) -> Mapping[str, Any]:
    return record


#: The event formats by name.
FORMATS: Mapping[str, Format] = {"debezium": _debezium, "record": _record}


def check_format(name: str) -> str:
    """``name`` when it is a format of :data:`FORMATS`, else a ConfigurationError listing them."""
    if name not in FORMATS:
        raise ConfigurationError(f"event_format must be one of {', '.join(FORMATS)}, not {name!r}")
    return name


def staging_record(change: Change, key_columns: Sequence[str], types: Mapping[str, str], *, watcher_id: str | None,
                   batch_id: str, seq: int) -> dict[str, Any]:
    """The change's staging record, exactly as a :class:`~watcher.staging.sink.StagingSink` would stage it."""
    return contract.change_record(change, batch_id=batch_id, seq=seq, types=types, key_columns=key_columns,
                                  watcher_id=watcher_id, mod_type=change.mod_type)


def _json(value: Any, floats: bool = True) -> bytes:
    """Compact JSON, non-ASCII kept as UTF-8 (:mod:`.compact_json`; ``floats``: ``value`` may hold a float)."""
    return compact_json.dumps(value, floats=floats)


def message_key(record: Mapping[str, Any], floats: bool = True) -> bytes:
    """The message key: the table and the key values (typed JSON) in primary-key order."""
    return _json({"table": record["table"], "key": record["keys"]}, floats)


def change_id(record: Mapping[str, Any]) -> str:
    """The changelog's change id of a staging record: (table, key as the changelog renders it, commit timestamp,
    version sequence). A key the changelog's fast path cannot render (a FLOAT64 key part) is hashed from its
    compact JSON instead."""
    keys, columns = record["keys"], list(record["key_columns"])
    try:
        text = fast_copied(keys)
        rendered = keys_json(columns, keys, text, record["types"], record["table"]) if text is not None else None
    except Ineligible:
        rendered = None
    if rendered is None:
        rendered = _json(dict(zip(columns, keys, strict=True))).decode("utf-8")
    return changelog_change_id(record["table"], rendered, record["commit_timestamp"], record.get("version_seq"))


def event(change: Change, record: Mapping[str, Any], event_format: str, origin: Origin, now_nanos: int) -> Event:
    """The message of ``change`` in ``event_format`` (``record``: its staging record)."""
    value = FORMATS[event_format](change, record, origin, now_nanos)
    return message(record, value, event_format, compact_json.may_hold_floats(record["types"], record["shard"]))


def message(record: Mapping[str, Any], value: Mapping[str, Any], event_format: str, floats: bool) -> Event:
    """The message of a change whose value is ``value``: key, headers and change id from ``record`` (its staging
    record, or the fields of it these read: table, key_columns, keys, types, commit_timestamp, mod_type,
    version_seq); ``floats``: the key or value may hold a float (:func:`.compact_json.may_hold_floats`)."""
    cid = change_id(record)
    headers = (("change_id", cid.encode("utf-8")), ("commit_timestamp", record["commit_timestamp"].encode("utf-8")),
               *_shared_headers(record["table"], record["mod_type"] or UPSERT, event_format))
    return Event(message_key(record, floats), compact_json.dumps(value, floats=floats), headers, cid)


@functools.lru_cache(maxsize=1024)
def _shared_headers(table: str, mod_type: str, event_format: str) -> tuple[tuple[str, bytes], ...]:
    """The headers after the change's own two (:data:`HEADERS`), which a batch's changes mostly share."""
    return tuple(zip(HEADERS[2:], [text.encode("utf-8") for text in (table, mod_type, event_format)], strict=True))
