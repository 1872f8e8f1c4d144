"""Switching between Google's Java Spanner Change Watcher (1.2.1) and ours keeps the place.

Both libraries keep their progress in LAST_SEEN_COMMIT_TIMESTAMPS. Each scenario runs the real
Java library (watcher/devtools/javawatcher, built once per run with Maven) as a child process
against the suite's Spanner, with SPANNER_EMULATOR_HOST naming it, and our TableWatcher with
the same shard provider: whichever runs second must deliver exactly the rows committed after
the first one's checkpoint, nothing lost and nothing repeated. Skipped only where mvn or java
is missing; a build that fails fails the tests.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import os

import pytest

from tests.watcher.java_support import (
    CASES,
    CHECKPOINTS,
    POLL_SECONDS,
    TABLE,
    ShardCase,
    Written,
    as_delivered,
    checkpoint_rows,
    java_delivered,
    java_shard_value,
    run_ours,
    write_round,
)
from watcher import MIN_TIMESTAMP
from watcher.checkpoints.java_table import shard_columns
from watcher.devtools import java_library as jl

UTC = dt.UTC


@pytest.fixture(scope="session")
def java_build():
    """The Java program, built once per run (from the cache when its sources did not change)."""
    try:
        jl.tools()
    except jl.JavaToolsMissing as exc:
        pytest.skip(str(exc))
    return jl.build()  # JavaBuildFailed propagates: a broken build fails the tests


HANDOVER_CASES = [pytest.param(c, id=c.id) for c in CASES]


def run_java(java_build, db, case: ShardCase, **options):
    config = jl.watch_config(db, TABLE, poll_interval=POLL_SECONDS, stop_after_idle_polls=2, min_sessions=1,
                             **{**case.java_shard(), "shard": java_shard_value(case)} if case.column_type else {},
                             **options)
    return jl.run(java_build, config, emulator_host=os.environ["SPANNER_EMULATOR_HOST"], timeout=90).check()


def texts(rows):
    return [(key, jl.rfc3339_nanos(ts)) for key, ts in rows]


@pytest.mark.parametrize("case", HANDOVER_CASES)
def test_java_first_then_ours_resumes_at_its_checkpoint(java_build, make_database, case):
    db = make_database([case.ddl()])
    written = Written()
    first = write_round(db, case, 100, written)

    java = run_java(java_build, db, case, initial_commit_timestamp="min")
    assert java_delivered(java.changes) == texts(as_delivered(first))
    [stored] = checkpoint_rows(db)
    assert stored[-1] == max(first.values())  # Java checkpointed everything it delivered

    second = write_round(db, case, 200, written)
    ours = run_ours(db, case, expect=len(second))
    assert ours == as_delivered(second)
    assert [r[:-1] for r in checkpoint_rows(db)] == [stored[:-1]]  # one row, the same key: we wrote Java's row


@pytest.mark.parametrize("case", HANDOVER_CASES)
def test_ours_first_then_java_resumes_at_our_checkpoint(java_build, make_database, case):
    db = make_database([case.ddl()])
    written = Written()
    first = write_round(db, case, 100, written)
    assert run_ours(db, case, expect=len(first), initial_timestamp=MIN_TIMESTAMP) == as_delivered(first)
    [ours] = checkpoint_rows(db)
    assert ours[-1] == max(first.values())

    second = write_round(db, case, 200, written)
    # No initial timestamp: where Java finds no checkpoint row of its own it starts at "now" and
    # delivers nothing, so a row key of ours that Java does not compute fails here.
    java = run_java(java_build, db, case)
    assert java_delivered(java.changes) == texts(as_delivered(second))
    rows = checkpoint_rows(db)
    assert [r[:-1] for r in rows] == [ours[:-1]] and rows[0][-1] == max(second.values())


def test_java_values_and_receive_times_are_printed(java_build, make_database):
    """The program's change lines carry what a benchmark needs: keys, values, exact commit time, receive time."""
    case = CASES[0]
    db = make_database([case.ddl()])
    first = write_round(db, case, 1, Written())
    java = run_java(java_build, db, case, initial_commit_timestamp="min")
    change = java.changes[0]
    key, ts = as_delivered(first)[0]
    assert change["table"] == TABLE and change["keys"] == [key]
    assert change["values"] == {"Id": key, "Name": f"name-{key}", "Ts": jl.rfc3339_nanos(ts)}
    assert change["received_ns"] >= int(ts.timestamp()) * 1_000_000_000
    assert java.stopped["reason"] == "idle_polls" and java.stopped["polls"] >= 3 and java.stopped["cpu_ns"] > 0


