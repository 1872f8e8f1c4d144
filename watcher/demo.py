"""The end-to-end demo on the embedded local Spanner.

For now it shows the foundation: it starts the local server, creates a database with the
benchmark's Singers table (commit-timestamp column, computed FARM_FINGERPRINT shard column,
NULL_FILTERED index), writes and updates rows through the official client, and reads the
changes back with the watcher's poll query.

Example:
    >>> summary = run_demo(rows=20, quiet=True)
    >>> summary["rows_written"], summary["changes_seen"]
    (20, 20)
"""

from __future__ import annotations

import base64
import os
import random
import string
import time
from typing import Any

from rich.console import Console
from rich.table import Table as RichTable

SINGERS_DDL = [
    """CREATE TABLE Singers (
  SingerId INT64 NOT NULL,
  FirstName STRING(200),
  LastName STRING(200) NOT NULL,
  BirthDate DATE,
  Picture BYTES(MAX),
  LastUpdated TIMESTAMP OPTIONS (allow_commit_timestamp=true),
  Processed BOOL,
  ShardId INT64 AS (CASE WHEN Processed THEN NULL ELSE MOD(FARM_FINGERPRINT(COALESCE(FirstName || ' ', '') || LastName), 19) END) STORED
) PRIMARY KEY (SingerId)""",
    "CREATE NULL_FILTERED INDEX Idx_Singers_ShardId_LastUpdated ON Singers (ShardId, LastUpdated)",
]

POLL_SQL = (
    "SELECT * FROM `Singers`@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated} "
    "WHERE `ShardId` IS NOT NULL AND `ShardId` IN UNNEST(@shards) AND `LastUpdated` > @last "
    "ORDER BY `LastUpdated`, `SingerId` LIMIT @limit"
)


def _name(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 10))).title()


def run_demo(rows: int = 500, *, quiet: bool = False, seed: int = 7) -> dict[str, Any]:
    """Run the demo and return its figures; prints a summary unless ``quiet``."""
    import datetime as dt

    from google.cloud import spanner
    from google.cloud.spanner_v1 import param_types

    from .localspanner.server import LocalSpanner

    console = Console(quiet=quiet)
    rng = random.Random(seed)
    started = time.monotonic()
    previous = os.environ.get("SPANNER_EMULATOR_HOST")
    with LocalSpanner() as server:
        os.environ["SPANNER_EMULATOR_HOST"] = server.emulator_host
        try:
            console.print(f"[bold]local Spanner[/] listening on {server.emulator_host}")
            client = spanner.Client(project="demo-project")
            instance = client.instance("demo", configuration_name="projects/demo-project/instanceConfigs/emulator-config")
            instance.create().result(30)
            database = instance.database("singers", ddl_statements=SINGERS_DDL)
            database.create().result(60)
            console.print("created database [bold]singers[/] with a commit-timestamp column, a FARM_FINGERPRINT shard column and a NULL_FILTERED index")

            start_ts = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
            columns = ("SingerId", "FirstName", "LastName", "BirthDate", "Picture", "LastUpdated", "Processed")
            written = 0
            with console.status("writing rows...") as status:
                for first in range(0, rows, 100):
                    batch_rows = [
                        (i, _name(rng), _name(rng), dt.date(1950 + rng.randint(0, 50), rng.randint(1, 12), rng.randint(1, 28)),
                         base64.b64encode(rng.randbytes(rng.randint(1, 64))), spanner.COMMIT_TIMESTAMP, False)
                        for i in range(first, min(first + 100, rows))
                    ]
                    with database.batch() as batch:
                        batch.insert_or_update("Singers", columns, batch_rows)
                    written += len(batch_rows)
                    status.update(f"writing rows... {written}/{rows}")
            updated = max(rows // 10, 1)

            def update(txn: Any) -> int:
                return txn.execute_update(
                    "UPDATE Singers SET FirstName = 'Updated', LastUpdated = PENDING_COMMIT_TIMESTAMP() WHERE SingerId < @n",
                    params={"n": updated}, param_types={"n": param_types.INT64})

            changed = database.run_in_transaction(update)
            console.print(f"wrote {written} rows in {(written + 99) // 100} transactions, then updated {changed} of them with DML")

            seen: dict[int, Any] = {}
            last = start_ts
            polls = 0
            while True:
                with database.snapshot() as snap:
                    result = list(snap.execute_sql(
                        POLL_SQL,
                        params={"shards": list(range(-18, 19)), "last": last, "limit": 1000},
                        param_types={"shards": param_types.Array(param_types.INT64), "last": param_types.TIMESTAMP, "limit": param_types.INT64},
                    ))
                polls += 1
                for row in result:
                    seen[row[0]] = row
                    last = row[5]
                if len(result) < 1000:
                    break
            by_shard: dict[int, int] = {}
            for row in seen.values():
                by_shard[row[7]] = by_shard.get(row[7], 0) + 1
            summary = {
                "emulator_host": server.emulator_host,
                "rows_written": written,
                "rows_updated": changed,
                "changes_seen": len(seen),
                "polls": polls,
                "shards_used": len(by_shard),
                "last_commit_timestamp": last.isoformat() if hasattr(last, "isoformat") else str(last),
                "seconds": round(time.monotonic() - started, 2),
            }
            table = RichTable(title="spanner-watcher demo (foundation)")
            table.add_column("figure")
            table.add_column("value", justify="right")
            for k, v in summary.items():
                table.add_row(k.replace("_", " "), str(v))
            console.print(table)
            return summary
        finally:
            if previous is None:
                os.environ.pop("SPANNER_EMULATOR_HOST", None)
            else:
                os.environ["SPANNER_EMULATOR_HOST"] = previous
