"""What each request said about itself: tags, priority, Data Boost, the session's role.

Spanner keeps request and transaction tags in its statistics tables
(``SPANNER_SYS.QUERY_STATS_TOP_MINUTE`` and its siblings, :mod:`..information.spanner_sys`); a client's
priority, its session's database role and a partitioned query's Data Boost flag it shows
nowhere. The local server keeps one :class:`RequestRecord` per data request of a database in
a :class:`RequestLog`, a ring of the last :data:`MAX_RECORDS`, from which both the statistics
tables and the local-only ``SPANNER_SYS.LOCAL_REQUEST_LOG`` are computed.

Example:
    >>> log = RequestLog(capacity=2)
    >>> for tag in ("a", "b", "c"):
    ...     log.add(RequestRecord(0, "ExecuteSql", "SELECT 1", request_tag=tag))
    >>> [r.request_tag for r in log.records()]
    ['b', 'c']
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass

#: Requests a database remembers (the oldest goes first); a few MB at most.
MAX_RECORDS = 10_000
#: Characters of a statement's text kept in a record (Spanner's statistics keep about 64 KB).
MAX_TEXT_CHARS = 65_536


@dataclass(slots=True)  # not frozen: one is built per request, and a frozen init costs several times as much (never changed after)
class RequestRecord:
    """One request as it arrived, and how it ended.

    ``method`` names the request (ExecuteSql, Read, ExecuteBatchDml, Commit, BeginTransaction,
    PartitionQuery, PartitionRead, BatchWrite); ``text`` the statement, the read (table and
    columns) or the tables a commit wrote; ``priority`` is LOW, MEDIUM, HIGH or "" (not given:
    Spanner's default); ``database_role`` the role the session was created with ("" none);
    ``partitioned`` a request that ran one partition of a PartitionQuery/PartitionRead;
    ``status`` OK or the error code's name (a streamed answer is OK once its rows began).
    """

    time_nanos: int
    method: str
    text: str = ""
    request_tag: str = ""
    transaction_tag: str = ""
    priority: str = ""
    database_role: str = ""
    data_boost: bool = False
    partitioned: bool = False
    status: str = "OK"

    @property
    def truncated(self) -> bool:
        return len(self.text) > MAX_TEXT_CHARS

    @property
    def kept_text(self) -> str:
        """The text as the statistics show it: at most :data:`MAX_TEXT_CHARS` characters."""
        return self.text[:MAX_TEXT_CHARS]


class RequestLog:
    """The last ``capacity`` requests of one database, oldest first (thread-safe)."""

    def __init__(self, capacity: int = MAX_RECORDS) -> None:
        self._records: deque[RequestRecord] = deque(maxlen=capacity)
        self._lock = threading.Lock()

    def add(self, record: RequestRecord) -> None:
        with self._lock:
            self._records.append(record)

    def records(self) -> list[RequestRecord]:
        """A copy of the records, oldest first."""
        with self._lock:
            return list(self._records)
