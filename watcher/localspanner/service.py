"""The local Spanner service as a plain Python API: one method per RPC the client uses.

The gRPC handlers in ``frontend/`` translate protobuf requests into calls on this class
and its answers (``requests.py`` types) back into protobuf; errors are
:class:`~watcher.localspanner.errors.SpannerError` and the edge maps them to statuses.
Resource names are the full Spanner names (``projects/p/instances/i/databases/d``).

With a ``data_dir``, instances, databases, schemas and rows survive a restart; without
one, everything lives in a temporary folder removed by :meth:`close`.

Example:
    >>> svc = LocalSpannerService()
    >>> svc.create_instance("projects/p/instances/i", config="projects/p/instanceConfigs/emulator-config").name
    'projects/p/instances/i'
    >>> db = svc.create_database("projects/p/instances/i", "CREATE DATABASE db",
    ...                          ["CREATE TABLE T (K INT64 NOT NULL) PRIMARY KEY (K)"])
    >>> svc.get_ddl(db.name)
    ['CREATE TABLE T (\\n  K INT64 NOT NULL,\\n) PRIMARY KEY(K)']
    >>> svc.close()
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from . import access_checks, errors
from .change_streams.load import TIMELINES_SUFFIX, LoadPolicy
from .common import limits
from .common.clock import Clock
from .common.request_log import RequestRecord
from .common.requests import (
    NO_OPTIONS,
    BatchDmlResult,
    BatchWriteResult,
    CommitResult,
    DatabaseInfo,
    InstanceInfo,
    KeySet,
    Mutation,
    RequestOptions,
    ResultStream,
    SessionInfo,
    Statement,
    TransactionInfo,
    TransactionKind,
    TransactionOptions,
    TransactionSelector,
)
from .database import database_settings, split_points
from .database.dialect_statements import as_written, batch_in_dialect, in_dialect, result_shape
from .database.engine import DatabaseEngine, read_request_text
from .database.row_deletion import Sweeper
from .dialects import dialects
from .instances import instance_rules
from .instances.instance_admin import InstanceAdministration
from .instances.instance_configs import UserConfigs
from .instances.instance_partitions import InstancePartitions
from .schema import roles
from .schema.catalog import Catalog
from .storage.store import FORMAT_VERSION, Storage

EMULATOR_CONFIG = instance_rules.EMULATOR_CONFIG
STATE_FILE = "state.json"

_DATABASE_NAME = re.compile(r"^(projects/[^/]+/instances/[^/]+)/databases/([^/]+)$")
_SESSION_NAME = re.compile(r"^(projects/[^/]+/instances/[^/]+/databases/[^/]+)/sessions/([^/]+)$")
_DATABASE_ID = re.compile(r"^[a-z][a-z0-9_\-]{0,28}[a-z0-9]$")
_CREATE_DATABASE = re.compile(r"^\s*CREATE\s+DATABASE\s+(?:`([^`]+)`|([A-Za-z0-9_\-]+))\s*;?\s*$", re.IGNORECASE)
#: A PostgreSQL database's create statement names it in double quotes (or bare).
_CREATE_PG_DATABASE = re.compile(r'^\s*CREATE\s+DATABASE\s+(?:"([^"]+)"|([A-Za-z0-9_\-]+))\s*;?\s*$', re.IGNORECASE)
_Answer = TypeVar("_Answer")
#: InstanceInfo fields a state file may lack (written before they existed): their defaults apply.
_INSTANCE_SETTINGS = ("edition", "default_backup_schedule_type", "create_time_nanos", "update_time_nanos")
#: A database's files: its SQLite file, the SQLite WAL and shared memory, its change-stream load timelines.
_FILE_SUFFIXES = ("", "-wal", "-shm", TIMELINES_SUFFIX)


class LocalSpannerService(InstanceAdministration):
    """All instances, databases and sessions of one local server (thread-safe); the InstanceAdmin
    methods are :class:`~watcher.localspanner.instances.instance_admin.InstanceAdministration`'s."""

    def __init__(self, data_dir: str | None = None, clock: Clock | None = None, *,
                 change_stream_partition_churn_seconds: float = 0.0, row_deletion_sweep_seconds: float = 0.0,
                 change_stream_load: LoadPolicy | None = None) -> None:
        self._temporary = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="localspanner-")
        os.makedirs(self.data_dir, exist_ok=True)
        self.clock = clock or Clock()
        #: Change stream partitions split and merge every this many seconds (0: never); settable while serving.
        self.change_stream_partition_churn_seconds = change_stream_partition_churn_seconds
        #: Change stream partitions split and merge as their write load says instead (None: on the churn timer).
        self.change_stream_load = change_stream_load
        self._lock = threading.RLock()
        self._instances: dict[str, InstanceInfo] = {}
        self._user_configs = UserConfigs()
        self._partitions = InstancePartitions()
        self._databases: dict[str, DatabaseInfo] = {}
        self._engines: dict[str, DatabaseEngine] = {}
        self._sessions: dict[str, SessionInfo] = {}
        self._load_state()
        # Row deletion policies delete on this period (0: only when sweep_expired_rows is called).
        self._sweeper = Sweeper(self.sweep_expired_rows, row_deletion_sweep_seconds).start() if row_deletion_sweep_seconds > 0 else None

    # --- persistence -------------------------------------------------------------------------------

    def _state_path(self) -> str:
        return os.path.join(self.data_dir, STATE_FILE)

    def _db_path(self, name: str) -> str:
        m = _DATABASE_NAME.match(name)
        assert m
        project_instance = m.group(1).replace("projects/", "").replace("/instances/", "__")
        return os.path.join(self.data_dir, "databases", project_instance, f"{m.group(2)}.sqlite")

    def _load_state(self) -> None:
        path = self._state_path()
        if not os.path.exists(path):
            return
        with open(path, encoding="utf-8") as f:
            state = json.load(f)
        if state.get("format_version", 1) > FORMAT_VERSION:
            raise RuntimeError(f"{path} was written by a newer spanner-watcher (format {state['format_version']}); upgrade to read it.")
        for i in state.get("instances", []):
            info = InstanceInfo(i["name"], i["config"].rsplit("/", 1)[-1], i.get("display_name", ""), i.get("node_count", 1),
                                i.get("labels", {}), i.get("processing_units", i.get("node_count", 1) * 1000),
                                **{k: i[k] for k in _INSTANCE_SETTINGS if k in i})
            self._instances[info.name] = info
        self._user_configs.load(state.get("instance_configs", []))
        self._partitions.load(state.get("instance_partitions", []))
        for d in state.get("databases", []):
            info = DatabaseInfo(d["name"], d["create_time_nanos"], d["create_time_nanos"],
                                d.get("drop_protection", False), tuple(d.get("kms_key_names", ())))
            self._databases[info.name] = info
            self._engines[info.name] = self._new_engine(info.name, self._db_path(info.name))

    def _new_engine(self, name: str, path: str) -> DatabaseEngine:
        engine = DatabaseEngine(name, Storage(path), self.clock)
        engine.change_streams.churn_seconds = lambda: self.change_stream_partition_churn_seconds
        engine.change_streams.load_policy = lambda: self.change_stream_load
        return engine

    def _save_state(self) -> None:
        state = {
            "format_version": FORMAT_VERSION,
            "instances": [i.__dict__ for i in self._instances.values()],
            "instance_configs": self._user_configs.to_state(),
            "instance_partitions": self._partitions.to_state(),
            "databases": [{"name": d.name, "create_time_nanos": d.create_time_nanos, "drop_protection": d.drop_protection,
                           "kms_key_names": list(d.kms_key_names)} for d in self._databases.values()],
        }
        tmp = self._state_path() + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(state, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._state_path())

    def sweep_expired_rows(self) -> int:
        """Run every database's row deletion policies now (what the sweeper does on its period);
        returns how many system transactions deleted rows."""
        with self._lock:
            engines = list(self._engines.values())
        return sum(e.sweep_expired_rows() for e in engines)

    def close(self) -> None:
        if self._sweeper is not None:
            self._sweeper.stop()
        with self._lock:
            engines = list(self._engines.values())
            self._engines.clear()
        for e in engines:
            e.close()
        if self._temporary:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    # --- databases (DatabaseAdmin) ---------------------------------------------------------------------------

    def create_database(self, instance: str, create_statement: str, extra_statements: Iterable[str] = (), *,
                        proto_descriptors: bytes | None = None,
                        dialect: str = dialects.GOOGLE_STANDARD_SQL, kms_key_names: Iterable[str] = ()) -> DatabaseInfo:
        """A new database of ``dialect`` (``dialects.POSTGRESQL``: ``CREATE DATABASE "name"``, PostgreSQL DDL);
        ``kms_key_names`` are its encryption_config's keys (checked, recorded, reported)."""
        keys = database_settings.check_kms_key_names(kms_key_names)
        pg = dialect == dialects.POSTGRESQL
        m = (_CREATE_PG_DATABASE if pg else _CREATE_DATABASE).match(create_statement)
        if not m:
            raise errors.pg_create_database_syntax(create_statement) if pg else errors.create_database_syntax(create_statement)
        database_id = m.group(1) or m.group(2)
        if not _DATABASE_ID.match(database_id):
            raise errors.invalid_database_id(database_id)
        name = f"{instance}/databases/{database_id}"
        with self._lock:
            self.get_instance(instance)
            if name in self._databases:
                raise errors.database_already_exists(name)
            path = self._db_path(name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            for suffix in _FILE_SUFFIXES:
                if os.path.exists(path + suffix):
                    os.remove(path + suffix)  # left over from a database dropped while the server was down
            engine = self._new_engine(name, path)
            try:
                if pg:
                    engine.set_dialect(dialect)
                engine.update_ddl(list(extra_statements), proto_descriptors)
            except BaseException:
                engine.close()
                for suffix in _FILE_SUFFIXES:
                    if os.path.exists(path + suffix):
                        os.remove(path + suffix)
                raise
            now = self.clock.next()
            info = DatabaseInfo(name, now, now, kms_key_names=keys)
            self._databases[name] = info
            self._engines[name] = engine
            self._save_state()
            return info

    def get_database(self, name: str) -> DatabaseInfo:
        with self._lock:
            info = self._databases.get(name)
        if info is None:
            raise errors.database_not_found(name)
        return info

    def list_databases(self, instance: str) -> list[DatabaseInfo]:
        self.get_instance(instance)
        prefix = instance + "/databases/"
        with self._lock:
            return [d for n, d in sorted(self._databases.items()) if n.startswith(prefix)]

    def update_database(self, name: str, fields: Iterable[str], *, enable_drop_protection: bool) -> DatabaseInfo:
        """UpdateDatabase: set the ``fields`` named (``database_settings.UPDATABLE_FIELDS``) to the values given."""
        paths = database_settings.check_update_fields(fields)
        with self._lock:
            info = self.get_database(name)
            if "enable_drop_protection" in paths:
                info = dataclasses.replace(info, drop_protection=enable_drop_protection)
            self._databases[name] = info
            self._save_state()
            return info

    def add_split_points(self, database: str, points: list[split_points.SplitPoint]) -> list[split_points.SplitPoint]:
        """AddSplitPoints: the points checked against the database's schema (``split_points.py``); the
        local server keeps every row in one file, so accepted points change nothing."""
        return split_points.check(self.engine(database).catalog, points, now_nanos=self.clock.wall_nanos())

    def drop_database(self, name: str) -> None:
        """Drop a database; one with drop protection is refused FAILED_PRECONDITION."""
        with self._lock:
            if self.get_database(name).drop_protection:
                raise errors.database_drop_protected(name)
            self._drop(name)
            self._save_state()

    def _drop(self, name: str) -> None:
        engine = self._engines.pop(name)
        del self._databases[name]
        for s in [s for s, info in self._sessions.items() if info.database == name]:
            del self._sessions[s]
        engine.close()
        path = self._db_path(name)
        for suffix in _FILE_SUFFIXES:
            if os.path.exists(path + suffix):
                os.remove(path + suffix)

    def engine(self, database: str) -> DatabaseEngine:
        with self._lock:
            engine = self._engines.get(database)
        if engine is None:
            raise errors.database_not_found(database)
        return engine

    def update_ddl(self, database: str, statements: list[str], proto_descriptors: bytes | None = None) -> list[int]:
        return self.engine(database).update_ddl(list(statements), proto_descriptors)

    def list_database_roles(self, database: str) -> list[str]:
        """The resource names of the database's roles: the system roles, then the user's in creation order."""
        catalog = self.engine(database).catalog
        return [f"{database}/databaseRoles/{r}" for r in (*roles.SYSTEM_ROLES, *catalog.roles)]

    def get_ddl(self, database: str) -> list[str]:
        return self.engine(database).ddl()

    def proto_descriptors(self, database: str) -> bytes:
        """The FileDescriptorSet of the database's proto bundle (empty without one)."""
        bundle = self.engine(database).catalog.proto_bundle
        return bundle.descriptors if bundle is not None else b""

    def database_dialect(self, database: str) -> str:
        """GOOGLE_STANDARD_SQL or POSTGRESQL."""
        return self.engine(database).catalog.dialect

    def _as_role(self, session: str, statement: Statement) -> Statement:
        """``statement`` as the session's database role runs it (INFORMATION_SCHEMA shows that role's rows)."""
        role = self.get_session(session).creator_role
        return dataclasses.replace(statement, database_role=role) if role else statement

    def _in_dialect(self, session: str, statement: Statement) -> Statement:
        """The statement as the session's database runs it (``dialect_statements.in_dialect``)."""
        return in_dialect(self._session_engine(session).catalog, statement)

    def database_options(self, database: str) -> dict[str, str | None]:
        """The options ALTER DATABASE set (None: not set, the default applies)."""
        engine = self.engine(database)
        return {"version_retention_period": engine.retention_period, "default_leader": engine.default_leader}

    # --- sessions ---------------------------------------------------------------------------------------------

    def create_session(self, database: str, *, multiplexed: bool = False, labels: dict[str, str] | None = None,
                       creator_role: str = "") -> SessionInfo:
        """A new session; ``creator_role`` (its database role, which the database must have) limits its requests
        to what the role is granted (``access_checks.py``) and is recorded with them."""
        access_checks.check_session_role(self.engine(database).catalog, creator_role, database)
        info = SessionInfo(f"{database}/sessions/{uuid.uuid4().hex}", database, multiplexed, self.clock.wall_nanos(),
                           dict(labels or {}), creator_role)
        with self._lock:
            self._sessions[info.name] = info
        return info

    def batch_create_sessions(self, database: str, count: int, labels: dict[str, str] | None = None,
                              creator_role: str = "") -> list[SessionInfo]:
        if count < 1:
            raise errors.session_count_too_small()
        return [self.create_session(database, labels=labels, creator_role=creator_role) for _ in range(min(count, 100))]

    def get_session(self, name: str) -> SessionInfo:
        with self._lock:
            info = self._sessions.get(name)
        if info is None:
            if not _SESSION_NAME.match(name):
                raise errors.bad_resource_name("session", name, "projects/<p>/instances/<i>/databases/<d>/sessions/<id>")
            raise errors.session_not_found(name)
        return info

    def list_sessions(self, database: str) -> list[SessionInfo]:
        self.engine(database)
        with self._lock:
            return [s for s in self._sessions.values() if s.database == database]

    def delete_session(self, name: str) -> None:
        with self._lock:
            if self._sessions.pop(name, None) is None:
                raise errors.session_not_found(name)

    def _session_engine(self, session: str) -> DatabaseEngine:
        return self.engine(self.get_session(session).database)

    def _recorded(self, session: str, method: str, text: str, options: RequestOptions,
                  run: Callable[[DatabaseEngine], _Answer], *, partitioned: bool = False,
                  check: Callable[[Catalog, str], None] | None = None) -> _Answer:
        """``run`` on the session's engine, the request recorded in its log with how it ended.

        ``check`` (given the catalog and the session's role, when it has one) refuses what the role may not do."""
        info = self.get_session(session)
        engine = self.engine(info.database)
        status = "OK"
        try:
            if check is not None and info.creator_role:
                check(engine.catalog, info.creator_role)
            return run(engine)
        except BaseException as exc:
            status = exc.code.name if isinstance(exc, errors.SpannerError) else "UNKNOWN"
            raise
        finally:
            engine.requests.add(RequestRecord(
                self.clock.wall_nanos(), method, text, request_tag=options.request_tag,
                transaction_tag=options.transaction_tag, priority=options.priority, database_role=info.creator_role,
                data_boost=options.data_boost, partitioned=partitioned, status=status))

    # --- data -------------------------------------------------------------------------------------------------

    def execute_sql(self, session: str, statement: Statement, selector: TransactionSelector | None, *,
                    seqno: int | None = None, plan: bool = False, partition_token: bytes = b"",
                    options: RequestOptions = NO_OPTIONS) -> ResultStream:
        """Run a query or DML statement.

        ``seqno`` (a DML request's sequence number in its read/write transaction) makes the
        request idempotent: sent again with the same statement, it is answered as the first
        time and not run twice, as on Spanner. ``plan`` (query_mode PLAN) returns the result
        fields and no rows, without running the statement. ``options`` (tags, priority, Data
        Boost) are recorded in the database's request log, as with every data request.
        """
        catalog = self._session_engine(session).catalog
        original, statement = statement.sql, self._as_role(session, in_dialect(catalog, statement))
        reshape = result_shape(catalog.dialect, original)
        return self._recorded(session, "ExecuteSql", original, options, as_written(lambda engine: engine.execute_sql(
            session, statement, selector, seqno=seqno, plan=plan, partition_token=partition_token),
            [(statement.sql, original)], reshape), partitioned=bool(partition_token),
            check=lambda cat, role: access_checks.check_statement(cat, role, statement.sql, original))

    def read(self, session: str, table: str, columns: list[str], key_set: KeySet, selector: TransactionSelector | None, *,
             index: str = "", limit: int = 0, partition_token: bytes = b"",
             options: RequestOptions = NO_OPTIONS) -> ResultStream:
        return self._recorded(session, "Read", _read_text(table, index, columns), options, lambda engine: engine.read(
            session, table, columns, key_set, selector, index=index, limit=limit, partition_token=partition_token),
            partitioned=bool(partition_token), check=lambda cat, role: access_checks.check_read(cat, role, table, columns))

    def partition_query(self, session: str, statement: Statement, selector: TransactionSelector | None,
                        max_partitions: int = 0) -> tuple[list[bytes], TransactionInfo | None]:
        """Partition tokens of a query in a read-only transaction (run each with ExecuteSql and the token)."""
        original, statement = statement.sql, self._as_role(session, self._in_dialect(session, statement))
        return self._recorded(session, "PartitionQuery", statement.sql, NO_OPTIONS, lambda engine: engine.partition(
            session, selector, statement.sql, max_partitions, statement=statement),
            check=lambda cat, role: access_checks.check_statement(cat, role, statement.sql, original))

    def partition_read(self, session: str, table: str, columns: list[str], key_set: KeySet, selector: TransactionSelector | None,
                       *, index: str = "", max_partitions: int = 0) -> tuple[list[bytes], TransactionInfo | None]:
        """Partition tokens of a read in a read-only transaction (run each with Read and the token)."""
        request = read_request_text(table, index, columns, key_set)
        return self._recorded(session, "PartitionRead", _read_text(table, index, columns), NO_OPTIONS,
                              lambda engine: engine.partition(session, selector, request, max_partitions),
                              check=lambda cat, role: access_checks.check_read(cat, role, table, columns))

    def execute_batch_dml(self, session: str, statements: list[Statement], selector: TransactionSelector | None, *,
                          seqno: int | None = None, options: RequestOptions = NO_OPTIONS) -> BatchDmlResult:
        """Run DML statements in order in a read/write transaction; ``seqno`` as in :meth:`execute_sql`."""
        if not statements:
            raise errors.batch_dml_without_statements()
        if selector is None:
            raise errors.batch_dml_without_transaction()
        text = ";\n".join(s.sql for s in statements)
        catalog = self._session_engine(session).catalog
        run, refused = batch_in_dialect(catalog, statements)
        run, refused = access_checks.check_batch(catalog, self.get_session(session).creator_role, run, statements, refused)
        run = [self._as_role(session, r) for r in run]
        return self._recorded(session, "ExecuteBatchDml", text, options, as_written(
            lambda engine: engine.execute_batch_dml(session, run, selector, seqno=seqno),
            [(r.sql, s.sql) for r, s in zip(run, statements, strict=False)], refused=refused))

    def begin_transaction(self, session: str, options: TransactionOptions,
                          request_options: RequestOptions = NO_OPTIONS) -> TransactionInfo:
        return self._recorded(session, "BeginTransaction", "", request_options,
                              lambda engine: engine.begin(session, options))

    def commit(self, session: str, mutations: list[Mutation], *, transaction_id: bytes | None = None,
               single_use: TransactionOptions | None = None, tag: str = "",
               options: RequestOptions = NO_OPTIONS, max_commit_delay_nanos: int | None = None) -> CommitResult:
        """Commit; ``tag`` (the request's transaction tag) goes into the change stream records.

        ``options`` are recorded (their transaction tag is ``tag``'s when only ``tag`` is given).
        ``max_commit_delay_nanos`` must lie in 0..500 ms; the commit never waits for it (a group
        commit already gathers concurrent blind writes), so a valid delay changes nothing.
        """
        if max_commit_delay_nanos is not None and not 0 <= max_commit_delay_nanos <= limits.MAX_COMMIT_DELAY_NANOS:
            raise errors.max_commit_delay_out_of_range(max_commit_delay_nanos, limits.MAX_COMMIT_DELAY_NANOS)
        if tag and not options.transaction_tag:
            options = dataclasses.replace(options, transaction_tag=tag)
        return self._recorded(session, "Commit", _written_tables(mutations), options, lambda engine: engine.commit(
            session, mutations, transaction_id=transaction_id, single_use=single_use, tag=tag),
            check=lambda cat, role: access_checks.check_mutations(cat, role, mutations))

    def rollback(self, session: str, transaction_id: bytes) -> None:
        self._session_engine(session).rollback(transaction_id)

    def batch_write(self, session: str, groups: list[list[Mutation]], options: RequestOptions = NO_OPTIONS, *,
                    exclude_txn_from_change_streams: bool = False) -> Iterator[BatchWriteResult]:
        """Commit each group on its own (each recorded as one commit of the request's options);
        ``exclude_txn_from_change_streams`` as on a read/write transaction."""
        self._session_engine(session)
        single_use = TransactionOptions(TransactionKind.READ_WRITE, exclude_txn_from_change_streams=exclude_txn_from_change_streams)
        for i, group in enumerate(groups):
            try:
                result = self._recorded(session, "BatchWrite", _written_tables(group), options,
                                        functools.partial(_commit_group, session, group, single_use),
                                        check=functools.partial(_check_group, group))
                yield BatchWriteResult([i], result.commit_timestamp_nanos)
            except errors.SpannerError as exc:
                yield BatchWriteResult([i], None, exc)


def _commit_group(session: str, group: list[Mutation], single_use: TransactionOptions, engine: DatabaseEngine) -> CommitResult:
    return engine.commit(session, group, single_use=single_use)


def _check_group(group: list[Mutation], catalog: Catalog, role: str) -> None:
    access_checks.check_mutations(catalog, role, group)


def _read_text(table: str, index: str, columns: list[str]) -> str:
    """A read as the request log shows it: ``Table[@Index] Col1,Col2``.

    >>> _read_text("Singers", "", ["SingerId", "Name"])
    'Singers SingerId,Name'
    """
    return f"{table}{'@' + index if index else ''} {','.join(columns)}"


def _written_tables(mutations: list[Mutation]) -> str:
    """A commit as the request log shows it: the tables it writes, sorted and comma-separated."""
    return ",".join(sorted({m.table for m in mutations}))
