"""The offsets of change-stream mode: a read timestamp R and the partitions live after it.

An offset says: every change committed up to ``read_timestamp`` (R, inclusive) is in this or
an earlier micro-batch, and the stream goes on after R in the ``frontier`` partitions, each
from its timestamp (R + 1 ns, or a later start of a child partition). The ``segments`` a
micro-batch reads (every partition live somewhere in (start R, end R], each from where it was
up to the end R) follow from its two offsets (:mod:`.stream_plan`: the partition tree of a past
window does not change), so a micro-batch read again after a failure returns the same records
(within the stream's retention period). They are not stored in the offset: under partition
churn a window holds hundreds of them, and Spark's offset log chokes on offsets of tens of
kilobytes (a stack overflow in a regular expression of its stream thread); the frontier is
as large as the stream's live partitions.

Saved offsets carry a format version (:data:`FORMAT`) and the mode, so a checkpoint of the
other mode is named as such instead of being misread.

Example:
    >>> import datetime as dt
    >>> from google.api_core.datetime_helpers import DatetimeWithNanoseconds as T
    >>> r = T(2024, 5, 1, tzinfo=dt.UTC)
    >>> o = StreamOffset(r, {"a": after(r)})
    >>> doc = o.to_json()
    >>> doc["frontier"]
    {'a': '2024-05-01T00:00:00.000000001Z'}
    >>> StreamOffset.from_json(doc) == o
    True
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from google.api_core.datetime_helpers import DatetimeWithNanoseconds

from ...codec import timestamp_text
from ...errors import ChangelogError
from ...model import from_nanos, timestamp_nanos

FORMAT = 1
#: The ``mode`` of a change-stream offset (polling offsets have none).
MODE = "change_stream"


def after(ts: Any) -> DatetimeWithNanoseconds:
    """The first timestamp after ``ts``: the stream's read function includes its end timestamp,
    so the next micro-batch starts one nanosecond later."""
    return from_nanos(timestamp_nanos(ts) + 1)


def before(ts: Any) -> DatetimeWithNanoseconds:
    """The last timestamp before ``ts`` (an initial offset's R: nothing before ``ts`` is wanted)."""
    return from_nanos(timestamp_nanos(ts) - 1)


@dataclass(frozen=True)
class Segment:
    """Partition ``token`` read from ``start`` (inclusive) to ``end`` (inclusive; None: the micro-batch's end R)."""

    token: str
    start: DatetimeWithNanoseconds
    end: DatetimeWithNanoseconds | None = None


@dataclass(frozen=True)
class StreamOffset:
    """Everything up to ``read_timestamp`` is delivered; ``frontier``: token -> where it goes on."""

    read_timestamp: DatetimeWithNanoseconds
    frontier: Mapping[str, DatetimeWithNanoseconds] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The offset as Spark stores it (plain JSON values, in a stable order)."""
        return {"v": FORMAT, "mode": MODE, "read_ts": timestamp_text(self.read_timestamp),
                "frontier": {t: timestamp_text(ts) for t, ts in sorted(self.frontier.items())}}

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> StreamOffset:
        """The offset of :meth:`to_json` (from a checkpoint's offset log)."""
        if doc.get("mode") != MODE:
            raise ChangelogError("streaming offset was written by the polling mode of the spanner_watcher source; "
                                 "a change-stream query needs a new checkpoint location")
        if int(doc.get("v", 1)) > FORMAT:
            raise ChangelogError(f"change-stream offset of format {doc['v']} was written by a newer spanner-watcher "
                                 f"(this one reads format {FORMAT}); use a new checkpoint location")
        try:
            ts = DatetimeWithNanoseconds.from_rfc3339
            return StreamOffset(ts(doc["read_ts"]), {str(t): ts(v) for t, v in doc["frontier"].items()})
        except (KeyError, TypeError, ValueError) as exc:
            raise ChangelogError(f"change-stream offset is malformed ({exc!r}): {json.dumps(doc)[:200]}") from None
