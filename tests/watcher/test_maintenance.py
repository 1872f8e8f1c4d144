"""Index pruning: the cutoff rule (pure), the partitioned DML against the local Spanner, and the APScheduler job."""

from __future__ import annotations

import datetime as dt
import os
import threading

import pytest
from freezegun import freeze_time
from google.cloud import spanner
from google.cloud.spanner_admin_database_v1 import DatabaseDialect
from google.cloud.spanner_v1 import param_types

from tests.conftest import emulator_lacks
from watcher.checkpoints import InMemoryCommitTimestampRepository, SpannerCommitTimestampRepository
from watcher.dialects import GOOGLE_SQL, POSTGRESQL
from watcher.errors import ConfigurationError, InvalidIdentifierError, SchemaError
from watcher.model import Checkpoint, TableId
from watcher.request_settings import RequestSettings
from watcher.schema_tools import ddl
from watcher.schema_tools.ddl import ShardSource
from watcher.schema_tools.migrations import MigrationSet, Migrator, default_migrations
from watcher.schema_tools.pruning import IndexPruningJob, PruneSpec, check_schema, prune_cutoff, prune_index, prune_statement

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
FAR_FUTURE = dt.datetime(2200, 1, 1, tzinfo=UTC)
HOUR = dt.timedelta(hours=1)
SINGERS = ("SingerId", "FirstName", "LastName", "LastUpdated")
#: The watcher settings that go with ddl/samples/singers.
SETUP = ddl.sharded_polling("Singers", ["FirstName", ShardSource("LastName", not_null=True)], processed_column="Processed")


# --- the rule ----------------------------------------------------------------------------------------

T0 = dt.datetime(2024, 5, 1, 12, tzinfo=UTC)


@pytest.mark.parametrize("now, oldest, retention, cutoff", [
    (T0, None, HOUR, None),                                   # nothing delivered yet: prune nothing
    (T0, T0 - 5 * HOUR, HOUR, T0 - 6 * HOUR),                 # a watcher behind: its checkpoint rules
    (T0, T0 + 5 * HOUR, HOUR, T0 - HOUR),                     # checkpoints ahead of the clock: now rules
    (T0, T0, dt.timedelta(0), T0),
    (T0.replace(tzinfo=None), (T0 - HOUR).replace(tzinfo=None), HOUR, T0 - 2 * HOUR),   # naive means UTC
])
def test_cutoff(now, oldest, retention, cutoff):
    assert prune_cutoff(now, oldest, retention) == cutoff


def test_statements():
    assert prune_statement(PruneSpec("Singers", HOUR)) == "UPDATE `Singers` SET `LastUpdated` = NULL WHERE `LastUpdated` < @cutoff"
    assert prune_statement(PruneSpec(TableId("T"), HOUR, "Ts", "Done")) == (
        "UPDATE `T` SET `Done` = TRUE WHERE `Ts` < @cutoff AND (`Done` IS NULL OR NOT `Done`)")


@pytest.mark.parametrize("dialect, expected", [
    (GOOGLE_SQL, ("UPDATE `T` SET `Ts` = NULL WHERE `Ts` < @cutoff",
                  "UPDATE `T` SET `Done` = TRUE WHERE `Ts` < TIMESTAMP '2024-05-01T12:00:00.000000000Z' "
                  "AND (`Done` IS NULL OR NOT `Done`)")),
    (POSTGRESQL, ('UPDATE "T" SET "Ts" = NULL WHERE "Ts" < $1',
                  "UPDATE \"T\" SET \"Done\" = TRUE WHERE \"Ts\" < CAST('2024-05-01T12:00:00.000000000Z' AS timestamptz) "
                  'AND ("Done" IS NULL OR NOT "Done")')),
], ids=str)
def test_statements_in_each_dialect(dialect, expected):
    assert prune_statement(PruneSpec("T", HOUR, "Ts"), dialect=dialect) == expected[0]
    assert prune_statement(PruneSpec("T", HOUR, "Ts", "Done"), T0, dialect=dialect) == expected[1]


