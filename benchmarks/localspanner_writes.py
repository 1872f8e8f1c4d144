"""Write throughput through the official client: single-row InsertOrUpdate mutations, 100 per commit.

Each writer thread loops: open ``database.batch()``, call ``insert_or_update`` 100 times
with one Singers row each (a random SingerId out of 1,000,000, so a mix of inserts and
updates; LastUpdated = the commit timestamp, as the Java benchmark writes), commit.
Mutations per second = committed mutations / wall time, for 1, 4, 8, 16 and 32 threads
in one client process, then for several client processes (the Python client costs about
as much CPU per mutation as the server, so on a 2-core machine one client process can
be the bottleneck). Client and server CPU are reported per configuration. Target: at
least 10,000 mutations per second (best configuration).
"""

from __future__ import annotations

import multiprocessing
import os
import random
import threading
import time
from typing import Any

from . import Result, RunContext, check
from .localspanner_server import (
    SINGERS_COLUMNS,
    RowMaker,
    RowShape,
    ServerProcess,
    child_database,
    connect,
    count_rows,
    cpu_seconds,
    singers_database,
)

NAME = "localspanner_writes"
TITLE = "single-row InsertOrUpdate mutations per second, 100 per commit, N writer threads"

DATABASE_ID = "singers_writes"
TARGET = 10_000
MUTATIONS_PER_COMMIT = 100
KEY_SPACE = 1_000_000
ROW_SHAPE = RowShape(picture_min=1, picture_max=1024)

#: Seconds measured per configuration; (client processes, threads per process), run in this order.
FULL: tuple[float, list[tuple[int, int]]] = (12.0, [(1, 1), (1, 4), (1, 8), (1, 16), (1, 32), (2, 4), (2, 8), (3, 4)])
QUICK: tuple[float, list[tuple[int, int]]] = (1.0, [(1, 4), (2, 2)])
#: Seconds every writer writes before the measured window opens.
WARMUP_SECONDS = 1.0
#: Seconds a spawned client process gets to import the client and connect.
CHILD_START_SECONDS = 3.0


def _writer(database: Any, seed: int, window: tuple[float, float], counts: list[int], errors: list[str]) -> None:
    """Commit batches until the window closes; count the commits that started inside it."""
    maker = RowMaker(seed, ROW_SHAPE)
    rng = random.Random(seed)
    start, stop = window
    committed = 0
    try:
        while True:
            now = time.time()
            if now >= stop:
                break
            with database.batch() as batch:
                for _ in range(MUTATIONS_PER_COMMIT):
                    batch.insert_or_update("Singers", SINGERS_COLUMNS, [maker.row(rng.randrange(KEY_SPACE))])
            if now >= start:
                committed += MUTATIONS_PER_COMMIT
    except Exception as exc:  # noqa: BLE001 - reported in the result, not swallowed
        errors.append(f"{type(exc).__name__}: {exc}")
    counts.append(committed)


def _sleep_until(t: float) -> None:
    time.sleep(max(0.0, t - time.time()))


def _run_threads(database: Any, threads: int, window: tuple[float, float], seed: int,
                 server: ServerProcess | None = None) -> dict[str, Any]:
    """``threads`` writers in this process over ``window`` (``time.time()`` values, after a warm-up).

    CPU is sampled at the window's edges: this process's, and the server's when given.
    """
    counts: list[int] = []
    errors: list[str] = []
    workers = [threading.Thread(target=_writer, args=(database, seed * 100 + i, window, counts, errors)) for i in range(threads)]
    for w in workers:
        w.start()
    _sleep_until(window[0])
    client0, server0 = cpu_seconds(), server.cpu_seconds() if server else 0.0
    _sleep_until(window[1])
    client1, server1 = cpu_seconds(), server.cpu_seconds() if server else 0.0
    for w in workers:
        w.join()
    return {"mutations": sum(counts), "client_cpu_seconds": client1 - client0, "server_cpu_seconds": server1 - server0,
            "errors": errors}


def _child(host: str, threads: int, window: tuple[float, float], seed: int, out: Any) -> None:
    database = child_database(host, DATABASE_ID)
    out.put(_run_threads(database, threads, window, seed))


