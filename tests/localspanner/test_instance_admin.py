"""Instance administration as applications and their test suites use it: configs (Google's and
user-managed ones), capacity, updates, instance settings, instance partitions, and the database
options default_leader and version_retention_period."""

from __future__ import annotations

import uuid

import pytest
from google.api_core import exceptions
from google.cloud.spanner_admin_instance_v1 import types as admin
from google.protobuf import field_mask_pb2

from tests.conftest import emulator_lacks

USER_CONFIGS = emulator_lacks("user-managed instance configs")
PARTITIONS = emulator_lacks("instance partitions")


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


# --- user-managed instance configs ----------------------------------------------------------------

def _project(client) -> str:
    return f"projects/{client.project}"


def _read_only(location: str) -> admin.ReplicaInfo:
    return admin.ReplicaInfo(location=location, type_=admin.ReplicaInfo.ReplicaType.READ_ONLY)


def _base_replicas(client, base: str) -> list[admin.ReplicaInfo]:
    return list(client.instance_admin_api.get_instance_config(name=_config(client, base)).replicas)


@pytest.fixture
def make_config(spanner_client):
    api = spanner_client.instance_admin_api
    made = []

    def make(base: str = "regional-us-central1", replicas=None, **fields):
        config_id = _name("custom")
        replicas = _base_replicas(spanner_client, base) + [_read_only("us-east1")] if replicas is None else replicas
        config = admin.InstanceConfig(display_name=config_id, base_config=_config(spanner_client, base),
                                      replicas=replicas, **fields)
        created = api.create_instance_config(parent=_project(spanner_client), instance_config_id=config_id,
                                             instance_config=config).result(30)
        made.append(created.name)
        return created

    yield make
    for name in made:
        try:
            api.delete_instance_config(name=name)
        except (exceptions.NotFound, exceptions.FailedPrecondition):
            pass


@USER_CONFIGS
def test_google_configs_are_google_managed_with_their_replicas(spanner_client):
    fetched = spanner_client.instance_admin_api.get_instance_config(name=_config(spanner_client, "nam3"))
    assert fetched.config_type == admin.InstanceConfig.Type.GOOGLE_MANAGED
    assert {r.location for r in fetched.replicas} == {"us-east4", "us-east1"}
    assert [r.location for r in fetched.replicas if r.default_leader_location] == ["us-east4"]


@USER_CONFIGS
def test_a_user_managed_config_is_created_listed_and_reported(spanner_client, make_config):
    created = make_config(labels={"team": "data"})
    assert created.config_type == admin.InstanceConfig.Type.USER_MANAGED
    assert created.base_config == _config(spanner_client, "regional-us-central1")
    assert [(r.location, r.type_) for r in created.replicas][-1] == ("us-east1", admin.ReplicaInfo.ReplicaType.READ_ONLY)
    assert created.etag and created.leader_options == ["us-central1"]
    fetched = spanner_client.instance_admin_api.get_instance_config(name=created.name)
    assert (fetched.display_name, dict(fetched.labels), fetched.etag) == (created.display_name, {"team": "data"}, created.etag)
    listed = {c.name: c.config_type for c in spanner_client.instance_admin_api.list_instance_configs(parent=_project(spanner_client))}
    assert listed[created.name] == admin.InstanceConfig.Type.USER_MANAGED
    assert listed[_config(spanner_client, "emulator-config")] == admin.InstanceConfig.Type.GOOGLE_MANAGED


@USER_CONFIGS
def test_a_user_managed_config_without_replicas_takes_its_base_configs(spanner_client, make_config):
    created = make_config("nam3", replicas=[])
    assert list(created.replicas) == _base_replicas(spanner_client, "nam3")


@USER_CONFIGS
@pytest.mark.parametrize(("config_id", "base", "replicas", "refusal", "message"), [
    ("my-config", "regional-us-central1", "base", exceptions.InvalidArgument, "custom-"),
    ("custom-{}", "no-such-config", "none", exceptions.InvalidArgument, "base_config"),
    ("custom-{}", "regional-us-central1", "drop-one", exceptions.InvalidArgument, "missing"),
    ("custom-{}", "regional-us-central1", "extra-read-write", exceptions.InvalidArgument, "READ_ONLY replicas only"),
])
def test_a_user_managed_config_that_breaks_the_rules_is_refused(spanner_client, config_id, base, replicas, refusal, message):
    api = spanner_client.instance_admin_api
    base_replicas = _base_replicas(spanner_client, base) if base.startswith("regional") else []
    extra = admin.ReplicaInfo(location="us-east1", type_=admin.ReplicaInfo.ReplicaType.READ_WRITE)
    replicas = {"drop-one": base_replicas[1:], "extra-read-write": [*base_replicas, extra], "base": base_replicas,
                "none": []}[replicas]
    config = admin.InstanceConfig(base_config=_config(spanner_client, base), replicas=replicas)
    with pytest.raises(refusal, match=message):
        api.create_instance_config(parent=_project(spanner_client), instance_config_id=config_id.format(uuid.uuid4().hex[:8]),
                                   instance_config=config).result(30)


