"""Write throughput through the official client: single-row InsertOrUpdate mutations, 100 per commit.

Each writer thread loops: open ``database.batch()``, call ``insert_or_update`` 100 times
with one Singers row each (a random SingerId out of 1,000,000, so a mix of inserts and
updates; LastUpdated = the commit timestamp, as the Java benchmark writes), commit.
Mutations per second = committed mutations / wall time, for 1, 4, 8, 16 and 32 threads
in one client process, then for several client processes (the Python client costs about
as much CPU per mutation as the server, so on a 2-core machine one client process can
be the bottleneck). Client and server CPU are reported per configuration. The
configurations run in :data:`ROUNDS` rounds, so each figure has a range over repeats.

In every round, SQLite alone replays the same kind of rows into a copy of the server's
table (:mod:`benchmarks.sqlite_replay`), grown first to as many rows as the server's table
has at that round: the server's CPU per mutation is compared with that, side by side (the
replay into an empty table, the earlier yardstick, is reported beside it). Targets: at least 15,000 mutations per second from two client
processes (best configuration), and the server's CPU per mutation at most 2x SQLite's
(median over the rounds, in the best two-process configuration).
"""

from __future__ import annotations

import multiprocessing
import os
import random
import threading
import time
from typing import Any

from . import Result, RunContext, check, sqlite_replay
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
TARGET = 15_000
#: The server's CPU per mutation at most this many times SQLite's own on the same upserts.
CPU_RATIO_TARGET = 2.0
MUTATIONS_PER_COMMIT = 100
KEY_SPACE = 1_000_000
ROW_SHAPE = RowShape(picture_min=1, picture_max=1024)

#: Seconds measured per configuration; (client processes, threads per process), run in this order.
FULL: tuple[float, list[tuple[int, int]]] = (8.0, [(1, 8), (2, 8), (2, 16)])
#: A checkout (``git archive <commit>``) whose server runs the same rounds side by side, when set.
BASELINE_ENV = "LOCALSPANNER_WRITES_BASELINE"
QUICK: tuple[float, list[tuple[int, int]]] = (1.0, [(1, 4), (2, 2)])
#: Rounds over the configurations (each round also replays the rows in plain SQLite).
ROUNDS, QUICK_ROUNDS = 3, 1
#: Rows SQLite alone upserts per round.
REPLAY_MUTATIONS, QUICK_REPLAY_MUTATIONS = 30_000, 2_000
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


def _range(points: list[dict[str, Any]], key: str) -> list[Any]:
    got = [p[key] for p in points if p.get(key) is not None]
    return [min(got), max(got)] if got else [None, None]


