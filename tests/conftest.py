"""Shared fixtures: one Spanner for the whole run, reached only through the official client.

``SPANNER_EMULATOR_HOST`` set: that server (the official emulator, or a local server
started on its own) is used. Unset: the embedded local Spanner is started once for the
run. Tests that need the embedded server's extras (fault injection, restart) ask for
``local_server`` and are skipped against anything else.
"""

from __future__ import annotations

import itertools
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

# As the CLI does (watcher/cli/main.py): the suite starts Spark's JVM after using gRPC in this process.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

from watcher.changelog.job import ENGINE_VARIABLE
from watcher.localspanner.change_streams.load import LoadPolicy
from watcher.schema_tools.migrations import sample_migrations

PROJECT = "test-project"
INSTANCE = "test-instance"

_EXTERNAL = os.environ.get("SPANNER_EMULATOR_HOST")


def emulator_lacks(feature: str) -> pytest.MarkDecorator:
    """Skip when SPANNER_EMULATOR_HOST names another server: the official emulator lacks ``feature``."""
    return pytest.mark.skipif(bool(_EXTERNAL), reason=f"the official emulator lacks {feature}")


@pytest.fixture(scope="session")
def _server() -> Iterator[object | None]:
    if _EXTERNAL:
        yield None
        return
    from watcher.localspanner.server import LocalSpanner

    with LocalSpanner() as server:
        os.environ["SPANNER_EMULATOR_HOST"] = server.emulator_host
        yield server
    os.environ.pop("SPANNER_EMULATOR_HOST", None)


@pytest.fixture
def local_server(_server):
    """The embedded server object, for tests of its own extras; skipped against other servers."""
    if _server is None:
        pytest.skip("needs the embedded local Spanner (SPANNER_EMULATOR_HOST points elsewhere)")
    yield _server
    _server.faults.clear()


#: How often the embedded server splits and merges change-stream partitions under ``churn``.
CHURN_SECONDS = 0.3


@pytest.fixture
def churn(local_server):
    """Change-stream partitions split and merge every CHURN_SECONDS for one test (embedded server only)."""
    service = local_server.service
    before = service.change_stream_partition_churn_seconds
    service.change_stream_partition_churn_seconds = CHURN_SECONDS
    yield
    service.change_stream_partition_churn_seconds = before


#: How the embedded server's change-stream partitions follow load under ``load_splits``: one writer
#: thread commits well above the split rate, a stream with no writes is below the merge rate.
LOAD_POLICY = LoadPolicy(split_rate=40.0, merge_rate=10.0, window_seconds=0.3)


@pytest.fixture
def load_splits(local_server):
    """Change-stream partitions split under write load and merge when cold for one test (embedded server only)."""
    service = local_server.service
    before = service.change_stream_load
    service.change_stream_load = LOAD_POLICY
    yield LOAD_POLICY
    service.change_stream_load = before


@pytest.fixture
def shared_commit_timestamps(local_server):
    """The embedded server with shared commit timestamps on for one test (restored after);
    skipped against other servers. Non-conflicting commits may then share a timestamp, as on Spanner."""
    clock = local_server.clock
    before = clock.share_timestamps
    clock.share_timestamps = True
    yield local_server
    clock.share_timestamps = before


@pytest.fixture(params=["unique", "shared"])
def commit_timestamps(request, _server):
    """Run a test twice: with unique commit timestamps, then with shared ones switched on in the
    embedded server (several transactions per commit timestamp, as Spanner allows); the shared
    run is skipped against other servers."""
    if request.param == "unique":
        yield request.param
        return
    if _server is None:
        pytest.skip("shared commit timestamps are a switch of the embedded local Spanner")
    before = _server.clock.share_timestamps
    _server.clock.share_timestamps = True
    yield request.param
    _server.clock.share_timestamps = before


@pytest.fixture(scope="session")
def spanner_client(_server):
    from google.cloud import spanner

    return spanner.Client(project=PROJECT)


@pytest.fixture(scope="session")
def instance(spanner_client):
    inst = spanner_client.instance(INSTANCE, configuration_name=f"projects/{PROJECT}/instanceConfigs/emulator-config",
                                   display_name="tests", node_count=1)
    if not inst.exists():
        inst.create().result(30)
    return inst


_counter = itertools.count()


@pytest.fixture
def make_database(instance) -> Iterator[Callable[..., object]]:
    """Create a fresh database with the given DDL; dropped after the test."""
    created = []

    def make(ddl: list[str] | tuple[str, ...] = (), **kwargs) -> object:
        db_id = f"db-{next(_counter)}-{uuid.uuid4().hex[:8]}"
        db = instance.database(db_id, ddl_statements=list(ddl), **kwargs)
        db.create().result(60)
        created.append(db)
        return db

    yield make
    for db in created:
        try:
            db.drop()
        except Exception:  # the test may have dropped it already
            pass


#: The packaged sample schema (the demo's and the benchmark's Singers table with its shard index).
SINGERS_DDL = sample_migrations("singers").statements()


@pytest.fixture
def singers_db(make_database):
    return make_database(SINGERS_DDL)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local Spark session for the whole run (local[2], 2 shuffle partitions, UI off, Delta Lake loaded)."""
    from pyspark.sql import SparkSession

    from watcher.changelog.tables import runtime

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master("local[2]").appName("spanner-watcher-tests")
    for key, value in {**runtime.spark_settings({}), **runtime.LOCAL_DELTA_SETTINGS}.items():
        builder = builder.config(key, value)
    session = (builder
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


#: The changelog job's engines a test of the job runs on (watcher/changelog/engines).
ENGINES = ("driver", "spark")

#: ``each_engine`` over ``auto`` too, for a test of several runs of which the driver engine declines
#: some (marked ``driver_declines``): ``auto`` gives it the others, so that one warehouse is written by both.
AND_AUTO = pytest.mark.parametrize("each_engine", ("driver", "auto", "spark"), indirect=True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "driver_declines(why): the driver engine declines the test's runs by design "
                                       "(why: the input it cannot do exactly); each_engine skips its driver run")


@pytest.fixture(params=ENGINES, ids=ENGINES)
def each_engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run a changelog test once on each engine, for a test that holds whichever engine does the runs.

    Sets ``SPANNER_WATCHER_ENGINE`` (the job's default engine, :data:`watcher.changelog.job.ENGINE_VARIABLE`)
    to ``driver``, then ``spark``, for the test and yields the name; every ``Changelog`` built without
    ``.engine(...)`` runs on it, and so do the CLI's and the crash children's runs, which inherit the
    environment. Use it (``pytest.mark.usefixtures("each_engine")``) on a test that runs the job
    without choosing an engine; the default, ``auto``, would give almost every small run to the driver.

    The driver engine declines by design a run it cannot do exactly (it raises ``Ineligible``, and
    asked for alone the run fails): a test whose runs it declines says why with
    ``@pytest.mark.driver_declines("...")``, and its driver run is skipped with that reason. When it
    declines only some of a test's runs, :data:`AND_AUTO` runs the test on ``auto`` too: the driver
    writes the runs it takes and Spark's engine the others, each going on from what the other wrote.
    """
    declined = request.node.get_closest_marker("driver_declines")
    if request.param == "driver" and declined is not None:
        pytest.skip(f"the driver engine declines by design: {declined.args[0]}")
    monkeypatch.setenv(ENGINE_VARIABLE, request.param)
    yield request.param
