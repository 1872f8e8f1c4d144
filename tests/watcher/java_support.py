"""Helpers of the Java handover tests: the shard cases, a table to watch, writers and our watcher's run.

Kept beside test_java_handover.py so that the test module reads as the scenarios only.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import time
from collections.abc import Sequence
from typing import Any

from google.cloud import spanner
from google.cloud.spanner_v1 import param_types

from tests.watcher.core_support import Collector
from watcher import FixedShardProvider, SpannerCommitTimestampRepository, TableWatcher

UTC = dt.UTC
TABLE = "Handover"
CHECKPOINTS = "LAST_SEEN_COMMIT_TIMESTAMPS"
#: Poll interval of both watchers (seconds): short, so each scenario takes a few seconds.
POLL_SECONDS = 0.1


@dataclasses.dataclass(frozen=True)
class ShardCase:
    """One shard provider both libraries are given.

    ``column_type`` is the shard column's Spanner type; ``shard`` the provider's value (a list:
    an array shard); ``inside`` the column values of rows the provider selects (cycled),
    ``outside`` one it does not. ``param_type`` is the element (or scalar) type when the Python
    value does not tell it; ``java_type`` the type name the Java program gets.
    """

    id: str
    column_type: str | None = None
    shard: Any = None
    inside: tuple[Any, ...] = ()
    outside: Any = None
    param_type: Any = None
    java_type: str | None = None

    def provider(self) -> FixedShardProvider | None:
        if self.column_type is None:
            return None
        return FixedShardProvider("Shard", self.shard, value_type=self.param_type)

    def ddl(self) -> str:
        shard = f"Shard {self.column_type}, " if self.column_type else ""
        return (f"CREATE TABLE {TABLE} (Id INT64 NOT NULL, {shard}Name STRING(MAX), "
                "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)")

    def java_shard(self) -> dict[str, Any]:
        """watch_config's shard arguments."""
        if self.column_type is None:
            return {}
        return {"shard_column": "Shard", "shard": self.shard, "shard_type": self.java_type}


_T0 = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
_T1 = dt.datetime(2024, 5, 6, 7, 8, 9, 120000, tzinfo=UTC)
_T2 = dt.datetime(2025, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)
#: The BYTES shard as our client wants it: base64 text (the client sends it as is).
_B1, _B2, _B3 = (base64.b64encode(b) for b in (b"\x00\x01", b"eu", b"\xff"))

CASES = (
    ShardCase("none"),
    ShardCase("int64", "INT64", 7, (7,), 8),
    ShardCase("string", "STRING(MAX)", "eu", ("eu",), "us"),
    ShardCase("timestamp", "TIMESTAMP", _T1, (_T1,), _T0),
    ShardCase("bytes", "BYTES(MAX)", _B1, (_B1,), _B2),
    ShardCase("numeric", "NUMERIC", decimal.Decimal("2.5"), (decimal.Decimal("2.5"),), decimal.Decimal("3")),
    ShardCase("int64-array", "INT64", [-1, 0, 1], (-1, 0, 1), 2),
    ShardCase("string-array", "STRING(MAX)", ["eu", "us"], ("eu", "us"), "ap"),
    ShardCase("timestamp-array", "TIMESTAMP", [_T0, _T1, _T2], (_T0, _T1, _T2), dt.datetime(2020, 1, 1, tzinfo=UTC)),
    ShardCase("bool-array", "BOOL", [True], (True,), False),
    ShardCase("float64-array", "FLOAT64", [1.0, 0.1, 1e20], (1.0, 0.1, 1e20), 2.0),
    ShardCase("date-array", "DATE", [dt.date(2024, 1, 2), dt.date(2024, 12, 31)],
              (dt.date(2024, 1, 2), dt.date(2024, 12, 31)), dt.date(2000, 1, 1)),
    ShardCase("bytes-array", "BYTES(MAX)", [_B1, _B2], (_B1, _B2), _B3, param_types.BYTES, "ARRAY<BYTES>"),
    ShardCase("numeric-array", "NUMERIC", [decimal.Decimal("1.5"), decimal.Decimal("-2")],
              (decimal.Decimal("1.5"), decimal.Decimal("-2")), decimal.Decimal("0")),
)


