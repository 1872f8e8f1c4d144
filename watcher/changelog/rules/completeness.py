"""Completeness markers: from when on a table's current state holds every key.

Polling sees rows, not a log: a key seen for the first time may have existed before the
watcher started, so the job records it as ``UPSERT``, not ``INSERT``. A backfill (a
snapshot of the whole table at one read timestamp R) or a reconciliation makes the
state complete as of R; it then writes ``<warehouse>/_state/complete/<table>.json``::

    {"v": 1, "table": "Singers", "read_timestamp": "2024-05-01T10:00:00.123456789Z",
     "method": "backfill", "written_at": "2024-05-01T10:00:03.5+00:00"}

after its rows are staged. From then on a key first seen in a change committed after R
is classified ``INSERT``: had it existed at R, the snapshot would have shown it.

Example:
    >>> marker_path("Singers")
    '_state/complete/Singers.json'
"""

from __future__ import annotations

import datetime as dt
import json
import re

from watcher.errors import ChangelogError

from ..io.files import FileStore

MARKER_FORMAT = 1
MARKER_DIR = "_state/complete"
METHODS = ("backfill", "reconcile")
_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$")


def marker_path(table: str) -> str:
    return f"{MARKER_DIR}/{table}.json"


def write_marker(fs: FileStore, table: str, read_timestamp: str, method: str = "backfill",
                 now: dt.datetime | None = None) -> None:
    """Declare ``table``'s state complete as of ``read_timestamp`` (RFC 3339, nine fractional digits).

    Call it only after the snapshot's rows are staged.
    """
    if not _TIMESTAMP.match(read_timestamp):
        raise ChangelogError(f"read_timestamp must be RFC 3339 UTC with nine fractional digits, got {read_timestamp!r}")
    if method not in METHODS:
        raise ChangelogError(f"method must be one of {METHODS}, got {method!r}")
    now = now or dt.datetime.now(dt.UTC)
    doc = {"v": MARKER_FORMAT, "table": table, "read_timestamp": read_timestamp, "method": method,
           "written_at": now.isoformat()}
    fs.write_text(marker_path(table), json.dumps(doc, indent=1) + "\n", overwrite=True)


def read_markers(fs: FileStore) -> dict[str, str]:
    """Table -> read timestamp from which its state is complete."""
    markers = {}
    for name in fs.list_names(MARKER_DIR):
        if not name.endswith(".json") or name.startswith("."):
            continue
        where = fs.uri(f"{MARKER_DIR}/{name}")
        try:
            doc = json.loads(fs.read_text(f"{MARKER_DIR}/{name}"))
            if doc.get("v", 1) > MARKER_FORMAT:
                raise ChangelogError(f"completeness marker {where} has a newer format ({doc['v']})")
            table, ts = doc["table"], doc["read_timestamp"]
        except (ValueError, KeyError, TypeError) as exc:
            raise ChangelogError(f"completeness marker {where} is malformed: {exc!r}") from None
        if not _TIMESTAMP.match(ts):
            raise ChangelogError(f"completeness marker {where}: read_timestamp {ts!r} is not RFC 3339 with 9 digits")
        markers[table] = ts
    return markers
