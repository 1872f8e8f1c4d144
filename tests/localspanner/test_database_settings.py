"""Database options, drop protection and encryption settings through the official client."""

from __future__ import annotations

import os

import pytest
from google.api_core import exceptions
from google.cloud import spanner
from google.cloud.spanner_admin_database_v1 import EncryptionConfig, EncryptionInfo

from tests.conftest import emulator_lacks

DDL = ["CREATE TABLE T (Id INT64 NOT NULL) PRIMARY KEY (Id)"]
KEY = "projects/test-project/locations/us-central1/keyRings/ring/cryptoKeys/key"
OPTIONS_QUERY = ("SELECT OPTION_NAME, OPTION_TYPE, OPTION_VALUE FROM INFORMATION_SCHEMA.DATABASE_OPTIONS "
                 "WHERE SCHEMA_NAME = '' AND OPTION_NAME IN ('default_leader', 'version_retention_period', "
                 "'optimizer_version') ORDER BY OPTION_NAME")


def _options(db) -> list[list]:
    with db.snapshot() as snap:
        return [list(r) for r in snap.execute_sql(OPTIONS_QUERY)]


def _alter(db, options: str) -> None:
    db.update_ddl([f"ALTER DATABASE `{db.database_id}` SET OPTIONS ({options})"]).result(60)


def test_database_options_show_what_alter_database_set(make_database):
    db = make_database(DDL)
    assert _options(db) == []
    _alter(db, "version_retention_period = '2d', optimizer_version = 5")
    assert _options(db) == [["optimizer_version", "INT64", "5"], ["version_retention_period", "STRING", "2d"]]
    _alter(db, "optimizer_version = NULL")
    assert _options(db) == [["version_retention_period", "STRING", "2d"]]


@emulator_lacks("default_leader on a single-region instance configuration")
def test_database_options_show_the_default_leader(make_database):
    db = make_database(DDL)
    _alter(db, "default_leader = 'us-central1'")
    assert _options(db) == [["default_leader", "STRING", "us-central1"]]
    db.reload()
    assert db.default_leader == "us-central1"


def test_optimizer_version_is_printed_back_bare(make_database):
    db = make_database(DDL)
    _alter(db, "optimizer_version = 3")
    db.reload()
    assert any("optimizer_version = 3" in s and "'3'" not in s for s in db.ddl_statements)


@pytest.mark.parametrize("value", ["99", "0", "'5'"])
def test_optimizer_version_out_of_range_is_invalid(make_database, value):
    db = make_database(DDL)
    with pytest.raises(exceptions.InvalidArgument, match="optimizer_version"):
        _alter(db, f"optimizer_version = {value}")
    assert _options(db) == []


def test_drop_protection_refuses_drop_until_cleared(make_database):
    db = make_database(DDL)
    db.reload()
    assert db.enable_drop_protection is False
    db.enable_drop_protection = True
    db.update(["enable_drop_protection"]).result(60)
    db.reload()
    assert db.enable_drop_protection is True
    with pytest.raises(exceptions.FailedPrecondition, match=db.database_id):
        db.drop()
    assert db.exists()
    db.enable_drop_protection = False
    db.update(["enable_drop_protection"]).result(60)
    db.drop()
    assert not db.exists()


def test_update_database_of_another_field_is_invalid(make_database):
    db = make_database(DDL)
    with pytest.raises(exceptions.InvalidArgument, match="version_retention_period"):
        db.update(["version_retention_period"]).result(60)


@emulator_lacks("customer-managed encryption keys")
def test_encryption_config_is_echoed(make_database):
    db = make_database(DDL, encryption_config=EncryptionConfig(kms_key_name=KEY))
    db.reload()
    assert db.encryption_config.kms_key_name == KEY
    assert [(i.encryption_type, i.kms_key_version.startswith(KEY + "/cryptoKeyVersions/")) for i in db.encryption_info] == \
        [(EncryptionInfo.Type.CUSTOMER_MANAGED_ENCRYPTION, True)]


@emulator_lacks("customer-managed encryption keys")
def test_encryption_config_with_a_malformed_key_is_invalid(make_database):
    with pytest.raises(exceptions.InvalidArgument, match="kms_key_name"):
        make_database(DDL, encryption_config={"kms_key_name": "my-key"})


def test_database_without_encryption_config_reports_none(make_database):
    db = make_database(DDL)
    db.reload()
    assert not db.encryption_config.kms_key_name and list(db.encryption_config.kms_key_names) == []


def test_instance_holding_a_protected_database_cannot_be_deleted(spanner_client, instance):
    other = spanner_client.instance(f"protected-{instance.instance_id[-6:]}", configuration_name=instance.configuration_name,
                                    display_name="protected", node_count=1)
    other.create().result(60)
    db = other.database("guarded-db", ddl_statements=DDL)
    db.create().result(60)
    db.enable_drop_protection = True
    db.update(["enable_drop_protection"]).result(60)
    with pytest.raises(exceptions.FailedPrecondition, match="guarded-db"):
        other.delete()
    assert db.exists()
    db.enable_drop_protection = False
    db.update(["enable_drop_protection"]).result(60)
    other.delete()
    assert not other.exists()


_EXTERNAL = os.environ.get("SPANNER_EMULATOR_HOST")  # read at collection, before the shared fixtures set it


@pytest.mark.skipif(bool(_EXTERNAL), reason="starts its own local server; SPANNER_EMULATOR_HOST is set")
def test_settings_survive_a_restart(tmp_path, monkeypatch):
    from watcher.localspanner.server import LocalSpanner

    def database(server):
        monkeypatch.setenv("SPANNER_EMULATOR_HOST", server.emulator_host)
        inst = spanner.Client(project="settings-project").instance(
            "settings-instance", configuration_name="projects/settings-project/instanceConfigs/emulator-config")
        if not inst.exists():
            inst.create().result(30)
        return inst.database("kept-db", ddl_statements=DDL, encryption_config=EncryptionConfig(kms_key_name=KEY))

    data_dir = str(tmp_path / "data")
    with LocalSpanner(data_dir=data_dir) as server:
        db = database(server)
        db.create().result(60)
        _alter(db, "optimizer_version = 4")
        db.enable_drop_protection = True
        db.update(["enable_drop_protection"]).result(60)
    with LocalSpanner(data_dir=data_dir) as server:
        db = database(server)
        db.reload()
        assert (db.enable_drop_protection, db.encryption_config.kms_key_name) == (True, KEY)
        assert _options(db) == [["optimizer_version", "INT64", "4"]]
        with pytest.raises(exceptions.FailedPrecondition):
            db.drop()