@USER_CONFIGS
def test_a_config_id_in_use_is_already_exists(spanner_client, make_config):
    created = make_config()
    config = admin.InstanceConfig(base_config=created.base_config)
    with pytest.raises(exceptions.AlreadyExists, match="Instance config already exists"):
        spanner_client.instance_admin_api.create_instance_config(
            parent=_project(spanner_client), instance_config_id=created.name.rsplit("/", 1)[-1], instance_config=config)


@USER_CONFIGS
def test_update_instance_config_changes_display_name_and_labels_under_its_etag(spanner_client, make_config):
    api = spanner_client.instance_admin_api
    created = make_config()
    change = admin.InstanceConfig(name=created.name, display_name="renamed", labels={"env": "prod"}, etag=created.etag)
    updated = api.update_instance_config(instance_config=change,
                                         update_mask=field_mask_pb2.FieldMask(paths=["display_name", "labels"])).result(30)
    assert (updated.display_name, dict(updated.labels)) == ("renamed", {"env": "prod"})
    assert updated.etag != created.etag
    assert api.get_instance_config(name=created.name).display_name == "renamed"
    with pytest.raises(exceptions.Aborted, match="etag"):
        api.update_instance_config(instance_config=change, update_mask=field_mask_pb2.FieldMask(paths=["display_name"]))
    with pytest.raises(exceptions.Aborted, match="etag"):
        api.delete_instance_config(request={"name": created.name, "etag": created.etag})
    with pytest.raises(exceptions.InvalidArgument, match="replicas"):
        api.update_instance_config(instance_config=change, update_mask=field_mask_pb2.FieldMask(paths=["replicas"]))


@USER_CONFIGS
def test_config_operations_are_listed(spanner_client, make_config):
    api = spanner_client.instance_admin_api
    created = make_config()
    api.update_instance_config(instance_config=admin.InstanceConfig(name=created.name, display_name="x"),
                               update_mask=field_mask_pb2.FieldMask(paths=["display_name"])).result(30)
    ops = list(api.list_instance_config_operations(request={"parent": _project(spanner_client),
                                                            "filter": f"name:{created.name}/"}))
    kinds = [op.metadata.type_url.rsplit(".", 1)[-1] for op in ops]
    assert kinds == ["CreateInstanceConfigMetadata", "UpdateInstanceConfigMetadata"]
    assert all(op.done for op in ops)
    only_updates = api.list_instance_config_operations(request={
        "parent": _project(spanner_client), "filter": f"(name:{created.name}/) AND "
        "(metadata.@type=type.googleapis.com/google.spanner.admin.instance.v1.UpdateInstanceConfigMetadata)"})
    assert len(list(only_updates)) == 1


@USER_CONFIGS
@pytest.mark.parametrize("action", ["update", "delete"])
def test_a_google_managed_config_cannot_be_changed(spanner_client, action):
    api = spanner_client.instance_admin_api
    name = _config(spanner_client, "regional-us-central1")
    with pytest.raises(exceptions.FailedPrecondition, match="Google-managed"):
        if action == "delete":
            api.delete_instance_config(name=name)
        else:
            api.update_instance_config(instance_config=admin.InstanceConfig(name=name, display_name="x"),
                                       update_mask=field_mask_pb2.FieldMask(paths=["display_name"]))


@USER_CONFIGS
def test_a_config_an_instance_or_partition_uses_cannot_be_deleted(spanner_client, make_config, make_instance):
    api = spanner_client.instance_admin_api
    created = make_config()
    inst = make_instance(created.name.rsplit("/", 1)[-1])
    with pytest.raises(exceptions.FailedPrecondition, match=inst.instance_id):
        api.delete_instance_config(name=created.name)
    inst.delete()
    holder = make_instance()
    part = api.create_instance_partition(parent=holder.name, instance_partition_id="part-a", instance_partition=
                                         admin.InstancePartition(config=created.name, node_count=1)).result(30)
    with pytest.raises(exceptions.FailedPrecondition, match=part.name):
        api.delete_instance_config(name=created.name)
    api.delete_instance_partition(name=part.name)
    api.delete_instance_config(request={"name": created.name, "etag": created.etag})
    with pytest.raises(exceptions.NotFound, match="Instance config not found"):
        api.get_instance_config(name=created.name)


