"""Our TableWatcher as a child process that reads the Java program's config and prints its lines.

A benchmark comparing us with the Java Spanner Change Watcher runs each library in a process
of its own, given the same config (:func:`watcher.devtools.java_library.watch_config`: table,
shard, ``table_hint``, ``poll_interval_ms``, ``limit``, ``fallback_to_with_query_seconds``, ``checkpoint_table``,
``initial_commit_timestamp``, the stop conditions) and printing the same JSON lines, so one
parser (:class:`~watcher.devtools.java_library.JavaRun`) reads both: ``started`` (``time_ns``,
``cpu_ns``) once the watcher polls, ``change`` per row (table, keys, commit_timestamp as RFC 3339 with
nanoseconds, ``received_ns``: the callback's wall clock, values in :mod:`watcher.codec`'s
JSON form), and ``stopped`` last (reason, state, failure, changes, polls, ``cpu_ns``: this
process's user plus system CPU time). The watcher is the library's ``TableWatcher`` with a
``FixedShardProvider`` and the ``SpannerCommitTimestampRepository``, as a user would build it.

Run as ``python -m watcher.devtools.watcher_process '<config JSON>'`` (or ``@file``); it
reaches the server named by ``SPANNER_EMULATOR_HOST``. :class:`WatcherProcess` starts one
and reads its lines, as :class:`~watcher.devtools.java_library.JavaWatcherProcess` does the
Java program's.

Example:
    >>> shard_provider({"column": "ShardId", "type": "ARRAY<INT64>", "value": [-1, 0, 1]}).values
    (-1, 0, 1)
    >>> initial_timestamp({"initial_commit_timestamp": "min"}).year
    1
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from typing import IO, Any

from ..capture.base import PollRecord
from ..capture.shards import FixedShardProvider
from ..capture.table_info import discover
from ..capture.table_watcher import TableWatcher
from ..checkpoints import DEFAULT_TABLE, SpannerCommitTimestampRepository
from ..codec import decode_value, encode_row, encode_value
from ..model import MIN_TIMESTAMP, Change, rfc3339_nanos
from .java_library import JavaRun, child_environment
from .json_lines_process import JsonLinesProcess

#: Seconds a stop waits for the callback in flight and the last checkpoint write.
STOP_TIMEOUT = 30.0
#: ``fallback_to_with_query_seconds`` that means never: the most the Java program takes (a Java int).
#: Ours gets infinity for it, since a watcher replaying from the minimum timestamp is 2,000 years behind.
NO_WITH_QUERY = 2**31 - 1


def shard_provider(shard: Mapping[str, Any] | None) -> FixedShardProvider | None:
    """The provider of a config's ``shard`` (``{"column", "type", "value"}``, the typed form
    :func:`~watcher.devtools.java_library.typed` writes); None without one."""
    if not shard:
        return None
    return FixedShardProvider(shard["column"], decode_value(shard["type"], shard["value"]))


def initial_timestamp(config: Mapping[str, Any]) -> Any:
    """Where a watcher without a checkpoint starts: ``"min"`` (the whole table), an RFC 3339 text,
    or None (absent: the database's current time, as the Java library's default)."""
    text = config.get("initial_commit_timestamp")
    if text is None:
        return None
    return MIN_TIMESTAMP if text == "min" else decode_value("TIMESTAMP", text)


class _Run:
    """One watch run: prints its lines, counts, and knows when to stop."""

    def __init__(self, config: Mapping[str, Any], out: IO[str], key_columns: tuple[str, ...]) -> None:
        self.out = out
        self.key_columns = key_columns
        self.max_changes = int(config.get("stop_after_changes", -1))
        self.idle_polls = int(config.get("stop_after_idle_polls", -1))
        self.changes = self.polls = self.polls_since_change = 0
        self.reason: str | None = None
        self.stopping = threading.Event()
        self._print_lock = threading.Lock()

    def request_stop(self, why: str) -> None:
        if self.reason is None:
            self.reason = why
        self.stopping.set()

    def print(self, line: Mapping[str, Any]) -> None:
        with self._print_lock:  # one line at a time, flushed: readers see changes as they arrive
            self.out.write(json.dumps(line, separators=(",", ":")) + "\n")
            self.out.flush()

    def on_change(self, change: Change) -> None:
        received = time.time_ns()
        self.polls_since_change = 0
        types = change.column_types
        keys = [encode_value(types.get(name, "STRING"), value) for name, value in zip(self.key_columns, change.keys, strict=True)]
        self.print({"event": "change", "table": change.table, "keys": keys,
                    "commit_timestamp": rfc3339_nanos(change.commit_timestamp), "received_ns": received,
                    "values": encode_row(types, change.row)})
        self.changes += 1
        if 0 <= self.max_changes <= self.changes:
            self.request_stop("changes")

    def on_poll(self, poll: PollRecord) -> None:
        self.polls += 1
        self.polls_since_change += 1
        if 0 <= self.idle_polls < self.polls_since_change:
            self.request_stop("idle_polls")


def watch(config: Mapping[str, Any], out: IO[str], emulator_host: str | None = None) -> int:
    """Run one watch as the config says, printing its lines to ``out``; 0 unless the watcher failed."""
    from ..cli.connection import database_by_name

    name = f"projects/{config['project']}/instances/{config['instance']}/databases/{config['database']}"
    database = database_by_name(name, emulator_host or os.environ.get("SPANNER_EMULATOR_HOST") or None)
    run = _Run(config, out, discover(database, config["table"]).key_columns)  # as the Java program reads the key first
    watcher = TableWatcher(
        database, config["table"], shard_provider=shard_provider(config.get("shard")),
        table_hint=config.get("table_hint", ""), poll_interval=config.get("poll_interval_ms", 1000) / 1000,
        limit=int(config.get("limit", 10_000)), initial_timestamp=initial_timestamp(config),
        fallback_to_with_query_seconds=_fallback_seconds(config.get("fallback_to_with_query_seconds", 60)),
        checkpoints=SpannerCommitTimestampRepository(database, table=config.get("checkpoint_table", DEFAULT_TABLE)),
        name="watcher-process")
    watcher.add_callback(run.on_change)
    watcher.add_poll_listener(run.on_poll)
    watcher.add_failure_listener(lambda _w, _exc: run.request_stop("failed"))
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: run.request_stop("signal"))
    if config.get("stop_on_stdin_close"):
        threading.Thread(target=_drain_then_stop, args=(run,), name="watcher-process-stdin", daemon=True).start()

    watcher.start()
    run.print({"event": "started", "time_ns": time.time_ns(), "cpu_ns": _cpu_ns()})
    seconds = config.get("stop_after_seconds")
    if not run.stopping.wait(float(seconds) if seconds is not None else None):
        run.request_stop("seconds")
    failure = watcher.failure
    watcher.stop(STOP_TIMEOUT)
    failure = failure or watcher.failure
    run.print({"event": "stopped", "reason": run.reason, "state": watcher.state.name,
               "failure": None if failure is None else repr(failure), "changes": run.changes, "polls": run.polls,
               "cpu_ns": _cpu_ns()})
    return 0 if failure is None else 1


def _cpu_ns() -> int:
    """This process's user plus system CPU time so far, all threads (what the Java program reports too)."""
    cpu = os.times()
    return round((cpu.user + cpu.system) * 1e9)


