"""KafkaSink against a bare confluent-kafka producer loop, and commit -> readable-by-a-consumer latency.

One real broker (:class:`~watcher.devtools.kafka_broker.KafkaBroker`, KRaft, its own JVM).

* **Throughput**, side by side in one process, rounds alternating: ``changes`` Singers-like
  changes (7 columns, 1..1,024-byte BYTES) go to a topic of :data:`PARTITIONS` partitions
  through :meth:`KafkaSink.write_batch` in batches of :data:`BATCH` (a poll's LIMIT), each batch
  returning once the broker acknowledged it; and the very same messages
  (:meth:`KafkaSink.messages` per batch, built before the clock starts) through a bare loop of
  ``Producer.produce`` with a delivery callback and one ``flush`` at the end, with the sink's
  settings (``enable.idempotence=true``, ``acks=all``). Changes/s = changes / seconds from the
  first produce to the last acknowledgement; the sink's figure includes building its messages
  (the typed values, Debezium envelope, change id, JSON bytes), which the loop is handed ready. Beside
  it, the sink as the watchers use it: :meth:`KafkaSink.submit_batch` with up to :data:`IN_FLIGHT`
  batches in flight (the watchers' default ``max_batches_in_flight``), so that one batch is built
  while the broker takes the ones before it (not the target's figure).
* **Latency**: a local server process holds Singers and ``CREATE CHANGE STREAM ... FOR
  Singers``; a writer process commits :data:`COMMITS_PER_SECOND` x :data:`ROWS_PER_COMMIT`
  InsertOrUpdate rows (1,000 changes/s) while two watcher processes publish through KafkaSink,
  each to its own topic: a TableWatcher polling every 0.5 s (37 shards, FORCE_INDEX, limit
  10,000) and a ChangeStreamWatcher. A consumer (``isolation.level`` default, reading from the
  start) notes the wall clock at which each message is read; latency = that minus the message's
  ``commit_timestamp`` header (one machine clock), commits after the warm-up only. The watcher's
  part is noted too: commit -> its batch callback, before the sink publishes.

Targets: the sink at least 0.8x the bare loop's changes/s (median of the rounds' ratios);
latency p99 at most 1.5 s polling at 0.5 s and at most 200 ms from the change stream.
"""

from __future__ import annotations

import base64
import datetime as dt
import multiprocessing
import os
import random
import threading
import time
import uuid
from typing import Any

from . import Result, RunContext, check
from .localspanner_server import (
    ALL_SHARDS,
    SINGERS_COLUMNS,
    RowMaker,
    child_database,
    percentile,
    run_threads,
    singers_server,
)

NAME = "kafka"
TITLE = ("KafkaSink vs a bare confluent-kafka producer loop (changes/s, same messages and settings); commit -> "
         "consumer latency at 1,000 changes/s, polling at 0.5 s and from a change stream")

PARTITIONS = 6
BATCH = 10_000
#: Batches the sink's second figure keeps in flight (the watchers' default max_batches_in_flight).
IN_FLIGHT = 4
DATABASE_ID = "kafka_delivery"
STREAM = "SingersStream"
HINT = "@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}"
POLL_INTERVAL = 0.5
LIMIT = 10_000
COMMITS_PER_SECOND = 100
ROWS_PER_COMMIT = 10
LIVE_KEYS = 2_000
WRITER_THREADS = 4
MODES = ("poll", "change_stream")
TARGET_RATIO = 0.8
TARGET_P99_MS = {"poll": 1_500.0, "change_stream": 200.0}
#: The poll watcher never switches to the WITH query (the embedded server runs it far slower).
NO_WITH_QUERY = 10**9
FULL: dict[str, Any] = {"changes": 200_000, "rounds": 3, "live_rounds": 2, "live_seconds": 20.0, "warmup_seconds": 3.0}
QUICK: dict[str, Any] = {"changes": 20_000, "rounds": 1, "live_rounds": 1, "live_seconds": 4.0, "warmup_seconds": 1.0}
START_TIMEOUT = 60.0
DRAIN_SECONDS = 3.0
TYPES = {"SingerId": "INT64", "FirstName": "STRING", "LastName": "STRING", "BirthDate": "DATE", "Picture": "BYTES",
         "LastUpdated": "TIMESTAMP", "Processed": "BOOL"}


# --- throughput: the sink and the bare loop ------------------------------------------------------------

def _changes(count: int, seed: int) -> list[Any]:
    """``count`` polled Singers changes, one key each, at increasing commit timestamps."""
    from watcher.model import Change, from_nanos

    maker, base = RowMaker(seed), time.time_ns()
    out = []
    for i in range(count):
        values = maker.row(i)
        row = dict(zip(SINGERS_COLUMNS, values, strict=True))
        row["Picture"] = base64.b64decode(row["Picture"])
        row["LastUpdated"] = from_nanos(base + i * 1000)
        out.append(Change("Singers", (i,), row, row["LastUpdated"], column_types=TYPES))
    return out


