"""The benchmark's writer threads in processes of their own, apart from the watchers they feed.

Python runs one thread of a process at a time (the GIL). With the writers beside the
watchers, the official client's work for a write (building 100 mutations' protobufs) and for a
poll (decoding the rows) took turns on one interpreter, and each waited for the other: polls
took longer, and the detection lag measured that wait as much as the watchers
(benchmarks/RESULTS.md, the bench app). The Java
application's writers and watchers share a JVM whose threads run in parallel; here the
writers run in ``BenchOptions.writer_processes`` child processes
(``python -m watcher.devtools.bench_writers``), each with its share of the threads, and the
bench process keeps the watchers. Transactions, pacing and rows are the same
(:class:`Writers`, thread ``i`` seeded ``seed * 1000 + i`` in either layout), and every
committed transaction still lands in the parent's :class:`WriterLog`, so the rate,
the check that every write was captured and the status line read the same figures.

The child's protocol: its argument is a JSON document (options, database name, emulator
host, its threads); it writes to stdout records of a type byte and a little-endian
length, then the payload:

* ``R``: connected, ready to write (no payload); it then waits for a line ``start <stop time>``;
* ``T``: committed transactions, as five arrays (commit wall times, mutations, commit
  seconds, seconds late against the schedule, then the keys written);
* ``E``: a write error's text;
* ``C``: the CPU seconds the child used since the start of the writes (its last record).

A line ``stop`` on its stdin (or stdin closing: the parent is gone) ends the writes early;
transactions in flight finish.

Example::

    procs = WriterProcesses(Endpoint(database.name, "127.0.0.1:9010"), options)
    procs.prepare()                      # children connected
    procs.start(time.time() + 60)
    ...
    procs.stop(); procs.join(); procs.close()
    procs.log.total_mutations
"""

from __future__ import annotations

import base64
import datetime as dt
import gc
import json
import os
import random
import signal
import string
import struct
import subprocess
import sys
import tempfile
import threading
import time
from array import array
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

from ..errors import ConfigurationError

TABLE = "Singers"
COLUMNS = ("SingerId", "FirstName", "LastName", "BirthDate", "Picture", "Processed", "LastUpdated")
PICTURE_MAX = 1024

#: Seconds between the child's reports of what it committed.
REPORT_EVERY = 0.05
#: Seconds a child gets to start and connect before it counts as failed.
START_TIMEOUT = 60.0
_HEADER = struct.Struct("<cI")
_COUNTS = struct.Struct("<II")


class WriterSettings(Protocol):
    """What the writers read of the benchmark's options (:class:`~.bench.BenchOptions` has it all)."""

    @property
    def write_transactions_per_second(self) -> float: ...
    @property
    def mutations_per_transaction(self) -> int: ...
    @property
    def update_parallelism(self) -> int: ...
    @property
    def writer_processes(self) -> int: ...
    @property
    def seed(self) -> int | None: ...


@dataclass(frozen=True)
class Plan:
    """The writer settings a child process gets (JSON on its command line)."""

    write_transactions_per_second: float
    mutations_per_transaction: int
    update_parallelism: int
    writer_processes: int
    seed: int | None


# --- writer threads --------------------------------------------------------------------------------

class _Rows:
    """Random Singers rows in the client's form (BYTES as base64 text, commit timestamp sentinel)."""

    def __init__(self, rng: random.Random) -> None:
        from google.cloud import spanner

        self.rng = rng
        self.names = ["".join(rng.choices(string.ascii_letters, k=rng.randint(2, 20))) for _ in range(4096)]
        self.dates = [dt.date(1900, 1, 1) + dt.timedelta(days=d) for d in range(0, 365 * 120, 3)]
        # Pictures cut from one block of random bytes: random contents without a randbytes call per row.
        self.block = rng.randbytes(1 << 16)
        self.commit_timestamp = spanner.COMMIT_TIMESTAMP

    def make(self, count: int) -> list[tuple[Any, ...]]:
        rng, out = self.rng, []
        for _ in range(count):
            size = rng.randint(1, PICTURE_MAX)
            start = rng.randrange(len(self.block) - size)
            out.append((rng.getrandbits(63), rng.choice(self.names), rng.choice(self.names), rng.choice(self.dates),
                        base64.b64encode(self.block[start:start + size]), False, self.commit_timestamp))
        return out


