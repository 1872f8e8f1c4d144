"""The watcher's one wrapper over google-cloud-spanner: these fail when a client release changes what it relies on."""

from __future__ import annotations

import datetime as dt
import os

import pytest
from google.cloud import spanner

from watcher import spanner_client


def test_a_single_use_query_reports_its_read_timestamp(make_database):
    db = make_database([])
    before = dt.datetime.now(dt.UTC)
    with db.snapshot() as snap:
        results = snap.execute_sql("SELECT 1")
        assert list(results) == [[1]]
        ts = spanner_client.read_timestamp(results)
    assert ts is not None and abs((ts - before).total_seconds()) < 60
    assert hasattr(ts, "nanosecond")  # full precision, as the server sent it


def test_a_multi_use_snapshot_begun_by_its_first_query_reads_at_that_timestamp(make_database):
    db = make_database(["CREATE TABLE T (Id INT64, V STRING(MAX)) PRIMARY KEY (Id)"])
    with db.snapshot(multi_use=True) as snap:
        read_ts = spanner_client.strong_read_timestamp(snap)
        db.run_in_transaction(lambda t: t.insert("T", ("Id", "V"), [(1, "after")]))
        assert list(snap.execute_sql("SELECT Id FROM T")) == []  # the write came after the snapshot's timestamp
    assert read_ts is not None
    with db.snapshot(read_timestamp=read_ts) as snap:
        assert list(snap.execute_sql("SELECT Id FROM T")) == []


def test_a_read_timestamp_is_none_when_a_result_has_no_metadata():
    assert spanner_client.read_timestamp(object()) is None


def test_database_path_of_a_client_database(make_database):
    db = make_database([])
    project, instance, database = spanner_client.database_path(db.name)
    assert (project, instance, database) == (db.name.split("/")[1], db.name.split("/")[3], db.database_id)


def test_the_emulator_host_of_a_client_made_for_an_emulator(make_database):
    db = make_database([])
    assert spanner_client.emulator_host(db) == os.environ["SPANNER_EMULATOR_HOST"]
    # The private attribute itself, so a client release that renames it fails here, not in a Spark task.
    assert spanner.Client(project="p")._emulator_host == os.environ["SPANNER_EMULATOR_HOST"]


def test_no_emulator_host_for_cloud_spanner(monkeypatch):
    from google.oauth2.credentials import Credentials

    monkeypatch.delenv("SPANNER_EMULATOR_HOST")
    client = spanner.Client(project="p", credentials=Credentials("a-token"))  # makes no call until used
    assert spanner_client.emulator_host(client.instance("i").database("d")) is None


@pytest.mark.parametrize("name", ["", "projects/p/instances/i", "projects/p/instances/i/databases/d/x"])
def test_database_path_refuses_what_is_not_a_database_name(name):
    with pytest.raises(ValueError, match="not a database name"):
        spanner_client.database_path(name)
