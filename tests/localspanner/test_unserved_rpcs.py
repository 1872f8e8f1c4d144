"""An RPC the server does not serve is refused UNIMPLEMENTED, and the embedded server names it."""

from __future__ import annotations

import datetime
import os

import pytest
from google.api_core import exceptions

_EXTERNAL = os.environ.get("SPANNER_EMULATOR_HOST")  # read at collection, before the shared fixtures set it


def test_backups_are_unimplemented_and_named(make_database, instance):
    db = make_database(["CREATE TABLE T (Id INT64 NOT NULL) PRIMARY KEY (Id)"])
    expire = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)
    with pytest.raises(exceptions.MethodNotImplemented) as refused:
        instance.backup("a-backup", database=db, expire_time=expire).create()
    if not _EXTERNAL:
        assert "DatabaseAdmin/CreateBackup" in refused.value.message
