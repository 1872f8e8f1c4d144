"""The end-to-end demo on the embedded local Spanner: every part of the pipeline, in a few minutes.

1. start the embedded local Spanner;
2. apply the migrations: the watcher's own tables and the benchmark's Singers schema
   (commit-timestamp column, FARM_FINGERPRINT shard column, NULL_FILTERED index);
3. backfill Singers (a snapshot at one read timestamp: the changelog then knows the table
   completely, so it can tell INSERT from UPDATE) and set the watcher's checkpoint there;
4. run writers for a while, and a DatabaseWatcher over all 37 shards staging every poll;
5. run the Spark changelog job, and print what happened and where to look next.

Example:
    >>> summary = run_demo(seconds=2, workdir=tempfile.mkdtemp(), quiet=True)  # doctest: +SKIP
    >>> summary["keys_missing"]                                                 # doctest: +SKIP
    0
"""

from __future__ import annotations

import base64
import contextlib
import os
import random
import shutil
import string
import tempfile  # noqa: F401  (used by the example)
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable

SHARDS = list(range(-18, 19))
HINT = "@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}"
COLUMNS = ("SingerId", "FirstName", "LastName", "BirthDate", "Picture", "LastUpdated", "Processed")
#: Written so the workdir can be wiped safely on the next run (never a folder the demo did not make).
MARKER = ".spanner-watcher-demo"

NEXT_QUERY = (
    "SELECT mod_type, COUNT(*) AS changes FROM changelog WHERE table_name = 'Singers' GROUP BY mod_type"
)


def _name(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(4, 9))).title()


def _prepare_workdir(workdir: str) -> Path:
    path = Path(workdir)
    if path.exists() and any(path.iterdir()):
        if not (path / MARKER).exists():
            raise FileExistsError(f"{path} exists and was not made by the demo; choose another --workdir")
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)
    (path / MARKER).write_text("made by `spanner-watcher demo`; deleted by its next run\n")
    return path


class _Writers:
    """Threads upserting random Singers rows; remembers each key's last written FirstName."""

    def __init__(self, database: Any, threads: int, keys: int, rows_per_txn: int, seed: int) -> None:
        self.database = database
        self.threads = threads
        self.keys = keys
        self.rows_per_txn = rows_per_txn
        self.seed = seed
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.mutations = 0
        self.transactions = 0
        self.keys_written: set[int] = set()
        self.errors: list[BaseException] = []

    def _run(self, index: int) -> None:
        from google.cloud import spanner

        rng = random.Random(self.seed * 1000 + index)
        while not self.stop.is_set():
            rows = []
            for _ in range(rng.randint(1, self.rows_per_txn)):
                key = rng.randrange(self.keys)
                rows.append((key, _name(rng), _name(rng), None, base64.b64encode(rng.randbytes(rng.randint(1, 256))),
                             spanner.COMMIT_TIMESTAMP, False))
            try:
                with self.database.batch() as batch:
                    batch.insert_or_update("Singers", COLUMNS, rows)
            except Exception as exc:  # noqa: BLE001 - reported in the summary
                self.errors.append(exc)
                continue
            with self.lock:
                self.transactions += 1
                self.mutations += len(rows)
                self.keys_written.update(row[0] for row in rows)
            time.sleep(0.005)

    def start(self) -> list[threading.Thread]:
        threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(self.threads)]
        for t in threads:
            t.start()
        return threads