def test_java_runs_until_stdin_closes(java_build, make_database):
    """The benchmark mode: the program watches until its stdin closes, printing changes as they arrive."""
    case = CASES[0]
    db = make_database([case.ddl()])
    config = jl.watch_config(db, TABLE, poll_interval=POLL_SECONDS, min_sessions=1, initial_commit_timestamp="min")
    process = jl.JavaWatcherProcess(java_build, config, emulator_host=os.environ["SPANNER_EMULATOR_HOST"],
                                    jvm_options=jl.QUICK_START)
    events = process.events()
    assert next(events)["event"] == "started"
    first = write_round(db, case, 1, Written())
    seen = [next(events) for _ in first]
    run = process.stop()
    assert [(c["keys"][0], c["commit_timestamp"]) for c in seen] == texts(as_delivered(first))
    assert run.check().stopped["reason"] == "stdin_closed" and run.stopped["changes"] == len(first)


# --- the checkpoint row's SHARD_ID_* values, as the Java library writes them ---------------------------

#: Shard values of every type the Java repository stores (value, Java type name or None to infer).
VECTORS: tuple[tuple[str, object, str | None], ...] = (
    ("bool", True, None), ("bool-false", False, None),
    ("bytes", b"\x00\x01\xff", None),
    ("date", dt.date(2024, 2, 29), None),
    *((f"float64-{v!r}", v, None) for v in (1.0, 1e20, 1e-5, 0.1, 123456789.0, -0.5)),
    ("int64", -9223372036854775808, None), ("int64-small", 7, None),
    ("numeric", decimal.Decimal("123.450000000"), None), ("numeric-int", decimal.Decimal("10"), None),
    ("json", '{"a":[1,2],"b":"x"}', "JSON"),
    ("string", "eu", None), ("string-non-ascii", "zürich,東京", None),
    *((f"timestamp-{n}", ts, None) for n, ts in (
        ("0", dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("3", dt.datetime(2024, 1, 2, 3, 4, 5, 120000, tzinfo=UTC)),
        ("6", dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)))),
    ("bool-array", [True, False], None),
    ("bytes-array", [b"\x00\x01", b"eu", b""], None),
    ("date-array", [dt.date(2024, 1, 2), dt.date(1999, 12, 31)], None),
    ("float64-array", [1.0, 1e20, 1e-5, 0.1, 123456789.0, -0.5, 1e7, 1e-3], None),
    ("int64-array", [-1, 0, 9223372036854775807], None),
    ("numeric-array", [decimal.Decimal("1.5"), decimal.Decimal("-2"), decimal.Decimal("0.000000001")], None),
    ("json-array", ['{"a":1}', '{"b":[1,2]}'], "ARRAY<JSON>"),
    ("string-array", ["eu", "us", "zürich,東京", ""], None),
    ("timestamp-array", [dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC), dt.datetime(2024, 1, 2, 3, 4, 5, 120000, tzinfo=UTC),
                         dt.datetime(2024, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)], None),
)
#: TIMESTAMP with nine fractional digits: our client writes microseconds, so the Java side gets the text.
NANO_VECTORS = (("timestamp-9", "2024-01-02T03:04:05.123456789Z", "TIMESTAMP"),
                ("timestamp-array-9", ["2024-01-02T03:04:05.123456789Z", "2024-01-02T03:04:05.100000000Z"],
                 "ARRAY<TIMESTAMP>"))


@pytest.fixture(scope="module")
def java_vectors(java_build, instance):
    """The SHARD_ID_* columns the Java repository wrote for each of VECTORS and NANO_VECTORS, by name."""
    db = instance.database(f"java-vectors-{os.getpid()}", ddl_statements=[])
    db.create().result(60)
    try:
        ts = dt.datetime(2024, 6, 1, tzinfo=UTC)
        shards = [(name, value, type_name) for name, value, type_name in VECTORS]
        config = jl.checkpoints_config(db, ts, shards, min_sessions=1)
        config["shards"] += [{"table": name, "type": t, "value": v} for name, v, t in NANO_VECTORS]
        config["shards"].append({"table": "no-shard"})
        jl.run(java_build, config, emulator_host=os.environ["SPANNER_EMULATOR_HOST"], timeout=90).check()
        sql = ("SELECT TABLE_NAME, SHARD_ID_BOOL, SHARD_ID_BYTES, SHARD_ID_DATE, SHARD_ID_FLOAT64, SHARD_ID_INT64, "
               f"SHARD_ID_STRING, SHARD_ID_TIMESTAMP FROM {CHECKPOINTS}")
        with db.snapshot() as snap:
            yield {row[0]: list(row[1:]) for row in snap.execute_sql(sql)}
    finally:
        db.drop()