@pytest.mark.parametrize("kwargs, error", [
    ({"table": "x`; DROP TABLE y"}, InvalidIdentifierError),
    ({"commit_timestamp_column": "a b"}, InvalidIdentifierError),
    ({"processed_column": "1x"}, InvalidIdentifierError),
    ({"retention": -HOUR}, ConfigurationError),
    ({"retention": 3600}, ConfigurationError),
])
def test_bad_specs(kwargs, error):
    args = {"table": "Singers", "retention": HOUR, **kwargs}
    with pytest.raises(error):
        PruneSpec(**args)


# --- against the server ----------------------------------------------------------------------------------

@pytest.fixture
def singers(make_database):
    """ddl/samples/singers plus the watcher's own tables, through the migration runner."""
    database = make_database([])
    Migrator(database).migrate([default_migrations(), MigrationSet.from_directory(os.path.join(ROOT, "ddl", "samples", "singers"))])
    return database


def write(database, ids):
    """Insert rows ``ids`` in one transaction; returns its commit timestamp."""
    with database.batch() as batch:
        batch.insert("Singers", SINGERS, [(i, f"First{i}", f"Last{i}", spanner.COMMIT_TIMESTAMP) for i in ids])
    return batch.committed


def poll(database, since=EPOCH):
    """The watcher's poll through the NULL_FILTERED index: the rows it can still see."""
    f = SETUP.shard_provider.shard_filter()
    sql = f"SELECT SingerId FROM Singers{SETUP.table_hint} WHERE LastUpdated > @since{f.sql} ORDER BY LastUpdated, SingerId"
    with database.snapshot() as snap:
        return [r[0] for r in snap.execute_sql(sql, params={"since": since, **f.params},
                                               param_types={"since": param_types.TIMESTAMP, **f.types})]


def data(database):
    with database.snapshot() as snap:
        return [tuple(r) for r in snap.execute_sql("SELECT SingerId, FirstName, LastName FROM Singers ORDER BY SingerId")]


def test_timestamp_mode_never_passes_the_oldest_checkpoint(singers):
    t1, t2, t3 = write(singers, [1, 2]), write(singers, [3, 4]), write(singers, [5, 6])
    before = data(singers)
    checkpoints = InMemoryCommitTimestampRepository()
    checkpoints.set(TableId("Singers"), Checkpoint(t3), shard=[0, 1])
    checkpoints.set(TableId("Singers"), Checkpoint(t2), shard=[2, 3])   # the slowest watcher: only t1, t2 delivered
    result = prune_index(singers, PruneSpec("Singers", dt.timedelta(0)), checkpoints, now=FAR_FUTURE)
    assert (result.cutoff, result.rows, result.skipped) == (t2, 2, None)
    assert poll(singers) == [3, 4, 5, 6]                 # rows 1, 2 left the poll's view ...
    assert data(singers) == before                       # ... without losing their data
    with singers.snapshot() as snap:
        nulled = list(snap.execute_sql("SELECT SingerId FROM Singers WHERE LastUpdated IS NULL ORDER BY SingerId"))
    assert nulled == [[1], [2]]
    # Retention counts back from the checkpoint: one hour before t3 is before every row.
    checkpoints.set(TableId("Singers"), Checkpoint(t3), shard=[2, 3])
    assert prune_index(singers, PruneSpec("Singers", HOUR), checkpoints, now=FAR_FUTURE).rows == 0
    assert poll(singers) == [3, 4, 5, 6]
    del t1