def java_shard_value(case: ShardCase) -> Any:
    """The shard value for the Java program: BYTES as the raw bytes (the program gets them base64'd once)."""
    if case.column_type == "BYTES(MAX)":
        return [base64.b64decode(v) for v in case.shard] if isinstance(case.shard, list) else base64.b64decode(case.shard)
    return case.shard


@dataclasses.dataclass
class Written:
    """Rows written so far, by key: their commit timestamps; and which of them the shard selects."""

    selected: dict[int, dt.datetime] = dataclasses.field(default_factory=dict)
    others: dict[int, dt.datetime] = dataclasses.field(default_factory=dict)


def write_round(db: Any, case: ShardCase, first_id: int, written: Written) -> dict[int, dt.datetime]:
    """Three selected rows in one transaction (one commit timestamp), a row outside the shard, then
    one selected row alone; returns the selected rows' commit timestamps by key."""
    columns = ["Id", "Name", "Ts"] + (["Shard"] if case.column_type else [])

    def row(key: int, shard: Any) -> list[Any]:
        return [key, f"name-{key}", spanner.COMMIT_TIMESTAMP] + ([shard] if case.column_type else [])

    inside = [case.inside[i % len(case.inside)] if case.inside else None for i in range(4)]
    group = [first_id, first_id + 1, first_id + 2]
    out = first_id + 3
    alone = first_id + 4
    round_rows: dict[int, dt.datetime] = {}
    with db.batch() as batch:
        batch.insert(TABLE, columns, [row(k, inside[i]) for i, k in enumerate(group)])
    round_rows.update(dict.fromkeys(group, batch.committed))
    if case.column_type:
        with db.batch() as batch:
            batch.insert(TABLE, columns, [row(out, case.outside)])
        written.others[out] = batch.committed
    else:  # without a shard every row is selected
        with db.batch() as batch:
            batch.insert(TABLE, columns, [row(out, None)])
        round_rows[out] = batch.committed
    with db.batch() as batch:
        batch.insert(TABLE, columns, [row(alone, inside[3])])
    round_rows[alone] = batch.committed
    written.selected.update(round_rows)
    return round_rows


def checkpoint_rows(db: Any) -> list[tuple[Any, ...]]:
    """The checkpoint table's rows for TABLE: (SHARD_ID_* ..., LAST_SEEN_COMMIT_TIMESTAMP)."""
    sql = (f"SELECT SHARD_ID_BOOL, SHARD_ID_BYTES, SHARD_ID_DATE, SHARD_ID_FLOAT64, SHARD_ID_INT64, SHARD_ID_STRING, "
           f"SHARD_ID_TIMESTAMP, LAST_SEEN_COMMIT_TIMESTAMP FROM {CHECKPOINTS} WHERE TABLE_NAME = @t")
    with db.snapshot() as snap:
        return [tuple(r) for r in snap.execute_sql(sql, params={"t": TABLE}, param_types={"t": param_types.STRING})]


def run_ours(db: Any, case: ShardCase, expect: int, *, initial_timestamp: dt.datetime | None = None,
             settle_polls: int = 3) -> list[tuple[int, dt.datetime]]:
    """Run our TableWatcher (the Java-compatible checkpoint table, the case's shard provider) until it
    delivered ``expect`` changes and ``settle_polls`` more polls brought nothing; returns (key, commit
    timestamp) in delivery order."""
    collector = Collector()
    watcher = TableWatcher(db, TABLE, shard_provider=case.provider(), poll_interval=POLL_SECONDS,
                           checkpoints=SpannerCommitTimestampRepository(db), initial_timestamp=initial_timestamp)
    watcher.add_callback(collector)
    with watcher:
        if expect:
            collector.wait_for(expect, timeout=8)
        time.sleep(settle_polls * POLL_SECONDS)
        if watcher.failure is not None:
            raise AssertionError(f"our watcher failed: {watcher.failure}")
    return [(c.keys[0], c.commit_timestamp) for c in collector.changes]


def as_delivered(rows: dict[int, dt.datetime]) -> list[tuple[int, dt.datetime]]:
    """Rows in the order a watcher delivers them: by commit timestamp, then key."""
    return sorted(rows.items(), key=lambda kv: (kv[1], kv[0]))


def java_delivered(changes: Sequence[dict[str, Any]]) -> list[tuple[int, str]]:
    """The Java program's changes as (key, commit timestamp text)."""
    return [(c["keys"][0], c["commit_timestamp"]) for c in changes]