def _table_info() -> Any:
    from watcher.capture.table_info import TableInfo
    from watcher.model import TableId

    return TableInfo(TableId("Singers"), "LastUpdated", ("SingerId",), dict(TYPES))


def _create_topics(servers: str, topics: list[str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": servers})
    for future in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in topics]).values():
        future.result(60)


def _sink_round(servers: str, topic: str, changes: list[Any], info: Any, in_flight: int = 1) -> float:
    """Changes/s through the sink: ``write_batch`` per batch (``in_flight`` 1), else ``submit_batch`` with up to
    ``in_flight`` batches waiting for the broker, as a watcher's poll loop hands them over."""
    from collections import deque

    from watcher.sinks.kafka import KafkaSink

    sink = KafkaSink(servers, topic=topic)
    try:
        sink.write_batch(changes[:1], info)  # producer made, topic checked: not part of the rate
        started = time.perf_counter()
        waiting: deque[Any] = deque()
        for first in range(0, len(changes), BATCH):
            if in_flight == 1:
                sink.write_batch(changes[first:first + BATCH], info)
                continue
            if len(waiting) == in_flight:
                waiting.popleft().result()
            waiting.append(sink.submit_batch(changes[first:first + BATCH], info))
        for future in waiting:
            future.result()
        return len(changes) / (time.perf_counter() - started)
    finally:
        sink.close()


def _bare_round(servers: str, topic: str, messages: list[Any]) -> float:
    from confluent_kafka import Producer

    from watcher.sinks.kafka import PRODUCER_SETTINGS

    producer = Producer({"bootstrap.servers": servers, **PRODUCER_SETTINGS})
    failed = [0]

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            failed[0] += 1

    producer.produce(topic, value=messages[0].value, key=messages[0].key)  # connected, PID acquired
    producer.flush(30)
    started = time.perf_counter()
    for m in messages:
        while True:
            try:
                producer.produce(topic, value=m.value, key=m.key, headers=list(m.headers), on_delivery=report)
                break
            except BufferError:  # the client's queue is full: deliveries make room
                producer.poll(0.05)
    if producer.flush(120) or failed[0]:
        raise RuntimeError(f"the bare loop lost messages: {failed[0]} failed")
    return len(messages) / (time.perf_counter() - started)


def _throughput(ctx: RunContext, servers: str, settings: dict[str, Any]) -> dict[str, Any]:
    from watcher.sinks.kafka import KafkaSink

    changes, info = _changes(settings["changes"], 7), _table_info()
    builder, messages = KafkaSink(servers), []
    started = time.perf_counter()
    for first in range(0, len(changes), BATCH):  # batch by batch, as the sink builds them
        messages.extend(builder.messages(changes[first:first + BATCH], info))
    build_seconds = time.perf_counter() - started
    rounds = []
    for r in range(settings["rounds"]):
        topics = [f"bench-{uuid.uuid4().hex[:8]}-{side}" for side in ("sink", "bare", "flying")]
        _create_topics(servers, topics)
        sink = _sink_round(servers, topics[0], changes, info)
        bare = _bare_round(servers, topics[1], messages)
        flying = _sink_round(servers, topics[2], changes, info, IN_FLIGHT)
        rounds.append({"sink_changes_per_second": round(sink), "bare_changes_per_second": round(bare),
                       "ratio": round(sink / bare, 3), "sink_in_flight_changes_per_second": round(flying),
                       "ratio_in_flight": round(flying / bare, 3)})
        ctx.log(f"throughput round {r + 1}: sink {sink:,.0f}/s, bare loop {bare:,.0f}/s, ratio {sink / bare:.2f}; "
                f"{IN_FLIGHT} batches in flight {flying:,.0f}/s, ratio {flying / bare:.2f}")
    return {"rounds": rounds, "message_build_us_per_change": round(1e6 * build_seconds / len(changes), 1),
            "bytes_per_message": round(sum(len(m.value or b"") + len(m.key) for m in messages) / len(messages))}


# --- latency: writers, two watcher processes, a consumer -----------------------------------------------