@dataclass
class WriterLog:
    """What the writers did: one entry per committed transaction, plus errors."""

    committed_at: array = field(default_factory=lambda: array("d"))   # wall clock, after the commit returned
    mutations: array = field(default_factory=lambda: array("l"))
    commit_seconds: array = field(default_factory=lambda: array("d"))
    late_seconds: array = field(default_factory=lambda: array("d"))   # how late against the schedule it began
    keys: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def transactions(self) -> int:
        return len(self.mutations)

    @property
    def total_mutations(self) -> int:
        return sum(self.mutations)


class WriterPool(Protocol):
    """What a benchmark run does with its writers, in this process (:class:`Writers`) or in
    others (:class:`WriterPool`): :meth:`prepare` before the clock starts, :meth:`start` until a
    wall time, :meth:`stop` early, :meth:`join` the writes, :meth:`close` whatever is left (also
    after a failure); ``log`` holds every committed transaction."""

    log: WriterLog

    def prepare(self) -> None: ...
    def start(self, stop_at: float) -> None: ...
    def stop(self) -> None: ...
    def join(self, timeout: float = 60.0) -> None: ...
    def close(self) -> None: ...
    def cpu_seconds(self) -> float | None: ...


class Writers:
    """``update_parallelism`` threads running InsertOrUpdate transactions until ``stop_at``.

    ``threads`` runs only those of the threads (a share of them, in a writer process); each
    thread paces itself for ``update_parallelism`` threads in all.
    """

    def __init__(self, database: Any, options: WriterSettings, log: WriterLog | None = None, *,
                 threads: range | None = None) -> None:
        self.database = database
        self.options = options
        self.log = log or WriterLog()
        self.share = threads if threads is not None else range(options.update_parallelism)
        self.threads: list[threading.Thread] = []
        self.stop_at = 0.0

    def start(self, stop_at: float) -> None:
        self.stop_at = stop_at
        seed = self.options.seed if self.options.seed is not None else random.randrange(1 << 30)
        for i in self.share:
            t = threading.Thread(target=self._work, args=(random.Random(seed * 1000 + i),), name=f"bench-writer-{i}",
                                 daemon=True)
            t.start()
            self.threads.append(t)

    def prepare(self) -> None:
        """Nothing to start before the clock: the threads share this process's client."""

    def stop(self) -> None:
        """End the writes early: each thread finishes the transaction in flight."""
        self.stop_at = 0.0

    def join(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        """Nothing outlives the run: the threads end with their writes (:meth:`join`)."""

    def cpu_seconds(self) -> float | None:
        """None: the threads' CPU is the calling process's own."""
        return None

    def _work(self, rng: random.Random) -> None:
        rows = _Rows(rng)
        mean_gap = self.options.update_parallelism / self.options.write_transactions_per_second
        most = 2 * self.options.mutations_per_transaction
        due = time.time() + rng.uniform(0, 2 * mean_gap)
        while due < self.stop_at:
            time.sleep(max(0.0, due - time.time()))
            began = time.time()
            batch_rows = rows.make(rng.randint(1, most))
            try:
                with self.database.batch() as batch:
                    batch.insert_or_update(TABLE, COLUMNS, batch_rows)
            except Exception as exc:  # noqa: BLE001 - counted and reported, the run goes on
                with self.log.lock:
                    self.log.errors.append(f"{type(exc).__name__}: {exc}"[:300])
            else:
                done = time.time()
                with self.log.lock:
                    self.log.committed_at.append(done)
                    self.log.mutations.append(len(batch_rows))
                    self.log.commit_seconds.append(done - began)
                    self.log.late_seconds.append(max(0.0, began - due))
                    self.log.keys.extend(r[0] for r in batch_rows)
            due += rng.uniform(0, 2 * mean_gap)



# --- writer processes ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Endpoint:
    """Where writer processes connect: the database's full name and the emulator address (None: real Spanner)."""

    database: str
    emulator_host: str | None = None

    @classmethod
    def of(cls, database: Any) -> Endpoint:
        """The database's endpoint as this process reaches it through ``SPANNER_EMULATOR_HOST`` (or real Spanner)."""
        from ..cli.connection import EMULATOR_ENV

        return cls(database.name, os.environ.get(EMULATOR_ENV) or None)


def thread_shares(threads: int, processes: int) -> list[range]:
    """Split writer threads ``0..threads-1`` between ``processes`` as evenly as possible.

    >>> thread_shares(16, 3)
    [range(0, 6), range(6, 11), range(11, 16)]
    """
    base, extra = divmod(threads, processes)
    out, start = [], 0
    for i in range(processes):
        n = base + (1 if i < extra else 0)
        out.append(range(start, start + n))
        start += n
    return out


class WriterProcesses:
    """:class:`Writers` in ``options.writer_processes`` child processes, logging into one :class:`WriterLog`.

    Same interface as :class:`Writers`: :meth:`start`, :meth:`stop`, :meth:`join`, ``log``.
    Thread-safe as the log is: reader threads append under ``log.lock``.
    """

    def __init__(self, endpoint: Endpoint, options: WriterSettings, log: WriterLog | None = None) -> None:
        self.endpoint = endpoint
        self.options = options
        self.log = log or WriterLog()
        self.stop_at = 0.0
        self._children: list[subprocess.Popen[bytes]] = []
        self._readers: list[threading.Thread] = []
        self._ready: list[threading.Event] = []
        self._done: list[threading.Event] = []
        self._logs: list[IO[bytes]] = []
        self._cpu = 0.0

    def prepare(self) -> None:
        """Start the children and wait until each has connected (import and connection take a second or two),
        so that the writes begin on time; raises ConfigurationError with a child's reason if one fails."""
        if self._children:
            return
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        # The child must import this very package, also when it runs from a checkout.
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
        o = self.options
        plan = Plan(o.write_transactions_per_second, o.mutations_per_transaction, o.update_parallelism,
                    o.writer_processes, o.seed if o.seed is not None else random.randrange(1 << 30))
        for share in thread_shares(o.update_parallelism, o.writer_processes):
            spec = {"plan": plan.__dict__, "database": self.endpoint.database,
                    "emulator_host": self.endpoint.emulator_host, "first_thread": share.start, "threads": len(share)}
            # Its log goes to a file, not a pipe: a chatty child must never block on a full pipe.
            log = tempfile.TemporaryFile()
            child = subprocess.Popen([sys.executable, "-m", __name__, json.dumps(spec)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=log, cwd=root, env=env)
            self._logs.append(log)
            ready, done = threading.Event(), threading.Event()
            self._children.append(child)
            self._done.append(done)
            reader = threading.Thread(target=self._read, args=(child, ready, done), name="bench-writer-reader",
                                      daemon=True)
            reader.start()
            self._readers.append(reader)
            self._ready.append(ready)
        deadline = time.monotonic() + START_TIMEOUT
        for ready in self._ready:
            ready.wait(max(0.0, deadline - time.monotonic()))
        if not all(r.is_set() for r in self._ready) or self.log.errors:
            self.close(10)
            reason = self.log.errors[0] if self.log.errors else f"a writer process did not connect within {START_TIMEOUT:g} s"
            raise ConfigurationError(reason)

    def start(self, stop_at: float) -> None:
        """Start the writes (children not yet prepared are first); the threads write until ``stop_at`` (wall clock)."""
        self.prepare()
        self.stop_at = stop_at
        self._tell(f"start {stop_at!r}")

    def _tell(self, line: str) -> None:
        for child in self._children:
            try:
                assert child.stdin is not None
                child.stdin.write(line.encode() + b"\n")
                child.stdin.flush()
            except (OSError, ValueError):
                pass  # it has ended already

    def stop(self) -> None:
        """End the writes early: the children finish the transactions in flight."""
        self.stop_at = 0.0
        self._tell("stop")

    def join(self, timeout: float = 60.0) -> None:
        """Wait until every child has sent its last record (its writer threads ended); a child that has
        not by ``timeout`` seconds is killed. The processes themselves end in :meth:`close`: their
        interpreter's teardown is not part of the writes (the run's rate is measured up to here)."""
        deadline = time.monotonic() + timeout
        for child, done in zip(self._children, self._done, strict=True):
            if not done.wait(max(0.0, deadline - time.monotonic())):
                child.kill()
                self._error(f"a writer process did not end within {timeout:g} s and was killed")

    def close(self, timeout: float = 30.0) -> None:
        """Stop the writes if they still run, wait for the children to exit (killed after ``timeout`` seconds)."""
        self.stop()
        deadline = time.monotonic() + timeout
        for child in self._children:
            try:
                child.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        for reader in self._readers:
            reader.join(10)
        for log in self._logs:
            log.close()

    def cpu_seconds(self) -> float | None:
        """User plus system CPU seconds the children reported (once they ended)."""
        return self._cpu

    def _error(self, message: str) -> None:
        with self.log.lock:
            self.log.errors.append(message[:300])

    def _read(self, child: subprocess.Popen[bytes], ready: threading.Event, done: threading.Event) -> None:
        assert child.stdout is not None
        ended = False
        for kind, payload in _records(child.stdout):
            if kind == b"R":
                ready.set()
            elif kind == b"T":
                self._add(payload)
            elif kind == b"E":
                self._error(payload.decode("utf-8", "replace"))
            elif kind == b"C":
                with self.log.lock:
                    self._cpu += struct.unpack("<d", payload)[0]
                ended = True
                done.set()
        if not ended:  # it died, or could not start: its last words say why
            child.wait()
            log = self._logs[self._children.index(child)]
            log.seek(0)
            words = log.read().decode("utf-8", "replace").strip().splitlines()
            self._error(f"a writer process ended with status {child.returncode}: {words[-1] if words else 'no output'}")
        ready.set()  # never leave prepare() or join() waiting for a child that is gone
        done.set()

    def _add(self, payload: bytes) -> None:
        transactions, keys = _COUNTS.unpack_from(payload)
        parts = []
        at = _COUNTS.size
        for code, n in (("d", transactions), ("l", transactions), ("d", transactions), ("d", transactions), ("q", keys)):
            a = array(code)
            a.frombytes(payload[at:at + n * a.itemsize])
            at += n * a.itemsize
            parts.append(a)
        committed_at, mutations, commit_seconds, late_seconds, written = parts
        with self.log.lock:
            self.log.committed_at.extend(committed_at)
            self.log.mutations.extend(mutations)
            self.log.commit_seconds.extend(commit_seconds)
            self.log.late_seconds.extend(late_seconds)
            self.log.keys.extend(written)


def _records(stream: IO[bytes]) -> Any:
    while True:
        header = stream.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        kind, size = _HEADER.unpack(header)
        payload = stream.read(size)
        if len(payload) < size:
            return
        yield kind, payload


# --- the child -------------------------------------------------------------------------------------

class _Reporter:
    """Sends what the writers committed since the last report, every :data:`REPORT_EVERY` seconds."""

    def __init__(self, log: WriterLog, out: IO[bytes]) -> None:
        self.log, self.out = log, out
        self.transactions = self.keys = self.errors = 0

    def send(self) -> None:
        with self.log.lock:
            log, t0, k0 = self.log, self.transactions, self.keys
            t1 = len(log.mutations)
            k1 = len(log.keys)
            arrays = [log.committed_at[t0:t1], log.mutations[t0:t1], log.commit_seconds[t0:t1],
                      log.late_seconds[t0:t1], array("q", log.keys[k0:k1])]
            errors = log.errors[self.errors:]
            self.transactions, self.keys, self.errors = t1, k1, len(log.errors)
        if t1 > t0:
            payload = _COUNTS.pack(t1 - t0, k1 - k0) + b"".join(a.tobytes() for a in arrays)
            self.out.write(_HEADER.pack(b"T", len(payload)) + payload)
        for e in errors:
            data = e.encode("utf-8")
            self.out.write(_HEADER.pack(b"E", len(data)) + data)
        self.out.flush()


def main(argv: list[str] | None = None) -> int:
    """Run one share of the writer threads as :class:`WriterProcesses` started it (see the module docstring).

    Returns:
        0 once the writes ended and every record was sent.
    """
    from ..cli.connection import database_by_name

    # Ctrl-C reaches the whole foreground process group: the parent stops the run and tells this
    # child ("stop" on stdin), so its transactions in flight finish instead of dying half-reported.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    spec = json.loads((argv if argv is not None else sys.argv[1:])[0])
    options = Plan(**spec["plan"])
    database = database_by_name(spec["database"], spec["emulator_host"])
    out = sys.stdout.buffer
    writers = Writers(database, options, threads=range(spec["first_thread"], spec["first_thread"] + spec["threads"]))
    # The client's heap lives as long as the process: keep full collections from walking it (see bench._freeze_heap).
    gc.collect()
    gc.freeze()
    out.write(_HEADER.pack(b"R", 0))
    out.flush()
    command = sys.stdin.readline().split()
    reporter = _Reporter(writers.log, out)
    cpu0 = os.times()
    if command[:1] == ["start"]:
        threading.Thread(target=_watch_stdin, args=(writers,), name="bench-writer-stop", daemon=True).start()
        writers.start(float(command[1]))
    while any(t.is_alive() for t in writers.threads):
        time.sleep(REPORT_EVERY)
        reporter.send()
    reporter.send()
    cpu = os.times()  # from the start of the writes: the imports and the connection are not the run's
    out.write(_HEADER.pack(b"C", 8) + struct.pack("<d", cpu.user + cpu.system - cpu0.user - cpu0.system))
    out.flush()
    return 0


def _watch_stdin(writers: Writers) -> None:
    for line in sys.stdin:
        if line.strip() == "stop":
            break
    writers.stop()  # "stop", or the parent closed the pipe (it is gone)


if __name__ == "__main__":
    sys.exit(main())
