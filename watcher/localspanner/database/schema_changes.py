"""A database's schema in its storage: loading it at open, and writing one change.

:func:`write_schema_change` runs inside a SQLite transaction with foreign keys off (a
rebuild drops the old parent table): it syncs the tables to the new catalog, checks that
existing rows still satisfy interleaving, saves the DDL and the INFORMATION_SCHEMA
tables, and lets the caller commit. A failure rolls back and names the statement.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Callable

from .. import errors
from ..change_streams import records as change_records
from ..ddl.printer import print_catalog
from ..dialects import dialects
from ..schema import database_options
from ..schema.catalog import Catalog
from ..schema.schema_updater import apply_statements
from ..storage import constraint_storage, versions
from ..storage.schema_sync import stored_without_rowid, sync_schema, upgrade_layout
from ..storage.sqlite_names import user_facing
from ..storage.store import META_TABLE, Storage


def load_catalog(storage: Storage) -> Catalog:
    """The catalog saved in ``storage`` (empty for a new database), with its INFORMATION_SCHEMA refreshed."""
    statements = storage.load_ddl()
    descriptors = storage.load_proto_descriptors()
    start = Catalog(default_sequence_kind=database_options.load(storage.writer, META_TABLE, "default_sequence_kind"),
                    database_options=database_options.load_catalog_options(storage.writer, META_TABLE),
                    dialect=database_options.load(storage.writer, META_TABLE, dialects.OPTION) or dialects.GOOGLE_STANDARD_SQL)
    catalog, _ = apply_statements(start, statements, proto_descriptors=descriptors) if statements else (start, [])
    if catalog.change_streams:
        created = storage.load_change_stream_times()
        streams = tuple(dataclasses.replace(s, created_nanos=created.get(s.name, 0)) for s in catalog.change_streams)
        catalog = dataclasses.replace(catalog, change_streams=streams)
    conn = storage.writer
    conn.execute("PRAGMA foreign_keys=OFF")  # an upgraded parent table is dropped and made again
    conn.execute("BEGIN")
    try:
        upgrade_layout(conn, catalog, stored_without_rowid(conn, catalog))
        storage.refresh_information_schema(conn, catalog)
        versions.sync_storage(conn, catalog)  # also gives a data directory written before versions its tables
        change_records.ensure_table(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    finally:
        conn.execute("PRAGMA foreign_keys=ON")
    versions.install_capture(conn, catalog)
    return catalog


def write_schema_change(storage: Storage, old: Catalog, new: Catalog, statement: str, commit: Callable[[], int]) -> int:
    """Turn storage for ``old`` into storage for ``new``; ``commit`` ends the SQLite transaction
    and returns the commit timestamp, which is returned. The caller holds the writer."""
    conn = storage.writer
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute("BEGIN")
    try:
        versions.remove_capture(conn)  # a rebuild must not record its copies as changes
        sync_schema(conn, old, new)
        versions.sync_storage(conn, new)
        versions.install_capture(conn, new)
        change_records.ensure_table(conn)
        for gone in {s.name.lower() for s in old.change_streams} - {s.name.lower() for s in new.change_streams}:
            change_records.drop_stream(conn, gone)
        _check_foreign_keys(conn, new, statement)
        storage.save_ddl(conn, print_catalog(new))
        storage.save_proto_descriptors(conn, new.proto_bundle.descriptors if new.proto_bundle is not None else b"")
        storage.save_change_stream_times(conn, {s.name: s.created_nanos for s in new.change_streams})
        storage.refresh_information_schema(conn, new)
        return commit()
    except sqlite3.IntegrityError as exc:
        conn.execute("ROLLBACK")
        raise _ddl_data_problem(statement, exc) from None
    except sqlite3.Error as exc:
        conn.execute("ROLLBACK")
        raise errors.ddl_invalid(statement, str(exc)) from None
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    finally:
        conn.execute("PRAGMA foreign_keys=ON")


def _check_foreign_keys(conn: sqlite3.Connection, catalog: Catalog, statement: str) -> None:
    """Existing rows must satisfy interleaving and every enforced foreign key (a new one included)."""
    bad = conn.execute("PRAGMA foreign_key_check").fetchone()
    if bad:
        raise constraint_storage.validation_error(conn, catalog, statement) or errors.ddl_orphan_rows(statement, bad[0], bad[2])


def _ddl_data_problem(statement: str, exc: sqlite3.IntegrityError) -> errors.SpannerError:
    # A rebuild copies rows into a temporary table: name the user's table, not the copy.
    text = user_facing(str(exc))
    failed_check = constraint_storage.check_failure(exc)
    if failed_check is not None:
        return errors.check_validation_failed(statement, *failed_check)
    if text.startswith("NOT NULL"):
        return errors.ddl_existing_nulls(statement, text.split(": ", 1)[-1])
    if text.startswith("UNIQUE"):
        return errors.ddl_existing_duplicates(statement, text.split(": ", 1)[-1])
    return errors.ddl_invalid(statement, text)
