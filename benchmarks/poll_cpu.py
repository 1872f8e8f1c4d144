"""The local server's CPU per row a poll query returns, side by side for two trees.

A server process (``python -m watcher local-spanner --port 0``) is started from each tree
in turn; 20,000 Singers rows (the benchmark application's shape: random keys, Picture of
1-1024 bytes, LastUpdated = commit timestamp) are written, then ``--polls`` queries of the
watcher's form (``FORCE_INDEX`` on the shard index, ``ShardId IN UNNEST(@shards)``,
``LastUpdated > @ts``, ordered, ``LIMIT 1000``) are read through the official client, and
the server process's CPU time (``/proc/<pid>/stat``) across them is divided by the rows.

Example:
    $ python benchmarks/poll_cpu.py --compare /tmp/before --rounds 2
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import os
import random
import re
import statistics
import subprocess
import sys
from typing import Any

SQL = ("SELECT * FROM Singers@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated} WHERE ShardId IN UNNEST(@shards) "
       "AND LastUpdated > @ts ORDER BY LastUpdated, SingerId LIMIT 1000")
COLUMNS = ("SingerId", "FirstName", "LastName", "BirthDate", "Picture", "LastUpdated", "Processed")


def _cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(tree: str, polls: int, seed: int = 3) -> float:
    """Server CPU microseconds per row polled, with the server of ``tree``."""
    from google.cloud import spanner
    from google.cloud.spanner_v1 import param_types

    from watcher.schema_tools.migrations import sample_migrations

    server = subprocess.Popen([sys.executable, "-m", "watcher", "local-spanner", "--port", "0"], cwd=tree,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        found = re.search(r"(127\.0\.0\.1:\d+)", server.stdout.readline() if server.stdout else "")
        if found is None:
            raise RuntimeError("the server did not print its address")
        os.environ["SPANNER_EMULATOR_HOST"] = found.group(1)
        client = spanner.Client(project="poll-cpu")
        instance = client.instance("bench", configuration_name="projects/poll-cpu/instanceConfigs/emulator-config", node_count=1)
        instance.create().result(60)
        db = instance.database("bench", ddl_statements=sample_migrations("singers").statements())
        db.create().result(120)
        rng = random.Random(seed)
        for _ in range(100):
            with db.batch() as b:
                b.insert_or_update("Singers", COLUMNS, [
                    (rng.getrandbits(63), "Ann", "Lee", dt.date(1990, 1, 2), base64.b64encode(rng.randbytes(rng.randint(1, 1024))),
                     spanner.COMMIT_TIMESTAMP, False) for _ in range(200)])
        params: dict[str, Any] = {"shards": list(range(-18, 19)), "ts": dt.datetime(2000, 1, 1, tzinfo=dt.UTC)}
        types = {"shards": param_types.Array(param_types.INT64), "ts": param_types.TIMESTAMP}

        def poll() -> int:
            with db.snapshot() as snap:
                return len(list(snap.execute_sql(SQL, params=params, param_types=types)))

        for _ in range(10):
            poll()
        before = _cpu_seconds(server.pid)
        rows = sum(poll() for _ in range(polls))
        return (_cpu_seconds(server.pid) - before) / rows * 1e6
    finally:
        server.terminate()
        server.wait(30)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--compare", metavar="DIR", required=True, help="the other tree (e.g. a git archive of main)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--polls", type=int, default=150)
    args = p.parse_args(argv)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    now: list[float] = []
    before: list[float] = []
    for i in range(args.rounds):
        for tree, into in ([(here, now), (args.compare, before)] if i % 2 == 0 else [(args.compare, before), (here, now)]):
            into.append(measure(tree, args.polls))
        print(f"round {i + 1}: now {now[-1]:.2f} us/row, before {before[-1]:.2f} us/row (load {os.getloadavg()[0]:.1f})", flush=True)
    print(f"median now / before: {statistics.median(now) / statistics.median(before):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
