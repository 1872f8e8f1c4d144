"""The source's offsets: the exact position of every poll loop, as JSON.

A poll loop is one (table, shard value) pair, as in a :class:`~watcher.capture.table_watcher.TableWatcher`;
its position is a :class:`~watcher.model.Checkpoint` (every row up to that commit timestamp, and
at it up to that key, is in an earlier micro-batch). An offset also carries the read timestamp R
of the strong read that found it: a micro-batch reads its rows at exactly its end offset's R
(a past read, within the database's version retention), so reading it again after a failure
gives the same rows. Saved offsets carry a format version (:data:`OFFSET_FORMAT`).

Example:
    >>> import datetime as dt
    >>> from watcher.model import Checkpoint
    >>> from google.api_core.datetime_helpers import DatetimeWithNanoseconds as T
    >>> o = Offset(T(2024, 5, 1, tzinfo=dt.UTC), {("Singers", 3): Checkpoint(T(2024, 5, 1, tzinfo=dt.UTC), (7,))})
    >>> doc = o.to_json()
    >>> doc["loops"]
    {'Singers': {'3': '{"v": 1, "ts": "2024-05-01T00:00:00.000000000Z", "key": [7]}'}}
    >>> Offset.from_json(doc) == o
    True
    >>> loop_key(None), loop_key("a"), loop_key(-3)
    ('*', '"a"', '-3')
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from google.api_core.datetime_helpers import DatetimeWithNanoseconds

from ...codec import timestamp_text
from ...errors import ChangelogError
from ...model import MIN_TIMESTAMP, Checkpoint

OFFSET_FORMAT = 1
#: The loop key of a table read without shards (as the watermarks' loop name).
NO_SHARD = "*"
#: Where "earliest" starts: before any commit timestamp.
EPOCH = MIN_TIMESTAMP

Loop = tuple[str, Any]  # (table, shard value or None)


def loop_key(shard: Any) -> str:
    """A shard value as the offset's (string) key: its JSON text, or ``*`` without shards."""
    return NO_SHARD if shard is None else json.dumps(shard)


def _shard_of(key: str) -> Any:
    return None if key == NO_SHARD else json.loads(key)


@dataclass(frozen=True)
class Offset:
    """Positions of every loop, found by a strong read at ``read_timestamp``."""

    read_timestamp: DatetimeWithNanoseconds
    positions: Mapping[Loop, Checkpoint] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The offset as Spark stores it (nested dicts of strings)."""
        loops: dict[str, dict[str, str]] = {}
        for (table, shard), position in sorted(self.positions.items(), key=lambda item: (item[0][0], loop_key(item[0][1]))):
            loops.setdefault(table, {})[loop_key(shard)] = position.to_text()
        return {"v": OFFSET_FORMAT, "read_ts": timestamp_text(self.read_timestamp), "loops": loops}

    @staticmethod
    def from_json(doc: Mapping[str, Any]) -> Offset:
        """The offset of :meth:`to_json` (from a checkpoint's offset log)."""
        if doc.get("mode") is not None:  # only change-stream offsets carry a mode (:mod:`.stream_offsets`)
            raise ChangelogError(f"streaming offset was written by the {doc['mode']} mode of the spanner_watcher "
                                 "source; a polling query needs a new checkpoint location")
        if int(doc.get("v", 1)) > OFFSET_FORMAT:
            raise ChangelogError(f"streaming offset of format {doc['v']} was written by a newer spanner-watcher "
                                 f"(this one reads format {OFFSET_FORMAT}); use a new checkpoint location")
        try:
            positions = {(table, _shard_of(key)): Checkpoint.from_text(text)
                         for table, loops in doc["loops"].items() for key, text in loops.items()}
            return Offset(DatetimeWithNanoseconds.from_rfc3339(doc["read_ts"]), positions)
        except (KeyError, TypeError, ValueError) as exc:
            raise ChangelogError(f"streaming offset is malformed ({exc!r}): {json.dumps(doc)[:200]}") from None
