"""What the DDL helpers' schema buys: the poll with the sharded NULL_FILTERED index, against the same table without it.

The Singers schema comes from the migration folders (``ddl/watcher`` and
``ddl/samples/singers``, applied with the migration runner): a commit-timestamp column, a
computed ``MOD(FARM_FINGERPRINT(...), 19)`` shard column and the NULL_FILTERED index on
(ShardId, LastUpdated). The poll is the watcher's own query (``watcher.capture.polling.simple_query``)
with the settings :func:`watcher.schema_tools.ddl.sharded_polling` hands out: the FixedShardProvider over
all 37 shard values and the ``FORCE_INDEX`` hint. It is timed against the very same query
with ``@{FORCE_INDEX=_BASE_TABLE}`` (the same table without the index: it scans the rows),
on the same data, at 10,000, 100,000 and 1,000,000 rows, in one run against one server
process. Both must return the same rows, or the times mean nothing.

Each time the poll is a caught-up watcher's: a tail of recent changes (``TAIL_ROWS``
single-row updates of existing rows, ``TAIL_COMMIT_ROWS`` per commit) is written, and the
poll starts at the newest commit timestamp before the tail. Target: at 1,000,000 rows the
indexed poll's median is at least 20 times faster than the unindexed one's.

For information: the query without shard filter and hint (a watcher set up without this
schema), an idle poll (nothing newer than the last poll: the index's own cost, with no rows
to ship), and at the largest size the index pruning job (``watcher.schema_tools.pruning``): the partitioned DML that
takes every delivered row out of the index, its duration, and the poll of a watcher that
starts from the beginning of time, before and after pruning.

``python -m benchmarks.ddl_index_poll render [RESULT_JSON [NOTE ...]]`` writes the table and the plot
(``benchmarks/plots/ddl_index_poll.svg``) into this benchmark's section of ``RESULTS.md``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import random
import statistics
import sys
import time
from typing import Any

from . import Result, RunContext, check
from .localspanner_server import (
    SINGERS_COLUMNS,
    RowMaker,
    RowShape,
    ServerProcess,
    connect,
    count_rows,
    cpu_seconds,
    load_singers,
    mib,
    percentile,
)

NAME = "ddl_index_poll"
TITLE = "poll latency with the sharded NULL_FILTERED index vs. the same table without it (10K / 100K / 1M rows)"

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATABASE_ID = "ddl-index-poll"
TARGET_SPEEDUP = 20.0
#: The watcher's default LIMIT.
LIMIT = 10_000
TAIL_ROWS = 500
TAIL_COMMIT_ROWS = 100
FULL = {"sizes": (10_000, 100_000, 1_000_000), "indexed_polls": 60, "unindexed_polls": 7, "prune": True}
QUICK = {"sizes": (1_000, 5_000), "indexed_polls": 10, "unindexed_polls": 3, "prune": True}
WARMUP = 3
LOAD_BATCH_ROWS = 2000
LOAD_THREADS = 4
ROW_SHAPE = RowShape(picture_min=1, picture_max=1024)
BASE_TABLE_HINT = "@{FORCE_INDEX=_BASE_TABLE}"
OLD = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
RESULTS_MD = os.path.join(HERE, "RESULTS.md")
PLOT = os.path.join(HERE, "plots", f"{NAME}.svg")


def _setup() -> Any:
    from watcher.schema_tools.ddl import ShardSource, sharded_polling

    # The same settings the sample schema was generated with (see ddl/samples/singers).
    return sharded_polling("Singers", ["FirstName", ShardSource("LastName", not_null=True)], processed_column="Processed")


def _migrate(database: Any, ctx: RunContext) -> None:
    from watcher.schema_tools.migrations import MigrationSet, Migrator, default_migrations

    sets = [default_migrations(), MigrationSet.from_directory(os.path.join(ROOT, "ddl", "samples", "singers"))]
    report = Migrator(database, progress=ctx.log).migrate(sets)
    if not report.applied:
        raise RuntimeError("the benchmark database was expected to be fresh")


def _queries(database: Any, setup: Any) -> dict[str, Any]:
    """name -> function(since) -> PollQuery: the watcher's poll, with and without the index."""
    from watcher.capture.polling import simple_query
    from watcher.capture.table_info import discover

    info = discover(database, "Singers", setup.commit_timestamp_column)
    shard = setup.shard_provider.shard_filter()
    return {
        "indexed": lambda since: simple_query(info, setup.table_hint, limit=LIMIT, shard=shard, since=since),
        "unindexed": lambda since: simple_query(info, BASE_TABLE_HINT, limit=LIMIT, shard=shard, since=since),
        "no_shard_no_hint": lambda since: simple_query(info, "", limit=LIMIT, since=since),
    }


