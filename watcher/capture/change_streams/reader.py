"""One query of a change-stream partition, read on its own thread into a queue.

The query (``SELECT ChangeRecord FROM READ_<stream>(...)``, in a PostgreSQL database
``spanner.read_json_<stream>(...)``, ``spanner.read_proto_bytes_<stream>(...)`` for ``MUTABLE_KEY_RANGE``:
:mod:`watcher.dialects.change_streams`) is a single-use strong
read-only query, as the read function demands. Its rows are parsed by the database's dialect and the
stream's partition mode (:data:`ROW_READERS`): the original ChangeRecord structs (:mod:`.records`), one
jsonb record per row in PostgreSQL (:mod:`.json_records`), or for ``MUTABLE_KEY_RANGE`` one
ChangeStreamRecord protobuf per row in either dialect (:mod:`.key_range_records`). Its rows arrive when the server has
something: data change records as transactions commit, a heartbeat when idle, child
partitions when the partition ends. A reader thread parses each row into records
(:mod:`.records`) and puts them on a queue, so the partition's consumer can take everything
that has arrived as one batch at once, without waiting for the next heartbeat.

The reader stops at the end of the query, at an error (put on the queue) or once ``stop``
is set and the next row (at the latest the next heartbeat) has arrived.

Example::

    reader = PartitionReader(database, "S", token, start, end=None, heartbeat_ms=1000).start()
    item = reader.queue.get()      # a list of records, an exception, or END
"""

from __future__ import annotations

import concurrent.futures as cf
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from ...dialects import GOOGLE_SQL, POSTGRESQL, Dialect, dialect_of
from ...dialects.change_streams import CHANGE_STREAM_SQL, READ_PARAM_TYPES, read_query
from ...request_settings import RequestSettings, settings_or_default
from ...sqlnames import validate_identifier
from . import json_records, key_range_records, records

#: The GoogleSQL read function (both dialects' texts: :data:`watcher.dialects.change_streams.CHANGE_STREAM_SQL`).
QUERY = CHANGE_STREAM_SQL[GOOGLE_SQL.name].read
PARAM_TYPES = READ_PARAM_TYPES
#: Result rows buffered per partition before the reader waits for its consumer.
QUEUE_ROWS = 10_000


class _End:
    def __repr__(self) -> str:
        return "END"


#: Put on the queue when the query ended normally.
END = _End()


def query_text(stream: str) -> str:
    """The read function query of ``stream`` (a validated identifier).

    >>> query_text("S")[:48]
    'SELECT ChangeRecord FROM READ_S(start_timestamp '
    """
    return QUERY.format(stream=validate_identifier(stream, "change stream"))


def _struct_rows(fields: Sequence[Any]) -> Callable[[Any], list[Any]]:
    layout = records.layout_of(fields)
    return lambda row: records.parse_row(row, layout)


#: How a result row is read, by (dialect, MUTABLE_KEY_RANGE); each entry gets the result set's fields once.
ROW_READERS: dict[tuple[str, bool], Callable[[Sequence[Any]], Callable[[Any], list[Any]]]] = {
    (GOOGLE_SQL.name, False): _struct_rows,
    (GOOGLE_SQL.name, True): lambda fields: key_range_records.parse_row,
    (POSTGRESQL.name, False): lambda fields: json_records.parse_row,
    (POSTGRESQL.name, True): lambda fields: key_range_records.parse_bytes_row,  # read_proto_bytes_<stream>
}


def row_reader(dialect: Dialect, mutable_key_range: bool, stream: str) -> Callable[[Sequence[Any]], Callable[[Any], list[Any]]]:
    """The row reader of a stream's rows in ``dialect`` and partition mode.

    >>> row_reader(POSTGRESQL, True, "S") is ROW_READERS[POSTGRESQL.name, True]
    True
    """
    return ROW_READERS[dialect.name, mutable_key_range]


