"""The benchmark application of the Java library, in Python: writers and watchers on one table.

Writers run InsertOrUpdate transactions on the Singers table (``ddl/samples/singers``) at a
given rate: ``update_parallelism`` threads, each sleeping a random 0..2x its share of the
interval before its next transaction (the Java application's pacing, but against a schedule,
so a slow commit does not lower the rate), each transaction writing a random 1..2m rows with
random SingerIds, random names, a random date, 1-1024 random bytes, Processed=false and
LastUpdated = the commit timestamp. Meanwhile ``watchers`` TableWatchers split the 37 shard
values -18..18 between them and count every change they receive, with its detection lag
(arrival wall time minus commit timestamp; the local server stamps commits with this
machine's clock). The writer threads run in processes of their own by default
(:mod:`.bench_writers`: beside the watchers they competed for one GIL).

Two differences from the Java application, both to make the result checkable: SingerIds are
random 63-bit numbers (not 31-bit), so no two mutations of a run hit the same row and
"every mutation was captured" can be checked key by key; and the run ends after
``duration`` seconds, waits for the watchers to catch up, and reports figures (see
:mod:`watcher.devtools.bench_report`).

A PostgreSQL database gets the same table from the DDL helpers (:func:`singers_ddl`): the names
double-quoted, so they keep their case and the writers' mutations name them alike in both dialects.

Example:
    >>> BenchOptions().mutations_per_second
    5.5
    >>> BenchOptions(watchers=2).shard_sets()[1][:3]
    [1, 2, 3]
"""

from __future__ import annotations

import gc
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..capture.base import PollRecord, Watcher
from ..capture.shards import split_shards
from ..capture.table_watcher import TableWatcher
from ..dialects import GOOGLE_SQL, POSTGRESQL, Dialect, dialect_of  # noqa: F401 (POSTGRESQL: the doctests)
from ..errors import ConfigurationError
from .bench_writers import TABLE, Endpoint, WriterLog, WriterPool, WriterProcesses, Writers

__all__ = ["TABLE", "BenchOptions", "Endpoint", "Recorder", "Run", "WriterLog", "WriterPool", "WriterProcesses", "Writers",
           "build_watchers", "count_rows", "prepare_table", "run_benchmark", "singers_ddl", "table_hint"]

INDEX = "Idx_Singers_ShardId_LastUpdated"
SHARD_COLUMN = "ShardId"
#: The values MOD(FARM_FINGERPRINT(...), 19) takes.
ALL_SHARDS = tuple(range(-18, 19))


@dataclass(frozen=True)
class BenchOptions:
    """The Java benchmark application's options and defaults, plus the run's length."""

    write_transactions_per_second: float = 1.0
    mutations_per_transaction: int = 5
    update_parallelism: int = 32
    #: Processes the writer threads run in, apart from the watchers (:mod:`.bench_writers`); 0: in this process.
    writer_processes: int = 1
    watchers: int = 1
    disable_shard_provider: bool = False
    disable_table_hint: bool = False
    poll_interval: float = 1.0
    limit: int = 10_000
    fallback_to_with_query_seconds: float = 60.0
    reset_last_seen_timestamps: bool = False
    drop_table: bool = False
    duration: float = 60.0
    #: Changes committed in the first seconds are left out of the lag percentiles and the rate.
    warmup: float = 5.0
    #: Seconds the watchers get to catch up after the writers stopped.
    drain_timeout: float = 60.0
    seed: int | None = None

    def __post_init__(self) -> None:
        checks: dict[str, bool] = {
            "write transactions per second must be more than 0": self.write_transactions_per_second > 0,
            "mutations per transaction must be at least 1": self.mutations_per_transaction >= 1,
            "update parallelism must be at least 1": self.update_parallelism >= 1,
            "writer processes must be 0 to the number of writer threads":
                0 <= self.writer_processes <= self.update_parallelism,
            f"the number of watchers must be 1 to {len(ALL_SHARDS)}": 1 <= self.watchers <= len(ALL_SHARDS),
            "with the shard provider disabled, use one watcher (each would see every change)":
                not (self.disable_shard_provider and self.watchers > 1),
            "poll interval must be at least 0": self.poll_interval >= 0,
            "limit must be at least 1": self.limit >= 1,
            "duration must be more than 0": self.duration > 0,
            "warmup must be at least 0 and shorter than the duration": 0 <= self.warmup < self.duration,
        }
        failed = [message for message, ok in checks.items() if not ok]
        if failed:
            raise ConfigurationError(failed[0])

    @property
    def mutations_per_second(self) -> float:
        """The expected write rate: transactions/s times the mean of 1..2m mutations."""
        return self.write_transactions_per_second * (2 * self.mutations_per_transaction + 1) / 2

    def shard_sets(self) -> list[list[int]]:
        return split_shards(ALL_SHARDS, self.watchers)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- the table -------------------------------------------------------------------------------------

