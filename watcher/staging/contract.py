"""The staging contract: what a staged batch file is, field by field, and how it is named.

Everything that writes staging files (the watchers' :class:`~watcher.staging.sink.StagingSink`,
backfill and reconcile through Spark) and everything that reads them (the changelog job)
takes the format from here, so writers and readers cannot drift apart. Existing staging
folders must keep reading: a change to the fields, their order or their values is a new
:data:`STAGING_FORMAT`.

**Files.** ``<staging>/table=<T>/<batch_id>.jsonl`` (:func:`staged_name`): ``<T>`` is the
table name with every character outside ``[A-Za-z0-9_]`` replaced by ``_``
(:func:`table_folder`; several tables may share a folder, the records name their table).
A file is UTF-8 text, one compact JSON object (a *record*) per line, each line ending in a
newline (:func:`batch_text`). Files appear whole (written aside, then renamed), and names not
ending in :data:`BATCH_SUFFIX` (temporary files, reports) are not batches.

**Versions.** A source that logs every version of a row (history tables) may record several
versions of one key at one commit timestamp, and versions holding only the written columns.
Such a record carries the :data:`VERSION_FIELDS` after the format-1 fields and is written as
``v`` = :data:`VERSIONS_FORMAT` (so that a reader of format 1 alone sets it aside instead of
merging versions it cannot tell apart); every other record stays exactly format 1. A reader of
this package reads both (:data:`READ_FORMAT`).

**Change streams.** A change read from a change stream (``read_method`` ``change_stream``)
carries the :data:`STREAM_FIELDS` after the version fields, and is written as ``v`` =
:data:`STREAM_FORMAT`: the mod's old values, its identity (``server_transaction_id``,
``record_sequence``, ``mod_index``) and its transaction's figures. Its ``mod_type`` is the
stream's, and its ``value_capture_type`` the stream's (:data:`STREAM_CAPTURE_TYPES`), which
says what ``values`` and ``old_values`` hold (:data:`PARTIAL_CAPTURE_TYPES`,
:data:`OLD_VALUES_CAPTURE_TYPES`). One mod is one row version, so a stream record's identity
and (table, keys, commit timestamp) name the same change.

**Invariants of a batch file.**

* it holds one table's records, all with the batch id of its file name;
* their ``seq`` numbers are exactly 0..n-1, in line order;
* ``v`` is at most the reader's :data:`STAGING_FORMAT` (a reader sets newer files aside);
* the fields of :data:`FIELDS` marked ``required`` are present and not null, ``commit_timestamp``
  has nine fractional digits (:data:`TIMESTAMP_PATTERN`), ``values`` and ``types`` are objects;
* a batch id is unique (it names the file) and file-name safe (:data:`BATCH_ID_PATTERN`);
  the sink's start with the compact first commit timestamp (:func:`batch_id`), backfill's and
  reconcile's with the compact read timestamp and the method (:func:`snapshot_batch_prefix`).

A batch may be staged twice (a crash between staging and checkpoint): the changelog job
de-duplicates by (table, keys, commit timestamp).

Example:
    >>> r = record(batch_id="b1", seq=0, table="Singers", key_columns=["SingerId"], keys=["7"],
    ...            commit_timestamp="2024-05-01T10:00:00.123456789Z", values={"SingerId": "7"},
    ...            types={"SingerId": "INT64"}, watcher_id="w")
    >>> list(r) == list(RECORD_FIELDS)
    True
    >>> to_line(r)[:40]
    '{"v":1,"batch_id":"b1","seq":0,"table":"'
"""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..codec import encode_value, timestamp_text
from ..errors import UnknownColumnTypeError
from ..model import NEW_ROW, NEW_VALUES, Change

#: Format version written in every record (``v``), so a later reader can tell what it reads.
STAGING_FORMAT = 1
#: The format of a record that carries the :data:`VERSION_FIELDS` (format 1 plus those fields).
VERSIONS_FORMAT = 2
#: The format of a change-stream record: format 2 plus the :data:`STREAM_FIELDS`.
STREAM_FORMAT = 3
#: The newest format this package reads (it reads every older one too).
READ_FORMAT = STREAM_FORMAT

