"""Instance administration as applications and their test suites use it: configs, capacity, updates,
and the database options default_leader and version_retention_period."""

from __future__ import annotations

import uuid

import pytest
from google.api_core import exceptions


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _config(client, config_id: str) -> str:
    return f"projects/{client.project}/instanceConfigs/{config_id}"


@pytest.fixture
def make_instance(spanner_client):
    made = []

    def make(config_id: str = "emulator-config", **kwargs):
        inst = spanner_client.instance(_name("ia"), configuration_name=_config(spanner_client, config_id), **kwargs)
        inst.create().result(30)
        made.append(inst)
        return inst

    yield make
    for inst in made:
        try:
            inst.delete()
        except exceptions.NotFound:
            pass


def test_the_usual_configs_are_listed_and_can_be_fetched(spanner_client):
    names = {c.name for c in spanner_client.list_instance_configs()}
    for config_id in ("emulator-config", "regional-us-central1", "nam3"):
        assert _config(spanner_client, config_id) in names
    fetched = spanner_client.instance_admin_api.get_instance_config(name=_config(spanner_client, "regional-us-central1"))
    assert fetched.name == _config(spanner_client, "regional-us-central1")
    assert "us-central1" in [leader for leader in fetched.leader_options]


@pytest.mark.parametrize("config_id", ["regional-us-central1", "nam3", "emulator-config"])
def test_an_instance_is_created_in_the_config_named(spanner_client, make_instance, config_id):
    inst = make_instance(config_id, display_name="cfg", node_count=1)
    fetched = spanner_client.instance(inst.instance_id)
    fetched.reload()
    assert fetched.configuration_name == _config(spanner_client, config_id)


def test_processing_units_and_node_count_agree(spanner_client, make_instance):
    small = make_instance(processing_units=500)
    big = make_instance(node_count=3)
    for inst, nodes, units in ((small, 0, 500), (big, 3, 3000)):
        fetched = spanner_client.instance(inst.instance_id)
        fetched.reload()
        assert (fetched.node_count, fetched.processing_units) == (nodes, units)


def test_capacity_that_spanner_refuses_is_invalid_argument(spanner_client):
    inst = spanner_client.instance(_name("ia"), configuration_name=_config(spanner_client, "emulator-config"),
                                   processing_units=1500)
    with pytest.raises(exceptions.InvalidArgument, match="processing_units"):
        inst.create().result(30)
    assert not inst.exists()


def test_update_instance_changes_display_name_capacity_and_labels(spanner_client, make_instance):
    inst = make_instance(display_name="before", node_count=1)
    inst.display_name = "after"
    inst.processing_units = 2000
    inst.labels = {"env": "test"}
    operation = inst.update()
    operation.result(30)
    fetched = spanner_client.instance(inst.instance_id)
    fetched.reload()
    assert fetched.display_name == "after"
    assert (fetched.node_count, fetched.processing_units) == (2, 2000)
    assert fetched.labels == {"env": "test"}


def test_default_leader_is_set_reported_and_printed(make_database):
    db = make_database(["CREATE TABLE T (K INT64) PRIMARY KEY (K)"])
    db.reload()
    assert db.default_leader == ""
    db.update_ddl([f"ALTER DATABASE `{db.database_id}` SET OPTIONS (default_leader = 'us-central1')"]).result(60)
    db.reload()
    assert db.default_leader == "us-central1"
    assert db.ddl_statements[-1] == f"ALTER DATABASE {db.database_id} SET OPTIONS (\n  default_leader = 'us-central1'\n)"
    db.update_ddl([f"ALTER DATABASE `{db.database_id}` SET OPTIONS (default_leader = NULL)"]).result(60)
    db.reload()
    assert db.default_leader == ""
    assert not any("default_leader" in s for s in db.ddl_statements)


def test_version_retention_period_is_reported_by_get_database(make_database):
    db = make_database(["CREATE TABLE T (K INT64) PRIMARY KEY (K)"])
    db.reload()
    assert db.version_retention_period == "1h"
    db.update_ddl([f"ALTER DATABASE `{db.database_id}` SET OPTIONS (version_retention_period = '36h', "
                   "default_leader = 'us-central1')"]).result(60)
    db.reload()
    assert (db.version_retention_period, db.default_leader) == ("36h", "us-central1")
    assert db.ddl_statements[-1].endswith("default_leader = 'us-central1',\n  version_retention_period = '36h'\n)")


def test_an_unknown_database_option_is_invalid_argument(make_database):
    db = make_database(["CREATE TABLE T (K INT64) PRIMARY KEY (K)"])
    with pytest.raises(exceptions.InvalidArgument, match="optimizer_versio"):
        db.update_ddl([f"ALTER DATABASE `{db.database_id}` SET OPTIONS (optimizer_versio = '5')"]).result(60)
