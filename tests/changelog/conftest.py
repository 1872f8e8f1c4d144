"""Fixtures that stage batches directly with the real StagingSink (see support.py), and the engine
each changelog test runs on (``each_engine``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.changelog.support import Stager
from watcher.changelog.job import ENGINE_VARIABLE

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


@pytest.fixture
def stager(tmp_path) -> Stager:
    return Stager(tmp_path / "staging")


@pytest.fixture
def dirs(tmp_path) -> dict[str, str]:
    return {"staging": str(tmp_path / "staging"), "warehouse": str(tmp_path / "warehouse")}
