"""The cyclic collector is held off while a driver run works, and always back after, as it was."""

from __future__ import annotations

import gc
import random
import threading

import pytest

from tests.changelog.engine_inputs import stage_run
from tests.changelog.support import Stager
from watcher.changelog import Changelog, run
from watcher.changelog.arrow_fs import ArrowFS
from watcher.changelog.driver.collector import collector_paused


def test_overlapping_pauses_end_with_the_last():
    second_in, first_out = threading.Event(), threading.Event()
    seen = []

    def second():
        with collector_paused():
            second_in.set()
            first_out.wait(5)
            seen.append(gc.isenabled())  # the first pause ended: still off, this one works

    with collector_paused():
        worker = threading.Thread(target=second)
        worker.start()
        second_in.wait(5)
    first_out.set()
    worker.join(5)
    assert seen == [False] and gc.isenabled()


def test_a_collector_the_application_turned_off_stays_off():
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_driver_run_works_without_the_collector_and_gives_it_back(spark, tmp_path, monkeypatch):
    during = []
    real_prepare = run.driver_engine.prepare

    def prepare(*args, **kwargs):
        during.append(gc.isenabled())
        return real_prepare(*args, **kwargs)

    monkeypatch.setattr(run.driver_engine, "prepare", prepare)
    rng = random.Random(11)
    stager = Stager(tmp_path / "staging")
    stage_run(stager, rng, 0, quirks=False)
    result = Changelog(spark).staging(str(tmp_path / "staging")).warehouse(str(tmp_path / "w")).run()
    assert result.engine == "driver" and during == [False] and gc.isenabled()

    stage_run(stager, rng, 1, quirks=False)
    monkeypatch.setattr(ArrowFS, "write_parquet", lambda *a: (_ for _ in ()).throw(OSError("disk gone")))
    with pytest.raises(OSError, match="disk gone"):
        Changelog(spark).staging(str(tmp_path / "staging")).warehouse(str(tmp_path / "w")).run()
    assert gc.isenabled()  # a run that failed half way gives it back too
