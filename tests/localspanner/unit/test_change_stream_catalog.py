"""The catalog side of change streams: creation timestamps kept across ALTER and a reload, options with defaults."""

from __future__ import annotations

from watcher.localspanner.database.schema_changes import load_catalog, write_schema_change
from watcher.localspanner.ddl import change_stream_options
from watcher.localspanner.schema.catalog import Catalog
from watcher.localspanner.schema.schema_updater import apply_statement, apply_statements
from watcher.localspanner.storage.store import Storage


def test_creation_timestamp_survives_alter_and_reload(tmp_path):
    storage = Storage(str(tmp_path / "db.sqlite"))
    old = Catalog()
    new, _ = apply_statements(old, ["CREATE TABLE T (K INT64, V STRING(MAX)) PRIMARY KEY (K)"])
    new, _ = apply_statement(new, "CREATE CHANGE STREAM S FOR T", created_nanos=1_700_000_000_000_000_000)
    write_schema_change(storage, old, new, "several", lambda: storage.writer.execute("COMMIT") and 1)
    altered, _ = apply_statement(new, "ALTER CHANGE STREAM S SET OPTIONS (retention_period = '2d')", created_nanos=99)
    assert altered.change_stream("S").created_nanos == 1_700_000_000_000_000_000
    write_schema_change(storage, new, altered, "ALTER", lambda: storage.writer.execute("COMMIT") and 2)
    storage.close()

    reopened = Storage(str(tmp_path / "db.sqlite"))
    stream = load_catalog(reopened).change_stream("s")
    reopened.close()
    assert stream is not None and stream.created_nanos == 1_700_000_000_000_000_000
    assert stream.option("retention_period") == "2d"
    assert stream.option("value_capture_type") == "OLD_AND_NEW_VALUES"


def test_every_option_has_a_default_of_its_type():
    for spec in change_stream_options.SPECS.values():
        assert isinstance(spec.default, bool) == (spec.type == "BOOL")
