"""The end-to-end demo on the embedded local Spanner: every part of the pipeline, in a few minutes.

1. start the embedded local Spanner;
2. apply the migrations: the watcher's own tables and the benchmark's Singers schema
   (commit-timestamp column, FARM_FINGERPRINT shard column, NULL_FILTERED index);
3. backfill Singers (a snapshot at one read timestamp: the changelog then knows the table
   completely, so it can tell INSERT from UPDATE) and set the watcher's checkpoint there;
4. run writers for a while, and a DatabaseWatcher over all 37 shards staging every poll;
5. run the Spark changelog job, and print what happened and where to look next.

``mode="change_stream"`` creates the change stream ``SingersStream`` and captures through a
ChangeStreamWatcher instead (no backfill needed: the stream reports every INSERT; some writer
transactions delete rows, which only a stream sees); ``mode="both"`` runs both capture modes on
the same workload, each into its own staging folder and changelog, and prints them side by
side (:mod:`.demo_capture`).

``dialect=POSTGRESQL`` makes the database a PostgreSQL one: Singers (names double-quoted, so the
writers' mutations are the same) and its shard index come from the DDL helpers in PostgreSQL
(:func:`.bench.singers_ddl`; the packaged migrations are GoogleSQL), the watcher's checkpoint table
is created by the watcher itself, and the polls' hint is ``/*@ FORCE_INDEX=... */``. The staged
batches and the changelog do not depend on the dialect.

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

from ..dialects import GOOGLE_SQL, Dialect, dialect_of
from . import demo_report, html_report
from .bench import singers_ddl, table_hint
from .demo_capture import MODES, STREAM, STREAM_VALUE_CAPTURE, TITLES, Capture, caught_up, print_side_by_side

SHARDS = list(range(-18, 19))
#: The poll's hint in a GoogleSQL database (:func:`.bench.table_hint` gives it in either dialect).
HINT = table_hint(GOOGLE_SQL)
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
    """Threads upserting random Singers rows (and deleting some, ``delete_share`` of the transactions)."""

    def __init__(self, database: Any, threads: int, keys: int, rows_per_txn: int, seed: int,
                 delete_share: float = 0.0) -> None:
        self.database = database
        self.threads = threads
        self.keys = keys
        self.rows_per_txn = rows_per_txn
        self.seed = seed
        self.delete_share = delete_share
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.mutations = 0
        self.transactions = 0
        self.deletes = 0
        self.keys_written: set[int] = set()
        self.errors: list[BaseException] = []

    def _run(self, index: int) -> None:
        from google.cloud import spanner

        rng = random.Random(self.seed * 1000 + index)
        while not self.stop.is_set():
            rows = []
            deleting = rng.random() < self.delete_share
            for _ in range(1 if deleting else rng.randint(1, self.rows_per_txn)):
                key = rng.randrange(self.keys)
                rows.append((key, _name(rng), _name(rng), None, base64.b64encode(rng.randbytes(rng.randint(1, 256))),
                             spanner.COMMIT_TIMESTAMP, False))
            try:
                with self.database.batch() as batch:
                    if deleting:
                        batch.delete("Singers", spanner.KeySet(keys=[[row[0]] for row in rows]))
                    else:
                        batch.insert_or_update("Singers", COLUMNS, rows)
            except Exception as exc:  # noqa: BLE001 - reported in the summary
                self.errors.append(exc)
                continue
            with self.lock:
                self.transactions += 1
                self.mutations += len(rows)
                if deleting:
                    self.deletes += len(rows)
                else:
                    self.keys_written.update(row[0] for row in rows)
            time.sleep(0.005)

    def start(self) -> list[threading.Thread]:
        threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(self.threads)]
        for t in threads:
            t.start()
        return threads


def _final_names(database: Any) -> dict[int, str]:
    d = dialect_of(database)
    with database.snapshot() as snap:
        return {k: v for k, v in snap.execute_sql(f"SELECT {d.quote('SingerId')}, {d.quote('FirstName')} FROM {d.quote('Singers')}")}


def _server_now(database: Any) -> Any:
    with database.snapshot() as snap:
        return list(snap.execute_sql(dialect_of(database).current_timestamp_sql))[0][0]


def create_schema(database: Any, dialect: Dialect, *, change_stream: bool) -> str:
    """The demo's tables (and the change stream, if asked) in ``dialect``; what was made, for the console.

    Both: the packaged migrations of the watcher's tables, in the database's dialect. GoogleSQL: the
    Singers sample's migrations too; PostgreSQL: Singers from the DDL helpers.
    """
    from ..schema_tools.ddl import create_change_stream
    from ..schema_tools.migrations import Migrator, default_migrations, sample_migrations

    if dialect is GOOGLE_SQL:
        report = Migrator(database).migrate([default_migrations(), sample_migrations("singers")])
        made = f"applied {len(report.applied)} migrations: the watcher's tables and the Singers schema"
    else:
        report = Migrator(database).migrate([default_migrations()])
        database.update_ddl(singers_ddl(dialect)).result(120)
        made = (f"applied {len(report.applied)} migrations of the watcher's tables, and created the Singers table "
                f"and its shard index ({dialect.name}, from the DDL helpers)")
    if change_stream:
        database.update_ddl([create_change_stream(STREAM, {"Singers": None}, value_capture_type=STREAM_VALUE_CAPTURE,
                                                  dialect=dialect)]).result(120)
        made += f", and the change stream {STREAM}"
    return made


def run_demo(seconds: float = 20.0, *, workdir: str = "spanner-watcher-demo", writers: int = 4, keys: int = 2_000,
             rows_per_txn: int = 20, seed: int = 7, quiet: bool = False, emulator_host: str | None = None,
             mode: str = "poll", poll_interval: float = 0.2, heartbeat: float = 1.0,
             delete_share: float = 0.05, dialect: Dialect = GOOGLE_SQL) -> dict[str, Any]:
    """Run the demo; returns its figures (also printed unless ``quiet``).

    ``emulator_host``: use that running server (a local Spanner or the official emulator)
    instead of starting the embedded one; the demo then makes an instance of its own there.
    ``mode``: ``poll`` (a DatabaseWatcher over all 37 shards), ``change_stream`` (a
    ChangeStreamWatcher on the stream the demo creates) or ``both`` side by side on one
    workload, each into its own staging folder and changelog (``summary["captures"]``).
    ``delete_share``: the share of write transactions that delete a row instead (not in
    ``poll`` mode, whose check needs every written key to stay). ``dialect``: the database's.
    """
    from google.cloud import spanner

    from ..capture.change_streams.watcher import ChangeStreamWatcher
    from ..capture.database_watcher import DatabaseWatcher
    from ..capture.shards import FixedShardProvider
    from ..changelog.snapshots.backfill import Backfill
    from ..changelog.spark.session import get_session
    from ..checkpoints import SpannerCommitTimestampRepository
    from ..localspanner.server import LocalSpanner

    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    modes = ["poll", "change_stream"] if mode == "both" else [mode]
    console = Console(quiet=quiet)
    started = time.monotonic()
    work = _prepare_workdir(workdir)

    def folders(m: str) -> tuple[Path, Path]:
        base = work / m if mode == "both" else work
        return base / "staging", base / "warehouse"

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
            database = instance.database("singers", database_dialect=dialect.database_dialect)
            database.create().result(60)
            with console.status("creating the schema..."):
                made = create_schema(database, dialect, change_stream="change_stream" in modes)
            console.print(f"[bold]2.[/] {made}")

            with console.status("starting Spark and backfilling Singers..."):
                spark = get_session("local[2]", app="spanner-watcher-demo")
                repo = SpannerCommitTimestampRepository(database)
                if "poll" in modes:
                    staging, warehouse = folders("poll")
                    backfill = (Backfill(spark, database).table("Singers").staging(str(staging)).warehouse(str(warehouse))
                                .checkpoints(repo, [SHARDS]).run())
                    console.print(f"[bold]3.[/] backfilled Singers at {backfill.read_timestamp} "
                                  f"({backfill.rows} rows): the changelog now knows the table completely")
                else:
                    console.print("[bold]3.[/] no backfill needed: the change stream reports every INSERT itself")
            stream_start = _server_now(database)

            captures = []
            for m in modes:
                if m == "poll":
                    watcher: Any = DatabaseWatcher(database, include=["Singers"],
                                                   shard_provider=FixedShardProvider("ShardId", SHARDS),
                                                   table_hint=table_hint(dialect),
                                                   poll_interval=poll_interval, checkpoints=repo)
                else:
                    watcher = ChangeStreamWatcher(database, STREAM, heartbeat=heartbeat, start=stream_start,
                                                  watcher_id="demo")
                captures.append(Capture(m, watcher, *folders(m)))
            load = _Writers(database, writers, keys, rows_per_txn, seed, delete_share if mode != "poll" else 0.0)
            with contextlib.ExitStack() as running:
                for c in captures:
                    running.enter_context(c.watcher)
                final = _write_and_wait(console, load, captures, database, seconds)

            captured = {c.mode: c.figures(final) for c in captures}
            for c in captures:
                with console.status(f"running the Spark changelog job ({TITLES[c.mode]})..."):
                    captured[c.mode].update(c.changelog(spark))
                f = captured[c.mode]
                console.print(f"[bold]5.[/] changelog job ({TITLES[c.mode]}): {f['changelog_changes_written']:,} changes "
                              f"written, {f['changelog_duplicates_dropped']:,} duplicates dropped, "
                              f"in {f['changelog_seconds']:.1f}s")

            summary: dict[str, Any] = {
                "mode": mode,
                "mutations_written": load.mutations,
                "transactions": load.transactions,
                "deletes_written": load.deletes,
                "keys_written": len(load.keys_written),
                "rows_in_table": len(final),
                "writer_errors": len(load.errors),
                "database": database.name,
                "dialect": dialect.name,
            }
            if mode == "both":
                summary["captures"] = captured
                summary["keys_missing"] = sum(f["keys_missing"] for f in captured.values())
            else:
                summary.update(captured[mode])
            summary["seconds"] = round(time.monotonic() - started, 1)
            if mode == "both":
                print_side_by_side(console, summary)
                _print_next(console, Path(captured["change_stream"]["warehouse"]))
            else:
                _print_summary(console, summary, Path(summary["warehouse"]))
            report = html_report.write(work / demo_report.REPORT, demo_report.page(summary, NEXT_QUERY))
            summary["report"] = str(report)
            console.print(f"report: {report} (open it in a browser: the figures and charts in one file)")
            return summary
        finally:
            if previous_host is None:
                os.environ.pop("SPANNER_EMULATOR_HOST", None)
            else:
                os.environ["SPANNER_EMULATOR_HOST"] = previous_host


def _write_and_wait(console: Console, load: _Writers, captures: list[Capture], database: Any,
                    seconds: float) -> dict[int, str]:
    """Run the writers for ``seconds``, then wait until every capture caught up with the table; its final names."""
    def seen() -> str:
        return ", ".join(f"{c.versions:,} changes captured ({TITLES[c.mode]})" for c in captures)

    with Progress(TextColumn("[bold]4.[/] writing and watching"), BarColumn(), TextColumn("{task.fields[figures]}"),
                  TimeElapsedColumn(), console=console, transient=False) as progress:
        task = progress.add_task("load", total=seconds, figures="")
        threads = load.start()
        t0 = time.monotonic()
        while (elapsed := time.monotonic() - t0) < seconds:
            time.sleep(0.25)
            progress.update(task, completed=min(elapsed, seconds), figures=f"{load.mutations:,} mutations written, {seen()}")
        load.stop.set()
        for t in threads:
            t.join(10)
        # The truth is the table itself: writers race each other, so only the database knows
        # which version of a key is the last. Wait until every watcher has caught up with it.
        final = _final_names(database)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not caught_up(captures, final):
            time.sleep(0.1)
        progress.update(task, completed=seconds, figures=f"{load.mutations:,} mutations written, {seen()}")
    return final


def _print_summary(console: Console, summary: dict[str, Any], warehouse: Path) -> None:
    table = RichTable(title="spanner-watcher demo")
    table.add_column("figure")
    table.add_column("value", justify="right")
    for key, label in demo_report.labels(summary["mode"]).items():
        table.add_row(label, str(summary[key]))
    console.print(table)
    _print_next(console, warehouse)


def _print_next(console: Console, warehouse: Path) -> None:
    console.print("Next, query the changelog with Spark:")
    console.print(f"  from watcher.changelog.views import register_views; register_views(spark, {str(warehouse)!r})")
    console.print(f"  spark.sql({NEXT_QUERY!r}).show()")