def _watch(mode: str, host: str, servers: str, topic: str, start: dt.datetime, measure_from: Any, ready: Any,
           stop: Any, out: Any) -> None:
    """A watcher of ``mode`` publishing to ``topic`` until told to stop (a child process); reports its
    commit -> callback latency too (changes committed from ``measure_from`` on), the watcher's part."""
    from watcher import ChangeStreamWatcher, FixedShardProvider, InMemoryProgressStore, TableWatcher
    from watcher.checkpoints.memory import InMemoryCommitTimestampRepository
    from watcher.model import timestamp_nanos
    from watcher.sinks.kafka import KafkaSink

    database = child_database(host, DATABASE_ID)
    if mode == "poll":
        w: Any = TableWatcher(database, "Singers", shard_provider=FixedShardProvider("ShardId", ALL_SHARDS),
                              table_hint=HINT, poll_interval=POLL_INTERVAL, limit=LIMIT, initial_timestamp=start,
                              checkpoints=InMemoryCommitTimestampRepository(),
                              fallback_to_with_query_seconds=NO_WITH_QUERY)
    else:
        w = ChangeStreamWatcher(database, STREAM, heartbeat=1.0, start=start, progress=InMemoryProgressStore())
    seen: list[tuple[int, int]] = []
    w.add_batch_callback(lambda changes: seen.extend((time.time_ns(), timestamp_nanos(c.commit_timestamp))
                                                     for c in changes))  # before the sink's: its own time left out
    sink = KafkaSink(servers, topic=topic)
    sink.attach(w)
    w.start()
    ready.set()
    stop.wait()
    w.stop()
    sink.close()
    lags = [(at - commit) / 1e6 for at, commit in seen if commit >= measure_from.value]
    out.put({"mode": mode, "messages_sent": sink.messages_sent, "callback_latency_ms": _quantiles(lags),
             "failure": repr(w.failure) if w.failure else None})


def _quantiles(values: list[float]) -> dict[str, float]:
    return {name: round(percentile(values, q), 1) for name, q in
            (("p50", 0.5), ("p95", 0.95), ("p99", 0.99), ("max", 1.0))} if values else {}


def _write(host: str, start_at: float, seconds: float, out: Any) -> None:
    """Commit COMMITS_PER_SECOND x ROWS_PER_COMMIT random keys of LIVE_KEYS on a fixed schedule (a child process)."""
    database = child_database(host, DATABASE_ID)
    total = int(seconds * COMMITS_PER_SECOND)
    lock, slots, written = threading.Lock(), iter(range(total)), [0]

    def work(seed: int) -> None:
        maker, rng = RowMaker(seed), random.Random(seed)
        while True:
            with lock:
                slot = next(slots, None)
            if slot is None:
                return
            time.sleep(max(0.0, start_at + slot / COMMITS_PER_SECOND - time.time()))
            keys = sorted({rng.randrange(LIVE_KEYS) for _ in range(ROWS_PER_COMMIT)})
            with database.batch() as batch:
                batch.insert_or_update("Singers", SINGERS_COLUMNS, maker.rows(keys))
            with lock:
                written[0] += len(keys)

    run_threads(WRITER_THREADS, work, start_at=start_at)
    out.put({"mutations": written[0], "seconds": time.time() - start_at})