#: read_method of a record read from a change stream.
CHANGE_STREAM = "change_stream"
#: The value capture types of Spanner change streams besides NEW_ROW and NEW_VALUES.
OLD_AND_NEW_VALUES, NEW_ROW_AND_OLD_VALUES = "OLD_AND_NEW_VALUES", "NEW_ROW_AND_OLD_VALUES"
#: What a change stream's records hold, by its value capture type (Spanner's four).
STREAM_CAPTURE_TYPES = (OLD_AND_NEW_VALUES, NEW_VALUES, NEW_ROW, NEW_ROW_AND_OLD_VALUES)
#: What a record's values hold (its ``value_capture_type``): every column, or the written ones
#: only (history tables), or a change stream's type.
VALUE_CAPTURE_TYPES = (NEW_ROW, NEW_VALUES, OLD_AND_NEW_VALUES, NEW_ROW_AND_OLD_VALUES)
#: Capture types whose values hold only the key and the columns written (an INSERT or UPDATE
#: then needs the key's previous row to be whole; a DELETE holds the key only in every type).
PARTIAL_CAPTURE_TYPES = (NEW_VALUES, OLD_AND_NEW_VALUES)
#: Capture types whose records carry old values (the others' ``old_values`` are null).
OLD_VALUES_CAPTURE_TYPES = (OLD_AND_NEW_VALUES, NEW_ROW_AND_OLD_VALUES)

#: The JSON form of each field kind (what :data:`FIELDS` refers to).
KINDS: Mapping[str, str] = {
    "int32": "JSON integer, small",
    "int64": "JSON integer",
    "string": "JSON string",
    "timestamp": "JSON string: RFC 3339 in UTC with nine fractional digits",
    "string[]": "JSON array of strings",
    "typed[]": "JSON array of typed-JSON values (watcher.codec)",
    "json": "any JSON value",
    "typed{}": "JSON object: column name -> typed-JSON value (watcher.codec)",
    "string{}": "JSON object: column name -> string",
    "bool": "JSON true or false",
}


@dataclass(frozen=True)
class Field:
    """One field of a staging record.

    Attributes:
        name: the JSON key.
        kind: its JSON form, a key of :data:`KINDS`.
        required: a reader rejects a record where it is missing or null.
        meaning: what it holds.
    """

    name: str
    kind: str
    required: bool
    meaning: str


#: The fields of a record, in the order they are written.
FIELDS: tuple[Field, ...] = (
    Field("v", "int32", True, "staging format version (STAGING_FORMAT; VERSIONS_FORMAT with the version fields)"),
    Field("batch_id", "string", True, "the batch (one poll, or one Spark task): its file name without the suffix"),
    Field("seq", "int64", True, "position in the batch, 0..n-1"),
    Field("table", "string", True, "table name as Spanner spells it; one table per batch"),
    Field("key_columns", "string[]", True, "primary key columns in key order"),
    Field("keys", "typed[]", True, "the primary key's values, in key_columns order"),
    Field("commit_timestamp", "timestamp", True, "commit timestamp of the row version (backfill of a row "
          "without one, and reconcile's deletes: the read timestamp)"),
    Field("read_timestamp", "timestamp", False, "strong read timestamp of the poll or snapshot; null if unknown"),
    Field("shard", "json", False, "shard value of the poll loop (shard_label); null when unsharded"),
    Field("watcher_id", "string", False, "who staged it: the sink's watcher id, or backfill's/reconcile's"),
    Field("read_method", "string", False, "cdc, backfill or reconcile (change_stream: format 3)"),
    Field("mod_type", "string", False, "INSERT/UPDATE/DELETE when the source knows it (history tables, "
          "reconcile's deletes); null for polled rows"),
    Field("values", "typed{}", True, "the full row as read, every column"),
    Field("types", "string{}", True, "column -> Spanner type of each value as its read's result set named it "
          "(STRING, ARRAY<INT64>; backfill and reconcile: as INFORMATION_SCHEMA prints it, e.g. STRING(MAX)); "
          "every column of values has one"),
)
#: The fields a record of :data:`VERSIONS_FORMAT` adds after :data:`FIELDS` (absent from format-1 records).
VERSION_FIELDS: tuple[Field, ...] = (
    Field("version_seq", "int64", False, "order of this version among the versions of its key at one commit "
          "timestamp (a history table's Seq); part of the change's identity"),
    Field("value_capture_type", "string", False, "NEW_ROW: values hold every column; NEW_VALUES: only the "
          "key and the written columns (the changelog takes the others from the key's previous row)"),
)
#: The fields a record of :data:`STREAM_FORMAT` adds after :data:`VERSION_FIELDS` (a change read
#: from a change stream; absent from records of formats 1 and 2).
STREAM_FIELDS: tuple[Field, ...] = (
    Field("old_values", "typed{}", False, "the values before the mod, typed by types: OLD_AND_NEW_VALUES and "
          "NEW_ROW_AND_OLD_VALUES: an UPDATE's changed columns, a DELETE's every tracked column, {} for an "
          "INSERT; null where the value capture type carries no old values (NEW_ROW, NEW_VALUES)"),
    Field("server_transaction_id", "string", True, "Spanner's id of the transaction; with record_sequence and "
          "mod_index the change's identity"),
    Field("record_sequence", "string", True, "the data change record's sequence within its transaction, as the "
          "stream gives it (orders the transaction's records)"),
    Field("mod_index", "int64", True, "the mod's position among the mods of its data change record, from 0"),
    Field("number_of_records_in_transaction", "int64", False, "data change records the transaction wrote, over "
          "all partitions"),
    Field("number_of_partitions_in_transaction", "int64", False, "partitions that hold records of the transaction"),
    Field("transaction_tag", "string", False, "the transaction's tag as the writer set it; \"\" when none"),
    Field("is_system_transaction", "bool", False, "Spanner itself ran the transaction (e.g. a TTL delete)"),
    Field("partition_token", "string", False, "the change stream partition it was read from (two partitions may "
          "return one change; not part of its identity)"),
)
#: The field names, in record order.
RECORD_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS)
#: The field names of a record of :data:`VERSIONS_FORMAT`, in record order.
VERSIONS_RECORD_FIELDS: tuple[str, ...] = RECORD_FIELDS + tuple(f.name for f in VERSION_FIELDS)
#: The field names of a record of :data:`STREAM_FORMAT`, in record order.
STREAM_RECORD_FIELDS: tuple[str, ...] = VERSIONS_RECORD_FIELDS + tuple(f.name for f in STREAM_FIELDS)
#: The fields a reader requires (present, not null).
REQUIRED_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.required)
#: The fields a reader requires of a record of :data:`STREAM_FORMAT` besides :data:`REQUIRED_FIELDS`.
STREAM_REQUIRED_FIELDS: tuple[str, ...] = tuple(f.name for f in STREAM_FIELDS if f.required)

