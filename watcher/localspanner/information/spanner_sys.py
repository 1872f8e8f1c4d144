"""SPANNER_SYS tables computed from a database's :class:`~..common.request_log.RequestLog`.

The parts of Spanner's statistics tables that hold what a request said about itself, so the
query a DBA runs on Spanner to find an application by its tags runs here too:

* ``QUERY_STATS_TOP_MINUTE`` (``_10MINUTE``, ``_HOUR``): queries and DML grouped by request
  tag (by text when untagged) and query type (QUERY, PARTITIONED_QUERY) per interval;
* ``READ_STATS_TOP_MINUTE`` (...): reads grouped by request tag (by table and columns when
  untagged) and read type (READ, PARTITIONED_READ);
* ``TXN_STATS_TOP_MINUTE`` (...): commits grouped by transaction tag (by the tables written
  when untagged), with attempt and abort counts.

Unlike Spanner, whose tables show only closed intervals, the interval still running is
shown too (a test need not wait for the minute to end), and only what the local server
measures has values: the latency, CPU, row and byte averages are there, so the queries DBAs
run work, but NULL (not measured). What Spanner shows nowhere is in the
local-only ``LOCAL_REQUEST_LOG``: one row per request, with its priority, its session's
database role and its Data Boost flag. Every column is nullable, as in Spanner's tables.

Example:
    >>> from watcher.localspanner.common.request_log import RequestRecord
    >>> recs = [RequestRecord(90 * 10**9, "ExecuteSql", "SELECT 1", request_tag="t")] * 2
    >>> end, tag, kind, text, truncated, _, count, failed, latency, *_ = rows("QUERY_STATS_TOP_MINUTE", recs)[0]
    >>> end, tag, kind, text, count, failed, latency
    ('1970-01-01T00:02:00.000000000Z', 't', 'QUERY', 'SELECT 1', 2, 0, None)
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterable, Sequence

from ..common.request_log import RequestRecord
from ..datamodel import types as T
from ..datamodel import values
from ..schema.catalog import Table
from .information_schema import view_table

SCHEMA_NAME = "SPANNER_SYS"
#: The statistics intervals by table-name suffix, in seconds.
INTERVALS = {"MINUTE": 60, "10MINUTE": 600, "HOUR": 3600}
_QUERY_METHODS = frozenset({"ExecuteSql", "ExecuteBatchDml"})
_READ_METHODS = frozenset({"Read"})
_COMMIT_METHODS = frozenset({"Commit", "BatchWrite"})
_ABORTED = "ABORTED"
_FAILED_PRECONDITION = "FAILED_PRECONDITION"


#: Columns Spanner fills and the local server does not measure: always NULL, last in each table.
_QUERY_UNMEASURED = ("AVG_LATENCY_SECONDS", "AVG_ROWS", "AVG_BYTES", "AVG_ROWS_SCANNED", "AVG_CPU_SECONDS")
_READ_UNMEASURED = ("AVG_ROWS", "AVG_BYTES", "AVG_CPU_SECONDS", "AVG_LOCKING_DELAY_SECONDS", "AVG_CLIENT_WAIT_SECONDS")
_TXN_UNMEASURED = ("AVG_PARTICIPANTS", "AVG_TOTAL_LATENCY_SECONDS", "AVG_COMMIT_LATENCY_SECONDS", "AVG_BYTES")


def _unmeasured(names: tuple[str, ...]) -> str:
    return "".join(f", {n} FLOAT64" for n in names)


_QUERY_COLS = ("INTERVAL_END TIMESTAMP, REQUEST_TAG STRING(MAX), QUERY_TYPE STRING(MAX), TEXT STRING(MAX), "
               "TEXT_TRUNCATED BOOL, TEXT_FINGERPRINT INT64, EXECUTION_COUNT INT64, ALL_FAILED_EXECUTION_COUNT INT64"
               + _unmeasured(_QUERY_UNMEASURED))
_READ_COLS = ("INTERVAL_END TIMESTAMP, REQUEST_TAG STRING(MAX), READ_TYPE STRING(MAX), READ_COLUMNS ARRAY<STRING(MAX)>, "
              "FPRINT INT64, EXECUTION_COUNT INT64" + _unmeasured(_READ_UNMEASURED))
_TXN_COLS = ("INTERVAL_END TIMESTAMP, TRANSACTION_TAG STRING(MAX), FPRINT INT64, ATTEMPT_COUNT INT64, "
             "COMMIT_ATTEMPT_COUNT INT64, COMMIT_ABORT_COUNT INT64, COMMIT_FAILED_PRECONDITION_COUNT INT64"
             + _unmeasured(_TXN_UNMEASURED))
_LOG_COLS = ("REQUEST_TIME TIMESTAMP, METHOD STRING(MAX), REQUEST_TAG STRING(MAX), TRANSACTION_TAG STRING(MAX), "
             "PRIORITY STRING(MAX), DATABASE_ROLE STRING(MAX), DATA_BOOST_ENABLED BOOL, PARTITIONED BOOL, "
             "TEXT STRING(MAX), STATUS STRING(MAX)")

#: Local-only: one row per request, newest last.
LOCAL_REQUEST_LOG = "LOCAL_REQUEST_LOG"

VIEWS: dict[str, Table] = {
    t.name: t
    for t in (
        *(view_table(f"QUERY_STATS_TOP_{s}", _QUERY_COLS) for s in INTERVALS),
        *(view_table(f"READ_STATS_TOP_{s}", _READ_COLS) for s in INTERVALS),
        *(view_table(f"TXN_STATS_TOP_{s}", _TXN_COLS) for s in INTERVALS),
        view_table(LOCAL_REQUEST_LOG, _LOG_COLS),
    )
}


def fingerprint(text: str) -> int:
    """A stable signed 64-bit hash of ``text`` (Spanner's FPRINT columns are INT64 hashes).

    >>> fingerprint("a") == fingerprint("a") != fingerprint("b")
    True
    """
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big", signed=True)


def _interval_end(time_nanos: int, seconds: int) -> str:
    step = seconds * 1_000_000_000
    return values.nanos_to_stored((time_nanos // step + 1) * step)


def _grouped(records: Iterable[RequestRecord], methods: frozenset[str], seconds: int,
             key: Callable[[RequestRecord], tuple]) -> dict[tuple, list[RequestRecord]]:
    groups: dict[tuple, list[RequestRecord]] = {}
    for r in records:
        if r.method in methods:
            groups.setdefault((_interval_end(r.time_nanos, seconds), *key(r)), []).append(r)
    return groups


def _query_stats(records: Sequence[RequestRecord], seconds: int) -> list[tuple]:
    def key(r: RequestRecord) -> tuple:
        kind = "PARTITIONED_QUERY" if r.partitioned else "QUERY"
        return (r.request_tag, kind, "" if r.request_tag else r.kept_text)

    out = []
    for (end, tag, kind, _), group in _grouped(records, _QUERY_METHODS, seconds, key).items():
        first = group[0]  # a tag's row shows the text of one of its statements, as Spanner's does
        failed = sum(1 for r in group if r.status != "OK")
        out.append((end, tag or None, kind, first.kept_text, int(first.truncated), fingerprint(first.kept_text),
                    len(group), failed, *(None,) * len(_QUERY_UNMEASURED)))
    return out


def _read_columns(r: RequestRecord) -> list[str]:
    return r.text.split(" ", 1)[1].split(",") if " " in r.text else []


def _read_stats(records: Sequence[RequestRecord], seconds: int) -> list[tuple]:
    def key(r: RequestRecord) -> tuple:
        return (r.request_tag, "PARTITIONED_READ" if r.partitioned else "READ", "" if r.request_tag else r.text)

    out = []
    for (end, tag, kind, _), group in _grouped(records, _READ_METHODS, seconds, key).items():
        columns = _read_columns(group[0])
        out.append((end, tag or None, kind, values.wire_to_stored(T.array_of(T.STRING), columns),
                    fingerprint(tag or group[0].text), len(group), *(None,) * len(_READ_UNMEASURED)))
    return out


def _txn_stats(records: Sequence[RequestRecord], seconds: int) -> list[tuple]:
    def key(r: RequestRecord) -> tuple:
        return (r.transaction_tag, "" if r.transaction_tag else r.text)

    out = []
    for (end, tag, text), group in _grouped(records, _COMMIT_METHODS, seconds, key).items():
        aborted = sum(1 for r in group if r.status == _ABORTED)
        failed = sum(1 for r in group if r.status == _FAILED_PRECONDITION)
        out.append((end, tag or None, fingerprint(tag or text), len(group), len(group), aborted, failed,
                    *(None,) * len(_TXN_UNMEASURED)))
    return out


def _request_log(records: Sequence[RequestRecord]) -> list[tuple]:
    return [(values.nanos_to_stored(r.time_nanos), r.method, r.request_tag or None, r.transaction_tag or None,
             r.priority or None, r.database_role or None, int(r.data_boost), int(r.partitioned), r.kept_text or None,
             r.status) for r in records]


Producer = Callable[[Sequence[RequestRecord]], list[tuple]]


def _producers() -> dict[str, Producer]:
    found: dict[str, Producer] = {LOCAL_REQUEST_LOG: _request_log}
    for suffix, seconds in INTERVALS.items():
        for prefix, stats in (("QUERY", _query_stats), ("READ", _read_stats), ("TXN", _txn_stats)):
            found[f"{prefix}_STATS_TOP_{suffix}"] = functools.partial(_per_interval, stats, seconds)
    return found


def _per_interval(stats: Callable[[Sequence[RequestRecord], int], list[tuple]], seconds: int,
                  records: Sequence[RequestRecord]) -> list[tuple]:
    return stats(records, seconds)


_PRODUCERS = _producers()
assert _PRODUCERS.keys() == VIEWS.keys()


def rows(view: str, records: Sequence[RequestRecord]) -> list[tuple]:
    """The rows of ``view`` (a key of :data:`VIEWS`) in stored form, each in the view's column order."""
    return _PRODUCERS[view](records)