def test_processed_mode_keeps_the_commit_timestamp(singers):
    t1, t2 = write(singers, [1, 2]), write(singers, [3])
    checkpoints = InMemoryCommitTimestampRepository()
    checkpoints.set(TableId("Singers"), Checkpoint(t2))
    spec = PruneSpec("Singers", dt.timedelta(0), processed_column="Processed")
    check_schema(singers, spec)
    assert prune_index(singers, spec, checkpoints, now=FAR_FUTURE).rows == 2
    assert poll(singers) == [3]
    with singers.snapshot() as snap:
        rows = [tuple(r) for r in snap.execute_sql("SELECT SingerId, Processed, ShardId IS NULL, LastUpdated FROM Singers ORDER BY SingerId")]
    assert rows == [(1, True, True, t1), (2, True, True, t1), (3, None, False, t2)]
    assert prune_index(singers, spec, checkpoints, now=FAR_FUTURE).rows == 0     # idempotent


def test_no_checkpoint_no_pruning(singers):
    write(singers, [1])
    result = prune_index(singers, PruneSpec("Singers", dt.timedelta(0)), InMemoryCommitTimestampRepository(), now=FAR_FUTURE)
    assert result.cutoff is None and "no checkpoint for table Singers" in result.skipped
    assert poll(singers) == [1]


def test_a_running_watcher_loses_nothing_to_pruning(singers):
    """Watchers deliver, pruning runs on their checkpoints, watchers carry on: every row arrives once in order."""
    from tests.watcher.core_support import Collector
    from watcher import TableWatcher

    repository = SpannerCommitTimestampRepository(singers, create_if_missing=False)
    seen = Collector()

    def watch() -> TableWatcher:
        w = TableWatcher(singers, "Singers", **SETUP.watcher_options(), checkpoints=repository, initial_timestamp=EPOCH,
                         poll_interval=0.005, limit=3)
        w.add_callback(seen)
        return w

    write(singers, [1, 2, 3])
    write(singers, [4, 5])
    with watch():
        seen.wait_for(5)
    t3 = write(singers, [6, 7])                  # written while no watcher runs: not delivered yet
    result = prune_index(singers, PruneSpec("Singers", dt.timedelta(0)), repository, now=FAR_FUTURE)
    assert result.rows == 3                      # rows 1-3 (older than the checkpoint), not 4-5 (at it), not 6-7
    assert poll(singers) == [4, 5, 6, 7]
    with watch():
        seen.wait_for(7)
    assert [c.keys[0] for c in seen.changes] == [1, 2, 3, 4, 5, 6, 7]
    assert seen.changes[-1].commit_timestamp == t3


@pytest.mark.parametrize("ddl_text, spec, message", [
    ("CREATE TABLE T (Id INT64 NOT NULL, Ts TIMESTAMP NOT NULL OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)",
     PruneSpec("T", HOUR, "Ts"), "is NOT NULL, so pruning cannot set it to NULL"),
    ("CREATE TABLE T (Id INT64 NOT NULL, Ts TIMESTAMP) PRIMARY KEY (Id)", PruneSpec("T", HOUR, "Ts"), "is not a commit-timestamp column"),
    ("CREATE TABLE T (Id INT64 NOT NULL, Ts TIMESTAMP OPTIONS (allow_commit_timestamp=true)) PRIMARY KEY (Id)",
     PruneSpec("T", HOUR, "Ts", "Done"), "has no BOOL column Done"),
    ("CREATE TABLE T (Id INT64 NOT NULL) PRIMARY KEY (Id)", PruneSpec("Nope", HOUR), "table Nope has no column LastUpdated"),
])
def test_schema_problems_are_named(make_database, ddl_text, spec, message):
    database = make_database([ddl_text])
    with pytest.raises(SchemaError, match=message):
        check_schema(database, spec)