@pytest.mark.parametrize("name, value, type_name", VECTORS, ids=[v[0] for v in VECTORS])
def test_shard_columns_match_the_java_repository(java_vectors, name, value, type_name):
    if type_name == "JSON":  # the program takes JSON as text; shard_columns takes it parsed
        value = json.loads(value)
    elif type_name == "ARRAY<JSON>":
        value = [json.loads(v) for v in value]
    elif isinstance(value, bytes):  # ours are given as the client takes BYTES: base64 text
        value = base64.b64encode(value)
    elif isinstance(value, list) and value and isinstance(value[0], bytes):
        value = [base64.b64encode(v) for v in value]
    assert shard_columns(value) == java_vectors[name]


def test_java_repository_without_shard_writes_no_shard_columns(java_vectors):
    assert java_vectors["no-shard"] == [None] * 7


@pytest.mark.parametrize("name", [v[0] for v in NANO_VECTORS])
def test_java_timestamp_texts_with_nanoseconds(java_vectors, name):
    """Nanosecond timestamps keep all nine digits in Java's text (and the typed column keeps them)."""
    row = java_vectors[name]
    if name == "timestamp-9":
        assert row[6].nanosecond == 123456789 and row[5] is None
    else:
        assert row[5] == "2024-01-02T03:04:05.123456789Z,2024-01-02T03:04:05.100000000Z"


@pytest.mark.parametrize("case", [c for c in CASES if c.id in ("int64-array", "string-array")], ids=lambda c: c.id)
def test_java_limit_and_with_query_then_ours(java_build, make_database, case):
    """Java's other poll shapes run here too: with LIMIT 2 a poll cuts through the three rows sharing one
    commit timestamp (Java continues with ``= @prevCommitTimestamp ... OFFSET``), and with the fallback at
    -1 every poll after one that returned rows is Java's WITH query (one CTE per shard value)."""
    db = make_database([case.ddl()])
    written = Written()
    first = write_round(db, case, 100, written)
    first.update(write_round(db, case, 200, written))
    java = run_java(java_build, db, case, initial_commit_timestamp="min", limit=2, fallback_to_with_query_seconds=-1)
    assert java_delivered(java.changes) == texts(as_delivered(first))
    second = write_round(db, case, 300, written)
    assert run_ours(db, case, expect=len(second)) == as_delivered(second)


def test_java_refuses_a_table_without_commit_timestamp_column(java_build, make_database):
    """The Java library reads INFORMATION_SCHEMA.COLUMN_OPTIONS here as on Spanner: no such column, no start."""
    db = make_database(["CREATE TABLE Plain (Id INT64 NOT NULL, Ts TIMESTAMP) PRIMARY KEY (Id)"])
    config = jl.watch_config(db, "Plain", stop_after_idle_polls=1, min_sessions=1)
    java = jl.run(java_build, config, emulator_host=os.environ["SPANNER_EMULATOR_HOST"], timeout=90)
    assert java.returncode == 1 and java.stopped["state"] == "FAILED"
    assert "does not contain a column with option allow_commit_timestamp=true" in java.stopped["failure"]


def test_old_builds_are_swept_but_not_the_current_young_or_building_ones(tmp_path):
    folders = {name: tmp_path / name for name in ("javawatcher-new", "javawatcher-old", "javawatcher-young",
                                                  "javawatcher-build-abc", "other-old")}
    for folder in folders.values():
        folder.mkdir()
    for name in ("javawatcher-old", "javawatcher-build-abc", "other-old", "javawatcher-new"):
        os.utime(folders[name], (0, 0))
    assert jl.sweep_old_builds(folders["javawatcher-new"]) == [folders["javawatcher-old"]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["javawatcher-build-abc", "javawatcher-new",
                                                          "javawatcher-young", "other-old"]
