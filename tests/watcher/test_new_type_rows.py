"""A table keyed by UUID with FLOAT32, INTERVAL and TOKENLIST columns, watched end to end.

LIMIT cuts through rows sharing one commit timestamp, so the poll continues after a UUID
key; every change carries its values as the client returns them (``uuid.UUID``,
single-precision floats, ``Interval``) with their column types, and stages exactly.
"""

from __future__ import annotations

import json
import uuid

from google.cloud.spanner_v1 import Interval

from tests.watcher.core_support import Collector, insert
from watcher import InMemoryCommitTimestampRepository, RetryPolicy, TableWatcher
from watcher.codec import decode_value
from watcher.staging import contract

DDL = ("CREATE TABLE Things (Id UUID NOT NULL, Score FLOAT32, Span INTERVAL, Ids ARRAY<UUID>, Title STRING(MAX), "
       "Title_Tokens TOKENLIST AS (TOKENIZE_FULLTEXT(Title)) HIDDEN, "
       "Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)")


def test_every_row_is_delivered_typed_and_stages_exactly(make_database):
    database = make_database([DDL])
    got = Collector()
    watcher = TableWatcher(database, "Things", poll_interval=0.005, limit=3,
                           checkpoints=InMemoryCommitTimestampRepository(),
                           retry_policy=RetryPolicy(initial=0.001, maximum=0.01))
    watcher.add_callback(got)
    ids = sorted(uuid.uuid4() for _ in range(10))
    with watcher:
        insert(database, "Things", ("Id", "Score", "Span", "Ids", "Title"),
               [(u, i + 0.1, Interval(days=i, nanos=1), [u], f"title {i}") for i, u in enumerate(ids)])
        got.wait_for(10)
    assert watcher.failure is None
    assert sorted(c.keys for c in got.changes) == [(u,) for u in ids]
    change = next(c for c in got.changes if c.keys == (ids[3],))
    assert change.row["Score"] == 3.0999999046325684  # 3.1 in single precision
    assert change.row["Span"] == Interval(days=3, nanos=1) and change.row["Ids"] == [ids[3]]
    assert "Title_Tokens" not in change.row
    assert {k: change.column_types[k] for k in ("Id", "Score", "Span", "Ids")} == {
        "Id": "UUID", "Score": "FLOAT32", "Span": "INTERVAL", "Ids": "ARRAY<UUID>"}
    record = json.loads(contract.to_line(contract.change_record(
        change, batch_id="b", seq=0, types=change.column_types, key_columns=["Id"], watcher_id="w")))
    assert record["keys"] == [str(ids[3])]
    assert {k: decode_value(record["types"][k], v) for k, v in record["values"].items() if k != "Ts"} == {
        k: v for k, v in change.row.items() if k != "Ts"}