#: How a commit or read timestamp is written (nine fractional digits, UTC).
TIMESTAMP_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$"

#: How every table folder's name begins.
TABLE_FOLDER_PREFIX = "table="
#: How every batch file's name ends.
BATCH_SUFFIX = ".jsonl"
#: Batch files under a staging folder, relative to it.
BATCH_GLOB = f"{TABLE_FOLDER_PREFIX}*/*{BATCH_SUFFIX}"
#: A batch's name (``table=<T>/<file>``) at the end of a path or URI.
BATCH_NAME_PATTERN = rf"({TABLE_FOLDER_PREFIX}[^/]*/[^/]*)$"
#: What a batch id may consist of (it is a file name).
BATCH_ID_PATTERN = r"^[A-Za-z0-9_.-]+$"

_UNSAFE = re.compile(r"[^A-Za-z0-9_]")
_BATCH_NAME = re.compile(BATCH_NAME_PATTERN)
_BATCH_ID = re.compile(BATCH_ID_PATTERN)


def table_folder(table: str) -> str:
    """The staging folder name of a table.

    >>> table_folder("Singers"), table_folder("sales.Orders-2")
    ('table=Singers', 'table=sales_Orders_2')
    """
    return TABLE_FOLDER_PREFIX + _UNSAFE.sub("_", table)


def staged_name(table: str, batch_id: str) -> str:
    """A batch file's name relative to the staging folder (its identity for the changelog job).

    >>> staged_name("Singers", "20240501T100000.000000000Z-ab12")
    'table=Singers/20240501T100000.000000000Z-ab12.jsonl'
    """
    return f"{table_folder(table)}/{batch_id}{BATCH_SUFFIX}"


def batch_name(uri: str) -> str:
    """A batch's identity, ``table=<T>/<file name>``, from its path or URI (wherever staging lives).

    >>> batch_name("file:/s/table=Singers/20240501T100000.123456789Z-ab12.jsonl")
    'table=Singers/20240501T100000.123456789Z-ab12.jsonl'
    """
    match = _BATCH_NAME.search(uri)
    return match.group(1) if match else uri.rsplit("/", 1)[-1]