#: The Singers columns as the DDL helpers declare them (the commit-timestamp, processed and shard columns follow).
_SINGERS_COLUMNS = (("SingerId", "INT64", True), ("FirstName", "STRING(200)", False), ("LastName", "STRING(200)", True),
                    ("BirthDate", "DATE", False), ("Picture", "BYTES(MAX)", False))


def singers_ddl(dialect: Dialect = GOOGLE_SQL) -> list[str]:
    """The Singers table and its shard index in ``dialect``: in GoogleSQL the packaged sample schema the
    demo migrates, in PostgreSQL the same table from the DDL helpers (which also wrote the sample).

    >>> print(singers_ddl(POSTGRESQL)[1])
    CREATE INDEX "Idx_Singers_ShardId_LastUpdated" ON "Singers" ("ShardId", "LastUpdated") WHERE "ShardId" IS NOT NULL AND "LastUpdated" IS NOT NULL
    """
    if dialect is GOOGLE_SQL:
        from ..schema_tools.migrations import sample_migrations

        return sample_migrations("singers").statements()
    from ..schema_tools.ddl import ColumnDef, ShardSource, sharded_table

    columns = [ColumnDef(name, type_, not_null=not_null) for name, type_, not_null in _SINGERS_COLUMNS]
    setup = sharded_table(TABLE, columns, ["SingerId"], ["FirstName", ShardSource("LastName", not_null=True)],
                          shard_column_name=SHARD_COLUMN, processed_column="Processed", index_name=INDEX, dialect=dialect)
    return list(setup.statements)


def table_hint(dialect: Dialect = GOOGLE_SQL) -> str:
    """The hint that makes a poll read the shard index, in ``dialect``.

    >>> table_hint(), table_hint(POSTGRESQL)
    ('@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}', '/*@ FORCE_INDEX=Idx_Singers_ShardId_LastUpdated */')
    """
    from ..schema_tools.ddl import force_index_hint

    return force_index_hint(INDEX, dialect)


def prepare_table(database: Any, options: BenchOptions, log: Callable[[str], None] = print) -> None:
    """Create Singers (dropping it first with ``drop_table``) and reset checkpoints if asked."""
    from ..capture.table_info import watchable_tables

    dialect = dialect_of(database)
    exists = TABLE in watchable_tables(database)
    if exists and options.drop_table:
        log(f"dropping {TABLE}")
        database.update_ddl([f"DROP INDEX {dialect.quote(INDEX)}", f"DROP TABLE {dialect.quote(TABLE)}"]).result(300)
        exists = False
    if not exists:
        log(f"creating {TABLE} with its shard column and the shard index")
        database.update_ddl(singers_ddl(dialect)).result(300)
    if options.reset_last_seen_timestamps:
        reset_checkpoints(database, log)


