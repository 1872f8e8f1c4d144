"""A tiny test-only change stream reader: Spanner's partition workflow through the official client.

A query without a token names the first partitions; each partition is read from its start;
a child partition is read only after every one of its parents finished. Records come back
as dicts (:func:`read_stream`), and :func:`as_changes` turns them into the
:class:`watcher.model.Change` objects a change-stream watcher emits (one per mod), so tests
of staging and the changelog need not wait for the watcher.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from google.cloud.spanner_v1 import param_types

from watcher.codec import decode_value
from watcher.model import Change

QUERY = ("SELECT ChangeRecord FROM READ_{stream}(start_timestamp => @start, end_timestamp => @end, "
         "partition_token => @token, heartbeat_milliseconds => @heartbeat)")
TYPES = {"start": param_types.TIMESTAMP, "end": param_types.TIMESTAMP, "token": param_types.STRING,
         "heartbeat": param_types.INT64}
#: The fields of a data change record, in the order the client returns them.
DATA_CHANGE_FIELDS = ["commit_timestamp", "record_sequence", "server_transaction_id",
                      "is_last_record_in_transaction_in_partition", "table_name", "column_types", "mods", "mod_type",
                      "value_capture_type", "number_of_records_in_transaction", "number_of_partitions_in_transaction",
                      "transaction_tag", "is_system_transaction"]


def query(db: Any, stream: str, start: Any, end: Any, token: str | None, heartbeat: int = 1000) -> list:
    """The ChangeRecord values of one read of ``stream`` (one partition, or the first query)."""
    with db.snapshot() as snap:
        rows = snap.execute_sql(QUERY.format(stream=stream), params={"start": start, "end": end, "token": token,
                                                                      "heartbeat": heartbeat}, param_types=TYPES)
        return [row[0][0] for row in rows]


def read_stream(db: Any, stream: str, start: Any, end: Any) -> list[dict]:
    """Every data change record in [start, end], partitions read in Spanner's order (children after all parents),
    each with its ``partition_token``."""
    out: list[dict] = []
    finished: set[str] = set()
    waiting: dict[str, tuple] = {}  # token -> (start, parents)
    for record in query(db, stream, start, end, None):
        for cp in record[2]:
            for token, parents in cp[2]:
                waiting[token] = (cp[0], parents)
    while waiting:
        ready = [t for t, (_, parents) in waiting.items() if all(p in finished for p in parents)]
        assert ready, "a child partition whose parents never finish"
        for token in ready:
            part_start, _ = waiting.pop(token)
            for record in query(db, stream, part_start, end, token):
                data, _heartbeats, children = record
                out.extend(as_dict(d) | {"partition_token": token} for d in data)
                for cp in children:
                    for child, parents in cp[2]:
                        if child not in finished and child not in waiting:
                            waiting[child] = (cp[0], parents)
            finished.add(token)
    return out


def as_dict(values: list) -> dict:
    """A data change record (as the client returns it) as a dict; JSON values parsed."""
    record = dict(zip(DATA_CHANGE_FIELDS, values, strict=True))
    record["mods"] = [{"keys": json_value(k), "new_values": json_value(n), "old_values": json_value(o)}
                      for k, n, o in record["mods"]]
    record["column_types"] = [(name, json_value(t), pk, pos) for name, t, pk, pos in record["column_types"]]
    return record


def json_value(value: Any) -> dict:
    """A JSON value of a record (the client's JsonObject, or text) as Python data."""
    if hasattr(value, "serialize"):
        return json.loads(value.serialize())
    return json.loads(value) if isinstance(value, str) else dict(value)


def type_name(code: dict) -> str:
    """A column_types[].type JSON as watcher.codec's type name (``ARRAY<STRING>``)."""
    if code["code"] == "ARRAY":
        return f"ARRAY<{type_name(code['array_element_type'])}>"
    return code["code"]


def as_changes(records: Iterable[dict]) -> list[Change]:
    """One Change per mod, as a change-stream watcher emits them: typed values, the stream's identity and figures.

    ``row`` holds the key and the mod's new values (a DELETE: the key only), ``old_values`` the
    mod's old values (None where the capture type carries none).
    """
    changes = []
    for r in records:
        types = {name: type_name(t) for name, t, _, _ in r["column_types"]}
        key_columns = [name for name, _, pk, pos in sorted(r["column_types"], key=lambda c: c[3]) if pk]
        carries_old = r["value_capture_type"] in ("OLD_AND_NEW_VALUES", "NEW_ROW_AND_OLD_VALUES")
        for index, mod in enumerate(r["mods"]):
            keys = {k: decode_value(types[k], v) for k, v in mod["keys"].items()}
            new = {k: decode_value(types[k], v) for k, v in mod["new_values"].items()}
            old = {k: decode_value(types[k], v) for k, v in mod["old_values"].items()} if carries_old else None
            changes.append(Change(
                r["table_name"], tuple(keys[k] for k in key_columns), {**keys, **new}, r["commit_timestamp"],
                mod_type=r["mod_type"], column_types=types, value_capture_type=r["value_capture_type"],
                old_values=old, server_transaction_id=r["server_transaction_id"],
                record_sequence=r["record_sequence"], mod_index=index,
                number_of_records_in_transaction=r["number_of_records_in_transaction"],
                number_of_partitions_in_transaction=r["number_of_partitions_in_transaction"],
                transaction_tag=r["transaction_tag"], is_system_transaction=r["is_system_transaction"],
                partition_token=r.get("partition_token")))
    return changes