class PartitionReader:
    """Reads one partition (``token`` None: the first query) from ``start`` to ``end`` on a daemon thread."""

    def __init__(self, database: Any, stream: str, token: str | None, start: Any, *, end: Any = None,
                 heartbeat_ms: int = 2000, stop: threading.Event | None = None,
                 request_settings: RequestSettings | None = None, mutable_key_range: bool = False) -> None:
        self.database = database
        self.mutable_key_range = mutable_key_range
        #: A change-stream read is a poll: it carries the priority as well as the request tag.
        self.request_options = settings_or_default(request_settings).request_options()
        dialect = dialect_of(database)
        self._rows = row_reader(dialect, mutable_key_range, stream)
        statement = read_query(dialect, stream, start, end, token, heartbeat_ms, mutable_key_range=mutable_key_range)
        self.sql, self.params, self.types = statement.sql, statement.params, statement.types
        self.queue: queue.Queue[Any] = queue.Queue(QUEUE_ROWS)
        self.stop = stop or threading.Event()
        self._started = False
        self._thread = threading.Thread(target=self._run, name=f"change-stream-{stream}-{(token or 'root')[:12]}",
                                        daemon=True)

    def start(self) -> PartitionReader:
        self._started = True
        self._thread.start()
        return self

    @property
    def alive(self) -> bool:
        """Not started yet, or still reading."""
        return not self._started or self._thread.is_alive()

    def join(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def take(self, max_items: int, timeout: float = 0.25) -> list[Any]:
        """Everything queued now (at most ``max_items``), waiting up to ``timeout`` s for the first."""
        try:
            items = [self.queue.get(timeout=timeout)]
        except queue.Empty:
            return []
        while len(items) < max_items:
            try:
                items.append(self.queue.get_nowait())
            except queue.Empty:
                break
        return items

    def _put(self, item: Any) -> bool:
        while not self.stop.is_set():
            try:
                self.queue.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        try:
            with self.database.snapshot() as snap:
                results = snap.execute_sql(self.sql, params=self.params, param_types=self.types,
                                           request_options=self.request_options)
                read: Callable[[Any], list[Any]] | None = None
                for row in results:
                    if read is None:  # the result set's fields are known once its first row arrived
                        read = self._rows(results.fields)
                    parsed = read(row)
                    if self.stop.is_set() or not self._put(parsed):
                        return
            self._put(END)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which decides
            self._put(exc)


class ReadRun:
    """One start() to stop() of a watcher: the bounded pool its partitions are read on, their
    readers, and the event that ends them all."""

    def __init__(self, workers: int) -> None:
        self.stop = threading.Event()
        self.pool = cf.ThreadPoolExecutor(workers, thread_name_prefix="change-stream")
        self.futures: set[cf.Future[Any]] = set()
        #: Readers still reading (each ends at its next row or heartbeat once told to stop).
        self.readers: set[PartitionReader] = set()

    def close(self, timeout: float | None) -> None:
        """Stop: wait for the partitions' callbacks, then (within the same ``timeout``) for the readers,
        which end at their next row or heartbeat, so no query is left open."""
        deadline = None if timeout is None else time.monotonic() + timeout
        self.stop.set()
        cf.wait(list(self.futures), timeout)
        self.pool.shutdown(wait=False)
        for reader in list(self.readers):
            reader.stop.set()
        for reader in list(self.readers):
            if reader.join(None if deadline is None else max(0.0, deadline - time.monotonic())):
                self.readers.discard(reader)


def first_partitions(database: Any, stream: str, start: Any, *, end: Any = None, heartbeat_ms: int = 2000,
                     request_settings: RequestSettings | None = None,
                     mutable_key_range: bool = False) -> list[tuple[records.ChildPartition, Any]]:
    """The first query (no partition token): the first partitions with their start timestamps
    (child partitions records, or in MUTABLE_KEY_RANGE partition start records: no parents)."""
    dialect = dialect_of(database)
    rows = row_reader(dialect, mutable_key_range, stream)
    statement = read_query(dialect, stream, start, end, None, heartbeat_ms, mutable_key_range=mutable_key_range)
    found: dict[str, tuple[records.ChildPartition, Any]] = {}
    options = settings_or_default(request_settings).request_options()
    with database.snapshot() as snap:
        results = snap.execute_sql(statement.sql, params=statement.params, param_types=statement.types,
                                   request_options=options)
        read: Callable[[Any], list[Any]] | None = None
        for row in results:
            if read is None:
                read = rows(results.fields)
            for old in read(row):
                if isinstance(old, key_range_records.PartitionStartRecord):
                    for token in old.tokens:
                        found.setdefault(token, (records.ChildPartition(token, ()), old.start_timestamp))
                elif isinstance(old, records.ChildPartitionsRecord):
                    for child in old.children:
                        found.setdefault(child.token, (child, old.start_timestamp))
    return list(found.values())