def _fallback_seconds(seconds: float) -> float:
    return float("inf") if seconds >= NO_WITH_QUERY else float(seconds)


def _drain_then_stop(run: _Run) -> None:
    for _ in sys.stdin:
        pass  # input is ignored: only its end matters
    run.request_stop("stdin_closed")


class WatcherProcess:
    """A running ``python -m watcher.devtools.watcher_process`` that watches until :meth:`stop`.

    The same interface as :class:`~watcher.devtools.java_library.JavaWatcherProcess`: a thread
    reads the child's output as it comes, :meth:`events` yields the parsed lines, :meth:`stop`
    closes its stdin and returns the whole run as a :class:`~watcher.devtools.java_library.JavaRun`.
    """

    def __init__(self, config: Mapping[str, Any], *, emulator_host: str | None = None) -> None:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = child_environment(emulator_host)
        # The child must import this very package, also when it runs from a checkout.
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        self._child = JsonLinesProcess([sys.executable, "-m", __name__, json.dumps({**config, "stop_on_stdin_close": True})],
                                       env=env, cwd=root, name="watcher-process-stdout")
        self.process = self._child.process

    def events(self) -> Iterator[dict[str, Any]]:
        """Each printed line (parsed) as it arrives, until the child ends."""
        return self._child.events()

    def stop(self, timeout: float = 60.0) -> JavaRun:
        """Close the child's stdin (it stops its watcher and prints its last line) and wait for it."""
        return JavaRun.from_lines(*self._child.stop(timeout))


def main(argv: list[str] | None = None) -> int:
    """The child: one argument, the config JSON (or ``@file``)."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m watcher.devtools.watcher_process <config JSON | @config-file>", file=sys.stderr)
        return 64
    text = open(args[0][1:]).read() if args[0].startswith("@") else args[0]
    return watch(json.loads(text), sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
