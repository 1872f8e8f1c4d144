"""Debezium's Spanner connector (Kafka Connect) against ChangeStreamWatcher + KafkaSink: changes/s and commit -> consumer.

One broker (:class:`~watcher.devtools.kafka_broker.KafkaBroker`) and one local server process
holding Singers and ``CREATE CHANGE STREAM SingersStream FOR Singers`` serve both sides, one after
the other in each round (sides alternating their order between rounds):

* **ours**: a ChangeStreamWatcher process publishing through KafkaSink, exactly the kafka
  benchmark's change-stream watcher (:func:`benchmarks.kafka_delivery._watch`);
* **Debezium**: a standalone Kafka Connect worker (its own JVM,
  :class:`~watcher.devtools.debezium_connect.DebeziumConnect`) running
  ``io.debezium.connector.spanner.SpannerConnector`` on the same stream, one task, change-stream
  heartbeats every second like ours, JSON events without schemas; started before the clock and
  waited for until its task is RUNNING.

The workload is the kafka benchmark's writer (:func:`benchmarks.kafka_delivery._write`:
100 commits/s x 10 InsertOrUpdate rows, 1,000 changes/s) for a warm-up (10 s) then a measured stretch (20 s).
A consumer notes the wall clock at which each message is read: the kafka benchmark's reader
(the ``commit_timestamp`` header) for ours, the same loop reading the commit time of
Debezium's envelope (``source.ts_ns``) for Debezium's topic (other messages of the connector, e.g. watermark
stamps, carry no ``op`` and are left out). Only changes committed in the measured stretch count:

* **changes/s delivered** = those changes read / seconds from the stretch's start to the last
  of them read (a side that keeps up reads about 1,000/s);
* **committed/s**: the same changes over seconds from the stretch's start to the last one's commit
  (the writer's own pace on this machine, to read the first figure against);
* **CPU per change**: the watcher process's or the Connect JVM's CPU time (all threads) from the
  workload's start to the drain's end, over the changes written; the server's too (writes and reads);
* **commit -> consumer** p50/p99 over them (one machine clock); for Debezium also commit -> the
  connector's processing time (the envelope's ``ts_ns``), its own part of the lag.

Both sides are drained until their topic has been quiet for :data:`QUIET_SECONDS`. The Java client
asks the server for the database's dialect first (:data:`DIALECT_SQL`, INFORMATION_SCHEMA.DATABASE_OPTIONS):
the benchmark stops at once, naming the query, when the server cannot answer it.
Targets: ours delivers at least as many changes/s as Debezium (median of rounds) with a lower
commit -> consumer p99 (median of rounds).
"""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
import os
import time
import uuid
from typing import Any

from . import Result, RunContext, check
from .kafka_delivery import (
    COMMITS_PER_SECOND,
    DATABASE_ID,
    PARTITIONS,
    ROWS_PER_COMMIT,
    START_TIMEOUT,
    STREAM,
    _create_topics,
    _quantiles,
    _range,
    _Reader,
    _watch,
    _write,
)
from .localspanner_server import INSTANCE, PROJECT, ServerProcess, connect, cpu_seconds, singers_database

NAME = "debezium"
TITLE = ("Debezium's Spanner connector in Kafka Connect vs ChangeStreamWatcher + KafkaSink, same stream, broker and "
         "1,000 changes/s: changes/s delivered and commit -> consumer latency")

SIDES = ("ours", "debezium")
#: A 10 s warm-up (the kafka benchmark uses 3 s): a fresh JVM spends its first seconds compiling.
FULL: dict[str, Any] = {"rounds": 3, "live_seconds": 20.0, "warmup_seconds": 10.0}
QUICK: dict[str, Any] = {"rounds": 1, "live_seconds": 4.0, "warmup_seconds": 2.0}
#: A side is drained when its topic got nothing new for this long (at most DRAIN_LIMIT seconds).
QUIET_SECONDS = 3.0
DRAIN_LIMIT = 120.0
#: Debezium's change-stream heartbeat, as ours (its default is 5 minutes).
HEARTBEAT_MS = 1000
#: What the Java client asks before the connector reads anything (``DatabaseClient.getDialect``).
DIALECT_SQL = "select option_value from information_schema.database_options where option_name='database_dialect'"


class _EnvelopeReader(_Reader):
    """The kafka benchmark's reader for Debezium's events: the commit time from the envelope's ``source``;
    ``emitted`` holds (connector's processing ns, commit ns) per change, the connector's part of the lag."""

    def __init__(self, servers: str, topics: list[str]) -> None:
        self.emitted: list[tuple[int, int]] = []
        super().__init__(servers, topics)

    def _run(self) -> None:
        while not self._stop.is_set():
            m = self.consumer.poll(0.05)
            value = m.value() if m is not None and m.error() is None else None
            if m is None or not value:
                continue
            now = time.time_ns()
            event = json.loads(value)
            if isinstance(event, dict) and "op" in event:  # a change, not one of the connector's own stamps
                commit = commit_nanos(event["source"])
                self.seen[str(m.topic())].append((now, commit))
                self.emitted.append((commit_nanos(event), commit))