def split_batch_name(name: str) -> tuple[str, str]:
    """``(table folder, batch id)`` of a batch name or URI: the inverse of :func:`staged_name`.

    >>> split_batch_name("s3a://b/s/table=Singers/b-1.jsonl")
    ('table=Singers', 'b-1')

    Raises:
        ValueError: ``name`` is not a batch file's name.
    """
    folder, _, file = batch_name(name).rpartition("/")
    if not folder.startswith(TABLE_FOLDER_PREFIX) or not file.endswith(BATCH_SUFFIX):
        raise ValueError(f"not a staging batch file name (table=<T>/<batch>{BATCH_SUFFIX}): {name!r}")
    return folder, file[:-len(BATCH_SUFFIX)]


def temp_name(batch_id: str) -> str:
    """The hidden name a batch is written under before its rename (no reader lists it).

    >>> temp_name("b-1")
    '.b-1.tmp'
    """
    return f".{batch_id}.tmp"


def is_batch_id(text: str) -> bool:
    """Whether ``text`` is a valid batch id (:data:`BATCH_ID_PATTERN`).

    >>> is_batch_id("20240501T100000.000000000Z-ab12"), is_batch_id("a/b")
    (True, False)
    """
    return bool(_BATCH_ID.match(text))


def compact_timestamp(ts: str | dt.datetime) -> str:
    """A timestamp as the file-name-safe text batch ids begin with (sorts like the timestamp).

    >>> compact_timestamp("2024-05-01T10:00:00.123456789Z")
    '20240501T100000.123456789Z'
    """
    return _timestamp(ts).replace(":", "").replace("-", "")


def batch_id(first_commit: str | dt.datetime, unique: str | None = None) -> str:
    """The sink's id of a batch: its first commit timestamp, compact, and a unique part (a random uuid).

    >>> batch_id("2024-05-01T10:00:00.123456789Z", "ab12")
    '20240501T100000.123456789Z-ab12'
    """
    return f"{compact_timestamp(first_commit)}-{unique if unique is not None else uuid.uuid4().hex}"


def snapshot_batch_prefix(read_timestamp: str | dt.datetime, method: str, unique: str | None = None) -> str:
    """The batch id prefix of one backfill or reconcile run (each Spark task adds :func:`task_batch_id`).

    >>> snapshot_batch_prefix("2024-05-01T10:00:00.000000000Z", "backfill", "ab12")
    '20240501T100000.000000000Z-backfill-ab12'
    """
    return f"{compact_timestamp(read_timestamp)}-{method}-{unique if unique is not None else uuid.uuid4().hex[:12]}"


def task_batch_id(prefix: str, index: int, step: str = "p") -> str:
    """The batch id of one Spark task of a run: ``step`` p reads a partition, r restages for reconcile.

    >>> task_batch_id("20240501T100000.000000000Z-backfill-ab12", 3)
    '20240501T100000.000000000Z-backfill-ab12-p00003'
    """
    return f"{prefix}-{step}{index:05d}"


def shard_label(shard: Any) -> Any:
    """A shard value as JSON: scalars as they are, lists element-wise, anything else as its text.

    >>> shard_label(3), shard_label((1, "a")), shard_label(b"x")
    (3, [1, 'a'], "b'x'")
    """
    if shard is None or isinstance(shard, (bool, int, float, str)):
        return shard
    if isinstance(shard, (list, tuple)):
        return [shard_label(v) for v in shard]
    return str(shard)


def encode_keys(types: Mapping[str, str], key_columns: Sequence[str], keys: Sequence[Any]) -> list[Any]:
    """The ``keys`` field: key values as typed JSON, in key order (every key column needs a type).

    >>> encode_keys({"Id": "INT64", "Day": "DATE"}, ["Id", "Day"], [2**62, dt.date(2024, 5, 1)])
    ['4611686018427387904', '2024-05-01']
    """
    return [encode_value(types[k], v) for k, v in zip(key_columns, keys, strict=True)]


def encode_row(types: Mapping[str, str], row: Mapping[str, Any], table: str = "?") -> dict[str, Any]:
    """The ``values`` field: every column as typed JSON. A column without a type, or of a
    type with no typed-JSON form, is an error naming ``table`` and the column (never a guess).

    >>> encode_row({"B": "BYTES(MAX)", "X": "INT64"}, {"B": b"hi", "X": 1})
    {'B': 'aGk=', 'X': '1'}
    >>> encode_row({"B": "BYTES"}, {"B": b"hi", "X": 1}, "T")
    Traceback (most recent call last):
    ...
    watcher.errors.UnknownColumnTypeError: Cannot stage column X of table T: its type is unknown (the change does not say what it was read as)
    """
    out = {}
    for column, value in row.items():
        spanner_type = types.get(column)
        if spanner_type is None:
            raise UnknownColumnTypeError(table, column)
        try:
            out[column] = encode_value(spanner_type, value)
        except (TypeError, ValueError, AttributeError) as exc:
            raise UnknownColumnTypeError(table, column, f"its value {value!r} is not a {spanner_type}: {exc}") from exc
    return out


