"""What the local-server benchmarks share: the server process, the client, the Singers table.

The server runs as a separate process (``python -m watcher local-spanner``), so the
benchmark's client and the server never share a Python interpreter (nor its GIL); the
benchmark reaches it only through the official ``google-cloud-spanner`` client. The
server's memory and CPU are read from ``/proc/<pid>``.

Example:
    >>> with ServerProcess(data_dir=None) as server:          # doctest: +SKIP
    ...     database = singers_database(connect(server), "singers")
    ...     load_singers(database, 0, 10_000)
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import itertools
import os
import random
import string
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from watcher.devtools import bench_server
from watcher.schema_tools.migrations import sample_migrations

PROJECT = "bench-project"
INSTANCE = "bench"

SINGERS_DDL = sample_migrations("singers").statements()  # the demo's table and shard index
SINGERS_COLUMNS = ("SingerId", "FirstName", "LastName", "BirthDate", "Picture", "LastUpdated", "Processed")
#: The 37 values MOD(FARM_FINGERPRINT(...), 19) can take.
ALL_SHARDS = list(range(-18, 19))


# --- the server process -------------------------------------------------------------------------------

class ServerProcess(bench_server.ServerProcess):
    """The local server as a child process on a free port, its log in a file, its memory readable.

    ``data_dir=None`` lets the server use its own temporary folder; ``options`` are more server arguments.
    """

    def __init__(self, data_dir: str | None, *, log_path: str | None = None, source: str | None = None,
                 options: Sequence[str] = ()) -> None:
        super().__init__(port=0, data_dir=data_dir, log_path=log_path or os.path.join(
            tempfile.gettempdir(), f"bench-local-spanner-{os.getpid()}.log"), source=source, options=options)

    def rss_bytes(self) -> int:
        return rss_bytes(self.pid)


def rss_bytes(pid: int) -> int:
    """Resident set size of a process (``VmRSS`` in ``/proc/<pid>/status``)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid: int | None = None) -> float:
    """User plus system CPU time of a process (all its threads); this process when ``pid`` is None."""
    if pid is None:
        t = os.times()
        return t.user + t.system
    return bench_server.process_cpu_seconds(pid)