def reset_checkpoints(database: Any, log: Callable[[str], None] = print) -> None:
    """Forget where earlier runs' watchers stood on Singers (all shard sets)."""
    from google.cloud.spanner_v1 import param_types

    from ..checkpoints import DEFAULT_TABLE
    from ..dialects.checkpoints import checkpoint_name
    from ..dialects.schema import tables_query

    dialect = dialect_of(database)
    table = checkpoint_name(dialect, DEFAULT_TABLE)
    tables = tables_query(dialect)
    with database.snapshot() as snap:
        if table not in {r[0] for r in snap.execute_sql(tables.sql, params=tables.params, param_types=tables.types)}:
            return
    delete = dialect.bind(f"DELETE FROM {dialect.quote(table)} WHERE {dialect.quote(checkpoint_name(dialect, 'TABLE_NAME'))} "
                          "= @table", {"table": TABLE}, {"table": param_types.STRING})
    removed = database.run_in_transaction(
        lambda txn: txn.execute_update(delete.sql, params=delete.params, param_types=delete.types))
    log(f"reset {removed} last seen commit timestamp(s) of {TABLE}")


def count_rows(database: Any) -> int:
    """How many rows Singers holds."""
    with database.snapshot() as snap:
        return int(next(iter(snap.execute_sql(f"SELECT COUNT(*) FROM {dialect_of(database).quote(TABLE)}")))[0])


# --- watchers --------------------------------------------------------------------------------------

class Recorder:
    """One watcher's callback: arrival wall time, commit time and key of every change; and its
    poll listener: (time, seconds, rows, WITH query used) of every poll, for the report.

    Callbacks of one watcher run one at a time, so appends need no lock.
    """

    def __init__(self, name: str = "") -> None:
        self.name = name
        self.arrived = array("d")
        self.committed = array("d")
        self.keys = array("q")
        self.poll_log: deque[tuple[float, float, int, bool]] = deque(maxlen=1_000_000)

    def on_poll(self, poll: PollRecord) -> None:
        self.poll_log.append((time.time(), poll.seconds, poll.rows, poll.using_with_query))

    def __call__(self, change: Any) -> None:
        self.arrived.append(time.time())
        self.committed.append(change.commit_timestamp.timestamp())
        self.keys.append(change.keys[0])


def build_watchers(database: Any, options: BenchOptions) -> list[tuple[Watcher, Recorder]]:
    """The TableWatchers the options ask for, each with its recorder (not started)."""
    from ..capture.shards import FixedShardProvider, NotNullShardProvider

    hint = "" if options.disable_table_hint else table_hint(dialect_of(database))
    out: list[tuple[Watcher, Recorder]] = []
    for i, shards in enumerate(options.shard_sets()):
        if options.disable_shard_provider:
            # The index is NULL_FILTERED: a query forced onto it must exclude NULL shards.
            provider: Any = NotNullShardProvider(SHARD_COLUMN) if hint else None
        else:
            provider = FixedShardProvider(SHARD_COLUMN, shards)
        w = TableWatcher(database, TABLE, shard_provider=provider, table_hint=hint, poll_interval=options.poll_interval,
                         limit=options.limit, fallback_to_with_query_seconds=options.fallback_to_with_query_seconds,
                         name=f"bench-{i}")
        recorder = Recorder(f"bench-{i}")
        w.add_callback(recorder)
        w.add_poll_listener(recorder.on_poll)
        out.append((w, recorder))
    return out


# --- a run -----------------------------------------------------------------------------------------

@dataclass
class Run:
    """A benchmark run in progress or finished: the parts the status line and the report read."""

    options: BenchOptions
    writers: WriterPool
    watchers: list[tuple[Watcher, Recorder]]
    started: float = 0.0
    writes_end: float = 0.0
    finished: float = 0.0
    drained: bool = False
    failure: str | None = None
    cpu: dict[str, float] = field(default_factory=dict)

    @property
    def received(self) -> int:
        return sum(len(r.keys) for _, r in self.watchers)

    def failed_watcher(self) -> tuple[Watcher, Recorder] | None:
        return next(((w, r) for w, r in self.watchers if w.failure is not None), None)

    def using_with_query(self) -> bool:
        """Whether a watcher's last poll fell back to the WITH query."""
        return any(s["using_with_query"] for w, _ in self.watchers for s in w.poll_stats())