@USER_CONFIGS
@pytest.mark.parametrize("resource", ["instance", "instance partition"])
def test_a_user_managed_config_that_does_not_exist_is_not_found(spanner_client, make_instance, resource):
    missing = _config(spanner_client, _name("custom"))
    with pytest.raises(exceptions.NotFound, match=f"Instance config not found: {missing}"):
        if resource == "instance":
            make_instance(missing.rsplit("/", 1)[-1])
        else:
            spanner_client.instance_admin_api.create_instance_partition(
                parent=make_instance().name, instance_partition_id="part-a",
                instance_partition=admin.InstancePartition(config=missing, node_count=1)).result(30)


# --- instance settings ------------------------------------------------------------------------------

@emulator_lacks("an instance's edition and default backup schedule type")
@pytest.mark.parametrize(("edition", "schedule"), [
    (admin.Instance.Edition.ENTERPRISE, admin.Instance.DefaultBackupScheduleType.NONE),
    (admin.Instance.Edition.ENTERPRISE_PLUS, admin.Instance.DefaultBackupScheduleType.AUTOMATIC),
])
def test_edition_and_backup_schedule_type_are_kept_and_updated(spanner_client, edition, schedule):
    api = spanner_client.instance_admin_api
    instance_id = _name("ia")
    spec = admin.Instance(config=_config(spanner_client, "emulator-config"), display_name="s", node_count=1,
                          edition=edition, default_backup_schedule_type=schedule)
    created = api.create_instance(parent=_project(spanner_client), instance_id=instance_id, instance=spec).result(30)
    try:
        assert (created.edition, created.default_backup_schedule_type) == (edition, schedule)
        assert created.create_time and created.create_time == created.update_time
        change = admin.Instance(name=created.name, edition=admin.Instance.Edition.STANDARD,
                                default_backup_schedule_type=admin.Instance.DefaultBackupScheduleType.AUTOMATIC)
        api.update_instance(instance=change, field_mask=field_mask_pb2.FieldMask(
            paths=["edition", "default_backup_schedule_type"])).result(30)
        fetched = api.get_instance(name=created.name)
        assert (fetched.edition, fetched.default_backup_schedule_type) == (
            admin.Instance.Edition.STANDARD, admin.Instance.DefaultBackupScheduleType.AUTOMATIC)
        assert fetched.create_time == created.create_time and fetched.update_time > created.update_time
    finally:
        api.delete_instance(name=created.name)


@emulator_lacks("an instance's edition and default backup schedule type")
def test_an_instance_created_without_settings_reports_spanners_defaults(spanner_client, make_instance):
    inst = make_instance()
    fetched = spanner_client.instance_admin_api.get_instance(name=inst.name)
    assert (fetched.edition, fetched.default_backup_schedule_type) == (
        admin.Instance.Edition.STANDARD, admin.Instance.DefaultBackupScheduleType.AUTOMATIC)


# --- instance partitions ----------------------------------------------------------------------------

def _partition(client, instance, partition_id: str, **fields):
    spec = admin.InstancePartition(config=_config(client, "regional-us-east1"), **fields)
    return client.instance_admin_api.create_instance_partition(
        parent=instance.name, instance_partition_id=partition_id, instance_partition=spec).result(30)


@PARTITIONS
def test_an_instance_partition_is_created_listed_updated_and_deleted(spanner_client, make_instance):
    api = spanner_client.instance_admin_api
    inst = make_instance()
    created = _partition(spanner_client, inst, "part-a", display_name="A", processing_units=500)
    assert created.name == f"{inst.name}/instancePartitions/part-a"
    assert (created.config, created.node_count, created.processing_units, created.display_name) == (
        _config(spanner_client, "regional-us-east1"), 0, 500, "A")
    assert created.state == admin.InstancePartition.State.READY and created.create_time and created.etag
    _partition(spanner_client, inst, "part-b", node_count=2)
    listed = [(p.name.rsplit("/", 1)[-1], p.node_count, p.processing_units)
              for p in api.list_instance_partitions(parent=inst.name)]
    assert listed == [("part-a", 0, 500), ("part-b", 2, 0)]  # capacity is a oneof: whole nodes or processing units
    change = admin.InstancePartition(name=created.name, node_count=3, display_name="bigger", etag=created.etag)
    updated = api.update_instance_partition(instance_partition=change, field_mask=field_mask_pb2.FieldMask(
        paths=["node_count", "display_name"])).result(30)
    assert (updated.node_count, updated.display_name) == (3, "bigger")
    assert api.get_instance_partition(name=created.name).update_time == updated.update_time
    kinds = [op.metadata.type_url.rsplit(".", 1)[-1] for op in api.list_instance_partition_operations(parent=inst.name)]
    assert kinds == ["CreateInstancePartitionMetadata", "CreateInstancePartitionMetadata", "UpdateInstancePartitionMetadata"]
    with pytest.raises(exceptions.Aborted, match="etag"):
        api.delete_instance_partition(request={"name": created.name, "etag": created.etag})
    api.delete_instance_partition(name=created.name)
    with pytest.raises(exceptions.NotFound, match=f"Instance partition not found: {created.name}"):
        api.get_instance_partition(name=created.name)