class _Reader:
    """A consumer of the watchers' topics on a thread: (read wall ns, commit ns) per message, per topic."""

    def __init__(self, servers: str, topics: list[str]) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer({"bootstrap.servers": servers, "group.id": f"bench-{uuid.uuid4().hex[:8]}",
                                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
        self.consumer.subscribe(topics)
        self.seen: dict[str, list[tuple[int, int]]] = {t: [] for t in topics}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from google.api_core.datetime_helpers import DatetimeWithNanoseconds

        from watcher.model import timestamp_nanos

        while not self._stop.is_set():
            m = self.consumer.poll(0.05)  # each message as soon as it is there (consume() would wait to fill a batch)
            if m is None or m.error() is not None:
                continue
            now = time.time_ns()
            stamp = dict(m.headers() or [])["commit_timestamp"].decode()
            self.seen[str(m.topic())].append((now, timestamp_nanos(DatetimeWithNanoseconds.from_rfc3339(stamp))))

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.consumer.close()


def _latency_round(ctx: RunContext, mp: Any, host: str, servers: str, database: Any,
                   settings: dict[str, Any]) -> dict[str, Any]:
    with database.snapshot() as snap:
        start = list(snap.execute_sql("SELECT CURRENT_TIMESTAMP()"))[0][0]
    topics = {mode: f"bench-{uuid.uuid4().hex[:8]}-{mode}" for mode in MODES}
    _create_topics(servers, list(topics.values()))
    reader = _Reader(servers, list(topics.values()))
    out, wout, stop, measure = mp.Queue(), mp.Queue(), mp.Event(), mp.Value("q", 2**62)
    procs, readies = [], []
    for mode in MODES:
        ready = mp.Event()
        procs.append(mp.Process(target=_watch, args=(mode, host, servers, topics[mode], start, measure, ready, stop,
                                                     out)))
        readies.append(ready)
    for p in procs:
        p.start()
    for ready in readies:
        if not ready.wait(START_TIMEOUT):
            raise RuntimeError("a watcher process did not start")
    start_at = time.time() + 1.0
    measure_from = int((start_at + settings["warmup_seconds"]) * 1e9)
    measure.value = measure_from
    writer = mp.Process(target=_write, args=(host, start_at, settings["warmup_seconds"] + settings["live_seconds"], wout))
    writer.start()
    written = wout.get(timeout=settings["live_seconds"] + 300)
    writer.join(30)
    time.sleep(DRAIN_SECONDS)
    stop.set()
    done = {r["mode"]: r for r in (out.get(timeout=120) for _ in MODES)}
    for p in procs:
        p.join(30)
    reader.close()
    got: dict[str, Any] = {"written": written}
    for mode in MODES:
        if done[mode]["failure"]:
            raise RuntimeError(f"the {mode} watcher failed: {done[mode]['failure']}")
        lags = [(seen - commit) / 1e6 for seen, commit in reader.seen[topics[mode]] if commit >= measure_from]
        got[mode] = {"messages_read": len(reader.seen[topics[mode]]), "messages_sent": done[mode]["messages_sent"],
                     "latency_ms": _quantiles(lags), "callback_latency_ms": done[mode]["callback_latency_ms"]}
    ctx.log(f"latency: {written['mutations']:,} mutations in {written['seconds']:.1f} s; " + "; ".join(
        f"{m} {got[m]['messages_read']:,} read, consumer {got[m]['latency_ms']}, callback "
        f"{got[m]['callback_latency_ms']}" for m in MODES))
    return got


def _range(values: list[float], digits: int = 1) -> dict[str, float]:
    return {"min": round(min(values), digits), "median": round(percentile(values, 0.5), digits),
            "max": round(max(values), digits)}


def run(ctx: RunContext) -> Result:
    from watcher.devtools.kafka_broker import KafkaBroker
    from watcher.schema_tools.ddl import create_change_stream

    settings = dict(QUICK if ctx.quick else FULL)
    result = Result(settings={
        **settings, "partitions": PARTITIONS, "batch": BATCH,
        "producer": "enable.idempotence=true, acks=all, librdkafka defaults otherwise (both sides)",
        "latency_load": f"{COMMITS_PER_SECOND} commits/s x {ROWS_PER_COMMIT} InsertOrUpdate rows of {LIVE_KEYS:,} "
                        f"keys, writer process of {WRITER_THREADS} threads",
        "poll": f"TableWatcher, 37 shards, {HINT}, limit {LIMIT}, poll {POLL_INTERVAL} s, own process",
        "change_stream": f"ChangeStreamWatcher on {STREAM} FOR Singers, heartbeat 1 s, own process",
        "broker": "watcher.devtools.kafka_broker.KafkaBroker (Kafka 4.1 KRaft, one node, -Xmx512m)",
    })
    mp = multiprocessing.get_context("spawn")
    with KafkaBroker(os.path.join(ctx.workdir, "kafka-broker")) as broker:
        throughput = _throughput(ctx, broker.bootstrap_servers, settings)
        with singers_server(os.path.join(ctx.workdir, "kafka-delivery-data"), DATABASE_ID) as (server, database):
            database.update_ddl([create_change_stream(STREAM, {"Singers": None})]).result(120)
            live = [_latency_round(ctx, mp, server.emulator_host, broker.bootstrap_servers, database, settings)
                    for _ in range(settings["live_rounds"])]

    ratios = [r["ratio"] for r in throughput["rounds"]]
    figures: dict[str, Any] = {
        "throughput": {**throughput,
                       "sink_changes_per_second": _range([r["sink_changes_per_second"] for r in throughput["rounds"]], 0),
                       "bare_changes_per_second": _range([r["bare_changes_per_second"] for r in throughput["rounds"]], 0),
                       "ratio": _range(ratios, 3),
                       "ratio_in_flight": _range([r["ratio_in_flight"] for r in throughput["rounds"]], 3)},
        "latency": {mode: {"p50_ms": _range([r[mode]["latency_ms"]["p50"] for r in live]),
                           "p99_ms": _range([r[mode]["latency_ms"]["p99"] for r in live]),
                           "callback_p99_ms": _range([r[mode]["callback_latency_ms"]["p99"] for r in live]),
                           "rounds": [r[mode] for r in live]} for mode in MODES},
        "written": [r["written"] for r in live],
        "loadavg_1min_after": round(os.getloadavg()[0], 1),
    }
    result.figures = figures
    result.checks += [
        check("sink / bare loop changes/s, median of rounds", figures["throughput"]["ratio"]["median"], ">=",
              TARGET_RATIO),
        check("commit -> consumer p99 polling at 0.5 s, worst round (ms)", figures["latency"]["poll"]["p99_ms"]["max"],
              "<=", TARGET_P99_MS["poll"]),
        check("commit -> consumer p99 from the change stream, worst round (ms)",
              figures["latency"]["change_stream"]["p99_ms"]["max"], "<=", TARGET_P99_MS["change_stream"]),
    ]
    return result
