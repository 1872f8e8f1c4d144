"""The server's CPU per mutation on the write path, in-process, without gRPC's transport.

The steadier figure on a shared machine than mutations per second: the Commit handler
of the local server is called directly with the CommitRequest protobufs the official
client builds (``database.batch()``; ``insert_or_update`` of one Singers row, 100 per
commit, random keys of 1,000,000), and the calling thread's CPU time is read around
the calls. With ``--source DIR`` the server is imported from another tree (e.g. a
``git archive`` of an earlier commit), so old and new code can be run alternately in
one session; ``--profile`` prints where the time goes (cProfile with a CPU timer).

Example:
    $ python benchmarks/commit_cpu.py --commits 300
    $ python benchmarks/commit_cpu.py --source /tmp/before --commits 300
    $ python benchmarks/commit_cpu.py --compare /tmp/before --rounds 4
    $ python benchmarks/commit_cpu.py --compare /tmp/before --warmup 2000 --cpu-of process  # grown tables
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import os
import random
import statistics
import string
import subprocess
import sys
import tempfile
import time
from typing import Any

COLUMNS = ("SingerId", "FirstName", "LastName", "BirthDate", "Picture", "LastUpdated", "Processed")
KEY_SPACE = 1_000_000


def _requests(session: str, commits: int, per_commit: int, seed: int) -> list[Any]:
    """CommitRequest protobufs as the official client makes them for ``batch.insert_or_update`` x ``per_commit``."""
    from google.cloud import spanner
    from google.cloud.spanner_v1 import CommitRequest, Mutation, TransactionOptions
    from google.cloud.spanner_v1.batch import _make_write_pb

    rng = random.Random(seed)
    names = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 10))).title() for _ in range(2000)]
    block = rng.randbytes(1 << 16)
    base = dt.date(1950, 1, 1)
    out = []
    for _ in range(commits):
        mutations = []
        for _ in range(per_commit):
            size = rng.randint(1, 1024)
            start = rng.randrange(len(block) - size)
            row = (rng.randrange(KEY_SPACE), rng.choice(names), rng.choice(names), base + dt.timedelta(days=rng.randrange(18000)),
                   base64.b64encode(block[start:start + size]), spanner.COMMIT_TIMESTAMP, False)
            mutations.append(Mutation(insert_or_update=_make_write_pb("Singers", COLUMNS, [row])))
        request = CommitRequest(session=session, mutations=mutations,
                                single_use_transaction=TransactionOptions(read_write=TransactionOptions.ReadWrite()))
        out.append(CommitRequest.pb(request))
    return out


def measure(commits: int, per_commit: int, warmup: int, seed: int, profile: bool, extra_tables: int = 0,
            cpu_of: str = "thread") -> dict[str, Any]:
    """CPU microseconds per mutation of this thread over ``commits`` Commit calls (after ``warmup``);
    ``extra_tables`` more (empty) tables in the schema show what per-commit work grows with the catalog.
    ``cpu_of="process"`` counts every thread of the process (also background WAL checkpoints,
    which a server before them ran on the committing thread), like the end-to-end benchmark."""
    clock = time.process_time if cpu_of == "process" else time.thread_time
    from google.cloud import spanner

    from watcher.localspanner.frontend.spanner_service import SpannerServicer
    from watcher.localspanner.server import LocalSpanner
    from watcher.schema_tools.migrations import sample_migrations

    with tempfile.TemporaryDirectory() as data_dir, LocalSpanner(data_dir) as server:
        os.environ["SPANNER_EMULATOR_HOST"] = server.emulator_host
        client = spanner.Client(project="p")
        instance = client.instance("bench", configuration_name="projects/p/instanceConfigs/emulator-config", node_count=1)
        instance.create().result(60)
        extra = [f"CREATE TABLE Extra{i} (K INT64 NOT NULL, V STRING(MAX)) PRIMARY KEY (K)" for i in range(extra_tables)]
        database = instance.database("bench", ddl_statements=sample_migrations("singers").statements() + extra)
        database.create().result(120)
        servicer = SpannerServicer(server.service)
        from google.cloud.spanner_v1.types import spanner as S

        session = servicer.CreateSession(S.CreateSessionRequest.pb()(database=database.name), None).name
        requests = _requests(session, warmup + commits, per_commit, seed)
        for r in requests[:warmup]:
            servicer.Commit(r, None)
        timed = requests[warmup:]
        profiler = None
        if profile:
            import cProfile

            profiler = cProfile.Profile(time.thread_time)
            profiler.enable()
        started = clock()
        for r in timed:
            servicer.Commit(r, None)
        cpu = clock() - started
        if profiler is not None:
            import pstats

            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)
    return {"us_per_mutation": round(cpu / (commits * per_commit) * 1e6, 1), "commits": commits, "per_commit": per_commit,
            "extra_tables": extra_tables, "warmup": warmup, "cpu_of": cpu_of}


def _run_tree(source: str | None, args: argparse.Namespace) -> float:
    cmd = [sys.executable, os.path.abspath(__file__), "--commits", str(args.commits), "--warmup", str(args.warmup),
           "--seed", str(args.seed), "--per-commit", str(args.per_commit), "--extra-tables", str(args.extra_tables), "--cpu-of", args.cpu_of, "--json"]
    if source:
        cmd += ["--source", source]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return float(json.loads(out.strip().splitlines()[-1])["us_per_mutation"])


def compare(before: str, args: argparse.Namespace) -> dict[str, Any]:
    """Alternate this tree and ``before`` for ``args.rounds`` rounds (each a fresh process); per-round figures."""
    now: list[float] = []
    old: list[float] = []
    for i in range(args.rounds):
        order = [(None, now), (before, old)] if i % 2 == 0 else [(before, old), (None, now)]
        for source, into in order:
            into.append(_run_tree(source, args))
        print(f"round {i + 1}: now {now[-1]} us, before {old[-1]} us (load {os.getloadavg()[0]:.1f})", flush=True)
    return {"now_us": now, "before_us": old, "median_now": statistics.median(now), "median_before": statistics.median(old),
            "ratio_now_over_before": round(statistics.median(now) / statistics.median(old), 3)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source", help="import the server from this tree instead of the one this file is in")
    p.add_argument("--commits", type=int, default=300)
    p.add_argument("--per-commit", type=int, default=100)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--extra-tables", type=int, default=0, help="this many more (empty) tables in the schema")
    p.add_argument("--cpu-of", choices=("thread", "process"), default="thread",
                   help="CPU of the calling thread (default) or of the whole process (background checkpoints too)")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--json", action="store_true", help="print only the result as JSON")
    p.add_argument("--compare", metavar="DIR", help="alternate runs of this tree and the tree DIR")
    p.add_argument("--rounds", type=int, default=4)
    args = p.parse_args(argv)
    if args.compare:
        print(json.dumps(compare(args.compare, args)))
        return 0
    sys.path.insert(0, os.path.abspath(args.source) if args.source else os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    result = measure(args.commits, args.per_commit, args.warmup, args.seed, args.profile, args.extra_tables, args.cpu_of)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