@dataclass(frozen=True)
class StreamInfo:
    """What a change-stream record adds (:data:`STREAM_FIELDS`); ``old_values`` already typed JSON."""

    server_transaction_id: str
    record_sequence: str
    mod_index: int
    old_values: Mapping[str, Any] | None = None
    number_of_records_in_transaction: int | None = None
    number_of_partitions_in_transaction: int | None = None
    transaction_tag: str | None = None
    is_system_transaction: bool | None = None
    partition_token: str | None = None

    def fields(self) -> dict[str, Any]:
        """The :data:`STREAM_FIELDS` by name."""
        out = {f.name: getattr(self, f.name) for f in STREAM_FIELDS}
        out["old_values"] = dict(self.old_values) if self.old_values is not None else None
        return out


def record(*, batch_id: str, seq: int, table: str, key_columns: Sequence[str], keys: Sequence[Any],
           commit_timestamp: str | dt.datetime, values: Mapping[str, Any], types: Mapping[str, str],
           read_timestamp: str | dt.datetime | None = None, shard: Any = None, watcher_id: str | None = None,
           read_method: str = "cdc", mod_type: str | None = None, version_seq: int | None = None,
           value_capture_type: str | None = None, stream: StreamInfo | None = None) -> dict[str, Any]:
    """One record, its fields in :data:`RECORD_FIELDS` order; ``keys`` and ``values`` already typed JSON.

    Timestamps may be given as datetimes (written with nine fractional digits), ``shard`` as
    the poll loop's value (written as :func:`shard_label`). With ``version_seq`` or
    ``value_capture_type`` the record is of :data:`VERSIONS_FORMAT` (both fields written);
    with ``stream`` of :data:`STREAM_FORMAT` (a change stream's capture type is required then).

    >>> r = record(batch_id="b", seq=1, table="T", key_columns=["Id"], keys=["1"], values={"Id": "1"},
    ...            types={"Id": "INT64"}, commit_timestamp=dt.datetime(2024, 5, 1, tzinfo=dt.UTC), shard=(1, 2))
    >>> r["v"], r["commit_timestamp"], r["shard"], r["read_method"]
    (1, '2024-05-01T00:00:00.000000000Z', [1, 2], 'cdc')
    >>> v = record(batch_id="b", seq=0, table="T", key_columns=["Id"], keys=["1"], values={"Id": "1"},
    ...            types={"Id": "INT64"}, commit_timestamp="2024-05-01T00:00:00.000000000Z", version_seq=2)
    >>> v["v"], v["version_seq"], v["value_capture_type"]
    (2, 2, 'NEW_ROW')
    >>> s = record(batch_id="b", seq=0, table="T", key_columns=["Id"], keys=["1"], values={"Id": "1"},
    ...            types={"Id": "INT64"}, commit_timestamp="2024-05-01T00:00:00.000000000Z", mod_type="DELETE",
    ...            read_method=CHANGE_STREAM, value_capture_type=NEW_ROW, stream=StreamInfo("tx1", "00000003", 0))
    >>> s["v"], s["server_transaction_id"], s["record_sequence"], s["mod_index"], s["old_values"]
    (3, 'tx1', '00000003', 0, None)
    """
    versioned = version_seq is not None or value_capture_type is not None or stream is not None
    if value_capture_type is not None and value_capture_type not in VALUE_CAPTURE_TYPES:
        raise ValueError(f"value_capture_type must be one of {', '.join(VALUE_CAPTURE_TYPES)}, not {value_capture_type!r}")
    if stream is not None and value_capture_type not in STREAM_CAPTURE_TYPES:
        raise ValueError(f"a change-stream record's value_capture_type must be one of {', '.join(STREAM_CAPTURE_TYPES)}, "
                         f"not {value_capture_type!r}")
    version = STREAM_FORMAT if stream is not None else VERSIONS_FORMAT if versioned else STAGING_FORMAT
    given = {
        "v": version, "batch_id": batch_id, "seq": seq, "table": table, "key_columns": list(key_columns),
        "keys": list(keys), "commit_timestamp": _timestamp(commit_timestamp),
        "read_timestamp": _timestamp(read_timestamp) if read_timestamp is not None else None,
        "shard": shard_label(shard), "watcher_id": watcher_id, "read_method": read_method, "mod_type": mod_type,
        "values": dict(values), "types": dict(types),
        "version_seq": version_seq, "value_capture_type": value_capture_type or NEW_ROW,
        **(stream.fields() if stream is not None else {}),
    }
    names = {STREAM_FORMAT: STREAM_RECORD_FIELDS, VERSIONS_FORMAT: VERSIONS_RECORD_FIELDS}.get(version, RECORD_FIELDS)
    return {name: given[name] for name in names}


