"""Writers for the sink's crash tests and the check of what a consumer read after the crash.

:class:`Writers` commits transactions until stopped, each inserting a new key and updating one of
:data:`HOT_KEYS` keys to a new version; :func:`check_delivery` asserts on the topic read from its
start: every insert arrived, each hot key's versions in commit order up to its last one (a polled
key's versions written between two polls coalesce into the newer, as polling sees rows), and
duplicates only as the same change id carrying the same message.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from tests.sinks.support import Message, deduplicated, per_key, row, write
from watcher.model import rfc3339_nanos

#: Keys every transaction updates (their versions must arrive in commit order); each also inserts a new key.
HOT_KEYS = 3


class Writers:
    """One thread committing transactions until stopped: transaction i inserts key (i, "new") and sets the
    hot key (i % HOT_KEYS, "hot") to version i (in Big). ``commits`` holds (i, commit timestamp) each."""

    def __init__(self, db: Any, *, pause: float = 0.005) -> None:
        self.db = db
        self.pause = pause
        self.commits: list[tuple[int, Any]] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        i = HOT_KEYS
        try:
            while not self._stop.is_set():
                self.commits.append((i, write(self.db, [row(i, "new", i), row(i % HOT_KEYS, "hot", i)])))
                i += 1
                time.sleep(self.pause)
        except BaseException as exc:  # the test fails on it
            self.error = exc

    def __enter__(self) -> Writers:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(30)


def _change(m: Message) -> tuple[Any, ...]:
    """What a Debezium event says of its change (not when or by which process it was sent: ``ts_ms`` and the
    source's emission times differ between a change's copies)."""
    return (m.value["op"], m.value["before"], m.value["after"], m.value["source"]["commit_timestamp"])


def check_delivery(messages: list[Message], commits: list[tuple[int, Any]]) -> list[Message]:
    """Every committed insert and each hot key's last version arrived, per key in commit order, duplicates
    only as the same change id with the same content; returns the messages de-duplicated by change id."""
    by_id: dict[str, Message] = {}
    for m in messages:
        first = by_id.setdefault(m.change_id, m)
        assert (m.key, m.headers, _change(m)) == (first.key, first.headers, _change(first)), f"{m.change_id} differs"
    unique = deduplicated(messages)
    assert len({(m.key_values, m.headers["commit_timestamp"]) for m in unique}) == len(unique)  # one id per change
    for key, ms in per_key(messages).items():  # as read, duplicates included: never back in time
        stamps = [m.headers["commit_timestamp"] for m in ms]
        assert stamps == sorted(stamps), f"key {key} out of commit order"
    keys = per_key(unique)
    assert {k for k in keys if k[1] == "new"} == {(str(i), "new") for i, _ in commits}, "inserts missing"
    for hot in range(HOT_KEYS):
        last = max((c for c in commits if c[0] % HOT_KEYS == hot), key=lambda c: c[0])
        versions = [int(m.value["after"]["Big"]) for m in keys[(str(hot), "hot")]]
        assert versions == sorted(set(versions)) and versions[-1] == last[0]
        assert len(versions) >= 2, f"hot key {hot} seen once: its order was not put to the test"
        assert keys[(str(hot), "hot")][-1].headers["commit_timestamp"] == rfc3339_nanos(last[1])
    return unique