def _final_names(database: Any) -> dict[int, str]:
    with database.snapshot() as snap:
        return {k: v for k, v in snap.execute_sql("SELECT SingerId, FirstName FROM Singers")}


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def run_demo(seconds: float = 20.0, *, workdir: str = "spanner-watcher-demo", writers: int = 4, keys: int = 2_000,
             rows_per_txn: int = 20, seed: int = 7, quiet: bool = False, emulator_host: str | None = None) -> dict[str, Any]:
    """Run the demo; returns its figures (also printed unless ``quiet``).

    ``emulator_host``: use that running server (a local Spanner or the official emulator)
    instead of starting the embedded one; the demo then makes an instance of its own there.
    """
    from google.cloud import spanner

    from ..capture.database_watcher import DatabaseWatcher
    from ..capture.shards import FixedShardProvider
    from ..changelog import Changelog
    from ..changelog.backfill import Backfill
    from ..changelog.session import get_session
    from ..checkpoints import SpannerCommitTimestampRepository
    from ..localspanner.server import LocalSpanner
    from ..model import timestamp_nanos
    from ..schema_tools.migrations import Migrator, default_migrations, sample_migrations
    from ..staging.sink import StagingSink

    console = Console(quiet=quiet)
    started = time.monotonic()
    work = _prepare_workdir(workdir)
    staging, warehouse = work / "staging", work / "warehouse"
    previous_host = os.environ.get("SPANNER_EMULATOR_HOST")
    server_cm = contextlib.nullcontext(None) if emulator_host else LocalSpanner(data_dir=str(work / "spanner"))
    with server_cm as server:
        host = emulator_host or server.emulator_host
        os.environ["SPANNER_EMULATOR_HOST"] = host
        try:
            where = f"(data in {work / 'spanner'})" if server is not None else "(a server already running)"
            console.print(f"[bold]1.[/] local Spanner listening on {host} {where}")
            client = spanner.Client(project="demo-project")
            instance_id = "demo" if server is not None else f"demo-{uuid.uuid4().hex[:8]}"
            instance = client.instance(instance_id, configuration_name="projects/demo-project/instanceConfigs/emulator-config")
            instance.create().result(60)
            database = instance.database("singers")
            database.create().result(60)
            with console.status("applying migrations..."):
                report = Migrator(database).migrate([default_migrations(), sample_migrations("singers")])
            console.print(f"[bold]2.[/] applied {len(report.applied)} migrations: the watcher's tables and the Singers schema")

            with console.status("starting Spark and backfilling Singers..."):
                spark = get_session("local[2]", app="spanner-watcher-demo")
                repo = SpannerCommitTimestampRepository(database)
                backfill = (Backfill(spark, database).table("Singers").staging(str(staging)).warehouse(str(warehouse))
                            .checkpoints(repo, [SHARDS]).run())
            console.print(f"[bold]3.[/] backfilled Singers at {backfill.read_timestamp} "
                          f"({backfill.rows} rows): the changelog now knows the table completely")

            lags: list[float] = []
            captured: dict[int, str] = {}
            versions = 0
            lock = threading.Lock()

            def on_change(change: Any) -> None:
                nonlocal versions
                lag = time.time() - timestamp_nanos(change.commit_timestamp) / 1e9
                with lock:
                    versions += 1
                    lags.append(lag)
                    captured[change.keys[0]] = change.row["FirstName"]

            watcher = DatabaseWatcher(database, include=["Singers"], shard_provider=FixedShardProvider("ShardId", SHARDS),
                                      table_hint=HINT, poll_interval=0.2, checkpoints=repo)
            watcher.add_callback(on_change)
            sink = StagingSink(staging, watcher_id="demo")
            sink.attach(watcher)
            load = _Writers(database, writers, keys, rows_per_txn, seed)
            with watcher:
                threads = load.start()
                with Progress(TextColumn("[bold]4.[/] writing and watching"), BarColumn(), TextColumn("{task.fields[figures]}"),
                              TimeElapsedColumn(), console=console, transient=False) as progress:
                    task = progress.add_task("load", total=seconds, figures="")
                    t0 = time.monotonic()
                    while (elapsed := time.monotonic() - t0) < seconds:
                        time.sleep(0.25)
                        with lock:
                            seen = versions
                        progress.update(task, completed=min(elapsed, seconds),
                                        figures=f"{load.mutations:,} mutations written, {seen:,} changes captured")
                    load.stop.set()
                    for t in threads:
                        t.join(10)
                    # The truth is the table itself: writers race each other, so only the database
                    # knows which version of a key is the last. Wait until the watcher has caught up with it.
                    final = _final_names(database)
                    deadline = time.monotonic() + 30
                    while time.monotonic() < deadline:
                        with lock:
                            if all(captured.get(k) == v for k, v in final.items()):
                                break
                        time.sleep(0.1)
                    progress.update(task, completed=seconds, figures=f"{load.mutations:,} mutations written, {versions:,} changes captured")
            missing = sum(1 for k, v in final.items() if captured.get(k) != v)

            with console.status("running the Spark changelog job..."):
                result = Changelog(spark).staging(str(staging)).warehouse(str(warehouse)).run()
                by_type = {r["mod_type"]: r["changes"] for r in spark.sql(
                    "SELECT mod_type, COUNT(*) AS changes FROM changelog WHERE table_name = 'Singers' GROUP BY mod_type").collect()}
                state_rows = spark.sql("SELECT COUNT(*) AS n FROM current_state WHERE table_name = 'Singers'").collect()[0]["n"]
            console.print(f"[bold]5.[/] changelog job: {result.changes_written:,} changes written, "
                          f"{result.duplicates_dropped:,} duplicates dropped, in {result.seconds:.1f}s")

            summary = {
                "mutations_written": load.mutations,
                "transactions": load.transactions,
                "keys_written": len(load.keys_written),
                "changes_captured": versions,
                "keys_missing": missing,
                "lag_p50_ms": round(1000 * (_percentile(lags, 0.50) or 0), 1),
                "lag_p99_ms": round(1000 * (_percentile(lags, 0.99) or 0), 1),
                "changelog_by_mod_type": dict(sorted(by_type.items())),
                "current_state_rows": state_rows,
                "staging": str(staging),
                "warehouse": str(warehouse),
                "writer_errors": len(load.errors),
                "database": database.name,
                "seconds": round(time.monotonic() - started, 1),
            }
            _print_summary(console, summary, warehouse)
            return summary
        finally:
            if previous_host is None:
                os.environ.pop("SPANNER_EMULATOR_HOST", None)
            else:
                os.environ["SPANNER_EMULATOR_HOST"] = previous_host


def _print_summary(console: Console, summary: dict[str, Any], warehouse: Path) -> None:
    table = RichTable(title="spanner-watcher demo")
    table.add_column("figure")
    table.add_column("value", justify="right")
    labels = {
        "mutations_written": "mutations written", "transactions": "write transactions",
        "keys_written": "distinct keys written", "changes_captured": "changes captured (versions overwritten between polls coalesce)",
        "keys_missing": "keys whose last version was not captured", "lag_p50_ms": "lag p50 (commit to callback, ms)",
        "lag_p99_ms": "lag p99 (ms)", "changelog_by_mod_type": "changelog rows by mod_type",
        "current_state_rows": "current-state rows", "staging": "staging folder", "warehouse": "changelog warehouse",
        "writer_errors": "writer errors", "database": "database", "seconds": "total seconds",
    }
    for key, label in labels.items():
        table.add_row(label, str(summary[key]))
    console.print(table)
    console.print("Next, query the changelog with Spark:")
    console.print(f"  from watcher.changelog.views import register_views; register_views(spark, {str(warehouse)!r})")
    console.print(f"  spark.sql({NEXT_QUERY!r}).show()")