def _freeze_heap() -> None:
    """Move every object alive now out of the garbage collector's view for the run.

    The client library, protobuf descriptors and the watchers make a heap of a few hundred
    thousand objects that live for the whole run. Each poll's rows survive a few young
    collections while they are delivered, so full collections come every second or so, and
    each walks that whole heap holding the GIL, stalling every writer and watcher of the process
    (benchmarks/RESULTS.md, the bench app).
    Frozen, the heap is skipped; what the run itself allocates is still collected.
    """
    gc.collect()
    gc.freeze()


def run_benchmark(database: Any, options: BenchOptions, *, on_status: Callable[[Run], None] | None = None,
                  status_every: float = 0.5, stop: threading.Event | None = None,
                  server_cpu: Callable[[], float] | None = None, endpoint: Any = None) -> Run:
    """Start the watchers, write for ``options.duration`` seconds, wait for the watchers to catch up.

    The table must exist (see :func:`prepare_table`). ``stop`` ends the writes early;
    ``on_status(run)`` is called every ``status_every`` seconds. With ``options.writer_processes``
    the writers connect to ``endpoint`` (a :class:`~.bench_writers.Endpoint`; default: the
    database's name and ``SPANNER_EMULATOR_HOST``).
    """
    import os

    stop = stop or threading.Event()
    frozen = False
    writers: WriterPool = (WriterProcesses(endpoint or Endpoint.of(database), options) if options.writer_processes
                           else Writers(database, options))
    run = Run(options, writers, build_watchers(database, options))
    started_watchers: list[Watcher] = []
    cpu0 = os.times()
    server0 = server_cpu() if server_cpu else 0.0
    try:
        for w, _ in run.watchers:
            w.start()
            started_watchers.append(w)
        run.writers.prepare()  # writer processes connect before the clock starts, as the writer threads are
        _freeze_heap()
        frozen = True
        run.started = time.time()
        run.writers.start(run.started + options.duration)

        def tick(until: float, done: Callable[[], bool], wait: Callable[[float], Any]) -> None:
            while time.time() < until and not done():
                wait(min(status_every, max(0.0, until - time.time())))
                failed = run.failed_watcher()
                if failed is not None:
                    w, recorder = failed
                    run.failure = f"the watcher on {TABLE} ({recorder.name}) failed: {w.failure}"
                    stop.set()
                if on_status:
                    on_status(run)

        tick(run.started + options.duration, stop.is_set, stop.wait)
        run.writers.stop()  # an early stop: writers finish the transaction in flight
        run.writers.join()
        run.writes_end = time.time()
        written = run.writers.log.total_mutations
        tick(run.writes_end + options.drain_timeout, lambda: run.received >= written or run.failure is not None,
             time.sleep)
        run.drained = run.received >= written
    finally:
        run.writers.close()  # after a failure too: no writer process outlives the run
        for w in started_watchers:
            w.stop()
        run.finished = time.time()
        if frozen:
            gc.unfreeze()
        cpu1 = os.times()
        seconds = max(run.finished - run.started, 1e-9) if run.started else 1e-9
        run.cpu = {"bench_process_cores": round((cpu1.user + cpu1.system - cpu0.user - cpu0.system) / seconds, 2)}
        writer_cpu = run.writers.cpu_seconds()
        if writer_cpu is not None:
            run.cpu["writer_processes_cores"] = round(writer_cpu / seconds, 2)
        if server_cpu:
            run.cpu["server_process_cores"] = round((server_cpu() - server0) / seconds, 2)
    return run
