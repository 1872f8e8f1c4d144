"""A database engine's schema changes: DDL statements, the database options, the DDL printed back.

Mixed into :class:`~watcher.localspanner.database.engine.DatabaseEngine`, whose writer, visibility lock,
clock and storage it uses: a schema change holds the writer like a commit, and each statement
commits on its own with its own timestamp (as on Spanner).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

from .. import errors
from ..common.clock import Clock
from ..ddl import nodes
from ..ddl.parser import parse_ddl
from ..ddl.pg_parser import parse_pg_ddl
from ..ddl.pg_printer import print_pg_catalog, print_pg_options
from ..ddl.printer import print_catalog
from ..dialects import dialects
from ..errors import SpannerError
from ..schema import database_options, retention
from ..schema.catalog import Catalog
from ..schema.schema_updater import apply_statement
from ..storage.sequences import Counters
from ..storage.store import META_TABLE, Storage
from ..transactions.writer import Writer
from .schema_changes import write_schema_change


class SchemaChanges:
    """UpdateDatabaseDdl and GetDatabaseDdl for one database."""

    name: str
    storage: Storage
    clock: Clock
    catalog: Catalog
    retention_period: str | None
    default_leader: str | None
    latest_commit_nanos: int
    _writer: Writer
    _visibility: threading.Lock
    sequences: Counters
    _unpark_snapshots: Callable[[], None]  # re-pins idle read-only snapshots (parked_snapshots.py)

    def update_ddl(self, statements: list[str], proto_descriptors: bytes | None = None) -> list[int]:
        """Apply schema statements in order; each one commits on its own. Returns commit timestamps.

        ``proto_descriptors`` (a serialized FileDescriptorSet) is what CREATE / ALTER PROTO
        BUNDLE statements among them take their types from.

        A failing first statement raises its error (nothing was applied); a later one raises
        :class:`~..errors.SchemaChangeStopped` carrying the completed statements' timestamps.
        """
        stamps: list[int] = []
        self._writer.acquire(None)
        conn = self.storage.writer
        try:
            self._unpark_snapshots()  # idle snapshots read their own schema, not this one
            for statement in statements:
                try:
                    if retention.is_alter_database(statement):
                        stamps.append(self._set_options(statement))
                    else:
                        stamps.append(self._apply_schema_statement(conn, statement, proto_descriptors))
                except SpannerError as exc:
                    if stamps:  # the statements before it stay applied, as on Spanner
                        raise errors.schema_change_stopped(exc, stamps) from exc
                    raise
        finally:
            self._writer.release(None)
        return stamps

    def _apply_schema_statement(self, conn: Any, statement: str, proto_descriptors: bytes | None = None) -> int:
        """Apply and commit one statement (the caller holds the writer); returns its commit timestamp."""
        # A change stream created here may be read from this timestamp on; no commit
        # can come between it and the schema change's own (the caller holds the writer).
        catalog = self.catalog
        parse = parse_ddl if catalog.dialect == dialects.GOOGLE_STANDARD_SQL else lambda text: parse_pg_ddl(text, catalog)
        new, _ = apply_statement(catalog, statement, created_nanos=self.clock.next(), proto_descriptors=proto_descriptors,
                                 parse=parse)
        if new is self.catalog:
            return self.clock.next()

        def commit() -> int:
            self.sequences.follow(new)  # dropped sequences forgotten, a new start_with_counter restarts one
            self.sequences.save(conn)
            with self._visibility:
                ts = self.clock.next()
                conn.execute("COMMIT")
                self.catalog = new
                self.latest_commit_nanos = ts
            return ts

        with self.sequences.drawing(conn, new):  # existing rows may get a sequence DEFAULT of a new column
            return write_schema_change(self.storage, self.catalog, new, statement, commit)

    def _set_options(self, statement: str) -> int:
        """ALTER DATABASE ... SET OPTIONS (...) (PostgreSQL: ``SET spanner.option = 'value'``): checks every
        option, then commits them together on their own."""
        node = parse_ddl(statement) if self.catalog.dialect == dialects.GOOGLE_STANDARD_SQL else parse_pg_ddl(statement)
        assert isinstance(node, nodes.AlterDatabase)
        database = self.name.rsplit("/", 1)[-1]
        if node.name != database:
            raise errors.alter_database_wrong_name(node.name, database)
        changes = {name: None if value is None else database_options.check(name, value) for name, value in node.options}
        if "default_sequence_kind" in changes and changes["default_sequence_kind"] is None \
                and self.catalog.default_sequence_kind is not None:
            raise errors.default_sequence_kind_unset()
        conn = self.storage.writer
        kept: dict[str, str | None] = dict(self.catalog.database_options)
        kept.update((name, value) for name, value in changes.items() if name in database_options.CATALOG_OPTIONS)
        new = dataclasses.replace(self.catalog, database_options=tuple(
            (name, value) for name in database_options.CATALOG_OPTIONS if (value := kept.get(name)) is not None))
        if "default_sequence_kind" in changes:
            new = dataclasses.replace(new, default_sequence_kind=changes["default_sequence_kind"])
        conn.execute("BEGIN")
        try:
            for name, value in changes.items():
                database_options.save(conn, META_TABLE, name, value)
            self.storage.refresh_information_schema(conn, new)  # INFORMATION_SCHEMA.DATABASE_OPTIONS shows them
            with self._visibility:
                ts = self.clock.next()
                conn.execute("COMMIT")
                if "version_retention_period" in changes:
                    self.retention_period = changes["version_retention_period"]
                if "default_leader" in changes:
                    self.default_leader = changes["default_leader"]
                self.catalog = new
                self.latest_commit_nanos = ts
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return ts

    def set_dialect(self, dialect: str) -> None:
        """Make a new, empty database one of ``dialect`` (``dialects.POSTGRESQL``); kept in its metadata."""
        conn = self.storage.writer
        self._writer.acquire(None)
        try:
            new = dataclasses.replace(self.catalog, dialect=dialect)
            conn.execute("BEGIN")
            try:
                database_options.save(conn, META_TABLE, dialects.OPTION, dialect)
                self.storage.refresh_information_schema(conn, new)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            self.catalog = new
        finally:
            self._writer.release(None)

    def ddl(self) -> list[str]:
        values = {**dict(self.catalog.database_options), "default_leader": self.default_leader,
                  "version_retention_period": self.retention_period, "default_sequence_kind": self.catalog.default_sequence_kind}
        database = self.name.rsplit("/", 1)[-1]
        if self.catalog.dialect == dialects.POSTGRESQL:
            return print_pg_catalog(self.catalog) + print_pg_options(database, values)
        options = database_options.print_options(database, values)
        return print_catalog(self.catalog) + ([options] if options else [])

    def _retention_nanos(self) -> int:
        return retention.retention_seconds(self.retention_period) * 1_000_000_000
