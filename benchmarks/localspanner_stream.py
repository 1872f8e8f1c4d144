"""A query returning 1,000,000 rows streams: flat server memory, every message under 4 MiB.

``SELECT * FROM Singers`` over a 1,000,000-row table is read through the official
client (``database.snapshot().execute_sql``, every row consumed) while the server
process's resident memory (``VmRSS`` in ``/proc/<pid>/status``) is sampled every 100 ms:
for two seconds before, during, and for two seconds after the stream. The size of every
``PartialResultSet`` the client receives is recorded by a gRPC interceptor on the
client's own channel (``ByteSize()`` of each received message; the channel has the
client's default options, so its 4 MiB receive limit applies as it does for users).

Targets: the largest message under 4 MiB; the server's RSS flat: its peak growth over
the idle level at most a quarter of the bytes streamed (materialising the result would
cost more than all of them), and no growth to speak of over the second half of the
stream (at most 5% of the bytes streamed: memory that tracks progress is a leak).

The table is the one the poll benchmark leaves in the run's work folder (same rows);
run alone, this benchmark loads its own.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

import grpc

from . import Result, RunContext, check
from .localspanner_server import (
    RowShape,
    RssSampler,
    ServerProcess,
    connect,
    count_rows,
    cpu_seconds,
    load_singers,
    mib,
    singers_database,
)

NAME = "localspanner_stream"
TITLE = "1,000,000-row query: server RSS over the stream and the largest message"

#: The poll benchmark's database (reused when it holds enough rows), else this one is loaded.
SHARED_DATABASE_ID = "singers"
OWN_DATABASE_ID = "singers_stream"
#: Rows streamed; seconds of idle RSS sampling before and after.
FULL: tuple[int, float] = (1_000_000, 2.0)
QUICK: tuple[int, float] = (10_000, 0.5)
QUERY = "SELECT * FROM Singers"
MAX_MESSAGE = 4 << 20
#: Peak RSS growth allowed, as a share of the bytes streamed; and growth over the stream's second half.
PEAK_GROWTH_SHARE = 0.25
LATE_GROWTH_SHARE = 0.05
SAMPLE_SECONDS = 0.1
ROW_SHAPE = RowShape(picture_min=1, picture_max=1024)


class MessageSizes(grpc.UnaryStreamClientInterceptor):
    """Records the serialized size of every message of the streaming calls it sees."""

    def __init__(self) -> None:
        self.sizes: list[int] = []

    def intercept_unary_stream(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        call = continuation(client_call_details, request)
        if not client_call_details.method.endswith("/ExecuteStreamingSql"):
            return call
        return _SizedCall(call, self.sizes)


class _SizedCall:
    """A streaming call that notes each message's size as the client pulls it; the rest is the call's."""

    def __init__(self, call: Any, sizes: list[int]) -> None:
        self._call = call
        self._sizes = sizes

    def __iter__(self) -> _SizedCall:
        return self

    def __next__(self) -> Any:
        message = next(self._call)
        self._sizes.append(type(message).pb(message).ByteSize())
        return message

    def __getattr__(self, name: str) -> Any:
        return getattr(self._call, name)


def _install(database: Any, emulator_host: str, interceptor: grpc.UnaryStreamClientInterceptor) -> None:
    """Give ``database`` the channel the client would build for an emulator, with ``interceptor`` on it."""
    from google.cloud.spanner_v1.services.spanner import SpannerClient
    from google.cloud.spanner_v1.services.spanner.transports import SpannerGrpcTransport

    if not hasattr(database, "_spanner_api"):
        raise RuntimeError("this google-cloud-spanner version keeps its API client elsewhere; update the interceptor hook")
    channel = grpc.intercept_channel(grpc.insecure_channel(emulator_host), interceptor)
    database._spanner_api = SpannerClient(client_info=database._instance._client._client_info,
                                          transport=SpannerGrpcTransport(channel=channel))


def _prepare(instance: Any, rows: int, ctx: RunContext) -> tuple[str, str]:
    """The id of a database whose Singers table holds ``rows`` rows, and where it came from."""
    shared = instance.database(SHARED_DATABASE_ID)
    if shared.exists() and count_rows(shared) == rows:
        return SHARED_DATABASE_ID, "left by localspanner_poll"
    own = instance.database(OWN_DATABASE_ID)
    if own.exists():
        own.drop()
    own = singers_database(instance, OWN_DATABASE_ID)
    ctx.log(f"loading {rows:,} rows")
    load_singers(own, 0, rows, shape=ROW_SHAPE, seed=3)
    return OWN_DATABASE_ID, "loaded by this benchmark"


def run(ctx: RunContext) -> Result:
    rows_wanted, idle_seconds = QUICK if ctx.quick else FULL
    data_dir = os.path.join(ctx.workdir, "data")
    result = Result(settings={
        "query": QUERY, "rows": rows_wanted, "row_shape": ROW_SHAPE.describe(),
        "read": "strong single-use read-only query (database.snapshot().execute_sql), every row iterated",
        "rss": f"/proc/<server pid>/status VmRSS every {SAMPLE_SECONDS * 1000:.0f} ms, {idle_seconds} s before and after",
        "message_size": "grpc.UnaryStreamClientInterceptor on the client's channel: ByteSize() of each PartialResultSet received",
        "server": "python -m watcher local-spanner --port 0 --data-dir <workdir>/data (separate process, started for this benchmark)",
    })
    # Loading goes through its own server process, so the measured one starts with nothing but the data.
    with ServerProcess(data_dir) as loader:
        database_id, source = _prepare(connect(loader), rows_wanted, ctx)
    with ServerProcess(data_dir) as server:
        instance = connect(server)
        database = instance.database(database_id)
        sizes = MessageSizes()
        _install(database, server.emulator_host, sizes)
        # Warm up a session and a reader connection without touching the table: SQLite's page
        # cache fills during the stream, so its growth counts in the figures.
        with database.snapshot() as snap:
            list(snap.execute_sql("SELECT 1"))
        with RssSampler(server.pid, SAMPLE_SECONDS) as before:
            time.sleep(idle_seconds)
        rows = 0
        client0, server0 = cpu_seconds(), server.cpu_seconds()
        started = time.perf_counter()
        with RssSampler(server.pid, SAMPLE_SECONDS) as during:
            with database.snapshot() as snap:
                for _ in snap.execute_sql(QUERY):
                    rows += 1
        seconds = time.perf_counter() - started
        client_cpu, server_cpu = cpu_seconds() - client0, server.cpu_seconds() - server0
        with RssSampler(server.pid, SAMPLE_SECONDS) as after:
            time.sleep(idle_seconds)

    idle = statistics.median(before.values())
    peak = max(during.values())
    streamed = sum(sizes.sizes)
    half = [rss for t, rss in during.samples if t >= seconds / 2]
    first_half = [rss for t, rss in during.samples if t < seconds / 2]
    late_growth = (max(half) - max(first_half)) if half and first_half else 0
    result.figures = {
        "database": f"{database_id} ({source})",
        "rows": rows,
        "seconds": round(seconds, 1),
        "rows_per_second": round(rows / seconds),
        "messages": len(sizes.sizes),
        "bytes_streamed_mib": mib(streamed),
        "largest_message_mib": round(max(sizes.sizes, default=0) / (1 << 20), 3),
        "largest_message_bytes": max(sizes.sizes, default=0),
        "median_message_bytes": int(statistics.median(sizes.sizes)) if sizes.sizes else 0,
        "rss_idle_before_mib": mib(idle),
        "rss_peak_during_mib": mib(peak),
        "rss_peak_growth_mib": mib(peak - idle),
        "rss_growth_second_half_mib": mib(late_growth),
        "rss_after_mib": mib(statistics.median(after.values())),
        "rss_samples_during": len(during.samples),
        "rss_timeline_mib": _timeline(during.samples, seconds),
        "server_cpu_seconds": round(server_cpu, 1),
        "client_cpu_seconds": round(client_cpu, 1),
    }
    ctx.log(f"{rows:,} rows in {seconds:.1f} s, {len(sizes.sizes)} messages, {mib(streamed)} MiB; largest message "
            f"{result.figures['largest_message_mib']} MiB; server RSS idle {mib(idle)} MiB, peak {mib(peak)} MiB, "
            f"after {result.figures['rss_after_mib']} MiB")
    result.checks += [
        check("rows streamed", rows, ">=", rows_wanted),
        check("largest PartialResultSet (bytes)", max(sizes.sizes, default=0), "<", MAX_MESSAGE),
        check("server RSS peak growth / bytes streamed", round((peak - idle) / streamed, 3) if streamed else 1.0, "<=", PEAK_GROWTH_SHARE),
        check("server RSS growth over the stream's second half / bytes streamed", round(late_growth / streamed, 3) if streamed else 1.0,
              "<=", LATE_GROWTH_SHARE),
    ]
    return result


def _timeline(samples: list[tuple[float, int]], seconds: float, points: int = 10) -> list[list[float]]:
    """RSS at about ``points`` moments of the stream: [seconds since start, MiB]."""
    if not samples:
        return []
    step = max(1, len(samples) // points)
    picked = samples[::step] + [samples[-1]]
    return [[round(t, 1), mib(rss)] for t, rss in picked]