@dataclass
class RssSampler:
    """Samples a process's RSS every ``interval`` seconds in a background thread."""

    pid: int
    interval: float = 0.1
    samples: list[tuple[float, int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> RssSampler:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        start = time.monotonic()
        while True:
            self.samples.append((time.monotonic() - start, rss_bytes(self.pid)))
            if self._stop.wait(self.interval):
                return

    def values(self) -> list[int]:
        return [rss for _, rss in self.samples]


# --- the client ---------------------------------------------------------------------------------------

def connect(server: ServerProcess) -> Any:
    """An official client for ``server`` (through ``SPANNER_EMULATOR_HOST``) and its instance."""
    from google.cloud import spanner

    os.environ["SPANNER_EMULATOR_HOST"] = server.emulator_host
    client = spanner.Client(project=PROJECT)
    instance = client.instance(INSTANCE, configuration_name=f"projects/{PROJECT}/instanceConfigs/emulator-config",
                               display_name="benchmarks", node_count=1)
    if not instance.exists():
        instance.create().result(60)
    return instance


def singers_database(instance: Any, database_id: str) -> Any:
    """The database ``database_id`` with the Singers table, created when missing."""
    database = instance.database(database_id, ddl_statements=SINGERS_DDL)
    if not database.exists():
        database.create().result(120)
    return database


@contextlib.contextmanager
def singers_server(data_dir: str | None, database_id: str) -> Iterator[tuple[ServerProcess, Any]]:
    """A server process and its database ``database_id`` with the Singers table; the server stops on exit."""
    with ServerProcess(data_dir) as server:
        yield server, singers_database(connect(server), database_id)


def child_database(host: str, database_id: str) -> Any:
    """The database ``database_id`` of the server at ``host``, from a benchmark's child process
    (spawned, so it sets SPANNER_EMULATOR_HOST for its own client)."""
    os.environ["SPANNER_EMULATOR_HOST"] = host
    from google.cloud import spanner

    return spanner.Client(project=PROJECT).instance(INSTANCE).database(database_id)


def count_rows(database: Any, table: str = "Singers") -> int:
    with database.snapshot() as snap:
        return int(next(iter(snap.execute_sql(f"SELECT COUNT(*) FROM {table}")))[0])


def max_last_updated(database: Any) -> Any:
    """The newest ``LastUpdated`` of the Singers table (None when empty)."""
    with database.snapshot() as snap:
        return next(iter(snap.execute_sql("SELECT MAX(LastUpdated) FROM Singers")))[0]


# --- Singers rows -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RowShape:
    """How the benchmark's Singers rows look: picture sizes in bytes (inclusive)."""

    picture_min: int = 1
    picture_max: int = 1024

    def describe(self) -> str:
        return (f"random names (4-10 letters), a random date 1950-2000, Picture {self.picture_min}-{self.picture_max} "
                "random bytes, Processed=false, LastUpdated=commit timestamp")


def _names(rng: random.Random, count: int) -> list[str]:
    letters = string.ascii_lowercase
    return ["".join(rng.choices(letters, k=rng.randint(4, 10))).title() for _ in range(count)]


class RowMaker:
    """Random Singers rows in the client's form (BYTES as base64 text, commit timestamp sentinel)."""

    def __init__(self, seed: int, shape: RowShape = RowShape()) -> None:
        from google.cloud import spanner

        self.rng = random.Random(seed)
        self.shape = shape
        self.first = _names(self.rng, 5000)
        self.last = _names(self.rng, 5000)
        base = dt.date(1950, 1, 1)
        self.dates = [base + dt.timedelta(days=d) for d in range(0, 365 * 50, 7)]
        # Pictures cut from a block of random bytes: random contents without a randbytes call per row.
        self.block = self.rng.randbytes(1 << 16)
        self.commit_ts = spanner.COMMIT_TIMESTAMP

    def row(self, singer_id: int) -> tuple[Any, ...]:
        rng = self.rng
        size = rng.randint(self.shape.picture_min, self.shape.picture_max)
        start = rng.randrange(len(self.block) - size)
        return (singer_id, rng.choice(self.first), rng.choice(self.last), rng.choice(self.dates),
                base64.b64encode(self.block[start:start + size]), self.commit_ts, False)

    def rows(self, ids: Sequence[int]) -> list[tuple[Any, ...]]:
        return [self.row(i) for i in ids]


def _chunks(start: int, stop: int, size: int) -> Iterator[range]:
    for first in range(start, stop, size):
        yield range(first, min(first + size, stop))


def load_singers(database: Any, start_id: int, stop_id: int, *, batch_rows: int = 2000, threads: int = 4,
                 shape: RowShape = RowShape(), seed: int = 1) -> dict[str, float]:
    """Insert-or-update Singers ``start_id .. stop_id-1``: one mutation of ``batch_rows`` rows per commit, in threads.

    Returns the rows written, the seconds it took and the rows per second.
    """
    local = threading.local()
    seeds = itertools.count(seed * 1000)

    def commit(ids: range) -> int:
        maker = getattr(local, "maker", None)
        if maker is None:
            maker = local.maker = RowMaker(next(seeds), shape)
        rows = maker.rows(ids)
        with database.batch() as batch:
            batch.insert_or_update("Singers", SINGERS_COLUMNS, rows)
        return len(rows)

    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        done = sum(pool.map(commit, _chunks(start_id, stop_id, batch_rows)))
    seconds = time.perf_counter() - started
    return {"rows": done, "seconds": seconds, "rows_per_second": done / seconds if seconds else 0.0}


def run_threads(count: int, work: Callable[[int], None], *, start_at: float = 0.0) -> None:
    """Run ``work(0) .. work(count - 1)`` on a thread each from ``start_at`` (``time.time()``) on; wait for all.

    >>> seen = []
    >>> run_threads(3, seen.append)
    >>> sorted(seen)
    [0, 1, 2]
    """
    time.sleep(max(0.0, start_at - time.time()))
    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


# --- figures ------------------------------------------------------------------------------------------

def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``samples`` by nearest rank.

    >>> percentile([1, 2, 3, 4], 0.5), percentile([1, 2, 3, 4], 0.95)
    (2, 4)
    """
    ordered = sorted(samples)
    rank = max(1, int(-(-q * len(ordered) // 1)))
    return ordered[min(rank, len(ordered)) - 1]


def mib(n: float) -> float:
    return round(n / (1 << 20), 1)