def _run(database: Any, query: Any) -> tuple[float, list[Any]]:
    started = time.perf_counter()
    with database.snapshot() as snap:
        rows = list(snap.execute_sql(query.sql, params=query.params, param_types=query.types))
    return time.perf_counter() - started, rows


def _time(database: Any, query: Any, runs: int) -> tuple[list[float], list[Any]]:
    rows: list[Any] = []
    for _ in range(WARMUP):
        _, rows = _run(database, query)
    times = []
    for _ in range(runs):
        seconds, rows = _run(database, query)
        times.append(seconds)
    return times, rows


def _write_tail(database: Any, table_rows: int, seed: int) -> Any:
    """``TAIL_ROWS`` single-row updates of random existing rows; returns the newest commit timestamp before them."""
    with database.snapshot() as snap:
        before = next(iter(snap.execute_sql("SELECT MAX(LastUpdated) FROM Singers")))[0]
    rng = random.Random(seed)
    maker = RowMaker(seed, ROW_SHAPE)
    ids = rng.sample(range(table_rows), TAIL_ROWS)
    for first in range(0, TAIL_ROWS, TAIL_COMMIT_ROWS):
        with database.batch() as batch:
            for singer_id in ids[first:first + TAIL_COMMIT_ROWS]:
                batch.insert_or_update("Singers", SINGERS_COLUMNS, [maker.row(singer_id)])
    return before


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


def _summary(times: list[float], rows: list[Any]) -> dict[str, Any]:
    return {"median_ms": _ms(statistics.median(times)), "p95_ms": _ms(percentile(times, 0.95)),
            "min_ms": _ms(min(times)), "runs": len(times), "rows_returned": len(rows)}


def _key(rows: list[Any]) -> list[Any]:
    return [r[0] for r in rows]  # SingerId is the first column of SELECT *


def _measure(database: Any, server: ServerProcess, queries: dict[str, Any], table_rows: int, settings: dict[str, Any],
             ctx: RunContext) -> dict[str, Any]:
    since = _write_tail(database, table_rows, seed=table_rows)
    figures: dict[str, Any] = {"table_rows": count_rows(database)}
    results: dict[str, list[Any]] = {}
    for name, runs in (("indexed", settings["indexed_polls"]), ("unindexed", settings["unindexed_polls"]),
                       ("no_shard_no_hint", settings["unindexed_polls"])):
        server0 = server.cpu_seconds()
        times, rows = _time(database, queries[name](since), runs)
        figures[name] = _summary(times, rows)
        figures[name]["server_cpu_ms_per_poll"] = _ms((server.cpu_seconds() - server0) / (runs + WARMUP))
        results[name] = rows
        ctx.log(f"{figures['table_rows']:>9,} rows: {name:<17} median {figures[name]['median_ms']:>9} ms, "
                f"{len(rows)} rows returned")
    if not (_key(results["indexed"]) == _key(results["unindexed"]) == _key(results["no_shard_no_hint"])) or \
            len(results["indexed"]) != TAIL_ROWS:
        raise AssertionError("the indexed and unindexed polls did not return the same tail rows")
    figures["speedup"] = round(figures["unindexed"]["median_ms"] / figures["indexed"]["median_ms"], 1)
    # An idle poll (nothing new since the last one): what the index costs without rows to ship.
    with database.snapshot() as snap:
        newest = next(iter(snap.execute_sql("SELECT MAX(LastUpdated) FROM Singers")))[0]
    for name, runs in (("indexed", settings["indexed_polls"]), ("unindexed", settings["unindexed_polls"])):
        times, rows = _time(database, queries[name](newest), runs)
        if rows:
            raise AssertionError("the idle poll returned rows")
        figures[f"idle_{name}"] = _summary(times, rows)
    figures["idle_speedup"] = round(figures["idle_unindexed"]["median_ms"] / figures["idle_indexed"]["median_ms"], 1)
    ctx.log(f"{figures['table_rows']:>9,} rows: idle poll indexed {figures['idle_indexed']['median_ms']} ms, "
            f"unindexed {figures['idle_unindexed']['median_ms']} ms")
    return figures