def stream_info(change: Change, types: Mapping[str, str]) -> StreamInfo | None:
    """The change-stream fields of ``change`` (its old values typed JSON by ``types``); None
    for a change that was not read from a change stream (no ``server_transaction_id``)."""
    if change.server_transaction_id is None:
        return None
    if change.record_sequence is None or change.mod_index is None:
        raise ValueError(f"a change-stream change of table {change.table} needs record_sequence and mod_index "
                         f"besides server_transaction_id (its identity)")
    old = encode_row(types, change.old_values, change.table) if change.old_values is not None else None
    return StreamInfo(change.server_transaction_id, change.record_sequence, change.mod_index, old,
                      change.number_of_records_in_transaction, change.number_of_partitions_in_transaction,
                      change.transaction_tag, change.is_system_transaction, change.partition_token)


def change_record(change: Change, *, batch_id: str, seq: int, types: Mapping[str, str], key_columns: Sequence[str],
                  watcher_id: str | None, read_method: str | None = None, mod_type: str | None = None) -> dict[str, Any]:
    """The record of a change a watcher delivered, typed by the change's own ``column_types``
    (what its result set said), or by ``types`` for a change that does not carry them.
    The record's ``types`` names exactly the columns of its values (and of its old values); it
    has the :data:`VERSION_FIELDS` when the change carries a version sequence or a value capture
    type, and the :data:`STREAM_FIELDS` when it was read from a change stream (it has a
    ``server_transaction_id``; ``read_method`` is then ``change_stream`` unless given, else ``cdc``).

    >>> c = Change("T", (7,), {"Id": 7, "Name": "x"}, dt.datetime(2024, 5, 1, tzinfo=dt.UTC), None, None)
    >>> r = change_record(c, batch_id="b", seq=0, types={"Id": "INT64", "Name": "STRING(MAX)"},
    ...                   key_columns=["Id"], watcher_id="w")
    >>> r["keys"], r["values"]
    (['7'], {'Id': '7', 'Name': 'x'})
    """
    if change.column_types:
        types = change.column_types
    values = encode_row(types, change.row, change.table)
    stream = stream_info(change, types)
    # Key columns are always in the row, except a history DELETE's row holds only them anyway.
    row_types = {c: types[c] for c in change.row}
    old_types = {c: types[c] for c in change.old_values or {} if c not in row_types}
    key_types = {k: types[k] for k in key_columns if k in types}
    if read_method is None:
        read_method = CHANGE_STREAM if stream is not None else "cdc"
    return record(batch_id=batch_id, seq=seq, table=change.table, key_columns=key_columns,
                  keys=encode_keys({**key_types, **row_types}, key_columns, change.keys),
                  commit_timestamp=change.commit_timestamp, read_timestamp=change.read_timestamp, shard=change.shard,
                  watcher_id=watcher_id, read_method=read_method, mod_type=mod_type, values=values,
                  types={**row_types, **old_types, **key_types},
                  version_seq=change.version_seq, value_capture_type=change.value_capture_type, stream=stream)


def to_line(rec: Mapping[str, Any]) -> str:
    """A record as its line (compact JSON, non-ASCII kept as UTF-8), without the newline.

    >>> to_line({"v": 1, "table": "Zoë"})
    '{"v":1,"table":"Zoë"}'
    """
    return json.dumps(rec, separators=(",", ":"), ensure_ascii=False)


def batch_text(records: Iterable[Mapping[str, Any]]) -> str:
    """A batch file's whole text: one line per record, each ending in a newline.

    >>> batch_text([{"seq": 0}, {"seq": 1}])
    '{"seq":0}\\n{"seq":1}\\n'
    """
    return "".join(to_line(r) + "\n" for r in records)


def _timestamp(ts: str | dt.datetime) -> str:
    return ts if isinstance(ts, str) else timestamp_text(ts)