@pytest.mark.parametrize("ddl_text, spec, message", [
    ('CREATE TABLE "T" ("Id" bigint NOT NULL, "Ts" spanner.commit_timestamp NOT NULL, PRIMARY KEY ("Id"))',
     PruneSpec("T", HOUR, "Ts"), "is NOT NULL, so pruning cannot set it to NULL"),
    ('CREATE TABLE "T" ("Id" bigint NOT NULL, "Ts" timestamptz, PRIMARY KEY ("Id"))', PruneSpec("T", HOUR, "Ts"),
     "is not a commit-timestamp column"),
    ('CREATE TABLE "T" ("Id" bigint NOT NULL, "Ts" spanner.commit_timestamp, "Done" varchar, PRIMARY KEY ("Id"))',
     PruneSpec("T", HOUR, "Ts", "Done"), "has no BOOL column Done"),
    ('CREATE TABLE "T" ("Id" bigint NOT NULL, PRIMARY KEY ("Id"))', PruneSpec("Nope", HOUR), "table Nope has no column"),
])
def test_schema_problems_are_named_in_a_postgresql_database(make_database, ddl_text, spec, message):
    database = make_database((), database_dialect=DatabaseDialect.POSTGRESQL)
    database.update_ddl([ddl_text]).result(60)
    with pytest.raises(SchemaError, match=message):
        check_schema(database, spec)


@pytest.mark.parametrize("processed", [None, "Processed"], ids=["timestamp", "processed"])
def test_pruning_a_postgresql_table_made_by_the_ddl_helpers(make_database, processed):
    setup = ddl.sharded_table("Singers", [ddl.ColumnDef("SingerId", "INT64", not_null=True),
                                          ddl.ColumnDef("Name", "STRING(MAX)")], ["SingerId"], ["Name"], shards=5,
                              processed_column=processed, dialect=POSTGRESQL)
    database = make_database((), database_dialect=DatabaseDialect.POSTGRESQL)
    database.update_ddl(list(setup.statements)).result(60)

    def write(ids):
        with database.batch() as batch:
            batch.insert("Singers", ("SingerId", "Name", "LastUpdated"), [(i, f"N{i}", spanner.COMMIT_TIMESTAMP) for i in ids])
        return batch.committed

    def polled():
        f = setup.shard_provider.shard_filter(POSTGRESQL)
        sql = POSTGRESQL.bind(f'SELECT "SingerId" FROM "Singers" {setup.table_hint} '
                              f'WHERE "LastUpdated" > @since{f.sql} ORDER BY "SingerId"',
                              {"since": EPOCH, **f.params}, {"since": param_types.TIMESTAMP, **f.types})
        with database.snapshot() as snap:
            return [r[0] for r in snap.execute_sql(sql.sql, params=sql.params, param_types=sql.types)]

    write([1, 2])
    delivered = write([3])
    write([4])
    checkpoints = InMemoryCommitTimestampRepository()
    checkpoints.set(TableId("Singers"), Checkpoint(delivered))
    spec = PruneSpec("Singers", dt.timedelta(0), processed_column=processed)
    check_schema(database, spec)
    result = prune_index(database, spec, checkpoints, now=FAR_FUTURE)
    assert (result.cutoff, result.rows) == (delivered, 2)
    assert polled() == [3, 4]
    assert prune_index(database, spec, checkpoints, now=FAR_FUTURE).rows == 0     # idempotent


# --- the job ------------------------------------------------------------------------------------------

def test_job_uses_its_clock(singers):
    t1 = write(singers, [1])
    t2 = write(singers, [2])
    checkpoints = InMemoryCommitTimestampRepository()
    checkpoints.set(TableId("Singers"), Checkpoint(t2))
    job = IndexPruningJob(singers, [PruneSpec("Singers", dt.timedelta(0))], checkpoints)
    early = (t1 - dt.timedelta(seconds=1)).replace(tzinfo=UTC)
    with freeze_time(early):                       # the default clock is the (frozen) wall clock
        assert job.clock() == early
    job.clock = lambda: early                      # now earlier than the checkpoint: now rules
    [result] = job.run()
    assert (result.cutoff, result.rows) == (early, 0)
    job.clock = lambda: FAR_FUTURE
    [result] = job.run()
    assert (result.cutoff, result.rows) == (t2, 1) and poll(singers) == [2]
    assert job.last_results == [result]


