"""Warehouses for the export tests: changelog rows committed as the job's runs, through the ledger, with delta-rs.

A run is begun in the ledger, its changelog rows appended as the run (Delta's application
transaction), and the rest of its tables committed empty, so the next run can begin: the exports
read only the changelog, and these tests need not wait for the job.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from deltalake import write_deltalake

from watcher.changelog.tables import layout
from watcher.changelog.tables.ledger import Ledger
from watcher.codec import encode_row

SOURCE = ("p", "i", "d")


@dataclass(frozen=True)
class Change:
    """One change as a test writes it: ``commit`` nanoseconds after 2024-05-01T10:00:00Z."""

    table: str
    key: int
    commit: int
    values: Mapping[str, Any] = field(default_factory=dict)
    mod_type: str = "UPSERT"
    source: tuple[str, str, str] = SOURCE
    record_sequence: int = 0
    types: Mapping[str, str] | None = None
    key_columns: tuple[str, ...] = ("Id",)

    @property
    def commit_text(self) -> str:
        return exact(self.commit)

    def keys_json(self) -> str:
        row = self.row()
        return json.dumps({c: row[c] for c in self.key_columns}, separators=(",", ":"))

    def row(self) -> dict[str, Any]:
        types = self.types or {"Id": "INT64", "V": "STRING(MAX)"}
        return encode_row(types, {"Id": self.key, **self.values})

    def change_id(self) -> str:
        return hashlib.sha256(f"{self.table}\x1f{self.keys_json()}\x1f{self.commit_text}".encode()).hexdigest()[:32]


BASE = dt.datetime(2024, 5, 1, 10, tzinfo=dt.UTC)


def exact(nanos: int) -> str:
    """The exact commit text of ``nanos`` after BASE."""
    seconds, fraction = divmod(nanos, 1_000_000_000)
    return (BASE + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.") + f"{fraction:09d}Z"


def delta_row(change: Change, run: int) -> dict[str, Any]:
    seconds, fraction = divmod(change.commit, 1_000_000_000)
    when = BASE + dt.timedelta(seconds=seconds, microseconds=fraction // 1000)
    types = change.types or {"Id": "INT64", "V": "STRING(MAX)"}
    project, instance, database = change.source
    return {"source_project": project, "source_instance": instance, "source_database": database,
            "change_id": change.change_id(), "table_name": change.table, "keys": change.keys_json(),
            "key_columns": list(change.key_columns), "mod_type": change.mod_type,
            "new_values": json.dumps(change.row(), separators=(",", ":")), "old_values": "{}",
            "value_capture_type": "OLD_AND_NEW_VALUES", "column_types": json.dumps(dict(types)),
            "commit_timestamp": when, "commit_nanos": fraction, "commit_date": when.date(),
            "transaction_group": change.commit_text[-16:], "record_sequence": change.record_sequence,
            "number_of_records_in_group": 1, "read_timestamp": exact(change.commit + 1000), "read_method": "cdc",
            "shard": None, "watcher_id": "w", "batch_id": f"b{run}", "run_version": run}


def commit_run(warehouse: str, changes: Sequence[Change]) -> int:
    """Commit ``changes`` as the warehouse's next run; returns its number."""
    ledger = Ledger(warehouse)
    ledger.create_tables()
    run = ledger.begin([f"batch-{ledger.held_version(layout.RUNS.name) + 1}"])
    props = ledger.commit_properties(run)
    for spec in layout.COMMIT_ORDER[1:]:
        rows = [delta_row(c, run.version) for c in changes] if spec is layout.CHANGELOG else []
        write_deltalake(ledger.uri(spec.name), pa.Table.from_pylist(rows, schema=spec.arrow_schema()), mode="append",
                        commit_properties=props)
    return run.version