def _prune(database: Any, server: ServerProcess, queries: dict[str, Any], settings: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    """Index pruning: take every delivered row out of the index, and see what a from-scratch poll costs before and after."""
    from watcher.checkpoints import InMemoryCommitTimestampRepository
    from watcher.model import Checkpoint, TableId
    from watcher.schema_tools.pruning import PruneSpec, prune_index

    runs = settings["indexed_polls"]
    before, rows_before = _time(database, queries["indexed"](OLD), runs)
    with database.snapshot() as snap:
        newest = next(iter(snap.execute_sql("SELECT MAX(LastUpdated) FROM Singers")))[0]
    checkpoints = InMemoryCommitTimestampRepository()
    checkpoints.set(TableId("Singers"), Checkpoint(newest))   # every watcher has delivered everything
    server0 = server.cpu_seconds()
    result = prune_index(database, PruneSpec("Singers", dt.timedelta(0), processed_column="Processed"), checkpoints,
                         now=dt.datetime.now(dt.UTC))
    prune_cpu = server.cpu_seconds() - server0
    after, rows_after = _time(database, queries["indexed"](OLD), runs)
    figures = {"rows_pruned": result.rows, "prune_seconds": round(result.seconds, 1), "prune_server_cpu_seconds": round(prune_cpu, 1),
               "from_scratch_before": _summary(before, rows_before), "from_scratch_after": _summary(after, rows_after)}
    ctx.log(f"pruned {result.rows:,} rows in {figures['prune_seconds']} s; from-scratch poll {figures['from_scratch_before']['median_ms']} ms "
            f"({len(rows_before)} rows) -> {figures['from_scratch_after']['median_ms']} ms ({len(rows_after)} rows)")
    return figures


def run(ctx: RunContext) -> Result:
    settings = dict(QUICK if ctx.quick else FULL)
    setup = _setup()
    result = Result(settings={
        **settings, "limit": LIMIT, "tail_rows": TAIL_ROWS, "tail_commit_rows": TAIL_COMMIT_ROWS, "rows": ROW_SHAPE.describe(),
        "schema": "ddl/watcher + ddl/samples/singers through the migration runner",
        "indexed": f"watcher.capture.polling.simple_query with FixedShardProvider('ShardId', range(-18, 19)) and {setup.table_hint}",
        "unindexed": f"the same query with {BASE_TABLE_HINT}",
        "load": f"InsertOrUpdate, {LOAD_BATCH_ROWS} rows per commit, {LOAD_THREADS} client threads",
        "read": "strong single-use read-only query, all rows consumed",
        "server": "python -m watcher local-spanner --port 0 --data-dir <workdir>/ddl-data (separate process)",
    })
    data_dir = os.path.join(ctx.workdir, "ddl-data")
    sizes: list[dict[str, Any]] = []
    with ServerProcess(data_dir) as server:
        instance = connect(server)
        database = instance.database(DATABASE_ID)
        if database.exists():
            database.drop()
        database = instance.database(DATABASE_ID)
        database.create().result(120)
        _migrate(database, ctx)
        queries = _queries(database, setup)
        result.notes.append(f"indexed poll: {queries['indexed'](OLD).sql}")
        loaded, load_seconds, client0 = 0, 0.0, cpu_seconds()
        for size in settings["sizes"]:
            ctx.log(f"growing the table to {size:,} rows")
            load = load_singers(database, loaded, size, batch_rows=LOAD_BATCH_ROWS, threads=LOAD_THREADS, shape=ROW_SHAPE, seed=size)
            loaded, load_seconds = size, load_seconds + load["seconds"]
            sizes.append(_measure(database, server, queries, size, settings, ctx))
        figures: dict[str, Any] = {"sizes": sizes, "load_seconds": round(load_seconds, 1),
                                   "load_client_cpu_seconds": round(cpu_seconds() - client0, 1),
                                   "server_rss_mib": mib(server.rss_bytes())}
        if settings["prune"]:
            figures["prune"] = _prune(database, server, queries, settings, ctx)
    result.figures = figures
    largest = sizes[-1]
    result.checks.append(check(f"indexed poll speedup at {largest['table_rows']:,} rows (unindexed median / indexed median)",
                               largest["speedup"], ">=", TARGET_SPEEDUP))
    return result


# --- RESULTS.md and the plot ----------------------------------------------------------------------------

BEGIN, END = f"<!-- {NAME}:begin -->", f"<!-- {NAME}:end -->"


def svg_plot(sizes: list[dict[str, Any]], series: dict[str, str], title: str) -> str:
    """A log-log line plot (rows -> median ms) as SVG text, one line per ``series`` (key -> label)."""
    width, height, left, right, top, bottom = 640, 380, 70, 170, 40, 50
    xs = [s["table_rows"] for s in sizes]
    ys = [s[k]["median_ms"] for s in sizes for k in series]
    x0, x1 = math.floor(math.log10(min(xs))), math.ceil(math.log10(max(xs)))
    y0, y1 = math.floor(math.log10(max(min(ys), 1e-3))), math.ceil(math.log10(max(ys)))
    x1, y1 = max(x1, x0 + 1), max(y1, y0 + 1)

    def px(x: float) -> float:
        return left + (math.log10(x) - x0) / (x1 - x0) * (width - left - right)

    def py(y: float) -> float:
        return height - bottom - (math.log10(max(y, 10.0 ** y0)) - y0) / (y1 - y0) * (height - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>']
    for e in range(x0, x1 + 1):
        x = px(10.0 ** e)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{height - bottom}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{height - bottom + 16}" text-anchor="middle">{10 ** e:,}</text>')
    for e in range(y0, y1 + 1):
        y = py(10.0 ** e)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{10.0 ** e:g} ms</text>')
    out.append(f'<text x="{(left + width - right) / 2}" y="{height - 12}" text-anchor="middle">rows in the table</text>')
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    for i, (key, label) in enumerate(series.items()):
        points = " ".join(f"{px(s['table_rows']):.1f},{py(s[key]['median_ms']):.1f}" for s in sizes)
        out.append(f'<polyline points="{points}" fill="none" stroke="{colors[i % 4]}" stroke-width="2"/>')
        for s in sizes:
            out.append(f'<circle cx="{px(s["table_rows"]):.1f}" cy="{py(s[key]["median_ms"]):.1f}" r="3" fill="{colors[i % 4]}"/>')
        ly = top + 20 + 20 * i
        out.append(f'<line x1="{width - right + 10}" y1="{ly}" x2="{width - right + 30}" y2="{ly}" stroke="{colors[i % 4]}" stroke-width="2"/>')
        out.append(f'<text x="{width - right + 36}" y="{ly + 4}">{label}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def render_section(document: dict[str, Any], plot_path: str, note: str | None = None) -> str:
    """This benchmark's section of RESULTS.md, from its JSON result."""
    f, s = document["figures"], document["settings"]
    m = document["machine"]
    lines = [BEGIN, f"## {NAME}: {document['title']}", "",
             f"Command: `{document['command']}` ({document['seconds']} s; {m['nproc']} CPUs, {m['cpu'] or 'unknown CPU'}, "
             f"{m['memory_gib']} GiB, Python {m['python']}). Server: {s['server']}.", "",
             f"Schema: {s['schema']}. Each size: {s['tail_rows']} single-row updates written as the tail; the poll "
             f"(LIMIT {s['limit']:,}) starts just before them, like a caught-up watcher's. Indexed: {s['indexed']}. "
             f"Unindexed: {s['unindexed']}. Medians of {s['indexed_polls']} and {s['unindexed_polls']} polls.", "",
             "| rows | indexed median (p95) | unindexed median (p95) | speedup | no shard filter, no hint | "
             "server CPU/poll indexed / unindexed | idle poll indexed / unindexed |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for size in f["sizes"]:
        i, u, n = size["indexed"], size["unindexed"], size["no_shard_no_hint"]
        lines.append(f"| {size['table_rows']:,} | {i['median_ms']} ms ({i['p95_ms']}) | {u['median_ms']} ms ({u['p95_ms']}) | "
                     f"**{size['speedup']}x** | {n['median_ms']} ms | {i['server_cpu_ms_per_poll']} / {u['server_cpu_ms_per_poll']} ms | "
                     f"{size['idle_indexed']['median_ms']} / {size['idle_unindexed']['median_ms']} ms ({size['idle_speedup']}x) |")
    lines.append("")
    for c in document["checks"]:
        lines.append(f"Target: {c['name']} {c['op']} {c['target']:g}: **{c['value']:g}, {'met' if c['passed'] else 'MISSED'}**.")
    if "prune" in f:
        p = f["prune"]
        lines += ["", f"Index pruning at {f['sizes'][-1]['table_rows']:,} rows: the partitioned DML marked "
                      f"{p['rows_pruned']:,} delivered rows processed in {p['prune_seconds']} s (server CPU {p['prune_server_cpu_seconds']} s); "
                      f"a from-scratch indexed poll (LIMIT {s['limit']:,}) went from {p['from_scratch_before']['median_ms']} ms "
                      f"({p['from_scratch_before']['rows_returned']:,} rows) to {p['from_scratch_after']['median_ms']} ms "
                      f"({p['from_scratch_after']['rows_returned']:,} rows): the index holds only what is not yet delivered."]
    if note:
        lines += ["", f"Note: {note}"]
    lines += ["", f"![poll latency]({os.path.relpath(plot_path, HERE)})", "", END]
    return "\n".join(lines)


def render(json_path: str, results_md: str = RESULTS_MD, plot_path: str = PLOT, note: str | None = None) -> None:
    """Write the plot and replace (or append) this benchmark's section of RESULTS.md."""
    with open(json_path) as f:
        document = json.load(f)
    os.makedirs(os.path.dirname(plot_path), exist_ok=True)
    with open(plot_path, "w") as f:
        f.write(svg_plot(document["figures"]["sizes"], {"indexed": "indexed poll", "unindexed": "_BASE_TABLE",
                                                         "no_shard_no_hint": "no shard, no hint"},
                         "poll median latency (log-log)"))
    section = render_section(document, plot_path, note)
    text = open(results_md).read() if os.path.exists(results_md) else "# Benchmark results\n"
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + section + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    with open(results_md, "w") as f:
        f.write(text)


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "render":
        render(sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "results", f"{NAME}.json"),
               note=" ".join(sys.argv[3:]) or None)
    else:
        print("usage: python -m benchmarks.ddl_index_poll render [RESULT_JSON [NOTE ...]]   (run it with: python -m benchmarks ddl)")
        sys.exit(2)