def commit_nanos(source: dict[str, Any]) -> int:
    """The commit timestamp of a Debezium Spanner event given its ``source`` (``ts_ns``, or ``ts_us``/``ts_ms``);
    given the envelope itself, the time the connector processed the change.

    >>> commit_nanos({"ts_ms": 1700000000123, "ts_us": 1700000000123456})
    1700000000123456000
    """
    if source.get("ts_ns") is not None:
        return int(source["ts_ns"])
    if source.get("ts_us") is not None:
        return int(source["ts_us"]) * 1000
    return int(source["ts_ms"]) * 1_000_000


def _drain(reader: _Reader, topic: str) -> None:
    """Wait until ``topic`` got nothing new for QUIET_SECONDS (or DRAIN_LIMIT passed)."""
    deadline, count, quiet_since = time.monotonic() + DRAIN_LIMIT, -1, time.monotonic()
    while time.monotonic() < deadline:
        now_count = len(reader.seen[topic])
        if now_count != count:
            count, quiet_since = now_count, time.monotonic()
        elif time.monotonic() - quiet_since >= QUIET_SECONDS:
            return
        time.sleep(0.2)


def _workload(mp: Any, host: str, settings: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Run the writer; the start of the measured stretch (ns) and what it wrote."""
    out = mp.Queue()
    start_at = time.time() + 1.0
    measure_from = int((start_at + settings["warmup_seconds"]) * 1e9)
    # daemon: an interrupted run must not wait at exit for a writer whose server is gone
    writer = mp.Process(target=_write, args=(host, start_at, settings["warmup_seconds"] + settings["live_seconds"], out),
                        daemon=True)
    writer.start()
    written = out.get(timeout=settings["live_seconds"] + 300)
    writer.join(30)
    return measure_from, written


def _figures(seen: list[tuple[int, int]], measure_from: int) -> dict[str, Any]:
    measured = [(at, commit) for at, commit in seen if commit >= measure_from]
    if not measured:
        return {"messages_read": len(seen), "changes_measured": 0, "changes_per_second": 0.0, "latency_ms": {}}
    last, last_commit = max(at for at, _ in measured), max(commit for _, commit in measured)
    return {"messages_read": len(seen), "changes_measured": len(measured),
            "changes_per_second": round(len(measured) / ((last - measure_from) / 1e9), 1),
            "committed_per_second": round(len(measured) / ((last_commit - measure_from) / 1e9), 1),
            "latency_ms": _quantiles([(at - commit) / 1e6 for at, commit in measured])}


def _check_dialect_query(database: Any) -> None:
    """Fail early, naming the SQL, when the server cannot answer the Java client's dialect query."""
    try:
        with database.snapshot() as snap:
            list(snap.execute_sql(DIALECT_SQL))
    except Exception as exc:  # noqa: BLE001 - any refusal means the connector cannot start
        raise RuntimeError("the local server cannot answer the Java Spanner client's dialect query, which "
                           f"Debezium's connector runs first: {DIALECT_SQL!r}: {exc}") from exc


def _ours(ctx: RunContext, mp: Any, server: Any, servers: str, database: Any, settings: dict[str, Any]) -> dict[str, Any]:
    host = server.emulator_host
    with database.snapshot() as snap:
        start: dt.datetime = list(snap.execute_sql("SELECT CURRENT_TIMESTAMP()"))[0][0]
    topic = f"bench-{uuid.uuid4().hex[:8]}-ours"
    _create_topics(servers, [topic])
    reader = _Reader(servers, [topic])
    out, stop, measure, ready = mp.Queue(), mp.Event(), mp.Value("q", 2**62), mp.Event()
    proc = mp.Process(target=_watch, args=("change_stream", host, servers, topic, start, measure, ready, stop, out),
                      daemon=True)
    proc.start()
    try:
        if not ready.wait(START_TIMEOUT):
            raise RuntimeError("the ChangeStreamWatcher process did not start")
        cpu, server_cpu = cpu_seconds(proc.pid), cpu_seconds(server.pid)
        measure_from, written = _workload(mp, host, settings)
        measure.value = measure_from
        _drain(reader, topic)
        cpu, server_cpu = cpu_seconds(proc.pid) - cpu, cpu_seconds(server.pid) - server_cpu
        stop.set()
        done = out.get(timeout=120)
    finally:
        stop.set()
        proc.join(30)
        reader.close()
    if done["failure"]:
        raise RuntimeError(f"the ChangeStreamWatcher failed: {done['failure']}")
    return {**_figures(reader.seen[topic], measure_from), "written": written, "messages_sent": done["messages_sent"],
            **_cpu(cpu, server_cpu, written)}


def _cpu(client: float, server: float, written: dict[str, Any]) -> dict[str, float]:
    count = max(written["mutations"], 1)
    return {"cpu_us_per_change": round(1e6 * client / count, 1), "server_cpu_us_per_change": round(1e6 * server / count, 1)}


def _debezium(ctx: RunContext, mp: Any, server: Any, servers: str, settings: dict[str, Any],
              round_no: int) -> dict[str, Any]:
    from watcher.devtools.debezium_connect import DebeziumConnect

    host = server.emulator_host
    name = f"dbz{round_no}-{uuid.uuid4().hex[:6]}"
    connect = DebeziumConnect(servers, host, project=PROJECT, instance=INSTANCE, database=DATABASE_ID,
                              change_stream=STREAM, name=name, folder=os.path.join(ctx.workdir, f"connect-{name}"),
                              extra={"heartbeat.interval.ms": str(HEARTBEAT_MS)})
    topic = connect.topic("Singers")
    _create_topics(servers, [topic])
    reader = _EnvelopeReader(servers, [topic])
    try:
        started = time.perf_counter()
        connect.start()
        startup = time.perf_counter() - started
        assert connect.pid is not None
        cpu, server_cpu = cpu_seconds(connect.pid), cpu_seconds(server.pid)
        measure_from, written = _workload(mp, host, settings)
        _drain(reader, topic)
        cpu, server_cpu = cpu_seconds(connect.pid) - cpu, cpu_seconds(server.pid) - server_cpu
    except Exception:
        ctx.log(connect.log_tail(80))
        raise
    finally:
        connect.stop()
        reader.close()
    emit = [(at - commit) / 1e6 for at, commit in reader.emitted if commit >= measure_from]
    return {**_figures(reader.seen[topic], measure_from), "commit_to_emit_ms": _quantiles(emit), "written": written,
            "startup_seconds": round(startup, 1), **_cpu(cpu, server_cpu, written)}


def run(ctx: RunContext) -> Result:
    from watcher.devtools.debezium_connect import POM
    from watcher.devtools.kafka_broker import KafkaBroker
    from watcher.schema_tools.ddl import create_change_stream

    settings = dict(QUICK if ctx.quick else FULL)
    result = Result(settings={
        **settings, "partitions": PARTITIONS,
        "load": f"{COMMITS_PER_SECOND} commits/s x {ROWS_PER_COMMIT} InsertOrUpdate rows (the kafka benchmark's writer)",
        "ours": f"ChangeStreamWatcher on {STREAM} FOR Singers, heartbeat 1 s, KafkaSink, own process",
        "debezium": f"Kafka Connect standalone + debezium-connector-spanner ({POM.parent.name}/pom.xml), tasks.max=1, "
                    f"heartbeat.interval.ms={HEARTBEAT_MS}, JsonConverter without schemas, own JVM",
        "broker": "watcher.devtools.kafka_broker.KafkaBroker (Kafka 4.1 KRaft, one node)",
    })
    mp = multiprocessing.get_context("spawn")
    rounds: list[dict[str, Any]] = []
    with KafkaBroker(os.path.join(ctx.workdir, "kafka-broker")) as broker:
        servers = broker.bootstrap_servers
        with ServerProcess(os.path.join(ctx.workdir, "debezium-data")) as server:
            database = singers_database(connect(server), DATABASE_ID)
            _check_dialect_query(database)
            database.update_ddl([create_change_stream(STREAM, {"Singers": None})]).result(120)
            for r in range(settings["rounds"]):
                got: dict[str, Any] = {}
                for side in (SIDES if r % 2 == 0 else SIDES[::-1]):
                    got[side] = (_ours(ctx, mp, server, servers, database, settings) if side == "ours"
                                 else _debezium(ctx, mp, server, servers, settings, r))
                    ctx.log(f"round {r + 1} {side}: {got[side]['changes_measured']:,} changes measured, "
                            f"{got[side]['changes_per_second']:,.0f}/s, commit -> consumer {got[side]['latency_ms']}")
                rounds.append(got)

    figures: dict[str, Any] = {side: {
        "changes_per_second": _range([r[side]["changes_per_second"] for r in rounds]),
        "p50_ms": _range([r[side]["latency_ms"].get("p50", float("inf")) for r in rounds]),
        "p99_ms": _range([r[side]["latency_ms"].get("p99", float("inf")) for r in rounds]),
        "committed_per_second": _range([r[side]["committed_per_second"] for r in rounds]),
        "cpu_us_per_change": _range([r[side]["cpu_us_per_change"] for r in rounds]),
        "server_cpu_us_per_change": _range([r[side]["server_cpu_us_per_change"] for r in rounds]),
    } for side in SIDES}
    figures["debezium"]["commit_to_emit_p99_ms"] = _range([r["debezium"]["commit_to_emit_ms"].get("p99", float("inf"))
                                                           for r in rounds])
    figures["rounds"] = rounds
    figures["loadavg_1min_after"] = round(os.getloadavg()[0], 1)
    result.figures = figures
    ours, theirs = figures["ours"], figures["debezium"]
    result.checks += [
        check("ours / Debezium changes/s delivered, median of rounds",
              round(ours["changes_per_second"]["median"] / max(theirs["changes_per_second"]["median"], 1e-9), 3),
              ">=", 1.0),
        check("ours - Debezium commit -> consumer p99, median of rounds (ms)",
              round(ours["p99_ms"]["median"] - theirs["p99_ms"]["median"], 1), "<", 0.0),
    ]
    return result