@PARTITIONS
@pytest.mark.parametrize(("fields", "refusal", "message"), [
    ({"processing_units": 1500}, exceptions.InvalidArgument, "processing_units"),
    ({"node_count": -1}, exceptions.InvalidArgument, "must not be negative"),
    ({"node_count": 1, "config": ""}, exceptions.InvalidArgument, "needs a config"),
])
def test_an_instance_partition_that_breaks_the_rules_is_refused(spanner_client, make_instance, fields, refusal, message):
    inst = make_instance()
    spec = admin.InstancePartition(**{"config": _config(spanner_client, "regional-us-east1"), **fields})
    with pytest.raises(refusal, match=message):
        spanner_client.instance_admin_api.create_instance_partition(
            parent=inst.name, instance_partition_id="part-x", instance_partition=spec).result(30)


@PARTITIONS
def test_an_instance_partition_id_in_use_is_already_exists(spanner_client, make_instance):
    inst = make_instance()
    first = _partition(spanner_client, inst, "part-a", node_count=1)
    with pytest.raises(exceptions.AlreadyExists, match=f"Instance partition already exists: {first.name}"):
        _partition(spanner_client, inst, "part-a", node_count=1)


@PARTITIONS
def test_deleting_an_instance_removes_its_partitions(spanner_client, make_instance):
    api = spanner_client.instance_admin_api
    inst = make_instance()
    part = _partition(spanner_client, inst, "part-a", node_count=1)
    inst.delete()
    spanner_client.instance(inst.instance_id, configuration_name=_config(spanner_client, "emulator-config")).create().result(30)
    try:
        assert list(api.list_instance_partitions(parent=inst.name)) == []
        with pytest.raises(exceptions.NotFound, match="Instance partition not found"):
            api.get_instance_partition(name=part.name)
    finally:
        api.delete_instance(name=inst.name)


@PARTITIONS
def test_partitions_of_a_missing_instance_are_not_found(spanner_client):
    missing = f"{_project(spanner_client)}/instances/{_name('gone')}"
    with pytest.raises(exceptions.NotFound, match=f"Instance not found: {missing}"):
        list(spanner_client.instance_admin_api.list_instance_partitions(parent=missing))


# --- what the server does not do ----------------------------------------------------------------------

@emulator_lacks("the embedded server's naming of the methods it does not serve")
@pytest.mark.parametrize(("method", "call"), [
    ("MoveInstance", lambda api, name: api.move_instance(request={"name": name, "target_config": "nam3"})),
    ("GetIamPolicy", lambda api, name: api.get_iam_policy(request={"resource": name})),
    ("SetIamPolicy", lambda api, name: api.set_iam_policy(request={"resource": name, "policy": {}})),
    ("TestIamPermissions", lambda api, name: api.test_iam_permissions(
        request={"resource": name, "permissions": ["spanner.instances.get"]})),
])
def test_instance_methods_the_server_does_not_serve_are_unimplemented_by_name(spanner_client, instance, method, call):
    with pytest.raises(exceptions.MethodNotImplemented, match=f"InstanceAdmin/{method}"):
        call(spanner_client.instance_admin_api, instance.name)


# --- persistence --------------------------------------------------------------------------------------

@emulator_lacks("a restart of the embedded server with a data directory")
def test_configs_settings_and_partitions_survive_a_restart(tmp_path, monkeypatch):
    from google.cloud import spanner

    from watcher.localspanner.server import LocalSpanner

    def api_of(server):
        monkeypatch.setenv("SPANNER_EMULATOR_HOST", server.emulator_host)
        return spanner.Client(project="persist-project").instance_admin_api

    project = "projects/persist-project"
    with LocalSpanner(data_dir=str(tmp_path)) as server:
        api = api_of(server)
        config = api.create_instance_config(parent=project, instance_config_id="custom-kept", instance_config=admin.InstanceConfig(
            base_config=f"{project}/instanceConfigs/nam3", labels={"k": "v"})).result(30)
        inst = api.create_instance(parent=project, instance_id="kept", instance=admin.Instance(
            config=config.name, node_count=1, edition=admin.Instance.Edition.ENTERPRISE,
            default_backup_schedule_type=admin.Instance.DefaultBackupScheduleType.NONE)).result(30)
        part = api.create_instance_partition(parent=inst.name, instance_partition_id="part-kept", instance_partition=admin.InstancePartition(
            config=f"{project}/instanceConfigs/regional-us-east1", processing_units=300)).result(30)
    with LocalSpanner(data_dir=str(tmp_path)) as server:
        api = api_of(server)
        assert api.get_instance_config(name=config.name) == config
        assert api.get_instance(name=inst.name) == inst
        assert api.get_instance_partition(name=part.name) == part