def run(ctx: RunContext) -> Result:
    seconds, configs = QUICK if ctx.quick else FULL
    rounds = QUICK_ROUNDS if ctx.quick else ROUNDS
    replay_rows = QUICK_REPLAY_MUTATIONS if ctx.quick else REPLAY_MUTATIONS
    result = Result(settings={
        "seconds_per_config": seconds, "warmup_seconds": WARMUP_SECONDS, "configs": configs, "rounds": rounds,
        "mutations_per_commit": MUTATIONS_PER_COMMIT,
        "write": "database.batch(); batch.insert_or_update('Singers', columns, [one row]) x 100; commit (single-use Commit RPC)",
        "keys": f"random SingerId in 0..{KEY_SPACE - 1} (inserts and updates)", "rows": ROW_SHAPE.describe(),
        "server": "python -m watcher local-spanner --port 0 --data-dir <workdir>/data (separate process)",
        "cpu": "sampled at the measured window's edges: client os.times() of the writer process(es), server /proc/<pid>/stat",
        "sqlite_replay": f"{replay_rows} rows per round upserted by plain sqlite3 into a copy of the server's Singers table, "
                         f"{MUTATIONS_PER_COMMIT} per transaction; CPU of executemany + COMMIT; the table first grown "
                         "(untimed) to the server's row count at that round (the target's yardstick), and again into "
                         "an empty table (the yardstick before)",
    })
    curve: list[dict[str, Any]] = []
    replays: list[float] = []  # the like-for-like replay per round (the target's yardstick)
    replay_rounds: list[dict[str, Any]] = []  # both replays per round, with the table size
    baseline = os.environ.get(BASELINE_ENV)
    servers = {"now": ServerProcess(os.path.join(ctx.workdir, "data"))}
    if baseline:
        servers["baseline"] = ServerProcess(os.path.join(ctx.workdir, "data-baseline"), source=baseline,
                                            log_path=os.path.join(ctx.workdir, "baseline-server.log"))
        result.settings["baseline"] = f"the same rounds against the server of {baseline} ({BASELINE_ENV}), alternating"
    try:
        databases = {}
        for name, server in servers.items():
            server.__enter__()
            instance = connect(server)
            database = instance.database(DATABASE_ID)
            if database.exists():
                database.drop()
            databases[name] = singers_database(instance, DATABASE_ID)
        server_file = sqlite_replay.server_database_file(os.path.join(ctx.workdir, "data"), DATABASE_ID)
        for r in range(rounds):
            order = list(servers) if r % 2 == 0 else list(reversed(servers))
            for i, (processes, threads) in enumerate(configs):
                for name in order:
                    point = _measure(databases[name], servers[name], processes, threads, seconds, seed=r * 100 + i + 1)
                    point.update({"server": name, "round": r + 1, "load_average_1m": round(os.getloadavg()[0], 2)})
                    curve.append(point)
                    ctx.log(f"round {r + 1} [{name}]: {processes} process(es) x {threads:>2} threads: "
                            f"{point['mutations_per_second']:>6,} mutations/s (CPU cores: client {point['client_cpu_cores']}, "
                            f"server {point['server_cpu_cores']}; server {point['server_cpu_us_per_mutation']} us/mutation; "
                            f"load {point['load_average_1m']})" + (f" ERRORS {point['errors']}" if point["errors"] else ""))
            # Like for like: the replay's table grown to the server's row count now (the yardstick
            # of the target); the replay into an empty table, as before, is kept beside it.
            grown = count_rows(databases["now"])
            us = sqlite_replay.replay_cpu_us_per_mutation(server_file, ctx.workdir, mutations=replay_rows, seed=r + 1,
                                                           shape=ROW_SHAPE, key_space=KEY_SPACE, prefill=grown)
            empty_us = sqlite_replay.replay_cpu_us_per_mutation(server_file, ctx.workdir, mutations=replay_rows,
                                                                 seed=r + 1, shape=ROW_SHAPE, key_space=KEY_SPACE)
            replays.append(round(us, 1))
            replay_rounds.append({"round": r + 1, "table_rows": grown, "grown_us": round(us, 1), "empty_us": round(empty_us, 1)})
            for p in curve:
                if p["round"] == r + 1:
                    p["sqlite_cpu_us_per_mutation"] = round(us, 1)
                    p["sqlite_empty_table_cpu_us_per_mutation"] = round(empty_us, 1)
                    server_us = p["server_cpu_us_per_mutation"]
                    p["server_to_sqlite_cpu"] = round(server_us / us, 2) if server_us else None
                    p["server_to_empty_sqlite_cpu"] = round(server_us / empty_us, 2) if server_us else None
            ctx.log(f"round {r + 1}: plain SQLite replay {us:.1f} us CPU/mutation into {grown:,} rows "
                    f"({empty_us:.1f} into an empty table)")
        rows = count_rows(databases["now"])
    finally:
        for server in servers.values():
            server.__exit__(None, None, None)
    by_config = []
    for name, (processes, threads) in ((n, c) for n in servers for c in configs):
        points = [p for p in curve if (p["server"], p["processes"], p["threads_per_process"]) == (name, processes, threads)]
        ratios = sorted(p["server_to_sqlite_cpu"] for p in points if p["server_to_sqlite_cpu"] is not None)
        by_config.append({
            "server": name, "processes": processes, "threads_per_process": threads,
            "mutations_per_second": _range(points, "mutations_per_second"),
            "server_cpu_us_per_mutation": _range(points, "server_cpu_us_per_mutation"),
            "client_cpu_us_per_mutation": _range(points, "client_cpu_us_per_mutation"),
            "server_to_sqlite_cpu": _range(points, "server_to_sqlite_cpu"),
            "server_to_sqlite_cpu_median": ratios[len(ratios) // 2] if ratios else None,
            "server_to_empty_sqlite_cpu": _range(points, "server_to_empty_sqlite_cpu"),
            "best_mutations_per_second": max(p["mutations_per_second"] for p in points),
        })
    two = [c for c in by_config if c["server"] == "now" and c["processes"] == 2] or by_config
    best = max(two, key=lambda c: c["best_mutations_per_second"])
    result.figures = {"curve": curve, "by_config": by_config, "sqlite_replay_cpu_us_per_mutation": replays,
                      "sqlite_replay_rounds": replay_rounds,
                      "best_two_processes": best, "table_rows_after": rows}
    result.checks.append(check("best mutations per second, two client processes", best["best_mutations_per_second"], ">=", TARGET))
    if best["server_to_sqlite_cpu_median"] is not None:
        result.checks.append(check("server CPU per mutation / SQLite's (median over rounds, best two-process config)",
                                   best["server_to_sqlite_cpu_median"], "<=", CPU_RATIO_TARGET))
    if any(p["errors"] for p in curve):
        result.checks.append(check("writer errors", sum(len(p["errors"]) for p in curve), "<=", 0))
    return result