def _run_processes(server: ServerProcess, processes: int, threads: int, window: tuple[float, float], seed: int) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    children = [context.Process(target=_child, args=(server.emulator_host, threads, window, seed * 10 + p, out))
                for p in range(processes)]
    for c in children:
        c.start()
    _sleep_until(window[0])
    server0 = server.cpu_seconds()
    _sleep_until(window[1])
    server1 = server.cpu_seconds()
    parts = [out.get(timeout=max(0.0, window[1] - time.time()) + 120) for _ in children]
    for c in children:
        c.join(30)
    return {"mutations": sum(p["mutations"] for p in parts), "client_cpu_seconds": sum(p["client_cpu_seconds"] for p in parts),
            "server_cpu_seconds": server1 - server0, "errors": [e for p in parts for e in p["errors"]]}


def _measure(database: Any, server: ServerProcess, processes: int, threads: int, seconds: float, seed: int) -> dict[str, Any]:
    # Child processes need a few seconds to import the client and connect before their warm-up.
    start = time.time() + WARMUP_SECONDS + (CHILD_START_SECONDS if processes > 1 else 0.0)
    window = (start, start + seconds)
    if processes == 1:
        part = _run_threads(database, threads, window, seed, server)
    else:
        part = _run_processes(server, processes, threads, window, seed)
    rate = part["mutations"] / seconds
    return {
        "processes": processes,
        "threads_per_process": threads,
        "mutations_per_second": round(rate),
        "commits_per_second": round(rate / MUTATIONS_PER_COMMIT, 1),
        "client_cpu_cores": round(part["client_cpu_seconds"] / seconds, 2),
        "server_cpu_cores": round(part["server_cpu_seconds"] / seconds, 2),
        "client_cpu_us_per_mutation": round(part["client_cpu_seconds"] / part["mutations"] * 1e6, 1) if part["mutations"] else None,
        "server_cpu_us_per_mutation": round(part["server_cpu_seconds"] / part["mutations"] * 1e6, 1) if part["mutations"] else None,
        "errors": part["errors"][:5],
    }


def run(ctx: RunContext) -> Result:
    seconds, configs = QUICK if ctx.quick else FULL
    result = Result(settings={
        "seconds_per_config": seconds, "warmup_seconds": WARMUP_SECONDS, "configs": configs,
        "mutations_per_commit": MUTATIONS_PER_COMMIT,
        "write": "database.batch(); batch.insert_or_update('Singers', columns, [one row]) x 100; commit (single-use Commit RPC)",
        "keys": f"random SingerId in 0..{KEY_SPACE - 1} (inserts and updates)", "rows": ROW_SHAPE.describe(),
        "server": "python -m watcher local-spanner --port 0 --data-dir <workdir>/data (separate process)",
        "cpu": "sampled at the measured window's edges: client os.times() of the writer process(es), server /proc/<pid>/stat",
    })
    curve = []
    with ServerProcess(os.path.join(ctx.workdir, "data")) as server:
        instance = connect(server)
        database = instance.database(DATABASE_ID)
        if database.exists():
            database.drop()
        database = singers_database(instance, DATABASE_ID)
        for i, (processes, threads) in enumerate(configs):
            point = _measure(database, server, processes, threads, seconds, seed=i + 1)
            curve.append(point)
            ctx.log(f"{processes} process(es) x {threads:>2} threads: {point['mutations_per_second']:>6,} mutations/s "
                    f"(CPU cores: client {point['client_cpu_cores']}, server {point['server_cpu_cores']})"
                    + (f" ERRORS {point['errors']}" if point["errors"] else ""))
        rows = count_rows(database)
    best = max(curve, key=lambda p: p["mutations_per_second"])
    best_single = max((p for p in curve if p["processes"] == 1), key=lambda p: p["mutations_per_second"])
    result.figures = {"curve": curve, "best": best, "best_one_client_process": best_single, "table_rows_after": rows}
    result.checks.append(check("best mutations per second", best["mutations_per_second"], ">=", TARGET))
    if any(p["errors"] for p in curve):
        result.checks.append(check("writer errors", sum(len(p["errors"]) for p in curve), "<=", 0))
    return result
