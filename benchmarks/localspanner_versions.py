"""Row versions in the local server: reads in the past vs strong reads, and what keeping versions costs writes.

Reads (one server process, the server as it is now): the Singers table with
:data:`ROWS` rows; the read timestamp T is taken, then :data:`WRITE_SECONDS` of writes
update random rows (so T is a few seconds old and many keys changed since), then, in
alternation, the same operation runs strongly and at ``read_timestamp=T``:

* the query: ``SELECT SingerId, FirstName, LastName, LastUpdated FROM Singers WHERE ShardId = @shard``
  (about 1/37 of the table), a new single-use snapshot per query;
* the key read: ``snapshot.read`` of one random key, a new single-use snapshot per read.

Each operation is timed 40 times per side (:data:`FULL`); medians per round, three rounds
(each with its own T and its own writes in between). Past reads must also return the
rows as they were at T (checked: the past count of rows with ``LastUpdated > T`` is 0).

Side by side with the server of commit :data:`PRE_VERSIONS_COMMIT` (before row versions;
its source taken with ``git archive``), each its own process with its own data folder,
alternating for :data:`SIDE_ROUNDS` rounds so both see the same machine:

* writes: the write load of ``localspanner_writes`` (100 single-row InsertOrUpdate
  mutations per commit, N writer threads);
* strong reads and the watcher's poll, which row versions must not slow: the same shard
  query and key read as above, strongly, and the poll of ``localspanner_poll``
  (``FORCE_INDEX``, all shards, ``LastUpdated > @ts``, LIMIT 1000) from a timestamp taken
  before the last :data:`POLL_TAIL_ROWS` updates, on a table of as many rows as the past reads'.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import time
from collections.abc import Callable
from typing import Any

from . import Result, RunContext, check
from .localspanner_poll import PARAM_TYPES as POLL_PARAM_TYPES
from .localspanner_poll import POLL_SQL
from .localspanner_server import ALL_SHARDS, SINGERS_COLUMNS, RowMaker, ServerProcess, connect, load_singers, singers_database
from .localspanner_writes import MUTATIONS_PER_COMMIT, ROW_SHAPE, WARMUP_SECONDS, _run_threads

NAME = "localspanner_versions"
TITLE = "reads at a past timestamp vs strong reads; writes with row versions vs the server before versions"

#: The last merge before row versions (h-versions) came in.
PRE_VERSIONS_COMMIT = "33f1aa0"
READS_ID = "versions_reads"
WRITES_ID = "versions_writes"
STRONG_ID = "versions_strong"
#: Side-by-side rounds (writes, strong reads, poll) against the server before versions: (full, quick).
SIDE_ROUNDS = (6, 1)
POLL_TAIL_ROWS = 1_000
QUERY = "SELECT SingerId, FirstName, LastName, LastUpdated FROM Singers WHERE ShardId = @shard"
#: (rows, seconds of writes before the reads, reads per side per round, rounds, write window s, writer threads)
FULL = (20_000, 3.0, 40, 3, 6.0, 4)
QUICK = (2_000, 0.5, 20, 1, 1.0, 2)
RATIO_TARGET = 0.9  # writes with versions / before: row versions may cost writes at most 10%


def _timed(op: Callable[[], Any], count: int) -> float:
    """Median milliseconds of ``count`` runs of ``op``."""
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        op()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def _write_for(database: Any, seconds: float, rows: int, seed: int) -> int:
    """Update random rows (one commit of 50 rows at a time) for ``seconds``; the rows written."""
    maker, rng = RowMaker(seed, ROW_SHAPE), random.Random(seed)
    stop, written = time.monotonic() + seconds, 0
    while time.monotonic() < stop:
        with database.batch() as batch:
            batch.insert_or_update("Singers", SINGERS_COLUMNS, maker.rows([rng.randrange(rows) for _ in range(50)]))
        written += 50
    return written


def _read_round(database: Any, rows: int, write_seconds: float, reads: int, seed: int) -> dict[str, Any]:
    from google.cloud import spanner
    from google.cloud.spanner_v1 import param_types

    with database.snapshot() as snap:
        at = next(iter(snap.execute_sql("SELECT CURRENT_TIMESTAMP()")))[0]
    written = _write_for(database, write_seconds, rows, seed)
    age = time.time() - at.timestamp()
    rng = random.Random(seed)
    bounds: dict[str, dict[str, Any]] = {"strong": {}, "past": {"read_timestamp": at}}

    def query(bound: dict[str, Any]) -> None:
        with database.snapshot(**bound) as snap:
            list(snap.execute_sql(QUERY, params={"shard": rng.randrange(-18, 19)}, param_types={"shard": param_types.INT64}))

    def key_read(bound: dict[str, Any]) -> None:
        with database.snapshot(**bound) as snap:
            list(snap.read("Singers", SINGERS_COLUMNS, spanner.KeySet(keys=[[rng.randrange(rows)]])))

    figures: dict[str, Any] = {"read_timestamp_age_seconds": round(age, 2), "rows_written_after_read_timestamp": written}
    for name, op in (("query", query), ("key_read", key_read)):
        medians = {"strong": 0.0, "past": 0.0}
        for i in range(4):  # alternate in quarters, so both sides see the same moments of the machine
            for side in (("strong", "past") if i % 2 == 0 else ("past", "strong")):
                medians[side] += _timed(lambda b=bounds[side], o=op: o(b), reads // 4) / 4  # type: ignore[misc]
        figures[f"{name}_ms_strong"] = round(medians["strong"], 3)
        figures[f"{name}_ms_past"] = round(medians["past"], 3)
        figures[f"{name}_past_over_strong"] = round(medians["past"] / medians["strong"], 2)
    with database.snapshot(read_timestamp=at) as snap:  # the past read sees nothing committed after T
        figures["past_rows_newer_than_read_timestamp"] = next(iter(snap.execute_sql(
            "SELECT COUNT(*) FROM Singers WHERE LastUpdated > @at", params={"at": at},
            param_types={"at": param_types.TIMESTAMP})))[0]
    return figures


def _pre_versions_source(workdir: str) -> str:
    """The source tree of :data:`PRE_VERSIONS_COMMIT` under ``workdir`` (git archive, no worktree)."""
    target = os.path.join(workdir, f"pre-versions-{PRE_VERSIONS_COMMIT}")
    if not os.path.isdir(os.path.join(target, "watcher")):
        os.makedirs(target, exist_ok=True)
        repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        archive = subprocess.run(["git", "-C", repo, "archive", PRE_VERSIONS_COMMIT, "watcher", "ddl"],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", target], input=archive, check=True)
    return target


def _writes(servers: dict[str, tuple[ServerProcess, Any]], seconds: float, rounds: int, threads: int) -> dict[str, Any]:
    per_round: dict[str, list[float]] = {label: [] for label in servers}
    cpu_us: dict[str, list[float]] = {label: [] for label in servers}  # server CPU per mutation: steadier than rates
    for r in range(rounds):
        order = list(servers) if r % 2 == 0 else list(reversed(servers))
        for label in order:
            server, database = servers[label]
            os.environ["SPANNER_EMULATOR_HOST"] = server.emulator_host
            start = time.time() + WARMUP_SECONDS
            part = _run_threads(database, threads, (start, start + seconds), seed=r * 10 + len(label), server=server)
            if part["errors"]:
                raise RuntimeError(f"writer errors ({label}): {part['errors'][:3]}")
            per_round[label].append(part["mutations"] / seconds)
            cpu_us[label].append(part["server_cpu_seconds"] * 1e6 / max(part["mutations"], 1))
    ratios = [w / b for w, b in zip(per_round["with_versions"], per_round["before_versions"], strict=True)]
    return {"mutations_per_second_with_versions": [round(x) for x in per_round["with_versions"]],
            "mutations_per_second_before_versions": [round(x) for x in per_round["before_versions"]],
            "ratio_with_over_before_per_round": [round(x, 3) for x in ratios],
            "ratio_with_over_before_median": round(statistics.median(ratios), 3),
            "ratio_with_over_before_min_max": [round(min(ratios), 3), round(max(ratios), 3)],
            "server_cpu_us_per_mutation_with_versions": [round(x, 1) for x in cpu_us["with_versions"]],
            "server_cpu_us_per_mutation_before_versions": [round(x, 1) for x in cpu_us["before_versions"]],
            "server_cpu_ratio_before_over_with_per_round": [round(b / w, 3) for w, b in zip(
                cpu_us["with_versions"], cpu_us["before_versions"], strict=True) if w]}


def _strong_subject(database: Any, rows: int, seed: int) -> Any:
    """``database`` loaded with ``rows`` Singers, then :data:`POLL_TAIL_ROWS` updates after T; returns T."""
    load_singers(database, 0, rows)
    with database.snapshot() as snap:
        at = next(iter(snap.execute_sql("SELECT CURRENT_TIMESTAMP()")))[0]
    maker, rng = RowMaker(seed, ROW_SHAPE), random.Random(seed)
    for _ in range(POLL_TAIL_ROWS // 50):
        with database.batch() as batch:
            batch.insert_or_update("Singers", SINGERS_COLUMNS, maker.rows([rng.randrange(rows) for _ in range(50)]))
    return at


def _strong(servers: dict[str, tuple[ServerProcess, Any]], rounds: int, reads: int, rows: int) -> dict[str, Any]:
    """Strong query, strong key read and the poll, per round and side (median ms), alternating sides."""
    from google.cloud import spanner
    from google.cloud.spanner_v1 import param_types

    since = {label: _strong_subject(database, rows, seed=3) for label, (_, database) in servers.items()}
    rng = random.Random(11)

    def query(db: Any, _: Any) -> None:
        with db.snapshot() as snap:
            list(snap.execute_sql(QUERY, params={"shard": rng.randrange(-18, 19)}, param_types={"shard": param_types.INT64}))

    def key_read(db: Any, _: Any) -> None:
        with db.snapshot() as snap:
            list(snap.read("Singers", SINGERS_COLUMNS, spanner.KeySet(keys=[[rng.randrange(rows)]])))

    def poll(db: Any, at: Any) -> None:
        with db.snapshot() as snap:
            list(snap.execute_sql(POLL_SQL, params={"shards": ALL_SHARDS, "ts": at}, param_types=POLL_PARAM_TYPES))

    ops: dict[str, Callable[[Any, Any], None]] = {"query": query, "key_read": key_read, "poll": poll}
    out: dict[str, Any] = {}
    for name, op in ops.items():
        per_round: dict[str, list[float]] = {label: [] for label in servers}
        for r in range(rounds):
            for label in (list(servers) if r % 2 == 0 else list(reversed(servers))):
                database = servers[label][1]
                per_round[label].append(_timed(lambda d=database, t=since[label], o=op: o(d, t), reads))  # type: ignore[misc]
        ratios = [a / b for a, b in zip(per_round["with_versions"], per_round["before_versions"], strict=True)]
        out[name] = {"ms_with_versions": [round(x, 3) for x in per_round["with_versions"]],
                     "ms_before_versions": [round(x, 3) for x in per_round["before_versions"]],
                     "ratio_with_over_before_per_round": [round(x, 3) for x in ratios],
                     "ratio_with_over_before_median": round(statistics.median(ratios), 3)}
    return out


def run(ctx: RunContext) -> Result:
    rows, write_seconds, reads, rounds, window, threads = QUICK if ctx.quick else FULL
    side_rounds = SIDE_ROUNDS[1] if ctx.quick else SIDE_ROUNDS[0]
    result = Result(settings={
        "rows": rows, "write_seconds_before_reads": write_seconds, "reads_per_side_per_round": reads, "rounds": rounds,
        "query": QUERY + " (random shard; new single-use snapshot each)",
        "key_read": "snapshot.read(Singers, all columns, one random key) (new single-use snapshot each)",
        "write": f"database.batch(); insert_or_update one Singers row x {MUTATIONS_PER_COMMIT}; commit; "
                 f"{threads} threads, {window} s per window",
        "side_by_side_rounds": side_rounds,
        "strong_side_by_side": f"{rows:,} rows, then {POLL_TAIL_ROWS:,} updates; per round and side the median of "
                               f"{reads} strong queries, key reads and polls ({POLL_SQL}; @ts before the updates)",
        "before_versions": f"python -m watcher local-spanner from git archive {PRE_VERSIONS_COMMIT} (separate process)",
        "server": "python -m watcher local-spanner --port 0 --data-dir <workdir>/... (separate processes)",
    })
    figures: dict[str, Any] = {}
    with ServerProcess(os.path.join(ctx.workdir, "versions-data")) as server:
        database = singers_database(connect(server), READS_ID)
        load_singers(database, 0, rows)
        figures["reads_per_round"] = [_read_round(database, rows, write_seconds, reads, seed=r + 1) for r in range(rounds)]
        for r, f in enumerate(figures["reads_per_round"]):
            ctx.log(f"round {r + 1}: T {f['read_timestamp_age_seconds']} s old, {f['rows_written_after_read_timestamp']} "
                    f"rows written since; query {f['query_ms_strong']} ms strong / {f['query_ms_past']} ms past; "
                    f"key read {f['key_read_ms_strong']} / {f['key_read_ms_past']} ms")
        with ServerProcess(os.path.join(ctx.workdir, "pre-versions-data"), source=_pre_versions_source(ctx.workdir)) as pre:
            servers = {"with_versions": (server, singers_database(connect(server), WRITES_ID)),
                       "before_versions": (pre, singers_database(connect(pre), WRITES_ID))}
            figures["writes"] = _writes(servers, window, side_rounds, threads)
            strong = {label: (srv, singers_database(connect(srv), STRONG_ID)) for label, (srv, _) in servers.items()}
            figures["strong_side_by_side"] = _strong(strong, side_rounds, reads, rows)
            os.environ["SPANNER_EMULATOR_HOST"] = server.emulator_host
    w = figures["writes"]
    ctx.log(f"writes with versions {w['mutations_per_second_with_versions']}, before {w['mutations_per_second_before_versions']} "
            f"mutations/s (ratio per round {w['ratio_with_over_before_per_round']}); server CPU us/mutation with "
            f"{w['server_cpu_us_per_mutation_with_versions']}, before {w['server_cpu_us_per_mutation_before_versions']}")
    for name, f in figures["strong_side_by_side"].items():
        ctx.log(f"strong {name}: with versions {f['ms_with_versions']} ms, before {f['ms_before_versions']} ms "
                f"(ratio per round {f['ratio_with_over_before_per_round']})")
    stale = sum(f["past_rows_newer_than_read_timestamp"] for f in figures["reads_per_round"])
    result.figures = figures
    result.checks.append(check("past reads seeing rows committed after T", stale, "<=", 0))
    result.checks.append(check("writes with versions / before (median)", w["ratio_with_over_before_median"], ">=", RATIO_TARGET))
    return result