def test_job_keeps_going_when_one_table_fails(singers):
    singers.update_ddl(["CREATE TABLE Gone (Id INT64 NOT NULL, LastUpdated TIMESTAMP OPTIONS (allow_commit_timestamp=true)) "
                        "PRIMARY KEY (Id)"]).result(60)
    write(singers, [1])
    t2 = write(singers, [2])
    checkpoints = InMemoryCommitTimestampRepository()
    for table in ("Singers", "Gone"):
        checkpoints.set(TableId(table), Checkpoint(t2))
    job = IndexPruningJob(singers, [PruneSpec("Gone", dt.timedelta(0)), PruneSpec("Singers", dt.timedelta(0))], checkpoints,
                          clock=lambda: FAR_FUTURE)
    assert [r.rows for r in job.run()] == [0, 1]   # the schema check passes on the first run
    singers.update_ddl(["DROP TABLE Gone"]).result(60)
    write(singers, [3])
    checkpoints.set(TableId("Singers"), Checkpoint(FAR_FUTURE))
    gone, done = job.run()
    assert gone.skipped.startswith("failed:") and "Gone" in gone.skipped
    assert done.rows == 2 and poll(singers) == []


def test_job_on_a_scheduler(singers):
    from apscheduler.events import EVENT_JOB_ERROR, EVENT_JOB_EXECUTED
    from apscheduler.schedulers.background import BackgroundScheduler

    write(singers, [1])
    t2 = write(singers, [2])
    checkpoints = InMemoryCommitTimestampRepository()
    checkpoints.set(TableId("Singers"), Checkpoint(t2))
    job = IndexPruningJob(singers, [PruneSpec("Singers", dt.timedelta(0))], checkpoints, clock=lambda: FAR_FUTURE)
    scheduler = BackgroundScheduler(timezone="UTC")
    scheduled = job.schedule(scheduler, interval=dt.timedelta(minutes=5))
    assert (scheduled.max_instances, scheduled.coalesce, scheduled.trigger.interval) == (1, True, dt.timedelta(minutes=5))
    ran = threading.Event()
    scheduler.add_listener(lambda event: ran.set(), EVENT_JOB_EXECUTED | EVENT_JOB_ERROR)
    scheduler.start()
    try:
        scheduled.modify(next_run_time=dt.datetime.now(UTC))
        assert ran.wait(10)
    finally:
        scheduler.shutdown(wait=True)
    assert job.last_results[0].rows == 1 and poll(singers) == [2]
    with pytest.raises(ConfigurationError):
        job.schedule(scheduler, interval=dt.timedelta(0))
    with pytest.raises(ConfigurationError):
        IndexPruningJob(singers, [], checkpoints)


@emulator_lacks("the local request log (SPANNER_SYS.LOCAL_REQUEST_LOG)")
def test_pruning_statements_carry_the_request_tag(singers):
    write(singers, [1, 2])
    t2 = write(singers, [3, 4])
    checkpoints = InMemoryCommitTimestampRepository()
    checkpoints.set(TableId("Singers"), Checkpoint(t2), shard=[0])
    job = IndexPruningJob(singers, [PruneSpec("Singers", dt.timedelta(0))], checkpoints, clock=lambda: FAR_FUTURE,
                          request_settings=RequestSettings(request_tag="nightly-prune"))
    assert [r.rows for r in job.run()] == [2]
    with singers.snapshot() as snap:
        logged = [tuple(r) for r in snap.execute_sql(
            "SELECT METHOD, REQUEST_TAG, TEXT FROM SPANNER_SYS.LOCAL_REQUEST_LOG WHERE TEXT LIKE '%LastUpdated%' "
            "AND TEXT NOT LIKE '%SPANNER_SYS%'")]
    assert logged and all(tag == "nightly-prune" for _, tag, _ in logged)
    assert any(text.startswith("UPDATE") for _, _, text in logged)  # the partitioned DML itself
